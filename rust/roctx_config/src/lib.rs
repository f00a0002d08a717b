/*!
roctx_utils' configuration, the bottom layer beside `roctx_sys`: every environment variable the
library reads is listed in [`VARS`] and read here, once, into a [`Config`]; values are parsed
by the few grammars in [`grammar`]; bad values warn once and fall back to the documented
default. Nothing above this crate calls `std::env`. It also owns roctx_utils' stderr channel
([`log`]), whose level is one of these variables.

# Brief overview

- [`VARS`]: the table of variables (name, who owns the meaning, when it is read, default),
  which the README's Environment table is checked against by a test.
- [`get`]: the process's [`Config`], read from the environment at the first call and latched:
  later `setenv` calls change nothing (upstream latches `XLA_ROCM_ENABLE_ROCTX` the same way).
- [`register_env`]: rocprofiler-register's own variables, read when roctx is bound, not at
  start-up: `rocprofiler_force_configure` sets one of them in between.

# Example

```
use roctx_config::{Config, CaptureRequest};
let env = |name: &str| match name {
    "XLA_ROCM_ENABLE_ROCTX" => Some("TRUE".into()),
    "ROCTX_UTILS_CAPTURE" => Some("self".into()),
    _ => None,
};
let (config, warnings) = Config::from_lookup(&env);
assert!(config.enable_roctx);
assert_eq!(config.capture, CaptureRequest::InProcess);
assert!(warnings.is_empty());
```
*/
#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

pub mod grammar;
pub mod log;

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::OnceLock;

use grammar::{parse_bool, parse_bool_register, parse_bool_tsl, parse_bytes};

pub mod job;
pub use job::{JobIdentity, JOB_ID_VARS, RANK_VARS, RUN_NAME};
pub mod launch;

/// Who defines a variable's meaning (and so its grammar).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// Ours: `ROCTX_UTILS_*`.
    RoctxUtils,
    /// XLA/TSL's; we parse it exactly as upstream does.
    Xla,
    /// ROCm's: a path convention we follow.
    Rocm,
    /// rocprofiler-register's; we read it only to predict what register will do.
    RocprofilerRegister,
    /// ggml/llama.cpp's (the `GGML_HIP_ROOFLINE` profiler's variables, same meaning).
    Ggml,
    /// A job launcher's (torchrun, Slurm, MPI, ...): read to place the process in its job.
    Launcher,
    /// NVIDIA's (NVTX3): read to know that this process is an NVTX-injected one.
    Nvidia,
}

/// When a variable is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// Once, at the library's first call ([`get`]), then latched.
    FirstCall,
    /// Once, right before roctx is bound ([`register_env`]).
    RoctxBinding,
    /// By llama.cpp's `ggml_cuda_roofline_init` ([`disable_cuda_graphs`], [`disable_cuda_pdl`]).
    RooflineInit,
}

/// `GGML_CUDA_DISABLE_GRAPHS=1`, unless the user set it (any value, even empty, is theirs).
/// Returns whether it set it. Call before ggml's backend reads it (its first stream).
pub fn disable_cuda_graphs() -> bool {
    set_unless_users(GGML_CUDA_DISABLE_GRAPHS, "1")
}

/// `GGML_CUDA_PDL=0`, unless the user set it. Returns whether it set it. Call before ggml's
/// CUDA backend launches its first kernel (it reads the variable once, then).
///
/// With programmatic dependent launch (Hopper and later), a kernel starts before its
/// predecessor on the stream ends and waits inside for it, so each kernel's start..end takes
/// in part of the one before: per-op device times overlap and count that time twice (measured
/// on an H200: a decode MUL_MAT's per-op times summed to 3.5 % more than the loop's wall time).
pub fn disable_cuda_pdl() -> bool {
    set_unless_users(GGML_CUDA_PDL, "0")
}

/// Sets `name` to `value` unless it is set (any value, even empty, is the user's); returns
/// whether it set it.
fn set_unless_users(name: &str, value: &str) -> bool {
    if std::env::var_os(name).is_some() {
        return false;
    }
    std::env::set_var(name, value);
    true
}

/// One environment variable the library reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Var {
    /// The variable's name.
    pub name: &'static str,
    /// Whose meaning it is.
    pub owner: Owner,
    /// When it is read.
    pub when: When,
    /// The value used when it is unset, in words.
    pub default: &'static str,
    /// What it does, in one line.
    pub meaning: &'static str,
}

/// `XLA_ROCM_ENABLE_ROCTX`.
pub const ENABLE_ROCTX: &str = "XLA_ROCM_ENABLE_ROCTX";
/// `ROCTX_UTILS_ROCTX_LIBRARY`.
pub const ROCTX_LIBRARY: &str = "ROCTX_UTILS_ROCTX_LIBRARY";
/// `ROCM_PATH`.
pub const ROCM_PATH: &str = "ROCM_PATH";
/// `ROCTX_UTILS_STRING_POOL_BYTES`.
pub const STRING_POOL_BYTES: &str = "ROCTX_UTILS_STRING_POOL_BYTES";
/// `ROCTX_UTILS_CAPTURE`.
pub const CAPTURE: &str = "ROCTX_UTILS_CAPTURE";
/// `ROCTX_UTILS_ROCPROFILER_LIBRARY`.
pub const ROCPROFILER_LIBRARY: &str = "ROCTX_UTILS_ROCPROFILER_LIBRARY";
/// `ROCTX_UTILS_CUPTI_LIBRARY`.
pub const CUPTI_LIBRARY: &str = "ROCTX_UTILS_CUPTI_LIBRARY";
/// `ROCTX_UTILS_CUDA_LIBRARY`.
pub const CUDA_LIBRARY: &str = "ROCTX_UTILS_CUDA_LIBRARY";
/// NVTX3's injection library path (`NVTX_INJECTION64_PATH`).
pub const NVTX_INJECTION: &str = "NVTX_INJECTION64_PATH";
/// `ROCTX_UTILS_XSPACE_OUT`.
pub const XSPACE_OUT: &str = "ROCTX_UTILS_XSPACE_OUT";
/// `ROCTX_UTILS_LOG`.
pub const LOG: &str = "ROCTX_UTILS_LOG";
/// `ROCTX_UTILS_KERNELS`.
pub const KERNELS: &str = "ROCTX_UTILS_KERNELS";
/// `ROCTX_UTILS_COPIES`.
pub const COPIES: &str = "ROCTX_UTILS_COPIES";
/// `ROCTX_UTILS_CUPTI_API`.
pub const CUPTI_API: &str = "ROCTX_UTILS_CUPTI_API";
/// `ROCTX_UTILS_CLOCK`.
pub const CLOCK: &str = "ROCTX_UTILS_CLOCK";
/// `ROCTX_UTILS_ROOFLINE_OUT`.
pub const ROOFLINE_OUT: &str = "ROCTX_UTILS_ROOFLINE_OUT";
/// `ROCTX_UTILS_SIGNALS`.
pub const SIGNALS: &str = "ROCTX_UTILS_SIGNALS";
/// `ROCTX_UTILS_FLUSH_EVERY`.
pub const FLUSH_EVERY: &str = "ROCTX_UTILS_FLUSH_EVERY";
/// `ROCTX_UTILS_PROGRESS_DIR`.
pub const PROGRESS_DIR: &str = "ROCTX_UTILS_PROGRESS_DIR";
/// `ROCTX_UTILS_CAPTURE_RANGE`.
pub const CAPTURE_RANGE: &str = "ROCTX_UTILS_CAPTURE_RANGE";
/// `ROCTX_UTILS_CAPTURE_RANGE_END`.
pub const CAPTURE_RANGE_END: &str = "ROCTX_UTILS_CAPTURE_RANGE_END";
/// `ROCTX_UTILS_CAPTURE_DELAY`.
pub const CAPTURE_DELAY: &str = "ROCTX_UTILS_CAPTURE_DELAY";
/// `ROCTX_UTILS_CAPTURE_DURATION`.
pub const CAPTURE_DURATION: &str = "ROCTX_UTILS_CAPTURE_DURATION";
/// `ROCTX_UTILS_MAX_EVENTS_PER_THREAD`.
pub const MAX_EVENTS_PER_THREAD: &str = "ROCTX_UTILS_MAX_EVENTS_PER_THREAD";
/// `ROCTX_UTILS_MAX_LABEL_BYTES_PER_THREAD`.
pub const MAX_LABEL_BYTES_PER_THREAD: &str = "ROCTX_UTILS_MAX_LABEL_BYTES_PER_THREAD";
/// The automatic session's default caps per thread (`SessionOptions::default()`'s).
pub const DEFAULT_MAX_EVENTS_PER_THREAD: usize = 1 << 20;
/// See [`DEFAULT_MAX_EVENTS_PER_THREAD`].
pub const DEFAULT_MAX_LABEL_BYTES_PER_THREAD: usize = 16 << 20;
/// llama.cpp's name for the roofline report path (`GGML_HIP_ROOFLINE` builds).
pub const GGML_ROOFLINE_OUT: &str = "GGML_ROOFLINE_OUT";
/// How the llama.cpp hook counts the experts a `MUL_MAT_ID` touched: `analytic` or `exact`.
pub const GGML_ROOFLINE_MOE: &str = "GGML_ROOFLINE_MOE";
/// ggml's CUDA/HIP backend: any value turns CUDA/HIP graphs off.
pub const GGML_CUDA_DISABLE_GRAPHS: &str = "GGML_CUDA_DISABLE_GRAPHS";
/// ggml's CUDA backend: `0` turns programmatic dependent launch off (unset or non-zero: on).
pub const GGML_CUDA_PDL: &str = "GGML_CUDA_PDL";
/// rocprofiler-register: a tool library list (makes register look for the SDK).
pub const ROCP_TOOL_LIBRARIES: &str = "ROCP_TOOL_LIBRARIES";
/// rocprofiler-register: where it loads the SDK from.
pub const REGISTER_LIBRARY: &str = "ROCPROFILER_REGISTER_LIBRARY";
/// rocprofiler-register: look for the SDK even without a tool.
pub const REGISTER_FORCE_LOAD: &str = "ROCPROFILER_REGISTER_FORCE_LOAD";
/// rocprofiler-register: `0` turns the whole mechanism off.
pub const REGISTER_ENABLED: &str = "ROCPROFILER_REGISTER_ENABLED";

/// Default cap on RegisterString's pool: 64 MiB.
pub const DEFAULT_STRING_POOL_BYTES: usize = 64 << 20;

/// Every environment variable roctx_utils reads, in the README's order.
pub const VARS: [Var; 47] = [
    Var {
        name: ENABLE_ROCTX,
        owner: Owner::Xla,
        when: When::FirstCall,
        default: "off",
        meaning: "`1`/`true` turns emission on (non-null domain); `0`/`false` off; anything else warns once and stays off (tsl's grammar)",
    },
    Var {
        name: ROCTX_LIBRARY,
        owner: Owner::RoctxUtils,
        when: When::FirstCall,
        default: "none",
        meaning: "roctx library to try first (path or soname)",
    },
    Var {
        name: ROCM_PATH,
        owner: Owner::Rocm,
        when: When::FirstCall,
        default: "none",
        meaning: "also search `$ROCM_PATH/lib` (after the loader path, before `/opt/rocm/lib`), for roctx and rocprofiler-sdk",
    },
    Var {
        name: STRING_POOL_BYTES,
        owner: Owner::RoctxUtils,
        when: When::FirstCall,
        default: "64m",
        meaning: "RegisterString pool cap in bytes (`k`/`m`/`g` suffixes)",
    },
    Var {
        name: CAPTURE,
        owner: Owner::RoctxUtils,
        when: When::FirstCall,
        default: "auto",
        meaning: "`auto`, `sdk`, `self` (in-process), `host` (fed by the host's tracer), `off`",
    },
    Var {
        name: ROCPROFILER_LIBRARY,
        owner: Owner::RoctxUtils,
        when: When::FirstCall,
        default: "none",
        meaning: "rocprofiler-sdk library to try first for tool mode",
    },
    Var {
        name: CUPTI_LIBRARY,
        owner: Owner::RoctxUtils,
        when: When::FirstCall,
        default: "none",
        meaning: "NVIDIA: the libcupti to load for kernel rows when the process has none loaded yet (one already loaded is always reused)",
    },
    Var {
        name: CUDA_LIBRARY,
        owner: Owner::RoctxUtils,
        when: When::FirstCall,
        default: "none",
        meaning: "NVIDIA: the CUDA driver library, already loaded by the process under another name than `libcuda.so.1`, to read the GPUs' attributes from (XProf's device capabilities); never loaded by us",
    },
    Var {
        name: NVTX_INJECTION,
        owner: Owner::Nvidia,
        when: When::FirstCall,
        default: "none",
        meaning: "NVTX3's injection library; when it is this library, the process is an NVIDIA one from our first call, so CUPTI kernel tracing starts even when something else (a Python annotation) loaded us before any NVTX client did",
    },
    Var {
        name: XSPACE_OUT,
        owner: Owner::RoctxUtils,
        when: When::FirstCall,
        default: "none",
        meaning: "a log directory: capture from the first range and write `<dir>/plugins/profile/<run>/<host>_rank<n>.xplane.pb` (`<host>_pid<pid>` without a launcher rank) at stop/exit; `<run>` below; a new file per session, never replacing one (README, Multi-GPU and multi-node jobs)",
    },
    Var {
        name: LOG,
        owner: Owner::RoctxUtils,
        when: When::FirstCall,
        default: "warn",
        meaning: "`warn`, `info` (shows which roctx was bound), `off`",
    },
    Var {
        name: KERNELS,
        owner: Owner::RoctxUtils,
        when: When::FirstCall,
        default: "on",
        meaning: "trace GPU kernel dispatches (device timestamps, names, attribution) when rocprofiler-sdk is ours; `0`/`off` turns it off",
    },
    Var {
        name: COPIES,
        owner: Owner::RoctxUtils,
        when: When::FirstCall,
        default: "on",
        meaning: "with kernels traced, also trace memory copies and sets (CUPTI MEMCPY/MEMCPY2/MEMSET, rocprofiler-sdk MEMORY_COPY); `off` saves their tracing cost (docs/kernels.md)",
    },
    Var {
        name: CUPTI_API,
        owner: Owner::RoctxUtils,
        when: When::FirstCall,
        default: "launches",
        meaning: "NVIDIA, kernels traced: which CUDA API calls CUPTI records for the join, `launches` (kernel launches, graph launches, copies and sets: what attribution needs, at a fraction of the cost of every call; CUPTI 12.5+) or `all` (every runtime and driver call, as before)",
    },
    Var {
        name: CLOCK,
        owner: Owner::RoctxUtils,
        when: When::FirstCall,
        default: "auto",
        meaning: "the in-process capture clock: `auto` (the invariant TSC when the kernel's clocksource is `tsc`, converted to CLOCK_BOOTTIME at snapshot time; else CLOCK_BOOTTIME), `boottime` (always CLOCK_BOOTTIME)",
    },
    Var {
        name: RUN_NAME,
        owner: Owner::RoctxUtils,
        when: When::FirstCall,
        default: "none",
        meaning: "the run directory's name under `<logdir>/plugins/profile/`, shared by every process that has it (characters outside `[A-Za-z0-9._+=@-]` become `_`, cut to 128 bytes); unset: the first launcher job id below, else the UTC time of the write",
    },
    Var {
        name: "TORCHELASTIC_RUN_ID",
        owner: Owner::Launcher,
        when: When::FirstCall,
        default: "none",
        meaning: "torchrun's job id (`--rdzv-id`; its default `none` is skipped); names the run when `ROCTX_UTILS_RUN_NAME` is unset",
    },
    Var {
        name: "SLURM_JOB_ID",
        owner: Owner::Launcher,
        when: When::FirstCall,
        default: "none",
        meaning: "Slurm's job id (tried next)",
    },
    Var {
        name: "PMIX_NAMESPACE",
        owner: Owner::Launcher,
        when: When::FirstCall,
        default: "none",
        meaning: "PMIx's job namespace (Open MPI 5 `mpirun`, PRRTE, Slurm with PMIx) (tried next)",
    },
    Var {
        name: "OMPI_MCA_orte_ess_jobid",
        owner: Owner::Launcher,
        when: When::FirstCall,
        default: "none",
        meaning: "Open MPI 4's job id (tried next)",
    },
    Var {
        name: "LSB_JOBID",
        owner: Owner::Launcher,
        when: When::FirstCall,
        default: "none",
        meaning: "LSF's job id (tried next)",
    },
    Var {
        name: "PBS_JOBID",
        owner: Owner::Launcher,
        when: When::FirstCall,
        default: "none",
        meaning: "PBS/Torque's job id (tried next)",
    },
    Var {
        name: "FLUX_JOB_ID",
        owner: Owner::Launcher,
        when: When::FirstCall,
        default: "none",
        meaning: "Flux's job id (tried next)",
    },
    Var {
        name: "RANK",
        owner: Owner::Launcher,
        when: When::FirstCall,
        default: "none",
        meaning: "torchrun's global rank: names this process's file `<host>_rank<n>.xplane.pb` (first of the rank variables that holds a non-negative integer)",
    },
    Var {
        name: "OMPI_COMM_WORLD_RANK",
        owner: Owner::Launcher,
        when: When::FirstCall,
        default: "none",
        meaning: "Open MPI's rank (same use as `RANK`, tried after it)",
    },
    Var {
        name: "PMIX_RANK",
        owner: Owner::Launcher,
        when: When::FirstCall,
        default: "none",
        meaning: "PMIx's rank (tried next)",
    },
    Var {
        name: "PMI_RANK",
        owner: Owner::Launcher,
        when: When::FirstCall,
        default: "none",
        meaning: "MPICH/Hydra's rank (tried next)",
    },
    Var {
        name: "SLURM_PROCID",
        owner: Owner::Launcher,
        when: When::FirstCall,
        default: "none",
        meaning: "Slurm's task rank (tried next)",
    },
    Var {
        name: "LOCAL_RANK",
        owner: Owner::Launcher,
        when: When::FirstCall,
        default: "none",
        meaning: "torchrun's rank on this node, unique with the host name (tried last); with no rank at all the file is `<host>_pid<pid>.xplane.pb`",
    },
    Var {
        name: ROOFLINE_OUT,
        owner: Owner::RoctxUtils,
        when: When::FirstCall,
        default: "none",
        meaning: "write the per-op roofline report (JSON) to this path at exit; turns kernel tracing and the op-scope entry points on",
    },
    Var {
        name: GGML_ROOFLINE_OUT,
        owner: Owner::Ggml,
        when: When::FirstCall,
        default: "none",
        meaning: "llama.cpp's name for the same report path (`ROCTX_UTILS_ROOFLINE_OUT` wins when both are set)",
    },
    Var {
        name: GGML_ROOFLINE_MOE,
        owner: Owner::RoctxUtils,
        when: When::FirstCall,
        default: "analytic",
        meaning: "how a `MUL_MAT_ID` row counts its experts: `analytic`, `min(M·top_k, n_experts)` from the shapes (exact at 1 token, an upper bound above; no GPU work); `exact` reads each ids tensor back once per graph for `experts_used` and `tokens_per_expert` (docs/roofline.md gives its measured cost). The row's `moe_accounting` says which was used",
    },
    Var {
        name: SIGNALS,
        owner: Owner::RoctxUtils,
        when: When::FirstCall,
        default: "on",
        meaning: "with an output set, SIGINT, SIGTERM and SIGHUP write what was captured (marked cut short) before the process ends as it would have, and SIGUSR1 writes a snapshot; a signal the host handles or ignores is left to it (SIGINT/SIGTERM/SIGHUP: written, then passed on). `0`/`off` installs nothing (docs/reliability.md)",
    },
    Var {
        name: FLUSH_EVERY,
        owner: Owner::RoctxUtils,
        when: When::FirstCall,
        default: "off",
        meaning: "seconds (at least 1): with an output set, rewrite this process's XSpace and roofline report every so often while it runs, so a SIGKILL loses at most that window",
    },
    Var {
        name: PROGRESS_DIR,
        owner: Owner::RoctxUtils,
        when: When::FirstCall,
        default: "none",
        meaning: "set by `roctx record` on a terminal: a directory where each recording process rewrites, every second, one line of what it captured so far (events, kernels and copies), for the progress line (docs/record.md)",
    },
    Var {
        name: CAPTURE_RANGE,
        owner: Owner::RoctxUtils,
        when: When::FirstCall,
        default: "none",
        meaning: "with an output set, record only inside capture windows (`roctx record --capture-range`): `range:NAME` from the first push of a range labelled NAME (any domain; `NAME@DOMAIN` for one NVTX domain) to its pop, `profiler-api` between `cudaProfilerStart`/`hipProfilerStart`/`roctxProfilerResume(0)`/`roctx_utils_capture_start` and the matching stop; outside a window nothing is recorded and kernels are not traced; each window is written as its own trace (docs/record.md)",
    },
    Var {
        name: CAPTURE_RANGE_END,
        owner: Owner::RoctxUtils,
        when: When::FirstCall,
        default: "stop",
        meaning: "after a capture window closes: `stop` (no more windows), `repeat` (wait for the next trigger), `repeat:N` (at most N windows)",
    },
    Var {
        name: CAPTURE_DELAY,
        owner: Owner::RoctxUtils,
        when: When::FirstCall,
        default: "0",
        meaning: "seconds after start-up before recording starts (`--delay`; with a capture range, triggers before then are ignored)",
    },
    Var {
        name: CAPTURE_DURATION,
        owner: Owner::RoctxUtils,
        when: When::FirstCall,
        default: "none",
        meaning: "seconds a capture window lasts at most (`--duration`; without a capture range, one window from the delay on)",
    },
    Var {
        name: MAX_EVENTS_PER_THREAD,
        owner: Owner::RoctxUtils,
        when: When::FirstCall,
        default: "1m",
        meaning: "events one thread may record in the automatic session (`ROCTX_UTILS_XSPACE_OUT`, `roctx record`; `k`/`m`/`g` suffixes); past it events are dropped and counted",
    },
    Var {
        name: MAX_LABEL_BYTES_PER_THREAD,
        owner: Owner::RoctxUtils,
        when: When::FirstCall,
        default: "16m",
        meaning: "label bytes one thread may keep in the automatic session (`k`/`m`/`g` suffixes); past it events are dropped and counted",
    },
    Var {
        name: GGML_CUDA_DISABLE_GRAPHS,
        owner: Owner::Ggml,
        when: When::RooflineInit,
        default: "unset",
        meaning: "set to `1` by `ggml_cuda_roofline_init` when a report path is set and the user has not set it: per-op attribution needs eager launches",
    },
    Var {
        name: GGML_CUDA_PDL,
        owner: Owner::Ggml,
        when: When::RooflineInit,
        default: "unset",
        meaning: "set to `0` by `ggml_cuda_roofline_init` when a report path is set and the user has not set it: with programmatic dependent launch (CUDA, Hopper+) a kernel's start..end overlaps its predecessor's, so per-op times would count that time twice",
    },
    Var {
        name: ROCP_TOOL_LIBRARIES,
        owner: Owner::RocprofilerRegister,
        when: When::RoctxBinding,
        default: "none",
        meaning: "rocprofiler-register's: set, it makes roctx's first call look for rocprofiler-sdk (we skip an SDK roctx that would abort)",
    },
    Var {
        name: REGISTER_LIBRARY,
        owner: Owner::RocprofilerRegister,
        when: When::RoctxBinding,
        default: "`librocprofiler-sdk.so`",
        meaning: "rocprofiler-register's: the SDK it loads; also a tool indication",
    },
    Var {
        name: REGISTER_FORCE_LOAD,
        owner: Owner::RocprofilerRegister,
        when: When::RoctxBinding,
        default: "off",
        meaning: "rocprofiler-register's: look for the SDK even without a tool (rocprofiler_force_configure sets it); register's grammar: anything but `0`/`false`/`no`/`off`/`n`/`f` is on",
    },
    Var {
        name: REGISTER_ENABLED,
        owner: Owner::RocprofilerRegister,
        when: When::RoctxBinding,
        default: "on",
        meaning: "rocprofiler-register's: `0`/`false`/`no`/`off`/`n`/`f` disables it, and with it the abort risk",
    },
];

/// What a capture session asks for (`ROCTX_UTILS_CAPTURE`, or a session's options).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureRequest {
    /// The SDK if we can own it and roctx calls reach it, else in-process.
    Auto,
    /// The SDK, falling back to in-process (with a warning) when it cannot be used.
    Sdk,
    /// In-process only.
    InProcess,
    /// Records fed by the host.
    Host,
    /// Nothing.
    Off,
}

impl CaptureRequest {
    /// Parses `auto|sdk|self|host|off` (ASCII case-insensitive; `inprocess`/`in-process` too).
    pub fn parse(raw: &str) -> Option<CaptureRequest> {
        match raw.to_ascii_lowercase().as_str() {
            "auto" => Some(CaptureRequest::Auto),
            "sdk" => Some(CaptureRequest::Sdk),
            "self" | "inprocess" | "in-process" => Some(CaptureRequest::InProcess),
            "host" => Some(CaptureRequest::Host),
            "off" => Some(CaptureRequest::Off),
            _ => None,
        }
    }
}

/// Which CUDA API calls CUPTI records for the join (`ROCTX_UTILS_CUPTI_API`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CuptiApi {
    /// Only the calls that put work on the GPU: launches, graph launches, copies, sets.
    Launches,
    /// Every runtime and driver call.
    All,
}

/// How the llama.cpp hook counts a `MUL_MAT_ID`'s experts (`GGML_ROOFLINE_MOE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MoeAccounting {
    /// `min(M·top_k, n_experts)` from the shapes: no GPU work, exact at one token.
    Analytic,
    /// The ids tensor read back (once per graph for the ops sharing it).
    Exact,
}

/// When the automatic session records: the capture windows of `ROCTX_UTILS_CAPTURE_RANGE`,
/// `ROCTX_UTILS_CAPTURE_RANGE_END`, `ROCTX_UTILS_CAPTURE_DELAY` and `ROCTX_UTILS_CAPTURE_DURATION`
/// (nsys's `--capture-range`, `--capture-range-end`, `--delay`, `--duration`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Window {
    /// What opens and closes a window.
    pub range: CaptureRange,
    /// What happens after a window closes.
    pub end: RangeEnd,
    /// Nothing is recorded (and no trigger is honoured) before this long after start-up.
    pub delay: std::time::Duration,
    /// A window closes at most this long after it opened.
    pub duration: Option<std::time::Duration>,
}

/// What opens and closes a capture window.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum CaptureRange {
    /// Nothing: the window is the whole run (after the delay, for the duration).
    #[default]
    None,
    /// From the first push of a range labelled `name` to its pop. `domain`: only ranges of that
    /// NVTX domain (their label is `<domain>: <name>`); `None`: any domain.
    Range {
        /// The range's message.
        name: String,
        /// Its NVTX domain, if one was named.
        domain: Option<String>,
    },
    /// `cudaProfilerStart`/`Stop`, `hipProfilerStart`/`Stop`, `roctxProfilerResume`/`Pause`
    /// (thread 0), `roctx_utils_capture_start`/`stop`.
    ProfilerApi,
}

/// After a capture window closes (`ROCTX_UTILS_CAPTURE_RANGE_END`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RangeEnd {
    /// No more windows.
    #[default]
    Stop,
    /// Another window at the next trigger; at most `Some(n)` windows in all.
    Repeat(Option<u32>),
}

/// Longest range name a capture range may name (a label's own cut).
pub const MAX_CAPTURE_RANGE_NAME: usize = 4096;
/// Longest delay or duration accepted: about 11.6 days.
pub const MAX_WINDOW_SECONDS: f64 = 1_000_000.0;

impl Window {
    /// Whether recording covers the whole run (no window configured).
    pub fn whole_run(&self) -> bool {
        self.range == CaptureRange::None && self.delay.is_zero() && self.duration.is_none()
    }

    /// How many windows may open: 1 for `stop`, `n` for `repeat:n`, `None` for unbounded.
    pub fn max_windows(&self) -> Option<u32> {
        match self.end {
            RangeEnd::Stop => Some(1),
            RangeEnd::Repeat(n) => n,
        }
    }

    fn from_lookup(lookup: &dyn Fn(&str) -> Option<OsString>, warnings: &mut Vec<String>) -> Window {
        let range = match lookup(CAPTURE_RANGE) {
            None => CaptureRange::None,
            Some(raw) => raw.to_str().and_then(CaptureRange::parse).unwrap_or_else(|| {
                warnings.push(format!(
                    "{CAPTURE_RANGE}={:?} is not one of none, profiler-api, range:NAME, range:NAME@DOMAIN; recording the whole run",
                    Shown(&raw)
                ));
                CaptureRange::None
            }),
        };
        let end = match lookup(CAPTURE_RANGE_END) {
            None => RangeEnd::Stop,
            Some(raw) => raw.to_str().and_then(RangeEnd::parse).unwrap_or_else(|| {
                warnings.push(format!("{CAPTURE_RANGE_END}={:?} is not one of stop, repeat, repeat:N (N from 1); using stop", Shown(&raw)));
                RangeEnd::Stop
            }),
        };
        let delay = match lookup(CAPTURE_DELAY) {
            None => std::time::Duration::ZERO,
            Some(raw) => match raw.to_str().and_then(|t| parse_seconds(t, true)) {
                Some(d) => d.unwrap_or_default(),
                None => {
                    warnings.push(format!("{CAPTURE_DELAY}={:?} is not a number of seconds from 0 to 1000000; no delay", Shown(&raw)));
                    std::time::Duration::ZERO
                }
            },
        };
        let duration = match lookup(CAPTURE_DURATION) {
            None => None,
            Some(raw) => raw.to_str().and_then(|t| parse_seconds(t, false)).unwrap_or_else(|| {
                warnings.push(format!("{CAPTURE_DURATION}={:?} is not a number of seconds above 0 and up to 1000000; no time limit", Shown(&raw)));
                None
            }),
        };
        Window { range, end, delay, duration }
    }
}

/// Seconds, surrounding blanks ignored: `""`, `"off"` and (unless `zero_ok`) `"0"` are
/// `Some(None)` (unset); a finite number in range is `Some(Some(d))`; anything else `None`.
fn parse_seconds(text: &str, zero_ok: bool) -> Option<Option<std::time::Duration>> {
    let text = text.trim();
    if text.is_empty() || text.eq_ignore_ascii_case("off") {
        return Some(None);
    }
    let secs = text.parse::<f64>().ok().filter(|s| s.is_finite() && (0.0..=MAX_WINDOW_SECONDS).contains(s))?;
    if secs == 0.0 {
        return if zero_ok { Some(Some(std::time::Duration::ZERO)) } else { Some(None) };
    }
    Some(Some(std::time::Duration::from_secs_f64(secs)))
}

impl CaptureRange {
    /// `none`, `profiler-api` (also nsys's `cudaProfilerApi` and `hipProfilerApi`), or
    /// `range:NAME[@DOMAIN]` (also nsys's `nvtx:`): the kind ASCII case-insensitive, blanks
    /// around it ignored; NAME exact, non-empty, at most [`MAX_CAPTURE_RANGE_NAME`] bytes.
    /// `NAME@DOMAIN` splits at the last `@`; `NAME@*` is any domain.
    pub fn parse(raw: &str) -> Option<CaptureRange> {
        let text = raw.trim_start();
        let lower = text.to_ascii_lowercase();
        match lower.trim_end() {
            "" | "none" => return Some(CaptureRange::None),
            "profiler-api" | "profilerapi" | "cudaprofilerapi" | "hipprofilerapi" => return Some(CaptureRange::ProfilerApi),
            _ => {}
        }
        let spec = ["range:", "nvtx:", "roctx:"].iter().find_map(|p| lower.starts_with(p).then(|| &text[p.len()..]))?;
        let (name, domain) = match spec.rsplit_once('@') {
            Some((name, "*")) => (name, None),
            Some((name, domain)) if !domain.is_empty() => (name, Some(domain.to_owned())),
            _ => (spec, None),
        };
        (!name.is_empty() && name.len() <= MAX_CAPTURE_RANGE_NAME).then(|| CaptureRange::Range { name: name.to_owned(), domain })
    }
}

impl RangeEnd {
    /// `stop`, `repeat` or `repeat:N` (N from 1), ASCII case-insensitive, blanks ignored.
    pub fn parse(raw: &str) -> Option<RangeEnd> {
        let text = raw.trim().to_ascii_lowercase();
        match text.as_str() {
            "" | "stop" => Some(RangeEnd::Stop),
            "repeat" => Some(RangeEnd::Repeat(None)),
            _ => text.strip_prefix("repeat:").and_then(|n| n.parse::<u32>().ok()).filter(|&n| n > 0).map(|n| RangeEnd::Repeat(Some(n))),
        }
    }
}

/// The in-process capture clock (`ROCTX_UTILS_CLOCK`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockRequest {
    /// The invariant TSC when the machine has one the kernel trusts, else `CLOCK_BOOTTIME`.
    Auto,
    /// `CLOCK_BOOTTIME` always.
    Boottime,
}

/// How much roctx_utils says on stderr (`ROCTX_UTILS_LOG`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// Nothing.
    Off,
    /// Warnings and results the user asked for (the default).
    Warn,
    /// Also setup details: which libraries were bound, which mode a session uses.
    Info,
}

/// The configuration, read once from the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// `XLA_ROCM_ENABLE_ROCTX`: range emission (a non-null domain).
    pub enable_roctx: bool,
    /// `ROCTX_UTILS_ROCTX_LIBRARY`, when set and non-empty.
    pub roctx_library: Option<OsString>,
    /// `ROCM_PATH`, when set and non-empty.
    pub rocm_path: Option<OsString>,
    /// `ROCTX_UTILS_STRING_POOL_BYTES`.
    pub string_pool_bytes: usize,
    /// `ROCTX_UTILS_CAPTURE`.
    pub capture: CaptureRequest,
    /// `ROCTX_UTILS_ROCPROFILER_LIBRARY`, when set and non-empty.
    pub rocprofiler_library: Option<OsString>,
    /// `ROCTX_UTILS_CUPTI_LIBRARY`, when set and non-empty.
    pub cupti_library: Option<OsString>,
    /// `ROCTX_UTILS_CUDA_LIBRARY`, when set and non-empty.
    pub cuda_library: Option<OsString>,
    /// `NVTX_INJECTION64_PATH`, when set and non-empty.
    pub nvtx_injection: Option<PathBuf>,
    /// `ROCTX_UTILS_XSPACE_OUT`, when set and non-empty.
    pub xspace_out: Option<PathBuf>,
    /// `ROCTX_UTILS_LOG`.
    pub log: LogLevel,
    /// `ROCTX_UTILS_KERNELS`: trace kernel dispatches in tool mode.
    pub kernels: bool,
    /// `ROCTX_UTILS_COPIES`: with kernels, trace memory copies and sets too.
    pub copies: bool,
    /// `ROCTX_UTILS_CUPTI_API`: which API calls CUPTI records.
    pub cupti_api: CuptiApi,
    /// `ROCTX_UTILS_ROOFLINE_OUT`, else `GGML_ROOFLINE_OUT`, when set and non-empty.
    pub roofline_out: Option<PathBuf>,
    /// `GGML_ROOFLINE_MOE`.
    pub moe_accounting: MoeAccounting,
    /// `ROCTX_UTILS_CLOCK`.
    pub clock: ClockRequest,
    /// `ROCTX_UTILS_SIGNALS`: write on SIGINT, SIGTERM, SIGHUP and SIGUSR1.
    pub signals: bool,
    /// `ROCTX_UTILS_FLUSH_EVERY`: the period of the rolling snapshot, if any.
    pub flush_every: Option<std::time::Duration>,
    /// `ROCTX_UTILS_PROGRESS_DIR`: where this process writes its progress line, if anywhere.
    pub progress_dir: Option<PathBuf>,
    /// `ROCTX_UTILS_CAPTURE_RANGE`, `_RANGE_END`, `_DELAY`, `_DURATION`: when the automatic
    /// session records.
    pub window: Window,
    /// `ROCTX_UTILS_MAX_EVENTS_PER_THREAD`: the automatic session's event cap per thread.
    pub max_events_per_thread: usize,
    /// `ROCTX_UTILS_MAX_LABEL_BYTES_PER_THREAD`: the automatic session's label bytes per thread.
    pub max_label_bytes_per_thread: usize,
    /// `ROCTX_UTILS_RUN_NAME` and the launchers' job ids and ranks ([`job`]).
    pub job: JobIdentity,
}

impl Config {
    /// Reads every [`When::FirstCall`] variable through `lookup` (the process environment in
    /// [`get`], a table in tests). Returns the configuration and one warning per bad value,
    /// each saying which default was used instead.
    pub fn from_lookup(lookup: &dyn Fn(&str) -> Option<OsString>) -> (Config, Vec<String>) {
        let mut warnings = Vec::new();
        let non_empty = |name: &str| lookup(name).filter(|v| !v.is_empty());

        let enable_roctx = match lookup(ENABLE_ROCTX) {
            None => false,
            Some(raw) => parse_bool_tsl(&raw).unwrap_or_else(|| {
                warnings.push(format!(
                    "{ENABLE_ROCTX} is set to an unrecognised value; expected one of 0/false/1/true. \
                     ROCTX emission stays disabled. Failed to parse the env-var {ENABLE_ROCTX} into \
                     bool: {:?}. Use the default value: false",
                    Shown(&raw)
                ));
                false
            }),
        };

        let string_pool_bytes = match lookup(STRING_POOL_BYTES) {
            None => DEFAULT_STRING_POOL_BYTES,
            Some(raw) => raw.to_str().and_then(parse_bytes).unwrap_or_else(|| {
                let raw = Shown(&raw);
                warnings.push(format!(
                    "{STRING_POOL_BYTES}={raw:?} is not a byte count (e.g. 67108864, 64m); using the default {DEFAULT_STRING_POOL_BYTES}"
                ));
                DEFAULT_STRING_POOL_BYTES
            }),
        };

        let capture = match lookup(CAPTURE) {
            None => CaptureRequest::Auto,
            Some(raw) => raw.to_str().and_then(CaptureRequest::parse).unwrap_or_else(|| {
                let raw = Shown(&raw);
                warnings.push(format!("{CAPTURE}={raw:?} is not one of auto, sdk, self, host, off; using auto"));
                CaptureRequest::Auto
            }),
        };

        let log = match lookup(LOG) {
            None => LogLevel::Warn,
            Some(raw) => match raw.to_str().map(str::to_ascii_lowercase).as_deref() {
                Some("warn" | "warning") => LogLevel::Warn,
                Some("info" | "debug") => LogLevel::Info,
                Some("quiet") => LogLevel::Off,
                Some(other) if parse_bool(other) == Some(false) => LogLevel::Off,
                _ => {
                    let raw = Shown(&raw);
                    warnings.push(format!("{LOG}={raw:?} is not one of warn, info, off; using warn"));
                    LogLevel::Warn
                }
            },
        };

        let kernels = match lookup(KERNELS) {
            None => true,
            Some(raw) => raw.to_str().and_then(parse_bool).unwrap_or_else(|| {
                let raw = Shown(&raw);
                warnings.push(format!("{KERNELS}={raw:?} is not a boolean (1/0, on/off, true/false, yes/no); using on"));
                true
            }),
        };

        let copies = match lookup(COPIES) {
            None => true,
            Some(raw) => raw.to_str().and_then(parse_bool).unwrap_or_else(|| {
                let raw = Shown(&raw);
                warnings.push(format!("{COPIES}={raw:?} is not a boolean (1/0, on/off, true/false, yes/no); using on"));
                true
            }),
        };

        let cupti_api = match lookup(CUPTI_API) {
            None => CuptiApi::Launches,
            Some(raw) => match raw.to_str().map(str::to_ascii_lowercase).as_deref() {
                Some("launches" | "") => CuptiApi::Launches,
                Some("all") => CuptiApi::All,
                _ => {
                    let raw = Shown(&raw);
                    warnings.push(format!("{CUPTI_API}={raw:?} is not one of launches, all; using launches"));
                    CuptiApi::Launches
                }
            },
        };

        let clock = match lookup(CLOCK) {
            None => ClockRequest::Auto,
            Some(raw) => match raw.to_str().map(str::to_ascii_lowercase).as_deref() {
                Some("auto" | "") => ClockRequest::Auto,
                Some("boottime") => ClockRequest::Boottime,
                _ => {
                    let raw = Shown(&raw);
                    warnings.push(format!("{CLOCK}={raw:?} is not one of auto, boottime; using auto"));
                    ClockRequest::Auto
                }
            },
        };

        let signals = match lookup(SIGNALS) {
            None => true,
            Some(raw) => raw.to_str().and_then(parse_bool).unwrap_or_else(|| {
                let raw = Shown(&raw);
                warnings.push(format!("{SIGNALS}={raw:?} is not a boolean (1/0, on/off, true/false, yes/no); using on"));
                true
            }),
        };

        let flush_every = match lookup(FLUSH_EVERY) {
            None => None,
            Some(raw) => match raw.to_str().map(str::trim) {
                Some("" | "0" | "off") => None,
                Some(text) => match text.parse::<f64>() {
                    // A day at most: a longer period is no protection, and Duration takes it.
                    Ok(secs) if (1.0..=86_400.0).contains(&secs) => Some(std::time::Duration::from_secs_f64(secs)),
                    _ => {
                        warnings.push(format!("{FLUSH_EVERY}={:?} is not a number of seconds from 1 to 86400; no periodic snapshot", Shown(&raw)));
                        None
                    }
                },
                None => {
                    warnings.push(format!("{FLUSH_EVERY}={:?} is not a number of seconds from 1 to 86400; no periodic snapshot", Shown(&raw)));
                    None
                }
            },
        };

        let mut cap = |name: &str, default: usize| match lookup(name) {
            None => default,
            Some(raw) => match raw.to_str().and_then(parse_bytes) {
                Some(n) if n > 0 => n,
                _ => {
                    warnings.push(format!("{name}={:?} is not a positive count (e.g. 4194304, 4m); using the default {default}", Shown(&raw)));
                    default
                }
            },
        };
        let max_events_per_thread = cap(MAX_EVENTS_PER_THREAD, DEFAULT_MAX_EVENTS_PER_THREAD);
        let max_label_bytes_per_thread = cap(MAX_LABEL_BYTES_PER_THREAD, DEFAULT_MAX_LABEL_BYTES_PER_THREAD);

        let moe_accounting = match lookup(GGML_ROOFLINE_MOE) {
            None => MoeAccounting::Analytic,
            Some(raw) => match raw.to_str().map(|v| v.trim().to_ascii_lowercase()).as_deref() {
                Some("analytic" | "") => MoeAccounting::Analytic,
                Some("exact") => MoeAccounting::Exact,
                _ => {
                    warnings.push(format!("{GGML_ROOFLINE_MOE}={:?} is not one of analytic, exact; using analytic", Shown(&raw)));
                    MoeAccounting::Analytic
                }
            },
        };

        let window = Window::from_lookup(lookup, &mut warnings);
        let job = JobIdentity::from_lookup(lookup, &mut warnings);

        let config = Config {
            enable_roctx,
            roctx_library: non_empty(ROCTX_LIBRARY),
            rocm_path: non_empty(ROCM_PATH),
            string_pool_bytes,
            capture,
            rocprofiler_library: non_empty(ROCPROFILER_LIBRARY),
            cupti_library: non_empty(CUPTI_LIBRARY),
            cuda_library: non_empty(CUDA_LIBRARY),
            nvtx_injection: non_empty(NVTX_INJECTION).map(PathBuf::from),
            xspace_out: non_empty(XSPACE_OUT).map(PathBuf::from),
            log,
            kernels,
            copies,
            cupti_api,
            roofline_out: non_empty(ROOFLINE_OUT).or_else(|| non_empty(GGML_ROOFLINE_OUT)).map(PathBuf::from),
            moe_accounting,
            clock,
            signals,
            flush_every,
            progress_dir: non_empty(PROGRESS_DIR).map(PathBuf::from),
            window,
            max_events_per_thread,
            max_label_bytes_per_thread,
            job,
        };
        (config, warnings)
    }
}

static CONFIG: OnceLock<Config> = OnceLock::new();

/// A value as a warning shows it: `Debug`-quoted, cut to [`SHOWN_CHARS`] characters with its
/// length said after (10 kB of `RANK` was echoed in full).
pub struct Shown<'a>(pub &'a std::ffi::OsStr);

/// The most characters of a bad value a warning echoes.
pub const SHOWN_CHARS: usize = 80;

impl std::fmt::Debug for Shown<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = self.0.to_string_lossy();
        if text.chars().count() <= SHOWN_CHARS {
            return write!(f, "{text:?}");
        }
        let head: String = text.chars().take(SHOWN_CHARS).collect();
        write!(f, "{head:?}... ({} bytes)", self.0.len())
    }
}

impl Config {
    /// Makes the output paths (`ROCTX_UTILS_XSPACE_OUT`, the roofline report's) absolute against
    /// `cwd`, the directory at start-up: a process that `chdir()`s later still writes where the
    /// user pointed, and says so. Without a current directory they stay relative, with a
    /// warning.
    pub fn resolve_output_paths(&mut self, cwd: &std::io::Result<PathBuf>, warnings: &mut Vec<String>) {
        for (path, var) in [(&mut self.xspace_out, XSPACE_OUT), (&mut self.roofline_out, ROOFLINE_OUT)] {
            let Some(p) = path.as_mut().filter(|p| p.is_relative()) else { continue };
            match cwd {
                Ok(cwd) => *p = cwd.join(&*p),
                Err(e) => warnings.push(format!(
                    "{var}={}: relative, and the current directory is unknown ({e}): it is resolved at each write",
                    p.display()
                )),
            }
        }
    }
}

/// The process's configuration: the environment as it was at the first call (one acquire load
/// after that), output paths made absolute then. Bad values are reported once, as warnings,
/// when they are read.
#[inline]
pub fn get() -> &'static Config {
    match CONFIG.get() {
        Some(config) => config,
        None => init(),
    }
}

#[cold]
#[inline(never)]
fn init() -> &'static Config {
    let mut fresh = None;
    let config = CONFIG.get_or_init(|| {
        let (mut config, mut warnings) = Config::from_lookup(&|name| std::env::var_os(name));
        config.resolve_output_paths(&std::env::current_dir(), &mut warnings);
        fresh = Some(warnings);
        config
    });
    // After the latch is set: logging reads the level from it.
    for warning in fresh.into_iter().flatten() {
        log::warn(format_args!("{warning}"));
    }
    config
}

/// rocprofiler-register's variables, as register will see them at roctx's first call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegisterEnv {
    /// `ROCP_TOOL_LIBRARIES` is set and non-empty.
    pub tool_libraries: bool,
    /// `ROCPROFILER_REGISTER_LIBRARY`, when set and non-empty.
    pub register_library: Option<String>,
    /// `ROCPROFILER_REGISTER_FORCE_LOAD` is true.
    pub force_load: bool,
    /// `ROCPROFILER_REGISTER_ENABLED` is false.
    pub disabled: bool,
}

impl RegisterEnv {
    /// Reads the four variables through `lookup`.
    pub fn from_lookup(lookup: &dyn Fn(&str) -> Option<OsString>) -> RegisterEnv {
        let text = |name: &str| lookup(name).filter(|v| !v.is_empty()).map(|v| v.to_string_lossy().into_owned());
        RegisterEnv {
            tool_libraries: text(ROCP_TOOL_LIBRARIES).is_some(),
            register_library: text(REGISTER_LIBRARY),
            force_load: text(REGISTER_FORCE_LOAD).is_some_and(|v| parse_bool_register(&v)),
            disabled: text(REGISTER_ENABLED).is_some_and(|v| !parse_bool_register(&v)),
        }
    }
}

/// rocprofiler-register's variables, read now: call right before binding roctx, after tool
/// mode is configured (`rocprofiler_force_configure` sets `ROCPROFILER_REGISTER_FORCE_LOAD`).
pub fn register_env() -> RegisterEnv {
    RegisterEnv::from_lookup(&|name| std::env::var_os(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<OsString> {
        move |name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| OsString::from(v))
    }

    #[test]
    fn a_huge_bad_value_is_echoed_cut_with_its_length() {
        // Issue 25: 10 kB of RANK was echoed in full.
        let big = OsString::from("x".repeat(10_000));
        let (_, w) = Config::from_lookup(&|name: &str| (name == "RANK" || name == CAPTURE).then(|| big.clone()));
        assert_eq!(w.len(), 2, "{w:?}");
        for warning in &w {
            assert!(warning.len() < 300, "{} bytes: {warning}", warning.len());
            assert!(warning.contains("... (10000 bytes)"), "{warning}");
        }
        assert_eq!(format!("{:?}", Shown(std::ffi::OsStr::new("short"))), "\"short\"");
    }

    #[test]
    fn relative_output_paths_are_resolved_once_against_the_start_up_directory() {
        // Issue 25, item 4: a relative ROCTX_UTILS_XSPACE_OUT was resolved at exit, after the
        // process had changed directory.
        let (mut c, _) = Config::from_lookup(&env(&[(XSPACE_OUT, "logs"), (GGML_ROOFLINE_OUT, "r/roof.json")]));
        let mut w = Vec::new();
        c.resolve_output_paths(&Ok(PathBuf::from("/work/start")), &mut w);
        assert_eq!(c.xspace_out, Some(PathBuf::from("/work/start/logs")));
        assert_eq!(c.roofline_out, Some(PathBuf::from("/work/start/r/roof.json")));
        assert!(w.is_empty());
        let (mut c, _) = Config::from_lookup(&env(&[(XSPACE_OUT, "/abs/logs"), (ROOFLINE_OUT, "x.json")]));
        c.resolve_output_paths(&Err(std::io::Error::from(std::io::ErrorKind::NotFound)), &mut w);
        assert_eq!(c.xspace_out, Some(PathBuf::from("/abs/logs")), "absolute: untouched");
        assert_eq!(c.roofline_out, Some(PathBuf::from("x.json")));
        assert_eq!(w.len(), 1, "{w:?}");
    }

    #[test]
    fn an_empty_environment_gives_every_documented_default() {
        let (c, warnings) = Config::from_lookup(&env(&[]));
        assert!(warnings.is_empty());
        assert_eq!(
            c,
            Config {
                enable_roctx: false,
                roctx_library: None,
                rocm_path: None,
                string_pool_bytes: 64 << 20,
                capture: CaptureRequest::Auto,
                rocprofiler_library: None,
                cupti_library: None,
                cuda_library: None,
                nvtx_injection: None,
                xspace_out: None,
                log: LogLevel::Warn,
                kernels: true,
                copies: true,
                cupti_api: CuptiApi::Launches,
                roofline_out: None,
                moe_accounting: MoeAccounting::Analytic,
                clock: ClockRequest::Auto,
                signals: true,
                flush_every: None,
                progress_dir: None,
                window: Window::default(),
                max_events_per_thread: 1 << 20,
                max_label_bytes_per_thread: 16 << 20,
                job: JobIdentity::default(),
            }
        );
    }

    #[test]
    fn moe_accounting_is_analytic_unless_exact_is_asked_for() {
        type Env = &'static [(&'static str, &'static str)];
        const CASES: [(Env, MoeAccounting, usize); 5] = [
            (&[(GGML_ROOFLINE_MOE, "exact")], MoeAccounting::Exact, 0),
            (&[(GGML_ROOFLINE_MOE, " EXACT ")], MoeAccounting::Exact, 0),
            (&[(GGML_ROOFLINE_MOE, "analytic")], MoeAccounting::Analytic, 0),
            (&[(GGML_ROOFLINE_MOE, "")], MoeAccounting::Analytic, 0),
            (&[(GGML_ROOFLINE_MOE, "1")], MoeAccounting::Analytic, 1),
        ];
        for (raw, want, warned) in CASES {
            let (c, w) = Config::from_lookup(&env(raw));
            assert_eq!((c.moe_accounting, w.len()), (want, warned), "{raw:?}: {w:?}");
        }
        let (_, w) = Config::from_lookup(&env(&[(GGML_ROOFLINE_MOE, "sampled")]));
        assert_eq!(w, ["GGML_ROOFLINE_MOE=\"sampled\" is not one of analytic, exact; using analytic"]);
    }

    #[test]
    fn the_roofline_path_takes_ours_over_llama_cpps_and_kernels_parse_as_a_boolean() {
        let (c, w) = Config::from_lookup(&env(&[(GGML_ROOFLINE_OUT, "g.json")]));
        assert_eq!((c.roofline_out, w.len()), (Some(PathBuf::from("g.json")), 0));
        let (c, _) = Config::from_lookup(&env(&[(GGML_ROOFLINE_OUT, "g.json"), (ROOFLINE_OUT, "r.json")]));
        assert_eq!(c.roofline_out, Some(PathBuf::from("r.json")));
        let (c, _) = Config::from_lookup(&env(&[(GGML_ROOFLINE_OUT, ""), (KERNELS, "off")]));
        assert_eq!((c.roofline_out, c.kernels), (None, false), "empty is unset, as in llama.cpp");
        let (c, w) = Config::from_lookup(&env(&[(COPIES, "off")]));
        assert!(!c.copies && c.kernels && w.is_empty(), "{w:?}");
        let (c, w) = Config::from_lookup(&env(&[(COPIES, "maybe")]));
        assert!(c.copies && w[0].contains("ROCTX_UTILS_COPIES") && w[0].contains("using on"), "{w:?}");
        let (c, w) = Config::from_lookup(&env(&[(CUPTI_API, "ALL")]));
        assert!(c.cupti_api == CuptiApi::All && w.is_empty(), "{w:?}");
        let (c, w) = Config::from_lookup(&env(&[(CUPTI_API, "some")]));
        assert!(c.cupti_api == CuptiApi::Launches && w[0].contains("ROCTX_UTILS_CUPTI_API") && w[0].contains("using launches"), "{w:?}");
        let (c, w) = Config::from_lookup(&env(&[(KERNELS, "sometimes")]));
        assert!(c.kernels);
        assert!(w[0].contains("ROCTX_UTILS_KERNELS") && w[0].contains("using on"), "{w:?}");
    }

    #[test]
    fn bad_values_warn_once_each_and_fall_back_to_the_default() {
        let (c, warnings) = Config::from_lookup(&env(&[
            (ENABLE_ROCTX, "yes"),
            (STRING_POOL_BYTES, "lots"),
            (CAPTURE, "sometimes"),
            (LOG, "loud"),
        ]));
        assert_eq!((c.enable_roctx, c.string_pool_bytes, c.capture, c.log), (false, 64 << 20, CaptureRequest::Auto, LogLevel::Warn));
        assert_eq!(warnings.len(), 4, "{warnings:#?}");
        assert!(warnings[0].contains("Failed to parse the env-var XLA_ROCM_ENABLE_ROCTX into bool: \"yes\""));
        assert!(warnings[1].contains("ROCTX_UTILS_STRING_POOL_BYTES=\"lots\" is not a byte count"));
        assert!(warnings[2].contains("using auto"));
        assert!(warnings[3].contains("ROCTX_UTILS_LOG=\"loud\""));
    }

    #[test]
    fn empty_paths_count_as_unset() {
        let (c, _) = Config::from_lookup(&env(&[(ROCTX_LIBRARY, ""), (XSPACE_OUT, ""), (ROCM_PATH, "/opt/rocm-7")]));
        assert_eq!((c.roctx_library, c.xspace_out), (None, None));
        assert_eq!(c.rocm_path, Some(OsString::from("/opt/rocm-7")));
    }

    #[test]
    fn log_levels_use_the_bool_grammar_for_off() {
        for (raw, level) in [("off", LogLevel::Off), ("0", LogLevel::Off), ("quiet", LogLevel::Off), ("INFO", LogLevel::Info), ("warn", LogLevel::Warn)] {
            let lookup = move |name: &str| (name == LOG).then(|| OsString::from(raw));
            assert_eq!(Config::from_lookup(&lookup).0.log, level, "{raw}");
        }
    }

    #[test]
    fn capture_modes_parse_strictly() {
        assert_eq!(CaptureRequest::parse("AUTO"), Some(CaptureRequest::Auto));
        assert_eq!(CaptureRequest::parse("self"), Some(CaptureRequest::InProcess));
        assert_eq!(CaptureRequest::parse("sdk"), Some(CaptureRequest::Sdk));
        assert_eq!(CaptureRequest::parse("host"), Some(CaptureRequest::Host));
        assert_eq!(CaptureRequest::parse("off"), Some(CaptureRequest::Off));
        assert_eq!(CaptureRequest::parse(" sdk"), None);
        assert_eq!(CaptureRequest::parse(""), None);
    }

    #[test]
    fn register_variables_follow_the_bool_grammar() {
        let r = RegisterEnv::from_lookup(&env(&[(REGISTER_FORCE_LOAD, "ON"), (REGISTER_ENABLED, "no"), (ROCP_TOOL_LIBRARIES, "")]));
        assert_eq!(r, RegisterEnv { tool_libraries: false, register_library: None, force_load: true, disabled: true });
        let r = RegisterEnv::from_lookup(&env(&[(REGISTER_FORCE_LOAD, "0"), (REGISTER_LIBRARY, "/x/librocprofiler-sdk.so.1")]));
        assert!(!r.force_load && !r.disabled);
        assert_eq!(r.register_library.as_deref(), Some("/x/librocprofiler-sdk.so.1"));
    }

    #[test]
    fn register_variables_use_registers_own_looser_grammar() {
        // Register reads anything but 0/false/no/off/n/f as true; our grammar would call these
        // invalid, and the abort guard then missed a forced tool scan.
        for v in ["2", "enabled", "y", "T", "force", "-1"] {
            let r = RegisterEnv::from_lookup(&|name: &str| (name == REGISTER_FORCE_LOAD).then(|| OsString::from(v)));
            assert!(r.force_load, "{v}");
        }
        for v in ["0", "FALSE", "No", "off", "n", "F"] {
            let r = RegisterEnv::from_lookup(&|name: &str| [REGISTER_FORCE_LOAD, REGISTER_ENABLED].contains(&name).then(|| OsString::from(v)));
            assert!(!r.force_load && r.disabled, "{v}");
        }
        let r = RegisterEnv::from_lookup(&|name: &str| (name == REGISTER_ENABLED).then(|| OsString::from("2")));
        assert!(!r.disabled);
    }

    #[test]
    fn capture_windows_parse_nsys_words_and_fall_back_to_the_whole_run() {
        use std::time::Duration;
        let (c, w) = Config::from_lookup(&env(&[]));
        assert!(c.window.whole_run() && w.is_empty());
        let (c, w) = Config::from_lookup(&env(&[
            (CAPTURE_RANGE, "range:train_step@jax"),
            (CAPTURE_RANGE_END, "Repeat:3"),
            (CAPTURE_DELAY, " 1.5 "),
            (CAPTURE_DURATION, "2"),
        ]));
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(c.window.range, CaptureRange::Range { name: "train_step".into(), domain: Some("jax".into()) });
        assert_eq!((c.window.end, c.window.max_windows()), (RangeEnd::Repeat(Some(3)), Some(3)));
        assert_eq!((c.window.delay, c.window.duration), (Duration::from_millis(1500), Some(Duration::from_secs(2))));
        assert_eq!(CaptureRange::parse("NVTX:a@b@*"), Some(CaptureRange::Range { name: "a@b".into(), domain: None }));
        assert_eq!(CaptureRange::parse("range:step 7"), Some(CaptureRange::Range { name: "step 7".into(), domain: None }));
        assert_eq!(CaptureRange::parse(" cudaProfilerApi "), Some(CaptureRange::ProfilerApi));
        assert_eq!(RangeEnd::parse("repeat"), Some(RangeEnd::Repeat(None)));
        for bad in ["range:", "range:@d", "ranges", "nvtx", &format!("range:{}", "x".repeat(MAX_CAPTURE_RANGE_NAME + 1))] {
            assert_eq!(CaptureRange::parse(bad), None, "{bad}");
        }
        for bad in ["repeat:0", "repeat:-1", "again", "repeat:x"] {
            assert_eq!(RangeEnd::parse(bad), None, "{bad}");
        }
        // Bad values warn once each and lose nothing: the whole run, no delay, no limit.
        let (c, w) = Config::from_lookup(&env(&[(CAPTURE_RANGE, "step"), (CAPTURE_RANGE_END, "later"), (CAPTURE_DELAY, "-1"), (CAPTURE_DURATION, "inf")]));
        assert_eq!(w.len(), 4, "{w:?}");
        assert!(c.window.whole_run());
        assert_eq!(c.window.end, RangeEnd::Stop);
        // A zero duration or "off" is no limit; a zero delay is none.
        let (c, w) = Config::from_lookup(&env(&[(CAPTURE_DURATION, "0"), (CAPTURE_DELAY, "0")]));
        assert!(w.is_empty() && c.window.whole_run());
    }

    #[test]
    fn the_table_names_every_variable_once() {
        let mut names: Vec<_> = VARS.iter().map(|v| v.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), VARS.len());
    }
}
