//! Capture windows: sessions that open and close while the process runs, at a range's push and
//! pop (`--capture-range=range:NAME`), at the profiler API's start and stop, or when a caller
//! says so (a timer, `roctx_utils_capture_start`), instead of one session from start-up to exit.
//!
//! The collector decides *when* (it sees every push and pop, whichever source made it: the
//! emitter's sink or the listener's SDK callbacks); the runtime decides *what else happens*
//! (kernel tracing on and off, writing each closed window), through the one observer it gives
//! [`configure`] — the same shape as an `atexit` hook: a function pointer handed down, never a
//! name of the layer above.
//!
//! - Outside a window the collector's session is stopped and the in-process sink returns before
//!   the clock and the thread's buffer (two loads), after, while a range trigger waits, a length
//!   and tail compare of each pushed label (two more loads; the trigger's lock only on a label
//!   that ends like the name). Each thread's range stack starts empty in a window: a pop with
//!   nothing open there is a range begun before the window, counted as such.
//! - A range open when a window opens is not recorded (it was not seen to begin); a range still
//!   open when a window closes is recorded as ending there, and its thread gets one mark at that
//!   instant saying how many were closed ([`CLOSED_MARK`]).
//! - Each window is its own session (its own session number, counters and [`Snapshot`]).

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::{lock, CaptureMode, SessionOptions, Snapshot};

/// A range trigger waits: pushes are compared with it.
pub(crate) const WAITING: u8 = 1;
/// A window a range opened is open: pops are compared with its push.
pub(crate) const WATCHING: u8 = 2;
/// Windows are configured: each thread publishes its open recorded ranges, so a window's end
/// can close them.
pub(crate) const PUBLISH: u8 = 4;
/// `roctxProfilerPause(0)`/`Resume(0)` close and open windows.
pub(crate) const API: u8 = 8;

static FLAGS: AtomicU8 = AtomicU8::new(0);
/// The range trigger's label length and its last (up to) 8 bytes, for the lock-free compare.
static TAIL_LEN: AtomicUsize = AtomicUsize::new(usize::MAX);
static TAIL: AtomicU64 = AtomicU64::new(0);
/// The open range window's push: its thread and push number.
static TRIGGER_TID: AtomicU64 = AtomicU64::new(0);
static TRIGGER_SEQ: AtomicU32 = AtomicU32::new(0);

/// The beginning of the mark a window's end leaves on a thread whose ranges it closed.
pub const CLOSED_MARK: &str = "capture window ended";

/// What opens a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opener {
    /// The first push of the trigger range.
    Range,
    /// The profiler API: `cudaProfilerStart`, `hipProfilerStart`, `roctxProfilerResume(0)`,
    /// `roctx_utils_capture_start`.
    Api,
    /// The caller (a timer: `--delay`, `--duration` without a capture range).
    Caller,
}

/// Why a window closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// The trigger range popped.
    RangeEnded,
    /// The profiler API's stop.
    Api,
    /// Its duration ran out.
    Duration,
    /// The process is exiting.
    Exit,
}

impl CloseReason {
    /// In words, for the trace's note.
    pub fn words(self) -> &'static str {
        match self {
            CloseReason::RangeEnded => "its range ended",
            CloseReason::Api => "the profiler API stopped it",
            CloseReason::Duration => "its duration ran out",
            CloseReason::Exit => "the process exited while it was open",
        }
    }
}

/// A window opened or closed, for the observer.
#[derive(Debug)]
pub enum Change {
    /// Window `window` (from 1) opened, as session `session`; its first event is not yet
    /// recorded (the observer runs before the push that opened it is).
    Opened {
        /// The window's number, from 1.
        window: u32,
        /// What opened it.
        by: Opener,
    },
    /// Window `window` closed; what it recorded.
    Closed {
        /// The window's number, from 1.
        window: u32,
        /// Why.
        why: CloseReason,
        /// Its events, ranges still open closed at its end.
        snapshot: Box<Snapshot>,
    },
}

/// The range whose push opens a window and whose pop closes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeTrigger {
    /// The range's message.
    pub name: Box<[u8]>,
    /// Only ranges of this NVTX domain (labels `<domain>: <name>`); `None`: any.
    pub domain: Option<Box<[u8]>>,
}

impl RangeTrigger {
    /// Whether a range labelled `label` is this trigger's.
    pub fn matches(&self, label: &[u8]) -> bool {
        let name = &*self.name;
        let Some(prefix) = label.strip_suffix(name) else { return false };
        match &self.domain {
            Some(domain) => prefix.strip_suffix(b": ") == Some(&**domain),
            None => prefix.is_empty() || prefix.ends_with(b": "),
        }
    }
}

/// What [`configure`] arms.
#[derive(Debug, Clone)]
pub struct Plan {
    /// A range whose push opens a window and whose pop closes it.
    pub range: Option<RangeTrigger>,
    /// Whether `roctxProfilerResume(0)`/`Pause(0)` open and close windows (the profiler API's
    /// other calls reach [`open`] and [`close`] through the runtime).
    pub profiler_api: bool,
    /// At most this many windows (`None`: no limit).
    pub max_windows: Option<u32>,
    /// Each window's session options.
    pub options: SessionOptions,
    /// Each window's capture mode.
    pub mode: CaptureMode,
}

pub(crate) struct State {
    plan: Option<Plan>,
    observer: Option<fn(Change)>,
    opened: u32,
    open: Option<u32>,
}

/// The windows' state; in the collector's lock order before the session lock (opening and
/// closing a window start and stop a session under it).
pub(crate) static STATE: Mutex<State> = Mutex::new(State { plan: None, observer: None, opened: 0, open: None });

#[inline(always)]
pub(crate) fn flags() -> u8 {
    FLAGS.load(Ordering::Relaxed)
}

/// Arms windows: from now on sessions start and stop at `plan`'s triggers and [`open`]/[`close`],
/// and `observer` hears of each (on the thread that caused it, in order, under the windows' lock:
/// it must not call back into this module). A session already running is left alone and counts
/// as no window. Calling it again replaces the plan and starts the window count over.
pub fn configure(plan: Plan, observer: fn(Change)) {
    let mut state = lock(&STATE);
    let mut flags = PUBLISH;
    if let Some(trigger) = &plan.range {
        let tail = &trigger.name[trigger.name.len().saturating_sub(8)..];
        TAIL.store(tail_word(tail), Ordering::Relaxed);
        TAIL_LEN.store(tail.len(), Ordering::Relaxed);
        flags |= WAITING;
    }
    if plan.profiler_api {
        flags |= API;
    }
    state.plan = Some(plan);
    state.observer = Some(observer);
    state.opened = 0;
    state.open = None;
    FLAGS.store(flags, Ordering::Release);
    crate::hot_changed();
}

/// No more windows (the process is exiting, or the caller is done): an open one stays open
/// until [`close`].
pub fn disarm() {
    let mut state = lock(&STATE);
    if let Some(plan) = &mut state.plan {
        plan.max_windows = Some(0);
    }
    FLAGS.fetch_and(!(WAITING | API), Ordering::AcqRel);
    crate::hot_changed();
}

/// Windows opened so far, and the number of the one open now (if any).
pub fn count() -> (u32, Option<u32>) {
    let state = lock(&STATE);
    (state.opened, state.open)
}

/// The last up to 8 bytes of a label as a word (zero-padded in front).
#[inline]
fn tail_word(tail: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w[8 - tail.len()..].copy_from_slice(tail);
    u64::from_le_bytes(w)
}

/// Windows are configured and none is open: the in-process sink records nothing and keeps no
/// stack (module docs of `sink`). Two relaxed/acquire loads.
#[inline(always)]
pub(crate) fn between_windows(flags: u8) -> bool {
    flags & PUBLISH != 0 && !crate::active()
}

/// Whether windows are configured and none is open now (a source that starts late, such as
/// CUPTI set up after the windows were armed, starts paused).
pub fn none_open() -> bool {
    between_windows(flags())
}

/// [`between_windows`] for a push, which a waiting range trigger must still see: true unless
/// `label` may be the trigger's (its length and last bytes match).
#[inline(always)]
pub(crate) fn between_windows_push(flags: u8, label: &[u8]) -> bool {
    flags & PUBLISH != 0 && !crate::active() && (flags & WAITING == 0 || !tail_matches(label))
}

#[inline(always)]
fn tail_matches(label: &[u8]) -> bool {
    let n = TAIL_LEN.load(Ordering::Relaxed);
    label.len() >= n && tail_word(&label[label.len() - n..]) == TAIL.load(Ordering::Relaxed)
}

/// Called before a push while a range trigger waits: opens a window if `label` is the
/// trigger's. Returns whether it did (the push's number then names the trigger: [`opened_by`]).
#[inline]
pub(crate) fn before_push(label: &[u8], ts: u64) -> bool {
    tail_matches(label) && open_for(label, ts)
}

#[cold]
fn open_for(label: &[u8], ts: u64) -> bool {
    let mut state = lock(&STATE);
    if flags() & WAITING == 0 || !state.plan.as_ref().and_then(|p| p.range.as_ref()).is_some_and(|t| t.matches(label)) {
        return false;
    }
    let opened = open_locked(&mut state, Opener::Range);
    if opened {
        // The window begins with its trigger, whose stamp was taken before the session started.
        let ns = if roctx_sys::clock::is_ticks(ts) { roctx_sys::clock::calibration().to_ns(ts) } else { ts };
        crate::backdate_start(ts, ns);
    }
    opened
}

/// The push that [`before_push`] opened a window for got number `seq` on thread `tid`: its pop
/// closes the window.
pub(crate) fn opened_by(tid: u64, seq: u32) {
    if seq == 0 {
        // Past the depth limit: the range is not recorded, so its pop cannot be told apart;
        // the window then ends at the API's stop, its duration, or exit.
        return;
    }
    TRIGGER_TID.store(tid, Ordering::Relaxed);
    TRIGGER_SEQ.store(seq, Ordering::Relaxed);
    FLAGS.fetch_or(WATCHING, Ordering::AcqRel);
    crate::hot_changed();
}

/// Called after a pop while a range window is open: closes it if the range popped (push
/// number `seq` on `tid`) was the one that opened it.
#[inline]
pub(crate) fn after_pop(tid: u64, seq: u32) {
    if seq != 0 && seq == TRIGGER_SEQ.load(Ordering::Relaxed) && tid == TRIGGER_TID.load(Ordering::Relaxed) {
        close_trigger(tid, seq);
    }
}

#[cold]
fn close_trigger(tid: u64, seq: u32) {
    let mut state = lock(&STATE);
    if flags() & WATCHING != 0 && TRIGGER_SEQ.load(Ordering::Relaxed) == seq && TRIGGER_TID.load(Ordering::Relaxed) == tid {
        close_locked(&mut state, CloseReason::RangeEnded);
    }
}

/// Opens a window now (the profiler API's start, a timer), unless one is open, none is
/// configured, or no more may open. Returns whether one opened.
pub fn open(by: Opener) -> bool {
    let mut state = lock(&STATE);
    open_locked(&mut state, by)
}

/// Closes the open window, if any, handing its snapshot to the observer. Returns whether one
/// closed.
pub fn close(why: CloseReason) -> bool {
    let mut state = lock(&STATE);
    close_locked(&mut state, why)
}

fn open_locked(state: &mut State, by: Opener) -> bool {
    let (Some(plan), Some(observer)) = (&state.plan, state.observer) else { return false };
    if state.open.is_some() || plan.max_windows.is_some_and(|max| state.opened >= max) || crate::active() {
        return false;
    }
    if crate::start(plan.options, plan.mode).is_err() {
        return false;
    }
    state.opened += 1;
    state.open = Some(state.opened);
    // No trigger waits while a window is open; a range window's pop is looked for once
    // `opened_by` names it.
    FLAGS.fetch_and(!(WAITING | WATCHING), Ordering::AcqRel);
    crate::hot_changed();
    observer(Change::Opened { window: state.opened, by });
    true
}

fn close_locked(state: &mut State, why: CloseReason) -> bool {
    let (Some(window), Some(observer)) = (state.open, state.observer) else { return false };
    FLAGS.fetch_and(!WATCHING, Ordering::AcqRel);
    crate::hot_changed();
    TRIGGER_SEQ.store(0, Ordering::Relaxed);
    state.open = None;
    let Ok(snapshot) = crate::stop_closing_open() else { return false };
    // `repeat`: the trigger waits again (the window count bounds it).
    if state.plan.as_ref().is_some_and(|p| p.range.is_some() && p.max_windows.map_or(true, |max| state.opened < max)) {
        FLAGS.fetch_or(WAITING, Ordering::AcqRel);
        crate::hot_changed();
    }
    observer(Change::Closed { window, why, snapshot: Box::new(snapshot) });
    true
}

/// `roctxProfilerResume(0)` with the profiler API armed: opens a window. Whether the call was a
/// window's (and so is not a resume).
pub(crate) fn api_resume() -> bool {
    flags() & API != 0 && {
        open(Opener::Api);
        true
    }
}

/// `roctxProfilerPause(0)` with the profiler API armed: closes the window.
pub(crate) fn api_pause() -> bool {
    flags() & API != 0 && {
        close(CloseReason::Api);
        true
    }
}

/// Back to no windows (tests: the collector is process-global).
#[cfg(test)]
pub(crate) fn reset() {
    let mut state = lock(&STATE);
    *state = State { plan: None, observer: None, opened: 0, open: None };
    FLAGS.store(0, Ordering::Release);
    crate::hot_changed();
    TRIGGER_SEQ.store(0, Ordering::Relaxed);
}
