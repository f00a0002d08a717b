//! `roctx record`'s progress line (issue 43): with `ROCTX_UTILS_PROGRESS_DIR` set (the CLI sets
//! it when its stderr is a terminal), a `roctx-progress` thread rewrites `<dir>/<pid>` every
//! second with what this process has captured so far, one line: `events gpu_activities`
//! (ranges and marks recorded by the running session, kernels, copies and sets kept by the
//! kernel stage). The CLI sums the files of every process of the run. Counting reads the
//! collector's published lengths and the kernel stage's counters: no event is read, nothing
//! is added to any hot path.
//!
//! Best effort: a write that fails (the directory removed because the run ended) is dropped in
//! silence; the thread never outlives the process's need (it sleeps between writes and holds no
//! lock while it sleeps). Not started in a fork child (its parent's thread is not its own; the
//! child's events are counted in its own file only once it starts capturing through its own
//! start-up, which a fork child never runs again).
use std::path::PathBuf;
use std::time::Duration;

use roctx_config::{log, Config};

/// How often the line is rewritten.
pub const PERIOD: Duration = Duration::from_secs(1);

/// Starts the thread, once, when asked for and there is an output to count for.
pub(super) fn start(config: &Config) {
    let Some(dir) = config.progress_dir.clone() else { return };
    if config.xspace_out.is_none() && config.roofline_out.is_none() || roctx_sys::os::is_fork_child() {
        return;
    }
    let spawned = roctx_sys::os::with_signals_blocked(|| std::thread::Builder::new().name("roctx-progress".into()).spawn(move || run(&dir)));
    if let Err(e) = spawned {
        log::info(format_args!("{}: no progress thread: {e}", roctx_config::PROGRESS_DIR));
    }
}

/// This process's line now.
pub fn line() -> String {
    format!("{} {}\n", roctx_collector::recorded_so_far(), roctx_kernels::stats().dispatches)
}

fn run(dir: &std::path::Path) {
    let file: PathBuf = dir.join(std::process::id().to_string());
    loop {
        std::thread::sleep(PERIOD);
        if !dir.is_dir() {
            return; // the run is over
        }
        let _ = roctx_sys::output::replace_regular(&file, line().as_bytes());
    }
}
