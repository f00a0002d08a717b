//! The panic fence for every `extern "C"` function of the library: the host's calls (the `abi`
//! layer), rocprofiler-sdk's callbacks (the listener's tool mode) and the `atexit` hook (the
//! runtime). It sits here, at the bottom, because all three layers need it and none may call
//! upward for it.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};

static PANICS: AtomicU64 = AtomicU64::new(0);

/// Runs `f`, turning a panic into `neutral` (and a count), so that nothing unwinds into C or
/// C++ (cxx would abort, and an abort takes the host down). Zero-cost when nothing panics.
#[inline(always)]
pub fn guard<R>(neutral: R, f: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(value) => value,
        Err(_) => {
            PANICS.fetch_add(1, Ordering::Relaxed);
            neutral
        }
    }
}

/// Panics contained so far.
pub fn panics_caught() -> u64 {
    PANICS.load(Ordering::Relaxed)
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
