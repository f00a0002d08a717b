//! The listener: turns ROCTX marker records into collector events, whichever way they arrive,
//! and decides how a session captures.
//!
//! - **Tool mode** ([`tool`]): we load rocprofiler-sdk and subscribe MARKER_CORE_API,
//!   MARKER_CONTROL_API and MARKER_NAME_API; the SDK calls us on the application thread.
//! - **Host-fed mode** ([`feed`]): a host that owns rocprofiler-sdk itself (XLA's RocmTracer)
//!   passes each raw record from its own MARKER_CORE_API callback, with its SDK version.
//! - **In-process mode**: no SDK at all; the emitter records its own ranges through the
//!   collector's sink, which the runtime installs for such sessions.
//!
//! Owns which mode a session uses ([`resolve`]: `ROCTX_UTILS_CAPTURE=auto|sdk|self|host|off`,
//! `auto` preferring the SDK) and the fallbacks when the SDK is missing, locked by another tool,
//! or of an unknown version; starting and stopping the SDK context with the collector's session.
//! Never formats or exports anything, and never decides when sessions happen (the runtime does).

pub mod cupti;
pub mod kernels;
pub mod moe;
pub mod tool;

use std::ffi::c_void;

use roctx_collector::{self as collector, CaptureMode, SessionError, SessionOptions, Snapshot};
use roctx_config::{log, CaptureRequest, CAPTURE};
use roctx_sys::rocprofiler::{self, Layout, Record};
use roctx_sys::roctx::Flavor;

/// `pthread_atfork` steps for the listener's own lock (the CUPTI buffer callback's); the runtime
/// orders them between the collector's and the kernel stage's.
pub fn fork_prepare() {
    cupti::fork_prepare();
}

/// After `fork()`, in the parent.
pub fn fork_parent() {
    cupti::fork_parent();
}

/// After `fork()`, in the child.
pub fn fork_child() {
    cupti::fork_child();
    moe::fork_child();
}

/// Configures tool mode now, if it can be (start-up step 2; later calls return at once).
pub fn prepare_tool() {
    tool::prepare();
}

/// The mode a session asking for `requested` gets, given the roctx that was bound (`auto`
/// needs one that reports to the SDK). Fallbacks are logged with the reason.
pub fn resolve(requested: CaptureRequest, roctx: Option<Flavor>) -> CaptureMode {
    match requested {
        CaptureRequest::Off => CaptureMode::Off,
        CaptureRequest::InProcess => CaptureMode::InProcess,
        CaptureRequest::Host => CaptureMode::Host,
        CaptureRequest::Auto | CaptureRequest::Sdk => resolve_sdk(requested, roctx),
    }
}

fn resolve_sdk(requested: CaptureRequest, roctx: Option<Flavor>) -> CaptureMode {
    let roctx_reaches_sdk = || roctx == Some(Flavor::Sdk);
    match tool::prepare() {
        tool::ToolState::Ready { .. } if requested == CaptureRequest::Sdk || roctx_reaches_sdk() => CaptureMode::Sdk,
        tool::ToolState::Ready { .. } => {
            log::info(format_args!("rocprofiler-sdk is configured but the bound roctx does not report to it; capturing in-process"));
            CaptureMode::InProcess
        }
        tool::ToolState::Unavailable(why) => {
            if requested == CaptureRequest::Sdk {
                log::warn(format_args!("{CAPTURE}=sdk, but {why}; capturing in-process instead"));
            } else {
                log::info(format_args!("{why}; capturing in-process"));
            }
            CaptureMode::InProcess
        }
    }
}

/// Starts the collector's session in `mode` and, for tool mode, the SDK context. Returns the
/// mode in use: in-process when the SDK context does not start (losing the ranges would be
/// worse than the mode).
pub fn start(options: SessionOptions, mode: CaptureMode) -> Result<CaptureMode, SessionError> {
    collector::start(options, mode)?;
    if mode == CaptureMode::Sdk {
        if let Err(why) = tool::start_context() {
            log::warn(format_args!("rocprofiler-sdk context did not start ({why}); capturing in-process"));
            let _ = collector::stop();
            collector::start(options, CaptureMode::InProcess)?;
            return Ok(CaptureMode::InProcess);
        }
    }
    Ok(mode)
}

/// What [`start`] sets up for `mode`, without starting the collector's session: capture
/// windows (`crate::runtime::window`) start and stop sessions while the SDK's marker context
/// keeps delivering, so a window's trigger is seen. Returns the mode in use (in-process when the
/// SDK context does not start).
pub fn start_capture_only(mode: CaptureMode) -> CaptureMode {
    if mode == CaptureMode::Sdk {
        if let Err(why) = tool::start_context() {
            log::warn(format_args!("rocprofiler-sdk context did not start ({why}); capturing in-process"));
            return CaptureMode::InProcess;
        }
    }
    mode
}

/// Stops the SDK context (in tool mode) and the collector's session; returns its events.
pub fn stop() -> Result<Snapshot, SessionError> {
    if collector::active() && collector::mode() == CaptureMode::Sdk {
        tool::stop_context();
    }
    // The SDK never delivers by itself at a stop: what it holds belongs to this session.
    kernels::flush_final();
    collector::stop()
}

/// Outcome of [`feed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum FeedStatus {
    /// Used (or deliberately ignored, like `roctxGetThreadId`).
    Accepted = 0,
    /// No session in host-fed mode is running; nothing recorded.
    NotCapturing = 1,
    /// Unknown SDK version, wrong record size, or a malformed payload; counted.
    Rejected = -1,
}

/// Host-fed mode: one raw callback record from the host's own MARKER_CORE_API (or
/// MARKER_CONTROL/NAME, or 7.x MARKER_CORE_RANGE_API) callback, as `len` bytes, from an SDK of
/// `sdk_version` (10000*major + 100*minor + patch, as `rocprofiler_configure` received it).
///
/// # Safety
/// `record` must point at `len` readable bytes, and the record's payload must be valid for the
/// call (call this from inside the host's callback).
pub unsafe fn feed(record: *const c_void, len: usize, sdk_version: u32) -> FeedStatus {
    if !collector::active() || collector::mode() != CaptureMode::Host {
        return FeedStatus::NotCapturing;
    }
    let Some(layout) = Layout::for_version(sdk_version) else {
        collector::reject_record();
        return FeedStatus::Rejected;
    };
    // SAFETY: per this function's contract.
    match unsafe { rocprofiler::decode(record, len, layout) } {
        // SAFETY: the payload is valid during the host's callback (contract).
        Some(record) => match unsafe { on_record(&record) } {
            Ok(()) => FeedStatus::Accepted,
            Err(()) => FeedStatus::Rejected,
        },
        None => {
            collector::reject_record();
            FeedStatus::Rejected
        }
    }
}

// rocprofiler_callback_tracing_kind_t values (identical 0..13 in every version; 21 from 7.0).
const KIND_MARKER_CORE: i32 = 7;
const KIND_MARKER_CONTROL: i32 = 8;
const KIND_MARKER_NAME: i32 = 9;
const KIND_MARKER_CORE_RANGE: i32 = 21;
const PHASE_ENTER: i32 = 1;
const PHASE_EXIT: i32 = 2;

/// Upstream's MarkerCallback state machine, extended (collector module docs). `Err` means the
/// record was malformed and was counted as rejected.
///
/// # Safety
/// `record.payload` must be null or a marker payload valid for the call.
pub(crate) unsafe fn on_record(record: &Record) -> Result<(), ()> {
    use collector::{mark, now_ns, pop, push, range_start, range_stop, MAX_LABEL_BYTES};
    let tid = record.thread_id;
    // SAFETY: the payload is null or valid for the call (this function's contract).
    let payload = |needed| unsafe { rocprofiler::marker_payload(record.payload, needed) }.ok_or(());
    // SAFETY: a marker payload's message is null or a C string valid for the call.
    let message = |p: &rocprofiler::MarkerPayload| unsafe { rocprofiler::c_string_bytes(p.arg0, MAX_LABEL_BYTES) };
    let decode = || match (record.kind, record.operation, record.phase) {
        // roctxRangePushA: push unconditionally (a null message pushes ""), so the matching
        // pop never consumes an enclosing range.
        (KIND_MARKER_CORE, 1, PHASE_ENTER) | (KIND_MARKER_CORE_RANGE, 1, PHASE_ENTER) => {
            let p = payload(16)?;
            let seq = push(&message(&p), now_ns(), tid);
            kernels::range_changed(seq);
            Ok(())
        }
        // roctx's own level (int32 retval, -1 when nothing was open) tells a pop whose push we
        // never saw (made while the context was stopped) from a truly unmatched one.
        (KIND_MARKER_CORE, 2, PHASE_EXIT) | (KIND_MARKER_CORE_RANGE, 1, PHASE_EXIT) => {
            let seq = match payload(32) {
                Ok(p) if (p.retval as u32 as i32) >= 0 => collector::pop_of_open_range(now_ns(), tid), // CAST: int32 retval in the low bytes
                _ => pop(now_ns(), tid),
            };
            kernels::range_changed(seq);
            Ok(())
        }
        (KIND_MARKER_CORE, 0, PHASE_ENTER) | (KIND_MARKER_CORE_RANGE, 0, PHASE_ENTER) => {
            let p = payload(16)?;
            mark(&message(&p), now_ns(), tid);
            Ok(())
        }
        // roctxRangeStartA: the id is the return value, known at EXIT.
        (KIND_MARKER_CORE, 3, PHASE_EXIT) => {
            let p = payload(32)?;
            range_start(p.retval, &message(&p), now_ns(), tid);
            Ok(())
        }
        (KIND_MARKER_CORE, 4, PHASE_ENTER) => {
            let p = payload(16)?;
            range_stop(p.arg0, now_ns(), tid);
            Ok(())
        }
        // 7.x synthesized process range: one correlation id from start (ENTER) to stop (EXIT).
        (KIND_MARKER_CORE_RANGE, 2, PHASE_ENTER) => {
            let p = payload(16)?;
            range_start(record.correlation_internal, &message(&p), now_ns(), tid);
            Ok(())
        }
        (KIND_MARKER_CORE_RANGE, 2, PHASE_EXIT) => {
            range_stop(record.correlation_internal, now_ns(), tid);
            Ok(())
        }
        (KIND_MARKER_CONTROL, 0, PHASE_ENTER) => {
            collector::pause(payload(16)?.arg0);
            Ok(())
        }
        (KIND_MARKER_CONTROL, 1, PHASE_ENTER) => {
            collector::resume(payload(16)?.arg0);
            Ok(())
        }
        (KIND_MARKER_NAME, 0, PHASE_ENTER) => {
            let p = payload(16)?;
            collector::name_thread(tid, &message(&p));
            Ok(())
        }
        // The other phases of known operations, roctxGetThreadId, device/agent/stream names.
        (KIND_MARKER_CORE | KIND_MARKER_CONTROL | KIND_MARKER_NAME | KIND_MARKER_CORE_RANGE, _, _) => Ok(()),
        _ => Err(()),
    };
    // A closure, so that every `?` above still reaches the counting below.
    let result = decode();
    if result.is_err() {
        collector::reject_record();
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_follow_the_sdk_version() {
        assert_eq!(Layout::for_version(400), Some(Layout::V6));
        assert_eq!(Layout::for_version(600), Some(Layout::V6));
        assert_eq!(Layout::for_version(10000), Some(Layout::V7));
        assert_eq!(Layout::for_version(10401), Some(Layout::V7));
        assert_eq!(Layout::for_version(20000), None);
        assert_eq!(Layout::for_version(300), None);
        assert_eq!(Layout::V6.record_size(), 56);
        assert_eq!(Layout::V7.record_size(), 64);
    }
}
