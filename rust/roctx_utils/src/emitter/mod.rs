//! The emitter: what the drop-in `nvtx_utils.h` functions do on ROCm.
//!
//! Owns the domain sentinel, the dual push (host AnnotationStack first, then roctx), naming,
//! RegisterString's pool ([`intern`]) and the annotation object. It records nothing itself: a
//! range goes to the host's AnnotationStack, to the event sink [`runtime::sink`] installed (if
//! any: in-process capture), and to roctx, which [`runtime`] bound at start-up; a missing
//! library only means ranges reach AnnotationStack (and the sink) alone.
//!
//! Hot path (`range_push`/`range_pop`), exactly: one acquire load (the runtime latch), one
//! relaxed load (the sink), AnnotationStack's own enabled check, one `strlen` only when
//! AnnotationStack or a sink wants the label, and one indirect call into roctx. No allocation,
//! no lock, no syscall in this layer; what a sink costs is the collector's (see its docs).
#![deny(unsafe_code)]

pub mod intern;
pub mod nvtx;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};

pub use roctx_sys::CText;

use crate::{host, runtime};

/// Whether range emission is on (`XLA_ROCM_ENABLE_ROCTX`, tsl's grammar). Read once with the
/// rest of the configuration and latched for the process: a later `setenv` in either direction
/// has no effect (callers read the domain separately at push and pop, so it must never change).
#[inline]
pub fn emission_enabled() -> bool {
    roctx_config::get().enable_roctx
}

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
#[inline(always)]
pub fn range_push(text: CText<'_>) {
    range_push_with(text, host::annotation_stack_enabled())
}

/// [`range_push`] with `AnnotationStack::IsEnabled()` already read by the caller (XLA's
/// `RangePush`, in C++, where the check is inline: `cc/forwarders.cc`).
#[inline(always)]
pub fn range_push_with(text: CText<'_>, stack: bool) {
    // Start-up first: it may start a capture session (ROCTX_UTILS_XSPACE_OUT), which must see
    // this very range.
    let rt = runtime::get();
    let sink = runtime::sink();
    if stack || sink.is_some() {
        let bytes = text.to_bytes(); // one strlen, and none when neither needs the bytes
        if stack {
            host::annotation_stack_push(bytes);
        }
        if let Some(sink) = sink {
            sink.push(bytes);
        }
    }
    if let Some(api) = rt.roctx() {
        api.range_push(text);
    }
}

/// [`range_push`] of a registered string (a RegisterString handle's text: it lives and never
/// changes for the process): the sink may know it by its address, with no `strlen` and no
/// compare of its bytes (issue 44).
#[inline(always)]
pub fn range_push_registered(text: CText<'static>) {
    range_push_registered_with(text, host::annotation_stack_enabled())
}

/// [`range_push_registered`] with `AnnotationStack::IsEnabled()` already read (see
/// [`range_push_with`]).
#[inline(always)]
pub fn range_push_registered_with(text: CText<'static>, stack: bool) {
    let rt = runtime::get(); // first: see range_push
    if stack {
        host::annotation_stack_push(text.to_bytes());
    }
    if let Some(sink) = runtime::sink() {
        sink.push_registered(text);
    }
    if let Some(api) = rt.roctx() {
        api.range_push(text);
    }
}

/// Closes the calling thread's innermost range on both stacks. AnnotationStack may have been
/// toggled since the push; that is harmless, because a toggle wipes the thread's stack and an
/// unmatched pop finds it empty.
#[inline(always)]
pub fn range_pop() {
    range_pop_with(host::annotation_stack_enabled())
}

/// [`range_pop`] with `AnnotationStack::IsEnabled()` already read (see [`range_push_with`]).
#[inline(always)]
pub fn range_pop_with(stack: bool) {
    if stack {
        host::annotation_stack_pop();
    }
    if let Some(sink) = runtime::sink() {
        sink.pop();
    }
    // Last, so that nothing is kept live across the calls above (measured: 7 instructions).
    if let Some(api) = runtime::get().roctx() {
        api.range_pop();
    }
}

/// An instant event (`roctxMarkA`), recorded in-process too.
pub fn mark(text: CText<'_>) {
    let rt = runtime::get(); // first: see range_push
    if let Some(sink) = runtime::sink() {
        sink.mark(text.to_bytes());
    }
    if let Some(api) = rt.roctx() {
        api.mark(text);
    }
}

/// Opens a range that may end on another thread (`roctxRangeStartA`); returns its id.
pub fn range_start(text: CText<'_>) -> u64 {
    static NEXT_ID: AtomicU64 = AtomicU64::new(1);
    // roctx's own id when bound (so external tools and we agree), else ours. Binding first
    // also lets an automatic session see this range (see range_push).
    let id = runtime::get()
        .roctx()
        .and_then(|api| api.range_start(text))
        .unwrap_or_else(|| NEXT_ID.fetch_add(1, Ordering::Relaxed));
    if let Some(sink) = runtime::sink() {
        sink.range_start(id, text.to_bytes());
    }
    id
}

/// Closes a range opened by [`range_start`], from any thread.
pub fn range_stop(id: u64) {
    let rt = runtime::get();
    if let Some(sink) = runtime::sink() {
        sink.range_stop(id);
    }
    if let Some(api) = rt.roctx() {
        api.range_stop(id);
    }
}

/// Names the calling OS thread (roctxNameOsThread). Ungated, as upstream: names are cheap and
/// useful to external tools even with emission off.
pub fn name_current_thread(name: &[u8]) {
    let rt = runtime::get();
    runtime::name_current_thread(name);
    if let Some(api) = rt.roctx() {
        api.name_os_thread(&c_string(name));
    }
}

/// Names a HIP device ordinal (roctxNameHipDevice).
pub fn name_device(device_id: i32, name: &[u8]) {
    if let Some(api) = runtime::get().roctx() {
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
        roctx_config::warn_once!(
            NULL_STREAM_WARNED,
            "NameStream({:?}) was given a null stream; pass a valid hipStream_t. The name is not forwarded to roctx.",
            String::from_utf8_lossy(name)
        );
        return;
    }
    if let Some(api) = runtime::get().roctx() {
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
            p if p == Route::Stack as u8 && host::annotation_stack_enabled() => host::annotation_stack_pop(),
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
