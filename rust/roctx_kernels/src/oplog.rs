//! Each thread's pending op-scope changes, appended without the stage's lock (issue 42).
//!
//! An op scope begun once per graph node (llama.cpp's `begin_op`) used to take the stage's one
//! mutex, which the source's thread holds while it joins a delivered buffer (tens of µs for a
//! CUPTI buffer of a few hundred kernels): a launching thread that met it waited out the rest of
//! the join, and on launch-bound ops that wait was most of what the hook cost over CUPTI alone.
//! Now a thread appends its changes (a scope entered, an invocation begun, a fused group) to a
//! log of its own, behind a mutex only it and the stage's reader take, and the reader moves
//! them into the stage ([`crate::store`]) at the start of everything that reads the stage, under
//! the stage's lock. The reader swaps the log's vector out (holding the thread's lock for a
//! swap, not for the merge), so the launching thread never waits for a join.
//!
//! Order: a thread's entries are merged in the order it made them, and before any launch
//! record of a kernel it launched after them can be delivered (the launch call comes after the
//! entry, its record after the call), so the join sees what the thread saw.
//!
//! Bounds: a log holds at most [`PENDING`] entries; the thread that fills it merges it itself
//! (taking the stage's lock once per [`PENDING`] changes, only when no reader came by). The
//! vectors are allocated once per thread at that capacity and handed back and forth, never
//! grown: no allocation on the hot path after a thread's first change.
use std::cell::OnceCell;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::ops::Geometry;

/// Entries a thread's log holds before that thread merges it itself.
pub(crate) const PENDING: usize = 4096;

/// One change a thread made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The thread whose scope changed (the caller's OS id, as the launch records name it).
    pub(crate) thread: u64,
    /// When (`CLOCK_BOOTTIME` ns).
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

/// A thread's log.
#[derive(Debug, Default)]
struct Log {
    pending: Mutex<Vec<Entry>>,
}

/// Every thread's log (a thread's stays here after it exits until the reader found it empty).
static LOGS: Mutex<Vec<Arc<Log>>> = Mutex::new(Vec::new());

thread_local! {
    /// The calling thread's log, registered at its first change.
    static LOCAL: OnceCell<Arc<Log>> = const { OnceCell::new() };
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn register() -> Arc<Log> {
    let log = Arc::new(Log { pending: Mutex::new(Vec::with_capacity(PENDING)) });
    lock(&LOGS).push(Arc::clone(&log));
    log
}

/// Appends `entry` to the calling thread's log: `Ok(full)` (`full`: the caller merges now), or
/// `Err(entry)` while the thread's locals are being torn down (the caller takes the stage's
/// lock and applies it directly).
pub(crate) fn push(entry: Entry) -> Result<bool, Entry> {
    LOCAL
        .try_with(|log| {
            let mut pending = lock(&log.get_or_init(register).pending);
            pending.push(entry);
            pending.len() >= PENDING
        })
        .map_err(|_| entry)
}

/// Moves every thread's pending entries out, in each thread's order, to `apply` (the caller
/// holds the stage's lock). `spare` is an empty vector of capacity [`PENDING`] the reader keeps
/// between calls; it is swapped into each log, so each thread always has one to append to.
pub(crate) fn drain(spare: &mut Vec<Entry>, mut apply: impl FnMut(Entry)) {
    let mut logs = lock(&LOGS);
    logs.retain(|log| {
        {
            let mut pending = lock(&log.pending);
            if !pending.is_empty() {
                if spare.capacity() < PENDING {
                    spare.reserve_exact(PENDING);
                }
                std::mem::swap(&mut *pending, spare);
            }
        }
        spare.drain(..).for_each(&mut apply);
        // A thread that exited (only this list holds its log) and left nothing is forgotten.
        Arc::strong_count(log) > 1
    });
}

/// Whether the calling thread has a log (tests).
#[cfg(test)]
pub(crate) fn pending_here() -> usize {
    LOCAL.try_with(|log| log.get().map_or(0, |log| lock(&log.pending).len())).unwrap_or(0)
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
/// may have been left locked mid-append) are forgotten, and its own is emptied (the parent's
/// changes are the parent's).
pub(crate) fn fork_child() {
    let _ = HELD.try_with(|h| {
        if let Some(mut logs) = h.borrow_mut().take() {
            logs.clear();
            // Not `get_or_init`: registering takes the list's lock, held here.
            if let Ok(Some(own)) = LOCAL.try_with(|log| log.get().cloned()) {
                lock(&own.pending).clear();
                logs.push(own);
            }
        }
    });
}
