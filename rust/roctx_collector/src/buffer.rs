//! One thread's buffer, in two halves:
//!
//! - [`Owner`], in the owning thread's thread-local and touched by nobody else: the range stack,
//!   the label caches, the write position. No lock.
//! - [`Shared`], which a snapshot reads: 24-byte event slots in chunks, the published length,
//!   the labels, the counters. The owner writes a slot with relaxed stores and publishes it
//!   with one release store of the length; a snapshot reads the length with acquire, then the
//!   slots below it. The owner takes a mutex only to add a chunk (once per 4096 events, and
//!   only the first time the thread gets that far) or a label it has not stored this session;
//!   a snapshot takes the same two, so they are uncontended except against a snapshot.
//!
//! # Slot layout (three `u64` words)
//!
//! | word | bits | |
//! |---|---|---|
//! | 0 | 0..64 | start stamp |
//! | 1 | 0..32 | label id (index into this thread's labels of the session) |
//! | 1 | 32..64 | end - start, in stamp units |
//! | 2 | 0..32 | push number ([`crate::Event::seq`]) |
//! | 2 | 32..48 | depth |
//! | 2 | 48..56 | [`EventKind`] |
//! | 2 | 56 | LONG: the next slot holds end stamp, thread id, end thread id |
//!
//! The thread id is stored once per buffer and session (the first recorded event's). An event
//! whose duration does not fit in 32 bits (about 1.4 s of TSC ticks, 4.2 s of nanoseconds),
//! whose end precedes its start or is on the other clock, or whose thread ids differ from the
//! buffer's (a start/stop range ended on another thread) is LONG and takes two slots.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use string_interner::backend::BucketBackend;
use string_interner::StringInterner;

use roctx_sys::pages::Uncleared;

use super::{Ctx, Event, EventKind, Outcome, Stats};
use crate::model::AtomicStats;

/// Deepest push/pop nesting recorded per thread; deeper ranges are counted, not recorded, and
/// the nesting stays balanced.
pub const MAX_DEPTH: usize = 256;
/// Longest label kept, in bytes; longer labels keep their first bytes.
pub const MAX_LABEL_BYTES: usize = 4096;
/// Slots per chunk: chunks are allocated on first need and reused by later sessions, and by
/// later threads once their thread is gone ([`POOL`]).
const CHUNK: usize = 4096;
/// `u64` words per slot (24 bytes).
const WORDS: usize = 3;
const _: () = assert!(WORDS * std::mem::size_of::<u64>() == 24, "a recorded range takes 24 bytes");
/// Direct-mapped cache of recent labels by content hash, so a label that repeats is stored
/// once per thread.
const DEDUP_SLOTS: usize = 256;
/// Direct-mapped cache keyed by the label's address: a label passed again from the same place
/// (a registered string, a thunk's annotation) is found without hashing it, only compared.
const PTR_SLOTS: usize = 64;

const LONG: u64 = 1 << 56;

/// CHUNK slots of three words, neither cleared nor built slot by slot (`roctx_sys::pages`): a
/// slot is written before the length that publishes it, and nothing reads past that length. A
/// chunk from the [`POOL`] holds an earlier buffer's slots, which is as good.
pub(crate) type Chunk = Uncleared<Slots>;
/// A chunk's slots.
type Slots = [[AtomicU64; WORDS]; CHUNK];

/// Chunks of buffers that are gone (their thread exited, and the next session start released
/// its events), for the next thread that needs one (issue 44). Their pages are faulted in
/// already: a thread that starts after warm-up, as a benchmark's or a thread pool's new thread
/// does, takes no page fault on the hot path, where a fresh chunk faults once per 170 events
/// (about 1-3 µs a fault on a VM). A chunk is always taken from here before one is allocated,
/// so the pool and the buffers together never hold more than the buffers held at their peak,
/// plus the [`SPARE_CHUNKS`] that [`run_chunk_filler`] adds; past [`POOL_MAX_CHUNKS`] chunks go
/// back to the allocator. A leaf lock (nothing is locked
/// while it is held), a `std` mutex for `fork()`'s sake as the global locks are (`crate::lock`).
static POOL: std::sync::Mutex<Vec<Chunk>> = std::sync::Mutex::new(Vec::new());
/// The pool's bound: 2,730 chunks of 96 KiB, 256 MiB.
pub(crate) const POOL_MAX_CHUNKS: usize = (256 << 20) / std::mem::size_of::<Slots>();

/// Chunks [`run_chunk_filler`] keeps in the pool, faulted in, while a session records: 3 MiB.
pub const SPARE_CHUNKS: usize = 32;
/// Woken when a buffer takes a chunk and leaves the pool under half of [`SPARE_CHUNKS`].
static FILL: std::sync::Condvar = std::sync::Condvar::new();
/// Whether a filler runs (then [`take_chunk`] wakes it).
static FILLER: AtomicBool = AtomicBool::new(false);

/// A chunk for a buffer that grows: a pooled one first.
fn take_chunk() -> Chunk {
    let mut pool = crate::lock(&POOL);
    let pooled = pool.pop();
    let low = pool.len() < SPARE_CHUNKS / 2;
    drop(pool); // released before any allocation
    if low && FILLER.load(Ordering::Relaxed) {
        FILL.notify_one();
    }
    pooled.unwrap_or_default()
}

/// The chunk filler's body, for a thread of its own (the runtime starts it with the first
/// in-process session; it never returns). While a session records it keeps [`SPARE_CHUNKS`]
/// new chunks in the pool with every page already written, so that a buffer that grows takes
/// resident memory: the page faults of a fresh chunk (24 pages; 1.5 µs each on the dev VM,
/// about 9 ns per range) are taken here, not on the thread that records. It sleeps until a
/// buffer leaves the pool under half of that (no timer, no wake-up while nothing records),
/// faults chunks in outside the pool's lock, and stops filling when the session stops; what it
/// filled stays pooled for the next session (at most 3 MiB). A fork child has no filler: its
/// buffers fault their chunks in themselves, as without one.
pub fn run_chunk_filler() -> ! {
    FILLER.store(true, Ordering::Relaxed);
    let mut pool = crate::lock(&POOL);
    loop {
        if pool.len() >= SPARE_CHUNKS || !crate::active() {
            pool = FILL.wait(pool).unwrap_or_else(std::sync::PoisonError::into_inner);
            continue;
        }
        drop(pool);
        let chunk = faulted_in_chunk();
        pool = crate::lock(&POOL);
        if pool.len() < POOL_MAX_CHUNKS {
            pool.push(chunk);
        }
    }
}

/// A new chunk with one word written in each of its pages, so that they are all resident.
fn faulted_in_chunk() -> Chunk {
    const PAGE_SLOTS: usize = 4096 / (WORDS * 8); // a stride under one page: every page is hit
    let chunk = Chunk::new();
    for slot in (0..CHUNK).step_by(PAGE_SLOTS).chain([CHUNK - 1]) {
        chunk[slot][WORDS - 1].store(0, Ordering::Relaxed);
    }
    chunk
}

/// Chunks in the pool now (pooled gone threads' chunks and the filler's).
pub fn pooled_chunks() -> usize {
    crate::lock(&POOL).len()
}

/// Chunks a buffer let go of: those nobody else holds go to the pool (the owner's half and the
/// snapshot's half each hold every chunk; the one let go of last pools it).
fn recycle(chunks: Vec<Arc<Chunk>>) {
    let mut free = chunks.into_iter().filter_map(Arc::into_inner).peekable();
    if free.peek().is_some() {
        let mut pool = crate::lock(&POOL);
        let room = POOL_MAX_CHUNKS.saturating_sub(pool.len());
        pool.extend(free.by_ref().take(room));
        drop(pool);
        drop(free); // past the bound: freed outside the lock
    }
}

/// The pool's lock, for `fork::prepare` (held across `fork()`, so that the child never finds
/// it taken by a thread it does not have) and the tests that empty it.
pub(crate) fn pool_lock() -> std::sync::MutexGuard<'static, Vec<Chunk>> {
    crate::lock(&POOL)
}

/// `n` new chunks let go of, as a gone buffer's would be (tests).
#[cfg(test)]
pub(crate) fn recycle_for_test(n: usize) {
    recycle((0..n).map(|_| Arc::new(Uncleared::new())).collect());
}

/// `label` cut to [`MAX_LABEL_BYTES`].
#[inline]
pub(crate) fn clip_label(label: &[u8]) -> &[u8] {
    &label[..label.len().min(MAX_LABEL_BYTES)]
}

/// The half a snapshot reads (module docs). Aligned to (and so sized in) whole 128-byte blocks,
/// so two threads' halves never share a cache line (or an adjacent-line prefetch pair): the
/// owner stores `len` per event, and a neighbour's stores would bounce the line between cores.
#[repr(align(128))]
pub(crate) struct Shared {
    exited: AtomicBool,
    /// Session the published contents belong to; stored last when the owner moves to a new one.
    session: AtomicU32,
    /// Slots published.
    len: AtomicUsize,
    /// Thread id of the session's events (the first recorded one's).
    tid: AtomicU64,
    /// Ranges open on the owner's stack that will be recorded at their pop (stored with release
    /// after their frame, while windows are configured).
    open_recording: AtomicU64,
    /// Those ranges, innermost last, while windows are configured (allocated at the first):
    /// start stamp, label id | depth << 32, push number, thread id. A window's end closes them.
    open_frames: OnceLock<Box<[[AtomicU64; 4]; MAX_DEPTH]>>,
    stats: AtomicStats,
    chunks: Mutex<Vec<Arc<Chunk>>>,
    /// This session's labels, by id.
    labels: Mutex<Vec<Arc<[u8]>>>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        recycle(std::mem::take(self.chunks.get_mut()));
    }
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").field("session", &self.session).field("len", &self.len).finish_non_exhaustive()
    }
}

/// What a pushed range will become at its pop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Record { label: u32 },
    Skip(Outcome),
    LabelCapped,
}

#[derive(Debug, Clone, Copy)]
struct Frame {
    start: u64,
    /// This thread's push number of the range (from 1, wrapping past 0).
    seq: u32,
    fate: Fate,
}

#[derive(Debug, Clone, Copy, Default)]
struct DedupSlot {
    hash: u64,
    /// Label id + 1 (0: empty slot).
    id: u32,
}

/// The label last passed from address `ptr` (`ptr` 0: empty slot; no slice has address 0).
#[derive(Debug, Clone, Copy, Default)]
struct PtrSlot {
    ptr: usize,
    id: u32,
}

/// The owner's half (module docs).
pub(crate) struct Owner {
    /// The [`crate::HOT`] value under which this thread's own ranges may take the fast path
    /// ([`Owner::fast_push`]); 0: none.
    hot: u64,
    /// Session the owner's state belongs to; a newer session resets it at the next event.
    session: u32,
    stack: Vec<Frame>,
    /// Pushes beyond MAX_DEPTH still open.
    overflow: u32,
    /// Ranges open when a new session began: their pops are "begun outside", not "unmatched".
    orphans: u64,
    /// Pushes this thread made, for the process's lifetime (the last range's [`Frame::seq`]).
    pushes: u32,
    /// Events recorded this session (the event cap counts these; a LONG one takes two slots).
    events: usize,
    /// Slots written this session (published as [`Shared::len`]).
    slots: usize,
    /// The same chunks as [`Shared::chunks`], reachable without its lock.
    chunks: Vec<Arc<Chunk>>,
    /// The session's caps (read once per session: `start` sets them before it publishes the
    /// session number the owner syncs to).
    cap_events: usize,
    cap_label_bytes: usize,
    /// Thread id stored in [`Shared::tid`] this session, once an event was recorded.
    tid: Option<u64>,
    open_recording: u64,
    /// The same labels as [`Shared::labels`].
    labels: Vec<Arc<[u8]>>,
    label_bytes: usize,
    dedup: Box<[DedupSlot; DEDUP_SLOTS]>,
    by_ptr: [PtrSlot; PTR_SLOTS],
    /// Registered strings' label ids by handle ([`Owner::fast_push_handle`]): a handle names
    /// bytes that never change, so a hit is not compared. Apart from `by_ptr`, whose addresses
    /// may be memory a caller freed and the pool later reused.
    by_handle: [PtrSlot; PTR_SLOTS],
}

impl Drop for Owner {
    fn drop(&mut self) {
        recycle(std::mem::take(&mut self.chunks));
    }
}

/// A thread's buffer as its thread-local holds it.
pub(crate) struct ThreadBuffer {
    pub(crate) shared: Arc<Shared>,
    pub(crate) owner: RefCell<Owner>,
}

impl ThreadBuffer {
    pub(crate) fn new() -> ThreadBuffer {
        ThreadBuffer {
            shared: Arc::new(Shared {
                exited: AtomicBool::new(false),
                session: AtomicU32::new(0),
                len: AtomicUsize::new(0),
                tid: AtomicU64::new(0),
                open_recording: AtomicU64::new(0),
                open_frames: OnceLock::new(),
                stats: AtomicStats::default(),
                chunks: Mutex::new(Vec::new()),
                labels: Mutex::new(Vec::new()),
            }),
            owner: RefCell::new(Owner {
                hot: 0,
                session: 0,
                stack: Vec::with_capacity(MAX_DEPTH),
                overflow: 0,
                orphans: 0,
                pushes: 0,
                events: 0,
                slots: 0,
                chunks: Vec::new(),
                cap_events: 0,
                cap_label_bytes: 0,
                tid: None,
                open_recording: 0,
                labels: Vec::new(),
                label_bytes: 0,
                dedup: Box::new([DedupSlot::default(); DEDUP_SLOTS]),
                by_ptr: [PtrSlot::default(); PTR_SLOTS],
                by_handle: [PtrSlot::default(); PTR_SLOTS],
            }),
        }
    }
}

/// One slot's words, relaxed: the owner publishes them with the length it stores next.
#[inline]
fn store(cells: &[AtomicU64; WORDS], words: [u64; WORDS]) {
    for (cell, word) in cells.iter().zip(words) {
        cell.store(word, Ordering::Relaxed);
    }
}

/// How a snapshot drains a buffer.
pub(crate) struct Drain {
    /// The session stops: ranges still open are counted as open at stop.
    pub(crate) stopping: bool,
    /// A capture window's end (ns): ranges still open are closed there.
    pub(crate) close_at: Option<u64>,
    /// A capture window's start (stamp, ns): events stamped before it are left out, as begun
    /// outside the session.
    pub(crate) not_before: Option<(u64, u64)>,
}

impl Drain {
    /// Whether an event stamped `stamp` began before the window (compared on its own clock:
    /// an SDK record's BOOTTIME nanoseconds against the start's, ticks against ticks).
    fn before(&self, stamp: u64) -> bool {
        let Some((start_stamp, start_ns)) = self.not_before else { return false };
        let ticks = roctx_sys::clock::is_ticks(stamp);
        if ticks == roctx_sys::clock::is_ticks(start_stamp) {
            stamp < start_stamp
        } else {
            !ticks && stamp < start_ns
        }
    }
}

/// A published open frame's words, relaxed: the count stored next (release) publishes them.
#[inline]
fn store4(cells: &[AtomicU64; 4], words: [u64; 4]) {
    for (cell, word) in cells.iter().zip(words) {
        cell.store(word, Ordering::Relaxed);
    }
}

#[inline]
fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

impl Shared {
    /// Events this thread has published in `session` (0 for another session's).
    pub(crate) fn published_in(&self, session: u32) -> u64 {
        if self.session.load(Ordering::Acquire) == session { self.len.load(Ordering::Acquire) as u64 } else { 0 }
    }

    pub(crate) fn exited(&self) -> bool {
        self.exited.load(Ordering::Acquire)
    }

    fn count(&self, outcome: Outcome, ctx: &Ctx) {
        if !ctx.recording {
            return;
        }
        let s = &self.stats;
        bump(match outcome {
            Outcome::OutsideSession => &s.begun_outside_session,
            Outcome::Paused => &s.paused,
            Outcome::EmptyLabel => &s.dropped_empty_label,
            Outcome::UnmatchedStop => &s.unmatched_stops,
            Outcome::OpenRangeCapped => &s.dropped_open_range_cap,
            Outcome::Truncated => &s.truncated_labels,
        });
    }

    /// Copies this thread's events of `session` out, interning labels, and adds its counters.
    pub(crate) fn drain_into(
        &self,
        session: u32,
        drain: &Drain,
        calibration: &roctx_sys::clock::Calibration,
        events: &mut Vec<Event>,
        interner: &mut StringInterner<BucketBackend>,
        stats: &mut Stats,
    ) {
        if self.session.load(Ordering::Acquire) != session {
            return; // nothing recorded by this thread in this session
        }
        // Both locks before the length: a slot below it names a chunk and a label the owner
        // added (under these locks) before publishing it.
        let chunks = self.chunks.lock();
        let labels = self.labels.lock();
        let len = self.len.load(Ordering::Acquire);
        let tid = self.tid.load(Ordering::Relaxed);
        let mut clock = calibration.converter();
        let mut symbols = vec![u32::MAX; labels.len()];
        let word = |slot: usize, w: usize| chunks[slot / CHUNK][slot % CHUNK][w].load(Ordering::Relaxed);
        events.reserve(len);
        let (mut slot, mut recorded, mut early) = (0, 0u64, 0u64);
        while slot < len {
            let (start, w1, w2) = (word(slot, 0), word(slot, 1), word(slot, 2));
            let (end, tid, end_tid) = if w2 & LONG != 0 {
                slot += 1;
                (word(slot, 0), word(slot, 1), word(slot, 2))
            } else {
                (start.wrapping_add(w1 >> 32), tid, tid)
            };
            slot += 1;
            if drain.before(start) {
                early += 1;
                continue;
            }
            let id = (w1 as u32) as usize; // CAST: the low half is the label id
            let Some(symbol) = symbols.get_mut(id) else { continue }; // never: ids are stored first
            if *symbol == u32::MAX {
                let sym = interner.get_or_intern(String::from_utf8_lossy(&labels[id]));
                // CAST: symbols are u32-backed.
                *symbol = string_interner::Symbol::to_usize(sym) as u32;
            }
            let kind = match (w2 >> 48) as u8 {
                // CAST: the kind byte
                1 => EventKind::Mark,
                2 => EventKind::ProcessRange,
                _ => EventKind::Range,
            };
            events.push(Event {
                kind,
                tid,
                end_tid,
                start_ns: clock.to_ns(start),
                end_ns: clock.to_ns(end),
                label: *symbol,
                depth: (w2 >> 32) as u16, // CAST: the depth bits
                seq: w2 as u32,           // CAST: the low half is the push number
            });
            recorded += 1;
        }
        let mut own = self.stats.load();
        own.recorded = recorded;
        own.begun_outside_session += early;
        stats.add(&own);
        let closed = match drain.close_at {
            Some(end_ns) => self.close_open(end_ns, drain, &labels, &mut symbols, &mut clock, events, interner),
            None => 0,
        };
        if drain.stopping {
            stats.open_at_stop += self.open_recording.load(Ordering::Relaxed).saturating_sub(closed);
        }
    }

    /// A window's end: this thread's open recorded ranges as events ending at `end_ns`, and a
    /// mark there saying how many. Read after the length (so a range whose pop is in the
    /// snapshot is not closed again: its owner lowered the open count before publishing the pop)
    /// and read twice, so a frame its owner was rewriting is not taken half-old. Returns how
    /// many were closed.
    #[allow(clippy::too_many_arguments)]
    fn close_open(
        &self,
        end_ns: u64,
        drain: &Drain,
        labels: &[Arc<[u8]>],
        symbols: &mut [u32],
        clock: &mut roctx_sys::clock::Converter<'_>,
        events: &mut Vec<Event>,
        interner: &mut StringInterner<BucketBackend>,
    ) -> u64 {
        let Some(frames) = self.open_frames.get() else { return 0 };
        let read = || {
            let n = (self.open_recording.load(Ordering::Acquire) as usize).min(MAX_DEPTH);
            let words: Vec<[u64; 4]> = frames[..n].iter().map(|f| [0, 1, 2, 3].map(|w| f[w].load(Ordering::Relaxed))).collect();
            words
        };
        let Some(open) = (0..3).find_map(|_| {
            let first = read();
            (read() == first).then_some(first)
        }) else {
            return 0; // still moving: left counted as open at stop
        };
        let mut closed = 0u64;
        let mut tid = 0;
        for [start, w1, seq, frame_tid] in open {
            if drain.before(start) {
                // Begun before the window (a late push): not this window's. Counted with the
                // ranges still open at the stop, since it is not closed here.
                continue;
            }
            let id = (w1 as u32) as usize; // CAST: the low half is the label id
            let Some(symbol) = symbols.get_mut(id) else { continue };
            if *symbol == u32::MAX {
                // CAST: symbols are u32-backed.
                *symbol = string_interner::Symbol::to_usize(interner.get_or_intern(String::from_utf8_lossy(&labels[id]))) as u32;
            }
            tid = frame_tid;
            // CAST: the depth bits; the push number's low half.
            events.push(Event { kind: EventKind::Range, tid, end_tid: tid, start_ns: clock.to_ns(start), end_ns, label: *symbol, depth: (w1 >> 32) as u16, seq: seq as u32 });
            closed += 1;
        }
        if closed > 0 {
            let text = format!("{}: {closed} open range{} closed here", crate::window::CLOSED_MARK, if closed == 1 { "" } else { "s" });
            // CAST: symbols are u32-backed.
            let label = string_interner::Symbol::to_usize(interner.get_or_intern(text)) as u32;
            events.push(Event { kind: EventKind::Mark, tid, end_tid: tid, start_ns: end_ns, end_ns, label, depth: 0, seq: 0 });
        }
        closed
    }
}

impl Owner {
    /// Moves this buffer to the current session, dropping the previous session's contents.
    #[inline]
    fn sync(&mut self, shared: &Shared, ctx: &Ctx) {
        if self.session != ctx.session {
            self.new_session(shared, ctx);
        }
    }

    #[cold]
    fn new_session(&mut self, shared: &Shared, ctx: &Ctx) {
        self.hot = 0;
        self.session = ctx.session;
        self.cap_events = ctx.cap_events();
        self.cap_label_bytes = ctx.cap_label_bytes();
        self.events = 0;
        self.slots = 0; // chunks are kept for reuse
        self.tid = None;
        self.labels.clear();
        self.label_bytes = 0;
        *self.dedup = [DedupSlot::default(); DEDUP_SLOTS];
        self.by_ptr = [PtrSlot::default(); PTR_SLOTS];
        self.by_handle = [PtrSlot::default(); PTR_SLOTS];
        self.orphans += self.stack.len() as u64 + u64::from(self.overflow);
        self.stack.clear();
        self.overflow = 0;
        self.open_recording = 0;
        shared.labels.lock().clear();
        shared.len.store(0, Ordering::Relaxed);
        shared.tid.store(0, Ordering::Relaxed);
        shared.open_recording.store(0, Ordering::Relaxed);
        shared.stats.reset();
        // Last: a snapshot that sees the new session sees the reset above.
        shared.session.store(ctx.session, Ordering::Release);
    }

    /// After an event of thread `tid`'s own on the general path that found everything plain
    /// (`crate::may_arm`): its next ranges may take the fast path while [`crate::HOT`] is `hot`.
    /// Only once the buffer records under the calling thread's id, which the fast path writes
    /// without being told it.
    #[inline]
    pub(crate) fn arm(&mut self, hot: u64, tid: u64, ctx: &Ctx) {
        if self.session == ctx.session && self.tid == Some(tid) {
            self.hot = hot;
        }
    }

    /// [`Owner::push`] of the thread's own range on the fast path: armed under `hot` (so the
    /// session records, this buffer is in it, nothing is paused and no window is configured), a
    /// level free, and the label found at its address. `None`, with nothing changed, otherwise.
    #[inline(always)]
    pub(crate) fn fast_push(&mut self, shared: &Shared, label: &[u8], hot: u64) -> Option<u32> {
        if self.hot != hot || self.stack.len() >= MAX_DEPTH {
            return None;
        }
        let label = self.label_at_address(label)?;
        Some(self.open_fast(shared, label))
    }

    /// [`Owner::fast_push`] of a registered string (bytes that live and never change for the
    /// process) by its handle: the label id the handle was last stored as this session
    /// ([`Owner::note_handle`]), no length, no compare.
    #[inline(always)]
    pub(crate) fn fast_push_handle(&mut self, shared: &Shared, handle: usize, hot: u64) -> Option<u32> {
        if self.hot != hot || self.stack.len() >= MAX_DEPTH {
            return None;
        }
        let slot = self.by_handle[(handle >> 3) % PTR_SLOTS];
        if slot.ptr != handle {
            return None;
        }
        Some(self.open_fast(shared, slot.id))
    }

    /// A registered string's handle was just pushed on the general path as push number `seq`:
    /// remembered with the label id its range records, for [`Owner::fast_push_handle`].
    pub(crate) fn note_handle(&mut self, handle: usize, seq: u32, ctx: &Ctx) {
        if self.session != ctx.session || handle == 0 {
            return;
        }
        if let Some(&Frame { seq: top, fate: Fate::Record { label }, .. }) = self.stack.last() {
            if top == seq {
                self.by_handle[(handle >> 3) % PTR_SLOTS] = PtrSlot { ptr: handle, id: label };
            }
        }
    }

    /// The fast path's push of a range whose label is stored as `label`.
    ///
    /// The clock only, without the calibration point's check: the pop that closes the range
    /// makes it (a point is due every 100 ms, and one check per pair finds it as well as two).
    /// The counters cannot overflow here: `open_recording` is at most the stack's depth, which
    /// the caller bounded by MAX_DEPTH (so the release build's overflow checks are spared).
    #[inline(always)]
    fn open_fast(&mut self, shared: &Shared, label: u32) -> u32 {
        let start = roctx_sys::clock::now();
        self.pushes = self.pushes.wrapping_add(1).max(1);
        let seq = self.pushes;
        self.open_recording = self.open_recording.wrapping_add(1);
        shared.open_recording.store(self.open_recording, Ordering::Release);
        self.stack.push(Frame { start, seq, fate: Fate::Record { label } });
        seq
    }

    /// [`Owner::pop`] of the thread's own range on the fast path: armed under `hot`, the
    /// innermost range one that records, and room under the event cap. Returns the push number
    /// of the range now innermost; `None`, with nothing changed, otherwise.
    ///
    /// The counters' increments wrap rather than check: `slots` and `events` are below the
    /// session's event cap (a `usize` of memory), and `open_recording` counts the frame popped.
    #[inline(always)]
    pub(crate) fn fast_pop(&mut self, shared: &Shared, hot: u64) -> Option<u32> {
        if self.hot != hot || self.overflow > 0 || self.events >= self.cap_events {
            return None;
        }
        let end = crate::stamp();
        let Some(&Frame { start, seq, fate: Fate::Record { label } }) = self.stack.last() else { return None };
        let depth = self.stack.len() - 1;
        // `last()` just found the frame, so the length is at least 1 (`pop()` would check again).
        self.stack.truncate(depth);
        self.open_recording = self.open_recording.wrapping_sub(1);
        shared.open_recording.store(self.open_recording, Ordering::Relaxed);
        let depth = depth as u16; // CAST: bounded by MAX_DEPTH
        let delta = end.wrapping_sub(start);
        let w2 = u64::from(seq) | u64::from(depth) << 32 | (EventKind::Range as u64) << 48;
        match self.chunks.get(self.slots / CHUNK) {
            Some(chunk) if delta <= u64::from(u32::MAX) => {
                store(&chunk[self.slots % CHUNK], [start, u64::from(label) | delta << 32, w2]);
                self.slots = self.slots.wrapping_add(1);
            }
            _ => {
                let tid = self.tid.unwrap_or_default(); // armed: set
                let e = Slot { start, end, tid, end_tid: tid, label, seq, kind: EventKind::Range, depth };
                self.record_slow(shared, &e, delta, w2);
            }
        }
        self.events = self.events.wrapping_add(1);
        shared.len.store(self.slots, Ordering::Release);
        Some(self.innermost())
    }

    /// Returns the range's push number (0 past [`MAX_DEPTH`]).
    #[inline]
    pub(crate) fn push(&mut self, shared: &Shared, label: &[u8], (ts, tid): (u64, u64), ctx: &Ctx, paused: bool, publish: bool) -> u32 {
        self.sync(shared, ctx);
        if self.stack.len() >= MAX_DEPTH {
            self.overflow += 1;
            if ctx.recording {
                bump(&shared.stats.dropped_too_deep);
            }
            return 0;
        }
        self.pushes = self.pushes.wrapping_add(1).max(1);
        let seq = self.pushes;
        let fate = if !ctx.recording {
            Fate::Skip(Outcome::OutsideSession)
        } else if paused {
            Fate::Skip(Outcome::Paused)
        } else if label.is_empty() {
            Fate::Skip(Outcome::EmptyLabel)
        } else {
            match self.store_label(shared, label) {
                Some(label) => {
                    self.open_recording += 1;
                    if publish {
                        self.publish_open(shared, (ts, tid), label, seq);
                    }
                    shared.open_recording.store(self.open_recording, Ordering::Release);
                    Fate::Record { label }
                }
                None => Fate::LabelCapped,
            }
        };
        self.stack.push(Frame { start: ts, seq, fate });
        seq
    }

    /// The range just pushed, as the `open_recording`-th open frame (the store of the count
    /// that follows publishes it).
    #[inline]
    fn publish_open(&self, shared: &Shared, (ts, tid): (u64, u64), label: u32, seq: u32) {
        let frames = shared.open_frames.get_or_init(|| Box::new(std::array::from_fn(|_| Default::default())));
        let depth = self.stack.len() as u64; // bounded by MAX_DEPTH
        if let Some(frame) = frames.get(self.open_recording as usize - 1) {
            store4(frame, [ts, u64::from(label) | depth << 32, u64::from(seq), tid]);
        }
    }

    /// `opened_unseen`: the emitter of the pop knows a range was open (see `pop_of_open_range`).
    /// Returns the push number of the range now innermost (0: none) and of the range popped
    /// (0: none, or past the depth limit).
    #[inline]
    pub(crate) fn pop(&mut self, shared: &Shared, ts: u64, tid: u64, ctx: &Ctx, opened_unseen: bool) -> (u32, u32) {
        self.sync(shared, ctx);
        if self.overflow > 0 {
            self.overflow -= 1;
            return (self.innermost(), 0);
        }
        let Some(frame) = self.stack.pop() else {
            if self.orphans > 0 {
                self.orphans -= 1;
                shared.count(Outcome::OutsideSession, ctx);
            } else if opened_unseen || crate::window::flags() & crate::window::PUBLISH != 0 {
                // In a capture window, the thread's stack started empty: a pop with nothing
                // open closes a range pushed before the window.
                shared.count(Outcome::OutsideSession, ctx);
            } else if ctx.recording {
                bump(&shared.stats.unmatched_pops);
            }
            return (0, 0);
        };
        match frame.fate {
            Fate::Record { label } => {
                self.open_recording -= 1;
                shared.open_recording.store(self.open_recording, Ordering::Relaxed);
                // Pushed in this session, popped after it stopped: already counted as open at
                // stop.
                if ctx.recording {
                    let depth = self.stack.len() as u16; // CAST: bounded by MAX_DEPTH
                    let seq = frame.seq;
                    self.record(shared, Slot { start: frame.start, end: ts, tid, end_tid: tid, label, seq, kind: EventKind::Range, depth });
                }
            }
            Fate::Skip(outcome) => shared.count(outcome, ctx),
            Fate::LabelCapped => {
                if ctx.recording {
                    bump(&shared.stats.dropped_label_cap);
                }
            }
        }
        (self.innermost(), frame.seq)
    }

    #[inline]
    pub(crate) fn mark(&mut self, shared: &Shared, label: &[u8], ts: u64, tid: u64, ctx: &Ctx, paused: bool) {
        self.instant_or_span(shared, label, (ts, ts), (tid, tid), EventKind::Mark, ctx, paused);
    }

    /// A start/stop range `(start, end)`, started on thread `tids.0` and stopped on `tids.1`.
    pub(crate) fn record_process_range(&mut self, shared: &Shared, label: &str, span: (u64, u64), tids: (u64, u64), ctx: &Ctx) {
        self.instant_or_span(shared, label.as_bytes(), span, tids, EventKind::ProcessRange, ctx, false);
    }

    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn instant_or_span(&mut self, shared: &Shared, label: &[u8], (start, end): (u64, u64), (tid, end_tid): (u64, u64), kind: EventKind, ctx: &Ctx, paused: bool) {
        self.sync(shared, ctx);
        if !ctx.recording {
            return;
        }
        if paused {
            bump(&shared.stats.paused);
        } else if label.is_empty() {
            bump(&shared.stats.dropped_empty_label);
        } else if self.events >= self.cap_events {
            bump(&shared.stats.dropped_event_cap);
        } else if let Some(label) = self.store_label(shared, label) {
            self.record(shared, Slot { start, end, tid, end_tid, label, seq: 0, kind, depth: 0 });
        } else {
            bump(&shared.stats.dropped_label_cap);
        }
    }

    pub(crate) fn current_label(&mut self, shared: &Shared, ctx: &Ctx) -> String {
        self.sync(shared, ctx);
        match self.stack.last() {
            Some(Frame { fate: Fate::Record { label }, .. }) if ctx.recording => {
                String::from_utf8_lossy(&self.labels[*label as usize]).into_owned()
            }
            _ => String::new(),
        }
    }

    pub(crate) fn count(&mut self, shared: &Shared, outcome: Outcome, ctx: &Ctx) {
        self.sync(shared, ctx);
        shared.count(outcome, ctx);
    }

    /// The owner thread is exiting: its open ranges will never close.
    pub(crate) fn thread_exited(&mut self, shared: &Shared, session: u32, active: bool) {
        if active && self.session == session {
            shared.stats.open_at_thread_exit.fetch_add(self.open_recording, Ordering::Relaxed);
        }
        self.hot = 0;
        self.stack.clear();
        self.overflow = 0;
        self.open_recording = 0;
        shared.open_recording.store(0, Ordering::Relaxed);
        shared.exited.store(true, Ordering::Release);
    }

    #[inline]
    /// The push number of the innermost open range (0: none).
    fn innermost(&self) -> u32 {
        self.stack.last().map_or(0, |f| f.seq)
    }

    #[inline]
    fn record(&mut self, shared: &Shared, e: Slot) {
        if self.events >= self.cap_events {
            bump(&shared.stats.dropped_event_cap);
            return;
        }
        let delta = e.end.wrapping_sub(e.start);
        let kind = e.kind as u64;
        let w2 = u64::from(e.seq) | u64::from(e.depth) << 32 | kind << 48;
        // The common case, one slot in a chunk already there, without a loop or a second
        // bounds check (`slot % CHUNK` indexes a fixed-size chunk).
        let short = self.tid == Some(e.tid) && e.end_tid == e.tid && delta <= u64::from(u32::MAX);
        match self.chunks.get(self.slots / CHUNK) {
            Some(chunk) if short => {
                store(&chunk[self.slots % CHUNK], [e.start, u64::from(e.label) | delta << 32, w2]);
                self.slots += 1;
            }
            _ => self.record_slow(shared, &e, delta, w2),
        }
        self.events += 1;
        shared.len.store(self.slots, Ordering::Release);
    }

    /// [`Owner::record`] for the session's first event, a LONG one, or one that needs a chunk.
    #[cold]
    fn record_slow(&mut self, shared: &Shared, e: &Slot, delta: u64, w2: u64) {
        let tid = match self.tid {
            Some(tid) => tid,
            None => {
                shared.tid.store(e.tid, Ordering::Relaxed); // published with the length
                *self.tid.insert(e.tid)
            }
        };
        let long = e.tid != tid || e.end_tid != tid || delta > u64::from(u32::MAX);
        let needed = 1 + usize::from(long);
        while self.slots + needed > self.chunks.len() * CHUNK {
            self.grow(shared);
        }
        let (w1, w2) = if long { (u64::from(e.label), w2 | LONG) } else { (u64::from(e.label) | delta << 32, w2) };
        self.write(self.slots, [e.start, w1, w2]);
        if long {
            self.write(self.slots + 1, [e.end, e.tid, e.end_tid]);
        }
        self.slots += needed;
    }

    fn write(&self, slot: usize, words: [u64; WORDS]) {
        store(&self.chunks[slot / CHUNK][slot % CHUNK], words);
    }

    /// One allocation per CHUNK slots, and only the first time this thread gets here.
    #[cold]
    fn grow(&mut self, shared: &Shared) {
        let chunk: Arc<Chunk> = Arc::new(take_chunk());
        shared.chunks.lock().push(Arc::clone(&chunk));
        self.chunks.push(chunk);
    }

    /// Stores `label` (clipped) once per thread and session and returns its id; `None` past
    /// the byte cap. The common case, a label at the address it had last time with the same
    /// bytes, is inlined into the caller; the rest is [`Owner::store_label_miss`], kept out of
    /// line so that the hit saves no registers for it.
    #[inline(always)]
    fn store_label(&mut self, shared: &Shared, label: &[u8]) -> Option<u32> {
        match self.label_at_address(label) {
            Some(id) => Some(id),
            None => self.store_label_miss(shared, label),
        }
    }

    /// The id of `label` if it is the label last stored from its address, with the same bytes
    /// (the caller may have reused the memory for other text): no hash. A label over
    /// [`MAX_LABEL_BYTES`] never matches (what was stored for it is shorter).
    #[inline(always)]
    fn label_at_address(&self, label: &[u8]) -> Option<u32> {
        let by_ptr = self.by_ptr[(label.as_ptr() as usize >> 3) % PTR_SLOTS];
        (by_ptr.ptr == label.as_ptr() as usize && same_bytes(&self.labels[by_ptr.id as usize], label)).then_some(by_ptr.id)
    }

    /// [`Owner::store_label`] for a label over [`MAX_LABEL_BYTES`] or not found by its address.
    #[cold]
    #[inline(never)]
    fn store_label_miss(&mut self, shared: &Shared, label: &[u8]) -> Option<u32> {
        if label.len() > MAX_LABEL_BYTES {
            bump(&shared.stats.truncated_labels);
        }
        let label = clip_label(label);
        let ptr = label.as_ptr() as usize;
        let slot = (ptr >> 3) % PTR_SLOTS;
        let by_ptr = self.by_ptr[slot];
        if by_ptr.ptr == ptr && same_bytes(&self.labels[by_ptr.id as usize], label) {
            return Some(by_ptr.id); // a clipped label seen before at this address
        }
        let id = self.store_label_hashed(shared, label)?;
        self.by_ptr[slot] = PtrSlot { ptr, id };
        Some(id)
    }

    /// [`Owner::store_label`] through the content hash.
    #[cold]
    fn store_label_hashed(&mut self, shared: &Shared, label: &[u8]) -> Option<u32> {
        let hash = fx_hash(label);
        let slot = (hash as usize) % DEDUP_SLOTS;
        let found = self.dedup[slot];
        if found.id != 0 && found.hash == hash && *self.labels[found.id as usize - 1] == *label {
            return Some(found.id - 1);
        }
        if self.label_bytes + label.len() > self.cap_label_bytes || self.labels.len() >= u32::MAX as usize - 1 {
            return None;
        }
        let id = self.labels.len() as u32; // CAST: bounded above
        let stored: Arc<[u8]> = Arc::from(label);
        shared.labels.lock().push(Arc::clone(&stored));
        self.labels.push(stored);
        self.label_bytes += label.len();
        self.dedup[slot] = DedupSlot { hash, id: id + 1 };
        Some(id)
    }
}

/// An event as [`Owner::record`] takes it.
struct Slot {
    start: u64,
    end: u64,
    tid: u64,
    end_tid: u64,
    label: u32,
    seq: u32,
    kind: EventKind,
    depth: u16,
}

/// `a == b`, inline for labels up to 64 bytes (a `memcmp` call costs more than comparing a
/// typical 40-byte label in place). 16 bytes at a time, which the compiler makes one SSE2
/// compare (`pcmpeqb` + `pmovmskb`); the last block is read ending at the last byte, over bytes
/// already compared, so no byte is compared alone: a 41-byte label takes three block compares
/// (a byte loop for the tail cost 37 instructions per range, 8-byte words 20 more than this;
/// callgrind, issue 44).
#[inline(always)]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n < 16 {
        return if n >= 8 {
            (word(a, 0) ^ word(b, 0)) | (word(a, n - 8) ^ word(b, n - 8)) == 0
        } else if n >= 4 {
            // Two overlapping 4-byte reads.
            let w = |s: &[u8], at: usize| u32::from_ne_bytes([s[at], s[at + 1], s[at + 2], s[at + 3]]);
            (w(a, 0) ^ w(b, 0)) | (w(a, n - 4) ^ w(b, n - 4)) == 0
        } else {
            a.iter().zip(b).all(|(x, y)| x == y)
        };
    }
    if n > 64 {
        return a == b;
    }
    let mut at = 0;
    while at + 16 < n {
        if block(a, at) != block(b, at) {
            return false;
        }
        at += 16;
    }
    block(a, n - 16) == block(b, n - 16)
}

/// The 16 bytes of `s` at `at` (one unaligned vector load); `at + 16 <= s.len()`.
#[inline(always)]
fn block(s: &[u8], at: usize) -> [u8; 16] {
    let mut w = [0u8; 16];
    w.copy_from_slice(&s[at..at + 16]);
    w
}

/// The 8 bytes of `s` at `at` as a word (one unaligned load); `at + 8 <= s.len()`.
#[inline(always)]
fn word(s: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&s[at..at + 8]);
    u64::from_ne_bytes(w)
}

/// rustc's FxHash over 8-byte words: a few ns for a typical 40-byte label.
#[inline]
fn fx_hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h: u64 = bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let word = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        h = (h.rotate_left(5) ^ word).wrapping_mul(K);
    }
    for &b in chunks.remainder() {
        h = (h.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
    }
    h
}

#[cfg(test)]
mod tests {
    #[test]
    fn same_bytes_is_slice_equality() {
        let a: Vec<u8> = (0..80u8).collect();
        for len in 0..80 {
            assert!(super::same_bytes(&a[..len], &a[..len]));
            assert!(!super::same_bytes(&a[..len], &a[..len + 1]));
            for at in 0..len {
                let mut b = a[..len].to_vec();
                b[at] ^= 0x40;
                assert!(!super::same_bytes(&a[..len], &b), "a difference at byte {at} of {len}");
            }
        }
    }
}
