//! The exporters' input: one capture session, independent of how it was captured. The event
//! and counter types are the collector's own ([`roctx_collector`]); a trace adds what an export
//! needs besides them (host name, wall-clock offset, warnings in words).

use std::collections::BTreeMap;

pub use roctx_collector::{Event, EventKind, Snapshot, Stats};

/// A capture session, ready to export.
#[derive(Debug, Clone, PartialEq, Default)]
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
    /// What each op invocation (an op scope: `roofline.h`, llama.cpp's hooks) cost, by
    /// invocation id, as a layer that knows the ops computed it: the GPU planes then carry one
    /// op event per invocation that XProf's op statistics and Roofline Model read.
    pub op_costs: BTreeMap<u32, OpCost>,
    /// What is known of each GPU (`/device:GPU:<n>`), by index: XProf's peaks.
    pub devices: BTreeMap<u32, DeviceCaps>,
}

/// One op invocation's cost, with the group it belongs to (identical ops: same op, shapes and
/// types, as `roctx roofline` groups them).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OpCost {
    /// The group's one-line label (`MUL_MAT q4_K[4096,32000] f32[4096] -> f32[32000]`).
    pub group: String,
    /// The op (ggml's `MUL_MAT`; fused ops joined by `+`).
    pub op_type: String,
    /// FLOPs of this invocation.
    pub flops: u64,
    /// Bytes this invocation moved (the roofline report's corrected count).
    pub bytes: u64,
}

/// A GPU's capabilities, as XProf's device plane stats name them (`device_caps_utils.cc`);
/// `None` where nothing gave the value.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DeviceCaps {
    /// `"Nvidia"` or `"AMD"`.
    pub vendor: Option<String>,
    /// Shader clock, kHz.
    pub clock_rate_khz: Option<u64>,
    /// SMs or CUs.
    pub core_count: Option<u64>,
    /// Peak memory bandwidth, bytes/s.
    pub memory_bandwidth: Option<u64>,
    /// Device memory, bytes.
    pub memory_size: Option<u64>,
    /// Compute capability (NVIDIA) or GFX major/minor (AMD).
    pub compute_cap: Option<(u32, u32)>,
    /// The FLOP peak XProf is to use, TFLOP/s (overrides its own estimate from clock and cores).
    pub peak_tflops: Option<f64>,
}

/// One GPU activity (a kernel, a memory copy or set), as the exporters draw it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KernelEvent {
    /// What it did.
    pub work: roctx_kernels::Work,
    /// The graph node that ran it (zero: not a graph launch).
    pub graph: roctx_kernels::GraphNode,
    /// Device start, `CLOCK_BOOTTIME` ns.
    pub start_ns: u64,
    /// Device end, `CLOCK_BOOTTIME` ns.
    pub end_ns: u64,
    /// GPU index (`/device:GPU:<gpu>`), in the order of the SDK's agent handles.
    pub gpu: u32,
    /// The real stream id (CUPTI's `streamId`, rocprofiler-sdk's queue id): `Stream #<stream>`.
    pub stream: u64,
    /// Demangled kernel name (empty when the SDK gave none); XLA's name for a copy or set
    /// (`MemcpyD2D`, `Memset 3`).
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
            ..Trace::default()
        }
    }

    /// Adds the kernels of `kernels` that ran inside this session's window (start to stop,
    /// XLA's rule; the rest are counted in a warning), or were launched inside it and ended
    /// after its stop (as nsys keeps a capture range's last kernels: a window closed by its
    /// trigger's pop would otherwise lose the kernels still running then; the stop moves to the
    /// last such end, so the profile's span covers them), each attributed to the ROCTX range of
    /// this trace that launched it: the innermost push/pop range open on its launching thread
    /// at its launch instant ([`roctx_kernels::join`]'s rule), or, for a source that carried the
    /// range's push number in the kernel record, the range of that number on that thread.
    pub fn add_kernels(&mut self, kernels: &roctx_kernels::KernelSnapshot) {
        use std::collections::HashMap;
        let mut agents: Vec<u64> = kernels.dispatches.iter().map(|d| d.agent_id).collect();
        agents.sort_unstable();
        agents.dedup();
        // Each index over the events is built only if some kernel is attributed that way (the
        // writer calls this for every trace, most with no kernels at all).
        let launchers: Option<HashMap<(u64, u32), usize>> = kernels.dispatches.iter().any(|d| d.range != 0).then(|| {
            self.events.iter().enumerate().filter(|(_, e)| e.kind == EventKind::Range && e.seq != 0).map(|(i, e)| ((e.tid, e.seq), i)).collect()
        });
        let open_at = kernels.dispatches.iter().any(|d| d.range == 0 && d.launch_ns != 0).then(|| OpenRanges::new(&self.events));
        let mut outside = 0u64;
        let (start, stop) = (self.start_ns, self.stop_ns);
        let mut last_end = stop;
        for d in &kernels.dispatches {
            // A push number names its range directly: found once, for the filter and the row.
            let by_number = if d.range != 0 { launchers.as_ref().and_then(|l| l.get(&(d.thread_id, d.range)).copied()) } else { None };
            let launched_inside = by_number.is_some() || d.launch_ns != 0 && (start..=stop).contains(&d.launch_ns);
            if d.start_ns < start || d.end_ns > stop && !launched_inside {
                outside += 1;
                continue;
            }
            last_end = last_end.max(d.end_ns);
            // CAST: both indices are bounded by the dispatch count, far below u32::MAX.
            let gpu = agents.partition_point(|&a| a < d.agent_id) as u32;
            let (name, details) = describe(d, gpu, kernels);
            self.kernels.push(KernelEvent {
                work: d.work,
                graph: d.graph,
                start_ns: d.start_ns,
                end_ns: d.end_ns,
                gpu,
                stream: d.queue_id,
                name,
                correlation_id: d.correlation_id,
                details,
                launched_by: if d.range != 0 {
                    by_number
                } else if d.launch_ns != 0 {
                    open_at.as_ref().and_then(|o| o.innermost(d.thread_id, d.launch_ns))
                } else {
                    None
                },
                invocation: d.invocation,
            });
        }
        self.stop_ns = last_end;
        if outside > 0 {
            self.warnings.push(format!("roctx_utils: {outside} GPU kernels, copies and sets ran outside the session window and are not shown"));
        }
        let lost = kernels.stats.dropped_cap + kernels.stats.rejected_records + kernels.stats.sdk_dropped;
        if lost > 0 {
            self.warnings.push(format!("roctx_utils: {lost} GPU kernel, copy and set records lost (cap, malformed, or dropped by rocprofiler-sdk or CUPTI)"));
        }
        // One line per non-zero loss counter, the count first.
        let s = &kernels.stats;
        let counted = [
            (s.names_over_cap, format!("kernel symbols were not kept (over the cap of {} names): their kernels are shown without a name", roctx_kernels::MAX_KERNEL_NAMES)),
            (s.invocations_over_cap, format!("op scopes past the {} kept between resets: their kernels are shown with no op", roctx_kernels::MAX_INVOCATIONS)),
            (s.names_too_long, format!("kernel names are shown mangled: demangled, each was over {} bytes", roctx_kernels::MAX_DEMANGLED_NAME)),
            (s.unjoined, "GPU kernels, copies and sets could not be matched to their launch call (no range or op shown for them)".to_owned()),
        ];
        for (n, what) in counted.into_iter().filter(|(n, _)| *n > 0) {
            self.warnings.push(format!("roctx_utils: {n} {what}"));
        }
        if s.not_seen > 0 {
            self.warnings.push(format!(
                "roctx_utils: another profiler held CUPTI's activity API for {} CUDA API calls: the kernels, copies and sets they launched went to it and are not in this trace",
                s.not_seen
            ));
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

/// An activity's event name and its details stat as XLA's GPU tracer writes them: the kernel's
/// name and `kernel_details`; `MemcpyD2D` and `memcpy_details`; `Memset <kind>` and
/// `Memset_details` (xspace_and_xprof.md; XLA's `cupti_collector.cc`).
fn describe(d: &roctx_kernels::Dispatch, gpu: u32, kernels: &roctx_kernels::KernelSnapshot) -> (String, String) {
    use roctx_kernels::Work;
    match d.work {
        Work::Kernel => {
            let blocks = |i: usize| d.grid[i].div_ceil(d.workgroup[i].max(1));
            let details = format!("grid:{},{},{} block:{},{},{}", blocks(0), blocks(1), blocks(2), d.workgroup[0], d.workgroup[1], d.workgroup[2]);
            (kernels.name(d.kernel_id).to_owned(), details)
        }
        Work::Copy(c) => (
            c.direction.xla_name().to_owned(),
            format!("kind_src:{} kind_dst:{} size:{} dest:{gpu} async:{}", c.src.name(), c.dst.name(), c.bytes, u8::from(c.is_async)),
        ),
        Work::Set(m) => (
            format!("Memset {}", m.memory.cupti_value()),
            format!("kind:{} num_bytes:{} async:{}", m.memory.name(), m.bytes, u8::from(m.is_async)),
        ),
    }
}

/// Each thread's push/pop ranges, to find the innermost one open at an instant. Process
/// (start/stop) ranges are on no thread's stack and never launch anything.
struct OpenRanges {
    /// Per thread, ranges sorted by (start, depth), each with its enclosing range's position.
    by_thread: std::collections::HashMap<u64, Vec<OpenRange>>,
}

struct OpenRange {
    start_ns: u64,
    end_ns: u64,
    event: usize,
    parent: Option<usize>,
}

impl OpenRanges {
    fn new(events: &[Event]) -> OpenRanges {
        let mut by_thread: std::collections::HashMap<u64, Vec<(u64, u16, usize)>> = std::collections::HashMap::new();
        for (i, e) in events.iter().enumerate().filter(|(_, e)| e.kind == EventKind::Range) {
            by_thread.entry(e.tid).or_default().push((e.start_ns, e.depth, i));
        }
        let by_thread = by_thread
            .into_iter()
            .map(|(tid, mut v)| {
                // An enclosing range starts no later and, at the same ns, is shallower.
                v.sort_unstable();
                let mut ranges: Vec<OpenRange> = Vec::with_capacity(v.len());
                let mut stack: Vec<usize> = Vec::new();
                for (start_ns, _, event) in v {
                    // Ranges of one thread nest (one stack); [start, end) intervals.
                    while stack.last().is_some_and(|&p| ranges[p].end_ns <= start_ns) {
                        stack.pop();
                    }
                    let end_ns = events[event].end_ns;
                    ranges.push(OpenRange { start_ns, end_ns, event, parent: stack.last().copied() });
                    stack.push(ranges.len() - 1);
                }
                (tid, ranges)
            })
            .collect();
        OpenRanges { by_thread }
    }

    /// The event index of the innermost range of `tid` with `start <= instant < end`.
    fn innermost(&self, tid: u64, instant: u64) -> Option<usize> {
        let ranges = self.by_thread.get(&tid)?;
        let mut at = ranges.partition_point(|r| r.start_ns <= instant).checked_sub(1)?;
        loop {
            let r = &ranges[at];
            if instant < r.end_ns {
                return Some(r.event);
            }
            at = r.parent?;
        }
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
        assert_eq!(w[0], "roctx_utils: 17 ROCTX events dropped: the per-thread event cap was reached (raise ROCTX_UTILS_MAX_EVENTS_PER_THREAD, or a session's max_events_per_thread)");
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

#[cfg(test)]
mod join_tests {
    use super::*;
    use roctx_kernels::{Dispatch, KernelSnapshot};

    fn range(t: &mut Trace, tid: u64, start_ns: u64, end_ns: u64, depth: u16, label: &str) -> usize {
        let label = t.label(label);
        t.events.push(Event { kind: EventKind::Range, tid, end_tid: tid, start_ns, end_ns, label, depth, seq: 0 });
        t.events.len() - 1
    }

    fn kernel(tid: u64, launch_ns: u64, start_ns: u64) -> Dispatch {
        Dispatch {
            work: Default::default(),
            graph: Default::default(),
            start_ns,
            end_ns: start_ns + 100,
            kernel_id: 1,
            invocation: 0,
            range: 0,
            thread_id: tid,
            launch_ns,
            agent_id: 1,
            queue_id: 1,
            dispatch_id: start_ns,
            correlation_id: start_ns,
            workgroup: [1, 1, 1],
            grid: [1, 1, 1],
        }
    }

    fn launched_by(t: &mut Trace, kernels: Vec<Dispatch>) -> Vec<Option<String>> {
        t.kernels.clear();
        t.add_kernels(&KernelSnapshot { dispatches: kernels, ..KernelSnapshot::default() });
        t.kernels.iter().map(|k| k.launched_by.map(|i| t.label_of(&t.events[i]).to_owned())).collect()
    }

    /// A window closed by its trigger's pop (issue 43's `--capture-range`) keeps the kernels
    /// launched inside it that were still running then; the trace's stop covers them. Kernels
    /// launched before the start, or after the stop, stay outside.
    #[test]
    fn kernels_launched_inside_the_session_are_kept_when_they_end_after_its_stop() {
        let mut t = Trace::new("h", 1000, 5000);
        range(&mut t, 7, 1000, 5000, 0, "step 1");
        let long = |launch: u64, start: u64, end: u64| Dispatch { end_ns: end, ..kernel(7, launch, start) };
        let got = launched_by(
            &mut t,
            vec![
                long(4000, 4100, 9000), // launched inside, ends after the stop: kept
                long(2000, 2100, 2200), // inside: kept
                long(900, 1200, 1300),  // launched before the start, ran inside: kept (XLA's rule)
                long(900, 950, 1300),   // started before the start: outside
                long(5100, 5200, 5300), // launched after the stop: outside
                long(0, 4500, 6000),    // no launch known, ends after the stop: outside
            ],
        );
        let s = |x: &str| Some(x.to_owned());
        assert_eq!(got, [s("step 1"), s("step 1"), None]);
        assert_eq!(t.stop_ns, 9000, "the stop moves to the last kept kernel's end");
        assert!(t.warnings.iter().any(|w| w.starts_with("roctx_utils: 3 GPU kernels, copies and sets ran outside")), "{:?}", t.warnings);

        // A source that carries the push number (rocprofiler-sdk's correlation): launched inside
        // when its range is one of this trace's.
        let mut t = Trace::new("h", 1000, 5000);
        let label = t.label("step 1");
        t.events.push(Event { kind: EventKind::Range, tid: 7, end_tid: 7, start_ns: 1000, end_ns: 5000, label, depth: 0, seq: 3 });
        let by_number = |range: u32| Dispatch { range, end_ns: 7000, ..kernel(7, 0, 4500) };
        let got = launched_by(&mut t, vec![by_number(3), by_number(4)]);
        assert_eq!(got, [s("step 1")]);
        assert_eq!(t.stop_ns, 7000);
    }

    #[test]
    fn kernel_names_over_the_cap_are_said_in_the_warnings() {
        // Issue 25, item 12: the kernels got the name "" and nothing said why.
        let mut t = Trace::new("h", 0, 1_000_000);
        let stats = roctx_kernels::KernelStats { names_over_cap: 3, ..Default::default() };
        t.add_kernels(&KernelSnapshot { stats, ..KernelSnapshot::default() });
        assert!(t.warnings.iter().any(|w| w.starts_with("roctx_utils: 3 kernel symbols were not kept")), "{:?}", t.warnings);
        let mut clean = Trace::new("h", 0, 1_000_000);
        clean.add_kernels(&KernelSnapshot::default());
        assert!(clean.warnings.is_empty());
    }

    #[test]
    fn a_kernel_belongs_to_the_innermost_range_open_at_its_launch_instant() {
        let mut t = Trace::new("h", 0, 1_000_000);
        range(&mut t, 7, 1000, 9000, 0, "step");
        range(&mut t, 7, 2000, 3000, 1, "fusion.1");
        range(&mut t, 7, 2000, 2500, 2, "inner"); // pushed at the same ns as its parent
        range(&mut t, 7, 3000, 4000, 1, "fusion.2"); // pushed at the ns its sibling popped
        range(&mut t, 8, 0, 1_000_000, 0, "other thread");
        let process = t.label("process range");
        t.events.push(Event { kind: EventKind::ProcessRange, tid: 7, end_tid: 9, start_ns: 0, end_ns: 1_000_000, label: process, depth: 0, seq: 0 });
        let got = launched_by(
            &mut t,
            vec![
                kernel(7, 999, 10),        // before the outermost push
                kernel(7, 1000, 20),       // at the push: inside
                kernel(7, 2000, 30),       // at two pushes of one ns: the inner one
                kernel(7, 2500, 40),       // at inner's pop: its parent
                kernel(7, 3000, 50),       // at a pop and a push of one ns: the pushed one
                kernel(7, 3999, 60_000),   // ran long after fusion.2 closed: by launch, not by run
                kernel(7, 9000, 70),       // at the outermost pop: none (the process range is no stack)
                kernel(9, 5000, 80),       // a thread with no ranges
                kernel(8, 5000, 90),       // its own thread's range
                kernel(7, 0, 100),         // no launch known: none
            ],
        );
        let s = |x: &str| Some(x.to_owned());
        assert_eq!(got, [None, s("step"), s("inner"), s("fusion.1"), s("fusion.2"), s("fusion.2"), None, None, s("other thread"), None]);
    }

    /// The ranges' stamps are converted from the capture clock (TSC) and carry its error; the
    /// launch's are the vendor's `CLOCK_BOOTTIME`. With an injected error of up to `e` ns on every
    /// range stamp, each kernel keeps its range while half its launch call (plus the gap to the
    /// push or pop) exceeds `e`, and can flip once the error reaches it.
    #[test]
    fn the_join_tolerates_clock_error_below_half_a_launch_call() {
        const E: u64 = 64; // the measured read window of the TSC calibration (BENCHMARKS.md)
        let call = 2 * E + 2; // the shortest launch call for which the bound holds
        let mut truth = Vec::new();
        let mut kernels = Vec::new();
        let mut t = Trace::new("h", 0, u64::MAX / 2);
        let mut now = 10_000u64;
        for i in 0..1000u64 {
            // Injected error, deterministic, in [-E, E], on each push and pop.
            let err = |k: u64| (k.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) % (2 * E + 1);
            let (push, pop) = (now, now + 3 * call);
            let (seen_push, seen_pop) = (push + err(2 * i) - E, pop + err(2 * i + 1) - E);
            let label = format!("r{i}");
            range(&mut t, 7, seen_push, seen_pop, 0, &label);
            // Launch calls right after the push and right before the pop (no gap at all).
            kernels.push(kernel(7, push + call / 2, now));
            kernels.push(kernel(7, pop - call / 2, now + 1));
            truth.push(Some(label.clone()));
            truth.push(Some(label));
            now = pop + 1; // the next push follows the pop at once
        }
        assert_eq!(launched_by(&mut t, kernels), truth, "within the bound every kernel keeps its range");

        // Past the bound: a push seen E ns late misses a call of 2E - 2 ns made right after it.
        let mut t = Trace::new("h", 0, 1_000_000);
        range(&mut t, 7, 1000 + E, 5000, 0, "late");
        assert_eq!(launched_by(&mut t, vec![kernel(7, 1000 + E - 1, 1)]), [None]);
    }
}
