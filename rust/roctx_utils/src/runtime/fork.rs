//! `pthread_atfork` handlers for the pipeline below the emitter (the emitter's string pool has
//! its own: its lock is never held with these). One registration, so the lock order is fixed:
//! the runtime's session lock, then the collector's ([`roctx_collector::fork`]), then the
//! listener's (the CUPTI buffer callback's join lock, [`crate::listener::fork_prepare`]), then the
//! kernel stage's ([`roctx_kernels::fork_prepare`]; none of the others is taken under it).

use std::cell::RefCell;
use std::sync::{MutexGuard, Once};

use roctx_config::log;

thread_local! {
    // From `prepare` to `parent`/`child`, which the forking thread runs.
    static HELD: RefCell<Option<MutexGuard<'static, ()>>> = const { RefCell::new(None) };
}

/// Registers the handlers, once per process.
pub(super) fn register_handlers() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if !roctx_sys::os::at_fork(prepare, parent, child) {
            log::warn(format_args!("pthread_atfork failed: a fork() while capturing may hang the child"));
        }
    });
}

extern "C" fn prepare() {
    roctx_sys::guard((), || {
        let held = super::sessions();
        let _ = HELD.try_with(|h| *h.borrow_mut() = Some(held));
        roctx_collector::fork::prepare();
        crate::listener::fork_prepare(); // before the kernel stage: its buffer callback nests them so
        roctx_kernels::fork_prepare();
    })
}

extern "C" fn parent() {
    roctx_sys::guard((), || {
        roctx_kernels::fork_parent();
        crate::listener::fork_parent();
        roctx_collector::fork::parent();
        let _ = HELD.try_with(|h| h.borrow_mut().take());
    })
}

extern "C" fn child() {
    roctx_sys::guard((), || {
        roctx_sys::os::forget_cached_tid();
        roctx_kernels::fork_child();
        crate::listener::fork_child();
        roctx_collector::fork::child();
        let _ = HELD.try_with(|h| h.borrow_mut().take());
    })
}
