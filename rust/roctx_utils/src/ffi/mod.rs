//! Every crossing of the C ABI lives here, and only here:
//!
//! - [`bridge`]: C++ -> Rust, the cxx bridge exporting the drop-in `tsl::profiler` functions,
//!   and Rust -> C++ for the host's AnnotationStack ([`host`]);
//! - [`c_api`]: the `extern "C"` surface of `roctx_utils.h` (annotation handles, diagnostics);
//! - [`roctx`]: Rust -> roctx, bound at run time with libloading.
//!
//! Every entry from the host runs inside [`guard`], so a panic becomes a counted neutral
//! result and never unwinds into C++ (cxx would abort, and an abort takes the host down).

pub mod bridge;
pub mod c_api;
pub mod os;
pub mod rocprofiler;
pub mod roctx;

use std::ffi::{c_char, CStr};
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

static PANICS: AtomicU64 = AtomicU64::new(0);

/// Runs `f`, turning a panic into `neutral` (and a count). Zero-cost when nothing panics.
#[inline(always)]
pub(crate) fn guard<R>(neutral: R, f: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(value) => value,
        Err(_) => {
            PANICS.fetch_add(1, Ordering::Relaxed);
            neutral
        }
    }
}

/// Panics contained at the boundary so far.
pub fn panics_caught() -> u64 {
    PANICS.load(Ordering::Relaxed)
}

/// A borrowed C string whose length is only computed when someone needs the bytes: roctx takes
/// the pointer as is, so the hot path never pays for a `strlen` unless AnnotationStack is on.
#[derive(Debug, Clone, Copy)]
pub struct CText<'a> {
    ptr: NonNull<c_char>,
    _borrow: PhantomData<&'a CStr>,
}

impl<'a> CText<'a> {
    /// `ptr` as text, with null read as `""`: a null title still opens a range, so that the
    /// matching pop stays balanced.
    ///
    /// # Safety
    /// A non-null `ptr` must point at a NUL-terminated string that stays valid and unchanged for
    /// `'a`.
    #[inline(always)]
    pub unsafe fn from_ptr_or_empty(ptr: *const c_char) -> CText<'a> {
        let ptr = NonNull::new(ptr.cast_mut()).unwrap_or_else(|| NonNull::from(c"".to_bytes_with_nul()).cast());
        CText { ptr, _borrow: PhantomData }
    }

    /// Borrows a `CStr`.
    pub fn from_c_str(text: &'a CStr) -> CText<'a> {
        // SAFETY: a &CStr is NUL-terminated and valid for its lifetime.
        unsafe { CText::from_ptr_or_empty(text.as_ptr()) }
    }

    /// The NUL-terminated pointer, never null.
    #[inline(always)]
    pub fn as_ptr(self) -> *const c_char {
        self.ptr.as_ptr()
    }

    /// The bytes before the NUL (runs `strlen`).
    #[inline]
    pub fn to_bytes(self) -> &'a [u8] {
        // SAFETY: construction guarantees a NUL-terminated string valid for 'a.
        unsafe { CStr::from_ptr(self.ptr.as_ptr()) }.to_bytes()
    }
}

/// The host's AnnotationStack, as the emitter sees it (safe wrappers over the bridge).
pub mod host {
    /// `AnnotationStack::IsEnabled()`.
    #[inline(always)]
    pub fn annotation_stack_enabled() -> bool {
        super::bridge::ffi::annotation_stack_is_enabled()
    }

    /// `AnnotationStack::PushAnnotation(text)`.
    #[inline(always)]
    pub fn annotation_stack_push(text: &[u8]) {
        // SAFETY: the shim reads exactly `len` bytes from `ptr` during the call and copies them.
        unsafe { super::bridge::ffi::annotation_stack_push(text.as_ptr().cast(), text.len()) }
    }

    /// `AnnotationStack::PopAnnotation()`.
    #[inline(always)]
    pub fn annotation_stack_pop() {
        super::bridge::ffi::annotation_stack_pop()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn guard_turns_a_panic_into_the_neutral_value_and_counts_it() {
        let before = super::panics_caught();
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let v = super::guard(7, || -> i32 { panic!("boom") });
        std::panic::set_hook(prev);
        assert_eq!(v, 7);
        assert!(super::panics_caught() > before);
        assert_eq!(super::guard(0, || 5), 5);
    }
}
