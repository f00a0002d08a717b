//! Heap memory for the collector's event chunks (issue 44), neither cleared nor built element
//! by element.
//!
//! A chunk built element by element cost a `memset` of its 96 KiB (24 instructions per captured
//! range, callgrind) on top of the kernel's own zero-fill. Then a chunk was `calloc`ed: memory
//! that glibc takes fresh from the kernel is known to be zero and is not cleared again, but
//! memory it hands out again is, and on the main thread's arena that was 16 instructions per
//! range still. A chunk's words need no first value at all: the collector stores every slot
//! before the length that publishes it, and reads none past that length (a chunk from its pool
//! holds an earlier buffer's slots, so nothing could rely on zeros anyway). So a chunk is plain
//! `malloc`ed memory, [`Uncleared`]; its pages are faulted in by the first write.
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

/// Types made only of atomic integers (arrays of them): any bytes are a valid value once
/// written, they have no `Drop`, and a word is only ever reached through an atomic operation.
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

/// A `T` of atomic words on the heap whose memory is not cleared: each word holds whatever the
/// allocator left there until it is first stored. Only for memory whose every word is stored
/// before it is loaded (the collector's chunks: module docs); a load of a word never stored
/// reads an unspecified value. (A reference to not-yet-written atomics is never used to read
/// them: the validity Rust asks of a `&T` is its address's, which the allocation gives.)
pub struct Uncleared<T: Zeroed> {
    ptr: NonNull<T>,
}

// SAFETY: it owns its `T` as a `Box` would.
unsafe impl<T: Zeroed + Send> Send for Uncleared<T> {}
// SAFETY: as above.
unsafe impl<T: Zeroed + Sync> Sync for Uncleared<T> {}

impl<T: Zeroed> Uncleared<T> {
    /// A new `T`, its words not yet written.
    pub fn new() -> Uncleared<T> {
        let layout = std::alloc::Layout::new::<T>();
        if layout.size() > 0 {
            // SAFETY: a layout of non-zero size.
            let p = unsafe { std::alloc::alloc(layout) };
            if let Some(ptr) = NonNull::new(p) {
                return Uncleared { ptr: ptr.cast() };
            }
        }
        // A zero-sized `T`, or no memory: built in place (as a `Box` would fail).
        Uncleared { ptr: NonNull::from(Box::leak(Box::new(T::zero()))) }
    }
}

impl<T: Zeroed> Default for Uncleared<T> {
    fn default() -> Self {
        Uncleared::new()
    }
}

impl<T: Zeroed> Deref for Uncleared<T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        // SAFETY: `ptr` is a live allocation of `T`'s layout that this box owns; its words are
        // atomics, reached only by atomic operations, loaded only after they were stored (type
        // docs).
        unsafe { self.ptr.as_ref() }
    }
}

impl<T: Zeroed> Drop for Uncleared<T> {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from the global allocator with `T`'s layout (`alloc`, or a leaked
        // `Box<T>`), so it is a `Box<T>`'s; dropped once. `T` has no drop glue, so nothing of
        // its (possibly never written) contents is read.
        drop(unsafe { Box::from_raw(self.ptr.as_ptr()) });
    }
}

impl<T: Zeroed> std::fmt::Debug for Uncleared<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Uncleared").field("bytes", &std::mem::size_of::<T>()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn a_chunk_keeps_what_is_stored_and_is_freed_on_drop() {
        for round in 0..64u64 {
            // Freed and allocated again: a word reads what was stored in it, whatever the
            // memory held before.
            let b: Uncleared<[[AtomicU64; 3]; 4096]> = Uncleared::new();
            b[4095][2].store(7 + round, Ordering::Relaxed);
            b[0][0].store(u64::MAX, Ordering::Relaxed);
            assert_eq!(b[4095][2].load(Ordering::Relaxed), 7 + round);
            assert_eq!(b[0][0].load(Ordering::Relaxed), u64::MAX);
        }
    }

    #[test]
    fn small_and_zero_sized_values_work_too() {
        let b: Uncleared<[AtomicU32; 8]> = Uncleared::new();
        b[7].store(3, Ordering::Relaxed);
        assert_eq!(b[7].load(Ordering::Relaxed), 3);
        let z: Uncleared<[AtomicU32; 0]> = Uncleared::new();
        assert_eq!(z.len(), 0);
    }
}
