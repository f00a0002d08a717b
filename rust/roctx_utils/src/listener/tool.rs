//! Tool mode: we configure rocprofiler-sdk ourselves (rocprofiler_abi.md section 9).
//!
//! Once per process: load `$ROCTX_UTILS_ROCPROFILER_LIBRARY`, else `librocprofiler-sdk.so.1`,
//! else `.so.0` (also under `$ROCM_PATH/lib` and `/opt/rocm/lib`), RTLD_NOW | RTLD_GLOBAL; read
//! the version and pick the record layout; if `rocprofiler_is_initialized` says 0, call
//! `rocprofiler_force_configure` with a configure function that is *not* exported (exporting
//! `rocprofiler_configure` would make rocprofiler-register go looking for the SDK, and abort if
//! it cannot find it). Inside `initialize` (the only place the SDK accepts setup calls) we create
//! one context and subscribe MARKER_CORE_API, MARKER_CONTROL_API and MARKER_NAME_API. Sessions
//! start and stop that context.
//!
//! MARKER_CORE_RANGE_API (7.x) is not subscribed: MARKER_CORE_API carries the same ranges on
//! every version, and subscribing both would record each range twice.
//!
//! Every failure (missing library or symbol, unknown version, CONFIGURATION_LOCKED under
//! rocprofv3 or another tool) leaves [`ToolState::Unavailable`] with a reason, and sessions fall
//! back to in-process capture.
//!
//! **Listed mode** ([`configure_listed`], [`initialize_listed`]): the tool library
//! (`libroctx_utils_tool.so`) is loaded by the SDK itself, from `ROCP_TOOL_LIBRARIES`, and the SDK
//! calls its exported `rocprofiler_configure`. Then nothing is loaded or forced: we bind the very
//! SDK that called us (`RTLD_NOLOAD`), take the layout from the version it passed, and set up the
//! same contexts inside its `initialize`. The runtime owns the exported entry and what happens
//! around it (sessions, writes at finalize).

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::OnceLock;

use parking_lot::Mutex;

use roctx_config::log;
use roctx_sys::guard;
use roctx_sys::rocprofiler::{self, CallbackRecordV6, CallbackRecordV7, Layout, SdkApi, ToolConfigureResult};

const SONAMES: [&str; 2] = ["librocprofiler-sdk.so.1", "librocprofiler-sdk.so.0"];

/// Whether tool mode is usable.
#[derive(Debug)]
pub enum ToolState {
    /// Configured: a context exists and is subscribed to the marker kinds.
    Ready {
        /// SDK version (10000*major + 100*minor + patch).
        version: u32,
        /// Record layout for that version.
        layout: Layout,
        /// Where the SDK was loaded from.
        location: String,
    },
    /// Not usable, and why (for the fallback message).
    Unavailable(String),
}

static STATE: OnceLock<ToolState> = OnceLock::new();
static API: OnceLock<SdkApi> = OnceLock::new();
/// The layout chosen in `tool_configure` from the version the SDK passes there.
static LAYOUT: AtomicU8 = AtomicU8::new(0);
/// Context handle, valid when CONTEXT_STATE == 1.
static CONTEXT: AtomicU64 = AtomicU64::new(0);
static CONTEXT_STATE: AtomicU8 = AtomicU8::new(0);
static INIT_ERROR: Mutex<Option<String>> = parking_lot::const_mutex(None);

/// Configures tool mode once and reports the outcome (later calls return the same).
pub fn prepare() -> &'static ToolState {
    STATE.get_or_init(|| {
        let state = configure();
        match &state {
            ToolState::Ready { version, location, .. } => log::info(format_args!(
                "rocprofiler-sdk {} from {location}: capturing ROCTX markers in tool mode",
                version_text(*version)
            )),
            ToolState::Unavailable(why) => log::info(format_args!("rocprofiler-sdk tool mode unavailable: {why}")),
        }
        state
    })
}

fn version_text(v: u32) -> String {
    format!("{}.{}.{}", v / 10_000, (v / 100) % 100, v % 100)
}

fn candidates() -> Vec<String> {
    let config = roctx_config::get();
    let mut out = Vec::new();
    if let Some(p) = &config.rocprofiler_library {
        out.push(p.to_string_lossy().into_owned());
    }
    let rocm = config.rocm_path.as_ref();
    for name in SONAMES {
        out.push(name.to_owned());
        if let Some(root) = &rocm {
            out.push(format!("{}/lib/{name}", root.to_string_lossy()));
        }
        out.push(format!("/opt/rocm/lib/{name}"));
    }
    out
}

fn configure() -> ToolState {
    let mut tried = Vec::new();
    let api = candidates().into_iter().find_map(|location| match SdkApi::load(&location) {
        Ok(api) => Some(api),
        Err(e) => {
            tried.push(e);
            None
        }
    });
    let Some(api) = api else {
        return ToolState::Unavailable(format!("no rocprofiler-sdk library could be loaded (tried: {})", tried.join("; ")));
    };
    let api = API.get_or_init(|| api);
    let Some(version) = api.version() else {
        return ToolState::Unavailable(format!("rocprofiler_get_version failed in {}", api.location));
    };
    if Layout::for_version(version).is_none() {
        return ToolState::Unavailable(format!(
            "rocprofiler-sdk {} at {} has record layouts this build does not know (supported: 0.4.0 to 1.x, ROCm 6.2 to 7.x)",
            version_text(version),
            api.location
        ));
    }
    match api.initialized() {
        Ok(0) => {}
        Ok(_) => {
            return ToolState::Unavailable(format!(
                "rocprofiler-sdk at {} is already initialized by another tool (e.g. rocprofv3 or the host's tracer); use ROCTX_UTILS_CAPTURE=host to receive its records",
                api.location
            ))
        }
        Err(status) => return ToolState::Unavailable(format!("rocprofiler_is_initialized failed: {}", api.status_name(status))),
    }
    // SAFETY: `tool_configure` has the rocprofiler_configure_func_t signature and lives forever.
    let status = unsafe { (api.force_configure)(tool_configure) };
    if status != 0 {
        return ToolState::Unavailable(format!(
            "rocprofiler_force_configure returned {}{}",
            api.status_name(status),
            if status == 15 || status == 16 { " (another tool, e.g. rocprofv3, owns the SDK)" } else { "" }
        ));
    }
    if let Some(why) = INIT_ERROR.lock().take() {
        return ToolState::Unavailable(why);
    }
    if CONTEXT_STATE.load(Ordering::Acquire) != 1 {
        return ToolState::Unavailable("rocprofiler-sdk never called our initialize".to_owned());
    }
    let layout = layout().unwrap_or(Layout::V7);
    ToolState::Ready { version, layout, location: api.location.clone() }
}

fn layout() -> Option<Layout> {
    match LAYOUT.load(Ordering::Acquire) {
        1 => Some(Layout::V6),
        2 => Some(Layout::V7),
        _ => None,
    }
}

static RESULT: SyncResult = SyncResult(ToolConfigureResult {
    size: std::mem::size_of::<ToolConfigureResult>(),
    initialize: Some(tool_initialize),
    finalize: Some(tool_finalize),
    tool_data: std::ptr::null_mut(),
});

/// The SDK only reads the result (and copies it); the raw pointer inside is null.
struct SyncResult(ToolConfigureResult);
// SAFETY: immutable after construction; `tool_data` is null.
unsafe impl Sync for SyncResult {}

/// Our `rocprofiler_configure`, passed by pointer to `force_configure`, never exported.
unsafe extern "C" fn tool_configure(
    version: u32,
    _runtime_version: *const c_char,
    _priority: u32,
    client_id: *mut c_void,
) -> *mut ToolConfigureResult {
    guard(std::ptr::null_mut(), || {
        // The version passed here is authoritative for the layouts.
        let Some(layout) = Layout::for_version(version) else {
            *INIT_ERROR.lock() = Some(format!("rocprofiler-sdk passed unknown version {version} to configure"));
            return std::ptr::null_mut(); // decline
        };
        LAYOUT.store(if layout == Layout::V6 { 1 } else { 2 }, Ordering::Release);
        // SAFETY: the SDK passes its client id struct for this version.
        unsafe { rocprofiler::set_client_name(client_id, layout, c"roctx_utils") };
        std::ptr::addr_of!(RESULT.0).cast_mut()
    })
}

// rocprofiler_callback_tracing_kind_t
const MARKER_KINDS: [c_int; 3] = [7, 8, 9]; // CORE_API, CONTROL_API, NAME_API

unsafe extern "C" fn tool_initialize(_fini: *mut c_void, _tool_data: *mut c_void) -> c_int {
    guard(-1, || match initialize_contexts() {
        Ok(()) => 0,
        Err(why) => {
            *INIT_ERROR.lock() = Some(why);
            -1
        }
    })
}

/// Inside the SDK's `initialize`: the marker context with its three kinds, then kernel tracing.
fn initialize_contexts() -> Result<(), String> {
    let (Some(api), Some(layout)) = (API.get(), layout()) else { return Err("rocprofiler-sdk called initialize before configure".to_owned()) };
    let mut context = 0u64; // must be 0 on entry (SDK >= 0.5 checks)
    // SAFETY: a valid out-pointer, inside initialize as the SDK requires.
    let status = unsafe { (api.create_context)(&mut context) };
    if status != 0 {
        return Err(format!("rocprofiler_create_context returned {}", api.status_name(status)));
    }
    let callback: *const c_void = match layout {
        Layout::V6 => on_marker_v6 as *const c_void,
        Layout::V7 => on_marker_v7 as *const c_void,
    };
    for kind in MARKER_KINDS {
        // SAFETY: all operations (null, 0); the callback matches the layout's record type.
        let status = unsafe { (api.configure_callback_tracing_service)(context, kind, std::ptr::null(), 0, callback, std::ptr::null_mut()) };
        if status != 0 {
            if kind == 7 {
                return Err(format!("subscribing MARKER_CORE_API failed: {} (another tool may have taken it)", api.status_name(status)));
            }
            log::warn(format_args!(
                "rocprofiler-sdk: subscribing marker kind {kind} failed ({}); thread names or pause/resume will not be captured",
                api.status_name(status)
            ));
        }
    }
    CONTEXT.store(context, Ordering::Release);
    CONTEXT_STATE.store(1, Ordering::Release);
    super::kernels::initialize(api, layout);
    Ok(())
}

unsafe extern "C" fn tool_finalize(_tool_data: *mut c_void) {
    guard((), || CONTEXT_STATE.store(2, Ordering::Release))
}

/// Listed mode, inside the exported `rocprofiler_configure`: binds the SDK that is calling (it
/// is loaded already; nothing is loaded here), checks `version`, names the client. Makes no SDK
/// call but `rocprofiler_get_version`, as configure must. An error means: decline (return null).
///
/// # Safety
/// `client_id` must be the SDK's `rocprofiler_client_id_t` for `version`, or null.
pub unsafe fn configure_listed(version: u32, priority: u32, client_id: *mut c_void) -> Result<(), String> {
    if STATE.get().is_some() || API.get().is_some() {
        return Err("this copy of roctx_utils has configured rocprofiler-sdk already".to_owned());
    }
    let Some(layout) = Layout::for_version(version) else {
        return Err(format!(
            "rocprofiler-sdk {} has record layouts this build does not know (supported: 0.4.0 to 1.x, ROCm 6.2 to 7.x)",
            version_text(version)
        ));
    };
    let api = loaded_sdk()?;
    let location = api.location.clone();
    if API.set(api).is_err() {
        return Err("configure was called twice".to_owned());
    }
    LAYOUT.store(if layout == Layout::V6 { 1 } else { 2 }, Ordering::Release);
    LISTED.store(true, Ordering::Release);
    // SAFETY: the SDK passes its client id struct for this version (this function's contract).
    unsafe { rocprofiler::set_client_name(client_id, layout, c"roctx_utils") };
    log::info(format_args!("rocprofiler-sdk {} from {location} configured roctx_utils as a tool (priority {priority})", version_text(version)));
    Ok(())
}

/// Set by [`configure_listed`]: the SDK loaded this library as a tool.
static LISTED: AtomicBool = AtomicBool::new(false);

/// Whether this library was configured by the SDK as a listed tool.
pub fn listed() -> bool {
    LISTED.load(Ordering::Acquire)
}

/// The SDK that called our configure: where the loader resolves its functions globally, then
/// `ROCPROFILER_REGISTER_LIBRARY`, then the sonames and our search paths, each only if already
/// loaded.
fn loaded_sdk() -> Result<SdkApi, String> {
    let mut places: Vec<String> = SdkApi::global_location().into_iter().collect();
    // As it is now: the SDK may have pointed it at itself.
    places.extend(roctx_config::register_env().register_library);
    places.extend(candidates());
    places.dedup();
    let mut tried = Vec::new();
    for place in places {
        match SdkApi::open_loaded(&place) {
            Ok(api) => return Ok(api),
            Err(e) => tried.push(e),
        }
    }
    Err(format!("the rocprofiler-sdk that called rocprofiler_configure is not loaded where we can see it (tried: {})", tried.join("; ")))
}

/// Listed mode, inside the SDK's `initialize`: the same contexts as tool mode; afterwards
/// [`prepare`] reports tool mode ready (nothing is forced).
pub fn initialize_listed() -> Result<(), String> {
    initialize_contexts()?;
    let api = API.get().ok_or("rocprofiler-sdk is not bound")?;
    let version = api.version().unwrap_or(0);
    let layout = layout().unwrap_or(Layout::V7);
    let _ = STATE.set(ToolState::Ready { version, layout, location: api.location.clone() });
    Ok(())
}

/// Listed mode, at the SDK's `finalize`: the contexts are dead from here on.
pub fn finalize_listed() {
    CONTEXT_STATE.store(2, Ordering::Release);
}

/// MARKER_* callback for SDK 0.x (56-byte record, passed by value).
unsafe extern "C" fn on_marker_v6(record: CallbackRecordV6, _user_data: *mut c_void, _cb_data: *mut c_void) {
    fenced(|| {
        // SAFETY: the SDK's payload is valid for the callback.
        let _ = unsafe { super::on_record(&record.into()) };
    })
}

/// MARKER_* callback for SDK 1.x (64-byte record, passed by value).
unsafe extern "C" fn on_marker_v7(record: CallbackRecordV7, _user_data: *mut c_void, _cb_data: *mut c_void) {
    fenced(|| {
        // SAFETY: the SDK's payload is valid for the callback.
        let _ = unsafe { super::on_record(&record.into()) };
    })
}

thread_local! {
    /// Set while this thread runs one of our marker callbacks.
    static IN_CALLBACK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the calling thread is inside one of our rocprofiler-sdk marker callbacks (where no
/// context is started or stopped: a capture window opened by a range or `roctxProfilerResume`
/// leaves the kernel context to the runtime's window thread).
pub fn in_callback() -> bool {
    IN_CALLBACK.try_with(std::cell::Cell::get).unwrap_or(false)
}

/// Runs a callback's work inside the panic fence: nothing unwinds into the SDK, and a record
/// lost to a panic is counted as rejected, so the session's accounting stays exact.
fn fenced(f: impl FnOnce()) {
    let _ = IN_CALLBACK.try_with(|c| c.set(true));
    let done = guard(false, || {
        #[cfg(test)]
        faults::maybe_panic();
        f();
        true
    });
    let _ = IN_CALLBACK.try_with(|c| c.set(false));
    if !done {
        roctx_collector::reject_record();
    }
}

/// Test-only fault injection: a panic inside the next callback on this thread.
#[cfg(test)]
pub(crate) mod faults {
    use std::cell::Cell;

    thread_local! {
        static PANIC_NEXT: Cell<bool> = const { Cell::new(false) };
    }

    pub(crate) fn panic_in_next_callback() {
        PANIC_NEXT.with(|p| p.set(true));
    }

    pub(super) fn maybe_panic() {
        if PANIC_NEXT.with(|p| p.replace(false)) {
            panic!("injected fault: panic inside a rocprofiler-sdk callback");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use roctx_collector::{CaptureMode, SessionOptions};
    use roctx_sys::rocprofiler::MarkerPayload;

    fn push_record(payload: &mut MarkerPayload) -> CallbackRecordV7 {
        CallbackRecordV7 {
            context_id: 1,
            thread_id: 77,
            correlation_internal: 0,
            correlation_external: 0,
            correlation_ancestor: 0,
            kind: 7,      // MARKER_CORE_API
            operation: 1, // roctxRangePushA
            phase: 1,     // ENTER
            payload: std::ptr::from_mut(payload).cast(),
        }
    }

    #[test]
    fn a_panic_inside_a_callback_never_unwinds_into_the_sdk_and_the_record_is_counted() {
        // The collector is process-global; this crate's other unit tests never start sessions.
        roctx_collector::start(SessionOptions::default(), CaptureMode::Host).unwrap();
        let text = c"kept";
        let mut payload = MarkerPayload { size: 32, arg0: text.as_ptr() as u64, arg1: 0, retval: 0 };
        let panics_before = roctx_sys::panics_caught();
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        faults::panic_in_next_callback();
        // SAFETY: a valid record and payload, as the SDK passes them.
        unsafe { on_marker_v7(push_record(&mut payload), std::ptr::null_mut(), std::ptr::null_mut()) };
        std::panic::set_hook(hook);
        // The next record goes through normally.
        // SAFETY: as above.
        unsafe { on_marker_v7(push_record(&mut payload), std::ptr::null_mut(), std::ptr::null_mut()) };
        let mut pop = push_record(&mut payload);
        (pop.operation, pop.phase) = (2, 2); // roctxRangePop EXIT
        // SAFETY: as above.
        unsafe { on_marker_v7(pop, std::ptr::null_mut(), std::ptr::null_mut()) };
        let s = roctx_collector::stop().unwrap();
        assert_eq!(roctx_sys::panics_caught(), panics_before + 1);
        assert_eq!(s.stats.rejected_records, 1, "{:?}", s.stats);
        assert_eq!(s.events.len(), 1);
        assert_eq!(s.label(&s.events[0]), "kept");
    }
}

/// The loaded SDK's API table, once `rocprofiler_configure` ran.
pub(crate) fn sdk_api() -> Option<&'static SdkApi> {
    API.get()
}

/// Starts the marker context (a session begins).
pub(crate) fn start_context() -> Result<(), String> {
    let api = API.get().ok_or("rocprofiler-sdk is not loaded")?;
    if CONTEXT_STATE.load(Ordering::Acquire) != 1 {
        return Err("rocprofiler-sdk has finalized or was never configured".to_owned());
    }
    // SAFETY: a context we created.
    let status = unsafe { (api.start_context)(CONTEXT.load(Ordering::Acquire)) };
    if status == 0 { Ok(()) } else { Err(format!("rocprofiler_start_context returned {}", api.status_name(status))) }
}

/// Stops the marker context (the session ends); failures are logged, not fatal.
pub(crate) fn stop_context() {
    let Some(api) = API.get() else { return };
    if CONTEXT_STATE.load(Ordering::Acquire) != 1 {
        return;
    }
    // SAFETY: a context we created.
    let status = unsafe { (api.stop_context)(CONTEXT.load(Ordering::Acquire)) };
    if status != 0 {
        log::warn(format_args!("rocprofiler_stop_context returned {}", api.status_name(status)));
    }
}
