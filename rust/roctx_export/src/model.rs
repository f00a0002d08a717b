//! The exporters' input: one capture session, independent of how it was captured. The event
//! and counter types are the collector's own ([`roctx_collector`]); a trace adds what an export
//! needs besides them (host name, wall-clock offset, warnings in words).

use std::collections::BTreeMap;

pub use roctx_collector::{Event, EventKind, Snapshot, Stats};

/// A capture session, ready to export.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Trace {
    /// Host name, used for `XSpace.hostnames` and the log directory file name.
    pub hostname: String,
    /// Session start and stop, `CLOCK_BOOTTIME` ns.
    pub start_ns: u64,
    /// See `start_ns`.
    pub stop_ns: u64,
    /// Wall clock minus `CLOCK_BOOTTIME` at capture, ns: XLA's host planes use wall-clock
    /// times, so exported timestamps are shifted by this much to line up with them.
    pub realtime_offset_ns: i64,
    /// Events, in any order.
    pub events: Vec<Event>,
    /// Distinct labels.
    pub labels: Vec<String>,
    /// Thread names by OS thread id.
    pub thread_names: BTreeMap<u64, String>,
    /// What was dropped or capped during capture, in words (ends up in `XSpace.warnings`).
    pub warnings: Vec<String>,
    /// GPU kernels of the session ([`Trace::add_kernels`]), in device start order.
    pub kernels: Vec<KernelEvent>,
}

/// One GPU kernel, as the exporters draw it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KernelEvent {
    /// Device start, `CLOCK_BOOTTIME` ns.
    pub start_ns: u64,
    /// Device end, `CLOCK_BOOTTIME` ns.
    pub end_ns: u64,
    /// GPU index (`/device:GPU:<gpu>`), in the order of the SDK's agent handles.
    pub gpu: u32,
    /// Queue index on that GPU (`Stream #<stream>`).
    pub stream: u32,
    /// Demangled kernel name (empty when the SDK gave none).
    pub name: String,
    /// The SDK's correlation id of the launching call.
    pub correlation_id: u64,
    /// `grid:x,y,z block:x,y,z` (grid in work-groups, as CUDA's kernel_details).
    pub details: String,
    /// Index into [`Trace::events`] of the innermost ROCTX range open at launch, if recorded.
    pub launched_by: Option<usize>,
    /// The op invocation that launched it (0: none).
    pub invocation: u32,
}

impl Trace {
    /// The trace of a collector snapshot taken on `hostname`, with `realtime_offset_ns` (wall
    /// clock minus `CLOCK_BOOTTIME`, ns) and the snapshot's losses as [`warnings`].
    pub fn from_snapshot(snapshot: &Snapshot, hostname: &str, realtime_offset_ns: i64) -> Trace {
        Trace {
            hostname: hostname.to_owned(),
            start_ns: snapshot.start_ns,
            stop_ns: snapshot.stop_ns,
            realtime_offset_ns,
            events: snapshot.events.clone(),
            labels: snapshot.labels.clone(),
            thread_names: snapshot.thread_names.clone(),
            warnings: warnings(&snapshot.stats),
            kernels: Vec::new(),
        }
    }

    /// Adds the kernels of `kernels` that ran inside this session's window (start to stop,
    /// XLA's rule; the rest are counted in a warning), each attributed to the ROCTX range of
    /// this trace that launched it (same thread, same push number).
    pub fn add_kernels(&mut self, kernels: &roctx_kernels::KernelSnapshot) {
        use std::collections::HashMap;
        let mut agents: Vec<u64> = kernels.dispatches.iter().map(|d| d.agent_id).collect();
        agents.sort_unstable();
        agents.dedup();
        let mut queues: Vec<(u64, u64)> = kernels.dispatches.iter().map(|d| (d.agent_id, d.queue_id)).collect();
        queues.sort_unstable();
        queues.dedup();
        let launchers: HashMap<(u64, u32), usize> = self
            .events
            .iter()
            .enumerate()
            .filter(|(_, e)| e.kind == EventKind::Range && e.seq != 0)
            .map(|(i, e)| ((e.tid, e.seq), i))
            .collect();
        let mut outside = 0u64;
        for d in &kernels.dispatches {
            if d.start_ns < self.start_ns || d.end_ns > self.stop_ns {
                outside += 1;
                continue;
            }
            // CAST: both indices are bounded by the dispatch count, far below u32::MAX.
            let gpu = agents.partition_point(|&a| a < d.agent_id) as u32;
            let first_queue = queues.partition_point(|&(a, _)| a < d.agent_id);
            let stream = (queues.partition_point(|&q| q < (d.agent_id, d.queue_id)) - first_queue) as u32;
            let blocks = |i: usize| d.grid[i].div_ceil(d.workgroup[i].max(1));
            self.kernels.push(KernelEvent {
                start_ns: d.start_ns,
                end_ns: d.end_ns,
                gpu,
                stream,
                name: kernels.name(d.kernel_id).to_owned(),
                correlation_id: d.correlation_id,
                details: format!(
                    "grid:{},{},{} block:{},{},{}",
                    blocks(0),
                    blocks(1),
                    blocks(2),
                    d.workgroup[0],
                    d.workgroup[1],
                    d.workgroup[2]
                ),
                launched_by: (d.range != 0).then(|| launchers.get(&(d.thread_id, d.range)).copied()).flatten(),
                invocation: d.invocation,
            });
        }
        if outside > 0 {
            self.warnings.push(format!("roctx_utils: {outside} GPU kernels ran outside the session window and are not shown"));
        }
        let lost = kernels.stats.dropped_cap + kernels.stats.rejected_records + kernels.stats.sdk_dropped;
        if lost > 0 {
            self.warnings.push(format!("roctx_utils: {lost} GPU kernel records lost (cap, malformed or dropped by rocprofiler-sdk)"));
        }
    }

    /// An empty trace of a session on `hostname` from `start_ns` to `stop_ns`.
    pub fn new(hostname: &str, start_ns: u64, stop_ns: u64) -> Trace {
        Trace { hostname: hostname.to_owned(), start_ns, stop_ns, ..Trace::default() }
    }

    /// Interns `text` and returns its label index.
    pub fn label(&mut self, text: &str) -> u32 {
        match self.labels.iter().position(|l| l == text) {
            Some(i) => i as u32, // CAST: label counts fit u32 (the collector interns with u32 ids)
            None => {
                self.labels.push(text.to_owned());
                (self.labels.len() - 1) as u32
            }
        }
    }

    /// The text of `event`'s label.
    pub fn label_of(&self, event: &Event) -> &str {
        self.labels.get(event.label as usize).map_or("", String::as_str)
    }
}

/// A session's losses, in words, for `XSpace.warnings` (what XProf's users will see): one line
/// per non-zero counter that [`Stats`] marks as a loss, in the counters' order.
pub fn warnings(stats: &Stats) -> Vec<String> {
    stats
        .entries()
        .filter(|&(_, n, words)| n > 0 && words.is_some())
        .map(|(_, n, words)| format!("roctx_utils: {n} ROCTX {}", words.unwrap_or_default()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_and_caps_become_warnings_and_clean_sessions_have_none() {
        assert!(warnings(&Stats::default()).is_empty());
        let s = Stats { dropped_event_cap: 17, open_at_stop: 2, rejected_records: 1, paused: 5, ..Stats::default() };
        let w = warnings(&s);
        assert_eq!(w.len(), 3, "{w:#?}");
        assert_eq!(w[0], "roctx_utils: 17 ROCTX events dropped: the per-thread event cap was reached (raise max_events_per_thread)");
        assert!(w.iter().any(|m| m.contains("2 ROCTX ranges still open when the session stopped")));
        assert!(w.iter().all(|m| !m.contains("paused")));
    }

    #[test]
    fn a_snapshot_becomes_a_trace_with_its_events_labels_and_times() {
        let snapshot = Snapshot {
            events: vec![Event { kind: EventKind::Mark, tid: 9, end_tid: 9, start_ns: 50, end_ns: 50, label: 0, depth: 0, seq: 0 }],
            labels: vec!["tick".to_owned()],
            start_ns: 10,
            stop_ns: 100,
            stats: Stats { dropped_event_cap: 1, ..Stats::default() },
            ..Snapshot::default()
        };
        let t = Trace::from_snapshot(&snapshot, "host", 7);
        assert_eq!((t.start_ns, t.stop_ns, t.realtime_offset_ns), (10, 100, 7));
        assert_eq!(t.events, snapshot.events);
        assert_eq!(t.label_of(&t.events[0]), "tick");
        assert_eq!(t.warnings.len(), 1);
    }
}
