//! SIGINT, SIGTERM, SIGHUP and SIGUSR1 turned into requests for a thread of ours (issue 29).
//!
//! The handler does only what is async-signal-safe: it writes one byte to a pipe and returns,
//! so the interrupted thread carries on (and releases whatever lock it held) while the runtime's
//! thread ([`Requests::wait`]) writes what was captured. Then [`pass_on`] puts the disposition
//! the process had before us back and sends the signal again: with the default one the process
//! ends by that signal (its exit status is the signal's), with the host's own handler that
//! handler runs, in signal context, as if we were not there.
//!
//! - A signal the process ignores is never taken over; SIGUSR1 only where nobody handles it
//!   (its default is to end the process).
//! - A second SIGINT/SIGTERM/SIGHUP while the first is being written stops at once: the handler
//!   itself puts the old disposition back and raises (default) or calls the host's handler. One
//!   within a second of the first is taken for the first delivered twice (a process group's
//!   signal reaches a command directly and through `roctx record`) and absorbed.
//!   Our files are written to hidden temporaries renamed into place, so no partial file is ever
//!   visible under an output name.
//! - A `fork()` child inherits the handlers but not the thread: there the handler stops at once
//!   too (the pid it was installed in is not the child's).

use std::os::fd::RawFd;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU64, Ordering};
use std::time::Duration;

use libc::c_int;

/// The signal that asks for a snapshot now.
pub const FLUSH: c_int = libc::SIGUSR1;
const ALL: [c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGUSR1];

/// What the runtime's thread is asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// Write a snapshot (SIGUSR1).
    Flush,
    /// Write what was captured, then [`pass_on`] this signal.
    End(c_int),
}

/// The disposition each signal had before ours, by [`ALL`]'s index (null: not ours). Each is a
/// leaked `sigaction`, written whole before its pointer is published and never written again,
/// so the handler reads it without a lock; [`rearm`] publishes a new one when the host
/// replaced ours (a handful per process at most).
static PREVIOUS: [AtomicPtr<libc::sigaction>; 4] =
    [AtomicPtr::new(ptr::null_mut()), AtomicPtr::new(ptr::null_mut()), AtomicPtr::new(ptr::null_mut()), AtomicPtr::new(ptr::null_mut())];
/// [`install`] ran (once per process).
static INSTALLED: AtomicBool = AtomicBool::new(false);
/// The pipe's write end (-1: none), and the pid that installed the handlers.
static WRITE_FD: AtomicI32 = AtomicI32::new(-1);
static OWNER: AtomicI32 = AtomicI32::new(0);
/// An ending signal is being written for, since this `CLOCK_MONOTONIC` time.
static ENDING_NOW: AtomicBool = AtomicBool::new(false);
static FIRST_NS: AtomicU64 = AtomicU64::new(0);
/// A second ending signal this soon after the first is the same one delivered twice.
const SAME_SIGNAL_NS: u64 = 1_000_000_000;

/// `clock_gettime(CLOCK_MONOTONIC)` in ns (async-signal-safe).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    // CAST: both fields are non-negative for CLOCK_MONOTONIC.
    (ts.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec as u64)
}

/// The receiving end of the handlers' pipe.
#[derive(Debug)]
pub struct Requests {
    read: RawFd,
}

/// The signals [`install`] took over, and the ones it left to the host (with why).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Installed {
    /// Signals whose disposition is now ours.
    pub taken: Vec<c_int>,
    /// (signal, "ignored" / "handled by the host") for the ones left alone.
    pub left: Vec<(c_int, &'static str)>,
}

impl Requests {
    /// A pipe for the handlers (and nothing installed yet).
    pub fn new() -> std::io::Result<Requests> {
        let (read, write) = pipe()?;
        // SAFETY: getpid cannot fail.
        OWNER.store(unsafe { libc::getpid() }, Ordering::Release);
        WRITE_FD.store(write, Ordering::Release);
        Ok(Requests { read })
    }

    /// The next request, or `None` when `timeout` passes first (never, without one).
    pub fn wait(&self, timeout: Option<Duration>) -> Option<Request> {
        wait_byte(self.read, timeout).map(|byte| if byte == 0 { Request::Flush } else { Request::End(c_int::from(byte)) })
    }
}

/// A pipe between two threads of ours that carries one byte per ring: no heap memory is shared
/// (the watchdog of an ending write, [`Doorbell::wait`] with a timeout).
#[derive(Debug)]
pub struct Doorbell {
    read: RawFd,
    write: RawFd,
}

impl Doorbell {
    /// A new pipe.
    pub fn new() -> std::io::Result<Doorbell> {
        let (read, write) = pipe()?;
        Ok(Doorbell { read, write })
    }

    /// Rings with `byte` (dropped if the pipe is full: rings are waited for one at a time).
    pub fn ring(&self, byte: u8) {
        // SAFETY: one readable byte.
        unsafe { libc::write(self.write, (&byte as *const u8).cast(), 1) };
    }

    /// The next ring's byte, or `None` when `timeout` passes first (never, without one).
    pub fn wait(&self, timeout: Option<Duration>) -> Option<u8> {
        wait_byte(self.read, timeout)
    }
}

/// A pipe (read end, write end), both ends non-blocking (a handler never waits on a full pipe)
/// and closed at `exec`.
fn pipe() -> std::io::Result<(RawFd, RawFd)> {
    let mut fds = [0 as c_int; 2];
    // SAFETY: a valid two-int array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((fds[0], fds[1]))
}

fn wait_byte(fd: RawFd, timeout: Option<Duration>) -> Option<u8> {
    let deadline = timeout.map(|t| std::time::Instant::now() + t);
    loop {
        let ms = match deadline {
            None => -1,
            Some(d) => {
                let left = d.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    return None;
                }
                // CAST: clamped to a day (FLUSH_EVERY's most), rounded up so we never spin.
                left.as_millis().clamp(1, 86_400_000) as c_int
            }
        };
        let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        if unsafe { libc::poll(&mut p, 1, ms) } <= 0 {
            continue; // EINTR, or the timeout (checked above)
        }
        let mut byte = 0u8;
        // SAFETY: one writable byte.
        if unsafe { libc::read(fd, (&mut byte as *mut u8).cast(), 1) } == 1 {
            return Some(byte);
        }
    }
}

/// Installs the handler for SIGINT, SIGTERM and SIGHUP, and SIGUSR1 when `flush` is true,
/// wherever the process does not ignore them (and, for SIGUSR1, does not handle it). Call once,
/// after [`Requests::new`].
pub fn install(flush: bool) -> Installed {
    let mut installed = Installed::default();
    if INSTALLED.swap(true, Ordering::AcqRel) {
        return installed;
    }
    let mut previous: [Option<libc::sigaction>; 4] = [None; 4];
    // SAFETY: getpid cannot fail.
    OWNER.store(unsafe { libc::getpid() }, Ordering::Release);
    for (i, &sig) in ALL.iter().enumerate() {
        if sig == FLUSH && !flush {
            continue;
        }
        // SAFETY: a zeroed sigaction is a valid out-parameter.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: a null new action only reads the current one.
        if unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } != 0 {
            continue;
        }
        if old.sa_sigaction == libc::SIG_IGN {
            installed.left.push((sig, "ignored"));
            continue;
        }
        if sig == FLUSH && old.sa_sigaction != libc::SIG_DFL {
            installed.left.push((sig, "handled by the host"));
            continue;
        }
        previous[i] = Some(old);
    }
    for (i, &sig) in ALL.iter().enumerate() {
        let Some(old) = previous[i] else { continue };
        PREVIOUS[i].store(Box::into_raw(Box::new(old)), Ordering::Release);
        if take(sig) {
            installed.taken.push(sig);
        }
    }
    installed
}

/// Our handler's address, as `sigaction` reports it.
fn ours() -> usize {
    on_signal as extern "C" fn(c_int, *mut libc::siginfo_t, *mut libc::c_void) as usize
}

/// Makes our handler `sig`'s disposition.
fn take(sig: c_int) -> bool {
    // SAFETY: a zeroed sigaction with our handler, SA_SIGINFO (its signature) and SA_RESTART
    // (the interrupted thread's calls go on as without us).
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = ours();
        action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(sig, &action, ptr::null_mut()) == 0
    }
}

/// The signals whose handler the host replaced with one of its own since we installed ours
/// (a trainer calling `signal.signal(SIGTERM, ...)` after start-up): ours is made their
/// disposition again, with the host's new handler as the one [`pass_on`] and a second signal
/// run, so the host's handler still runs, after the write. A disposition the host set to the
/// default or to ignore is left as it is (it asked for that), and so is the one [`pass_on`] put
/// back. Called from the runtime's thread, about once a second; not from a handler.
pub fn rearm() -> Vec<c_int> {
    let mut rearmed = Vec::new();
    if !INSTALLED.load(Ordering::Acquire) {
        return rearmed;
    }
    for (i, &sig) in ALL.iter().enumerate() {
        let Some(before) = previous(sig) else { continue };
        // SAFETY: a zeroed sigaction is a valid out-parameter; a null new action only reads.
        let mut now: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if unsafe { libc::sigaction(sig, ptr::null(), &mut now) } != 0 {
            continue;
        }
        let handler = now.sa_sigaction;
        if handler == ours() || handler == libc::SIG_DFL || handler == libc::SIG_IGN || handler == before.sa_sigaction {
            continue;
        }
        PREVIOUS[i].store(Box::into_raw(Box::new(now)), Ordering::Release);
        if take(sig) {
            rearmed.push(sig);
        }
    }
    rearmed
}

/// Asks the runtime's thread for a snapshot, as SIGUSR1 does: one byte down the handlers' pipe.
/// Async-signal-safe (a `getpid` and a `write`), so a host's own signal handler may call it.
/// False where there is no thread of ours to ask (none started, or a `fork()` child).
pub fn request_flush() -> bool {
    // SAFETY: getpid is async-signal-safe.
    OWNER.load(Ordering::Acquire) == unsafe { libc::getpid() } && send(0)
}

/// Sleeps `ms` milliseconds with `nanosleep`, which is async-signal-safe (a wait from a signal
/// handler).
pub fn nap(ms: u32) {
    let ts = libc::timespec { tv_sec: libc::time_t::from(ms / 1000), tv_nsec: libc::c_long::from(ms % 1000) * 1_000_000 };
    // SAFETY: a valid timespec; the remainder is not wanted (an interrupted nap is shorter).
    unsafe { libc::nanosleep(&ts, ptr::null_mut()) };
}

/// Whether the process ignores `sig` now (`nohup`'s SIGHUP, a shell's background job's SIGINT).
pub fn ignored(sig: c_int) -> bool {
    // SAFETY: a zeroed sigaction is a valid out-parameter; a null new action only reads.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
    }
}

/// Whether the host had its own handler for `sig` when we installed ours.
pub fn host_handles(sig: c_int) -> bool {
    previous(sig).is_some_and(|old| old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN)
}

/// Puts back the disposition `sig` had before us and sends it to the process again: the
/// process ends by it (default) or the host's handler runs. Our handler is gone for `sig`
/// afterwards; the other signals keep theirs.
pub fn pass_on(sig: c_int) {
    if let Some(old) = previous(sig) {
        // SAFETY: the sigaction the process had.
        unsafe { libc::sigaction(sig, &old, ptr::null_mut()) };
    }
    FIRST_NS.store(0, Ordering::Release);
    ENDING_NOW.store(false, Ordering::Release);
    // SAFETY: a signal to our own pid.
    unsafe { libc::kill(libc::getpid(), sig) };
}

/// The signal's name, for messages.
pub fn name(sig: c_int) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        libc::SIGUSR1 => "SIGUSR1",
        _ => "a signal",
    }
}

fn previous(sig: c_int) -> Option<libc::sigaction> {
    let i = ALL.iter().position(|&s| s == sig)?;
    let p = PREVIOUS[i].load(Ordering::Acquire);
    // SAFETY: null, or a leaked sigaction written whole before it was published and never
    // written or freed after.
    (!p.is_null()).then(|| unsafe { *p })
}

fn send(byte: u8) -> bool {
    let fd = WRITE_FD.load(Ordering::Acquire);
    // SAFETY: one readable byte; write(2) is async-signal-safe, and the end is non-blocking (a
    // full pipe drops the byte: requests already wait there).
    fd >= 0 && unsafe { libc::write(fd, (&byte as *const u8).cast(), 1) } == 1
}

extern "C" fn on_signal(sig: c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    // Only async-signal-safe calls below, and errno kept for the interrupted code.
    // SAFETY: errno's location is the thread's.
    let errno = unsafe { *libc::__errno_location() };
    // SAFETY: getpid is async-signal-safe.
    let ours = OWNER.load(Ordering::Acquire) == unsafe { libc::getpid() };
    if sig == FLUSH {
        if !ours || !send(0) {
            stop_now(sig, info, context);
        }
    } else if ours && ENDING_NOW.swap(true, Ordering::AcqRel) {
        // A second one while writing: at once, unless it is the first one again (`timeout` and
        // a terminal's Ctrl-C signal the whole process group: the command gets it directly and
        // through `roctx record`, microseconds apart).
        let first = FIRST_NS.load(Ordering::Acquire);
        if first != 0 && monotonic_ns().saturating_sub(first) >= SAME_SIGNAL_NS {
            stop_now(sig, info, context);
        }
    } else {
        FIRST_NS.store(monotonic_ns(), Ordering::Release);
        if !ours || !send(sig as u8) {
            // A fork child (no thread of ours), or no pipe.
            stop_now(sig, info, context);
        }
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

/// What the process would have done at `sig` without us, now, from the handler.
fn stop_now(sig: c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    let Some(old) = previous(sig) else { return };
    if old.sa_sigaction == libc::SIG_DFL {
        // SAFETY: back to the default, then raised: pending (blocked while we handle it), it
        // ends the process as soon as this handler returns.
        unsafe {
            libc::sigaction(sig, &old, std::ptr::null_mut());
            libc::raise(sig);
        }
    } else if old.sa_sigaction != libc::SIG_IGN {
        // SAFETY: the host's handler, called as the kernel would have (with its siginfo and
        // context when it asked for them).
        unsafe {
            if old.sa_flags & libc::SA_SIGINFO != 0 {
                let f: extern "C" fn(c_int, *mut libc::siginfo_t, *mut libc::c_void) = std::mem::transmute(old.sa_sigaction);
                f(sig, info, context);
            } else {
                let f: extern "C" fn(c_int) = std::mem::transmute(old.sa_sigaction);
                f(sig);
            }
        }
    }
}
