//! Each thread's pending op-scope changes, appended without a lock (issue 42).
//!
//! An op scope begun once per graph node (llama.cpp's `begin_op`) used to take the stage's one
//! mutex, which the source's thread holds while it joins a delivered buffer (tens of µs for a
//! CUPTI buffer of a few hundred kernels): a launching thread that met it waited out the rest of
//! the join, and on launch-bound ops that wait was most of what the hook cost over CUPTI alone.
//! Now a thread appends its changes (a scope entered, an invocation begun, a fused group) to a
//! ring of its own, and the reader moves them into the stage ([`crate::store`]) at the start of
//! everything that reads the stage, under the stage's lock (so there is one reader at a time).
//!
//! The ring is single-producer, single-consumer: the owning thread writes an entry's words with
//! relaxed stores and publishes it with one release store of its `head`; the reader takes the
//! entries below `head` (acquire) and hands their slots back with one release store of `tail`.
//! No atomic read-modify-write and no lock on the appending side: an uncontended mutex here was
//! two of them per change (`lock cmpxchg` and the unlock's swap), once per graph node.
//!
//! Order: a thread's entries are merged in the order it made them, and before any launch
//! record of a kernel it launched after them can be delivered (the launch call comes after the
//! entry, its record after the call), so the join sees what the thread saw.
//!
//! Bounds: a ring holds [`PENDING`] entries. The append that takes it to half full asks the
//! stage's merger thread ([`crate::merger`]) to merge it; the append that fills it (the merger
//! was late, or there is none) tells its thread to merge (taking the stage's lock once per
//! [`PENDING`] changes, only when no reader came by). Its slots are allocated once per thread,
//! at its first change: no allocation on the hot path.
use std::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::ops::Geometry;

/// Entries a thread's ring holds; the append that fills it has its thread merge.
pub(crate) const PENDING: usize = 4096;

/// One change a thread made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The thread whose scope changed (the caller's OS id, as the launch records name it).
    pub(crate) thread: u64,
    /// When: a stamp (`CLOCK_BOOTTIME` ns, or TSC ticks that the merge converts).
    pub(crate) at_ns: u64,
    pub(crate) what: What,
}

/// What changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum What {
    /// The thread's op scope is now `invocation` (0: none), an invocation already in the stage.
    Scope { invocation: u32 },
    /// Invocation `id` was begun with `geometry` of the table as of reset `resets`, and is the
    /// thread's scope from `at_ns`.
    Begin { id: u32, geometry: Geometry, resets: u64 },
    /// Invocation `id` now stands for the fused group `geometry` (of reset `resets`); not a
    /// scope change.
    Fuse { id: u32, geometry: Geometry, resets: u64 },
}

/// `u64` words per entry: thread, time, kind | id << 32, geometry, resets.
const WORDS: usize = 5;

impl Entry {
    fn encode(self) -> [u64; WORDS] {
        let (kind, id, geometry, resets) = match self.what {
            What::Scope { invocation } => (0, invocation, 0, 0),
            What::Begin { id, geometry, resets } => (1, id, geometry, resets),
            What::Fuse { id, geometry, resets } => (2, id, geometry, resets),
        };
        [self.thread, self.at_ns, kind | u64::from(id) << 32, u64::from(geometry), resets]
    }

    fn decode([thread, at_ns, w2, geometry, resets]: [u64; WORDS]) -> Entry {
        let id = (w2 >> 32) as u32; // CAST: the high half holds the id
        let geometry = geometry as Geometry; // CAST: stored from a Geometry
        let what = match w2 & 0xff {
            0 => What::Scope { invocation: id },
            1 => What::Begin { id, geometry, resets },
            _ => What::Fuse { id, geometry, resets },
        };
        Entry { thread, at_ns, what }
    }
}

/// Keeps a counter on a cache line of its own (and the adjacent line a prefetcher pairs with
/// it): the owner stores `head` per change, the reader `tail` per merge.
#[repr(align(128))]
#[derive(Debug, Default)]
struct Padded(AtomicUsize);

/// A thread's ring.
#[derive(Debug)]
struct Log {
    /// Entries appended, ever (the owner stores it, release).
    head: Padded,
    /// Entries merged, ever (the reader stores it, release, under the stage's lock).
    tail: Padded,
    slots: Box<[[AtomicU64; WORDS]]>,
}

/// Every thread's log (a thread's stays here after it exits until the reader found it empty).
static LOGS: Mutex<Vec<Arc<Log>>> = Mutex::new(Vec::new());

/// The calling thread's log, registered at its first change: a slot of the library's
/// static-TLS block (`roctx_sys::tls`), no `__tls_get_addr` per op scope.
// SAFETY: the only slot with this word.
#[allow(unsafe_code)]
static LOCAL: roctx_sys::tls::Slot<Arc<Log>, { roctx_sys::tls::SlotId::OpLog as usize }> =
    unsafe { roctx_sys::tls::Slot::new(register) };

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn register() -> Arc<Log> {
    let slots = (0..PENDING).map(|_| Default::default()).collect();
    let log = Arc::new(Log { head: Padded::default(), tail: Padded::default(), slots });
    lock(&LOGS).push(Arc::clone(&log));
    log
}

/// What an append left in its thread's ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fill {
    /// Room for more.
    Room,
    /// This append took the ring to half full: time to have it merged elsewhere
    /// ([`crate::merger`]).
    Half,
    /// The ring is full: the caller merges now.
    Full,
}

/// Appends `entry` to the calling thread's ring: `Ok(fill)`, or `Err(entry)`, not appended,
/// while the thread's locals are being torn down or if a caller ignored [`Fill::Full`] (the
/// caller takes the stage's lock, which merges what is pending first, and applies it then: the
/// thread's order is kept).
#[inline]
pub(crate) fn push(entry: Entry) -> Result<Fill, Entry> {
    LOCAL
        .with(|log| {
            let head = log.head.0.load(Ordering::Relaxed); // only this thread stores it
            let tail = log.tail.0.load(Ordering::Acquire); // the reader is done with those slots
            let used = head.wrapping_sub(tail);
            if used >= PENDING {
                return None;
            }
            for (cell, word) in log.slots[head % PENDING].iter().zip(entry.encode()) {
                cell.store(word, Ordering::Relaxed);
            }
            log.head.0.store(head.wrapping_add(1), Ordering::Release);
            Some(match used + 1 {
                n if n >= PENDING => Fill::Full,
                n if n == PENDING / 2 => Fill::Half,
                _ => Fill::Room,
            })
        })
        .flatten()
        .ok_or(entry)
}

/// Moves every thread's pending entries out, in each thread's order, to `apply`. The caller
/// holds the stage's lock: one reader at a time.
pub(crate) fn drain(mut apply: impl FnMut(Entry)) {
    let mut logs = lock(&LOGS);
    logs.retain(|log| {
        // Whether its thread is gone, read before the entries: a thread that appended and then
        // exited between the two reads would otherwise be forgotten with an entry unread.
        let exited = Arc::strong_count(log) == 1;
        fence(Ordering::Acquire);
        let tail = log.tail.0.load(Ordering::Relaxed); // readers are serialized by the stage's lock
        let head = log.head.0.load(Ordering::Acquire);
        let mut at = tail;
        #[cfg(test)]
        let mut last = None;
        while at != head {
            let words = std::array::from_fn(|w| log.slots[at % PENDING][w].load(Ordering::Relaxed));
            let entry = Entry::decode(words);
            #[cfg(test)]
            {
                last = Some(entry);
            }
            apply(entry);
            at = at.wrapping_add(1);
        }
        if head != tail {
            log.tail.0.store(head, Ordering::Release);
        }
        #[cfg(test)]
        AFTER_READ.with(|hook| hook.borrow_mut().as_mut().map(|hook| hook(last)));
        // A thread that exited (only this list holds its log) and left nothing is forgotten.
        !exited
    });
}

/// Tests: what [`AFTER_READ`] runs, given the last entry read from a log.
#[cfg(test)]
pub(crate) type AfterRead = Box<dyn FnMut(Option<Entry>)>;

#[cfg(test)]
thread_local! {
    /// Tests: runs on the reading thread after each log's entries were read (the last one read
    /// given), before the log is kept or forgotten.
    pub(crate) static AFTER_READ: std::cell::RefCell<Option<AfterRead>> = std::cell::RefCell::new(None);
}

/// Whether the calling thread has a log (tests).
#[cfg(test)]
pub(crate) fn pending_here() -> usize {
    if !LOCAL.exists() {
        return 0;
    }
    LOCAL.with(|log| log.head.0.load(Ordering::Relaxed).wrapping_sub(log.tail.0.load(Ordering::Relaxed))).unwrap_or(0)
}

thread_local! {
    static HELD: std::cell::RefCell<Option<MutexGuard<'static, Vec<Arc<Log>>>>> = const { std::cell::RefCell::new(None) };
}

/// Before `fork()`, with the stage's lock held (so no reader is in [`drain`]): takes the list's
/// lock, which a thread registering its log may hold.
pub(crate) fn fork_prepare() {
    let held = lock(&LOGS);
    let _ = HELD.try_with(|h| *h.borrow_mut() = Some(held));
}

/// After `fork()`, in the parent.
pub(crate) fn fork_parent() {
    let _ = HELD.try_with(|h| h.borrow_mut().take());
}

/// After `fork()`, in the child: only the forking thread exists; the other threads' logs (one
/// may have been left mid-append) are forgotten, and its own is emptied (the parent's
/// changes are the parent's).
pub(crate) fn fork_child() {
    let _ = HELD.try_with(|h| {
        if let Some(mut logs) = h.borrow_mut().take() {
            logs.clear();
            // Not `get_or_init`: registering takes the list's lock, held here.
            if let Some(own) = LOCAL.exists().then(|| LOCAL.with(Arc::clone)).flatten() {
                own.tail.0.store(own.head.0.load(Ordering::Relaxed), Ordering::Release);
                logs.push(own);
            }
        }
    });
}
