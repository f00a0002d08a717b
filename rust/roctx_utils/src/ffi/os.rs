//! The two OS calls the collector makes: the clock and the thread id.

use std::cell::Cell;

/// `clock_gettime(CLOCK_BOOTTIME)` in ns (a vDSO call, no syscall on Linux >= 5.x).
#[inline]
pub fn boottime_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_BOOTTIME exists on every Linux we run on.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    if rc != 0 {
        return 0;
    }
    // CAST: both fields are non-negative for CLOCK_BOOTTIME.
    (ts.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(ts.tv_nsec as u64)
}

thread_local! {
    static TID: Cell<u64> = const { Cell::new(0) };
}

/// The calling thread's OS id (`gettid`), cached per thread: one syscall per thread, ever.
#[inline]
pub fn current_tid() -> u64 {
    TID.try_with(|cell| {
        if cell.get() == 0 {
            cell.set(gettid());
        }
        cell.get()
    })
    .unwrap_or_else(|_| gettid())
}

fn gettid() -> u64 {
    // SAFETY: gettid has no preconditions and cannot fail.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) };
    // CAST: thread ids are positive.
    tid as u64
}
