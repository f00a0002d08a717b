/*!
The collector: bounded per-thread buffers of ROCTX events, sessions, and the marker state
machine every capture source drives (upstream's MarkerCallback, extended). It sits below every
source (the listener's SDK callbacks and host-fed records, the emitter's in-process [`sink`])
and below every exporter, which only read the [`Snapshot`] it hands out.

# Brief overview

- The record types, defined once: [`Event`], [`EventKind`], [`Stats`] (the counters, declared
  from one list that also says which counters are losses), [`Snapshot`].
- The state machine: [`push`], [`pop`], [`mark`], [`range_start`], [`range_stop`], [`pause`],
  [`resume`], [`name_thread`], each for an explicit thread id and timestamp.
- Sessions: [`start`], [`stop`], [`snapshot`], [`recorded_so_far`]; capture windows, sessions
  that open and close at a range's push and pop or the profiler API's calls: [`window`].
- [`sink::Sink`]: the small contract the emitter records through (tracing's
  instrumentation/subscriber split), and [`sink::IN_PROCESS`], the collector's own sink.

Owns: the per-thread range stacks, the event buffers and their caps, exact drop counters,
cross-thread (start/stop) ranges, thread names, pause/resume, and session generations. It never
decodes SDK records (the listener does) and never formats output (the exporters do).

# Hot path, exactly

Each thread appends to its own buffer without a lock: the owning thread's half (range stack,
label caches, write position) lives in its thread-local, and the half a snapshot reads (24-byte
event slots, the published length, labels, counters) is published with one release store per
event (module `buffer` has the slot layout). No global lock, no atomic read-modify-write on the
recording path. A thread's first event allocates its buffer (and registers it under the
registry lock, once per thread); events go into 4096-slot chunks allocated zeroed on first
need (`roctx_sys::pages`: no `memset`) and reused by later sessions, so a steady state
allocates nothing. A thread recording its own ranges through
the in-process sink in a plain session takes a fast path: one load and one compare of `HOT`
stand for the session, pause and window checks ([`sink`]). A label is stored once per
thread and session and named by a per-thread id: a label passed again from the same address is
compared, not hashed; otherwise a 256-slot cache keyed by an FxHash of the label decides. Only
a new chunk or a new label takes a mutex, which only a snapshot contends. Pause checks are one
relaxed load unless a single thread is paused. Timestamps are *stamps* (`roctx_sys::clock`): the in-process
sink reads the invariant TSC where the kernel trusts it (one `rdtsc`, no scaling) and the
snapshot converts to `CLOCK_BOOTTIME` nanoseconds, the clock rocprofiler-sdk and CUPTI stamp
kernel and marker records with; elsewhere, and for every SDK or host record, BOOTTIME
nanoseconds as given. A snapshot's events are always BOOTTIME nanoseconds.

# Rules

- A range pushed outside a session, or in an earlier session, is not recorded; its pop is
  harmless ([`Stats::begun_outside_session`]).
- A pop with nothing open is ignored and counted ([`Stats::unmatched_pops`]).
- An empty (or null) label still occupies a stack level, so nesting stays balanced, but is
  not recorded ([`Stats::dropped_empty_label`]).
- **Ranges still open at [`stop`]** are dropped and counted ([`Stats::open_at_stop`]); a
  range open when its thread exits is dropped and counted in [`Stats::open_at_thread_exit`].
  Closing them at the stop time would draw ranges that never ended where the trace says. A
  capture [`window`]'s end is the exception the user asked for: there they end at the window's
  end, with a mark that says so.
- Over a cap, the newest event is dropped and counted; nothing already recorded is lost.
- A label longer than [`MAX_LABEL_BYTES`] keeps its first bytes and is counted
  ([`Stats::truncated_labels`]).
- An event from a thread whose buffer is already gone (a C++ `thread_local` destructor running
  after ours) is counted ([`Stats::after_thread_exit`]).
- At most [`MAX_OPEN_PROCESS_RANGES`] start/stop ranges are open at once; more are counted
  ([`Stats::dropped_open_range_cap`]) and their stops are not counted again. Ranges left open
  by a session are forgotten when the next one starts (they were counted at its stop), so
  never-stopped ranges cannot fill the table for later sessions.

# Fork

[`fork`] is what the runtime's `pthread_atfork` handlers call: the collector's locks are held
across `fork()`, so the child never inherits one mid-update, and the child keeps capturing in a
fresh session of its own (the parent's events and other threads' buffers are not its to
write).
*/
// Denied, not forbidden: the one allowed use is claiming a word of the static-TLS block
// (`roctx_sys::tls::Slot::new`, whose contract is that no other slot claims it).
#![deny(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

mod buffer;
pub mod fork;
mod model;
pub mod sink;
pub mod window;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

pub use buffer::{pooled_chunks, run_chunk_filler, MAX_DEPTH, MAX_LABEL_BYTES, SPARE_CHUNKS};
use buffer::{Owner, Shared, ThreadBuffer};
pub use model::{CaptureMode, Event, EventKind, SessionError, SessionOptions, Snapshot, Stats};

/// `CLOCK_BOOTTIME` in nanoseconds: the clock rocprofiler-sdk stamps kernel and marker records
/// with, so our timestamps line up with theirs.
#[inline]
pub fn now_ns() -> u64 {
    roctx_sys::os::boottime_ns()
}

/// The calling thread's OS id (cached; no syscall after the first call).
#[inline]
pub fn current_tid() -> u64 {
    roctx_sys::os::current_tid()
}

// ---- process-wide state (none of it touched per event except by relaxed loads) ----

/// Current session number; 0 before the first session. Bumped by `start`.
static SESSION: AtomicU32 = AtomicU32::new(0);
static ACTIVE: AtomicBool = AtomicBool::new(false);
static MODE: AtomicU8 = AtomicU8::new(CaptureMode::Off as u8);
static CAP_EVENTS: AtomicU64 = AtomicU64::new(0);
static CAP_LABEL_BYTES: AtomicU64 = AtomicU64::new(0);
/// [`PAUSED_PROCESS`] | [`PAUSED_SOME_THREAD`]: one load per event tells that nothing is paused.
pub(crate) static PAUSED: AtomicU8 = AtomicU8::new(0);
/// `roctxProfilerPause(0)` is in force.
const PAUSED_PROCESS: u8 = 1;
/// Some thread is paused (`Globals::paused_tids` is not empty).
pub(crate) const PAUSED_SOME_THREAD: u8 = 2;
/// What the in-process sink's fast path depends on, as one number: bumped after every change of
/// the session ([`SESSION`], [`ACTIVE`], the caps), of [`PAUSED`] and of the capture windows'
/// flags. A thread that took the general path and found it all plain (a session recording, the
/// thread's buffer in it, nothing paused, no window configured) notes the value it read before
/// looking; while the value is still that, its next range skips those checks: one load and one
/// compare instead of five loads (issue 44). Never 0 (0: a buffer that has noted nothing).
pub(crate) static HOT: AtomicU64 = AtomicU64::new(1);

/// Something the fast path depends on changed (see [`HOT`]): every thread takes the general path
/// at its next event. Called after the change is stored.
#[inline]
pub(crate) fn hot_changed() {
    HOT.fetch_add(1, Ordering::AcqRel);
}

/// Records rejected by the listener this session (it has no thread buffer of its own).
static REJECTED: AtomicU64 = AtomicU64::new(0);
/// Events from threads whose buffer was already torn down, this session.
static AFTER_THREAD_EXIT: AtomicU64 = AtomicU64::new(0);

/// The global locks are `std` mutexes, not `parking_lot`'s: the child of a `fork()` releases the
/// ones [`fork::prepare`] took, and a `std` unlock is one futex wake at worst, where
/// `parking_lot`'s slow path takes its parking table's locks, which another parent thread may
/// have held at the fork. No code here panics while holding one; poison is ignored regardless.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

pub(crate) struct Registry {
    /// Every thread that ever recorded; an exited thread's buffer stays until the next session
    /// starts, so its events still reach the snapshot.
    pub(crate) buffers: Vec<Arc<Shared>>,
}

pub(crate) struct Globals {
    /// Session start/stop/snapshot are serialized here (never on the hot path).
    pub(crate) session: Mutex<SessionState>,
    pub(crate) registry: Mutex<Registry>,
    pub(crate) names: Mutex<BTreeMap<u64, String>>,
    pub(crate) paused_tids: Mutex<Vec<u64>>,
    pub(crate) process_ranges: Mutex<ProcessRanges>,
}

/// The start/stop ranges open across threads, and the ids whose stop must not be counted as
/// unknown.
#[derive(Default)]
pub(crate) struct ProcessRanges {
    open: HashMap<u64, OpenProcessRange>,
    /// Started over the cap this session: already counted, so their stop is not "unmatched".
    capped: HashSet<u64>,
    /// Left open by the previous session: their stop is "begun outside the session".
    stale: HashSet<u64>,
}

#[derive(Default)]
pub(crate) struct SessionState {
    options: SessionOptions,
    pub(crate) start_ns: u64,
    /// The start on the capture clock (a stamp, as events are stamped).
    start_stamp: u64,
}

struct OpenProcessRange {
    label: Box<str>,
    start_ns: u64,
    tid: u64,
    session: u32,
}

/// Bound on concurrently open start/stop ranges; more are dropped and counted.
pub const MAX_OPEN_PROCESS_RANGES: usize = 1 << 16;

pub(crate) fn globals() -> &'static Globals {
    static G: OnceLock<Globals> = OnceLock::new();
    G.get_or_init(|| Globals {
        session: Mutex::new(SessionState::default()),
        registry: Mutex::new(Registry { buffers: Vec::new() }),
        names: Mutex::new(BTreeMap::new()),
        paused_tids: Mutex::new(Vec::new()),
        process_ranges: Mutex::new(ProcessRanges::default()),
    })
}

/// Whether a session is running.
pub fn active() -> bool {
    ACTIVE.load(Ordering::Acquire)
}

/// Capture mode of the running (or last) session.
pub fn mode() -> CaptureMode {
    CaptureMode::from_u8(MODE.load(Ordering::Relaxed))
}

/// Starts a session in `mode`. Threads pick up the new session lazily, at their next event.
pub fn start(options: SessionOptions, mode: CaptureMode) -> Result<u32, SessionError> {
    let g = globals();
    let mut state = lock(&g.session);
    if ACTIVE.load(Ordering::Acquire) {
        return Err(SessionError::AlreadyRunning);
    }
    state.options = options;
    state.start_stamp = roctx_sys::clock::now();
    state.start_ns = now_ns();
    CAP_EVENTS.store(options.max_events_per_thread as u64, Ordering::Relaxed);
    CAP_LABEL_BYTES.store(options.max_label_bytes_per_thread as u64, Ordering::Relaxed);
    REJECTED.store(0, Ordering::Relaxed);
    AFTER_THREAD_EXIT.store(0, Ordering::Relaxed);
    {
        // Release buffers of threads that are gone; their data belonged to earlier sessions.
        lock(&g.registry).buffers.retain(|b| !b.exited());
    }
    {
        // Ranges the last session left open were counted at its stop; only their ids are kept,
        // so a late stop is "begun outside" rather than "unknown", and only for one session.
        let mut ranges = lock(&g.process_ranges);
        let stale = ranges.open.drain().map(|(id, _)| id).collect();
        ranges.stale = stale;
        ranges.capped.clear();
    }
    MODE.store(mode as u8, Ordering::Relaxed);
    let session = SESSION.fetch_add(1, Ordering::AcqRel) + 1;
    ACTIVE.store(true, Ordering::Release);
    hot_changed();
    Ok(session)
}

/// Stops the running session and returns what it captured.
pub fn stop() -> Result<Snapshot, SessionError> {
    let g = globals();
    let state = lock(&g.session);
    if !ACTIVE.load(Ordering::Acquire) {
        return Err(SessionError::NotRunning);
    }
    ACTIVE.store(false, Ordering::Release);
    hot_changed();
    Ok(collect(&state, true, None))
}

/// [`stop`] for a capture window's end: the ranges still open (published by their threads
/// while windows are configured) are recorded as ending now, with one mark per thread that had
/// any ([`window::CLOSED_MARK`]); start/stop ranges still open end now too.
pub(crate) fn stop_closing_open() -> Result<Snapshot, SessionError> {
    let g = globals();
    let state = lock(&g.session);
    if !ACTIVE.load(Ordering::Acquire) {
        return Err(SessionError::NotRunning);
    }
    ACTIVE.store(false, Ordering::Release);
    hot_changed();
    Ok(collect(&state, true, Some(now_ns())))
}

/// Moves the running session's start back to `ns` if that is earlier (a capture window begins
/// with the stamp of the push that opened it).
pub(crate) fn backdate_start(stamp: u64, ns: u64) {
    let mut state = lock(&globals().session);
    state.start_ns = state.start_ns.min(ns);
    if roctx_sys::clock::is_ticks(stamp) == roctx_sys::clock::is_ticks(state.start_stamp) {
        state.start_stamp = state.start_stamp.min(stamp);
    }
}

/// Events (ranges and marks) the running session has recorded so far, without reading them:
/// the threads' published lengths (one registry lock, one load per thread), for a progress
/// count. 0 when no session runs.
pub fn recorded_so_far() -> u64 {
    if !ACTIVE.load(Ordering::Acquire) {
        return 0;
    }
    let session = SESSION.load(Ordering::Acquire);
    lock(&globals().registry).buffers.iter().map(|b| b.published_in(session)).sum()
}

/// What the running session has captured so far (or the last stopped one's events if none
/// runs and no new one started), without stopping it.
pub fn snapshot() -> Snapshot {
    let g = globals();
    let state = lock(&g.session);
    collect(&state, false, None)
}

/// The session's events; `close_at`: a window's end, where ranges still open are closed.
fn collect(state: &SessionState, stopping: bool, close_at: Option<u64>) -> Snapshot {
    let g = globals();
    let session = SESSION.load(Ordering::Acquire);
    let mut interner = string_interner::StringInterner::<string_interner::backend::BucketBackend>::new();
    let mut events = Vec::new();
    let mut stats = Stats::default();
    // Taken before the buffers are read, so every tick stamp in them lies before its last point.
    let calibration = roctx_sys::clock::calibration();
    {
        let reg = lock(&g.registry);
        for buffer in &reg.buffers {
            // A window's events stamped before it opened (a thread stamped an event, then was
            // preempted while the window opened) began outside it.
            let not_before = close_at.map(|_| (state.start_stamp, state.start_ns));
            let drain = buffer::Drain { stopping, close_at, not_before };
            buffer.drain_into(session, &drain, &calibration, &mut events, &mut interner, &mut stats);
        }
    }
    {
        let ranges = lock(&g.process_ranges);
        let open = ranges.open.values().filter(|r| r.session == session);
        match close_at {
            None => stats.process_ranges_open_at_stop = open.count() as u64,
            Some(end_ns) => {
                let mut clock = calibration.converter();
                for r in open {
                    let label = string_interner::Symbol::to_usize(interner.get_or_intern(&*r.label)) as u32; // CAST: u32-backed symbols
                    events.push(Event { kind: EventKind::ProcessRange, tid: r.tid, end_tid: r.tid, start_ns: clock.to_ns(r.start_ns), end_ns, label, depth: 0, seq: 0 });
                }
            }
        }
    }
    stats.rejected_records += REJECTED.load(Ordering::Relaxed);
    stats.after_thread_exit += AFTER_THREAD_EXIT.load(Ordering::Relaxed);
    events.sort_by_key(|e| (e.tid, e.start_ns, std::cmp::Reverse(e.end_ns)));
    let labels = interner.into_iter().map(|(_, s)| s.to_owned()).collect();
    Snapshot {
        events,
        labels,
        thread_names: lock(&g.names).clone(),
        stats,
        mode: Some(mode()),
        session,
        start_ns: state.start_ns,
        stop_ns: close_at.unwrap_or_else(now_ns),
    }
}

// ---- the per-thread state machine ----

/// The calling thread's buffer, created (and registered) at its first event: a slot of the
/// library's static-TLS block (`roctx_sys::tls`), one load from the thread pointer, also in a
/// `dlopen`'ed copy of the library (issue 44).
// SAFETY: the only slot with this word.
#[allow(unsafe_code)]
pub(crate) static LOCAL: roctx_sys::tls::Slot<Local, { roctx_sys::tls::SlotId::CollectorBuffer as usize }> =
    unsafe { roctx_sys::tls::Slot::new(|| Local { buffer: register_thread() }) };

/// The thread's handle on its buffer; dropping it (thread exit) accounts for open ranges.
pub(crate) struct Local {
    pub(crate) buffer: ThreadBuffer,
}

impl Drop for Local {
    fn drop(&mut self) {
        if let Ok(mut owner) = self.buffer.owner.try_borrow_mut() {
            owner.thread_exited(&self.buffer.shared, SESSION.load(Ordering::Acquire), ACTIVE.load(Ordering::Acquire));
        }
    }
}

/// Runs `f` on this thread's buffer. `None` during thread teardown, when thread-locals are
/// gone, and for an event that interrupts another on the same thread (a signal handler): the
/// event is then not recorded, and callers that would have recorded one count it with
/// [`count_after_thread_exit`].
#[inline]
fn with_buffer<R>(f: impl FnOnce(&mut Owner, &Shared, &Ctx) -> R) -> Option<R> {
    LOCAL
        .with(|local| {
            let buffer = &local.buffer;
            let mut owner = buffer.owner.try_borrow_mut().ok()?;
            let ctx = Ctx { session: SESSION.load(Ordering::Acquire), recording: ACTIVE.load(Ordering::Acquire) };
            Some(f(&mut owner, &buffer.shared, &ctx))
        })
        .flatten()
}

fn register_thread() -> ThreadBuffer {
    let buffer = ThreadBuffer::new();
    lock(&globals().registry).buffers.push(Arc::clone(&buffer.shared));
    buffer
}

/// An event arrived after this thread's buffer was torn down: C++ `thread_local` destructors
/// (and Rust ones registered before ours) run after it. Counted while a session records.
#[cold]
fn count_after_thread_exit() {
    if ACTIVE.load(Ordering::Acquire) {
        AFTER_THREAD_EXIT.fetch_add(1, Ordering::Relaxed);
    }
}

/// What an event needs to know about the session it lands in.
pub(crate) struct Ctx {
    pub(crate) session: u32,
    pub(crate) recording: bool,
}

/// The capture clock's stamp now, noting a calibration point when one is due.
#[inline(always)]
pub(crate) fn stamp() -> u64 {
    let now = roctx_sys::clock::now();
    roctx_sys::clock::maybe_note_point(now);
    now
}

// The three fast-path entries below repeat their few lines on purpose: one generic helper taking
// the owner's call as a closure measured 5 more instructions per NVTX pair (callgrind, issue 44).
// Their closures are `#[inline(always)]`: left to LLVM, the push's was kept out of line (a call
// and six saved registers per range, 16 instructions per pair; callgrind, issue 44).

/// The in-process sink's push on the fast path (see [`HOT`]): the calling thread's own range,
/// stamped here. `None`: the general path must take it (nothing was changed).
#[inline(always)]
pub(crate) fn fast_push(label: &[u8]) -> Option<u32> {
    LOCAL
        .with(#[inline(always)] |local| {
            let buffer = &local.buffer;
            let mut owner = buffer.owner.try_borrow_mut().ok()?;
            owner.fast_push(&buffer.shared, label, HOT.load(Ordering::Acquire))
        })
        .flatten()
}

/// [`fast_push`] of a registered string by its handle (a string that lives and never changes
/// for the process): no length, no compare.
#[inline(always)]
pub(crate) fn fast_push_handle(handle: usize) -> Option<u32> {
    LOCAL
        .with(#[inline(always)] |local| {
            let buffer = &local.buffer;
            let mut owner = buffer.owner.try_borrow_mut().ok()?;
            owner.fast_push_handle(&buffer.shared, handle, HOT.load(Ordering::Acquire))
        })
        .flatten()
}

/// Registered string `handle` was just pushed on the general path as push number `seq`: its
/// next pushes may take [`fast_push_handle`].
pub(crate) fn note_handle(handle: usize, seq: u32) {
    let _ = with_buffer(|o, _, ctx| o.note_handle(handle, seq, ctx));
}

/// The in-process sink's pop on the fast path: the push number of the range now innermost.
#[inline(always)]
pub(crate) fn fast_pop() -> Option<u32> {
    LOCAL
        .with(#[inline(always)] |local| {
            let buffer = &local.buffer;
            let mut owner = buffer.owner.try_borrow_mut().ok()?;
            owner.fast_pop(&buffer.shared, HOT.load(Ordering::Acquire))
        })
        .flatten()
}

/// After an in-process event on the general path: whether the next ones may take the fast path.
/// `hot` was read before `flags` and everything [`with_buffer`] read.
#[inline]
fn may_arm(hot: u64, flags: u8, suppressed: bool, ctx: &Ctx) -> bool {
    hot != 0 && flags == 0 && !suppressed && ctx.recording && PAUSED.load(Ordering::Relaxed) == 0
}

impl Ctx {
    /// The session's caps: a buffer reads them once, when it moves to the session (`start`
    /// stores them before it publishes the session number).
    pub(crate) fn cap_events(&self) -> usize {
        CAP_EVENTS.load(Ordering::Relaxed) as usize
    }

    pub(crate) fn cap_label_bytes(&self) -> usize {
        CAP_LABEL_BYTES.load(Ordering::Relaxed) as usize
    }
}

#[inline]
fn paused(tid: u64) -> bool {
    let paused = PAUSED.load(Ordering::Relaxed);
    paused != 0 && (paused & PAUSED_PROCESS != 0 || thread_paused(tid))
}

#[cold]
fn thread_paused(tid: u64) -> bool {
    lock(&globals().paused_tids).contains(&tid)
}

/// `roctxRangePushA(label)` on the calling thread, at `ts` (a stamp: BOOTTIME ns, or TSC ticks
/// tagged with `roctx_sys::clock::TICK_BIT`). `tid` is the thread the record
/// names (the caller's own for the emitter, the SDK's `thread_id` for callbacks). Returns the
/// range's push number on this thread ([`Event::seq`]; 0 past the depth limit).
#[inline]
pub fn push(label: &[u8], ts: u64, tid: u64) -> u32 {
    push_with(label, ts, tid, window::flags(), 0)
}

/// [`push`] with the capture windows' flags already read (the in-process sink reads them once
/// for its own check and this). `hot`: the in-process sink's [`HOT`], read before `flags`, for
/// the calling thread's own range (0 from every other source).
#[inline]
pub(crate) fn push_with(label: &[u8], ts: u64, tid: u64, flags: u8, hot: u64) -> u32 {
    // A waiting range trigger opens its window before its own push is recorded.
    let opens = flags & window::WAITING != 0 && window::before_push(label, ts);
    let suppressed = paused(tid);
    let publish = flags & window::PUBLISH != 0;
    let pushed = with_buffer(|o, s, ctx| {
        let seq = o.push(s, label, (ts, tid), ctx, suppressed, publish);
        if may_arm(hot, flags, suppressed, ctx) {
            o.arm(hot, tid, ctx);
        }
        seq
    });
    match pushed {
        Some(seq) => {
            if opens {
                window::opened_by(tid, seq);
            }
            seq
        }
        None => {
            if !suppressed {
                count_after_thread_exit();
            }
            0
        }
    }
}

/// `roctxRangePop()` on the calling thread, at `ts`. Returns the push number of the range
/// now innermost on the thread (0: none).
#[inline]
pub fn pop(ts: u64, tid: u64) -> u32 {
    pop_with(ts, tid, false, window::flags(), 0)
}

/// [`pop`] with the windows' flags already read: a trigger's WATCHING was set on this thread
/// by its push, before any read of the flags for its pop. `hot`: as for [`push_with`].
#[inline]
pub(crate) fn pop_with(ts: u64, tid: u64, opened_unseen: bool, flags: u8, hot: u64) -> u32 {
    let (innermost, popped) = with_buffer(|o, s, ctx| {
        let popped = o.pop(s, ts, tid, ctx, opened_unseen);
        if may_arm(hot, flags, false, ctx) {
            o.arm(hot, tid, ctx);
        }
        popped
    })
    .unwrap_or((0, 0));
    // The window's trigger range closes it after its own pop is recorded.
    if flags & window::WATCHING != 0 {
        window::after_pop(tid, popped);
    }
    innermost
}

/// `roctxRangePop()` that roctx itself says closed an open range (it returned a level >= 0),
/// seen by a listener that may have missed the push: an SDK context delivers nothing while it is
/// stopped, so a push made between two sessions reaches us only as its pop. Such a pop is a
/// range begun outside the session, not an unmatched one.
#[inline]
pub fn pop_of_open_range(ts: u64, tid: u64) -> u32 {
    pop_with(ts, tid, true, window::flags(), 0)
}

/// `roctxMarkA(label)` at `ts`.
#[inline]
pub fn mark(label: &[u8], ts: u64, tid: u64) {
    let suppressed = paused(tid);
    if with_buffer(|o, s, ctx| o.mark(s, label, ts, tid, ctx, suppressed)).is_none() && !suppressed {
        count_after_thread_exit();
    }
}

/// `roctxRangeStartA(label)` returned `id` at `ts` on thread `tid`.
pub fn range_start(id: u64, label: &[u8], ts: u64, tid: u64) {
    let session = SESSION.load(Ordering::Acquire);
    let suppressed = paused(tid);
    let outcome = if !ACTIVE.load(Ordering::Acquire) {
        Some(Outcome::OutsideSession)
    } else if suppressed {
        Some(Outcome::Paused)
    } else if label.is_empty() {
        Some(Outcome::EmptyLabel)
    } else {
        let mut ranges = lock(&globals().process_ranges);
        ranges.stale.remove(&id);
        if ranges.open.len() >= MAX_OPEN_PROCESS_RANGES {
            // Bounded like `open`: past that, a capped range's stop counts as unknown too.
            if ranges.capped.len() < MAX_OPEN_PROCESS_RANGES {
                ranges.capped.insert(id);
            }
            Some(Outcome::OpenRangeCapped)
        } else {
            let kept = String::from_utf8_lossy(buffer::clip_label(label)).into();
            ranges.open.insert(id, OpenProcessRange { label: kept, start_ns: ts, tid, session });
            (label.len() > MAX_LABEL_BYTES).then_some(Outcome::Truncated)
        }
    };
    if let Some(outcome) = outcome {
        if with_buffer(|o, s, ctx| o.count(s, outcome, ctx)).is_none() {
            count_after_thread_exit();
        }
    }
}

/// `roctxRangeStop(id)` at `ts` on thread `tid` (any thread).
pub fn range_stop(id: u64, ts: u64, tid: u64) {
    enum Found {
        Open(OpenProcessRange),
        Capped,
        Stale,
        Unknown,
    }
    let found = {
        let mut ranges = lock(&globals().process_ranges);
        match ranges.open.remove(&id) {
            Some(r) => Found::Open(r),
            None if ranges.capped.remove(&id) => Found::Capped,
            None if ranges.stale.remove(&id) => Found::Stale,
            None => Found::Unknown,
        }
    };
    let done = with_buffer(|o, s, ctx| match found {
        Found::Open(r) if r.session == ctx.session && ctx.recording => {
            o.record_process_range(s, &r.label, (r.start_ns, ts), (r.tid, tid), ctx)
        }
        Found::Open(_) | Found::Stale => o.count(s, Outcome::OutsideSession, ctx),
        Found::Capped => {} // counted once, at its start
        Found::Unknown => o.count(s, Outcome::UnmatchedStop, ctx),
    });
    if done.is_none() {
        count_after_thread_exit();
    }
}

/// The label of the innermost range open on the calling thread in the running session, or
/// empty (what a kernel launched now would be attributed to). A copy: valid as long as the
/// caller keeps it.
pub fn current_label() -> String {
    with_buffer(|o, s, ctx| o.current_label(s, ctx)).unwrap_or_default()
}

/// Names OS thread `tid` (kept for the process, across sessions).
pub fn name_thread(tid: u64, name: &[u8]) {
    let name = String::from_utf8_lossy(buffer::clip_label(name)).into_owned();
    lock(&globals().names).insert(tid, name);
}

/// `roctxProfilerPause(tid)`: 0 pauses the whole process.
pub fn pause(tid: u64) {
    if tid == 0 && window::api_pause() {
        return; // the profiler API's windows: a pause of the process closes the window
    }
    if tid == 0 {
        PAUSED.fetch_or(PAUSED_PROCESS, Ordering::Relaxed);
    } else {
        let mut tids = lock(&globals().paused_tids);
        if !tids.contains(&tid) {
            tids.push(tid);
        }
        PAUSED.fetch_or(PAUSED_SOME_THREAD, Ordering::Relaxed);
    }
    hot_changed();
}

/// `roctxProfilerResume(tid)`: 0 resumes the whole process (and every thread).
pub fn resume(tid: u64) {
    if tid == 0 && window::api_resume() {
        return;
    }
    let mut tids = lock(&globals().paused_tids);
    if tid == 0 {
        PAUSED.fetch_and(!PAUSED_PROCESS, Ordering::Relaxed);
        tids.clear();
    } else {
        tids.retain(|&t| t != tid);
    }
    if tids.is_empty() {
        PAUSED.fetch_and(!PAUSED_SOME_THREAD, Ordering::Relaxed);
    } else {
        PAUSED.fetch_or(PAUSED_SOME_THREAD, Ordering::Relaxed);
    }
    hot_changed();
}

/// Counts a record the listener could not use.
pub fn reject_record() {
    REJECTED.fetch_add(1, Ordering::Relaxed);
}

/// Why an event was not recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    OutsideSession,
    Paused,
    EmptyLabel,
    UnmatchedStop,
    OpenRangeCapped,
    Truncated,
}

#[cfg(test)]
mod tests;
