//! RegisterString's pool. Owns every string handle the backend ever issues: each is a pointer
//! to a NUL-terminated copy that lives for the rest of the process (entries are never removed,
//! and string-interner's bucket backend never moves stored bytes), so hosts may push a handle
//! at any time. Bounded twice: each string at [`MAX_STRING_BYTES`], the pool in total bytes.
#![deny(unsafe_code)]

use std::ffi::{c_char, CStr};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, Once, PoisonError};

use string_interner::backend::BucketBackend;
use string_interner::{DefaultSymbol, StringInterner};

/// Longest text a handle points at, in bytes, excluding the NUL. Longer input keeps its prefix
/// and ends in [`TRUNCATION_MARKER`], exactly this long in total.
pub const MAX_STRING_BYTES: usize = 4096;
/// What a truncated string ends with, so a cut label is visibly cut in the trace.
pub const TRUNCATION_MARKER: &str = "...[truncated]";
/// Pool cap unless `ROCTX_UTILS_STRING_POOL_BYTES` says otherwise.
pub const DEFAULT_POOL_BYTES: usize = roctx_config::DEFAULT_STRING_POOL_BYTES;
/// Returned for new strings once the pool is full: visibly wrong rather than missing.
pub const POOL_EXHAUSTED: &CStr = c"<roctx_utils: annotation string pool exhausted>";

struct Pool {
    interner: StringInterner<BucketBackend<DefaultSymbol>>,
    bytes: usize,
    cap: usize,
}

// A lock is fine here: RegisterString runs when annotations are built, not per range. A `std`
// mutex: the fork child releases it (see `fork_safe`).
static POOL: Mutex<Option<Pool>> = Mutex::new(None);
static INTERNED: AtomicU64 = AtomicU64::new(0);
static POOL_BYTES: AtomicU64 = AtomicU64::new(0);
static TRUNCATED: AtomicU64 = AtomicU64::new(0);
static REJECTED: AtomicU64 = AtomicU64::new(0);
static EXHAUSTION_WARNED: AtomicBool = AtomicBool::new(false);

/// Pool counters, for `roctx_utils_counters_get`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Distinct strings held.
    pub interned: u64,
    /// Bytes held, NULs included.
    pub bytes: u64,
    /// Inputs cut to [`MAX_STRING_BYTES`].
    pub truncated: u64,
    /// Calls answered with [`POOL_EXHAUSTED`].
    pub rejected: u64,
}

/// Current pool counters.
pub fn stats() -> PoolStats {
    PoolStats {
        interned: INTERNED.load(Ordering::Relaxed),
        bytes: POOL_BYTES.load(Ordering::Relaxed),
        truncated: TRUNCATED.load(Ordering::Relaxed),
        rejected: REJECTED.load(Ordering::Relaxed),
    }
}

/// The text a handle will point at, NUL included: the input up to its first NUL (what any C
/// reader of the handle would see anyway), as UTF-8 (invalid sequences become U+FFFD, since
/// every trace format downstream stores UTF-8), cut to [`MAX_STRING_BYTES`] with the marker.
/// Returns the key and whether it was truncated.
pub(crate) fn normalize(raw: &[u8]) -> (String, bool) {
    let raw = raw.split(|&b| b == 0).next().unwrap_or_default();
    let mut text = String::from_utf8_lossy(raw).into_owned();
    let truncated = text.len() > MAX_STRING_BYTES;
    if truncated {
        let mut cut = MAX_STRING_BYTES - TRUNCATION_MARKER.len();
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str(TRUNCATION_MARKER);
    }
    text.push('\0');
    (text, truncated)
}

/// Interns `raw` and returns a process-lifetime pointer to its NUL-terminated copy. Equal
/// inputs (after [`normalize`]) return the same pointer. Safe from any thread.
pub fn register(raw: &[u8]) -> *const c_char {
    let (key, truncated) = normalize(raw);
    if truncated {
        TRUNCATED.fetch_add(1, Ordering::Relaxed);
    }
    let mut guard = lock_pool();
    let pool = guard.get_or_insert_with(|| Pool {
        interner: StringInterner::new(),
        bytes: 0,
        cap: roctx_config::get().string_pool_bytes,
    });
    let symbol = match pool.interner.get(&key) {
        Some(symbol) => symbol,
        None => {
            if pool.bytes.saturating_add(key.len()) > pool.cap {
                REJECTED.fetch_add(1, Ordering::Relaxed);
                let cap = pool.cap;
                drop(guard);
                roctx_config::warn_once!(
                    EXHAUSTION_WARNED,
                    "RegisterString pool is full ({cap} bytes); new annotation strings show as {POOL_EXHAUSTED:?}. \
                     Raise {} to keep them.",
                    roctx_config::STRING_POOL_BYTES
                );
                return POOL_EXHAUSTED.as_ptr();
            }
            pool.bytes += key.len();
            INTERNED.fetch_add(1, Ordering::Relaxed);
            POOL_BYTES.fetch_add(key.len() as u64, Ordering::Relaxed);
            pool.interner.get_or_intern(&key)
        }
    };
    // Never None: the symbol came from this interner.
    pool.interner.resolve(symbol).map_or(POOL_EXHAUSTED.as_ptr(), |s| s.as_ptr().cast())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(p: *const c_char) -> String {
        // SAFETY: `register` only returns pointers to NUL-terminated, never-freed strings.
        #[allow(unsafe_code)]
        unsafe { CStr::from_ptr(p) }.to_str().unwrap().to_owned()
    }

    #[test]
    fn equal_strings_share_one_stable_handle() {
        let a = register(b"intern_test_alpha");
        // Force new buckets so a moving backend would be caught.
        let fillers: Vec<_> = (0..20_000).map(|i| register(format!("intern_filler_{i:08}").as_bytes())).collect();
        assert_eq!(register(b"intern_test_alpha"), a);
        assert_eq!(text(a), "intern_test_alpha");
        for (i, p) in fillers.iter().enumerate().step_by(997) {
            assert_eq!(text(*p), format!("intern_filler_{i:08}"));
        }
        assert_ne!(register(b"intern_test_beta"), a);
    }

    #[test]
    fn long_strings_are_cut_visibly() {
        let (key, cut) = normalize(&vec![b'x'; 200_000]);
        assert!(cut);
        assert_eq!(key.len(), MAX_STRING_BYTES + 1);
        assert!(key.starts_with("xxxx"));
        assert!(key.ends_with("...[truncated]\0"));
        let (key, cut) = normalize(&vec![b'y'; MAX_STRING_BYTES]);
        assert!(!cut);
        assert_eq!(key.len(), MAX_STRING_BYTES + 1);
    }

    #[test]
    fn truncation_respects_utf8_boundaries() {
        let raw = "é".repeat(3000); // 6000 bytes of 2-byte characters
        let (key, cut) = normalize(raw.as_bytes());
        assert!(cut);
        assert!(key.len() <= MAX_STRING_BYTES + 1);
        assert!(key.ends_with("...[truncated]\0"));
    }

    #[test]
    fn text_stops_at_embedded_nul_and_invalid_utf8_is_replaced() {
        assert_eq!(normalize(b"abc\0def").0, "abc\0");
        assert_eq!(normalize(b"a\xffb").0, "a\u{fffd}b\0");
    }
}

fn lock_pool() -> MutexGuard<'static, Option<Pool>> {
    fork_safe();
    POOL.lock().unwrap_or_else(PoisonError::into_inner)
}

thread_local! {
    static HELD: RefCell<Option<MutexGuard<'static, Option<Pool>>>> = const { RefCell::new(None) };
}

/// The pool lock is held across `fork()`, so a child never inherits it locked by a thread that
/// does not exist there (its next RegisterString would hang). Its own handlers: the pool lock
/// is never held together with the runtime's or the collector's.
fn fork_safe() {
    extern "C" fn prepare() {
        roctx_sys::guard((), || {
            let held = POOL.lock().unwrap_or_else(PoisonError::into_inner);
            let _ = HELD.try_with(|h| *h.borrow_mut() = Some(held));
        })
    }
    extern "C" fn release() {
        roctx_sys::guard((), || {
            let _ = HELD.try_with(|h| h.borrow_mut().take());
        })
    }
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        roctx_sys::os::at_fork(prepare, release, release);
    });
}
