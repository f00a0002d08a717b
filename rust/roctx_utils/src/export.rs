//! Export: collector snapshots as XSpace (TensorBoard/XProf), log directories and Chrome JSON.
//!
//! The formats themselves live in the [`roctx_export`] crate (re-exported here, so
//! `roctx_utils::export::xplane` is the XSpace code); this module owns what ties them to a
//! capture: turning a [`Snapshot`] into a [`Trace`] (with the drop counters as warnings and
//! timestamps moved to the wall clock XLA's host planes use), and `ROCTX_UTILS_XSPACE_OUT`.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

pub use roctx_export::{chrome, logdir, xplane, xplane_proto, Event, EventKind, Trace};

use crate::collector::{self, Snapshot, Stats};

/// Env var: a TensorBoard log directory. When set, a capture session starts with the first
/// range and every session's snapshot is written there at stop, or at process exit.
pub const XSPACE_OUT_VAR: &str = "ROCTX_UTILS_XSPACE_OUT";

/// The snapshot as an exportable trace.
pub fn trace(snapshot: &Snapshot) -> Trace {
    let mut t = Trace::new(&crate::ffi::os::hostname(), snapshot.start_ns, snapshot.stop_ns);
    t.realtime_offset_ns = crate::ffi::os::realtime_ns() - collector::now_ns() as i64;
    t.labels = snapshot.labels.clone();
    t.thread_names = snapshot.thread_names.clone();
    t.events = snapshot
        .events
        .iter()
        .map(|e| Event {
            kind: e.kind,
            tid: e.tid,
            end_tid: e.end_tid,
            start_ns: e.start_ns,
            end_ns: e.end_ns,
            label: e.label,
        })
        .collect();
    t.warnings = warnings(&snapshot.stats);
    t
}

/// The session's losses, in words, for `XSpace.warnings` (what XProf's users will see).
pub fn warnings(s: &Stats) -> Vec<String> {
    let mut out = Vec::new();
    let mut say = |n: u64, what: &str| {
        if n > 0 {
            out.push(format!("roctx_utils: {n} ROCTX {what}"));
        }
    };
    say(s.dropped_event_cap, "events dropped: the per-thread event cap was reached (raise max_events_per_thread)");
    say(s.dropped_label_cap, "events dropped: the per-thread label bytes cap was reached (raise max_label_bytes_per_thread)");
    say(s.dropped_too_deep, "ranges not recorded: nested deeper than 256");
    say(s.open_at_stop, "ranges still open when the session stopped (not recorded)");
    say(s.process_ranges_open_at_stop, "start/stop ranges still open when the session stopped (not recorded)");
    say(s.open_at_thread_exit, "ranges still open when their thread exited (not recorded)");
    say(s.rejected_records, "marker records rejected as malformed or unsupported");
    say(s.unmatched_pops, "pops without a matching push (ignored)");
    say(s.unmatched_stops, "range stops for unknown ids (ignored)");
    out
}

/// Writes the snapshot as `<logdir>/plugins/profile/<run>/<host>.xplane.pb` and returns the path.
/// `run` defaults to the current UTC time.
pub fn write_logdir(snapshot: &Snapshot, dir: &Path, run: Option<&str>) -> std::io::Result<PathBuf> {
    let t = trace(snapshot);
    let space = xplane::standalone_xspace(&t);
    let run = run.map_or_else(|| logdir::run_name(std::time::SystemTime::now()), str::to_owned);
    logdir::write(dir, &run, &t.hostname, &space)
}

fn xspace_out() -> Option<PathBuf> {
    std::env::var_os(XSPACE_OUT_VAR).filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// Called with every stopped session: writes it when `ROCTX_UTILS_XSPACE_OUT` is set.
pub(crate) fn on_session_stopped(snapshot: &Snapshot) {
    let Some(dir) = xspace_out() else { return };
    if snapshot.events.is_empty() && !crate::emitter::emission_enabled() {
        crate::log::warn(format_args!(
            "{XSPACE_OUT_VAR} is set but no ROCTX range was recorded: XLA only emits ranges with \
             XLA_ROCM_ENABLE_ROCTX=1"
        ));
    }
    match write_logdir(snapshot, &dir, None) {
        Ok(path) => crate::log::warn_or_info(format_args!(
            "wrote {} ROCTX events to {} (view: tensorboard --logdir {})",
            snapshot.events.len(),
            path.display(),
            dir.display()
        )),
        Err(e) => crate::log::warn(format_args!("{XSPACE_OUT_VAR}={}: could not write the XSpace: {e}", dir.display())),
    }
}

static AUTO_STARTED: AtomicBool = AtomicBool::new(false);
static EXIT_HOOK: AtomicBool = AtomicBool::new(false);

/// An explicit session supersedes the automatic one; with `ROCTX_UTILS_XSPACE_OUT` set it is
/// still written at stop, or at exit if never stopped.
pub(crate) fn explicit_session_starting() {
    AUTO_STARTED.store(true, Ordering::Release);
    if xspace_out().is_some() && !EXIT_HOOK.swap(true, Ordering::AcqRel) {
        crate::ffi::os::at_exit(stop_at_exit);
    }
}

/// With `ROCTX_UTILS_XSPACE_OUT` set and no session running, starts one (once per process) and
/// arranges for it to be stopped and written at exit: tracing with no code changes.
pub(crate) fn auto_session(roctx: Option<crate::ffi::roctx::Flavor>) {
    if xspace_out().is_none() || AUTO_STARTED.swap(true, Ordering::AcqRel) || collector::active() {
        return;
    }
    match crate::listener::start_session_for(collector::SessionOptions::default(), None, roctx) {
        Ok(mode) => {
            crate::log::info(format_args!("{XSPACE_OUT_VAR} is set: capture session started ({mode:?})"));
            if !EXIT_HOOK.swap(true, Ordering::AcqRel) {
                crate::ffi::os::at_exit(stop_at_exit);
            }
        }
        Err(e) => crate::log::warn(format_args!("{XSPACE_OUT_VAR} is set but no session could start: {e}")),
    }
}

extern "C" fn stop_at_exit() {
    crate::ffi::guard((), || {
        if collector::active() {
            // stop_session writes the log directory.
            let _ = crate::listener::stop_session();
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_and_caps_become_xspace_warnings_and_clean_sessions_have_none() {
        assert!(warnings(&Stats::default()).is_empty());
        let s = Stats { dropped_event_cap: 17, open_at_stop: 2, rejected_records: 1, ..Stats::default() };
        let w = warnings(&s);
        assert_eq!(w.len(), 3);
        assert!(w[0].starts_with("roctx_utils: 17 ROCTX events dropped: the per-thread event cap"));
        assert!(w.iter().any(|m| m.contains("2 ROCTX ranges still open when the session stopped")));
    }

    #[test]
    fn snapshot_events_keep_threads_labels_and_times() {
        let snapshot = Snapshot {
            events: vec![collector::Event {
                kind: collector::EventKind::Mark,
                tid: 9,
                end_tid: 9,
                start_ns: 50,
                end_ns: 50,
                label: 0,
                depth: 0,
            }],
            labels: vec!["tick".to_owned()],
            start_ns: 10,
            stop_ns: 100,
            stats: Stats { dropped_event_cap: 1, ..Stats::default() },
            ..Snapshot::default()
        };
        let t = trace(&snapshot);
        assert_eq!((t.start_ns, t.stop_ns), (10, 100));
        assert_eq!(t.events[0].kind, EventKind::Mark);
        assert_eq!(t.label_of(&t.events[0]), "tick");
        assert_eq!(t.warnings.len(), 1);
        assert!(t.realtime_offset_ns > 0, "wall clock is ahead of boot time");
        let space = xplane::standalone_xspace(&t);
        assert_eq!(space.warnings, t.warnings);
    }
}
