//! The `extern "C"` surface of `include/roctx_utils/roctx_utils.h`: annotation handles for
//! hosts without C++ scopes, marks and cross-thread ranges, capture sessions, snapshots, export
//! and diagnostics. Each entry runs inside [`guard`] and calls the layers below.
//!
//! Every struct the library fills (`*_counters`, `*_event`, `*_capture_stats`, `*_buffer`)
//! starts with `struct_size`, set by the caller to the size it was compiled with: the library
//! writes only that many bytes ([`write_sized`]), so a caller built against an older, shorter
//! struct keeps working when fields are appended. Each mirror below is `#[repr(C)]` with the
//! size and offsets the header's `static_assert`s state; `tests::header_matches_the_mirrors`
//! reads the header and checks both against these structs.
#![allow(clippy::missing_safety_doc)]

use std::ffi::c_char;
use std::mem::{offset_of, size_of};

use roctx_collector::{CaptureMode, EventKind, SessionError, SessionOptions, Snapshot, Stats};
use roctx_config::{log, CaptureRequest};
use roctx_sys::CText;

use super::guard;
use crate::emitter::{self, Annotation};
use crate::{export, listener, runtime};

/// Status codes (header: `roctx_utils_status`).
const STATUS_OK: i32 = 0;
const STATUS_ALREADY_RUNNING: i32 = 1;
const STATUS_NOT_RUNNING: i32 = 2;
const STATUS_INVALID_ARGUMENT: i32 = 3;
const STATUS_IO_ERROR: i32 = 4;
const STATUS_PENDING: i32 = 5;
const STATUS_INTERNAL: i32 = -1;

/// Copies `value` into the caller's `out`, at most `out->struct_size` bytes of it (the caller's
/// `struct_size` stays as the caller set it). `INVALID_ARGUMENT` when `out` is null or its
/// `struct_size` does not cover `min_size` bytes (the fields no caller can do without).
///
/// # Safety
/// `out` must be null or point at a writable struct whose first field is a `u64` struct_size,
/// with at least `struct_size` writable bytes (the header contract of every output struct).
pub(super) unsafe fn write_sized<T: Copy>(out: *mut T, value: T, min_size: usize) -> i32 {
    if out.is_null() {
        return STATUS_INVALID_ARGUMENT;
    }
    // SAFETY: per contract the struct starts with a u64; read unaligned-safe.
    let caller_size = unsafe { out.cast::<u64>().read_unaligned() };
    let caller_size = usize::try_from(caller_size).unwrap_or(usize::MAX);
    if caller_size < min_size.max(size_of::<u64>()) {
        return STATUS_INVALID_ARGUMENT;
    }
    let n = caller_size.min(size_of::<T>());
    let src = std::ptr::addr_of!(value).cast::<u8>();
    // SAFETY: `n - 8` bytes after the struct_size are within both `value` and the caller's
    // `struct_size` writable bytes; the two do not overlap (`value` is a local).
    unsafe { std::ptr::copy_nonoverlapping(src.add(8), out.cast::<u8>().add(8), n - 8) };
    STATUS_OK
}

// ---- annotation handles ----

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

// ---- diagnostics ----

/// `roctx_utils_roctx_state_get`: 0 missing, 1 SDK, 2 legacy.
#[no_mangle]
pub extern "C" fn roctx_utils_roctx_state_get() -> u32 {
    guard(0, || runtime::get().roctx_flavor().map_or(0, |flavor| flavor as u32))
}

/// `roctx_utils_roctx_library`.
#[no_mangle]
pub extern "C" fn roctx_utils_roctx_library() -> *const c_char {
    guard(std::ptr::null(), || runtime::get().roctx().map_or(std::ptr::null(), |api| api.location().as_ptr()))
}

/// Mirror of `roctx_utils_counters`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct CountersC {
    struct_size: u64,
    strings_interned: u64,
    string_pool_bytes: u64,
    strings_truncated: u64,
    strings_rejected: u64,
    null_streams: u64,
    panics_caught: u64,
}
const _: () = assert!(size_of::<CountersC>() == 56 && offset_of!(CountersC, panics_caught) == 48);

/// `roctx_utils_counters_get`.
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_counters_get(out: *mut CountersC) -> i32 {
    guard(STATUS_INTERNAL, || {
        let pool = emitter::intern::stats();
        let counters = CountersC {
            struct_size: size_of::<CountersC>() as u64,
            strings_interned: pool.interned,
            string_pool_bytes: pool.bytes,
            strings_truncated: pool.truncated,
            strings_rejected: pool.rejected,
            null_streams: emitter::null_streams(),
            panics_caught: super::panics_caught(),
        };
        // SAFETY: the header requires null or a roctx_utils_counters with struct_size set.
        unsafe { write_sized(out, counters, 16) }
    })
}

// ---- instants and cross-thread ranges ----

/// `roctx_utils_mark`.
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_mark(name: *const c_char) {
    // SAFETY: the header requires `name` to be null or a C string valid for the call.
    guard((), || emitter::mark(unsafe { CText::from_ptr_or_empty(name) }))
}

/// `roctx_utils_range_push`: the emitter's dual push, ungated (an explicit annotation).
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_range_push(name: *const c_char) {
    // SAFETY: as roctx_utils_mark.
    guard((), || emitter::range_push(unsafe { CText::from_ptr_or_empty(name) }))
}

/// `roctx_utils_range_pop`.
#[no_mangle]
pub extern "C" fn roctx_utils_range_pop() {
    guard((), emitter::range_pop)
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

/// Mirror of `roctx_utils_session_options` (an input: the caller's struct_size must cover it).
#[repr(C)]
#[derive(Debug)]
pub struct SessionOptionsC {
    struct_size: u64,
    mode: u32,
    _reserved: u32,
    max_events_per_thread: u64,
    max_label_bytes_per_thread: u64,
}
const _: () = assert!(size_of::<SessionOptionsC>() == 32 && offset_of!(SessionOptionsC, max_label_bytes_per_thread) == 24);

fn requested_from_c(mode: u32) -> Option<Option<CaptureRequest>> {
    Some(match mode {
        0 => None, // ROCTX_UTILS_CAPTURE_DEFAULT: the environment decides
        1 => Some(CaptureRequest::Auto),
        2 => Some(CaptureRequest::Sdk),
        3 => Some(CaptureRequest::InProcess),
        4 => Some(CaptureRequest::Host),
        5 => Some(CaptureRequest::Off),
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
            if o.struct_size < size_of::<SessionOptionsC>() as u64 {
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
        match runtime::start_session(opts, requested) {
            Ok(_) => STATUS_OK,
            Err(SessionError::AlreadyRunning) => STATUS_ALREADY_RUNNING,
            Err(SessionError::NotRunning) => STATUS_INTERNAL,
        }
    })
}

/// `roctx_utils_capture_mode_get`: the running (or last) session's mode.
#[no_mangle]
pub extern "C" fn roctx_utils_capture_mode_get() -> u32 {
    guard(0, || match roctx_collector::mode() {
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
    guard(STATUS_INTERNAL, || match runtime::stop_session() {
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

/// `roctx_utils_capture_start`.
#[no_mangle]
pub extern "C" fn roctx_utils_capture_start() -> i32 {
    guard(STATUS_INTERNAL, || {
        if runtime::window::api_start() {
            STATUS_OK
        } else if runtime::window::api_armed() && roctx_collector::window::count().1.is_some() {
            STATUS_ALREADY_RUNNING
        } else {
            STATUS_NOT_RUNNING
        }
    })
}

/// `roctx_utils_capture_stop`.
#[no_mangle]
pub extern "C" fn roctx_utils_capture_stop() -> i32 {
    guard(STATUS_INTERNAL, || if runtime::window::api_stop() { STATUS_OK } else { STATUS_NOT_RUNNING })
}

/// `roctx_utils_flush`.
#[no_mangle]
pub extern "C" fn roctx_utils_flush() -> i32 {
    // No runtime::get(): callable from a signal handler (runtime::signals::flush).
    guard(STATUS_INTERNAL, || match runtime::signals::flush() {
        runtime::signals::Flushed::Written => STATUS_OK,
        runtime::signals::Flushed::Nothing => STATUS_NOT_RUNNING,
        runtime::signals::Flushed::Pending => STATUS_PENDING,
    })
}

/// `roctx_utils_session_snapshot`.
#[no_mangle]
pub extern "C" fn roctx_utils_session_snapshot() -> *mut SnapshotHandle {
    guard(std::ptr::null_mut(), || Box::into_raw(Box::new(roctx_collector::snapshot())))
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
#[derive(Debug, Clone, Copy)]
pub struct EventC {
    struct_size: u64,
    kind: EventKind,
    depth: u32,
    tid: u64,
    end_tid: u64,
    start_ns: u64,
    end_ns: u64,
    label: *const c_char,
    label_len: usize,
}
const _: () = assert!(size_of::<EventC>() == 64 && offset_of!(EventC, tid) == 16 && offset_of!(EventC, label_len) == 56);

/// `roctx_utils_snapshot_event`.
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_snapshot_event(snapshot: *const SnapshotHandle, index: usize, out: *mut EventC) -> i32 {
    guard(STATUS_INTERNAL, || {
        // SAFETY: null or a live handle (header contract).
        let Some(s) = (unsafe { snapshot.as_ref() }) else { return STATUS_INVALID_ARGUMENT };
        let Some(e) = s.events.get(index) else { return STATUS_INVALID_ARGUMENT };
        let label = s.label(e);
        let event = EventC {
            struct_size: size_of::<EventC>() as u64,
            kind: e.kind,
            depth: u32::from(e.depth),
            tid: e.tid,
            end_tid: e.end_tid,
            start_ns: e.start_ns,
            end_ns: e.end_ns,
            // Not NUL-terminated: labels are stored as Rust strings; use label_len.
            label: label.as_ptr().cast(),
            label_len: label.len(),
        };
        // SAFETY: the header requires null or a roctx_utils_event with struct_size set.
        unsafe { write_sized(out, event, size_of::<EventC>()) }
    })
}

/// Mirror of `roctx_utils_capture_stats`: `struct_size`, then [`Stats`] itself (`#[repr(C)]`,
/// all `u64`, declared once in the collector).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct CaptureStatsC {
    struct_size: u64,
    stats: Stats,
}
const _: () = assert!(size_of::<CaptureStatsC>() == 8 + 16 * 8 && offset_of!(CaptureStatsC, stats) == 8);

/// `roctx_utils_snapshot_stats`.
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_snapshot_stats(snapshot: *const SnapshotHandle, out: *mut CaptureStatsC) -> i32 {
    guard(STATUS_INTERNAL, || {
        // SAFETY: null or live handle (header contract).
        let Some(s) = (unsafe { snapshot.as_ref() }) else { return STATUS_INVALID_ARGUMENT };
        let stats = CaptureStatsC { struct_size: size_of::<CaptureStatsC>() as u64, stats: s.stats };
        // SAFETY: the header requires null or a roctx_utils_capture_stats with struct_size set.
        unsafe { write_sized(out, stats, 16) }
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
        unsafe { copy_out(&roctx_collector::current_label(), buf, cap) }
    })
}

/// `roctx_utils_listener_feed`.
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_listener_feed(record: *const std::ffi::c_void, record_size: usize, sdk_version: u32) -> i32 {
    // SAFETY: forwarded contract (header): `record_size` readable bytes, payload valid now.
    guard(listener::FeedStatus::Rejected as i32, || unsafe { listener::feed(record, record_size, sdk_version) } as i32)
}

// ---- export ----

/// Mirror of `roctx_utils_buffer`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct BufferC {
    struct_size: u64,
    data: *mut u8,
    len: usize,
}
const _: () = assert!(size_of::<BufferC>() == 24 && offset_of!(BufferC, len) == 16);

/// Hands `bytes` to the caller's buffer; `INVALID_ARGUMENT` when `out` is null or its
/// struct_size does not cover the whole struct (a buffer half written could not be freed).
///
/// # Safety
/// `out` must be null or a writable roctx_utils_buffer with struct_size set (header contract).
unsafe fn give_buffer(bytes: Vec<u8>, out: *mut BufferC) -> i32 {
    let boxed = bytes.into_boxed_slice();
    let len = boxed.len();
    let data = Box::into_raw(boxed).cast::<u8>();
    let buffer = BufferC { struct_size: size_of::<BufferC>() as u64, data, len };
    // SAFETY: per contract.
    let status = unsafe { write_sized(out, buffer, size_of::<BufferC>()) };
    if status != STATUS_OK {
        // SAFETY: `data`/`len` came from Box<[u8]>::into_raw just above and were not handed out.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(data, len)) });
    }
    status
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
        // SAFETY: null or live handle (header contract).
        let Some(s) = (unsafe { snapshot.as_ref() }) else { return STATUS_INVALID_ARGUMENT };
        let plane = export::xplane::roctx_plane(&runtime::xprof::trace(s));
        // SAFETY: header contract for `out`.
        unsafe { give_buffer(prost::Message::encode_to_vec(&plane), out) }
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
        // SAFETY: null or live handle (header contract).
        let Some(s) = (unsafe { snapshot.as_ref() }) else { return STATUS_INVALID_ARGUMENT };
        if out.is_null() {
            return STATUS_INVALID_ARGUMENT;
        }
        let input: &[u8] = if xspace_len == 0 {
            &[]
        } else if xspace.is_null() {
            return STATUS_INVALID_ARGUMENT;
        } else {
            // SAFETY: `xspace_len` readable bytes (header contract).
            unsafe { std::slice::from_raw_parts(xspace, xspace_len) }
        };
        match export::xplane::merge_into_bytes(input, &runtime::xprof::trace(s)) {
            // SAFETY: header contract for `out`.
            Ok(bytes) => unsafe { give_buffer(bytes, out) },
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
        // SAFETY: as above (null, or a NUL-terminated string).
        let run = unsafe { run.as_ref().map(|_| std::ffi::CStr::from_ptr(run).to_string_lossy().into_owned()) };
        // The rules of run names from the environment: one safe directory name, never a path
        // ("../x", "/tmp/x", "a/b" wrote outside the log directory or a run no reader lists).
        let run = match run.as_deref().map(roctx_config::job::run_dir_name) {
            None => None,
            Some(Some(name)) => Some(name),
            Some(None) => return STATUS_INVALID_ARGUMENT,
        };
        match export::write_logdir(&runtime::xprof::trace(s), &dir, run.as_deref()) {
            Ok(path) => {
                // SAFETY: header contract for `path_out`/`cap`.
                unsafe { copy_out(&path.to_string_lossy(), path_out, cap) };
                STATUS_OK
            }
            Err(e) => {
                log::warn(format_args!("writing the XSpace under {}: {e}", dir.display()));
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
        let space = export::xplane::standalone_xspace(&runtime::xprof::trace(s));
        // Replaces only a regular file (never a link, FIFO or device) and never leaves half a
        // file: the CLI's rules, for the same reason.
        let written = export::output::replace_regular_with(&path, |file| {
            let mut out = std::io::BufWriter::new(file);
            export::chrome::write_xspace(&space, &mut out)?;
            std::io::Write::flush(&mut out)
        });
        match written {
            Ok(()) => STATUS_OK,
            Err(e) => {
                log::warn(format_args!("writing {}: {e}", path.display()));
                STATUS_IO_ERROR
            }
        }
    })
}

#[cfg(test)]
mod tests;
