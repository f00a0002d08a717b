//! XSpace out: the `/host:ROCTX` plane, XLA's host-plane merge, and XProf-safe row numbering.
//!
//! Owns the XSpace conventions (xspace_and_xprof.md 2-5): plane and line names, `nvtx_range`
//! stats as `ref_value`s to a stat metadata named by the label, offsets in ps from the line's
//! timestamp, events ordered by offset then longest first. Never touches the capture side.

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
/// Stat of [`TASK_ENV_PLANE`]: session start, wall-clock ns.
pub const PROFILE_START_TIME: &str = "profile_start_time";
/// Stat of [`TASK_ENV_PLANE`]: session stop, wall-clock ns.
pub const PROFILE_STOP_TIME: &str = "profile_stop_time";
/// Line timestamps above this are absolute wall-clock ns (after 1973), not session-relative.
const ABSOLUTE_NS: i64 = 100_000_000_000_000_000;

/// Wall-clock ns of `trace`'s session start.
fn wall_start(trace: &Trace) -> i64 {
    (trace.start_ns as i64).saturating_add(trace.realtime_offset_ns)
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
    let mut plane = XPlane { id: 0, name: ROCTX_PLANE.to_owned(), ..XPlane::default() };
    let nvtx_stat_id = 1i64;
    plane.stat_metadata.insert(nvtx_stat_id, XStatMetadata { id: nvtx_stat_id, name: NVTX_RANGE_STAT.to_owned(), description: String::new() });
    // Label i -> event metadata id i+1 and stat metadata id i+2 (ids 0 are "unset" in proto3).
    let used: BTreeSet<u32> = trace.events.iter().map(|e| e.label).collect();
    for &label in &used {
        let text = trace.labels.get(label as usize).cloned().unwrap_or_default();
        let id = i64::from(label);
        plane.event_metadata.insert(id + 1, XEventMetadata { id: id + 1, name: text.clone(), ..XEventMetadata::default() });
        plane.stat_metadata.insert(id + 2, XStatMetadata { id: id + 2, name: text, description: String::new() });
    }
    let line_ts = wall_start(trace).saturating_sub(base_ns);
    let mut by_tid: std::collections::BTreeMap<u64, Vec<&crate::Event>> = std::collections::BTreeMap::new();
    for e in &trace.events {
        if e.end_ns >= e.start_ns {
            by_tid.entry(e.tid).or_default().push(e);
        }
    }
    for (tid, mut events) in by_tid {
        events.sort_by_key(|e| (e.start_ns, std::cmp::Reverse(e.end_ns)));
        let name = roctx_line_name(tid);
        let display_name = match trace.thread_names.get(&tid) {
            Some(thread) => format!("{name} ({thread})"),
            None => String::new(),
        };
        let line_start = events.first().map_or(trace.start_ns, |e| e.start_ns);
        let line_end = events.iter().map(|e| e.end_ns).max().unwrap_or(line_start);
        plane.lines.push(XLine {
            // CAST: OS tids are < 2^32.
            id: tid as i64,
            display_id: 0,
            name,
            display_name,
            timestamp_ns: line_ts,
            duration_ps: (line_end.saturating_sub(trace.start_ns) as i64).saturating_mul(1000),
            events: events
                .iter()
                .map(|e| XEvent {
                    metadata_id: i64::from(e.label) + 1,
                    data: Some(x_event::Data::OffsetPs((e.start_ns as i64 - trace.start_ns as i64).saturating_mul(1000))),
                    duration_ps: match e.kind {
                        EventKind::Mark => 0,
                        _ => ((e.end_ns - e.start_ns) as i64).saturating_mul(1000),
                    },
                    stats: vec![XStat { metadata_id: nvtx_stat_id, value: Some(x_stat::Value::RefValue(u64::from(e.label) + 2)) }],
                })
                .collect(),
        });
    }
    plane
}

/// A complete XSpace for a trace: `/host:ROCTX` merged into a fresh `/host:CPU`, hostnames and
/// warnings set. What the standalone log directory writer stores.
pub fn standalone_xspace(trace: &Trace) -> XSpace {
    // Merging into an empty host plane moves no id and re-keys no metadata, so the ROCTX plane
    // simply becomes /host:CPU (then sorted and row-numbered like any merge result).
    let mut host = roctx_plane(trace);
    host.name = HOST_PLANE.to_owned();
    host.lines.sort_by(|a, b| sort_key(a).cmp(sort_key(b)));
    assign_rows(&mut host);
    let stop = wall_start(trace).saturating_add(trace.stop_ns.saturating_sub(trace.start_ns) as i64);
    XSpace {
        planes: vec![host, task_env_plane(wall_start(trace), stop)],
        hostnames: vec![trace.hostname.clone()],
        warnings: trace.warnings.clone(),
        ..XSpace::default()
    }
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

/// The wall-clock session start a space's line timestamps count from: its `profile_start_time`,
/// or 0 if its lines hold absolute wall-clock times, or `None` if it says nothing.
pub fn time_base(space: &XSpace) -> Option<i64> {
    let env = space.planes.iter().find(|p| p.name == TASK_ENV_PLANE);
    let start = env.and_then(|p| {
        let id = p.stat_metadata.values().find(|m| m.name == PROFILE_START_TIME)?.id;
        match p.stats.iter().find(|s| s.metadata_id == id)?.value {
            // CAST: wall-clock ns fit i64 until 2262.
            Some(x_stat::Value::Uint64Value(v)) => Some(v as i64),
            Some(x_stat::Value::Int64Value(v)) => Some(v),
            _ => None,
        }
    });
    start.or_else(|| {
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
        let stop = wall_start(trace).saturating_add(trace.stop_ns.saturating_sub(trace.start_ns) as i64);
        space.planes.push(task_env_plane(wall_start(trace), stop));
        wall_start(trace)
    });
    space.planes.push(roctx_plane_based(trace, base));
    space.warnings.extend(trace.warnings.iter().cloned());
    if !trace.hostname.is_empty() && space.hostnames.is_empty() {
        space.hostnames.push(trace.hostname.clone());
    }
    merge_host_planes(&mut space);
    Ok(space.encode_to_vec())
}

/// Combines several XSpaces (e.g. XLA's own capture and a roctx_utils log directory of the same
/// run) into one. ROCTX lines already merged into an input's `/host:CPU` are split back out into
/// `/host:ROCTX` first, so that the final merge remaps them like fresh ones instead of folding
/// them into a thread line with the same id.
pub fn merge_spaces(spaces: Vec<XSpace>) -> XSpace {
    let mut out = XSpace::default();
    // Every input is moved onto the first known time base (their `profile_start_time`s, or the
    // absolute wall clock), and only the first Task Environment plane is kept.
    let bases: Vec<Option<i64>> = spaces.iter().map(time_base).collect();
    let target = bases.iter().flatten().next().copied();
    for (mut space, from) in spaces.into_iter().zip(bases) {
        if let (Some(to), Some(from)) = (target, from) {
            for line in space.planes.iter_mut().filter(|p| p.name != TASK_ENV_PLANE).flat_map(|p| p.lines.iter_mut()) {
                line.timestamp_ns = line.timestamp_ns.saturating_add(from.saturating_sub(to));
            }
        }
        if out.planes.iter().any(|p| p.name == TASK_ENV_PLANE) {
            space.planes.retain(|p| p.name != TASK_ENV_PLANE);
        }
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
                line.id = roctx_line_tid(&line.name).unwrap_or_default() as i64;
                marker.lines.push(line);
            }
            out.planes.push(marker);
        }
        out.planes.extend(space.planes);
        out.errors.extend(space.errors);
        out.warnings.extend(space.warnings);
        for h in space.hostnames {
            if !out.hostnames.contains(&h) {
                out.hostnames.push(h);
            }
        }
    }
    // Several ROCTX planes (one per input) become one before the merge.
    merge_planes_with_same_names(&mut out);
    merge_host_planes(&mut out);
    out
}

/// XLA's `MergeHostPlanesAndSortLines` (with the ROCm/xla ROCTX step), then [`assign_rows`]:
///
/// 1. the host planes ([`HOST_PLANES`]) merge into a new `/host:CPU`, their line ids "occupied";
/// 2. `/host:NVTX-CUPTI` lines that collide move to ids from `1<<32`, then merge;
/// 3. `/host:ROCTX` lines that collide move to ids from `2<<32`, then merge;
/// 4. planes with the same name merge into the first;
/// 5. host lines sort by display name, else name (bytewise).
///
/// Does nothing if there is no host or marker plane.
pub fn merge_host_planes(space: &mut XSpace) {
    let is_host = |p: &XPlane| HOST_PLANES.contains(&p.name.as_str());
    let has_marker = space.planes.iter().any(|p| p.name == NVTX_PLANE || p.name == ROCTX_PLANE);
    if !space.planes.iter().any(is_host) && !has_marker {
        return;
    }
    let mut occupied: HashSet<i64> = space.planes.iter().filter(|p| is_host(p)).flat_map(|p| p.lines.iter().map(|l| l.id)).collect();
    let mut host = XPlane { name: HOST_PLANE.to_owned(), ..XPlane::default() };
    // Host planes merge in HOST_PLANES order, as XLA collects them.
    for name in HOST_PLANES {
        for p in space.planes.iter().filter(|p| p.name == name) {
            merge_planes(p, &mut host);
        }
    }
    space.planes.retain(|p| !is_host(p));
    for (name, start) in [(NVTX_PLANE, NVTX_LINE_ID_START), (ROCTX_PLANE, ROCTX_LINE_ID_START)] {
        // Every plane of that name (a host may already hold one next to ours): each is remapped
        // against what is occupied so far, then merged.
        while let Some(pos) = space.planes.iter().position(|p| p.name == name) {
            let mut marker = space.planes.remove(pos);
            change_occupied_line_ids(&mut marker, &mut occupied, start);
            merge_planes(&marker, &mut host);
        }
    }
    space.planes.push(host);
    merge_planes_with_same_names(space);
    if let Some(host) = space.planes.iter_mut().find(|p| p.name == HOST_PLANE) {
        host.lines.sort_by(|a, b| sort_key(a).cmp(sort_key(b)));
        assign_rows(host);
    }
}

fn sort_key(line: &XLine) -> &[u8] {
    if line.display_name.is_empty() { line.name.as_bytes() } else { line.display_name.as_bytes() }
}

/// XLA's `ChangeOccupiedLineIds`: a line whose id is occupied moves to the next free id from
/// `start`; others keep theirs; every final id becomes occupied.
pub fn change_occupied_line_ids(plane: &mut XPlane, occupied: &mut HashSet<i64>, start: i64) {
    let mut candidate = start;
    for line in &mut plane.lines {
        if occupied.contains(&line.id) {
            while occupied.contains(&candidate) {
                candidate += 1;
            }
            line.id = candidate;
            candidate += 1;
        }
        occupied.insert(line.id);
    }
}

/// XLA's `MergePlanesWithSameNames`: the first plane of each name absorbs the later ones.
pub fn merge_planes_with_same_names(space: &mut XSpace) {
    let mut i = 0;
    while i < space.planes.len() {
        let mut j = i + 1;
        while j < space.planes.len() {
            if space.planes[j].name == space.planes[i].name {
                let src = space.planes.remove(j);
                merge_planes(&src, &mut space.planes[i]);
            } else {
                j += 1;
            }
        }
        i += 1;
    }
}

/// XLA's `MergePlanes(src, dst)`: empty dst lines go first; plane stats merge by name; each src
/// line merges into the dst line with the same id (the earlier timestamp wins, offsets are
/// shifted); event and stat metadata are re-resolved by name in dst.
pub fn merge_planes(src: &XPlane, dst: &mut XPlane) {
    dst.lines.retain(|l| !l.events.is_empty());
    let mut keys = MetadataKeys::new(dst);
    let stats: Vec<XStat> = src.stats.iter().map(|s| keys.stat(src, s, dst)).collect();
    for stat in stats {
        match dst.stats.iter_mut().find(|d| d.metadata_id == stat.metadata_id) {
            Some(existing) => *existing = stat,
            None => dst.stats.push(stat),
        }
    }
    for line in &src.lines {
        let events: Vec<XEvent> = line
            .events
            .iter()
            .map(|e| XEvent {
                metadata_id: keys.event(src, e.metadata_id, dst),
                data: e.data,
                duration_ps: e.duration_ps,
                stats: e.stats.iter().map(|s| keys.stat(src, s, dst)).collect(),
            })
            .collect();
        let pos = match dst.lines.iter().position(|l| l.id == line.id) {
            Some(pos) => pos,
            None => {
                dst.lines.push(XLine { id: line.id, display_id: line.display_id, ..XLine::default() });
                dst.lines.len() - 1
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
        d.events.sort_by_key(|e| (e.offset_ps(), std::cmp::Reverse(e.duration_ps)));
    }
}

fn shift(e: &mut XEvent, delta_ps: i64) {
    if let Some(x_event::Data::OffsetPs(o)) = &mut e.data {
        *o = o.saturating_add(delta_ps);
    }
}

/// Maps src metadata ids to dst ones by name, adding what dst lacks.
struct MetadataKeys {
    events: HashMap<String, i64>,
    stats: HashMap<String, i64>,
    // src id -> dst id, so each distinct metadata is resolved by name once, not per event.
    event_ids: HashMap<i64, i64>,
    stat_ids: HashMap<i64, i64>,
    next_event: i64,
    next_stat: i64,
}

impl MetadataKeys {
    fn new(dst: &XPlane) -> MetadataKeys {
        MetadataKeys {
            events: dst.event_metadata.values().map(|m| (m.name.clone(), m.id)).collect(),
            stats: dst.stat_metadata.values().map(|m| (m.name.clone(), m.id)).collect(),
            event_ids: HashMap::new(),
            stat_ids: HashMap::new(),
            next_event: dst.event_metadata.keys().copied().max().unwrap_or(0) + 1,
            next_stat: dst.stat_metadata.keys().copied().max().unwrap_or(0) + 1,
        }
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
        let new_id = self.next_event;
        self.next_event += 1;
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
        let new_id = self.next_stat;
        self.next_stat += 1;
        dst.stat_metadata.insert(new_id, XStatMetadata { id: new_id, ..meta.clone() });
        self.stats.insert(meta.name.clone(), new_id);
        new_id
    }

    fn stat(&mut self, src: &XPlane, stat: &XStat, dst: &mut XPlane) -> XStat {
        let value = match &stat.value {
            // A ref names a stat metadata: re-key it too.
            // CAST: metadata ids are non-negative.
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
/// A thread's line is the one whose id is the tid, or whose name is `Host Threads/<tid>` or
/// ends in `/<tid>`.
pub fn assign_rows(plane: &mut XPlane) {
    let lines = std::mem::take(&mut plane.lines);
    let (roctx, mut ordered): (Vec<XLine>, Vec<XLine>) = lines.into_iter().partition(|l| roctx_line_tid(&l.name).is_some());
    let mut unplaced = Vec::new();
    for line in roctx {
        let tid = roctx_line_tid(&line.name).unwrap_or_default();
        let suffix = format!("/{tid}");
        let thread_pos = ordered.iter().rposition(|l| {
            roctx_line_tid(&l.name).is_none()
                && (l.id == tid as i64 || l.name == format!("Host Threads/{tid}") || l.name.ends_with(&suffix))
        });
        match thread_pos {
            Some(pos) => {
                // After the thread and after any ROCTX lines already placed under it.
                let mut at = pos + 1;
                while at < ordered.len() && roctx_line_tid(&ordered[at].name) == Some(tid) {
                    at += 1;
                }
                ordered.insert(at, line);
            }
            None => unplaced.push(line),
        }
    }
    for line in unplaced {
        let key = sort_key(&line).to_vec();
        let at = ordered.partition_point(|l| sort_key(l) <= key.as_slice());
        ordered.insert(at, line);
    }
    for (row, line) in ordered.iter_mut().enumerate() {
        line.display_id = row as i64 + 1;
    }
    plane.lines = ordered;
}

/// XProf's row key for a line: the low 32 bits of `display_id`, or of `id` when that is 0.
pub fn row_key(line: &XLine) -> u32 {
    let id = if line.display_id != 0 { line.display_id } else { line.id };
    id as u32 // CAST: truncation is exactly what XProf does
}

/// One problem found by [`validate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    /// `true` for what makes XProf show wrong data; `false` for structural warnings.
    pub error: bool,
    /// What and where.
    pub message: String,
}

/// Checks the invariants of xspace_and_xprof.md section 12 that matter for our output.
pub fn validate(space: &XSpace) -> Vec<Issue> {
    let mut issues = Vec::new();
    let mut err = |error: bool, message: String| issues.push(Issue { error, message });
    let mut names = HashSet::new();
    for plane in &space.planes {
        if !names.insert(plane.name.as_str()) {
            err(true, format!("duplicate plane name {:?}", plane.name));
        }
        let rendered = plane.name.starts_with(HOST_PLANE) || plane.name.starts_with("/device:GPU:") || plane.name.starts_with("/device:CUSTOM:");
        if !rendered && !plane.lines.iter().all(|l| l.events.is_empty()) {
            err(false, format!("plane {:?} has events but XProf does not render it", plane.name));
        }
        let mut ids = HashSet::new();
        let mut rows: HashMap<u32, &str> = HashMap::new();
        for line in &plane.lines {
            if !ids.insert(line.id) {
                err(true, format!("{}: duplicate line id {}", plane.name, line.id));
            }
            if line.events.is_empty() {
                continue;
            }
            if let Some(other) = rows.insert(row_key(line), &line.name) {
                err(true, format!("{}: lines {:?} and {:?} share XProf row {} and would be drawn as one", plane.name, other, line.name, row_key(line)));
            }
            for e in &line.events {
                if !plane.event_metadata.contains_key(&e.metadata_id) {
                    err(true, format!("{}/{}: event with missing metadata {}", plane.name, line.name, e.metadata_id));
                }
                if e.duration_ps < 0 {
                    err(true, format!("{}/{}: negative duration", plane.name, line.name));
                }
                for s in &e.stats {
                    if !plane.stat_metadata.contains_key(&s.metadata_id) {
                        err(true, format!("{}/{}: stat with missing metadata {}", plane.name, line.name, s.metadata_id));
                    }
                    if let Some(x_stat::Value::RefValue(r)) = &s.value {
                        if !plane.stat_metadata.contains_key(&(*r as i64)) {
                            err(true, format!("{}/{}: dangling ref_value {r}", plane.name, line.name));
                        }
                    }
                }
            }
        }
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

#[cfg(test)]
mod tests;
