//! One thread's buffer: its range stack, its recorded events and its label bytes. Only the
//! owning thread appends; a snapshot locks it briefly to copy out, so the mutex is uncontended
//! on the hot path.

use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use string_interner::backend::BucketBackend;
use string_interner::StringInterner;

use super::{Ctx, Event, EventKind, Outcome, Stats};

/// Deepest push/pop nesting recorded per thread; deeper ranges are counted, not recorded, and
/// the nesting stays balanced.
pub const MAX_DEPTH: usize = 256;
/// Longest label kept, in bytes; longer labels keep their first bytes.
pub const MAX_LABEL_BYTES: usize = 4096;
/// Events per chunk: chunks are allocated on first need and reused by later sessions.
const CHUNK: usize = 4096;
/// Direct-mapped cache of recent labels, so a label that repeats is stored once per thread.
const DEDUP_SLOTS: usize = 256;
/// Direct-mapped cache keyed by the label's address: a label passed again from the same place
/// (a registered string, a thunk's annotation) is found without hashing it, only compared.
const PTR_SLOTS: usize = 64;

/// `label` cut to [`MAX_LABEL_BYTES`].
pub(crate) fn clip_label(label: &[u8]) -> &[u8] {
    &label[..label.len().min(MAX_LABEL_BYTES)]
}

#[derive(Debug, Clone, Copy)]
struct RawEvent {
    start_ns: u64,
    end_ns: u64,
    tid: u64,
    end_tid: u64,
    label_off: u32,
    label_len: u32,
    /// The range's per-thread push number ([`crate::Event::seq`]); 0 for marks and spans.
    seq: u32,
    kind: EventKind,
    depth: u16,
}

const EMPTY_EVENT: RawEvent = RawEvent {
    start_ns: 0,
    end_ns: 0,
    tid: 0,
    end_tid: 0,
    label_off: 0,
    label_len: 0,
    seq: 0,
    kind: EventKind::Range,
    depth: 0,
};

/// What a pushed range will become at its pop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Record { label_off: u32, label_len: u32 },
    Skip(Outcome),
    LabelCapped,
}

#[derive(Debug, Clone, Copy)]
struct Frame {
    start_ns: u64,
    /// This thread's push number of the range (from 1, wrapping past 0).
    seq: u32,
    fate: Fate,
}

#[derive(Debug, Clone, Copy, Default)]
struct DedupSlot {
    hash: u64,
    off: u32,
    len: u32,
}

/// Where the bytes last passed from address `ptr` are stored (`ptr` 0: empty slot).
#[derive(Debug, Clone, Copy, Default)]
struct PtrSlot {
    ptr: usize,
    off: u32,
    len: u32,
}

struct Inner {
    /// Session these contents belong to; a newer session resets them at the next event.
    session: u32,
    chunks: Vec<Box<[RawEvent]>>,
    len: usize,
    labels: Vec<u8>,
    dedup: Box<[DedupSlot; DEDUP_SLOTS]>,
    by_ptr: [PtrSlot; PTR_SLOTS],
    stack: Vec<Frame>,
    /// Pushes beyond MAX_DEPTH still open.
    overflow: u32,
    /// Ranges open when a new session began: their pops are "begun outside", not "unmatched".
    orphans: u64,
    /// Pushes this thread made, for the process's lifetime (the last range's [`Frame::seq`]).
    pushes: u32,
    stats: Stats,
}

/// See the module docs.
pub(crate) struct ThreadBuffer {
    exited: AtomicBool,
    inner: Mutex<Inner>,
}

impl ThreadBuffer {
    pub(crate) fn new() -> ThreadBuffer {
        ThreadBuffer {
            exited: AtomicBool::new(false),
            inner: Mutex::new(Inner {
                session: 0,
                chunks: Vec::new(),
                len: 0,
                labels: Vec::new(),
                dedup: Box::new([DedupSlot::default(); DEDUP_SLOTS]),
                by_ptr: [PtrSlot::default(); PTR_SLOTS],
                stack: Vec::with_capacity(MAX_DEPTH),
                overflow: 0,
                orphans: 0,
                pushes: 0,
                stats: Stats::default(),
            }),
        }
    }

    pub(crate) fn exited(&self) -> bool {
        self.exited.load(Ordering::Acquire)
    }

    /// Returns the range's push number (0 past [`MAX_DEPTH`]).
    pub(crate) fn push(&self, label: &[u8], ts: u64, ctx: &Ctx, paused: bool) -> u32 {
        let mut inner = self.inner.lock();
        inner.sync(ctx);
        if inner.stack.len() >= MAX_DEPTH {
            inner.overflow += 1;
            if ctx.recording {
                inner.stats.dropped_too_deep += 1;
            }
            return 0;
        }
        inner.pushes = inner.pushes.wrapping_add(1).max(1);
        let seq = inner.pushes;
        let fate = if !ctx.recording {
            Fate::Skip(Outcome::OutsideSession)
        } else if paused {
            Fate::Skip(Outcome::Paused)
        } else if label.is_empty() {
            Fate::Skip(Outcome::EmptyLabel)
        } else {
            match inner.store_label(label, ctx.cap_label_bytes) {
                Some((label_off, label_len)) => Fate::Record { label_off, label_len },
                None => Fate::LabelCapped,
            }
        };
        inner.stack.push(Frame { start_ns: ts, seq, fate });
        seq
    }

    /// `opened_unseen`: the emitter of the pop knows a range was open (see `pop_of_open_range`).
    /// Returns the push number of the range now innermost (0: none).
    pub(crate) fn pop(&self, ts: u64, tid: u64, ctx: &Ctx, opened_unseen: bool) -> u32 {
        let mut inner = self.inner.lock();
        inner.sync(ctx);
        if inner.overflow > 0 {
            inner.overflow -= 1;
            return inner.innermost();
        }
        let Some(frame) = inner.stack.pop() else {
            if inner.orphans > 0 {
                inner.orphans -= 1;
                inner.count(Outcome::OutsideSession, ctx);
            } else if opened_unseen {
                inner.count(Outcome::OutsideSession, ctx);
            } else if ctx.recording {
                inner.stats.unmatched_pops += 1;
            }
            return 0;
        };
        match frame.fate {
            // Pushed in this session, popped after it stopped: already counted as open at stop.
            Fate::Record { .. } if !ctx.recording => {}
            Fate::Record { label_off, label_len } => {
                let depth = inner.stack.len() as u16; // CAST: bounded by MAX_DEPTH
                inner.record(
                    RawEvent { start_ns: frame.start_ns, end_ns: ts, tid, end_tid: tid, label_off, label_len, seq: frame.seq, kind: EventKind::Range, depth },
                    ctx,
                );
            }
            Fate::Skip(outcome) => inner.count(outcome, ctx),
            Fate::LabelCapped => {
                if ctx.recording {
                    inner.stats.dropped_label_cap += 1;
                }
            }
        }
        inner.innermost()
    }

    pub(crate) fn mark(&self, label: &[u8], ts: u64, tid: u64, ctx: &Ctx, paused: bool) {
        self.instant_or_span(label, ts, ts, tid, tid, EventKind::Mark, ctx, paused);
    }

    pub(crate) fn record_process_range(&self, label: &str, start_ns: u64, end_ns: u64, tid: u64, end_tid: u64, ctx: &Ctx) {
        self.instant_or_span(label.as_bytes(), start_ns, end_ns, tid, end_tid, EventKind::ProcessRange, ctx, false);
    }

    #[allow(clippy::too_many_arguments)]
    fn instant_or_span(&self, label: &[u8], start_ns: u64, end_ns: u64, tid: u64, end_tid: u64, kind: EventKind, ctx: &Ctx, paused: bool) {
        let mut inner = self.inner.lock();
        inner.sync(ctx);
        if !ctx.recording {
            return;
        }
        if paused {
            inner.stats.paused += 1;
        } else if label.is_empty() {
            inner.stats.dropped_empty_label += 1;
        } else if inner.len >= ctx.cap_events {
            inner.stats.dropped_event_cap += 1;
        } else if let Some((label_off, label_len)) = inner.store_label(label, ctx.cap_label_bytes) {
            inner.record(RawEvent { start_ns, end_ns, tid, end_tid, label_off, label_len, seq: 0, kind, depth: 0 }, ctx);
        } else {
            inner.stats.dropped_label_cap += 1;
        }
    }

    pub(crate) fn current_label(&self, ctx: &Ctx) -> String {
        let mut inner = self.inner.lock();
        inner.sync(ctx);
        match inner.stack.last() {
            Some(Frame { fate: Fate::Record { label_off, label_len }, .. }) if ctx.recording => {
                let (off, len) = (*label_off as usize, *label_len as usize);
                String::from_utf8_lossy(&inner.labels[off..off + len]).into_owned()
            }
            _ => String::new(),
        }
    }

    pub(crate) fn count(&self, outcome: Outcome, ctx: &Ctx) {
        let mut inner = self.inner.lock();
        inner.sync(ctx);
        inner.count(outcome, ctx);
    }

    /// The owner thread is exiting: its open ranges will never close.
    pub(crate) fn thread_exited(&self, session: u32, active: bool) {
        let mut inner = self.inner.lock();
        if active && inner.session == session {
            let open = inner.open_recording();
            inner.stats.open_at_thread_exit += open;
        }
        inner.stack.clear();
        inner.overflow = 0;
        self.exited.store(true, Ordering::Release);
    }

    /// Copies this thread's events of `session` out, interning labels, and adds its counters.
    pub(crate) fn drain_into(
        &self,
        session: u32,
        stopping: bool,
        calibration: &roctx_sys::clock::Calibration,
        events: &mut Vec<Event>,
        interner: &mut StringInterner<BucketBackend>,
        stats: &mut Stats,
    ) {
        let inner = self.inner.lock();
        if inner.session != session {
            return; // nothing recorded by this thread in this session
        }
        events.reserve(inner.len);
        let mut clock = calibration.converter();
        let mut last: Option<(u32, u32, u32)> = None; // labels repeat: skip re-interning
        for i in 0..inner.len {
            let raw = &inner.chunks[i / CHUNK][i % CHUNK];
            let symbol = match last {
                Some((off, len, sym)) if off == raw.label_off && len == raw.label_len => sym,
                _ => {
                    let bytes = &inner.labels[raw.label_off as usize..(raw.label_off + raw.label_len) as usize];
                    let sym = interner.get_or_intern(String::from_utf8_lossy(bytes));
                    // CAST: symbols are u32-backed.
                    let sym = string_interner::Symbol::to_usize(sym) as u32;
                    last = Some((raw.label_off, raw.label_len, sym));
                    sym
                }
            };
            events.push(Event {
                kind: raw.kind,
                tid: raw.tid,
                end_tid: raw.end_tid,
                start_ns: clock.to_ns(raw.start_ns),
                end_ns: clock.to_ns(raw.end_ns),
                label: symbol,
                depth: raw.depth,
                seq: raw.seq,
            });
        }
        stats.add(&inner.stats);
        if stopping {
            stats.open_at_stop += inner.open_recording();
        }
    }
}

impl Inner {
    /// Moves this buffer to the current session, dropping the previous session's contents.
    #[inline]
    fn sync(&mut self, ctx: &Ctx) {
        if self.session == ctx.session {
            return;
        }
        self.session = ctx.session;
        self.len = 0; // chunks are kept for reuse
        self.labels.clear();
        *self.dedup = [DedupSlot::default(); DEDUP_SLOTS];
        self.by_ptr = [PtrSlot::default(); PTR_SLOTS];
        self.orphans += self.stack.len() as u64 + u64::from(self.overflow);
        self.stack.clear();
        self.overflow = 0;
        self.stats = Stats::default();
    }

    fn open_recording(&self) -> u64 {
        self.stack.iter().filter(|f| matches!(f.fate, Fate::Record { .. })).count() as u64
    }

    fn count(&mut self, outcome: Outcome, ctx: &Ctx) {
        if !ctx.recording {
            return;
        }
        let s = &mut self.stats;
        match outcome {
            Outcome::OutsideSession => s.begun_outside_session += 1,
            Outcome::Paused => s.paused += 1,
            Outcome::EmptyLabel => s.dropped_empty_label += 1,
            Outcome::UnmatchedStop => s.unmatched_stops += 1,
            Outcome::OpenRangeCapped => s.dropped_open_range_cap += 1,
            Outcome::Truncated => s.truncated_labels += 1,
        }
    }

    #[inline]
    /// The push number of the innermost open range (0: none).
    fn innermost(&self) -> u32 {
        self.stack.last().map_or(0, |f| f.seq)
    }

    fn record(&mut self, event: RawEvent, ctx: &Ctx) {
        if self.len >= ctx.cap_events {
            self.stats.dropped_event_cap += 1;
            return;
        }
        let (chunk, slot) = (self.len / CHUNK, self.len % CHUNK);
        if chunk == self.chunks.len() {
            // One allocation per CHUNK events, and only the first time this thread gets here.
            self.chunks.push(vec![EMPTY_EVENT; CHUNK].into_boxed_slice());
        }
        self.chunks[chunk][slot] = event;
        self.len += 1;
        self.stats.recorded += 1;
    }

    /// Stores `label` (clipped) once per thread and session; `None` past the byte cap.
    #[inline]
    fn store_label(&mut self, label: &[u8], cap: usize) -> Option<(u32, u32)> {
        if label.len() > MAX_LABEL_BYTES {
            self.stats.truncated_labels += 1;
        }
        let label = clip_label(label);
        // Same address as a recent label: compare the bytes (the caller may have reused the
        // memory for other text), no hash.
        // A slice's address is never 0, so an empty slot (ptr 0) never matches.
        let ptr = label.as_ptr() as usize;
        let slot = (ptr >> 3) % PTR_SLOTS;
        let by_ptr = self.by_ptr[slot];
        if by_ptr.ptr == ptr && by_ptr.len as usize == label.len() {
            let (off, len) = (by_ptr.off as usize, by_ptr.len as usize);
            if &self.labels[off..off + len] == label {
                return Some((by_ptr.off, by_ptr.len));
            }
        }
        let stored = self.store_label_hashed(label, cap)?;
        self.by_ptr[slot] = PtrSlot { ptr, off: stored.0, len: stored.1 };
        Some(stored)
    }

    /// [`Inner::store_label`] through the content hash.
    fn store_label_hashed(&mut self, label: &[u8], cap: usize) -> Option<(u32, u32)> {
        let hash = fx_hash(label);
        let slot = &self.dedup[(hash as usize) % DEDUP_SLOTS];
        if slot.hash == hash && slot.len as usize == label.len() {
            let (off, len) = (slot.off as usize, slot.len as usize);
            if &self.labels[off..off + len] == label {
                return Some((slot.off, slot.len));
            }
        }
        if self.labels.len() + label.len() > cap || self.labels.len() + label.len() > u32::MAX as usize {
            return None;
        }
        // CAST: both fit in u32, checked above.
        let (off, len) = (self.labels.len() as u32, label.len() as u32);
        self.labels.extend_from_slice(label);
        self.dedup[(hash as usize) % DEDUP_SLOTS] = DedupSlot { hash, off, len };
        Some((off, len))
    }
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
