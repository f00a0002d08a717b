//! roctx, bound at run time: never linked, so a host built with roctx_utils runs on machines
//! without ROCm. Owns the library search, the function table and the safety checks that keep
//! rocprofiler-register from aborting the host.
//!
//! Search order (first library that loads and exports `roctxRangePushA`/`roctxRangePop` wins):
//!
//! 1. `$ROCTX_UTILS_ROCTX_LIBRARY` (a path or a soname);
//! 2. `librocprofiler-sdk-roctx.so.1` (ROCm >= 7.0), then `.so.0` (ROCm 6.x), then roctracer's
//!    legacy `libroctx64.so.4` (core functions only); each by soname (the loader's search path),
//!    then under `$ROCM_PATH/lib`, then under `/opt/rocm/lib`.
//!
//! The search runs once, on first use; the result is latched, so the hot path is one acquire
//! load and one indirect call. If nothing loads, one warning lists what was tried.
//!
//! The rocprofiler-sdk roctx registers with rocprofiler-register on its first call; if a tool
//! is indicated (ROCP_TOOL_LIBRARIES, ROCPROFILER_REGISTER_LIBRARY,
//! ROCPROFILER_REGISTER_FORCE_LOAD or a global `rocprofiler_configure`) but
//! `rocprofiler_set_api_table` cannot be found, register calls LOG(FATAL) and the process
//! aborts. We check that condition before the first call and skip such a library (with a
//! warning naming the variable), so a mis-set environment costs the roctx ranges, not the job.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::OnceLock;

use libloading::os::unix::{Library, Symbol, RTLD_GLOBAL, RTLD_LAZY, RTLD_LOCAL, RTLD_NOW};

/// Env var naming the roctx library to try first.
pub const LIBRARY_VAR: &str = "ROCTX_UTILS_ROCTX_LIBRARY";
/// rocprofiler-sdk roctx sonames, newest first, then roctracer's legacy library.
pub const SDK_SONAMES: [&str; 2] = ["librocprofiler-sdk-roctx.so.1", "librocprofiler-sdk-roctx.so.0"];
/// roctracer's roctx: RangePush/Pop, Mark, RangeStart/Stop only; invisible to rocprofiler-sdk.
pub const LEGACY_SONAME: &str = "libroctx64.so.4";

type PushFn = unsafe extern "C" fn(*const c_char) -> c_int;
type PopFn = unsafe extern "C" fn() -> c_int;
type MarkFn = unsafe extern "C" fn(*const c_char);
type StartFn = unsafe extern "C" fn(*const c_char) -> u64;
type StopFn = unsafe extern "C" fn(u64);
type NameThreadFn = unsafe extern "C" fn(*const c_char) -> c_int;
type NameDeviceFn = unsafe extern "C" fn(*const c_char, c_int) -> c_int;
type NameStreamFn = unsafe extern "C" fn(*const c_char, *const c_void) -> c_int;

/// Which kind of roctx library was bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub enum Flavor {
    /// rocprofiler-sdk's roctx (or an explicit path): every function.
    Sdk = 1,
    /// roctracer's libroctx64: core functions only; naming calls are no-ops.
    Legacy = 2,
}

/// The bound roctx functions. Lives in a process-wide latch and is never dropped, so the
/// library is never unloaded under a caller.
#[derive(Debug)]
pub struct Roctx {
    push: PushFn,
    pop: PopFn,
    mark: Option<MarkFn>,
    range_start: Option<StartFn>,
    range_stop: Option<StopFn>,
    name_os_thread: Option<NameThreadFn>,
    name_hip_device: Option<NameDeviceFn>,
    name_hip_stream: Option<NameStreamFn>,
    flavor: Flavor,
    location: CString,
    _library: Library,
}

impl Roctx {
    /// `roctxRangePushA(text)`; returns roctx's 0-based nesting level.
    #[inline(always)]
    pub fn range_push(&self, text: super::CText<'_>) -> i32 {
        // SAFETY: `push` was resolved from the kept-alive library with roctx's signature; the
        // text is NUL-terminated and outlives the call.
        unsafe { (self.push)(text.as_ptr()) }
    }

    /// `roctxRangePop()`; returns the level closed, or -1 when none was open.
    #[inline(always)]
    pub fn range_pop(&self) -> i32 {
        // SAFETY: as `range_push`.
        unsafe { (self.pop)() }
    }

    /// `roctxMarkA(text)`, if the library has it.
    pub fn mark(&self, text: super::CText<'_>) {
        if let Some(f) = self.mark {
            // SAFETY: as `range_push`.
            unsafe { f(text.as_ptr()) }
        }
    }

    /// `roctxRangeStartA(text)`: a process-wide range id (from 1), if the library has it.
    pub fn range_start(&self, text: super::CText<'_>) -> Option<u64> {
        // SAFETY: as `range_push`.
        self.range_start.map(|f| unsafe { f(text.as_ptr()) })
    }

    /// `roctxRangeStop(id)`, if the library has it.
    pub fn range_stop(&self, id: u64) {
        if let Some(f) = self.range_stop {
            // SAFETY: as `range_push`; roctx does not validate ids.
            unsafe { f(id) }
        }
    }

    /// `roctxNameOsThread(name)`; absent in the legacy library.
    pub fn name_os_thread(&self, name: &CStr) {
        if let Some(f) = self.name_os_thread {
            // SAFETY: as `range_push`.
            unsafe { f(name.as_ptr()) };
        }
    }

    /// `roctxNameHipDevice(name, device_id)`: name first, as roctx declares it.
    pub fn name_hip_device(&self, name: &CStr, device_id: i32) {
        if let Some(f) = self.name_hip_device {
            // SAFETY: as `range_push`.
            unsafe { f(name.as_ptr(), device_id) };
        }
    }

    /// `roctxNameHipStream(name, stream)`: name first; `stream` is the hipStream_t value.
    pub fn name_hip_stream(&self, name: &CStr, stream: usize) {
        if let Some(f) = self.name_hip_stream {
            // SAFETY: as `range_push`; roctx only records the stream value, never dereferences it.
            unsafe { f(name.as_ptr(), stream as *const c_void) };
        }
    }

    /// SDK or legacy.
    pub fn flavor(&self) -> Flavor {
        self.flavor
    }

    /// The path or soname the library was loaded from.
    pub fn location(&self) -> &CStr {
        &self.location
    }
}

static ROCTX: OnceLock<Option<Roctx>> = OnceLock::new();

/// The bound roctx, loading it on the first call; `None` when no library could be used.
#[inline(always)]
pub fn api() -> Option<&'static Roctx> {
    match ROCTX.get() {
        Some(bound) => bound.as_ref(),
        None => bind(),
    }
}

/// The first use: search, bind, and maybe start an automatic session. Kept out of line so the
/// hot path above stays one load and a branch.
#[cold]
#[inline(never)]
fn bind() -> Option<&'static Roctx> {
    let bound = ROCTX.get_or_init(load).as_ref();
    // Outside the latch's initializer, which must not be re-entered: a session started here may
    // need to know the roctx flavor.
    crate::export::auto_session(bound.map(Roctx::flavor));
    bound
}

/// Where to look, in order (see the module docs).
fn candidates() -> Vec<String> {
    let mut out = Vec::new();
    if let Some(path) = std::env::var_os(LIBRARY_VAR).filter(|p| !p.is_empty()) {
        out.push(path.to_string_lossy().into_owned());
    }
    let rocm_path = std::env::var_os("ROCM_PATH").filter(|p| !p.is_empty());
    for name in SDK_SONAMES.iter().chain([&LEGACY_SONAME]) {
        out.push((*name).to_owned());
        if let Some(root) = &rocm_path {
            out.push(format!("{}/lib/{name}", root.to_string_lossy()));
        }
        out.push(format!("/opt/rocm/lib/{name}"));
    }
    out.dedup();
    out
}

fn load() -> Option<Roctx> {
    // rocprofiler-sdk only intercepts roctx calls made after a tool is configured, so tool-mode
    // capture has to be set up before our first roctx call, i.e. now.
    crate::listener::before_first_roctx_call();
    let mut tried = Vec::new();
    for location in candidates() {
        match bind_library(&location) {
            Ok(roctx) => {
                crate::log::info(format_args!("bound roctx from {location} ({:?})", roctx.flavor));
                if !tried.is_empty() {
                    crate::log::info(format_args!("before that, tried: {}", tried.join("; ")));
                }
                return Some(roctx);
            }
            Err(Refusal::Unusable(why)) => tried.push(format!("{location}: {why}")),
            Err(Refusal::WouldAbort(why)) => {
                // Not a search miss: the user's environment asks for a tool that cannot load.
                crate::log::warn(format_args!("skipped librocprofiler-sdk-roctx at {location}: {why}"));
                tried.push(format!("{location}: skipped, see the warning above"));
            }
        }
    }
    // Only worth a warning when the user asked for ROCTX ranges; otherwise (naming calls are
    // ungated) it is setup detail.
    let report = if crate::emitter::emission_enabled() { crate::log::warn } else { crate::log::info };
    report(format_args!(
        "no roctx library could be loaded, so ranges reach AnnotationStack and roctx_utils' own \
         capture only; rocprofv3 and other roctx tools will not see them. Tried, in order: {}. \
         Install rocprofiler-sdk-roctx or set {LIBRARY_VAR} to its path.",
        tried.join("; ")
    ));
    None
}

/// Why a candidate was not bound.
enum Refusal {
    /// Not there, or not a roctx library.
    Unusable(String),
    /// A roctx that registers with rocprofiler-register, in an environment where that aborts.
    WouldAbort(String),
}

impl From<&str> for Refusal {
    fn from(why: &str) -> Refusal {
        Refusal::Unusable(why.to_owned())
    }
}

fn bind_library(location: &str) -> Result<Roctx, Refusal> {
    // SAFETY: loading a shared object runs its constructors; roctx's (either flavor) only set up
    // local bookkeeping and need no GPU (rocprofiler_abi.md 2.2). RTLD_LOCAL keeps our copy from
    // interposing anyone else's symbols.
    let library = unsafe { Library::open(Some(location), RTLD_NOW | RTLD_LOCAL) }.map_err(|e| Refusal::Unusable(short_error(&e)))?;
    // SAFETY (all `sym` calls): each type matches roctx.h's C signature for that name.
    let push: PushFn = unsafe { sym(&library, b"roctxRangePushA\0") }.ok_or("no roctxRangePushA")?;
    let pop: PopFn = unsafe { sym(&library, b"roctxRangePop\0") }.ok_or("no roctxRangePop")?;
    let registers = unsafe { sym::<unsafe extern "C" fn()>(&library, b"rocprofiler_register_import_roctx\0") }.is_some();
    let legacy = !registers && unsafe { sym::<unsafe extern "C" fn() -> u32>(&library, b"roctx_version_major\0") }.is_some();
    if registers {
        if let Some(why) = register_would_abort() {
            return Err(Refusal::WouldAbort(why));
        }
    }
    Ok(Roctx {
        push,
        pop,
        mark: unsafe { sym(&library, b"roctxMarkA\0") },
        range_start: unsafe { sym(&library, b"roctxRangeStartA\0") },
        range_stop: unsafe { sym(&library, b"roctxRangeStop\0") },
        name_os_thread: unsafe { sym(&library, b"roctxNameOsThread\0") },
        name_hip_device: unsafe { sym(&library, b"roctxNameHipDevice\0") },
        name_hip_stream: unsafe { sym(&library, b"roctxNameHipStream\0") },
        flavor: if legacy { Flavor::Legacy } else { Flavor::Sdk },
        location: CString::new(location).unwrap_or_default(),
        _library: library,
    })
}

/// Resolves `name` as a `T` (a function pointer type), or `None` if absent.
///
/// # Safety
/// `T` must be the symbol's real type.
unsafe fn sym<T: Copy>(library: &Library, name: &[u8]) -> Option<T> {
    // SAFETY: per this function's contract.
    let symbol: Symbol<T> = unsafe { library.get(name) }.ok()?;
    Some(*symbol)
}

fn short_error(e: &libloading::Error) -> String {
    match e {
        libloading::Error::DlOpen { desc } => format!("{desc:?}").trim_matches('"').to_owned(),
        other => other.to_string(),
    }
}

fn env_set(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty())
}

/// Whether the first roctx call would make rocprofiler-register abort, and why
/// (rocprofiler_abi.md 2.1 step 4 and 2.2).
fn register_would_abort() -> Option<String> {
    let disabled = std::env::var("ROCPROFILER_REGISTER_ENABLED")
        .is_ok_and(|v| matches!(v.to_ascii_lowercase().as_str(), "0" | "false" | "no" | "off"));
    if disabled {
        return None;
    }
    let force = std::env::var("ROCPROFILER_REGISTER_FORCE_LOAD")
        .is_ok_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on"));
    let reason = if env_set("ROCP_TOOL_LIBRARIES") {
        "ROCP_TOOL_LIBRARIES is set"
    } else if env_set("ROCPROFILER_REGISTER_LIBRARY") {
        "ROCPROFILER_REGISTER_LIBRARY is set"
    } else if force {
        "ROCPROFILER_REGISTER_FORCE_LOAD is set"
    } else if global_symbol(c"rocprofiler_configure") {
        "a rocprofiler_configure symbol is globally visible"
    } else {
        return None;
    };
    if global_symbol(c"rocprofiler_set_api_table") {
        return None;
    }
    // Register would dlopen this library itself, in the same way; if we can, it can.
    let sdk = std::env::var("ROCPROFILER_REGISTER_LIBRARY")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "librocprofiler-sdk.so".to_owned());
    // SAFETY: loading the SDK is exactly what rocprofiler-register does at the first roctx call
    // under these conditions; doing it first changes the timing, not the outcome.
    if let Ok(lib) = unsafe { Library::open(Some(&sdk), RTLD_LAZY | RTLD_GLOBAL) } {
        // SAFETY: only the presence of the symbol is checked; it is never called.
        if unsafe { sym::<unsafe extern "C" fn()>(&lib, b"rocprofiler_set_api_table\0") }.is_some() {
            std::mem::forget(lib); // stays loaded, as register would keep it
            return None;
        }
    }
    Some(format!(
        "{reason}, so its first call would make rocprofiler-register look for \
         rocprofiler-sdk, and {sdk} cannot be loaded, which aborts the process (unset the \
         variable, or point ROCPROFILER_REGISTER_LIBRARY at librocprofiler-sdk.so.N)"
    ))
}

fn global_symbol(name: &CStr) -> bool {
    // SAFETY: dlsym on RTLD_DEFAULT with a NUL-terminated name has no other precondition.
    !unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) }.is_null()
}

#[cfg(test)]
mod tests {
    #[test]
    fn candidates_follow_the_documented_order() {
        let c = super::candidates();
        let pos = |s: &str| c.iter().position(|x| x == s).unwrap_or_else(|| panic!("{s} missing from {c:?}"));
        assert!(pos("librocprofiler-sdk-roctx.so.1") < pos("librocprofiler-sdk-roctx.so.0"));
        assert!(pos("librocprofiler-sdk-roctx.so.0") < pos("libroctx64.so.4"));
        assert!(pos("librocprofiler-sdk-roctx.so.1") < pos("/opt/rocm/lib/librocprofiler-sdk-roctx.so.1"));
        assert!(pos("/opt/rocm/lib/librocprofiler-sdk-roctx.so.1") < pos("librocprofiler-sdk-roctx.so.0"));
    }
}
