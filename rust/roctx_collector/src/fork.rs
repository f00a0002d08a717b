//! What `fork()` does to the collector, for the runtime's `pthread_atfork` handlers (the
//! collector registers nothing itself: the runtime orders its own locks before these).
//!
//! [`prepare`] takes every global lock in the collector's one lock order, so no other thread
//! is mid-update at the fork; [`parent`] releases them; [`child`] releases them too, after
//! making the child's state its own:
//!
//! - only the forking thread exists in the child: every other thread's buffer is abandoned
//!   (leaked, never touched: its owner may have been mid-append and still holds its lock);
//! - a running session continues as a fresh session of the child's (the parent's events are the
//!   parent's to write; the child's trace holds the child's events, under its own pid and tid);
//! - start/stop ranges, thread names and paused threads of the parent are forgotten.
//!
//! The capture clock's calibration points (`roctx_sys::clock`) are held too, last: a snapshot
//! takes them under the session lock, and a child that inherited them locked would wait
//! forever at its first snapshot (seen: 2-6 of 60 children in `tests/fork.rs` before this).
//!
//! Per-thread buffer locks (a new chunk, a new label) are not taken: only their owner and a
//! snapshot (excluded by the session lock) ever lock one, and the forking thread is not inside
//! an event of its own.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};

use crate::{globals, lock, ProcessRanges, Registry, SessionState, LOCAL};
use crate::{ACTIVE, AFTER_THREAD_EXIT, PAUSED, PAUSED_SOME_THREAD, REJECTED, SESSION};

struct Held {
    /// First: a window opens and closes under it, then takes the session lock.
    _windows: MutexGuard<'static, crate::window::State>,
    session: MutexGuard<'static, SessionState>,
    registry: MutexGuard<'static, Registry>,
    ranges: MutexGuard<'static, ProcessRanges>,
    names: MutexGuard<'static, BTreeMap<u64, String>>,
    paused: MutexGuard<'static, Vec<u64>>,
    /// Last in the order: a snapshot takes it while holding the session lock.
    _clock: roctx_sys::clock::ForkGuard,
    /// The chunk pool's, a leaf lock (nothing is taken while it is held), so it may come last.
    _pool: MutexGuard<'static, Vec<crate::buffer::Chunk>>,
}

thread_local! {
    // The guards live from `prepare` to `parent`/`child`, which the same thread runs.
    static HELD: RefCell<Option<Held>> = const { RefCell::new(None) };
}

/// Before `fork()`: takes the collector's locks (blocks until in-flight updates finish).
pub fn prepare() {
    let g = globals();
    let held = Held {
        _windows: lock(&crate::window::STATE),
        session: lock(&g.session),
        registry: lock(&g.registry),
        ranges: lock(&g.process_ranges),
        names: lock(&g.names),
        paused: lock(&g.paused_tids),
        _clock: roctx_sys::clock::fork_prepare(),
        _pool: crate::buffer::pool_lock(),
    };
    let _ = HELD.try_with(|h| *h.borrow_mut() = Some(held));
}

/// After `fork()`, in the parent: releases the locks.
pub fn parent() {
    let _ = HELD.try_with(|h| h.borrow_mut().take());
}

/// After `fork()`, in the child: makes the state the child's (module docs), then releases the
/// locks.
pub fn child() {
    let Ok(Some(mut held)) = HELD.try_with(|h| h.borrow_mut().take()) else { return };
    // Only a buffer this thread has: creating one would take the registry's lock, held here.
    let own = if LOCAL.exists() { LOCAL.with(|l| Arc::clone(&l.buffer.shared)) } else { None };
    for buffer in std::mem::take(&mut held.registry.buffers) {
        match &own {
            Some(own) if Arc::ptr_eq(own, &buffer) => held.registry.buffers.push(buffer),
            // Its owner does not exist here; its lock may be held forever, so never drop it.
            _ => std::mem::forget(buffer),
        }
    }
    *held.ranges = ProcessRanges::default();
    held.names.clear();
    held.paused.clear();
    PAUSED.fetch_and(!PAUSED_SOME_THREAD, Ordering::Relaxed);
    if ACTIVE.load(Ordering::Acquire) {
        held.session.start_ns = crate::now_ns();
        REJECTED.store(0, Ordering::Relaxed);
        AFTER_THREAD_EXIT.store(0, Ordering::Relaxed);
        // Buffers (the one left) resync at their next event and drop the parent's contents.
        SESSION.fetch_add(1, Ordering::AcqRel);
    }
    crate::hot_changed(); // the fast path's buffer resyncs too
    drop(held);
}
