//! The chunk filler's thread (issue 44): the collector's `run_chunk_filler` keeps a few event
//! chunks faulted in ahead of the threads that record, so that a buffer growing during a
//! session takes resident memory instead of faulting its pages on the recording thread (1.5 µs a
//! page on the dev VM: about 9 ns per range). The work is the collector's; the thread is the
//! runtime's, started once, with the first in-process session.

use std::sync::Once;

use roctx_config::log;

/// Starts the filler, once per process (not in a fork child: its buffers fault their chunks in
/// themselves, as without one).
pub(super) fn start() {
    static STARTED: Once = Once::new();
    if roctx_sys::os::is_fork_child() {
        return;
    }
    STARTED.call_once(|| {
        let spawned = roctx_sys::os::with_signals_blocked(|| {
            std::thread::Builder::new().name("roctx-chunks".into()).spawn(|| roctx_collector::run_chunk_filler())
        });
        if let Err(e) = spawned {
            log::info(format_args!("no chunk filler thread ({e}): recording threads fault their chunks in themselves"));
        }
    });
}
