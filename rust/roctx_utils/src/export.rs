//! Export: collector snapshots as XSpace (TensorBoard/XProf), log directories and Chrome JSON.
//!
//! The formats live in the [`roctx_export`] crate (re-exported here, so
//! `roctx_utils::export::xplane` is the XSpace code); this module adds what only a live process
//! knows: its host name and the offset from `CLOCK_BOOTTIME` to the wall clock XLA's host
//! planes use ([`trace`]), and where `ROCTX_UTILS_XSPACE_OUT` sends stopped sessions
//! ([`write_to_xspace_out`], called by the runtime for every stopped session: one new file per
//! session, `<host>_pid<pid>.xplane.pb`, never replacing another).
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

pub use roctx_export::{chrome, logdir, output, warnings, xplane, xplane_proto, Event, EventKind, Trace};

use roctx_collector::Snapshot;
use roctx_config::log;
use roctx_sys::os;

/// The snapshot as an exportable trace of this host, with the GPU kernels that ran in its
/// window and the session's losses as warnings.
pub fn trace(snapshot: &Snapshot) -> Trace {
    trace_with_kernels(snapshot, &roctx_kernels::snapshot())
}

/// [`trace`] with the kernels of `kernels` (the ones the session's window saw: the listener
/// flushed the SDK at stop).
pub fn trace_with_kernels(snapshot: &Snapshot, kernels: &roctx_kernels::KernelSnapshot) -> Trace {
    let realtime_offset_ns = os::realtime_ns() - os::boottime_ns() as i64;
    let mut t = Trace::from_snapshot(snapshot, &os::hostname(), realtime_offset_ns);
    t.add_kernels(kernels);
    t
}

/// Writes the trace as `<logdir>/plugins/profile/<run>/<host>.xplane.pb` and returns the path.
/// `run` defaults to the current UTC time. Never replaces a file: a name already taken gets
/// `<host>-2.xplane.pb`, and so on.
pub fn write_logdir(t: &Trace, dir: &Path, run: Option<&str>) -> std::io::Result<PathBuf> {
    write_logdir_as(t, dir, run, &t.hostname)
}

fn write_logdir_as(t: &Trace, dir: &Path, run: Option<&str>, stem: &str) -> std::io::Result<PathBuf> {
    let xspace = xplane::standalone_xspace_bytes(t);
    let run = run.map_or_else(|| logdir::run_name(std::time::SystemTime::now()), str::to_owned);
    logdir::write_bytes(dir, &run, stem, &xspace)
}

/// The file name (before `.xplane.pb`, which XProf shows as the host) for this process's
/// automatic writes: the host and the launcher's rank (`<host>_rank<n>`), else the pid, so the
/// processes of one job, which share a run directory, each get their own file.
///
/// A `fork()` child (a data loader, a compile worker) inherited its parent's rank, so it is
/// named by its own pid: it never takes its parent's name, nor uses up the rank's names.
pub fn process_file_stem() -> String {
    let job = &roctx_config::get().job;
    if os::is_fork_child() {
        return roctx_config::JobIdentity::default().file_stem(&os::hostname(), std::process::id());
    }
    job.file_stem(&os::hostname(), std::process::id())
}

/// The file this process's snapshots of the running session went to ([`write_snapshot`]), the
/// pid that wrote it (a `fork()` child inherits the value, not the file) and the capture window
/// it belongs to (0: none).
static ROLLING: std::sync::Mutex<Option<(u32, PathBuf, u32)>> = std::sync::Mutex::new(None);

/// The capture window open now (0: none), whose run directory new files of this process go to.
static WINDOW: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Capture windows: window `n` (from 1) opened; snapshots taken while it is open go to its run
/// directory, `<run>-window<n>` (each window is a session of its own in XProf).
pub fn set_window(n: u32) {
    WINDOW.store(n, std::sync::atomic::Ordering::Release);
}

fn rolling() -> std::sync::MutexGuard<'static, Option<(u32, PathBuf, u32)>> {
    let mut guard = ROLLING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if guard.as_ref().is_some_and(|(pid, _, _)| *pid != std::process::id()) {
        *guard = None;
    }
    guard
}

/// Writes the running session so far (`snapshot`, exported as `t`) to `ROCTX_UTILS_XSPACE_OUT`,
/// when it is set: a periodic, requested or signal-time snapshot. One file per session, the
/// first snapshot's new name, replaced whole by each later snapshot and by the session's final
/// write; never seen half-written (a temporary renamed over it). Returns the path.
pub fn write_snapshot(t: &Trace) -> Option<PathBuf> {
    let dir = roctx_config::get().xspace_out.as_ref()?;
    let mut rolling = rolling();
    let window = WINDOW.load(std::sync::atomic::Ordering::Acquire);
    let existing = rolling.as_ref().filter(|(_, _, w)| *w == window).map(|(_, path, _)| path.clone());
    match write_process_file(t, dir, existing, window) {
        Ok(path) => {
            *rolling = Some((std::process::id(), path.clone(), window));
            Some(path)
        }
        Err(e) => {
            log::warn(format_args!("{}={}: could not write the snapshot: {e}", roctx_config::XSPACE_OUT, dir.display()));
            None
        }
    }
}

/// `t` as this process's file under `dir`: over `existing` (the session's snapshot file) when
/// there is one, else a new `<run>/<stem>.xplane.pb` (the job's run name, else the time of this
/// write, so every process of the job lands in one run directory).
/// `window` (from 1): a capture window's file, in the run directory `<run>-window<window>`.
fn write_process_file(t: &Trace, dir: &Path, existing: Option<PathBuf>, window: u32) -> std::io::Result<PathBuf> {
    match existing {
        Some(path) => roctx_sys::output::replace_regular(&path, &xplane::standalone_xspace_bytes(t)).map(|()| path),
        None => {
            let run = roctx_config::get().job.run_name.as_ref().map(|(name, _)| name.clone());
            let run = match (run, window) {
                (run, 0) => run,
                (run, n) => Some(format!("{}-window{n}", run.unwrap_or_else(|| logdir::run_name(std::time::SystemTime::now())))),
            };
            write_logdir_as(t, dir, run.as_deref(), &process_file_stem())
        }
    }
}

/// Writes a stopped session (its `snapshot`, exported as `t`) to `ROCTX_UTILS_XSPACE_OUT`, when
/// it is set: over the session's snapshot file when one was written ([`write_snapshot`]), else
/// a new file.
pub fn write_to_xspace_out(snapshot: &Snapshot, t: &Trace) {
    write_to_xspace_out_as(snapshot, t, 0);
}

/// [`write_to_xspace_out`] for capture window `window` (from 1): its own run directory,
/// `<run>-window<window>`, over the window's snapshot file if one was written.
pub fn write_window(snapshot: &Snapshot, t: &Trace, window: u32) {
    write_to_xspace_out_as(snapshot, t, window);
}

fn write_to_xspace_out_as(snapshot: &Snapshot, t: &Trace, window: u32) {
    let config = roctx_config::get();
    let Some(dir) = &config.xspace_out else { return };
    let var = roctx_config::XSPACE_OUT;
    if snapshot.events.is_empty() && !config.enable_roctx {
        log::warn(format_args!(
            "{var} is set but no ROCTX range was recorded: XLA only emits ranges with {}=1",
            roctx_config::ENABLE_ROCTX
        ));
    }
    // Every stopped session gets its own file (write_new never replaces), so a later session,
    // such as one a host's atexit handler stops after ours, cannot overwrite the exit-time one.
    // XProf shows one run with an entry per process ([`write_process_file`]).
    let snapshot_file = {
        let mut rolling = rolling();
        if rolling.as_ref().is_some_and(|(_, _, w)| *w == window) { rolling.take().map(|(_, path, _)| path) } else { None }
    };
    match write_process_file(t, dir, snapshot_file, window) {
        Ok(path) => {
            log::result(format_args!(
                "wrote {} ROCTX events to {} (view: tensorboard --logdir {})",
                snapshot.events.len(),
                path.display(),
                dir.display()
            ));
            // A rank killed mid-write (SIGKILL, OOM) left its hidden temporary, as large as its
            // trace, in this run directory for good: the next writer there clears it.
            if let Some(run_dir) = path.parent() {
                let removed = roctx_sys::output::remove_stale_temporaries(run_dir);
                if removed > 0 {
                    log::info(format_args!("removed {removed} temporary file(s) left in {} by writers killed mid-write", run_dir.display()));
                }
            }
        }
        Err(e) => log::warn(format_args!("{var}={}: could not write the XSpace: {e}", dir.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use roctx_collector::Stats;

    #[test]
    fn a_live_trace_carries_this_host_and_the_wall_clock_offset() {
        // What `Trace::from_snapshot` itself keeps is tested in roctx_export.
        let snapshot = Snapshot { stats: Stats { dropped_event_cap: 1, ..Stats::default() }, ..Snapshot::default() };
        let t = trace(&snapshot);
        assert_eq!(t.hostname, os::hostname());
        assert!(t.realtime_offset_ns > 0, "wall clock is ahead of boot time");
        assert_eq!(t.warnings.len(), 1);
        let space = xplane::standalone_xspace(&t);
        assert_eq!(space.warnings, t.warnings);
    }
}
