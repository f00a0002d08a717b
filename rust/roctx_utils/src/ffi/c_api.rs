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
