//! Writing what was captured before the process ends by a signal, and while it runs (issue 29).
//!
//! With an output set (`ROCTX_UTILS_XSPACE_OUT`, a roofline report path), start-up starts one
//! thread of ours, `roctx-flush`, that writes snapshots of the running capture: the XSpace of
//! the running session (one file per session, replaced whole each time) and the roofline report
//! (its path, replaced whole), each marked as holding only part of the run. It writes
//!
//! - when SIGINT, SIGTERM or SIGHUP arrives ([`roctx_sys::signals`]: the handler only wakes this
//!   thread), within [`END_WRITE_LIMIT`]; then the signal is passed on: the process ends by it,
//!   or the host's own handler runs (and if the host carries on, the exit writes complete files
//!   over these);
//! - every `ROCTX_UTILS_FLUSH_EVERY` seconds, so a SIGKILL loses at most that window;
//! - on SIGUSR1 and [`flush`] (`roctx_utils_flush`, which only asks this thread, so a host's
//!   own signal handler may call it).
//!
//! `ROCTX_UTILS_SIGNALS=0` installs no handler (the periodic snapshot and [`flush`] still work).
//! Our threads block every asynchronous signal, so a handler runs on a host thread, and a host
//! that waits for SIGTERM with `sigwait()` gets it. A handler the host installs after start-up
//! for one of the ending signals is found within [`REARM_EVERY`] and put behind ours again, so
//! that our write still comes first and the host's handler still runs after it.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use roctx_config::{log, Config};
use roctx_sys::signals::{self, name as signal_name, Doorbell, Request, Requests};

use crate::{export, listener};

/// How long the write at an ending signal may take before the signal is passed on anyway (the
/// process then ends with the files of the last snapshot, if any; a half-written file is never
/// visible). Below Slurm's and Kubernetes' default grace periods (30 s).
pub const END_WRITE_LIMIT: Duration = Duration::from_secs(10);

/// How often the thread looks for a handler the host installed over ours.
pub const REARM_EVERY: Duration = Duration::from_secs(1);

/// One write at a time: the thread's and the exit hooks' (see [`at_exit`]).
static WRITES: Mutex<()> = Mutex::new(());
/// [`flush`] calls so far, and the count the thread's last requested write covered (with
/// whether it wrote anything): a caller waits until its own call is covered.
static FLUSH_ASKED: AtomicU64 = AtomicU64::new(0);
static FLUSH_DONE: AtomicU64 = AtomicU64::new(0);
static FLUSH_WROTE: AtomicBool = AtomicBool::new(false);
/// A [`flush`] waited its whole limit and the thread has written nothing since: later calls
/// ask and return at once instead of waiting again (a host handler signalled in a burst while
/// its thread holds a lock the write needs would otherwise stall 10 s per signal).
static FLUSH_STUCK: AtomicBool = AtomicBool::new(false);
/// Set once the process exits: no snapshot after the exit hooks' complete files.
static EXITING: AtomicBool = AtomicBool::new(false);

/// Why a snapshot is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Why {
    Periodic,
    Requested,
    Ending(c_int),
}

impl Why {
    /// The mark the files carry (the roofline report's `cut_short`, an XSpace warning).
    fn mark(self) -> String {
        match self {
            Why::Periodic => format!("snapshot while the process ran ({}): what was captured until then", roctx_config::FLUSH_EVERY),
            Why::Requested => "snapshot on request (SIGUSR1 or roctx_utils_flush) while the process ran: what was captured until then".to_owned(),
            Why::Ending(sig) => format!("cut short by {}: what was captured until the process ended by it", signal_name(sig)),
        }
    }

    /// For the line that says a snapshot was written.
    fn short(self) -> String {
        match self {
            Why::Periodic => "periodic snapshot".to_owned(),
            Why::Requested => "snapshot on request".to_owned(),
            Why::Ending(sig) => format!("cut short by {}", signal_name(sig)),
        }
    }
}

/// Start-up step 5: the handlers and the thread, when there is an output to write.
pub(super) fn start(config: &Config) {
    // The runtime's start-up and the rocprofiler-sdk tool library's initialize both ask.
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| start_once(config));
}

fn start_once(config: &Config) {
    let outputs = config.xspace_out.is_some() || config.roofline_out.is_some();
    if !outputs || roctx_sys::os::is_fork_child() {
        if !outputs && config.flush_every.is_some() {
            log::info(format_args!("{} is set but no output is (ROCTX_UTILS_XSPACE_OUT, a roofline report path): nothing to snapshot", roctx_config::FLUSH_EVERY));
        }
        return;
    }
    let every = config.flush_every;
    let rearm = config.signals;
    let started = (|| {
        let requests = Requests::new()?;
        // Both live for the process: never joined, and their handles dropped here own nothing
        // the threads still read.
        let watch: &'static Watch = Box::leak(Box::new(Watch { armed: Doorbell::new()?, done: Doorbell::new()? }));
        // Our threads block the signals (roctx_sys::os::with_signals_blocked): the handler runs
        // on a host thread, and a host that waits for them with sigwait() gets them.
        roctx_sys::os::with_signals_blocked(|| {
            std::thread::Builder::new().name("roctx-flush-watch".into()).spawn(move || watchdog(watch))?;
            std::thread::Builder::new().name("roctx-flush".into()).spawn(move || run(&requests, every, rearm, watch))
        })
    })();
    if let Err(e) = started {
        log::warn(format_args!("no pipe or thread for signals ({e}): a run ended by SIGINT/SIGTERM writes nothing, and no periodic snapshot is written"));
        return;
    }
    roctx_sys::os::at_exit(at_exit);
    if config.signals {
        let installed = signals::install(true);
        let left: Vec<String> = installed.left.iter().map(|(sig, why)| format!("{} ({why})", signal_name(*sig))).collect();
        log::info(format_args!(
            "signals: writing what was captured at {}{}",
            installed.taken.iter().map(|&s| signal_name(s)).collect::<Vec<_>>().join(", "),
            if left.is_empty() { String::new() } else { format!("; left to the host: {}", left.join(", ")) }
        ));
    }
}

/// The thread: waits for a request or the period, writes; puts our handlers back in front of
/// ones the host installed over them (when `rearm`).
fn run(requests: &Requests, every: Option<Duration>, rearm: bool, watch: &Watch) {
    let mut next = every.map(|e| std::time::Instant::now() + e);
    loop {
        let now = std::time::Instant::now();
        let until_next = next.map(|n| n.saturating_duration_since(now));
        let timeout = if rearm { Some(until_next.map_or(REARM_EVERY, |d| d.min(REARM_EVERY))) } else { until_next };
        match requests.wait(timeout) {
            None => {
                if rearm {
                    rearm_handlers();
                }
                if let (Some(at), Some(e)) = (next, every) {
                    if std::time::Instant::now() >= at {
                        roctx_sys::guard((), || {
                            write(Why::Periodic);
                        });
                        next = Some(std::time::Instant::now() + e);
                    }
                }
            }
            Some(Request::Flush) => {
                // Every flush() counted by now is covered by this write.
                let asked = FLUSH_ASKED.load(Ordering::Acquire);
                let wrote = roctx_sys::guard(false, || write(Why::Requested));
                FLUSH_WROTE.store(wrote, Ordering::Release);
                FLUSH_DONE.fetch_max(asked, Ordering::AcqRel);
                FLUSH_STUCK.store(false, Ordering::Release);
            }
            Some(Request::End(sig)) => end(sig, watch),
        }
    }
}

fn rearm_handlers() {
    for sig in signals::rearm() {
        log::info(format_args!(
            "signals: the process installed its own {} handler after start-up; ours runs first again (writing what was captured), then its own",
            signal_name(sig)
        ));
    }
}

/// An ending signal: write, then pass the signal on; the watchdog passes it on instead if the
/// write takes more than [`END_WRITE_LIMIT`].
fn end(sig: c_int, watch: &Watch) {
    let then = if signals::host_handles(sig) { "then passing it to the process's own handler" } else { "then ending as it asks" };
    log::result(format_args!("{}: writing what was captured, {then} (another one a second from now ends the process at once)", signal_name(sig)));
    PASSED.store(false, Ordering::Release);
    // CAST: the ending signals are 1, 2 and 15.
    watch.armed.ring(sig as u8);
    roctx_sys::guard((), || {
        write(Why::Ending(sig));
    });
    watch.done.ring(0);
    pass_on_once(sig);
}

/// The watchdog of the ending write, started with the writer thread: a thread stopped inside a
/// vendor call holding a lock the write needs, or a slow disk, must not keep the process from
/// ending. Pipes between the two, so they share no memory (TSan cannot see Rust's own
/// synchronisation: its std is not instrumented).
struct Watch {
    armed: Doorbell,
    done: Doorbell,
}

fn watchdog(watch: &Watch) {
    loop {
        let Some(sig) = watch.armed.wait(None) else { continue };
        if watch.done.wait(Some(END_WRITE_LIMIT)).is_none() {
            let sig = c_int::from(sig);
            log::warn(format_args!("{}: the write did not finish within {} s; ending without it (no partial file is left visible)", signal_name(sig), END_WRITE_LIMIT.as_secs()));
            pass_on_once(sig);
        }
    }
}

/// Set by whichever of the writer and the watchdog passes the current ending signal on.
static PASSED: AtomicBool = AtomicBool::new(false);

fn pass_on_once(sig: c_int) {
    if !PASSED.swap(true, Ordering::AcqRel) {
        signals::pass_on(sig);
    }
}

/// What [`flush`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flushed {
    /// The snapshot was written.
    Written,
    /// Nothing to write: no output, no thread of ours (the library not started, a `fork()`
    /// child), or the process is exiting.
    Nothing,
    /// Asked for, but not written within [`END_WRITE_LIMIT`]; the thread writes it when it can.
    Pending,
}

/// A snapshot of every output now (`roctx_utils_flush`): asks the `roctx-flush` thread, as
/// SIGUSR1 does, and waits for its write, at most [`END_WRITE_LIMIT`]. Async-signal-safe (atomics,
/// one `write`, `nanosleep`), so a host's signal handler may call it: it never starts the library,
/// never takes a lock and never writes itself, where the interrupted thread may hold what a write
/// needs. From a handler whose thread holds such a lock the wait runs out (`Pending`), and the
/// thread writes once the handler has returned; until it has, later calls return `Pending` at
/// once.
pub fn flush() -> Flushed {
    if EXITING.load(Ordering::Acquire) {
        return Flushed::Nothing;
    }
    let mine = FLUSH_ASKED.fetch_add(1, Ordering::AcqRel) + 1;
    if !signals::request_flush() {
        return Flushed::Nothing;
    }
    if FLUSH_STUCK.load(Ordering::Acquire) {
        return Flushed::Pending;
    }
    let deadline = signals::monotonic_ns().saturating_add(u64::try_from(END_WRITE_LIMIT.as_nanos()).unwrap_or(u64::MAX));
    loop {
        if FLUSH_DONE.load(Ordering::Acquire) >= mine {
            return if FLUSH_WROTE.load(Ordering::Acquire) { Flushed::Written } else { Flushed::Nothing };
        }
        if signals::monotonic_ns() >= deadline {
            FLUSH_STUCK.store(true, Ordering::Release);
            return Flushed::Pending;
        }
        signals::nap(1);
    }
}

fn write(why: Why) -> bool {
    let _one = WRITES.lock().unwrap_or_else(PoisonError::into_inner);
    if EXITING.load(Ordering::Acquire) {
        return false;
    }
    let mark = why.mark();
    let mut wrote = false;
    if let Some(path) = super::roofline::own_path() {
        wrote |= super::roofline::write_marked(&path, Some(&mark), why == Why::Periodic, matches!(why, Why::Ending(_)));
    }
    if roctx_config::get().xspace_out.is_some() && roctx_collector::active() {
        // The SDK never delivers by itself: what it holds is part of the snapshot.
        if matches!(why, Why::Ending(_)) {
            listener::kernels::flush_final();
        } else {
            listener::kernels::flush();
        }
        let snapshot = roctx_collector::snapshot();
        let mut t = super::xprof::trace(&snapshot);
        t.warnings.push(mark);
        if let Some(path) = export::write_snapshot(&t) {
            let line = format!("wrote {} ROCTX events so far to {} ({})", snapshot.events.len(), path.display(), why.short());
            if why == Why::Periodic { log::info(format_args!("{line}")) } else { log::result(format_args!("{line}")) }
            wrote = true;
        }
    }
    wrote
}

/// At exit (registered after the other exit hooks, so it runs before them): no snapshot from now
/// on, and one in progress is waited for, so the exit hooks' complete files come last.
extern "C" fn at_exit() {
    EXITING.store(true, Ordering::Release);
    drop(WRITES.lock().unwrap_or_else(PoisonError::into_inner));
}
