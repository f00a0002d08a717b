//! The collector: bounded per-thread buffers of ROCTX events, sessions, and the marker state
//! machine every capture mode drives (upstream's MarkerCallback, extended).
//!
//! Owns: the per-thread range stacks, the event buffers and their caps, exact drop counters,
//! cross-thread (start/stop) ranges, thread names, pause/resume, and session generations. It
//! never decodes SDK records (that is [`crate::listener`]) and never formats output (that is
//! the exporters' job); it hands out a [`Snapshot`].
//!
//! Hot path: each thread appends to its own buffer behind its own mutex, which only a snapshot
//! ever contends; there is no global lock. Events are stored in fixed-size chunks that are
//! allocated on first need and reused by later sessions, so a steady state allocates nothing.
//! Timestamps are `CLOCK_BOOTTIME` nanoseconds, the clock rocprofiler-sdk stamps kernel and
//! marker records with, read through the vDSO (no syscall).
//!
//! # Rules
//! - A range pushed outside a session, or in an earlier session, is not recorded; its pop is
//!   harmless ([`Stats::begun_outside_session`]).
//! - A pop with nothing open is ignored and counted ([`Stats::unmatched_pops`]).
//! - An empty (or null) label still occupies a stack level, so nesting stays balanced, but is
//!   not recorded ([`Stats::dropped_empty_label`]).
//! - **Ranges still open at [`stop`]** are dropped and counted ([`Stats::open_at_stop`]); a
//!   range open when its thread exits is dropped and counted in [`Stats::open_at_thread_exit`].
//!   Closing them at the stop time would draw ranges that never ended where the trace says.
//! - Over a cap, the newest event is dropped and counted; nothing already recorded is lost.
#![forbid(unsafe_code)]

mod buffer;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

pub use buffer::{MAX_DEPTH, MAX_LABEL_BYTES};
use buffer::ThreadBuffer;

/// `CLOCK_BOOTTIME` in nanoseconds: the clock rocprofiler-sdk stamps kernel and marker records
/// with, so our timestamps line up with theirs.
#[inline]
pub fn now_ns() -> u64 {
    crate::ffi::os::boottime_ns()
}

/// What kind of event a record is (shared with the exporters).
pub use roctx_export::EventKind;

/// How events reach the collector in a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum CaptureMode {
    /// Nothing is captured.
    Off = 0,
    /// rocprofiler-sdk MARKER callbacks, configured by us (tool mode).
    Sdk = 1,
    /// Records fed by the host's own tracer (`roctx_utils_listener_feed`).
    Host = 2,
    /// The emitter records its own ranges (no SDK needed).
    InProcess = 3,
}

impl CaptureMode {
    fn from_u8(v: u8) -> CaptureMode {
        match v {
            1 => CaptureMode::Sdk,
            2 => CaptureMode::Host,
            3 => CaptureMode::InProcess,
            _ => CaptureMode::Off,
        }
    }
}

/// Session configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionOptions {
    /// Events kept per thread per session; more are dropped and counted.
    pub max_events_per_thread: usize,
    /// Label bytes kept per thread per session (labels repeat, and are stored once per thread).
    pub max_label_bytes_per_thread: usize,
}

impl Default for SessionOptions {
    fn default() -> SessionOptions {
        SessionOptions { max_events_per_thread: 1 << 20, max_label_bytes_per_thread: 16 << 20 }
    }
}

/// Counters of one session. Every event the collector saw and did not record is in exactly one
/// of the `dropped_*` / `open_*` counters or in `begun_outside_session`/`paused`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Events recorded.
    pub recorded: u64,
    /// Events dropped because the thread's event cap was reached.
    pub dropped_event_cap: u64,
    /// Events dropped because the thread's label bytes cap was reached.
    pub dropped_label_cap: u64,
    /// Ranges nested deeper than [`buffer::MAX_DEPTH`] (not recorded; nesting stays balanced).
    pub dropped_too_deep: u64,
    /// Ranges and marks with an empty or null label.
    pub dropped_empty_label: u64,
    /// Pops with no open range.
    pub unmatched_pops: u64,
    /// `roctxRangeStop` for an id that was never started (or started outside the session).
    pub unmatched_stops: u64,
    /// Ranges whose push happened before this session started (not an error).
    pub begun_outside_session: u64,
    /// Ranges and marks suppressed by `roctxProfilerPause`.
    pub paused: u64,
    /// Push/pop ranges still open when the session stopped.
    pub open_at_stop: u64,
    /// Start/stop ranges still open when the session stopped.
    pub process_ranges_open_at_stop: u64,
    /// Ranges open when their thread exited.
    pub open_at_thread_exit: u64,
    /// Malformed or unsupported SDK/host records rejected by the listener.
    pub rejected_records: u64,
}

impl Stats {
    /// Events seen but not kept because of a cap (what a user must raise a limit for).
    pub fn dropped(&self) -> u64 {
        self.dropped_event_cap + self.dropped_label_cap + self.dropped_too_deep
    }

    fn add(&mut self, o: &Stats) {
        self.recorded += o.recorded;
        self.dropped_event_cap += o.dropped_event_cap;
        self.dropped_label_cap += o.dropped_label_cap;
        self.dropped_too_deep += o.dropped_too_deep;
        self.dropped_empty_label += o.dropped_empty_label;
        self.unmatched_pops += o.unmatched_pops;
        self.unmatched_stops += o.unmatched_stops;
        self.begun_outside_session += o.begun_outside_session;
        self.paused += o.paused;
        self.open_at_stop += o.open_at_stop;
        self.process_ranges_open_at_stop += o.process_ranges_open_at_stop;
        self.open_at_thread_exit += o.open_at_thread_exit;
        self.rejected_records += o.rejected_records;
    }
}

/// One recorded event, as exporters see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Range, mark or process range.
    pub kind: EventKind,
    /// OS thread id that opened it (`gettid`, the SDK's `thread_id`).
    pub tid: u64,
    /// OS thread id that closed it (differs from `tid` only for process ranges).
    pub end_tid: u64,
    /// `CLOCK_BOOTTIME` ns.
    pub start_ns: u64,
    /// `CLOCK_BOOTTIME` ns; equals `start_ns` for marks.
    pub end_ns: u64,
    /// Index into [`Snapshot::labels`].
    pub label: u32,
    /// Nesting depth on its thread when it was pushed (0 = outermost); 0 for marks and process
    /// ranges.
    pub depth: u16,
}

/// Everything one session captured, for the exporters. Events are sorted by (tid, start, -end).
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Recorded events.
    pub events: Vec<Event>,
    /// Distinct labels; events refer to them by index.
    pub labels: Vec<String>,
    /// Names given with `roctxNameOsThread`/`NameCurrentThread`, by OS thread id.
    pub thread_names: BTreeMap<u64, String>,
    /// What was not recorded, and why.
    pub stats: Stats,
    /// How events reached the collector.
    pub mode: Option<CaptureMode>,
    /// Session number (1 for the first session of the process).
    pub session: u32,
    /// `CLOCK_BOOTTIME` ns at start and at stop (or at the snapshot, while running).
    pub start_ns: u64,
    /// See `start_ns`.
    pub stop_ns: u64,
}

impl Snapshot {
    /// The label text of `event`.
    pub fn label(&self, event: &Event) -> &str {
        self.labels.get(event.label as usize).map_or("", String::as_str)
    }
}

/// Why a session could not start or stop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionError {
    /// `start` while a session is running.
    AlreadyRunning,
    /// `stop` with no session running.
    NotRunning,
}

impl std::fmt::Display for SessionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SessionError::AlreadyRunning => "a capture session is already running",
            SessionError::NotRunning => "no capture session is running",
        })
    }
}

impl std::error::Error for SessionError {}

// ---- process-wide state (none of it touched per event except by relaxed loads) ----

/// Current session number; 0 before the first session. Bumped by `start`.
static SESSION: AtomicU32 = AtomicU32::new(0);
static ACTIVE: AtomicBool = AtomicBool::new(false);
static MODE: AtomicU8 = AtomicU8::new(CaptureMode::Off as u8);
/// Set once an in-process session has run: from then on the emitter keeps per-thread stacks
/// balanced even between sessions. Before that, nobody listening costs one load.
static IN_PROCESS: AtomicBool = AtomicBool::new(false);
static CAP_EVENTS: AtomicU64 = AtomicU64::new(0);
static CAP_LABEL_BYTES: AtomicU64 = AtomicU64::new(0);
static PAUSED_PROCESS: AtomicBool = AtomicBool::new(false);
static PAUSED_ANY_THREAD: AtomicBool = AtomicBool::new(false);
/// Records rejected by the listener this session (it has no thread buffer of its own).
static REJECTED: AtomicU64 = AtomicU64::new(0);

struct Registry {
    /// Every thread that ever recorded; an exited thread's buffer stays until the next session
    /// starts, so its events still reach the snapshot.
    buffers: Vec<Arc<ThreadBuffer>>,
}

struct Globals {
    /// Session start/stop/snapshot are serialized here (never on the hot path).
    session: Mutex<SessionState>,
    registry: Mutex<Registry>,
    names: Mutex<BTreeMap<u64, String>>,
    paused_tids: Mutex<Vec<u64>>,
    process_ranges: Mutex<HashMap<u64, OpenProcessRange>>,
}

#[derive(Default)]
struct SessionState {
    options: SessionOptions,
    start_ns: u64,
}

struct OpenProcessRange {
    label: Box<str>,
    start_ns: u64,
    tid: u64,
    session: u32,
}

/// Bound on concurrently open start/stop ranges; more are dropped and counted.
pub const MAX_OPEN_PROCESS_RANGES: usize = 1 << 16;

fn globals() -> &'static Globals {
    static G: OnceLock<Globals> = OnceLock::new();
    G.get_or_init(|| Globals {
        session: Mutex::new(SessionState::default()),
        registry: Mutex::new(Registry { buffers: Vec::new() }),
        names: Mutex::new(BTreeMap::new()),
        paused_tids: Mutex::new(Vec::new()),
        process_ranges: Mutex::new(HashMap::new()),
    })
}

/// Whether the emitter should feed ranges to the collector (in-process capture has been used).
#[inline(always)]
pub fn in_process_enabled() -> bool {
    IN_PROCESS.load(Ordering::Relaxed)
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
    let mut state = g.session.lock();
    if ACTIVE.load(Ordering::Acquire) {
        return Err(SessionError::AlreadyRunning);
    }
    state.options = options;
    state.start_ns = now_ns();
    CAP_EVENTS.store(options.max_events_per_thread as u64, Ordering::Relaxed);
    CAP_LABEL_BYTES.store(options.max_label_bytes_per_thread as u64, Ordering::Relaxed);
    REJECTED.store(0, Ordering::Relaxed);
    {
        // Release buffers of threads that are gone; their data belonged to earlier sessions.
        g.registry.lock().buffers.retain(|b| !b.exited());
    }
    MODE.store(mode as u8, Ordering::Relaxed);
    IN_PROCESS.store(mode == CaptureMode::InProcess, Ordering::Relaxed);
    let session = SESSION.fetch_add(1, Ordering::AcqRel) + 1;
    ACTIVE.store(true, Ordering::Release);
    Ok(session)
}

/// Stops the running session and returns what it captured.
pub fn stop() -> Result<Snapshot, SessionError> {
    let g = globals();
    let state = g.session.lock();
    if !ACTIVE.load(Ordering::Acquire) {
        return Err(SessionError::NotRunning);
    }
    ACTIVE.store(false, Ordering::Release);
    Ok(collect(&state, true))
}

/// What the running session has captured so far (or the last stopped one's events if none
/// runs and no new one started), without stopping it.
pub fn snapshot() -> Snapshot {
    let g = globals();
    let state = g.session.lock();
    collect(&state, false)
}

fn collect(state: &SessionState, stopping: bool) -> Snapshot {
    let g = globals();
    let session = SESSION.load(Ordering::Acquire);
    let mut interner = string_interner::StringInterner::<string_interner::backend::BucketBackend>::new();
    let mut events = Vec::new();
    let mut stats = Stats::default();
    {
        let reg = g.registry.lock();
        for buffer in &reg.buffers {
            buffer.drain_into(session, stopping, &mut events, &mut interner, &mut stats);
        }
    }
    {
        let ranges = g.process_ranges.lock();
        stats.process_ranges_open_at_stop = ranges.values().filter(|r| r.session == session).count() as u64;
    }
    stats.rejected_records += REJECTED.load(Ordering::Relaxed);
    events.sort_by(|a, b| (a.tid, a.start_ns, std::cmp::Reverse(a.end_ns)).cmp(&(b.tid, b.start_ns, std::cmp::Reverse(b.end_ns))));
    let labels = interner.into_iter().map(|(_, s)| s.to_owned()).collect();
    Snapshot {
        events,
        labels,
        thread_names: g.names.lock().clone(),
        stats,
        mode: Some(mode()),
        session,
        start_ns: state.start_ns,
        stop_ns: now_ns(),
    }
}

// ---- the per-thread state machine ----

thread_local! {
    static LOCAL: Local = const { Local { buffer: OnceLock::new() } };
}

/// The thread's handle on its buffer; dropping it (thread exit) accounts for open ranges.
struct Local {
    buffer: OnceLock<Arc<ThreadBuffer>>,
}

impl Drop for Local {
    fn drop(&mut self) {
        if let Some(buffer) = self.buffer.get() {
            buffer.thread_exited(SESSION.load(Ordering::Acquire), ACTIVE.load(Ordering::Acquire));
        }
    }
}

/// Runs `f` on this thread's buffer, synced to the current session. `None` during thread
/// teardown, when thread-locals are gone (the event is then not recorded).
#[inline]
fn with_buffer<R>(f: impl FnOnce(&ThreadBuffer, &Ctx) -> R) -> Option<R> {
    LOCAL
        .try_with(|local| {
            let buffer = local.buffer.get_or_init(register_thread);
            let ctx = Ctx {
                session: SESSION.load(Ordering::Acquire),
                recording: ACTIVE.load(Ordering::Acquire),
                cap_events: CAP_EVENTS.load(Ordering::Relaxed) as usize,
                cap_label_bytes: CAP_LABEL_BYTES.load(Ordering::Relaxed) as usize,
            };
            f(buffer, &ctx)
        })
        .ok()
}

fn register_thread() -> Arc<ThreadBuffer> {
    let buffer = Arc::new(ThreadBuffer::new());
    globals().registry.lock().buffers.push(Arc::clone(&buffer));
    buffer
}

/// What an event needs to know about the session it lands in.
pub(crate) struct Ctx {
    pub(crate) session: u32,
    pub(crate) recording: bool,
    pub(crate) cap_events: usize,
    pub(crate) cap_label_bytes: usize,
}

#[inline]
fn paused(tid: u64) -> bool {
    PAUSED_PROCESS.load(Ordering::Relaxed)
        || (PAUSED_ANY_THREAD.load(Ordering::Relaxed) && globals().paused_tids.lock().contains(&tid))
}

/// The calling thread's OS id (cached; no syscall after the first call).
pub fn current_tid() -> u64 {
    crate::ffi::os::current_tid()
}

/// `roctxRangePushA(label)` on the calling thread, at `ts` (ns). `tid` is the thread the record
/// names (the caller's own for the emitter, the SDK's `thread_id` for callbacks).
pub fn push(label: &[u8], ts: u64, tid: u64) {
    let suppressed = paused(tid);
    with_buffer(|b, ctx| b.push(label, ts, ctx, suppressed));
}

/// `roctxRangePop()` on the calling thread, at `ts`.
pub fn pop(ts: u64, tid: u64) {
    with_buffer(|b, ctx| b.pop(ts, tid, ctx));
}

/// `roctxMarkA(label)` at `ts`.
pub fn mark(label: &[u8], ts: u64, tid: u64) {
    let suppressed = paused(tid);
    with_buffer(|b, ctx| b.mark(label, ts, tid, ctx, suppressed));
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
        let mut ranges = globals().process_ranges.lock();
        if ranges.len() >= MAX_OPEN_PROCESS_RANGES {
            Some(Outcome::Capped)
        } else {
            let label = buffer::clip_label(label);
            ranges.insert(id, OpenProcessRange { label: String::from_utf8_lossy(label).into(), start_ns: ts, tid, session });
            None
        }
    };
    if let Some(outcome) = outcome {
        with_buffer(|b, ctx| b.count(outcome, ctx));
    }
}

/// `roctxRangeStop(id)` at `ts` on thread `tid` (any thread).
pub fn range_stop(id: u64, ts: u64, tid: u64) {
    let open = globals().process_ranges.lock().remove(&id);
    with_buffer(|b, ctx| match open {
        Some(r) if r.session == ctx.session && ctx.recording => {
            b.record_process_range(&r.label, r.start_ns, ts, r.tid, tid, ctx)
        }
        Some(_) => b.count(Outcome::OutsideSession, ctx),
        None => b.count(Outcome::UnmatchedStop, ctx),
    });
}

/// The label of the innermost range open on the calling thread in the running session, or
/// empty (what a kernel launched now would be attributed to). A copy: valid as long as the
/// caller keeps it.
pub fn current_label() -> String {
    with_buffer(|b, ctx| b.current_label(ctx)).unwrap_or_default()
}

/// Names OS thread `tid` (kept for the process, across sessions).
pub fn name_thread(tid: u64, name: &[u8]) {
    let name = String::from_utf8_lossy(buffer::clip_label(name)).into_owned();
    globals().names.lock().insert(tid, name);
}

/// `roctxProfilerPause(tid)`: 0 pauses the whole process.
pub fn pause(tid: u64) {
    if tid == 0 {
        PAUSED_PROCESS.store(true, Ordering::Relaxed);
    } else {
        let mut tids = globals().paused_tids.lock();
        if !tids.contains(&tid) {
            tids.push(tid);
        }
        PAUSED_ANY_THREAD.store(true, Ordering::Relaxed);
    }
}

/// `roctxProfilerResume(tid)`: 0 resumes the whole process (and every thread).
pub fn resume(tid: u64) {
    let mut tids = globals().paused_tids.lock();
    if tid == 0 {
        PAUSED_PROCESS.store(false, Ordering::Relaxed);
        tids.clear();
    } else {
        tids.retain(|&t| t != tid);
    }
    PAUSED_ANY_THREAD.store(!tids.is_empty(), Ordering::Relaxed);
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
    Capped,
    UnmatchedStop,
}

#[cfg(test)]
mod tests;
