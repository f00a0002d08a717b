//! The OS calls: the clock (what every timestamp is), the thread id, the host name, `atexit`,
//! `pthread_atfork`, and the signal mask our threads start with.

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

// SAFETY: the only slot with this word.
static TID: crate::tls::Slot<Cell<u64>, { crate::tls::SlotId::Tid as usize }> =
    unsafe { crate::tls::Slot::new(|| Cell::new(gettid())) };

/// The calling thread's OS id (`gettid`), cached per thread: one syscall per thread, ever.
#[inline]
pub fn current_tid() -> u64 {
    TID.with(Cell::get).unwrap_or_else(gettid)
}

fn gettid() -> u64 {
    // SAFETY: gettid has no preconditions and cannot fail.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) };
    // CAST: thread ids are positive.
    tid as u64
}

/// `CLOCK_REALTIME` in ns (wall clock, what XLA's host planes use).
pub fn realtime_ns() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: as in boottime_ns.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec.saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec)
}

/// This machine's host name, or "localhost".
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is writable for its length; gethostname NUL-terminates when it fits.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len() - 1) };
    let end = buf.iter().position(|&b| b == 0).unwrap_or(0);
    if rc != 0 || end == 0 {
        return "localhost".to_owned();
    }
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Runs `f` at normal process exit (libc `atexit`), once.
pub fn at_exit(f: extern "C" fn()) {
    // SAFETY: `f` is a plain function with the signature atexit expects; registering can only
    // fail on allocation failure, in which case nothing runs at exit.
    unsafe {
        libc::atexit(f);
    }
}

/// Registers `pthread_atfork` handlers: `prepare` runs in the forking thread before `fork()`,
/// `parent` and `child` after it, in the parent and in the (single-threaded) child. Returns
/// false if libc could not register them (out of memory).
pub fn at_fork(prepare: extern "C" fn(), parent: extern "C" fn(), child: extern "C" fn()) -> bool {
    // SAFETY: the three are plain functions with the signature pthread_atfork expects, and
    // live for the whole process.
    unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) == 0 }
}

/// In a fork child: the calling thread (the only one) has a new OS id; cache that one.
pub fn forget_cached_tid() {
    let _ = TID.with(|cell| cell.set(gettid()));
}

/// Whether a process with id `pid` exists on this host (`kill(pid, 0)`: only ESRCH says no; a
/// process we may not signal exists).
pub fn process_exists(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that `pid` can be signalled; nothing is sent.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// The pid of the process that started up (0: not yet); a `fork()` child inherits it.
static START_PID: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Records this process's pid at start-up (the first call wins).
pub fn note_start_pid() {
    let _ = START_PID.compare_exchange(0, std::process::id(), std::sync::atomic::Ordering::AcqRel, std::sync::atomic::Ordering::Acquire);
}

/// Whether this process is a `fork()` child of the one that started up: it inherited the
/// parent's configuration (its rank, its report path), which names the parent's files.
pub fn is_fork_child() -> bool {
    let start = START_PID.load(std::sync::atomic::Ordering::Acquire);
    start != 0 && start != std::process::id()
}

/// The signals a thread of ours keeps unblocked: the ones the kernel sends to the thread that
/// caused them (a fault, `abort`), which must still end or reach a debugger as they would.
const SYNCHRONOUS: [libc::c_int; 7] =
    [libc::SIGSEGV, libc::SIGBUS, libc::SIGFPE, libc::SIGILL, libc::SIGTRAP, libc::SIGSYS, libc::SIGABRT];

/// Runs `spawn` (which creates a thread) with every asynchronous signal blocked in the calling
/// thread, then puts the caller's mask back: the new thread starts with them blocked and keeps
/// them so. Every thread the library starts goes through here, so that a process-directed
/// signal (SIGTERM, SIGINT, SIGHUP, SIGUSR1, ...) is never delivered to one of ours: it goes to
/// a host thread that does not block it, or stays pending for the host's `sigwait()` when all
/// of the host's threads block it (issue 40). A signal sent to the caller meanwhile stays
/// pending until the mask is restored.
pub fn with_signals_blocked<T>(spawn: impl FnOnce() -> T) -> T {
    struct Restore(Option<libc::sigset_t>);
    impl Drop for Restore {
        fn drop(&mut self) {
            if let Some(old) = &self.0 {
                // SAFETY: the mask pthread_sigmask returned for this thread.
                unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, old, std::ptr::null_mut()) };
            }
        }
    }
    // SAFETY: zeroed sigset_t values are valid out-parameters; sigfillset/sigdelset only write
    // the set; pthread_sigmask changes this thread's mask (glibc keeps its own internal signals
    // out of any set it is given) and fills `old`.
    let restore = unsafe {
        let mut blocked: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut blocked);
        for sig in SYNCHRONOUS {
            libc::sigdelset(&mut blocked, sig);
        }
        Restore((libc::pthread_sigmask(libc::SIG_BLOCK, &blocked, &mut old) == 0).then_some(old))
    };
    let out = spawn();
    drop(restore);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocked(sig: libc::c_int) -> bool {
        // SAFETY: a zeroed sigset_t out-parameter; a null new set only reads the mask.
        unsafe {
            let mut mask: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut mask);
            libc::sigismember(&mask, sig) == 1
        }
    }

    #[test]
    fn a_thread_started_with_signals_blocked_blocks_the_asynchronous_ones_and_the_caller_gets_its_mask_back() {
        let before: Vec<bool> = [libc::SIGTERM, libc::SIGINT].iter().map(|&s| blocked(s)).collect();
        let seen = with_signals_blocked(|| {
            std::thread::spawn(|| {
                [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGUSR1, libc::SIGUSR2, libc::SIGALRM, libc::SIGCHLD, libc::SIGPIPE]
                    .iter()
                    .all(|&s| blocked(s))
                    && SYNCHRONOUS.iter().all(|&s| !blocked(s))
            })
        })
        .join()
        .unwrap();
        assert!(seen, "the new thread must block every asynchronous signal and no synchronous one");
        let after: Vec<bool> = [libc::SIGTERM, libc::SIGINT].iter().map(|&s| blocked(s)).collect();
        assert_eq!(before, after, "the caller's mask is put back");
    }
}
