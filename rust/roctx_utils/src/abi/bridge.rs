//! The inbound cxx bridge: the drop-in `tsl::profiler` functions, exported under their upstream
//! C++ names. (The outbound one, to the host's AnnotationStack, is [`crate::host`].)
//!
//! The bridge includes only `roctx_types.h` (types, no functions): cxx declares every exported
//! function `noexcept`, the public header does not, and the two must not meet in one
//! translation unit. Signatures cxx cannot express (`const void*`) are defined by the C++
//! forwarders in `cc/forwarders.cc`, which call the `roctx_utils::bridge` functions below.
#![allow(unsafe_op_in_unsafe_fn, missing_docs, missing_debug_implementations, unreachable_pub, clippy::undocumented_unsafe_blocks)]

use std::ffi::c_char;

use roctx_sys::CText;

use super::guard;
use crate::emitter;

#[cxx::bridge(namespace = "tsl::profiler")]
pub mod ffi {
    // Types owned by C++ (roctx_types.h): opaque, only ever behind pointers.
    unsafe extern "C++" {
        include!("tsl/profiler/lib/roctx_types.h");
        type ProfilerDomain;
        #[cxx_name = "String"]
        type StringTarget;
        type Stream;
    }

    // The drop-in interface, under upstream's names.
    extern "Rust" {
        #[cxx_name = "NameCurrentThread"]
        fn name_current_thread(name: &CxxString);
        #[cxx_name = "NameDevice"]
        fn name_device(device_id: i32, device_name: &CxxString);
        #[cxx_name = "NameStream"]
        unsafe fn name_stream(stream: *mut Stream, stream_name: &CxxString);
        #[cxx_name = "RegisterString"]
        unsafe fn register_string(domain: *mut ProfilerDomain, text: &CxxString) -> *mut StringTarget;
    }

    // Targets of the C++ forwarders (cc/forwarders.cc).
    #[namespace = "roctx_utils::bridge"]
    extern "Rust" {
        // DefaultProfilerDomain's first answer; C++ latches it (cc/forwarders.cc).
        fn default_profiler_domain() -> *mut ProfilerDomain;
        unsafe fn register_schema(domain: *mut ProfilerDomain) -> u64;
        unsafe fn mark_memory_initialized(size: usize, stream: *mut Stream);
    }
}

use ffi::{ProfilerDomain, Stream, StringTarget};

fn default_profiler_domain() -> *mut ProfilerDomain {
    guard(std::ptr::null_mut(), || emitter::domain().cast_mut().cast())
}

fn name_current_thread(name: &cxx::CxxString) {
    guard((), || emitter::name_current_thread(name.as_bytes()))
}

fn name_device(device_id: i32, device_name: &cxx::CxxString) {
    guard((), || emitter::name_device(device_id, device_name.as_bytes()))
}

unsafe fn name_stream(stream: *mut Stream, stream_name: &cxx::CxxString) {
    guard((), || emitter::name_stream(stream as usize, stream_name.as_bytes()))
}

unsafe fn register_string(_domain: *mut ProfilerDomain, text: &cxx::CxxString) -> *mut StringTarget {
    guard(std::ptr::null_mut(), || emitter::intern::register(text.as_bytes()).cast_mut().cast())
}

// RangePush(domain, ascii), detail::RangePush(domain, title, ...) and RangePop(domain), XLA's
// calls per thunk, are defined in cc/forwarders.cc, which reads AnnotationStack::IsEnabled()
// there (inline in XLA's header: one load) and calls these plain C entries: no call back into
// C++ for the check and no cxx shim frame, 19 instructions per pair fewer than through the
// bridge (callgrind; issue 44, BENCHMARKS.md).
// Each catches panics like every other entry. Not part of the public C surface.

/// `RangePush(domain, ascii)`; `stack`: the host's `AnnotationStack::IsEnabled()`, just read.
///
/// # Safety
/// `ascii` is null or a C string valid for the call (the interface's own requirement).
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_bridge_range_push(ascii: *const c_char, stack: bool) {
    // SAFETY: the caller's contract above.
    guard((), || emitter::range_push_with(unsafe { CText::from_ptr_or_empty(ascii) }, stack))
}

/// `detail::RangePush(domain, title, ...)`: a registered title (our RegisterString's handle, or
/// null); `stack` as for [`roctx_utils_bridge_range_push`].
///
/// # Safety
/// `title` is null or a handle our RegisterString returned.
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_bridge_range_push_title(title: *const c_char, stack: bool) {
    if title.is_null() {
        // SAFETY: null is an empty label.
        return unsafe { roctx_utils_bridge_range_push(std::ptr::null(), stack) };
    }
    // SAFETY: a non-null title is a handle from our RegisterString: a NUL-terminated string that
    // lives, unchanged, for the process.
    guard((), || emitter::range_push_registered_with(unsafe { CText::from_ptr_or_empty(title) }, stack))
}

/// `detail::RangePush(domain, title, title_text, ...)` (the R3 contract: `title_text` is the
/// registered string, alive for the call; preferred, the handle's own text the fallback).
///
/// # Safety
/// `title` as for [`roctx_utils_bridge_range_push_title`]; `title_text` null or a C string
/// valid for the call.
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_bridge_range_push_title_text(title: *const c_char, title_text: *const c_char, stack: bool) {
    if title_text.is_null() || title_text == title {
        // SAFETY: the caller's contract.
        return unsafe { roctx_utils_bridge_range_push_title(title, stack) };
    }
    // SAFETY: the contract above: a C string alive for the call (the host's, not our pool's).
    unsafe { roctx_utils_bridge_range_push(title_text, stack) }
}

/// `RangePop(domain)`; `stack` as for [`roctx_utils_bridge_range_push`].
#[no_mangle]
pub extern "C" fn roctx_utils_bridge_range_pop(stack: bool) {
    guard((), || emitter::range_pop_with(stack))
}

unsafe fn register_schema(_domain: *mut ProfilerDomain) -> u64 {
    0 // roctx has no structured payloads
}

unsafe fn mark_memory_initialized(_size: usize, _stream: *mut Stream) {
    // CUDA compute-sanitizer initcheck workaround; ROCm has no equivalent tool.
}
