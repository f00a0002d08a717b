//! What `roctx record` reads from its own environment: where to look for the GPU stack, and what
//! the user set already (kept, never overwritten, in the environment the recorded command gets).
//! The library's own variables are [`crate::VARS`]; these are read by the launcher, once, in one
//! place, for the same reason: one list of what the environment can change.

use std::ffi::OsString;

/// The launcher's view of its environment (empty values read as unset).
#[derive(Debug, Default, Clone)]
pub struct LaunchEnv {
    /// `ROCTX_UTILS_ROCPROFILER_LIBRARY`: rocprofiler-sdk, explicitly.
    pub rocprofiler_library: Option<OsString>,
    /// `ROCM_PATH`.
    pub rocm_path: Option<OsString>,
    /// `LD_LIBRARY_PATH`, searched for both GPU stacks.
    pub ld_library_path: Option<OsString>,
    /// `ROCP_TOOL_LIBRARIES`: tools listed already (rocprofv3's, another one).
    pub tool_libraries: Option<OsString>,
    /// `ROCPROFILER_REGISTER_LIBRARY`.
    pub register_library: Option<OsString>,
    /// `NVTX_INJECTION64_PATH`: another NVTX tool's injection (nsys), or ours.
    pub nvtx_injection: Option<OsString>,
    /// `ROCTX_UTILS_RUN_NAME`.
    pub run_name: Option<String>,
    /// `ROCTX_UTILS_PYTHON_HOOKS`: set by the user (kept as is).
    pub python_hooks: Option<OsString>,
    /// `PYTHONPATH`: kept, behind the start-up hook.
    pub python_path: Option<OsString>,
    /// `LD_PRELOAD`: kept, after ours (`--capture-range=profiler-api`).
    pub ld_preload: Option<OsString>,
}

impl LaunchEnv {
    /// Reads the variables through `lookup`.
    pub fn from_lookup(lookup: &dyn Fn(&str) -> Option<OsString>) -> LaunchEnv {
        let var = |name: &str| lookup(name).filter(|v| !v.is_empty());
        LaunchEnv {
            rocprofiler_library: var(crate::ROCPROFILER_LIBRARY),
            rocm_path: var(crate::ROCM_PATH),
            ld_library_path: var("LD_LIBRARY_PATH"),
            ld_preload: var("LD_PRELOAD"),
            tool_libraries: var(crate::ROCP_TOOL_LIBRARIES),
            register_library: var(crate::REGISTER_LIBRARY),
            nvtx_injection: var(crate::NVTX_INJECTION),
            run_name: var(crate::RUN_NAME).map(|v| v.to_string_lossy().into_owned()),
            python_hooks: var("ROCTX_UTILS_PYTHON_HOOKS"),
            python_path: var("PYTHONPATH"),
        }
    }

    /// This process's environment.
    pub fn current() -> LaunchEnv {
        LaunchEnv::from_lookup(&|name| std::env::var_os(name))
    }
}
