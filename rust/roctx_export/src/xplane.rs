//! XSpace out: the `/host:ROCTX` plane, XLA's host-plane merge, and XProf-safe row numbering.
//!
//! Owns the XSpace conventions (xspace_and_xprof.md 2-5): plane and line names, `nvtx_range`
//! stats as `ref_value`s to a stat metadata named by the label, offsets in ps from the line's
//! timestamp, events ordered by offset then longest first. Never touches the capture side.
//!
//! Inputs are untrusted (the CLI reads any file): ids, offsets and timestamps anywhere in the
//! i64 range never overflow here (checked or saturating arithmetic), merging costs
//! O(n log n) in lines, events and planes, and [`validate`] reports each kind of problem once
//! per plane with a count, so its output grows with the distinct problems, not the events.

use std::collections::{BTreeSet, HashMap, HashSet};

use prost::Message;

use crate::model::{EventKind, Trace};
use crate::xplane_proto::{x_event, x_stat, XEvent, XEventMetadata, XLine, XPlane, XSpace, XStat, XStatMetadata};

/// Where host threads are drawn.
pub const HOST_PLANE: &str = "/host:CPU";
/// Our transient plane (the ROCm/xla fork's name); merged into [`HOST_PLANE`], never shown.
pub const ROCTX_PLANE: &str = "/host:ROCTX";
/// CUPTI's NVTX plane, merged the same way.
pub const NVTX_PLANE: &str = "/host:NVTX-CUPTI";
/// The stat carrying the range label (XLA's `kNVTXRange`).
pub const NVTX_RANGE_STAT: &str = "nvtx_range";
/// Planes XLA merges into `/host:CPU`, in its order.
pub const HOST_PLANES: [&str; 5] = ["/host:TPU-runtime", "/host:CUPTI", "/host:python-tracer", "/host:ROCTRACER", HOST_PLANE];
/// First line id for remapped NVTX lines (XLA's `kNvtxLineIdStart`).
pub const NVTX_LINE_ID_START: i64 = 1 << 32;
/// First line id for remapped ROCTX lines (ROCm/xla's `kRoctxLineIdStart`).
pub const ROCTX_LINE_ID_START: i64 = 2 << 32;

/// `Host Threads/<tid>/ROCTX`, the line name XLA's ROCm tracer uses.
pub fn roctx_line_name(tid: u64) -> String {
    format!("Host Threads/{tid}/ROCTX")
}

/// The tid of a `Host Threads/<tid>/ROCTX` line name.
pub fn roctx_line_tid(name: &str) -> Option<u64> {
    name.strip_prefix("Host Threads/")?.strip_suffix("/ROCTX")?.parse().ok()
}

/// XLA's plane holding the session's wall-clock start and stop (`profile_start_time`,
/// `profile_stop_time`); after XLA's post-processing, line timestamps are relative to the start.
pub const TASK_ENV_PLANE: &str = "Task Environment";
/// Prefix of the GPU planes (`/device:GPU:<n>`), XLA's `kGpuPlanePrefix`.
pub const GPU_PLANE_PREFIX: &str = "/device:GPU:";
/// XLA's flow stats: producer id (on the launching ROCTX range) and consumer id (on its
/// kernels). XProf keeps them out of the event args; the Chrome writer draws an arrow per pair.
pub const FLOW_PRODUCER_STAT: &str = "_p";
/// See [`FLOW_PRODUCER_STAT`].
pub const FLOW_CONSUMER_STAT: &str = "_c";
/// High bits of our flow ids: a host's own flows (XLA's are small step and correlation
/// numbers) never pair with ours in a merged space.
pub const FLOW_ID_BASE: u64 = 0x5243_5458 << 32; // "RCTX"

/// The flow id of the trace's `index`-th event.
pub fn flow_id(index: usize) -> u64 {
    // CAST: an index into a Vec fits u64; below 2^32 events the id stays unique.
    FLOW_ID_BASE | (index as u64 + 1)
}
/// Stat of [`TASK_ENV_PLANE`]: session start, wall-clock ns.
pub const PROFILE_START_TIME: &str = "profile_start_time";
/// Stat of [`TASK_ENV_PLANE`]: session stop, wall-clock ns.
pub const PROFILE_STOP_TIME: &str = "profile_stop_time";
/// Line timestamps above this are absolute wall-clock ns (after 1973), not session-relative.
const ABSOLUTE_NS: i64 = 100_000_000_000_000_000;

/// Wall-clock ns of `trace`'s session start.
fn wall_start(trace: &Trace) -> i64 {
    ns(trace.start_ns).saturating_add(trace.realtime_offset_ns)
}

/// `ns` as i64, saturating: collector times past i64::MAX (only from a broken clock or a
/// hand-built trace) clamp instead of turning negative.
fn ns(t: u64) -> i64 {
    i64::try_from(t).unwrap_or(i64::MAX)
}

/// `a - b` in ns as i64, saturating at the i64 limits.
fn ns_between(a: u64, b: u64) -> i64 {
    let d = i128::from(a) - i128::from(b);
    // CAST: clamped into the i64 range first.
    d.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// Builds the transient `/host:ROCTX` plane: one line per thread, events named by label, each
/// with an `nvtx_range` stat; marks are zero-length events. Line timestamps are wall-clock ns
/// minus `base_ns` (XLA's normalized spaces count from the session start; XProf converts line
/// timestamps to ps in 64 bits, so absolute epoch times would overflow there). Events ending
/// before they start are skipped.
pub fn roctx_plane(trace: &Trace) -> XPlane {
    roctx_plane_based(trace, wall_start(trace))
}

/// [`roctx_plane`] with line timestamps relative to `base_ns` (wall-clock ns; 0 = absolute).
pub fn roctx_plane_based(trace: &Trace, base_ns: i64) -> XPlane {
    let (mut plane, events) = roctx_plane_parts(trace, base_ns);
    for line in &mut plane.lines {
        line.events = events.of_line(line.id).map(|i| events.xevent(trace, i)).collect();
    }
    plane
}

/// The ROCTX plane's events, kept as indices into the trace until they are built
/// ([`RoctxEvents::xevent`]) or written straight to bytes ([`standalone_xspace_bytes`]); both
/// give the same event.
pub(crate) struct RoctxEvents {
    /// Event indices per line id (= tid), each in XProf's order (start, then longest first).
    by_line: HashMap<i64, Run>,
    nvtx_stat_id: i64,
    flow_stat_id: i64,
    /// Events that launched kernels: they carry a flow producer stat.
    launchers: HashSet<usize>,
    start_ns: u64,
}

impl RoctxEvents {
    /// The indices of the events of line `line_id`, in order.
    pub(crate) fn of_line(&self, line_id: i64) -> impl Iterator<Item = usize> + '_ {
        let (span, picked) = match self.by_line.get(&line_id) {
            Some(Run::Span(span)) => (span.clone(), &[][..]),
            Some(Run::Picked(picked)) => (0..0, picked.as_slice()),
            None => (0..0, &[][..]),
        };
        span.chain(picked.iter().copied())
    }

    /// Event `i` as (metadata id, offset ps, duration ps, nvtx_range ref, flow id).
    #[inline]
    pub(crate) fn fields(&self, trace: &Trace, i: usize) -> EventFields {
        let e = &trace.events[i];
        let duration = match e.kind {
            EventKind::Mark => 0,
            _ => ns(e.end_ns.saturating_sub(e.start_ns)).saturating_mul(1000),
        };
        let flow = (!self.launchers.is_empty() && self.launchers.contains(&i)).then(|| flow_id(i));
        (i64::from(e.label) + 1, ns_between(e.start_ns, self.start_ns).saturating_mul(1000), duration, u64::from(e.label) + 2, flow)
    }

    pub(crate) fn xevent(&self, trace: &Trace, i: usize) -> XEvent {
        let (metadata_id, offset_ps, duration_ps, label_ref, flow) = self.fields(trace, i);
        let mut stats = vec![XStat { metadata_id: self.nvtx_stat_id, value: Some(x_stat::Value::RefValue(label_ref)) }];
        if let Some(flow) = flow {
            stats.push(XStat { metadata_id: self.flow_stat_id, value: Some(x_stat::Value::Uint64Value(flow)) });
        }
        XEvent { metadata_id, data: Some(x_event::Data::OffsetPs(offset_ps)), duration_ps, stats }
    }

    pub(crate) fn stat_ids(&self) -> (i64, i64) {
        (self.nvtx_stat_id, self.flow_stat_id)
    }
}

/// [`RoctxEvents::fields`]: metadata id, offset ps, duration ps, `nvtx_range` ref, flow id.
pub(crate) type EventFields = (i64, i64, i64, u64, Option<u64>);

/// One line's events: a span of the trace's events when the trace is in snapshot order (by
/// thread, then start, longest first: what the collector hands over), else picked one by one.
enum Run {
    Span(std::ops::Range<usize>),
    Picked(Vec<usize>),
}

/// [`roctx_plane_based`] with its lines' events left out, and what builds them.
pub(crate) fn roctx_plane_parts(trace: &Trace, base_ns: i64) -> (XPlane, RoctxEvents) {
    let mut plane = XPlane { id: 0, name: ROCTX_PLANE.to_owned(), ..XPlane::default() };
    let nvtx_stat_id = 1i64;
    plane.stat_metadata.insert(nvtx_stat_id, XStatMetadata { id: nvtx_stat_id, name: NVTX_RANGE_STAT.to_owned(), description: String::new() });
    // Label i -> event metadata id i+1 and stat metadata id i+2 (ids 0 are "unset" in proto3).
    let mut used = vec![false; trace.labels.len()];
    let mut unknown = BTreeSet::new(); // labels past the table (a hand-built trace): named ""
    for e in &trace.events {
        match used.get_mut(e.label as usize) {
            Some(u) => *u = true,
            None => {
                unknown.insert(e.label);
            }
        }
    }
    let used = used.iter().enumerate().filter(|(_, &u)| u).map(|(i, _)| i as u32); // CAST: labels are u32 ids
    for label in used.chain(unknown) {
        let text = trace.labels.get(label as usize).cloned().unwrap_or_default();
        let id = i64::from(label);
        plane.event_metadata.insert(id + 1, XEventMetadata { id: id + 1, name: text.clone(), ..XEventMetadata::default() });
        plane.stat_metadata.insert(id + 2, XStatMetadata { id: id + 2, name: text, description: String::new() });
    }
    let line_ts = wall_start(trace).saturating_sub(base_ns);
    // Ranges that launched kernels produce a flow (id = event index + 1) their kernels consume.
    let launchers: HashSet<usize> = trace.kernels.iter().filter_map(|k| k.launched_by).collect();
    let flow_stat_id = i64::try_from(trace.labels.len()).unwrap_or(i64::MAX - 3).saturating_add(2);
    if !launchers.is_empty() {
        plane.stat_metadata.insert(flow_stat_id, XStatMetadata { id: flow_stat_id, name: FLOW_PRODUCER_STAT.to_owned(), description: String::new() });
    }
    // By thread, then each thread's events by (start, longest first). A snapshot's events are
    // in that order already: then each thread's are one span of the trace, and nothing is
    // sorted or indexed (at 10 M events, 80 MB of indices less).
    let key = |e: &crate::Event| (e.tid, e.start_ns, std::cmp::Reverse(e.end_ns));
    let in_order = trace.events.windows(2).all(|w| key(&w[0]) <= key(&w[1])) && trace.events.iter().all(|e| e.end_ns >= e.start_ns);
    let mut by_tid: Vec<(u64, Run)> = Vec::new();
    if in_order {
        let mut at = 0;
        for run in trace.events.chunk_by(|a, b| a.tid == b.tid) {
            by_tid.push((run[0].tid, Run::Span(at..at + run.len())));
            at += run.len();
        }
    } else {
        by_tid = picked_by_thread(trace).into_iter().map(|(tid, run)| (tid, Run::Picked(run))).collect();
    }
    let mut by_line = HashMap::new();
    for (tid, run) in by_tid {
        let (first, last_end) = match &run {
            Run::Span(span) => (span.start, trace.events[span.clone()].iter().map(|e| e.end_ns).max()),
            Run::Picked(picked) => (picked[0], picked.iter().map(|&i| trace.events[i].end_ns).max()),
        };
        let name = roctx_line_name(tid);
        let display_name = match trace.thread_names.get(&tid) {
            Some(thread) => format!("{name} ({thread})"),
            None => String::new(),
        };
        let line_start = trace.events[first].start_ns;
        let line_end = last_end.unwrap_or(line_start);
        // CAST: OS tids are < 2^32.
        let id = tid as i64;
        plane.lines.push(XLine {
            id,
            display_id: 0,
            name,
            display_name,
            timestamp_ns: line_ts,
            duration_ps: ns(line_end.saturating_sub(trace.start_ns)).saturating_mul(1000),
            events: Vec::new(),
        });
        by_line.insert(id, run);
    }
    (plane, RoctxEvents { by_line, nvtx_stat_id, flow_stat_id, launchers, start_ns: trace.start_ns })
}

/// The kept events' indices by thread (ascending tid), each thread's sorted by start, longest
/// first: for a trace not in snapshot order.
fn picked_by_thread(trace: &Trace) -> Vec<(u64, Vec<usize>)> {
    // A few threads are the common case: they are found by a scan from the last one used, and
    // only past 64 by a map.
    let mut by_tid: Vec<(u64, Vec<usize>)> = Vec::new();
    let mut index: HashMap<u64, usize> = HashMap::new();
    let mut last = 0;
    for (i, e) in trace.events.iter().enumerate().filter(|(_, e)| e.end_ns >= e.start_ns) {
        if by_tid.get(last).map_or(true, |(tid, _)| *tid != e.tid) {
            let found = if by_tid.len() <= 64 { by_tid.iter().position(|(tid, _)| *tid == e.tid) } else { index.get(&e.tid).copied() };
            last = found.unwrap_or_else(|| {
                by_tid.push((e.tid, Vec::new()));
                index.insert(e.tid, by_tid.len() - 1);
                by_tid.len() - 1
            });
        }
        by_tid[last].1.push(i);
    }
    by_tid.sort_unstable_by_key(|(tid, _)| *tid);
    for (_, run) in &mut by_tid {
        run.sort_by_key(|&i| (trace.events[i].start_ns, std::cmp::Reverse(trace.events[i].end_ns)));
    }
    by_tid
}

/// The trace's GPU activities as `/device:GPU:<n>` planes (XLA's CUPTI layout,
/// xspace_and_xprof.md 6): a line per real stream, named as XLA names its own
/// (`Stream #<id>(<kinds>)`, kinds from `Compute`, `MemcpyH2D`, ..., `Memset`, in that order),
/// an event per kernel (its demangled name), copy (`MemcpyD2D`) or set (`Memset <kind>`), with
/// `correlation_id`, `kernel_details` / `memcpy_details` / `Memset_details`, `cuda_graph_id` and
/// `cuda_graph_node_id` for graph work, `nvtx_range` (the innermost ROCTX range open at launch)
/// and the flow consumer id of its launching range. Times as in [`roctx_plane_based`].
pub fn gpu_planes(trace: &Trace, base_ns: i64) -> Vec<XPlane> {
    gpu_planes_with(trace, base_ns, ops::OpScopes::of(trace).as_ref())
}

/// [`gpu_planes`] with the trace's op groups already gathered (`None`: no op events).
fn gpu_planes_with(trace: &Trace, base_ns: i64, scopes: Option<&ops::OpScopes>) -> Vec<XPlane> {
    const CORRELATION: i64 = 1;
    const KERNEL_DETAILS: i64 = 2;
    const NVTX: i64 = 3;
    const FLOW: i64 = 4;
    const MEMCPY_DETAILS: i64 = 5;
    const MEMSET_DETAILS: i64 = 6;
    const GRAPH: i64 = 7;
    const GRAPH_NODE: i64 = 8;
    const LABEL_BASE: i64 = 9;
    let line_ts = wall_start(trace).saturating_sub(base_ns);
    let mut planes: std::collections::BTreeMap<u32, XPlane> = std::collections::BTreeMap::new();
    // Per plane and line: which kinds of work it ran (the line's name lists them).
    let mut kinds: HashMap<(u32, i64), std::collections::BTreeSet<usize>> = HashMap::new();
    let mut names: HashMap<(u32, &str), i64> = HashMap::new();
    for k in &trace.kernels {
        let plane = planes.entry(k.gpu).or_insert_with(|| {
            let mut p = XPlane { id: i64::from(k.gpu) + 1, name: format!("{GPU_PLANE_PREFIX}{}", k.gpu), ..XPlane::default() };
            for (id, name) in [
                (CORRELATION, "correlation_id"),
                (KERNEL_DETAILS, "kernel_details"),
                (NVTX, NVTX_RANGE_STAT),
                (FLOW, FLOW_CONSUMER_STAT),
                (MEMCPY_DETAILS, "memcpy_details"),
                (MEMSET_DETAILS, "Memset_details"),
                (GRAPH, "cuda_graph_id"),
                (GRAPH_NODE, "cuda_graph_node_id"),
            ] {
                p.stat_metadata.insert(id, XStatMetadata { id, name: name.to_owned(), description: String::new() });
            }
            p
        });
        let next = i64::try_from(names.len()).unwrap_or(i64::MAX - 1) + 1;
        let meta = *names.entry((k.gpu, k.name.as_str())).or_insert(next);
        plane.event_metadata.entry(meta).or_insert_with(|| XEventMetadata { id: meta, name: k.name.clone(), ..XEventMetadata::default() });
        let details = match k.work {
            roctx_kernels::Work::Kernel => KERNEL_DETAILS,
            roctx_kernels::Work::Copy(_) => MEMCPY_DETAILS,
            roctx_kernels::Work::Set(_) => MEMSET_DETAILS,
        };
        let mut stats = vec![
            XStat { metadata_id: CORRELATION, value: Some(x_stat::Value::Uint64Value(k.correlation_id)) },
            XStat { metadata_id: details, value: Some(x_stat::Value::StrValue(k.details.clone())) },
        ];
        if k.graph.is_graph() {
            stats.push(XStat { metadata_id: GRAPH, value: Some(x_stat::Value::Uint64Value(u64::from(k.graph.graph_id))) });
            stats.push(XStat { metadata_id: GRAPH_NODE, value: Some(x_stat::Value::Uint64Value(k.graph.node_id)) });
        }
        if let Some(launcher) = k.launched_by.and_then(|i| trace.events.get(i).map(|e| (i, e))) {
            let (i, e) = launcher;
            let label_stat = LABEL_BASE + i64::from(e.label);
            plane.stat_metadata.entry(label_stat).or_insert_with(|| XStatMetadata {
                id: label_stat,
                name: trace.label_of(e).to_owned(),
                description: String::new(),
            });
            // CAST: a label id fits u64.
            stats.push(XStat { metadata_id: NVTX, value: Some(x_stat::Value::RefValue(label_stat as u64)) });
            stats.push(XStat { metadata_id: FLOW, value: Some(x_stat::Value::Uint64Value(flow_id(i))) });
        }
        // CAST: XLA's line id is the stream id; a queue handle past i64::MAX wraps, still distinct.
        let line_id = k.stream as i64;
        kinds.entry((k.gpu, line_id)).or_default().insert(k.work.xla_kind_index());
        let line = match plane.lines.iter_mut().position(|l| l.id == line_id) {
            Some(at) => &mut plane.lines[at],
            None => {
                plane.lines.push(XLine { id: line_id, timestamp_ns: line_ts, ..XLine::default() });
                plane.lines.last_mut().expect("just pushed")
            }
        };
        line.duration_ps = line.duration_ps.max(ns(k.end_ns.saturating_sub(trace.start_ns)).saturating_mul(1000));
        line.events.push(XEvent {
            metadata_id: meta,
            data: Some(x_event::Data::OffsetPs(ns_between(k.start_ns, trace.start_ns).saturating_mul(1000))),
            duration_ps: ns(k.end_ns.saturating_sub(k.start_ns)).saturating_mul(1000),
            stats,
        });
    }
    for (gpu, p) in &mut planes {
        for line in &mut p.lines {
            let names: Vec<&str> = kinds.get(&(*gpu, line.id)).into_iter().flatten().map(|&i| roctx_kernels::Work::XLA_KINDS[i]).collect();
            line.name = stream_line_name(line.id, &names);
        }
        if let Some(caps) = trace.devices.get(gpu) {
            ops::add_device_caps(p, caps);
        }
    }
    if let Some(scopes) = scopes {
        ops::add_op_events(trace, scopes, &mut planes, line_ts);
    }
    planes
        .into_values()
        .map(|mut p| {
            p.lines.sort_by_key(|l| l.id);
            p
        })
        .collect()
}

/// XLA's name for a GPU stream line: `Stream #<id>`, then its kinds of work in parentheses,
/// comma-separated (`Stream #14(Compute,MemcpyD2D)`; XLA's `GetDeviceXLineName`).
pub fn stream_line_name(stream: i64, kinds: &[&str]) -> String {
    if kinds.is_empty() {
        format!("Stream #{stream}")
    } else {
        format!("Stream #{stream}({})", kinds.join(","))
    }
}

/// A complete XSpace for a trace: `/host:ROCTX` merged into a fresh `/host:CPU`, hostnames and
/// warnings set. What the standalone log directory writer stores.
pub fn standalone_xspace(trace: &Trace) -> XSpace {
    let (mut space, events) = standalone_parts(trace);
    for line in &mut space.planes[0].lines {
        line.events = events.of_line(line.id).map(|i| events.xevent(trace, i)).collect();
    }
    space
}

/// [`standalone_xspace`] serialized: the same message (`xplane/encode.rs` says how it is written),
/// several times faster, for writers of large traces.
pub fn standalone_xspace_bytes(trace: &Trace) -> Vec<u8> {
    let (space, events) = standalone_parts(trace);
    encode::space_with_roctx_events(space, trace, &events)
}

/// [`standalone_xspace`] with the host plane's (first plane's) events left out.
fn standalone_parts(trace: &Trace) -> (XSpace, RoctxEvents) {
    // Merging into an empty host plane moves no id and re-keys no metadata, so the ROCTX plane
    // simply becomes /host:CPU (then sorted and row-numbered like any merge result).
    let (mut host, events) = roctx_plane_parts(trace, wall_start(trace));
    host.name = HOST_PLANE.to_owned();
    host.lines.sort_by(|a, b| sort_key(a).cmp(sort_key(b)));
    assign_rows(&mut host);
    let stop = wall_start(trace).saturating_add(ns(trace.stop_ns.saturating_sub(trace.start_ns)));
    // One gathering of the op groups serves the op events and the module they name.
    let scopes = ops::OpScopes::of(trace);
    let mut planes = vec![host];
    planes.extend(gpu_planes_with(trace, wall_start(trace), scopes.as_ref()));
    planes.push(task_env_plane(wall_start(trace), stop));
    let mut space = XSpace {
        planes,
        hostnames: vec![trace.hostname.clone()],
        warnings: trace.warnings.clone(),
        ..XSpace::default()
    };
    if let Some(scopes) = &scopes {
        ops::add_module(&mut space, &scopes.module);
    }
    (space, events)
}

/// The `Task Environment` plane XLA writes: session start/stop in wall-clock ns, what lets a
/// later merge line this file up with another capture.
pub fn task_env_plane(start_ns: i64, stop_ns: i64) -> XPlane {
    let mut p = XPlane { name: TASK_ENV_PLANE.to_owned(), ..XPlane::default() };
    for (id, name, value) in [(1, PROFILE_START_TIME, start_ns), (2, PROFILE_STOP_TIME, stop_ns)] {
        p.stat_metadata.insert(id, XStatMetadata { id, name: name.to_owned(), description: String::new() });
        // CAST: wall-clock ns are positive.
        p.stats.push(XStat { metadata_id: id, value: Some(x_stat::Value::Uint64Value(value.max(0) as u64)) });
    }
    p
}

/// A wall-clock time of the `Task Environment` plane ([`PROFILE_START_TIME`],
/// [`PROFILE_STOP_TIME`]), ns, if the space has it.
pub fn task_env_time(space: &XSpace, name: &str) -> Option<i64> {
    let p = space.planes.iter().find(|p| p.name == TASK_ENV_PLANE)?;
    let id = p.stat_metadata.values().find(|m| m.name == name)?.id;
    match p.stats.iter().find(|s| s.metadata_id == id)?.value {
        // Wall-clock ns fit i64 until 2262; a larger value is damage, clamped.
        Some(x_stat::Value::Uint64Value(v)) => Some(ns(v)),
        Some(x_stat::Value::Int64Value(v)) => Some(v),
        _ => None,
    }
}

/// The wall-clock session start a space's line timestamps count from: its `profile_start_time`,
/// or 0 if its lines hold absolute wall-clock times, or `None` if it says nothing.
pub fn time_base(space: &XSpace) -> Option<i64> {
    task_env_time(space, PROFILE_START_TIME).or_else(|| {
        let lines = space.planes.iter().flat_map(|p| &p.lines).filter(|l| !l.events.is_empty());
        lines.clone().any(|l| l.timestamp_ns > ABSOLUTE_NS).then_some(0)
    })
}

/// Merges `trace`'s ROCTX plane into an existing serialized XSpace (what an XLA host's
/// post-processing has), and returns the new bytes. Warnings are appended.
pub fn merge_into_bytes(xspace: &[u8], trace: &Trace) -> Result<Vec<u8>, prost::DecodeError> {
    let mut space = XSpace::decode(xspace)?;
    // Match the host's time base: its session start if it says (normalized, XLA's final
    // form), absolute wall clock if its lines are (before XLA's normalization), else ours.
    let base = time_base(&space).unwrap_or_else(|| {
        let stop = wall_start(trace).saturating_add(ns(trace.stop_ns.saturating_sub(trace.start_ns)));
        space.planes.push(task_env_plane(wall_start(trace), stop));
        wall_start(trace)
    });
    space.planes.push(roctx_plane_based(trace, base));
    let scopes = ops::OpScopes::of(trace);
    add_gpu_planes(&mut space, gpu_planes_with(trace, base, scopes.as_ref()));
    if let Some(scopes) = &scopes {
        ops::add_module(&mut space, &scopes.module);
    }
    space.warnings.extend(trace.warnings.iter().cloned());
    if !trace.hostname.is_empty() && space.hostnames.is_empty() {
        space.hostnames.push(trace.hostname.clone());
    }
    merge_host_planes(&mut space);
    Ok(space.encode_to_vec())
}

/// Adds our GPU planes to a host's space. An empty `/device:GPU:<n>` of the host is replaced
/// (an empty one of ours changes nothing). Plane ids are moved past the host's, which XProf keys
/// some tools on.
///
/// A plane the host already filled (its own GPU tracer ran, e.g. `jax.profiler`) gets our rows
/// beside its own, side by side: each of ours, `Stream #<id>(<kinds>) roctx_utils`, is drawn
/// right below the host's row of the same stream (row keys `2 id` for the host's, `2 id + 1` for
/// ours). Both traced the same GPU work, so ours carry their details under other names
/// (`roctx_kernel_details`, ...): XProf's kernel and memcpy statistics, which key on
/// `kernel_details` / `memcpy_details` / `Memset_details`, count the host's events once. A
/// warning says so.
pub fn add_gpu_planes(space: &mut XSpace, ours: Vec<XPlane>) {
    let mut next_id = space.planes.iter().map(|p| p.id).max().unwrap_or(0).saturating_add(1);
    for mut plane in ours {
        let existing = space.planes.iter().position(|p| p.name == plane.name);
        if let Some(at) = existing {
            let n: usize = plane.lines.iter().map(|l| l.events.len()).sum();
            if n == 0 {
                continue;
            }
            if space.planes[at].lines.iter().any(|l| !l.events.is_empty()) {
                // The host's events are XLA's ops already (`hlo_op` on its kernels): our op
                // events over the same GPU time would make XProf count it twice.
                let op_events: usize = plane.lines.iter().filter(|l| ops::is_op_line(l)).map(|l| l.events.len()).sum();
                plane.lines.retain(|l| !ops::is_op_line(l));
                if op_events > 0 {
                    space.warnings.push(format!(
                        "roctx_utils: {} already holds the host's own GPU events: our {op_events} op scope events are left out of it (XProf's op statistics would count their GPU time twice)",
                        plane.name
                    ));
                }
                let n: usize = plane.lines.iter().map(|l| l.events.len()).sum();
                beside(&mut plane, &mut space.planes[at]);
                space.warnings.push(format!(
                    "roctx_utils: {} already holds the host's own GPU events; our {n} are beside them, in rows named `... roctx_utils`, with their details renamed so that XProf's kernel and memcpy statistics count the host's only",
                    plane.name
                ));
                continue;
            }
            space.planes.remove(at);
        }
        plane.id = next_id;
        next_id = next_id.saturating_add(1);
        space.planes.push(plane);
    }
}

/// Line ids of our rows beside a host's: past any CUDA stream id or HIP queue handle's low bits.
const BESIDE_LINE_BASE: i64 = 1 << 40;

/// Merges our GPU plane `ours` into the host's filled plane `host`, side by side
/// ([`add_gpu_planes`]).
fn beside(ours: &mut XPlane, host: &mut XPlane) {
    for m in ours.stat_metadata.values_mut() {
        if matches!(m.name.as_str(), "kernel_details" | "memcpy_details" | "Memset_details") {
            m.name = format!("roctx_{}", m.name);
        }
    }
    // The host's rows keep their order at even keys; ours take the odd key after theirs.
    for line in &mut host.lines {
        if line.display_id == 0 && (0..1 << 30).contains(&line.id) {
            line.display_id = 2 * line.id;
        }
    }
    for line in &mut ours.lines {
        let stream = line.id;
        line.display_name = format!("{} roctx_utils", line.name);
        line.name = line.display_name.clone();
        line.display_id = if (0..1 << 30).contains(&stream) { 2 * stream + 1 } else { 0 };
        line.id = BESIDE_LINE_BASE | (stream & (BESIDE_LINE_BASE - 1));
    }
    merge_planes(ours, host);
}

/// Combines several XSpaces (e.g. XLA's own capture and a roctx_utils log directory of the same
/// run) into one. ROCTX lines already merged into an input's `/host:CPU` are split back out into
/// `/host:ROCTX` first, so that the final merge remaps them like fresh ones instead of folding
/// them into a thread line with the same id.
pub fn merge_spaces(spaces: Vec<XSpace>) -> XSpace {
    let mut out = XSpace::default();
    let mut hostnames = HashSet::new();
    let mut has_task_env = false;
    // Every input is moved onto the first known time base (their `profile_start_time`s, or the
    // absolute wall clock), and only the first Task Environment plane is kept.
    let bases: Vec<Option<i64>> = spaces.iter().map(time_base).collect();
    let target = bases.iter().flatten().next().copied();
    for (mut space, from) in spaces.into_iter().zip(bases) {
        rebase(&mut space, from, target);
        if has_task_env {
            space.planes.retain(|p| p.name != TASK_ENV_PLANE);
        }
        has_task_env |= space.planes.iter().any(|p| p.name == TASK_ENV_PLANE);
        for plane in &mut space.planes {
            if plane.name != HOST_PLANE || !plane.lines.iter().any(|l| roctx_line_tid(&l.name).is_some()) {
                continue;
            }
            let (roctx, rest): (Vec<XLine>, Vec<XLine>) = std::mem::take(&mut plane.lines).into_iter().partition(|l| roctx_line_tid(&l.name).is_some());
            plane.lines = rest;
            let mut marker = XPlane { name: ROCTX_PLANE.to_owned(), event_metadata: plane.event_metadata.clone(), stat_metadata: plane.stat_metadata.clone(), ..XPlane::default() };
            for mut line in roctx {
                line.display_id = 0;
                // Back to the thread id XLA's ROCm tracer would have given it.
                // CAST: OS tids are < 2^32; a larger one from a damaged name wraps harmlessly.
                line.id = roctx_line_tid(&line.name).unwrap_or_default() as i64;
                marker.lines.push(line);
            }
            out.planes.push(marker);
        }
        // A GPU plane two inputs both filled (XLA's tracer and ours saw the same kernels) is
        // kept once, from the first input, rather than merged into double GPU time.
        let (gpu, rest): (Vec<XPlane>, Vec<XPlane>) = space.planes.into_iter().partition(|p| p.name.starts_with(GPU_PLANE_PREFIX));
        out.planes.extend(rest);
        add_gpu_planes(&mut out, gpu);
        out.errors.extend(space.errors);
        out.warnings.extend(space.warnings);
        for h in space.hostnames {
            if hostnames.insert(h.clone()) {
                out.hostnames.push(h);
            }
        }
    }
    // Modules live in event metadata no line refers to, which a plane merge would drop.
    ops::unify_metadata_planes(&mut out);
    // Several ROCTX planes (one per input) become one before the merge.
    merge_planes_with_same_names(&mut out);
    merge_host_planes(&mut out);
    out
}

/// Moves `space`'s line timestamps from time base `from` onto `to` (both as [`time_base`] gives
/// them); nothing moves unless both are known. The `Task Environment` plane keeps its stats,
/// which are wall-clock times, not offsets from a base.
fn rebase(space: &mut XSpace, from: Option<i64>, to: Option<i64>) {
    let (Some(from), Some(to)) = (from, to) else { return };
    for line in space.planes.iter_mut().filter(|p| p.name != TASK_ENV_PLANE).flat_map(|p| p.lines.iter_mut()) {
        line.timestamp_ns = line.timestamp_ns.saturating_add(from.saturating_sub(to));
    }
}

/// The session starts of a job's files, each kept only if it can be one: 0 (absolute
/// wall-clock lines), or positive and within a week of the (lower) median of the positive ones,
/// since a job's processes start together. A damaged start (`-1`, years away) would otherwise
/// move every other process with it.
pub fn plausible_bases(bases: &[Option<i64>]) -> Vec<Option<i64>> {
    let mut known: Vec<i64> = bases.iter().flatten().copied().filter(|&b| b > 0).collect();
    known.sort_unstable();
    let median = known.get(known.len().saturating_sub(1) / 2).copied();
    bases.iter().map(|b| b.filter(|&b| plausible_base(b, median))).collect()
}

/// Whether `base` can be a session start next to `reference` (see [`plausible_bases`]).
pub fn plausible_base(base: i64, reference: Option<i64>) -> bool {
    const WEEK_NS: u64 = 7 * 24 * 3600 * 1_000_000_000;
    base == 0 || (base > 0 && reference.map_or(true, |r| r <= 0 || base.abs_diff(r) <= WEEK_NS))
}

/// The warning for a file whose session start [`plausible_bases`] left out.
pub fn implausible_base_warning(base: i64) -> String {
    format!("session start {base} ns is negative or a week away from the other files' (a damaged file?): its times were left as they are, and no other file was moved onto it")
}

/// Folds the XSpaces of several processes of one job (the files of a run, one per process;
/// `stem` is the file's name without `.xplane.pb`, what XProf calls its host) into one space
/// that keeps them apart. [`merge_spaces`] is for two captures of the *same* process: it
/// merges threads by id and GPUs by number, which for two processes would put rank 1's thread
/// 4242 into rank 0's row and draw their GPU 0s as one.
///
/// - Every plane keeps its name with ` <stem>` appended (`/host:CPU h_rank3`,
///   `/device:GPU:0 h_rank3`): XProf draws every `/host:CPU*` plane as its own host process and
///   every `/device:GPU:*` plane as a GPU process, so each process stays visible and apart.
/// - Plane ids become 1..n in order: XProf's GPU pid is `1 + id`, and processes' own ids
///   (every GPU 0 is plane 1) would give two GPU planes one pid.
/// - Line timestamps move onto the earliest session start, as [`merge_spaces`] moves them from
///   each space's [`time_base`]; its `Task Environment` plane is the one kept (last). The
///   earliest, not the first, so that no line timestamp becomes negative (a rank that started
///   before the first file's would): XLA never writes one, and XProf is not known to draw them.
/// - Flow ids (the [`FLOW_PRODUCER_STAT`] and [`FLOW_CONSUMER_STAT`] stats) an earlier process
///   uses are renumbered: every process numbers its flows the same way, and a kernel must stay
///   tied to its own process's range.
/// - Stems are made distinct (`h`, `h-2`, ...; an empty one is `process`), and any plane name
///   still taken gets ` (2)`, ` (3)`, ...: the result never has two planes of one name.
/// - Hostnames are the union; warnings and errors are kept, each behind `<stem>: `.
///
/// Moves the planes instead of copying them: memory is the inputs'.
pub fn fold_processes(spaces: Vec<(String, XSpace)>) -> XSpace {
    let stems = distinct_stems(spaces.iter().map(|(stem, _)| stem.as_str()));
    let raw: Vec<Option<i64>> = spaces.iter().map(|(_, space)| time_base(space)).collect();
    let bases = plausible_bases(&raw);
    // Absolute wall-clock lines (base 0) are the target only when no space knows its start:
    // epoch times overflow XProf's ps arithmetic.
    let target = bases.iter().flatten().copied().filter(|&b| b != 0).min().or_else(|| bases.iter().flatten().next().copied());
    let has_env = |space: &XSpace| space.planes.iter().any(|p| p.name == TASK_ENV_PLANE);
    let env_from = spaces.iter().zip(&bases).position(|((_, space), &base)| base == target && has_env(space));
    let env_from = env_from.or_else(|| spaces.iter().position(|(_, space)| has_env(space)));
    let mut flows = FlowIds::new(spaces.iter().map(|(_, space)| space));
    let mut out = XSpace::default();
    let mut hostnames = HashSet::new();
    // The kept Task Environment plane goes last, after the processes, under its own name.
    let mut env = None;
    let mut names: HashSet<String> = env_from.map(|_| TASK_ENV_PLANE.to_owned()).into_iter().collect();
    let mut suffixes = HashMap::new();
    for (k, ((_, mut space), stem)) in spaces.into_iter().zip(stems).enumerate() {
        rebase(&mut space, bases[k], target);
        flows.renumber(&mut space);
        for mut plane in space.planes {
            if plane.name == TASK_ENV_PLANE {
                if env_from == Some(k) && env.is_none() {
                    env = Some(plane);
                }
                continue;
            }
            if plane.name == ops::METADATA_PLANE {
                // XProf reads modules from this plane only, by its exact name.
                out.planes.push(plane);
                continue;
            }
            plane.name = format!("{} {stem}", plane.name);
            if names.contains(&plane.name) {
                plane.name = next_free(&plane.name, &mut suffixes, |c| !names.contains(c), |base, n| format!("{base} ({n})"));
            }
            names.insert(plane.name.clone());
            out.planes.push(plane);
        }
        if let (Some(start), None) = (raw[k], bases[k]) {
            out.warnings.push(format!("{stem}: {}", implausible_base_warning(start)));
        }
        out.warnings.extend(space.warnings.into_iter().map(|w| format!("{stem}: {w}")));
        out.errors.extend(space.errors.into_iter().map(|e| format!("{stem}: {e}")));
        for h in space.hostnames {
            if hostnames.insert(h.clone()) {
                out.hostnames.push(h);
            }
        }
    }
    out.planes.extend(env);
    ops::unify_metadata_planes(&mut out);
    for (id, plane) in (1i64..).zip(&mut out.planes) {
        plane.id = id;
    }
    out
}

/// `stems`, with an empty one named `process` and each repeat given the first free `-2`,
/// `-3`, ... suffix that no other stem has.
fn distinct_stems<'a>(stems: impl Iterator<Item = &'a str>) -> Vec<String> {
    let stems: Vec<&str> = stems.map(|s| if s.is_empty() { "process" } else { s }).collect();
    let given: HashSet<&str> = stems.iter().copied().collect();
    let mut used: HashSet<String> = HashSet::new();
    let mut suffixes = HashMap::new();
    let mut out = Vec::with_capacity(stems.len());
    for stem in stems {
        let name = if used.contains(stem) {
            next_free(stem, &mut suffixes, |c| !given.contains(c) && !used.contains(c), |base, n| format!("{base}-{n}"))
        } else {
            stem.to_owned()
        };
        used.insert(name.clone());
        out.push(name);
    }
    out
}

/// The first `make(base, n)`, n = 2, 3, ..., that `free` accepts. `next` remembers per base
/// where the last search stopped, so n repeats of one name cost O(n) in all, not O(n²) (32,000
/// planes of one name took 70 s).
fn next_free(base: &str, next: &mut HashMap<String, u64>, free: impl Fn(&str) -> bool, make: impl Fn(&str, u64) -> String) -> String {
    let start = next.get(base).copied().unwrap_or(2);
    let (n, name) = (start..).map(|n| (n, make(base, n))).find(|(_, c)| free(c)).unwrap_or((start, make(base, start)));
    next.insert(base.to_owned(), n.saturating_add(1));
    name
}

/// Flow ids kept apart between the processes of [`fold_processes`]: a process's ids that an
/// earlier process used move to ids no process uses (the same id to the same new one, so its
/// producer and consumers still pair); the others stay.
struct FlowIds {
    /// Every flow id of every process, and every id given out since.
    all: HashSet<u64>,
    /// The ids of the processes renumbered so far.
    claimed: HashSet<u64>,
    /// The next id to try: one past the largest in use, then (past u64::MAX) the lowest free.
    next: Option<u64>,
    low: Option<u64>,
}

impl FlowIds {
    fn new<'a>(spaces: impl Iterator<Item = &'a XSpace>) -> FlowIds {
        let mut all = HashSet::new();
        for space in spaces {
            for plane in &space.planes {
                let flow = flow_stat_ids(plane);
                if flow.is_empty() {
                    continue;
                }
                let stats = plane.lines.iter().flat_map(|l| &l.events).flat_map(|e| &e.stats);
                all.extend(stats.filter(|s| flow.contains(&s.metadata_id)).filter_map(flow_value));
            }
        }
        let next = all.iter().max().map_or(Some(1), |max| max.checked_add(1));
        FlowIds { all, claimed: HashSet::new(), next, low: Some(1) }
    }

    /// Renumbers `space`'s flow ids that an earlier space claimed, then claims its own.
    fn renumber(&mut self, space: &mut XSpace) {
        let mut moved: HashMap<u64, u64> = HashMap::new();
        let mut mine = HashSet::new();
        for plane in &mut space.planes {
            let flow = flow_stat_ids(plane);
            if flow.is_empty() {
                continue;
            }
            let stats = plane.lines.iter_mut().flat_map(|l| &mut l.events).flat_map(|e| &mut e.stats);
            for stat in stats.filter(|s| flow.contains(&s.metadata_id)) {
                let Some(id) = flow_value(stat) else { continue };
                let new = match moved.get(&id) {
                    Some(&new) => new,
                    None if !self.claimed.contains(&id) => id,
                    None => {
                        // Unreachable in practice (2^64 flow ids); the id then stays as it is.
                        let new = self.fresh().unwrap_or(id);
                        moved.insert(id, new);
                        new
                    }
                };
                mine.insert(new);
                stat.value = match stat.value {
                    // CAST: an int64 id read as u64 by flow_value goes back unchanged.
                    Some(x_stat::Value::Int64Value(_)) => Some(x_stat::Value::Int64Value(new as i64)),
                    _ => Some(x_stat::Value::Uint64Value(new)),
                };
            }
        }
        self.claimed.extend(mine);
    }

    /// An id no process uses, now taken.
    fn fresh(&mut self) -> Option<u64> {
        for cursor in [&mut self.next, &mut self.low] {
            // Each cursor only moves up, so all renumbering is linear in the ids.
            while let Some(id) = *cursor {
                *cursor = id.checked_add(1);
                if self.all.insert(id) {
                    return Some(id);
                }
            }
        }
        None
    }
}

/// The stat metadata ids of `plane`'s flow producer and consumer stats.
fn flow_stat_ids(plane: &XPlane) -> Vec<i64> {
    plane.stat_metadata.iter().filter(|(_, m)| m.name == FLOW_PRODUCER_STAT || m.name == FLOW_CONSUMER_STAT).map(|(&id, _)| id).collect()
}

/// A flow stat's id: XLA and we write it as a uint64, some producers as an int64.
fn flow_value(stat: &XStat) -> Option<u64> {
    match stat.value {
        Some(x_stat::Value::Uint64Value(v)) => Some(v),
        // CAST: the bits are the id; renumber writes them back as they were.
        Some(x_stat::Value::Int64Value(v)) => Some(v as u64),
        _ => None,
    }
}

/// XLA's `MergeHostPlanesAndSortLines` (with the ROCm/xla ROCTX step), then [`assign_rows`]:
///
/// 1. the host planes ([`HOST_PLANES`]) merge into a new `/host:CPU`, their line ids "occupied";
/// 2. `/host:NVTX-CUPTI` lines that collide move to ids from `1<<32`, then merge;
/// 3. `/host:ROCTX` lines that collide move to ids from `2<<32`, then merge;
/// 4. planes with the same name merge into the first;
/// 5. host lines sort by display name, else name (bytewise).
///
/// Does nothing if there is no host or marker plane. A marker line left on a colliding id
/// because no id was free (see [`change_occupied_line_ids`]) is counted in `space.warnings`.
pub fn merge_host_planes(space: &mut XSpace) {
    let is_host = |p: &XPlane| HOST_PLANES.contains(&p.name.as_str());
    let has_marker = space.planes.iter().any(|p| p.name == NVTX_PLANE || p.name == ROCTX_PLANE);
    if !space.planes.iter().any(is_host) && !has_marker {
        return;
    }
    let mut occupied: HashSet<i64> = space.planes.iter().filter(|p| is_host(p)).flat_map(|p| p.lines.iter().map(|l| l.id)).collect();
    let mut host = XPlane { name: HOST_PLANE.to_owned(), ..XPlane::default() };
    let mut merge = Merge::new(&mut host);
    // Host planes merge in HOST_PLANES order, as XLA collects them.
    for name in HOST_PLANES {
        for p in space.planes.iter().filter(|p| p.name == name) {
            merge.absorb(p, &mut host);
        }
    }
    space.planes.retain(|p| !is_host(p));
    let mut stuck = 0;
    for (name, start) in [(NVTX_PLANE, NVTX_LINE_ID_START), (ROCTX_PLANE, ROCTX_LINE_ID_START)] {
        // Every plane of that name (a host may already hold one next to ours): each is remapped
        // against what is occupied so far, then merged. Taken out in one pass, not one
        // `Vec::remove` each.
        let (markers, rest): (Vec<XPlane>, Vec<XPlane>) = std::mem::take(&mut space.planes).into_iter().partition(|p| p.name == name);
        space.planes = rest;
        for mut marker in markers {
            stuck += change_occupied_line_ids(&mut marker, &mut occupied, start);
            merge.absorb(&marker, &mut host);
        }
    }
    merge.finish(&mut host);
    space.planes.push(host);
    merge_planes_with_same_names(space);
    if let Some(host) = space.planes.iter_mut().find(|p| p.name == HOST_PLANE) {
        host.lines.sort_by(|a, b| sort_key(a).cmp(sort_key(b)));
        assign_rows(host);
    }
    if stuck > 0 {
        space.warnings.push(format!("roctx: {stuck} marker lines kept an id another line has: no free line id was left"));
    }
}

fn sort_key(line: &XLine) -> &[u8] {
    if line.display_name.is_empty() { line.name.as_bytes() } else { line.display_name.as_bytes() }
}

/// XLA's `ChangeOccupiedLineIds`: a line whose id is occupied moves to the next free id from
/// `start`; others keep theirs; every final id becomes occupied. Returns how many lines kept an
/// occupied id because the ids from `start` up to i64::MAX were all taken (only possible with a
/// `start` near i64::MAX): such a line stays on its id instead of wrapping to a negative one.
pub fn change_occupied_line_ids(plane: &mut XPlane, occupied: &mut HashSet<i64>, start: i64) -> usize {
    // `None` once the candidates ran past i64::MAX.
    let mut candidate = Some(start);
    let mut stuck = 0;
    for line in &mut plane.lines {
        if occupied.contains(&line.id) {
            // The candidate only moves up, so the whole remap is linear in lines.
            while let Some(c) = candidate.filter(|c| occupied.contains(c)) {
                candidate = c.checked_add(1);
            }
            match candidate {
                Some(c) => {
                    line.id = c;
                    candidate = c.checked_add(1);
                }
                None => stuck += 1,
            }
        }
        occupied.insert(line.id);
    }
    stuck
}

/// XLA's `MergePlanesWithSameNames`: the first plane of each name absorbs the later ones, in
/// order. One pass with an index by name, so many planes cost O(n), not O(n²).
pub fn merge_planes_with_same_names(space: &mut XSpace) {
    let mut first: HashMap<String, usize> = HashMap::new();
    let mut kept: Vec<XPlane> = Vec::new();
    let mut merges: Vec<Option<Merge>> = Vec::new();
    for plane in std::mem::take(&mut space.planes) {
        match first.get(&plane.name) {
            Some(&i) => {
                let dst = &mut kept[i];
                merges[i].get_or_insert_with(|| Merge::new(dst)).absorb(&plane, dst);
            }
            None => {
                first.insert(plane.name.clone(), kept.len());
                kept.push(plane);
                merges.push(None);
            }
        }
    }
    for (dst, merge) in kept.iter_mut().zip(merges) {
        if let Some(merge) = merge {
            merge.finish(dst);
        }
    }
    space.planes = kept;
}

/// XLA's `MergePlanes(src, dst)`: empty dst lines go first; plane stats merge by name; each src
/// line merges into the dst line with the same id (the earlier timestamp wins, offsets are
/// shifted); event and stat metadata are re-resolved by name in dst. O(src + dst) (plus the
/// sort of the lines it adds events to), whatever the ids.
pub fn merge_planes(src: &XPlane, dst: &mut XPlane) {
    let mut merge = Merge::new(dst);
    merge.absorb(src, dst);
    merge.finish(dst);
}

/// [`merge_planes`] of several sources into one destination, one after the other, with the
/// indexes kept between them: dst lines by id, metadata by name, plane stats by metadata id.
/// Without them each src line looked its dst line up in a linear scan (100 k lines: 28 s) and
/// each metadata index was rebuilt per source.
///
/// Same result as a `merge_planes` call per source: XLA drops empty dst lines at the start of
/// each call, so lines a source adds empty are dropped when the next one is absorbed (marked
/// here, removed by [`Merge::finish`]); events are sorted once per touched line at the end,
/// which a stable sort makes equal to sorting after each source.
struct Merge {
    /// Line id -> index in `dst.lines` of the live line with that id that a src line merges into.
    lines: HashMap<i64, usize>,
    /// Lines a source added empty; they die when the next source is absorbed, if still empty.
    added_empty: Vec<usize>,
    /// Lines to drop at the end.
    dead: Vec<bool>,
    /// Lines that got events, to sort at the end.
    touched: Vec<bool>,
    /// Plane stat metadata id -> index in `dst.stats`.
    stats: HashMap<i64, usize>,
    /// Metadata names and ids in dst.
    keys: MetadataKeys,
}

impl Merge {
    /// Drops dst's empty lines (XLA's `RemoveEmptyLines`) and indexes what is left.
    fn new(dst: &mut XPlane) -> Merge {
        dst.lines.retain(|l| !l.events.is_empty());
        let mut lines = HashMap::with_capacity(dst.lines.len());
        for (i, line) in dst.lines.iter().enumerate() {
            // The first line of an id, as XLA's lookup finds it.
            lines.entry(line.id).or_insert(i);
        }
        let mut stats = HashMap::new();
        for (i, stat) in dst.stats.iter().enumerate() {
            stats.entry(stat.metadata_id).or_insert(i);
        }
        let n = dst.lines.len();
        Merge { lines, added_empty: Vec::new(), dead: vec![false; n], touched: vec![false; n], stats, keys: MetadataKeys::new(dst) }
    }

    /// Merges `src` into `dst` (the plane given to [`Merge::new`]).
    fn absorb(&mut self, src: &XPlane, dst: &mut XPlane) {
        for i in std::mem::take(&mut self.added_empty) {
            if dst.lines[i].events.is_empty() {
                self.dead[i] = true;
                self.lines.remove(&dst.lines[i].id);
            }
        }
        self.keys.start_source();
        let stats: Vec<XStat> = src.stats.iter().map(|s| self.keys.stat(src, s, dst)).collect();
        for stat in stats {
            match self.stats.get(&stat.metadata_id) {
                Some(&i) => dst.stats[i] = stat,
                None => {
                    self.stats.insert(stat.metadata_id, dst.stats.len());
                    dst.stats.push(stat);
                }
            }
        }
        for line in &src.lines {
            let events: Vec<XEvent> = line
                .events
                .iter()
                .map(|e| XEvent {
                    metadata_id: self.keys.event(src, e.metadata_id, dst),
                    data: e.data,
                    duration_ps: e.duration_ps,
                    stats: e.stats.iter().map(|s| self.keys.stat(src, s, dst)).collect(),
                })
                .collect();
            let pos = match self.lines.get(&line.id) {
                Some(&pos) => pos,
                None => {
                    dst.lines.push(XLine { id: line.id, display_id: line.display_id, ..XLine::default() });
                    self.dead.push(false);
                    self.touched.push(false);
                    let pos = dst.lines.len() - 1;
                    self.lines.insert(line.id, pos);
                    pos
                }
            };
            let d = &mut dst.lines[pos];
            if d.events.is_empty() {
                d.timestamp_ns = line.timestamp_ns;
                d.name = line.name.clone();
                if d.display_name.is_empty() {
                    d.display_name = line.display_name.clone();
                }
                d.duration_ps = line.duration_ps;
                d.events = events;
                if d.events.is_empty() {
                    self.added_empty.push(pos);
                }
            } else {
                let mut shift_src = 0;
                if line.timestamp_ns < d.timestamp_ns {
                    let delta = d.timestamp_ns.saturating_sub(line.timestamp_ns).saturating_mul(1000);
                    for e in &mut d.events {
                        shift(e, delta);
                    }
                    d.timestamp_ns = line.timestamp_ns;
                } else {
                    shift_src = line.timestamp_ns.saturating_sub(d.timestamp_ns).saturating_mul(1000);
                }
                for mut e in events {
                    shift(&mut e, shift_src);
                    d.events.push(e);
                }
                d.duration_ps = d.duration_ps.max(line.duration_ps.saturating_add(shift_src));
            }
            self.touched[pos] = true;
        }
    }

    /// Sorts the events of every line that got some, and drops the lines that died.
    fn finish(self, dst: &mut XPlane) {
        for (line, _) in dst.lines.iter_mut().zip(&self.touched).filter(|(_, &t)| t) {
            line.events.sort_by_key(|e| (e.offset_ps(), std::cmp::Reverse(e.duration_ps)));
        }
        if self.dead.iter().any(|&d| d) {
            let mut dead = self.dead.into_iter();
            dst.lines.retain(|_| !dead.next().unwrap_or(false));
        }
    }
}

fn shift(e: &mut XEvent, delta_ps: i64) {
    if let Some(x_event::Data::OffsetPs(o)) = &mut e.data {
        *o = o.saturating_add(delta_ps);
    }
}

/// The next metadata id to give out in a plane: one past the largest there, and once that
/// would pass i64::MAX (a damaged or hostile file holds an id there), the smallest free
/// positive ones, instead of overflowing into negative ids.
struct IdSpace {
    next: Option<i64>,
    low: Option<i64>,
}

impl IdSpace {
    fn new(max: Option<i64>) -> IdSpace {
        IdSpace { next: max.unwrap_or(0).checked_add(1), low: Some(1) }
    }

    /// A free id (`taken` says which are used), or `None` when every positive id is used, which
    /// takes 2^63 metadata entries and so never happens in memory.
    fn take(&mut self, taken: impl Fn(i64) -> bool) -> Option<i64> {
        if let Some(id) = self.next {
            self.next = id.checked_add(1);
            return Some(id);
        }
        // 0 is proto3's "unset", so the search starts at 1; it only moves up, so the whole
        // search is linear in the ids in use.
        while let Some(id) = self.low {
            self.low = id.checked_add(1);
            if !taken(id) {
                return Some(id);
            }
        }
        None
    }
}

/// Maps src metadata ids to dst ones by name, adding what dst lacks.
struct MetadataKeys {
    events: HashMap<String, i64>,
    stats: HashMap<String, i64>,
    // src id -> dst id for the current source, so each distinct metadata is resolved by name
    // once, not per event.
    event_ids: HashMap<i64, i64>,
    stat_ids: HashMap<i64, i64>,
    next_event: IdSpace,
    next_stat: IdSpace,
}

impl MetadataKeys {
    fn new(dst: &XPlane) -> MetadataKeys {
        // A name held by several ids maps to the smallest, so the result does not depend on
        // the map's iteration order.
        let mut events: HashMap<String, i64> = HashMap::new();
        for m in dst.event_metadata.values() {
            events.entry(m.name.clone()).and_modify(|id| *id = (*id).min(m.id)).or_insert(m.id);
        }
        let mut stats: HashMap<String, i64> = HashMap::new();
        for m in dst.stat_metadata.values() {
            stats.entry(m.name.clone()).and_modify(|id| *id = (*id).min(m.id)).or_insert(m.id);
        }
        MetadataKeys {
            events,
            stats,
            event_ids: HashMap::new(),
            stat_ids: HashMap::new(),
            next_event: IdSpace::new(dst.event_metadata.keys().copied().max()),
            next_stat: IdSpace::new(dst.stat_metadata.keys().copied().max()),
        }
    }

    /// Forgets the previous source's ids.
    fn start_source(&mut self) {
        self.event_ids.clear();
        self.stat_ids.clear();
    }

    fn event(&mut self, src: &XPlane, id: i64, dst: &mut XPlane) -> i64 {
        if let Some(&mapped) = self.event_ids.get(&id) {
            return mapped;
        }
        let mapped = self.resolve_event(src, id, dst);
        self.event_ids.insert(id, mapped);
        mapped
    }

    fn resolve_event(&mut self, src: &XPlane, id: i64, dst: &mut XPlane) -> i64 {
        let Some(meta) = src.event_metadata.get(&id) else { return id };
        if let Some(&found) = self.events.get(&meta.name) {
            return found;
        }
        // Unreachable in practice (see IdSpace::take); the id is then kept as it is.
        let Some(new_id) = self.next_event.take(|i| dst.event_metadata.contains_key(&i)) else { return id };
        let mut copy = meta.clone();
        copy.id = new_id;
        copy.stats = meta.stats.iter().map(|s| self.stat(src, s, dst)).collect();
        dst.event_metadata.insert(new_id, copy);
        self.events.insert(meta.name.clone(), new_id);
        new_id
    }

    fn stat_id(&mut self, src: &XPlane, id: i64, dst: &mut XPlane) -> i64 {
        if let Some(&mapped) = self.stat_ids.get(&id) {
            return mapped;
        }
        let mapped = self.resolve_stat(src, id, dst);
        self.stat_ids.insert(id, mapped);
        mapped
    }

    fn resolve_stat(&mut self, src: &XPlane, id: i64, dst: &mut XPlane) -> i64 {
        let Some(meta) = src.stat_metadata.get(&id) else { return id };
        if let Some(&found) = self.stats.get(&meta.name) {
            return found;
        }
        // Unreachable in practice (see IdSpace::take); the id is then kept as it is.
        let Some(new_id) = self.next_stat.take(|i| dst.stat_metadata.contains_key(&i)) else { return id };
        dst.stat_metadata.insert(new_id, XStatMetadata { id: new_id, ..meta.clone() });
        self.stats.insert(meta.name.clone(), new_id);
        new_id
    }

    fn stat(&mut self, src: &XPlane, stat: &XStat, dst: &mut XPlane) -> XStat {
        let value = match &stat.value {
            // A ref names a stat metadata: re-key it too.
            // CAST: u64 -> i64 -> u64 round-trips every value; a ref past i64::MAX names no
            // metadata and comes back unchanged.
            Some(x_stat::Value::RefValue(r)) => Some(x_stat::Value::RefValue(self.stat_id(src, *r as i64, dst) as u64)),
            other => other.clone(),
        };
        XStat { metadata_id: self.stat_id(src, stat.metadata_id, dst), value }
    }
}

/// Our guarantee on top of XLA's merge: XProf keys rows by `uint32(display_id or id)` and
/// merges lines that share a key (a ROCTX line at `(2<<32)+tid` lands in thread `tid`'s row),
/// and orders rows by that key. So we order the host plane's lines with each
/// `Host Threads/<tid>/ROCTX` line directly after its thread's line, and number rows 1..n in
/// that order through `display_id` (line `id`s, which other tools read, are left as merged).
/// A thread's line is the last line (other than a ROCTX line) whose id is the tid, or whose
/// name is `Host Threads/<tid>` or ends in `/<tid>`; a thread's ROCTX lines keep their order.
/// ROCTX lines without a thread line go between the thread groups by name, as they would sort
/// (the lines are expected sorted by name, as [`merge_host_planes`] leaves them), never between
/// a thread and its ROCTX lines.
///
/// O(n log n): each ROCTX line finds its thread through indexes by id and by name suffix.
pub fn assign_rows(plane: &mut XPlane) {
    let lines = std::mem::take(&mut plane.lines);
    let (roctx, threads): (Vec<XLine>, Vec<XLine>) = lines.into_iter().partition(|l| roctx_line_tid(&l.name).is_some());
    // The last thread line by id, and by the number after the name's last '/'.
    let mut by_id: HashMap<i64, usize> = HashMap::new();
    let mut by_suffix: HashMap<u64, usize> = HashMap::new();
    for (i, line) in threads.iter().enumerate() {
        by_id.insert(line.id, i);
        if let Some(tid) = name_tid(&line.name) {
            by_suffix.insert(tid, i);
        }
    }
    let mut under: Vec<Vec<XLine>> = (0..threads.len()).map(|_| Vec::new()).collect();
    let mut unplaced = Vec::new();
    for line in roctx {
        let tid = roctx_line_tid(&line.name).unwrap_or_default();
        // CAST: the id XLA's ROCm tracer gives a thread's line is its tid; the wrap of a tid past
        // i64::MAX (a damaged name) matches what such a line's id would be.
        let thread = by_id.get(&(tid as i64)).copied().max(by_suffix.get(&tid).copied());
        match thread {
            Some(i) => under[i].push(line),
            None => unplaced.push(line),
        }
    }
    unplaced.sort_by(|a, b| sort_key(a).cmp(sort_key(b)));
    let mut unplaced = unplaced.into_iter().peekable();
    let mut ordered = Vec::with_capacity(threads.len() + under.iter().map(Vec::len).sum::<usize>() + unplaced.len());
    for (thread, roctx) in threads.into_iter().zip(under) {
        while let Some(line) = unplaced.next_if(|l| sort_key(l) < sort_key(&thread)) {
            ordered.push(line);
        }
        ordered.push(thread);
        ordered.extend(roctx);
    }
    ordered.extend(unplaced);
    for (row, line) in ordered.iter_mut().enumerate() {
        line.display_id = row as i64 + 1;
    }
    plane.lines = ordered;
}

/// The tid a thread line's name ends in: the decimal number after its last `/`, as
/// `format!("/{tid}")` writes it (no sign, no leading zero).
fn name_tid(name: &str) -> Option<u64> {
    let (_, digits) = name.rsplit_once('/')?;
    let canonical = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && (digits == "0" || !digits.starts_with('0'));
    canonical.then(|| digits.parse().ok()).flatten()
}

/// XProf's row key for a line: the low 32 bits of `display_id`, or of `id` when that is 0.
pub fn row_key(line: &XLine) -> u32 {
    let id = if line.display_id != 0 { line.display_id } else { line.id };
    id as u32 // CAST: truncation is exactly what XProf does
}

/// One problem found by [`validate`]: one kind of problem in one plane, however often it occurs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    /// `true` for what makes XProf show wrong data; `false` for structural warnings.
    pub error: bool,
    /// What and where; when it occurs more than once, how often and where it occurs first.
    pub message: String,
    /// How many times it occurs (events, stats, lines or planes, as the message says).
    pub count: usize,
}

/// What [`validate`] checks on lines and events, each summarized once per plane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Problem {
    DuplicateLineId,
    RowCollision,
    MissingEventMetadata,
    NegativeDuration,
    MissingStatMetadata,
    DanglingRef,
}

/// One [`Problem`] in one plane: its count, on how many lines, and the words for its first
/// occurrence (made once, so a problem on every event costs a counter, not a string each).
#[derive(Debug)]
struct Tally {
    problem: Problem,
    count: usize,
    lines: usize,
    last_line: usize,
    first_line: String,
    /// The message when it occurs once.
    single: String,
    /// The first occurrence, for the message when it occurs more than once.
    first: String,
}

/// The [`Tally`]s of one plane, in order of first occurrence.
#[derive(Debug, Default)]
struct Tallies(Vec<Tally>);

impl Tallies {
    /// Counts one occurrence of `problem` on line number `line`; `words` (the single message
    /// and the first-occurrence detail) is only called for the first.
    fn add(&mut self, problem: Problem, line: usize, line_name: &str, words: impl FnOnce() -> (String, String)) {
        if let Some(t) = self.0.iter_mut().find(|t| t.problem == problem) {
            t.count += 1;
            if t.last_line != line {
                t.lines += 1;
                t.last_line = line;
            }
            return;
        }
        let (single, first) = words();
        self.0.push(Tally { problem, count: 1, lines: 1, last_line: line, first_line: line_name.to_owned(), single, first });
    }

    fn into_issues(self, plane: &str, issues: &mut Vec<Issue>) {
        for t in self.0 {
            let message = if t.count == 1 { t.single } else { summary(plane, &t) };
            issues.push(Issue { error: true, message, count: t.count });
        }
    }
}

/// "<plane>: 4,999,999 events on line "X" reference event metadata that does not exist
/// (first: ...)".
fn summary(plane: &str, t: &Tally) -> String {
    let n = thousands(t.count);
    let on = if t.lines == 1 { format!("on line {:?}", t.first_line) } else { format!("on {} lines", thousands(t.lines)) };
    let what = match t.problem {
        Problem::DuplicateLineId => format!("{n} lines reuse the id of an earlier line"),
        Problem::RowCollision => format!("{n} lines share an XProf row with an earlier line and would be drawn as one"),
        Problem::MissingEventMetadata => format!("{n} events {on} reference event metadata that does not exist"),
        Problem::NegativeDuration => format!("{n} events {on} have a negative duration"),
        Problem::MissingStatMetadata => format!("{n} stats {on} reference stat metadata that does not exist"),
        Problem::DanglingRef => format!("{n} ref_value stats {on} name stat metadata that does not exist"),
    };
    format!("{plane}: {what} (first: {})", t.first)
}

/// `n` with thousands separators: 4,999,999.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Checks the invariants of xspace_and_xprof.md section 12 that matter for our output. Each
/// kind of line or event problem is reported once per plane, with its count and its first
/// occurrence, so the report grows with the planes and kinds of problems, not with the events.
pub fn validate(space: &XSpace) -> Vec<Issue> {
    let mut issues = Vec::new();
    let mut names = HashSet::new();
    for plane in &space.planes {
        if !names.insert(plane.name.as_str()) {
            issues.push(Issue { error: true, message: format!("duplicate plane name {:?}", plane.name), count: 1 });
        }
        let rendered = plane.name.starts_with(HOST_PLANE) || plane.name.starts_with("/device:GPU:") || plane.name.starts_with("/device:CUSTOM:");
        if !rendered && !plane.lines.iter().all(|l| l.events.is_empty()) {
            issues.push(Issue { error: false, message: format!("plane {:?} has events but XProf does not render it", plane.name), count: 1 });
        }
        let p = &plane.name;
        let mut tallies = Tallies::default();
        let mut ids = HashSet::new();
        let mut rows: HashMap<u32, &str> = HashMap::new();
        for (n, line) in plane.lines.iter().enumerate() {
            let l = &line.name;
            if !ids.insert(line.id) {
                tallies.add(Problem::DuplicateLineId, n, l, || (format!("{p}: duplicate line id {}", line.id), format!("line {l:?} has id {}", line.id)));
            }
            if line.events.is_empty() {
                continue;
            }
            if let Some(other) = rows.insert(row_key(line), l) {
                let row = row_key(line);
                tallies.add(Problem::RowCollision, n, l, || {
                    let pair = format!("lines {other:?} and {l:?} share XProf row {row}");
                    (format!("{p}: {pair} and would be drawn as one"), pair)
                });
            }
            for e in &line.events {
                let at = || format!("on line {l:?} at offset {} ps", e.offset_ps());
                if !plane.event_metadata.contains_key(&e.metadata_id) {
                    let id = e.metadata_id;
                    tallies.add(Problem::MissingEventMetadata, n, l, || (format!("{p}/{l}: event with missing metadata {id}"), format!("missing metadata {id} {}", at())));
                }
                if e.duration_ps < 0 {
                    let d = e.duration_ps;
                    tallies.add(Problem::NegativeDuration, n, l, || (format!("{p}/{l}: negative duration"), format!("duration {d} ps {}", at())));
                }
                for s in &e.stats {
                    if !plane.stat_metadata.contains_key(&s.metadata_id) {
                        let id = s.metadata_id;
                        tallies.add(Problem::MissingStatMetadata, n, l, || (format!("{p}/{l}: stat with missing metadata {id}"), format!("missing metadata {id} {}", at())));
                    }
                    if let Some(x_stat::Value::RefValue(r)) = &s.value {
                        if !i64::try_from(*r).is_ok_and(|r| plane.stat_metadata.contains_key(&r)) {
                            tallies.add(Problem::DanglingRef, n, l, || (format!("{p}/{l}: dangling ref_value {r}"), format!("dangling ref_value {r} {}", at())));
                        }
                    }
                }
            }
        }
        tallies.into_issues(p, &mut issues);
    }
    issues
}

/// Nesting depth of a line's events by time containment (1 = flat), as the viewer draws them.
pub fn nesting_depth(line: &XLine) -> usize {
    let mut events: Vec<(i64, i64)> = line.events.iter().map(|e| (e.offset_ps(), e.offset_ps().saturating_add(e.duration_ps.max(0)))).collect();
    events.sort_by_key(|&(s, e)| (s, std::cmp::Reverse(e)));
    let mut stack: Vec<i64> = Vec::new();
    let mut depth = 0;
    for (start, end) in events {
        // Pop what ended before this starts, and (partial overlaps) what ends before this does.
        while stack.last().is_some_and(|&top_end| top_end <= start || end > top_end) {
            stack.pop();
        }
        stack.push(end);
        depth = depth.max(stack.len());
    }
    depth
}

mod encode;
mod ops;
pub use ops::{add_module, is_op_line, op_line_name, unify_metadata_planes, METADATA_PLANE, OP_LINE_BASE};

#[cfg(test)]
mod tests;
