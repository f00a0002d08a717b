//! roctx, bound at run time: never linked, so a host built with roctx_utils runs on machines
//! without ROCm. This module binds one candidate library ([`Roctx::open`]) and owns the safety
//! check that keeps rocprofiler-register from aborting the host; the search order, the latch and
//! the messages are `roctx_utils::runtime`'s.
//!
//! The rocprofiler-sdk roctx registers with rocprofiler-register on its first call; if a tool
//! is indicated (ROCP_TOOL_LIBRARIES, ROCPROFILER_REGISTER_LIBRARY,
//! ROCPROFILER_REGISTER_FORCE_LOAD or a global `rocprofiler_configure`) but
//! `rocprofiler_set_api_table` cannot be found, register calls LOG(FATAL) and the process
//! aborts. [`Roctx::open`] checks that condition before the first call and refuses such a
//! library ([`Refusal::WouldAbort`]), so a mis-set environment costs the roctx ranges, not the
//! job.

use std::ffi::{c_char, c_int, c_void, CStr, CString};

use libloading::os::unix::{Library, Symbol, RTLD_GLOBAL, RTLD_LAZY, RTLD_LOCAL, RTLD_NOW};
use roctx_config::RegisterEnv;

use crate::CText;

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
    pub fn range_push(&self, text: CText<'_>) -> i32 {
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
    pub fn mark(&self, text: CText<'_>) {
        if let Some(f) = self.mark {
            // SAFETY: as `range_push`.
            unsafe { f(text.as_ptr()) }
        }
    }

    /// `roctxRangeStartA(text)`: a process-wide range id (from 1), if the library has it.
    pub fn range_start(&self, text: CText<'_>) -> Option<u64> {
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

/// Why a candidate was not bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
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

impl Roctx {
    /// Binds the roctx library at `location` (a path or a soname), refusing one that is not
    /// roctx, and an SDK roctx whose first call would abort under `register` (rocprofiler-
    /// register's variables, read right before this call).
    pub fn open(location: &str, register: &RegisterEnv) -> Result<Roctx, Refusal> {
        bind_library(location, register)
    }
}

fn bind_library(location: &str, register: &RegisterEnv) -> Result<Roctx, Refusal> {
    loadable_file(location).map_err(Refusal::Unusable)?;
    // SAFETY: loading a shared object runs its constructors; roctx's (either flavor) only set up
    // local bookkeeping and need no GPU (rocprofiler_abi.md 2.2). RTLD_LOCAL keeps our copy from
    // interposing anyone else's symbols.
    let library = unsafe { Library::open(Some(location), RTLD_NOW | RTLD_LOCAL) }.map_err(|e| Refusal::Unusable(short_error(&e)))?;
    // Each name is a roctx.h function (or a marker symbol), bound with that function's C type.
    macro_rules! sym {
        ($name:literal as $ty:ty) => {{
            // SAFETY: `$ty` is the C signature roctx.h (or the SDK) gives `$name`.
            unsafe { sym::<$ty>(&library, concat!($name, "\0").as_bytes()) }
        }};
    }
    let push = sym!("roctxRangePushA" as PushFn).ok_or("no roctxRangePushA")?;
    let pop = sym!("roctxRangePop" as PopFn).ok_or("no roctxRangePop")?;
    let registers = sym!("rocprofiler_register_import_roctx" as unsafe extern "C" fn()).is_some();
    let legacy = !registers && sym!("roctx_version_major" as unsafe extern "C" fn() -> u32).is_some();
    if registers {
        if let Some(why) = register_would_abort(register) {
            return Err(Refusal::WouldAbort(why));
        }
    }
    Ok(Roctx {
        push,
        pop,
        mark: sym!("roctxMarkA" as MarkFn),
        range_start: sym!("roctxRangeStartA" as StartFn),
        range_stop: sym!("roctxRangeStop" as StopFn),
        name_os_thread: sym!("roctxNameOsThread" as NameThreadFn),
        name_hip_device: sym!("roctxNameHipDevice" as NameDeviceFn),
        name_hip_stream: sym!("roctxNameHipStream" as NameStreamFn),
        flavor: if legacy { Flavor::Legacy } else { Flavor::Sdk },
        location: CString::new(location).unwrap_or_default(),
        _library: library,
    })
}

/// A path (anything with a `/`, which dlopen does not search for) must name a regular file
/// before dlopen sees it: dlopen reads a FIFO until a writer closes it, which blocks the
/// host's first range forever, and reads a character device such as `/dev/zero` without end.
/// Sonames are left to the loader's search, which only finds files.
pub fn loadable_file(location: &str) -> Result<(), String> {
    if !location.contains('/') {
        return Ok(());
    }
    let meta = std::fs::metadata(location).map_err(|e| format!("{location}: {e}"))?;
    if meta.is_file() {
        return Ok(());
    }
    Err(format!("{location} is {}, not a shared library file", file_kind(&meta.file_type())))
}

/// "a directory", "a FIFO", ... for messages.
pub fn file_kind(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "a regular file"
    }
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

/// Whether the first roctx call would make rocprofiler-register abort, and why
/// (rocprofiler_abi.md 2.1 step 4 and 2.2).
fn register_would_abort(env: &RegisterEnv) -> Option<String> {
    if env.disabled {
        return None;
    }
    let reason = if env.tool_libraries {
        "ROCP_TOOL_LIBRARIES is set"
    } else if env.register_library.is_some() {
        "ROCPROFILER_REGISTER_LIBRARY is set"
    } else if env.force_load {
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
    let sdk = env.register_library.clone().unwrap_or_else(|| "librocprofiler-sdk.so".to_owned());
    let opened = if loadable_file(&sdk).is_ok() {
        // SAFETY: loading the SDK is exactly what rocprofiler-register does at the first roctx
        // call under these conditions; doing it first changes the timing, not the outcome.
        unsafe { Library::open(Some(&sdk), RTLD_LAZY | RTLD_GLOBAL) }.ok()
    } else {
        None
    };
    if let Some(lib) = opened {
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
    use super::*;

    #[test]
    fn a_fifo_or_a_device_is_refused_without_opening_it() {
        // Before the check, dlopen on a FIFO blocked until a writer came: run it on a thread so
        // a regression fails here instead of hanging the suite.
        let dir = std::env::temp_dir().join(format!("roctx_sys_fifo_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("libroctx.so");
        let _ = std::fs::remove_file(&fifo);
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let path = fifo.to_str().unwrap().to_owned();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(Roctx::open(&path, &RegisterEnv::default()).map(|_| ()));
        });
        let result = rx.recv_timeout(std::time::Duration::from_secs(10)).expect("Roctx::open blocked on a FIFO");
        match result {
            Err(Refusal::Unusable(why)) => assert!(why.contains("is a FIFO, not a shared library file"), "{why}"),
            other => panic!("{other:?}"),
        }
        for (path, kind) in [("/dev/zero", "a character device"), ("/tmp", "a directory")] {
            match Roctx::open(path, &RegisterEnv::default()) {
                Err(Refusal::Unusable(why)) => assert!(why.contains(kind), "{why}"),
                other => panic!("{path}: {other:?}"),
            }
        }
        assert!(loadable_file("libroctx64.so.4").is_ok(), "sonames are the loader's to search");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
