//! Zero-filled values from the allocator's zeroed memory, for the collector's event chunks
//! (issue 44).
//!
//! A chunk built element by element cost a `memset` of its 96 KiB (24 instructions per captured
//! range, callgrind) on top of the kernel's own zero-fill. Here a chunk is `calloc`ed: memory
//! that glibc takes fresh from the kernel is known to be zero and is not cleared again, so a
//! growing buffer pays no `memset`; its pages are still faulted in by the first write.
//!
//! Tried and measured first: each chunk an anonymous mapping made with `MAP_POPULATE`, so that
//! the hot path took no page fault either. On the H100 lease's 16-core host that was faster up
//! to 8 threads (65-87 ns per NVTX pair at 1 thread against 78-95) and slower at 16 (168-183 ns
//! against 119-146; medians 177 and 123). Our reading, not yet checked: the threads' chunks land in
//! adjacent mappings that the kernel merges into one, so 16 threads mapping and populating chunks
//! take turns on it, where glibc's heap arenas are one mapping per thread (`bench/results/2026-12-07_nvtx_threads_fast_path_h100.txt`). Pre-faulting
//! without that cost (chunks faulted in by another thread, per-thread reserved regions) is left.

use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize};

/// Types for which all-zero bytes are a valid value (the integers' atomics, arrays of them).
///
/// # Safety
/// An implementor must be valid when every byte of it is zero, and have no `Drop` of its own.
pub unsafe trait Zeroed: Sized {
    /// The value built in place, for the fallback.
    fn zero() -> Self;
}

// SAFETY: an atomic integer of value 0 is all zero bytes; no drop glue.
unsafe impl Zeroed for AtomicU64 {
    fn zero() -> Self {
        AtomicU64::new(0)
    }
}
// SAFETY: as above.
unsafe impl Zeroed for AtomicU32 {
    fn zero() -> Self {
        AtomicU32::new(0)
    }
}
// SAFETY: as above.
unsafe impl Zeroed for AtomicUsize {
    fn zero() -> Self {
        AtomicUsize::new(0)
    }
}
// SAFETY: an array of zero-valid elements is zero-valid, and has no drop glue of its own.
unsafe impl<T: Zeroed, const N: usize> Zeroed for [T; N] {
    fn zero() -> Self {
        std::array::from_fn(|_| T::zero())
    }
}

/// A zero-filled `T` on the heap, from the allocator's zeroed memory: a `Box<T>` that was never
/// written element by element.
pub struct ZeroedBox<T: Zeroed> {
    ptr: NonNull<T>,
}

// SAFETY: it owns its `T` as a `Box` would.
unsafe impl<T: Zeroed + Send> Send for ZeroedBox<T> {}
// SAFETY: as above.
unsafe impl<T: Zeroed + Sync> Sync for ZeroedBox<T> {}

impl<T: Zeroed> ZeroedBox<T> {
    /// A new zero `T`.
    pub fn new() -> ZeroedBox<T> {
        let layout = std::alloc::Layout::new::<T>();
        if layout.size() > 0 {
            // SAFETY: a layout of non-zero size.
            let p = unsafe { std::alloc::alloc_zeroed(layout) };
            if let Some(ptr) = NonNull::new(p) {
                return ZeroedBox { ptr: ptr.cast() };
            }
        }
        // A zero-sized `T`, or no zeroed memory: built in place (as a `Box` would fail).
        ZeroedBox { ptr: NonNull::from(Box::leak(Box::new(T::zero()))) }
    }
}

impl<T: Zeroed> Default for ZeroedBox<T> {
    fn default() -> Self {
        ZeroedBox::new()
    }
}

impl<T: Zeroed> Deref for ZeroedBox<T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        // SAFETY: `ptr` is a live, zero-initialised (so valid, by `Zeroed`) `T` this box owns.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T: Zeroed> Drop for ZeroedBox<T> {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from the global allocator with `T`'s layout (`alloc_zeroed`, or a
        // leaked `Box<T>`), so it is a `Box<T>`'s; dropped once. `T` has no drop glue.
        drop(unsafe { Box::from_raw(self.ptr.as_ptr()) });
    }
}

impl<T: Zeroed> std::fmt::Debug for ZeroedBox<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZeroedBox").field("bytes", &std::mem::size_of::<T>()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn a_chunk_is_zero_writable_and_freed_on_drop() {
        for _ in 0..64 {
            // Freed and allocated again: recycled memory must come back zero too.
            let b: ZeroedBox<[[AtomicU64; 3]; 4096]> = ZeroedBox::new();
            assert!(b.iter().flatten().all(|w| w.load(Ordering::Relaxed) == 0));
            b[4095][2].store(7, Ordering::Relaxed);
            b[0][0].store(u64::MAX, Ordering::Relaxed);
            assert_eq!(b[4095][2].load(Ordering::Relaxed), 7);
        }
    }

    #[test]
    fn small_values_are_zero_too() {
        let b: ZeroedBox<[AtomicU32; 8]> = ZeroedBox::new();
        assert!(b.iter().all(|w| w.load(Ordering::Relaxed) == 0));
    }
}
