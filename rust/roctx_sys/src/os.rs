//! The OS calls: the clock (what every timestamp is), the thread id, the host name, `atexit`
//! and `pthread_atfork`.

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

/// In a fork child: the calling thread (the only one) has a new OS id; forget the cached one.
pub fn forget_cached_tid() {
    let _ = TID.try_with(|cell| cell.set(0));
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
