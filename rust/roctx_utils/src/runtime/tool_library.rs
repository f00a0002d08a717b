//! The tool library's life (`libroctx_utils_tool.so`, which rocprofiler-sdk loads from
//! `ROCP_TOOL_LIBRARIES`): in a stock ROCm process nothing of the host ever calls us, so the
//! SDK's `configure → initialize → finalize` are this process's start-up and exit.
//!
//! - **configure** ([`configure`], behind the exported `rocprofiler_configure`): reads the
//!   configuration; declines (returns null, so the SDK forgets us and the process runs as if we
//!   were not listed) when there is nothing to write or capture is off, or when the SDK is of a
//!   version we cannot read, each with one message saying so. No SDK call but its version.
//! - **initialize**: the marker and kernel contexts ([`listener::tool::initialize_listed`]);
//!   the capture session for `ROCTX_UTILS_XSPACE_OUT` in SDK mode (or, with capture windows,
//!   the marker context alone and the windows armed: `super::window`) (the host's roctx calls reach
//!   us through the SDK, whatever roctx was bound); the exit hooks. Nothing here calls roctx: if
//!   the host's first roctx call started the SDK's discovery, that call is still in progress.
//! - **finalize**: flushes and writes everything (the log directory and the roofline report),
//!   before the SDK tears its buffers down. The exit hooks then find nothing left to do; where
//!   they run first (they were registered after the SDK's own), finalize finds nothing left.
//!
//! The rest of start-up ([`super::get`]: binding roctx) happens later, on the first call of the
//! C API, e.g. the Python package's annotations, which find this library loaded.

use std::ffi::{c_char, c_int, c_void};

use roctx_config::{log, CaptureRequest};
use roctx_sys::guard;
use roctx_sys::rocprofiler::ToolConfigureResult;

use super::{ensure_exit_hook, roofline_at_exit, start_session_with, AUTO_DONE};
use crate::listener;

/// What configure returns: the SDK copies it at once.
struct SyncResult(ToolConfigureResult);
// SAFETY: immutable after construction; `tool_data` is null.
unsafe impl Sync for SyncResult {}

static RESULT: SyncResult = SyncResult(ToolConfigureResult {
    size: std::mem::size_of::<ToolConfigureResult>(),
    initialize: Some(initialize),
    finalize: Some(finalize),
    tool_data: std::ptr::null_mut(),
});

/// The body of the tool library's `rocprofiler_configure`: our result, or null to decline.
///
/// # Safety
/// The SDK's arguments for its configure call: `client_id` is its `rocprofiler_client_id_t` for
/// `version` (or null).
pub unsafe fn configure(
    version: u32,
    _runtime_version: *const c_char,
    priority: u32,
    client_id: *mut c_void,
) -> *mut ToolConfigureResult {
    let config = roctx_config::get();
    if config.capture == CaptureRequest::Off {
        log::info(format_args!(
            "{}=off: the tool declines rocprofiler-sdk's configure",
            roctx_config::CAPTURE
        ));
        return std::ptr::null_mut();
    }
    if config.xspace_out.is_none() && config.roofline_out.is_none() {
        log::warn(format_args!(
            "loaded as a rocprofiler-sdk tool, but neither {} nor a roofline report path ({} or GGML_ROOFLINE_OUT) is set: nothing would be written, so the tool declines (use `roctx record -- <command>`, which sets them)",
            roctx_config::XSPACE_OUT,
            roctx_config::ROOFLINE_OUT
        ));
        return std::ptr::null_mut();
    }
    // SAFETY: forwarded from this function's contract.
    match unsafe { listener::tool::configure_listed(version, priority, client_id) } {
        Ok(()) => std::ptr::addr_of!(RESULT.0).cast_mut(),
        Err(why) => {
            log::warn(format_args!(
                "rocprofiler-sdk tool: declining configure: {why}; nothing will be captured"
            ));
            std::ptr::null_mut()
        }
    }
}

unsafe extern "C" fn initialize(_fini: *mut c_void, _tool_data: *mut c_void) -> c_int {
    guard(-1, || {
        roctx_sys::os::note_start_pid();
        super::fork::register_handlers();
        if let Err(why) = listener::tool::initialize_listed() {
            log::warn(format_args!(
                "rocprofiler-sdk tool: initialize failed: {why}; nothing will be captured"
            ));
            return -1;
        }
        let config = roctx_config::get();
        if super::window::wanted(config) && !AUTO_DONE.swap(true, std::sync::atomic::Ordering::AcqRel) {
            // Capture windows: the marker context delivers from now on (a trigger must be seen),
            // sessions only inside windows.
            let mode = listener::start_capture_only(roctx_collector::CaptureMode::Sdk);
            super::install_sink(mode);
            ensure_exit_hook();
            super::window::start(config, mode);
        } else if config.xspace_out.is_some() && !AUTO_DONE.swap(true, std::sync::atomic::Ordering::AcqRel)
        {
            // Markers arrive through the SDK's callbacks whatever roctx the host calls.
            match start_session_with(
                config,
                super::auto_options(config),
                Some(CaptureRequest::Sdk),
                None,
            ) {
                Ok(mode) => log::info(format_args!(
                    "{} is set: capture session started ({mode:?}) as a rocprofiler-sdk tool",
                    roctx_config::XSPACE_OUT
                )),
                Err(e) => log::warn(format_args!(
                    "{} is set but no session could start: {e}",
                    roctx_config::XSPACE_OUT
                )),
            }
            ensure_exit_hook();
        }
        roofline_at_exit(config);
        super::signals::start(config);
        0
    })
}

unsafe extern "C" fn finalize(_tool_data: *mut c_void) {
    guard((), || {
        // While the SDK still delivers: our buffers are flushed by both writes.
        super::stop_at_exit();
        super::roofline::write_at_exit();
        listener::tool::finalize_listed();
    })
}
