//! The emitter: what the drop-in `nvtx_utils.h` functions do on ROCm.
//!
//! Owns the emission latch ([`emission_enabled`]), the domain sentinel, the dual push (host
//! AnnotationStack first, then roctx), naming, RegisterString's pool ([`intern`]) and the
//! annotation object. It never records or exports anything itself, and it never links roctx:
//! [`crate::ffi::roctx`] binds it at run time, and a missing library only means ranges reach
//! AnnotationStack alone.
//!
//! Hot path (`range_push`/`range_pop`): one relaxed-or-acquire load per stack, no allocation,
//! no lock, no syscall.
#![deny(unsafe_code)]

mod config;
pub mod intern;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};

pub use config::emission_enabled;

use crate::collector;
use crate::ffi::host;
pub use crate::ffi::CText;
use crate::ffi::roctx;

/// What DefaultProfilerDomain returns when enabled: a stable address, never dereferenced and
/// never passed to roctx.
static DOMAIN_SENTINEL: u8 = 0;

/// The domain as an opaque address: non-null iff emission is enabled, stable for the process.
pub fn domain() -> *const u8 {
    if emission_enabled() {
        &DOMAIN_SENTINEL
    } else {
        std::ptr::null()
    }
}

/// Opens a range named `text` on the calling thread: into the host's AnnotationStack when it is
/// enabled, then into roctx when a library is bound. Whatever the domain: that is the caller's
/// routing decision (ScopedAnnotation), not ours.
#[inline]
pub fn range_push(text: CText<'_>) {
    // Bind roctx first: the first binding may start a capture session (ROCTX_UTILS_XSPACE_OUT),
    // which must see this very range.
    let api = roctx::api();
    let (stack, capture) = (host::annotation_stack_enabled(), collector::in_process_enabled());
    if stack || capture {
        let bytes = text.to_bytes(); // one strlen, and none when neither needs the bytes
        if stack {
            host::annotation_stack_push(bytes);
        }
        if capture {
            collector::push(bytes, collector::now_ns(), collector::current_tid());
        }
    }
    if let Some(api) = api {
        api.range_push(text);
    }
}

/// Closes the calling thread's innermost range on both stacks. AnnotationStack may have been
/// toggled since the push; that is harmless, because a toggle wipes the thread's stack and an
/// unmatched pop finds it empty.
#[inline]
pub fn range_pop() {
    if host::annotation_stack_enabled() {
        host::annotation_stack_pop();
    }
    if collector::in_process_enabled() {
        collector::pop(collector::now_ns(), collector::current_tid());
    }
    if let Some(api) = roctx::api() {
        api.range_pop();
    }
}

/// An instant event (`roctxMarkA`), recorded in-process too.
pub fn mark(text: CText<'_>) {
    let api = roctx::api(); // first: see range_push
    if collector::in_process_enabled() {
        collector::mark(text.to_bytes(), collector::now_ns(), collector::current_tid());
    }
    if let Some(api) = api {
        api.mark(text);
    }
}

/// Opens a range that may end on another thread (`roctxRangeStartA`); returns its id.
pub fn range_start(text: CText<'_>) -> u64 {
    static NEXT_ID: AtomicU64 = AtomicU64::new(1);
    // roctx's own id when bound (so external tools and we agree), else ours. Binding first
    // also lets an automatic session see this range (see range_push).
    let id = roctx::api()
        .and_then(|api| api.range_start(text))
        .unwrap_or_else(|| NEXT_ID.fetch_add(1, Ordering::Relaxed));
    if collector::in_process_enabled() {
        collector::range_start(id, text.to_bytes(), collector::now_ns(), collector::current_tid());
    }
    id
}

/// Closes a range opened by [`range_start`], from any thread.
pub fn range_stop(id: u64) {
    if collector::in_process_enabled() {
        collector::range_stop(id, collector::now_ns(), collector::current_tid());
    }
    if let Some(api) = roctx::api() {
        api.range_stop(id);
    }
}

/// Names the calling OS thread (roctxNameOsThread). Ungated, as upstream: names are cheap and
/// useful to external tools even with emission off.
pub fn name_current_thread(name: &[u8]) {
    // Kept for export whatever the capture mode: names are rare and make rows readable.
    collector::name_thread(collector::current_tid(), name);
    if let Some(api) = roctx::api() {
        api.name_os_thread(&c_string(name));
    }
}

/// Names a HIP device ordinal (roctxNameHipDevice).
pub fn name_device(device_id: i32, name: &[u8]) {
    if let Some(api) = roctx::api() {
        api.name_hip_device(&c_string(name), device_id);
    }
}

static NULL_STREAMS: AtomicU64 = AtomicU64::new(0);
static NULL_STREAM_WARNED: AtomicBool = AtomicBool::new(false);

/// Names a HIP stream (roctxNameHipStream). A null stream is the caller's bug: it is reported
/// once, counted, and not passed on (roctx would attach the name to the default stream).
pub fn name_stream(stream: usize, name: &[u8]) {
    if stream == 0 {
        NULL_STREAMS.fetch_add(1, Ordering::Relaxed);
        crate::log::warn_once!(
            NULL_STREAM_WARNED,
            "NameStream({:?}) was given a null stream; pass a valid hipStream_t. The name is not forwarded to roctx.",
            String::from_utf8_lossy(name)
        );
        return;
    }
    if let Some(api) = roctx::api() {
        api.name_hip_stream(&c_string(name), stream);
    }
}

/// NameStream calls that were dropped for a null stream.
pub fn null_streams() -> u64 {
    NULL_STREAMS.load(Ordering::Relaxed)
}

/// The bytes up to the first NUL, NUL-terminated.
fn c_string(bytes: &[u8]) -> std::ffi::CString {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    std::ffi::CString::new(&bytes[..end]).unwrap_or_default()
}

/// Where an [`Annotation`] pushed, so its single pop goes to the same place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Route {
    Nowhere = 0,
    Range = 1,
    Stack = 2,
    Stopped = 3,
}

/// An annotation opened by a host that cannot use a C++ scope: pushed on creation, popped by the
/// first [`Annotation::stop`] only. Routed like ScopedAnnotation: a non-null domain means
/// [`range_push`] (AnnotationStack and roctx), otherwise AnnotationStack alone if enabled.
#[derive(Debug)]
pub struct Annotation {
    route: AtomicU8,
}

impl Annotation {
    /// Pushes `name` and returns the open annotation.
    pub fn open(name: CText<'_>) -> Annotation {
        let route = if emission_enabled() {
            range_push(name);
            Route::Range
        } else if host::annotation_stack_enabled() {
            host::annotation_stack_push(name.to_bytes());
            Route::Stack
        } else {
            Route::Nowhere
        };
        Annotation { route: AtomicU8::new(route as u8) }
    }

    /// Pops if still open; every later call is a no-op. Returns whether this call stopped it.
    pub fn stop(&self) -> bool {
        let previous = self.route.swap(Route::Stopped as u8, Ordering::AcqRel);
        match previous {
            p if p == Route::Range as u8 => range_pop(),
            // As ScopedAnnotation's PopAnnotation: re-check, the stack may have been disabled.
            p if p == Route::Stack as u8 => {
                if host::annotation_stack_enabled() {
                    host::annotation_stack_pop();
                }
            }
            _ => {}
        }
        previous != Route::Stopped as u8
    }
}

impl Drop for Annotation {
    fn drop(&mut self) {
        self.stop();
    }
}
