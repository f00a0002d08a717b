//! Zero-filled memory mapped and faulted in at once, for the collector's event chunks (issue 44).
//!
//! A chunk built element by element cost a `memset` of its 96 KiB (24 instructions per captured
//! range, callgrind) on top of the kernel's own zero-fill, and then one page fault per 4 KiB as
//! the hot path first wrote each page (a third of a captured range's time on the dev VM). Here a
//! chunk is an anonymous private mapping made with `MAP_POPULATE`: the kernel hands over pages
//! that are already zero and already mapped, in the one `mmap` call that a thread's buffer makes
//! once per 4,096 events, so the path that writes the events neither clears memory nor faults.
//! Where the mapping fails (no memory, a seccomp filter) the value is built on the heap instead,
//! as before: slower, never lost.

use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize};

/// Types for which all-zero bytes are a valid value (the integers' atomics, arrays of them).
///
/// # Safety
/// An implementor must be valid when every byte of it is zero, and have no `Drop` of its own.
pub unsafe trait Zeroed: Sized {
    /// The value built in place, for the heap fallback.
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

/// A zero-filled `T` in pages of its own (or, where mapping failed, in a `Box`).
pub struct ZeroedBox<T: Zeroed> {
    ptr: NonNull<T>,
    /// Bytes mapped; 0 when `ptr` is a leaked `Box` (the fallback).
    mapped: usize,
}

// SAFETY: it owns its `T` as a `Box` would.
unsafe impl<T: Zeroed + Send> Send for ZeroedBox<T> {}
// SAFETY: as above.
unsafe impl<T: Zeroed + Sync> Sync for ZeroedBox<T> {}

impl<T: Zeroed> ZeroedBox<T> {
    /// A new zero `T`, its pages mapped and faulted in now.
    pub fn new() -> ZeroedBox<T> {
        let bytes = std::mem::size_of::<T>();
        if bytes > 0 && std::mem::align_of::<T>() <= page_size() {
            if let Some(ptr) = map_populated(bytes) {
                return ZeroedBox { ptr: ptr.cast(), mapped: bytes };
            }
        }
        ZeroedBox { ptr: NonNull::from(Box::leak(Box::new(T::zero()))), mapped: 0 }
    }

    /// Whether the value lives in a mapping of its own (false: the heap fallback).
    pub fn is_mapped(&self) -> bool {
        self.mapped != 0
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
        if self.mapped == 0 {
            // SAFETY: the fallback's pointer came from `Box::leak` and is dropped once.
            drop(unsafe { Box::from_raw(self.ptr.as_ptr()) });
        } else {
            // SAFETY: the mapping `map_populated` made for this box, unmapped once. `T` has no
            // drop glue (`Zeroed`).
            unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.mapped) };
        }
    }
}

impl<T: Zeroed> std::fmt::Debug for ZeroedBox<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZeroedBox").field("bytes", &std::mem::size_of::<T>()).field("mapped", &self.is_mapped()).finish()
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).ok().filter(|&n| n > 0).unwrap_or(4096)
}

/// `bytes` of zero pages, mapped and faulted in (`MAP_POPULATE`); `None` if the kernel refused.
fn map_populated(bytes: usize) -> Option<NonNull<u8>> {
    // SAFETY: an anonymous private mapping at an address of the kernel's choice touches no
    // existing memory.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return None;
    }
    NonNull::new(p.cast())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn a_mapped_value_is_zero_writable_and_unmapped_on_drop() {
        let b: ZeroedBox<[[AtomicU64; 3]; 4096]> = ZeroedBox::new();
        assert!(b.is_mapped(), "96 KiB of atomics maps on Linux");
        assert!(b.iter().flatten().all(|w| w.load(Ordering::Relaxed) == 0));
        b[4095][2].store(7, Ordering::Relaxed);
        assert_eq!(b[4095][2].load(Ordering::Relaxed), 7);
    }

    #[test]
    fn the_heap_fallback_is_zero_too() {
        let b = ZeroedBox { ptr: NonNull::from(Box::leak(Box::new(<[AtomicU32; 8]>::zero()))), mapped: 0 };
        assert!(!b.is_mapped());
        assert!(b.iter().all(|w| w.load(Ordering::Relaxed) == 0));
    }
}
