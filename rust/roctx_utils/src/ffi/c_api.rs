//! The `extern "C"` surface of `include/roctx_utils/roctx_utils.h`: annotation handles for
//! hosts without C++ scopes, and diagnostics. Each entry runs inside [`super::guard`].
#![allow(clippy::missing_safety_doc)]

use std::ffi::c_char;

use super::{guard, CText};
use crate::emitter::{self, Annotation};

/// Opaque handle behind `roctx_utils_annotation*`.
pub type AnnotationHandle = Annotation;

/// `roctx_utils_annotation_create`.
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_annotation_create(name: *const c_char) -> *mut AnnotationHandle {
    guard(std::ptr::null_mut(), || {
        // SAFETY: the header requires `name` to be null or a C string valid for the call.
        let name = unsafe { CText::from_ptr_or_empty(name) };
        Box::into_raw(Box::new(Annotation::open(name)))
    })
}

/// `roctx_utils_annotation_stop`.
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_annotation_stop(annotation: *mut AnnotationHandle) {
    guard((), || {
        // SAFETY: a non-null handle came from create and has not been destroyed (header contract).
        if let Some(a) = unsafe { annotation.as_ref() } {
            a.stop();
        }
    })
}

/// `roctx_utils_annotation_destroy`.
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_annotation_destroy(annotation: *mut AnnotationHandle) {
    guard((), || {
        if !annotation.is_null() {
            // SAFETY: as stop; ownership returns to Rust exactly once. Drop stops it first.
            drop(unsafe { Box::from_raw(annotation) });
        }
    })
}

/// `roctx_utils_roctx_state_get`: 0 missing, 1 SDK, 2 legacy.
#[no_mangle]
pub extern "C" fn roctx_utils_roctx_state_get() -> u32 {
    guard(0, || super::roctx::api().map_or(0, |api| api.flavor() as u32))
}

/// `roctx_utils_roctx_library`.
#[no_mangle]
pub extern "C" fn roctx_utils_roctx_library() -> *const c_char {
    guard(std::ptr::null(), || super::roctx::api().map_or(std::ptr::null(), |api| api.location().as_ptr()))
}

/// Mirror of `roctx_utils_counters` (all u64, in header order).
#[repr(C)]
#[derive(Debug, Default)]
pub struct Counters {
    strings_interned: u64,
    string_pool_bytes: u64,
    strings_truncated: u64,
    strings_rejected: u64,
    null_streams: u64,
    panics_caught: u64,
}
const _: () = assert!(std::mem::size_of::<Counters>() == 48);

/// `roctx_utils_counters_get`.
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_counters_get(out: *mut Counters) {
    guard((), || {
        let pool = emitter::intern::stats();
        let counters = Counters {
            strings_interned: pool.interned,
            string_pool_bytes: pool.bytes,
            strings_truncated: pool.truncated,
            strings_rejected: pool.rejected,
            null_streams: emitter::null_streams(),
            panics_caught: super::panics_caught(),
        };
        // SAFETY: the header requires `out` to be null or a writable roctx_utils_counters.
        if let Some(out) = unsafe { out.as_mut() } {
            *out = counters;
        }
    })
}

// ---- instant and cross-thread ranges ----

/// `roctx_utils_mark`.
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_mark(name: *const c_char) {
    // SAFETY: the header requires `name` to be null or a C string valid for the call.
    guard((), || emitter::mark(unsafe { CText::from_ptr_or_empty(name) }))
}

/// `roctx_utils_range_start`.
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_range_start(name: *const c_char) -> u64 {
    // SAFETY: as roctx_utils_mark.
    guard(0, || emitter::range_start(unsafe { CText::from_ptr_or_empty(name) }))
}

/// `roctx_utils_range_stop`.
#[no_mangle]
pub extern "C" fn roctx_utils_range_stop(id: u64) {
    guard((), || emitter::range_stop(id))
}

// ---- capture sessions ----

use crate::collector::{CaptureMode, EventKind, SessionOptions, Snapshot, Stats};
use crate::listener::{self, Requested};

/// Mirror of `roctx_utils_session_options`.
#[repr(C)]
#[derive(Debug)]
pub struct SessionOptionsC {
    struct_size: u64,
    mode: u32,
    _reserved: u32,
    max_events_per_thread: u64,
    max_label_bytes_per_thread: u64,
}
const _: () = assert!(std::mem::size_of::<SessionOptionsC>() == 32);

/// Status codes of the session functions (header: `roctx_utils_status`).
const STATUS_OK: i32 = 0;
const STATUS_ALREADY_RUNNING: i32 = 1;
const STATUS_NOT_RUNNING: i32 = 2;
const STATUS_INVALID_ARGUMENT: i32 = 3;
const STATUS_INTERNAL: i32 = -1;

fn requested_from_c(mode: u32) -> Option<Option<Requested>> {
    Some(match mode {
        0 => None, // ROCTX_UTILS_CAPTURE_DEFAULT: the environment decides
        1 => Some(Requested::Auto),
        2 => Some(Requested::Sdk),
        3 => Some(Requested::InProcess),
        4 => Some(Requested::Host),
        5 => Some(Requested::Off),
        _ => return None,
    })
}

/// `roctx_utils_session_start`.
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_session_start(options: *const SessionOptionsC) -> i32 {
    guard(STATUS_INTERNAL, || {
        let mut opts = SessionOptions::default();
        let mut requested = None;
        // SAFETY: the header requires null or a valid options struct.
        if let Some(o) = unsafe { options.as_ref() } {
            if o.struct_size < std::mem::size_of::<SessionOptionsC>() as u64 {
                return STATUS_INVALID_ARGUMENT;
            }
            match requested_from_c(o.mode) {
                Some(r) => requested = r,
                None => return STATUS_INVALID_ARGUMENT,
            }
            // 0 keeps the default.
            if o.max_events_per_thread != 0 {
                opts.max_events_per_thread = usize::try_from(o.max_events_per_thread).unwrap_or(usize::MAX);
            }
            if o.max_label_bytes_per_thread != 0 {
                opts.max_label_bytes_per_thread = usize::try_from(o.max_label_bytes_per_thread).unwrap_or(usize::MAX);
            }
        }
        match listener::start_session(opts, requested) {
            Ok(_) => STATUS_OK,
            Err(crate::collector::SessionError::AlreadyRunning) => STATUS_ALREADY_RUNNING,
            Err(crate::collector::SessionError::NotRunning) => STATUS_INTERNAL,
        }
    })
}

/// `roctx_utils_capture_mode_get`: the running (or last) session's mode.
#[no_mangle]
pub extern "C" fn roctx_utils_capture_mode_get() -> u32 {
    guard(0, || match crate::collector::mode() {
        CaptureMode::Off => 0,
        CaptureMode::Sdk => 1,
        CaptureMode::Host => 2,
        CaptureMode::InProcess => 3,
    })
}

/// Opaque handle behind `roctx_utils_snapshot*`.
pub type SnapshotHandle = Snapshot;

/// `roctx_utils_session_stop`.
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_session_stop(out: *mut *mut SnapshotHandle) -> i32 {
    guard(STATUS_INTERNAL, || match listener::stop_session() {
        Ok(snapshot) => {
            let handle = Box::into_raw(Box::new(snapshot));
            // SAFETY: the header requires null or a writable pointer slot.
            match unsafe { out.as_mut() } {
                Some(slot) => *slot = handle,
                // SAFETY: nobody else has the pointer.
                None => drop(unsafe { Box::from_raw(handle) }),
            }
            STATUS_OK
        }
        Err(_) => STATUS_NOT_RUNNING,
    })
}

/// `roctx_utils_session_snapshot`.
#[no_mangle]
pub extern "C" fn roctx_utils_session_snapshot() -> *mut SnapshotHandle {
    guard(std::ptr::null_mut(), || Box::into_raw(Box::new(crate::collector::snapshot())))
}

/// `roctx_utils_snapshot_free`.
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_snapshot_free(snapshot: *mut SnapshotHandle) {
    guard((), || {
        if !snapshot.is_null() {
            // SAFETY: a handle from stop/snapshot, freed once (header contract).
            drop(unsafe { Box::from_raw(snapshot) });
        }
    })
}

/// `roctx_utils_snapshot_event_count`.
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_snapshot_event_count(snapshot: *const SnapshotHandle) -> usize {
    // SAFETY: null or a live handle (header contract).
    guard(0, || unsafe { snapshot.as_ref() }.map_or(0, |s| s.events.len()))
}

/// Mirror of `roctx_utils_event`.
#[repr(C)]
#[derive(Debug)]
pub struct EventC {
    kind: u32,
    depth: u32,
    tid: u64,
    end_tid: u64,
    start_ns: u64,
    end_ns: u64,
    label: *const c_char,
    label_len: usize,
}
const _: () = assert!(std::mem::size_of::<EventC>() == 56);

/// `roctx_utils_snapshot_event`.
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_snapshot_event(snapshot: *const SnapshotHandle, index: usize, out: *mut EventC) -> i32 {
    guard(STATUS_INTERNAL, || {
        // SAFETY: null or live handles / writable struct (header contract).
        let (Some(s), Some(out)) = (unsafe { snapshot.as_ref() }, unsafe { out.as_mut() }) else {
            return STATUS_INVALID_ARGUMENT;
        };
        let Some(e) = s.events.get(index) else { return STATUS_INVALID_ARGUMENT };
        let label = s.label(e);
        *out = EventC {
            kind: match e.kind {
                EventKind::Range => 0,
                EventKind::Mark => 1,
                EventKind::ProcessRange => 2,
            },
            depth: u32::from(e.depth),
            tid: e.tid,
            end_tid: e.end_tid,
            start_ns: e.start_ns,
            end_ns: e.end_ns,
            // Not NUL-terminated: labels are stored as Rust strings; use label_len.
            label: label.as_ptr().cast(),
            label_len: label.len(),
        };
        STATUS_OK
    })
}

/// Mirror of `roctx_utils_capture_stats` (all u64, in [`Stats`] field order).
#[repr(C)]
#[derive(Debug, Default)]
pub struct StatsC {
    recorded: u64,
    dropped_event_cap: u64,
    dropped_label_cap: u64,
    dropped_too_deep: u64,
    dropped_empty_label: u64,
    unmatched_pops: u64,
    unmatched_stops: u64,
    begun_outside_session: u64,
    paused: u64,
    open_at_stop: u64,
    process_ranges_open_at_stop: u64,
    open_at_thread_exit: u64,
    rejected_records: u64,
}
const _: () = assert!(std::mem::size_of::<StatsC>() == 13 * 8);

impl From<&Stats> for StatsC {
    fn from(s: &Stats) -> StatsC {
        StatsC {
            recorded: s.recorded,
            dropped_event_cap: s.dropped_event_cap,
            dropped_label_cap: s.dropped_label_cap,
            dropped_too_deep: s.dropped_too_deep,
            dropped_empty_label: s.dropped_empty_label,
            unmatched_pops: s.unmatched_pops,
            unmatched_stops: s.unmatched_stops,
            begun_outside_session: s.begun_outside_session,
            paused: s.paused,
            open_at_stop: s.open_at_stop,
            process_ranges_open_at_stop: s.process_ranges_open_at_stop,
            open_at_thread_exit: s.open_at_thread_exit,
            rejected_records: s.rejected_records,
        }
    }
}

/// `roctx_utils_snapshot_stats`.
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_snapshot_stats(snapshot: *const SnapshotHandle, out: *mut StatsC) {
    guard((), || {
        // SAFETY: null or live handle / writable struct (header contract).
        if let (Some(s), Some(out)) = (unsafe { snapshot.as_ref() }, unsafe { out.as_mut() }) {
            *out = StatsC::from(&s.stats);
        }
    })
}

/// Copies `text` into a caller's buffer, NUL-terminated and truncated to `cap`; returns the
/// full length (the C convention of the header's string getters).
///
/// # Safety
/// `buf` must be null or have `cap` writable bytes.
unsafe fn copy_out(text: &str, buf: *mut c_char, cap: usize) -> usize {
    if !buf.is_null() && cap > 0 {
        let n = text.len().min(cap - 1);
        // SAFETY: per contract, and n < cap.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), n);
            buf.add(n).write(0);
        }
    }
    text.len()
}

/// `roctx_utils_snapshot_thread_name`: copies the name into a caller buffer (NUL-terminated,
/// truncated to fit) and returns its full length; 0 when the thread has no name.
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_snapshot_thread_name(snapshot: *const SnapshotHandle, tid: u64, buf: *mut c_char, cap: usize) -> usize {
    guard(0, || {
        // SAFETY: null or live handle (header contract).
        let Some(name) = unsafe { snapshot.as_ref() }.and_then(|s| s.thread_names.get(&tid)) else { return 0 };
        // SAFETY: forwarded header contract for `buf`/`cap`.
        unsafe { copy_out(name, buf, cap) }
    })
}

/// `roctx_utils_current_label`.
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_current_label(buf: *mut c_char, cap: usize) -> usize {
    guard(0, || {
        // SAFETY: forwarded header contract for `buf`/`cap`.
        unsafe { copy_out(&crate::collector::current_label(), buf, cap) }
    })
}

/// `roctx_utils_listener_feed`.
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_listener_feed(record: *const std::ffi::c_void, record_size: usize, sdk_version: u32) -> i32 {
    // SAFETY: forwarded contract (header): `record_size` readable bytes, payload valid now.
    guard(listener::FeedStatus::Rejected as i32, || unsafe { listener::feed(record, record_size, sdk_version) } as i32)
}

// ---- export ----

const STATUS_IO_ERROR: i32 = 4;

/// Mirror of `roctx_utils_buffer`.
#[repr(C)]
#[derive(Debug)]
pub struct BufferC {
    data: *mut u8,
    len: usize,
}

fn give_buffer(bytes: Vec<u8>, out: &mut BufferC) {
    let boxed = bytes.into_boxed_slice();
    out.len = boxed.len();
    out.data = Box::into_raw(boxed).cast::<u8>();
}

/// `roctx_utils_buffer_free`.
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_buffer_free(buffer: *mut BufferC) {
    guard((), || {
        // SAFETY: null or a buffer filled by one of our functions (header contract).
        if let Some(b) = unsafe { buffer.as_mut() } {
            if !b.data.is_null() {
                // SAFETY: `data`/`len` came from Box<[u8]>::into_raw in give_buffer.
                drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(b.data, b.len)) });
            }
            b.data = std::ptr::null_mut();
            b.len = 0;
        }
    })
}

/// `roctx_utils_snapshot_roctx_plane`.
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_snapshot_roctx_plane(snapshot: *const SnapshotHandle, out: *mut BufferC) -> i32 {
    guard(STATUS_INTERNAL, || {
        // SAFETY: null or live handle / writable struct (header contract).
        let (Some(s), Some(out)) = (unsafe { snapshot.as_ref() }, unsafe { out.as_mut() }) else { return STATUS_INVALID_ARGUMENT };
        let plane = crate::export::xplane::roctx_plane(&crate::export::trace(s));
        give_buffer(prost::Message::encode_to_vec(&plane), out);
        STATUS_OK
    })
}

/// `roctx_utils_merge_into_xspace`.
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_merge_into_xspace(
    xspace: *const u8,
    xspace_len: usize,
    snapshot: *const SnapshotHandle,
    out: *mut BufferC,
) -> i32 {
    guard(STATUS_INTERNAL, || {
        // SAFETY: null or live handle / writable struct (header contract).
        let (Some(s), Some(out)) = (unsafe { snapshot.as_ref() }, unsafe { out.as_mut() }) else { return STATUS_INVALID_ARGUMENT };
        let input: &[u8] = if xspace_len == 0 {
            &[]
        } else if xspace.is_null() {
            return STATUS_INVALID_ARGUMENT;
        } else {
            // SAFETY: `xspace_len` readable bytes (header contract).
            unsafe { std::slice::from_raw_parts(xspace, xspace_len) }
        };
        match crate::export::xplane::merge_into_bytes(input, &crate::export::trace(s)) {
            Ok(bytes) => {
                give_buffer(bytes, out);
                STATUS_OK
            }
            Err(_) => STATUS_INVALID_ARGUMENT,
        }
    })
}

/// # Safety
/// `p` must be null or a NUL-terminated string valid for the call.
unsafe fn path_arg(p: *const c_char) -> Option<std::path::PathBuf> {
    // SAFETY: per contract.
    let s = unsafe { p.as_ref().map(|_| std::ffi::CStr::from_ptr(p)) }?;
    let s = s.to_str().ok()?;
    (!s.is_empty()).then(|| std::path::PathBuf::from(s))
}

/// `roctx_utils_snapshot_write_logdir`.
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_snapshot_write_logdir(
    snapshot: *const SnapshotHandle,
    logdir: *const c_char,
    run: *const c_char,
    path_out: *mut c_char,
    cap: usize,
) -> i32 {
    guard(STATUS_INTERNAL, || {
        // SAFETY: header contract for every pointer argument.
        let (Some(s), Some(dir)) = (unsafe { snapshot.as_ref() }, unsafe { path_arg(logdir) }) else { return STATUS_INVALID_ARGUMENT };
        // SAFETY: as above.
        let run = unsafe { path_arg(run) }.map(|r| r.to_string_lossy().into_owned());
        match crate::export::write_logdir(s, &dir, run.as_deref()) {
            Ok(path) => {
                // SAFETY: header contract for `path_out`/`cap`.
                unsafe { copy_out(&path.to_string_lossy(), path_out, cap) };
                STATUS_OK
            }
            Err(e) => {
                crate::log::warn(format_args!("writing the XSpace under {}: {e}", dir.display()));
                STATUS_IO_ERROR
            }
        }
    })
}

/// `roctx_utils_snapshot_write_chrome`.
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_snapshot_write_chrome(snapshot: *const SnapshotHandle, path: *const c_char) -> i32 {
    guard(STATUS_INTERNAL, || {
        // SAFETY: header contract.
        let (Some(s), Some(path)) = (unsafe { snapshot.as_ref() }, unsafe { path_arg(path) }) else { return STATUS_INVALID_ARGUMENT };
        let space = crate::export::xplane::standalone_xspace(&crate::export::trace(s));
        let json = crate::export::chrome::from_xspace(&space).to_string();
        match std::fs::write(&path, json) {
            Ok(()) => STATUS_OK,
            Err(e) => {
                crate::log::warn(format_args!("writing {}: {e}", path.display()));
                STATUS_IO_ERROR
            }
        }
    })
}
