//! The launch join: which op scope was open on a kernel's launching thread when its launch call
//! ran, from records the vendor produces anyway, instead of a vendor call per range or op.
//!
//! A source hands the stage two streams, in any order and in batches:
//!
//! - [`Launch`]es: the host API calls that enqueue work (CUPTI RUNTIME/DRIVER records,
//!   rocprofiler-sdk HIP_RUNTIME_API records): correlation id, thread, start and end on
//!   `CLOCK_BOOTTIME`;
//! - dispatches ([`crate::RawDispatch`] with `by_launch`), each naming its launch by
//!   correlation id (graph replays and multi-kernel calls share one).
//!
//! The op side of the join uses each thread's log of op-scope changes ([`ScopeLogs`]), stamped on
//! the same clock by the thread itself when it begins or ends a scope. The range side is the
//! exporter's (`roctx_export`): ranges live in the collector, a sibling this stage never names.
//!
//! # The rule
//!
//! A launch happens at its **instant**, the middle of its API call. It belongs to what was open
//! on its thread at that instant: the op scope begun at or before it and not yet changed, the
//! innermost range pushed at or before it and not yet popped (half-open intervals: a change
//! stamped exactly at the instant counts as before it). On one thread no push, pop or op change
//! can fall inside a launch call, so with a common clock the rule is exact whenever the call
//! lasts longer than 0 ns; ranges, whose clock is converted, stay exact while the conversion
//! error is below half the call's duration (docs/kernels.md gives the measured bound).
//!
//! # Bounds
//!
//! - Launches are kept in a direct-mapped window of [`LAUNCH_WINDOW`] slots by correlation id
//!   (ids are dense and increasing in both sources): a launch lives until a launch
//!   [`LAUNCH_WINDOW`] ids younger takes its slot. Launches with no kernel (most API calls) need
//!   no other cleanup.
//! - A dispatch whose launch has not arrived waits (at most [`MAX_WAITING`]; the sources deliver
//!   a kernel record before its API record when a short kernel ends before its launch call
//!   returns) until the launch arrives, or until [`settle`](crate::settle) after a flush.
//! - Each thread's op log keeps at most [`MAX_SCOPE_LOG`] changes, and none older than
//!   [`SCOPE_RETAIN_NS`] behind the newest joined launch.
//!
//! A dispatch that can't be joined (its launch never came, was pushed out of the window, or is
//! older than what its thread's log still holds) is kept, with no op, and counted in
//! [`crate::KernelStats::unjoined`].

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

/// Launch slots kept (about 6 MiB, allocated at the first launch).
pub const LAUNCH_WINDOW: usize = 1 << 18;
/// Dispatches kept waiting for their launch; past it the oldest is attributed to nothing.
pub const MAX_WAITING: usize = 1 << 17;
/// Op-scope changes kept per thread.
pub const MAX_SCOPE_LOG: usize = 1 << 16;
/// Op-scope changes older than this behind the newest joined launch are dropped.
pub const SCOPE_RETAIN_NS: u64 = 30_000_000_000;

/// A host API call that may have enqueued GPU work.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Launch {
    /// The source's correlation id of the call (kernel records carry the same).
    pub correlation_id: u64,
    /// The calling thread's OS id (what the collector and the op logs use).
    pub thread_id: u64,
    /// Call entry, `CLOCK_BOOTTIME` ns.
    pub start_ns: u64,
    /// Call exit, `CLOCK_BOOTTIME` ns (a record with end before start is read as zero-length).
    pub end_ns: u64,
}

impl Launch {
    /// The middle of the call: the moment the join places the launch at.
    pub fn instant(&self) -> u64 {
        self.start_ns + self.end_ns.saturating_sub(self.start_ns) / 2
    }
}

#[derive(Clone, Copy)]
struct Slot {
    correlation_id: u64,
    thread_id: u64,
    instant: u64,
}

const EMPTY: Slot = Slot { correlation_id: u64::MAX, thread_id: 0, instant: 0 };

/// The launches not yet overwritten, by correlation id.
#[derive(Default)]
pub(crate) struct Launches {
    slots: Vec<Slot>,
}

impl Launches {
    pub(crate) fn insert(&mut self, l: &Launch) {
        if l.correlation_id == EMPTY.correlation_id {
            return; // the empty slot's marker; no source numbers a call so
        }
        if self.slots.is_empty() {
            self.slots = vec![EMPTY; LAUNCH_WINDOW];
        }
        let i = Self::index(l.correlation_id);
        self.slots[i] = Slot { correlation_id: l.correlation_id, thread_id: l.thread_id, instant: l.instant() };
    }

    /// `(thread, instant)` of the launch `correlation_id`, if still in the window.
    #[inline]
    pub(crate) fn get(&self, correlation_id: u64) -> Option<(u64, u64)> {
        let s = self.slots.get(Self::index(correlation_id))?;
        (s.correlation_id == correlation_id && correlation_id != EMPTY.correlation_id).then_some((s.thread_id, s.instant))
    }

    #[inline]
    fn index(correlation_id: u64) -> usize {
        // CAST: masked to the window, which fits usize.
        (correlation_id as usize) & (LAUNCH_WINDOW - 1)
    }

    pub(crate) fn clear(&mut self) {
        self.slots = Vec::new();
    }
}

/// One thread's op-scope changes, oldest first (appended by the thread itself, in order).
#[derive(Default)]
struct ScopeLog {
    changes: VecDeque<(u64, u32)>,
    /// Instants before this one can no longer be answered (changes were dropped); 0: none were.
    floor_ns: u64,
    /// Where the last answer was found: kernels arrive roughly in launch order, so the next
    /// answer is usually there or a few changes later.
    finger: usize,
}

impl ScopeLog {
    /// How many changes are stamped at or before `instant`.
    fn count_until(&mut self, instant: u64) -> usize {
        let c = &self.changes;
        let mut at = self.finger.min(c.len());
        if at > 0 && c[at - 1].0 > instant {
            at = self.search(instant);
        } else {
            // Forward from the finger; a long way off, search instead.
            let stop = (at + 32).min(c.len());
            while at < stop && c[at].0 <= instant {
                at += 1;
            }
            if at == stop && at < c.len() && c[at].0 <= instant {
                at = self.search(instant);
            }
        }
        self.finger = at;
        at
    }

    /// [`ScopeLog::count_until`] by binary search over the deque's two halves.
    fn search(&self, instant: u64) -> usize {
        let (a, b) = self.changes.as_slices();
        let before = |s: &[(u64, u32)]| s.partition_point(|&(t, _)| t <= instant);
        match before(b) {
            0 => before(a),
            k => a.len() + k,
        }
    }

    fn pop_front(&mut self) {
        self.changes.pop_front();
        self.finger = self.finger.saturating_sub(1);
    }
}

/// Thread ids are already well spread: a multiply is hash enough (std's SipHash was a third of
/// the join's time).
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (n ^ (n >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Every thread's op-scope changes.
#[derive(Default)]
pub(crate) struct ScopeLogs {
    logs: HashMap<u64, ScopeLog, BuildHasherDefault<IdHasher>>,
    /// The newest launch instant joined so far, the clock that ages the logs.
    newest_ns: u64,
}

impl ScopeLogs {
    /// `thread` changed its op scope to `invocation` (0: none) at `at_ns`.
    pub(crate) fn changed(&mut self, thread: u64, at_ns: u64, invocation: u32) {
        let log = self.logs.entry(thread).or_default();
        if log.changes.back().is_some_and(|&(_, inv)| inv == invocation) {
            return; // no change (an op_end with nothing open, a repeated begin of the sentinel)
        }
        if log.changes.len() >= MAX_SCOPE_LOG {
            log.pop_front();
            log.floor_ns = log.changes.front().map_or(at_ns, |&(t, _)| t);
        }
        log.changes.push_back((at_ns, invocation));
    }

    /// The op scope open on `thread` at `instant`: `Some(0)` for none, `None` when the log no
    /// longer reaches back that far.
    #[inline]
    pub(crate) fn at(&mut self, thread: u64, instant: u64) -> Option<u32> {
        self.newest_ns = self.newest_ns.max(instant);
        let Some(log) = self.logs.get_mut(&thread) else { return Some(0) };
        let n = log.count_until(instant);
        if n == 0 {
            return if log.floor_ns != 0 && instant < log.floor_ns { None } else { Some(0) };
        }
        log.changes.get(n - 1).map(|&(_, inv)| inv)
    }

    /// Drops changes the window no longer needs, and the logs of threads that went quiet with
    /// no scope open.
    pub(crate) fn prune(&mut self) {
        let horizon = self.newest_ns.saturating_sub(SCOPE_RETAIN_NS);
        if horizon == 0 {
            return;
        }
        self.logs.retain(|_, log| {
            while log.changes.len() >= 2 && log.changes[1].0 <= horizon {
                log.pop_front();
                log.floor_ns = log.changes[0].0;
            }
            !(log.changes.len() == 1 && log.changes[0].1 == 0 && log.changes[0].0 <= horizon)
        });
    }

    /// Changes kept, over all threads (for tests and the benchmarks' memory check).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.logs.values().map(|l| l.changes.len()).sum()
    }

    pub(crate) fn clear(&mut self) {
        *self = ScopeLogs::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_instant_is_the_middle_of_the_call() {
        let l = |s, e| Launch { correlation_id: 1, thread_id: 1, start_ns: s, end_ns: e };
        assert_eq!(l(100, 200).instant(), 150);
        assert_eq!(l(100, 100).instant(), 100);
        assert_eq!(l(100, 50).instant(), 100, "an end before the start reads as zero-length");
        assert_eq!(l(u64::MAX - 1, u64::MAX).instant(), u64::MAX - 1);
    }

    #[test]
    fn a_launch_lives_until_a_window_younger_one_takes_its_slot() {
        let mut w = Launches::default();
        assert_eq!(w.get(5), None);
        w.insert(&Launch { correlation_id: 5, thread_id: 9, start_ns: 10, end_ns: 20 });
        assert_eq!(w.get(5), Some((9, 15)));
        assert_eq!(w.get(5), Some((9, 15)), "a graph launch has many kernels: a lookup keeps it");
        w.insert(&Launch { correlation_id: 5 + LAUNCH_WINDOW as u64, thread_id: 3, start_ns: 0, end_ns: 0 });
        assert_eq!(w.get(5), None, "pushed out");
        assert_eq!(w.get(5 + LAUNCH_WINDOW as u64), Some((3, 0)));
        assert_eq!(w.get(u64::MAX), None, "the empty slot's marker is never a hit");
    }

    #[test]
    fn changes_stamped_at_the_instant_count_as_before_it() {
        let mut s = ScopeLogs::default();
        s.changed(1, 100, 7);
        s.changed(1, 200, 0);
        s.changed(1, 200, 8); // end and a new begin at the same ns: program order decides
        assert_eq!(s.at(1, 99), Some(0));
        assert_eq!(s.at(1, 100), Some(7), "begun at the instant");
        assert_eq!(s.at(1, 199), Some(7));
        assert_eq!(s.at(1, 200), Some(8), "the last change at that ns");
        assert_eq!(s.at(2, 150), Some(0), "a thread with no log has no op");
    }

    #[test]
    fn lookups_in_any_order_agree_with_a_plain_search() {
        let mut s = ScopeLogs::default();
        for i in 0..500u64 {
            s.changed(1, 100 + i * 10, (i % 7) as u32 + (i % 3 == 0) as u32 * 100);
        }
        let truth = |instant: u64| -> u32 {
            let mut v = 0;
            for i in 0..500u64 {
                if 100 + i * 10 <= instant {
                    v = (i % 7) as u32 + (i % 3 == 0) as u32 * 100;
                }
            }
            v
        };
        // Forward in small steps, a long jump forward, backwards, and random.
        let mut probes: Vec<u64> = (0..600).map(|i| 95 + i * 3).collect();
        probes.extend([5_000, 5_100, 3_000, 99, 100, 5_095, 2_000, 4_990, 4_999, 5_000]);
        probes.extend((0..300u64).map(|i| (i.wrapping_mul(0x9E37_79B9) >> 7) % 5_200));
        for p in probes {
            assert_eq!(s.at(1, p), Some(truth(p)), "at {p}");
        }
    }

    #[test]
    fn a_full_log_forgets_its_oldest_changes_and_says_so() {
        let mut s = ScopeLogs::default();
        for i in 0..(MAX_SCOPE_LOG as u64 + 10) {
            s.changed(1, 1000 + i * 10, (i % 2 + 1) as u32); // alternating 1, 2
        }
        assert_eq!(s.len(), MAX_SCOPE_LOG);
        assert_eq!(s.at(1, 1000), None, "dropped: unknown, not 'no op'");
        assert_eq!(s.at(1, 1000 + 95), None);
        assert_eq!(s.at(1, 1000 + 100), Some(1), "the oldest kept change");
        let last = 1000 + (MAX_SCOPE_LOG as u64 + 9) * 10;
        assert_eq!(s.at(1, last + 5), Some(2));
    }

    #[test]
    fn the_retention_window_follows_the_newest_launch() {
        let mut s = ScopeLogs::default();
        s.changed(1, 10, 1);
        s.changed(1, 20, 0);
        s.changed(2, 15, 4); // a scope left open
        s.changed(1, SCOPE_RETAIN_NS + 100, 2);
        assert_eq!(s.at(1, SCOPE_RETAIN_NS + 200), Some(2));
        s.prune();
        assert_eq!(s.at(1, 12), None, "older than the window");
        assert_eq!(s.at(1, SCOPE_RETAIN_NS + 50), Some(0), "the change in effect at the horizon is kept");
        assert_eq!(s.at(2, SCOPE_RETAIN_NS), Some(4), "an open scope is never forgotten");
        s.changed(3, 30, 5);
        s.changed(3, 40, 0);
        s.prune();
        assert!(!s.logs.contains_key(&3), "a quiet thread with nothing open goes");
        assert_eq!(s.at(3, SCOPE_RETAIN_NS + 300), Some(0));
    }
}
