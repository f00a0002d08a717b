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
pub mod roctx;

use std::panic::{catch_unwind, AssertUnwindSafe};
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
