//! A thread of the stage's own that merges the threads' op logs ([`crate::oplog`]) when one of
//! them passes half full, so the launching thread does not (issue 42).
//!
//! Without it a log was merged by whatever read the stage next (a delivered CUPTI buffer, every
//! 100 ms at least) or, once full, by its own thread. A llama.cpp decode step logs a few hundred
//! changes a millisecond, so a 4,096-entry ring filled every few ms, long before the next
//! delivery, and the launching thread paid the merge of nearly every entry it logged (the
//! stage's invocation map, the scope logs, the clock conversion: about half of `begin_op` in
//! `perf` on the dev VM), on the path that decides a launch-bound step's length.
//!
//! The append that takes a ring to half full asks this thread to merge (a mutex and a condition
//! variable, once per [`crate::oplog::PENDING`]/2 changes: no lock or syscall per change); the
//! owning thread still merges a full ring itself, so a merger that is late, or could not be
//! started, or a fork child (where none is started: see [`crate::names`]), loses nothing.
use std::sync::{Condvar, Mutex, OnceLock, PoisonError};

struct Merger {
    requested: Mutex<bool>,
    wake: Condvar,
}

/// `None`: the thread could not be started (the full-ring merge stands in).
static MERGER: OnceLock<Option<&'static Merger>> = OnceLock::new();

/// Asks the merger to run `merge` (the stage's merge of every pending log) soon; starts it at
/// the first call. Never blocks on the merge itself.
pub(crate) fn request(merge: fn()) {
    if roctx_sys::os::is_fork_child() {
        return;
    }
    #[cfg(test)]
    if OFF.load(std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    let merger = MERGER.get_or_init(|| start(merge));
    if let Some(m) = merger {
        *m.requested.lock().unwrap_or_else(PoisonError::into_inner) = true;
        m.wake.notify_one();
    }
}

fn start(merge: fn()) -> Option<&'static Merger> {
    let m: &'static Merger = Box::leak(Box::new(Merger { requested: Mutex::new(false), wake: Condvar::new() }));
    let spawned = roctx_sys::os::with_signals_blocked(|| {
        std::thread::Builder::new().name("roctx-oplog".into()).stack_size(256 << 10).spawn(move || run(m, merge))
    });
    spawned.ok().map(|_| m)
}

fn run(m: &'static Merger, merge: fn()) {
    loop {
        {
            let mut requested = m.requested.lock().unwrap_or_else(PoisonError::into_inner);
            while !*requested {
                requested = m.wake.wait(requested).unwrap_or_else(PoisonError::into_inner);
            }
            *requested = false;
        }
        // A panic here would end the thread and leave the full-ring merge to the loggers.
        if std::panic::catch_unwind(merge).is_err() {
            return;
        }
    }
}

/// Tests: while one is alive, [`request`] does nothing (the merger is late or absent).
#[cfg(test)]
pub(crate) struct Off(());

#[cfg(test)]
static OFF: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

#[cfg(test)]
impl Off {
    pub(crate) fn new() -> Self {
        OFF.store(true, std::sync::atomic::Ordering::SeqCst);
        Off(())
    }
}

#[cfg(test)]
impl Drop for Off {
    fn drop(&mut self) {
        OFF.store(false, std::sync::atomic::Ordering::SeqCst);
    }
}
