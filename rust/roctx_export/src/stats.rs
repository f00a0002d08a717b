//! Summaries of a trace, the tables `nsys stats` and `rocprofv3 --stats` print: annotated ranges
//! per label (`nvtx_sum`), kernels per name (`cuda_gpu_kern_sum`), memory copies and sets per
//! operation (`cuda_gpu_mem_time_sum` / `_size_sum`), and the GPU time each range label caused
//! (`nvtx_gpu_proj_sum`). For `roctx stats`, which owns the layout.
//!
//! What counts, read from any XSpace (ours, XLA's, merged, folded per process):
//! - **Ranges** are the events with a duration on ROCTX and NVTX lines (`/host:ROCTX`,
//!   `/host:NVTX-CUPTI`, and lines `.../ROCTX` or `.../NVTX` of a `/host:` plane), by their
//!   event name. Zero-length events there are marks: counted, never ranges. Nesting as nsys
//!   counts it: every range counts its whole duration, children included, so the time of a
//!   nested range is in its own row and in each enclosing range's row.
//! - **Kernels** are the events of `/device:GPU:<n>` planes with a `kernel_details` stat, by
//!   event metadata name: exactly what XProf's `kernel_stats` counts. Our op events (lines
//!   `Op scopes (...)`) and XLA's derived lines carry none, so nothing is counted twice.
//! - **Copies** are the events with `memcpy_details` (by name: `MemcpyH2D`, ...) and
//!   `Memset_details` (`Memset`, by memory kind), with their `size:` / `num_bytes:` bytes.
//! - **Range GPU time**: a kernel or copy whose flow consumer id (`_c`) names the ROCTX range
//!   that launched it is that range's own (exclusive) GPU time, and inclusive GPU time of it
//!   and every range enclosing it on its line. A range's projection is from the start of the
//!   first GPU work it launched (nested ranges included) to the end of the last, as
//!   `nvtx_gpu_proj_sum` projects. GPU work with only an `nvtx_range` stat (no flow id) counts
//!   for that label, as its own time only, with no projection.
//!
//! Each space is read once and can be dropped afterwards: what is kept is 8 bytes per range,
//! kernel and copy (the durations, for medians), one row per distinct label, and per range
//! instance (about 60 bytes) while its space is read. Each table keeps at most [`MAX_LABELS`]
//! distinct labels; later ones are summed in one row per group, [`OTHER_LABELS`], and a note
//! says how many events went there: a file of a million distinct labels costs what its decoding
//! costs and a bounded amount more, not 30 times its size (issue 40).

use std::cmp::Reverse;
use std::collections::HashMap;

use serde::Serialize;

use crate::xplane::{is_op_line, task_env_time, FLOW_CONSUMER_STAT, FLOW_PRODUCER_STAT, GPU_PLANE_PREFIX, NVTX_PLANE, NVTX_RANGE_STAT, PROFILE_START_TIME, PROFILE_STOP_TIME, ROCTX_PLANE};
use crate::xplane_proto::{x_stat, XEvent, XLine, XPlane, XSpace, XStat};

/// How rows are keyed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Range labels that differ only in an XLA `#...#` payload (`Thunk:#hlo_op=a#`,
    /// `Thunk:#hlo_op=b#`) are one row, named by the text before the payload.
    pub fold_payload: bool,
    /// Ranges (and their GPU time) per thread line; kernels and copies per GPU stream line.
    pub per_thread: bool,
}

/// An enclosing range this many levels up is not credited with a nested range's GPU time (a
/// bound for damaged or adversarial nesting; counted in [`Report::notes`]).
pub const MAX_CREDITED_DEPTH: usize = 256;

/// Distinct labels (with their group) one table keeps; see the module docs.
pub const MAX_LABELS: usize = 100_000;
/// The row the labels past [`MAX_LABELS`] are summed in.
pub const OTHER_LABELS: &str = "(other labels)";

/// One table's rows by key (a group and a label, or a group, a kind and an operation, joined
/// with NULs): found without allocating, at most [`MAX_LABELS`] of them plus one
/// [`OTHER_LABELS`] row per group.
#[derive(Debug, Default)]
struct Table<A> {
    index: HashMap<Box<str>, usize>,
    rows: Vec<(Box<str>, A)>,
    scratch: String,
    /// Events summed in an [`OTHER_LABELS`] row.
    other: u64,
}

impl<A: Default> Table<A> {
    /// The row of `parts` (joined with NULs), made if new.
    fn row(&mut self, parts: &[&str]) -> usize {
        self.scratch.clear();
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                self.scratch.push('\0');
            }
            self.scratch.push_str(part);
        }
        if let Some(&i) = self.index.get(self.scratch.as_str()) {
            return i;
        }
        if self.index.len() >= MAX_LABELS {
            self.other += 1;
            // The group stays; the label (the last part) becomes OTHER_LABELS, and for copies
            // the kind goes too.
            let mut key = String::with_capacity(parts[0].len() + OTHER_LABELS.len() + 2);
            key.push_str(parts[0]);
            for _ in 1..parts.len() - 1 {
                key.push('\0');
            }
            key.push('\0');
            key.push_str(OTHER_LABELS);
            return match self.index.get(key.as_str()) {
                Some(&i) => i,
                None => self.insert(key.into_boxed_str()),
            };
        }
        let key: Box<str> = self.scratch.as_str().into();
        self.insert(key)
    }

    fn insert(&mut self, key: Box<str>) -> usize {
        let i = self.rows.len();
        self.index.insert(key.clone(), i);
        self.rows.push((key, A::default()));
        i
    }

    fn get(&mut self, i: usize) -> &mut A {
        &mut self.rows[i].1
    }

    /// The rows with their key split back into its parts.
    fn into_rows(self) -> impl Iterator<Item = (Vec<String>, A)> {
        self.rows.into_iter().map(|(key, acc)| (key.split('\0').map(str::to_owned).collect(), acc))
    }
}

/// Durations in ns, kept whole for the median.
#[derive(Debug, Clone, Default)]
struct Durations(Vec<u64>);

impl Durations {
    fn summary(mut self) -> Summary {
        self.0.sort_unstable();
        let v = &self.0;
        let n = v.len();
        let total = v.iter().fold(0u64, |a, &d| a.saturating_add(d));
        let median = match n {
            0 => 0.0,
            _ if n % 2 == 1 => v[n / 2] as f64,
            _ => (v[n / 2 - 1] as f64 + v[n / 2] as f64) / 2.0,
        };
        Summary {
            count: n as u64,
            total_ns: total,
            avg_ns: if n == 0 { 0.0 } else { total as f64 / n as f64 },
            median_ns: median,
            min_ns: v.first().copied().unwrap_or(0),
            max_ns: v.last().copied().unwrap_or(0),
        }
    }
}

/// Count, total, average, median, min and max of durations, ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Summary {
    /// How many.
    pub count: u64,
    /// Their sum (saturating).
    pub total_ns: u64,
    /// `total_ns / count` (0 when none).
    pub avg_ns: f64,
    /// The middle one, or the mean of the middle two.
    pub median_ns: f64,
    /// The shortest.
    pub min_ns: u64,
    /// The longest.
    pub max_ns: u64,
}

/// A row of the `ranges` report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RangeRow {
    /// The thread line with `per_thread`, else empty.
    pub group: String,
    /// The label.
    pub range: String,
    /// Its durations.
    #[serde(flatten)]
    pub time: Summary,
    /// `total_ns` as a percentage of the traced time (several threads, or nesting, can take it
    /// past 100).
    pub traced_pct: f64,
}

/// A row of the `kernels` report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelRow {
    /// The GPU stream line with `per_thread`, else empty.
    pub group: String,
    /// The name the trace carries.
    pub kernel: String,
    /// Its GPU durations.
    #[serde(flatten)]
    pub time: Summary,
    /// `total_ns` as a percentage of all kernels' time (of its group with `per_thread`).
    pub gpu_pct: f64,
}

/// A row of the `copies` report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CopyRow {
    /// The GPU stream line with `per_thread`, else empty.
    pub group: String,
    /// `memcpy` or `memset`.
    pub kind: String,
    /// The direction (`MemcpyH2D`, `MemcpyD2H`, `MemcpyD2D`, `MemcpyP2P`, ...) or, for a set,
    /// `Memset` and its memory kind.
    pub operation: String,
    /// Bytes moved or set.
    pub bytes: u64,
    /// Its GPU durations.
    #[serde(flatten)]
    pub time: Summary,
    /// `bytes / total_ns` (GB/s = bytes per ns); 0 when no time.
    pub gbps: f64,
}

/// A row of the `range_gpu` report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RangeGpuRow {
    /// The thread line with `per_thread`, else empty.
    pub group: String,
    /// The label.
    pub range: String,
    /// Ranges of this label.
    pub instances: u64,
    /// Those that launched GPU work (theirs or a nested range's).
    pub instances_with_gpu: u64,
    /// Kernels and copies launched inside them, nested ranges included.
    pub gpu_ops: u64,
    /// GPU time of those, nested ranges included.
    pub gpu_inclusive_ns: u64,
    /// GPU time launched by these ranges themselves, not by a nested range.
    pub gpu_exclusive_ns: u64,
    /// Per instance with GPU work: from its first GPU start to its last GPU end.
    pub projected: Summary,
    /// The ranges' own (CPU) time.
    pub range_total_ns: u64,
}

/// Every report of a trace (one process, or several combined).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    /// The spaces (files) read.
    pub spaces: u64,
    /// Their session durations, summed (`profile_start_time` to `profile_stop_time`, else the
    /// span of their events).
    pub traced_ns: u64,
    /// Zero-length ROCTX/NVTX events (marks).
    pub marks: u64,
    /// Kernels and copies no range could be found for.
    pub gpu_ops_without_range: u64,
    /// What the numbers leave out, one line each.
    pub notes: Vec<String>,
    /// Sorted by group, then total time (longest first), then label.
    pub ranges: Vec<RangeRow>,
    /// Sorted by group, then total GPU time, then name.
    pub kernels: Vec<KernelRow>,
    /// Sorted by group, then total time, then kind and operation.
    pub copies: Vec<CopyRow>,
    /// Sorted by group, then inclusive GPU time, then label.
    pub range_gpu: Vec<RangeGpuRow>,
}

#[derive(Debug, Default)]
struct CopyAcc {
    time: Durations,
    bytes: u64,
}

#[derive(Debug, Default)]
struct RangeGpuAcc {
    instances: u64,
    with_gpu: u64,
    ops: u64,
    inclusive: u64,
    exclusive: u64,
    projected: Durations,
    range_total: u64,
}

/// The reports of the spaces added so far.
#[derive(Debug, Default)]
pub struct Stats {
    options: Options,
    spaces: u64,
    traced_ns: u64,
    marks: u64,
    without_range: u64,
    negative: u64,
    too_deep: u64,
    ranges: Table<Durations>,
    kernels: Table<Durations>,
    copies: Table<CopyAcc>,
    range_gpu: Table<RangeGpuAcc>,
}

/// A range of the space being read.
struct Instance {
    /// Its row of `range_gpu`.
    key: usize,
    parent: Option<usize>,
    duration: u64,
    first_ps: i128,
    last_ps: i128,
    ops: u64,
    inclusive: u64,
    exclusive: u64,
}

impl Stats {
    /// No spaces yet.
    pub fn new(options: Options) -> Stats {
        Stats { options, ..Stats::default() }
    }

    /// Adds what `space` holds.
    pub fn add(&mut self, space: &XSpace) {
        self.spaces += 1;
        self.traced_ns = self.traced_ns.saturating_add(traced_ns(space));
        let mut instances: Vec<Instance> = Vec::new();
        let mut by_flow: HashMap<u64, usize> = HashMap::new();
        for plane in &space.planes {
            let whole = plane.name.starts_with(ROCTX_PLANE) || plane.name.starts_with(NVTX_PLANE);
            if !whole && !plane.name.starts_with("/host:") {
                continue;
            }
            let producer = stat_id(plane, FLOW_PRODUCER_STAT);
            for line in plane.lines.iter().filter(|l| whole || l.name.ends_with("/ROCTX") || l.name.ends_with("/NVTX")) {
                self.add_range_line(plane, line, producer, &mut instances, &mut by_flow);
            }
        }
        for plane in space.planes.iter().filter(|p| p.name.starts_with(GPU_PLANE_PREFIX)) {
            self.add_gpu_plane(plane, &mut instances, &by_flow);
        }
        for inst in instances {
            let acc = self.range_gpu.get(inst.key);
            acc.instances += 1;
            acc.range_total = acc.range_total.saturating_add(inst.duration);
            acc.exclusive = acc.exclusive.saturating_add(inst.exclusive);
            if inst.ops > 0 {
                acc.with_gpu += 1;
                acc.ops += inst.ops;
                acc.inclusive = acc.inclusive.saturating_add(inst.inclusive);
                acc.projected.0.push(ps_to_ns(inst.last_ps - inst.first_ps));
            }
        }
    }

    fn label<'a>(&self, name: &'a str) -> &'a str {
        if self.options.fold_payload {
            fold_payload(name)
        } else {
            name
        }
    }

    fn add_range_line(&mut self, plane: &XPlane, line: &XLine, producer: Option<i64>, instances: &mut Vec<Instance>, by_flow: &mut HashMap<u64, usize>) {
        let group = if self.options.per_thread { line_name(line).to_owned() } else { String::new() };
        // (start ps, duration ps, event) of the ranges, outermost first at equal starts.
        let mut ranges: Vec<(i128, i128, &XEvent)> = Vec::new();
        for e in &line.events {
            match e.duration_ps {
                0 => self.marks += 1,
                d if d < 0 => self.negative += 1,
                d => ranges.push((start_ps(line, e), i128::from(d), e)),
            }
        }
        ranges.sort_by_key(|&(start, duration, _)| (start, Reverse(duration)));
        // The open ranges, innermost last: (end ps, instance). A range that overlaps another
        // without being inside it (start/end ranges can) is not its child.
        let mut open: Vec<(i128, usize)> = Vec::new();
        for (start, duration, e) in ranges {
            while open.last().is_some_and(|&(end, _)| end <= start) {
                open.pop();
            }
            let parent = open.iter().rev().find(|&&(end, _)| end >= start + duration).map(|&(_, i)| i);
            let name = self.label(event_name(plane, e));
            let ns = ps_to_ns(duration);
            let row = self.ranges.row(&[&group, name]);
            self.ranges.get(row).0.push(ns);
            let index = instances.len();
            instances.push(Instance {
                key: self.range_gpu.row(&[&group, name]),
                parent,
                duration: ns,
                first_ps: i128::MAX,
                last_ps: i128::MIN,
                ops: 0,
                inclusive: 0,
                exclusive: 0,
            });
            if let Some(flow) = producer.and_then(|id| uint_stat(&e.stats, id)) {
                by_flow.insert(flow, index);
            }
            open.push((start + duration, index));
        }
    }

    fn add_gpu_plane(&mut self, plane: &XPlane, instances: &mut [Instance], by_flow: &HashMap<u64, usize>) {
        let [kernel_details, memcpy_details, memset_details, consumer, nvtx] =
            ["kernel_details", "memcpy_details", "Memset_details", FLOW_CONSUMER_STAT, NVTX_RANGE_STAT].map(|name| stat_id(plane, name));
        for line in plane.lines.iter().filter(|l| !is_op_line(l)) {
            let group = if self.options.per_thread { format!("{} {}", plane.name, line_name(line)) } else { String::new() };
            for e in &line.events {
                let meta = plane.event_metadata.get(&e.metadata_id);
                // XProf reads an event's stats together with its metadata's.
                let stats = || e.stats.iter().chain(meta.map(|m| m.stats.as_slice()).unwrap_or_default());
                let has = |id: Option<i64>| id.is_some_and(|id| stats().any(|s| s.metadata_id == id));
                let name = meta.map_or("", |m| m.name.as_str());
                if e.duration_ps < 0 {
                    self.negative += 1;
                    continue;
                }
                let ns = ps_to_ns(i128::from(e.duration_ps));
                if has(kernel_details) {
                    let row = self.kernels.row(&[&group, name]);
                    self.kernels.get(row).0.push(ns);
                } else if let Some(details) = str_stat(plane, stats(), memcpy_details) {
                    self.add_copy(&group, "memcpy", name, details_number(details, "size:"), ns);
                } else if let Some(details) = str_stat(plane, stats(), memset_details) {
                    let kind = details.split_whitespace().find_map(|w| w.strip_prefix("kind:")).unwrap_or("");
                    let operation = if kind.is_empty() { "Memset".to_owned() } else { format!("Memset {kind}") };
                    self.add_copy(&group, "memset", &operation, details_number(details, "num_bytes:"), ns);
                } else {
                    continue;
                }
                // Which range launched it.
                let start = start_ps(line, e);
                match consumer.and_then(|id| uint_stat(&e.stats, id)).and_then(|f| by_flow.get(&f)) {
                    Some(&i) => {
                        instances[i].exclusive = instances[i].exclusive.saturating_add(ns);
                        let mut at = Some(i);
                        for _ in 0..MAX_CREDITED_DEPTH {
                            let Some(j) = at else { break };
                            let inst = &mut instances[j];
                            inst.ops += 1;
                            inst.inclusive = inst.inclusive.saturating_add(ns);
                            inst.first_ps = inst.first_ps.min(start);
                            inst.last_ps = inst.last_ps.max(start + i128::from(e.duration_ps));
                            at = inst.parent;
                        }
                        self.too_deep += u64::from(at.is_some());
                    }
                    None => match str_stat(plane, stats(), nvtx) {
                        // A label and no instance: its own time, no projection.
                        Some(label) => {
                            let group = if self.options.per_thread { "(no thread)" } else { "" };
                            let row = self.range_gpu.row(&[group, self.label(label)]);
                            let acc = self.range_gpu.get(row);
                            acc.ops += 1;
                            acc.inclusive = acc.inclusive.saturating_add(ns);
                            acc.exclusive = acc.exclusive.saturating_add(ns);
                        }
                        None => self.without_range += 1,
                    },
                }
            }
        }
    }

    fn add_copy(&mut self, group: &str, kind: &str, operation: &str, bytes: u64, ns: u64) {
        let row = self.copies.row(&[group, kind, operation]);
        let acc = self.copies.get(row);
        acc.time.0.push(ns);
        acc.bytes = acc.bytes.saturating_add(bytes);
    }

    /// The reports, sorted.
    pub fn report(self) -> Report {
        let traced = self.traced_ns;
        let pct = |part: u64, whole: u64| if whole == 0 { 0.0 } else { part as f64 * 100.0 / whole as f64 };
        let mut notes = Vec::new();
        for (table, other, what) in [
            ("ranges", self.ranges.other, "ranges"),
            ("kernels", self.kernels.other, "kernels"),
            ("copies", self.copies.other, "copies and sets"),
            ("range_gpu", self.range_gpu.other, "ranges"),
        ] {
            if other > 0 {
                notes.push(format!("{table}: {other} {what} past the first {MAX_LABELS} distinct labels are summed in the row {OTHER_LABELS:?}"));
            }
        }
        let pair = |mut key: Vec<String>| {
            let second = key.pop().unwrap_or_default();
            (key.pop().unwrap_or_default(), second)
        };
        let mut ranges: Vec<RangeRow> = self
            .ranges
            .into_rows()
            .map(|(key, d)| {
                let (group, range) = pair(key);
                let time = d.summary();
                RangeRow { group, range, traced_pct: pct(time.total_ns, traced), time }
            })
            .collect();
        ranges.sort_by(|a, b| (&a.group, Reverse(a.time.total_ns), &a.range).cmp(&(&b.group, Reverse(b.time.total_ns), &b.range)));
        let mut kernels: Vec<KernelRow> = self
            .kernels
            .into_rows()
            .map(|(key, d)| {
                let (group, kernel) = pair(key);
                KernelRow { group, kernel, time: d.summary(), gpu_pct: 0.0 }
            })
            .collect();
        let mut group_totals: HashMap<String, u64> = HashMap::new();
        for k in &kernels {
            let t = group_totals.entry(k.group.clone()).or_default();
            *t = t.saturating_add(k.time.total_ns);
        }
        for k in &mut kernels {
            k.gpu_pct = pct(k.time.total_ns, group_totals[&k.group]);
        }
        kernels.sort_by(|a, b| (&a.group, Reverse(a.time.total_ns), &a.kernel).cmp(&(&b.group, Reverse(b.time.total_ns), &b.kernel)));
        let mut copies: Vec<CopyRow> = self
            .copies
            .into_rows()
            .map(|(mut key, acc)| {
                let operation = key.pop().unwrap_or_default();
                let kind = key.pop().unwrap_or_default();
                let group = key.pop().unwrap_or_default();
                let time = acc.time.summary();
                let gbps = if time.total_ns == 0 { 0.0 } else { acc.bytes as f64 / time.total_ns as f64 };
                CopyRow { group, kind, operation, bytes: acc.bytes, time, gbps }
            })
            .collect();
        copies.sort_by(|a, b| (&a.group, Reverse(a.time.total_ns), &a.kind, &a.operation).cmp(&(&b.group, Reverse(b.time.total_ns), &b.kind, &b.operation)));
        let mut range_gpu: Vec<RangeGpuRow> = self
            .range_gpu
            .into_rows()
            .map(|(key, acc)| (pair(key), acc))
            .map(|((group, range), acc)| RangeGpuRow {
                group,
                range,
                instances: acc.instances,
                instances_with_gpu: acc.with_gpu,
                gpu_ops: acc.ops,
                gpu_inclusive_ns: acc.inclusive,
                gpu_exclusive_ns: acc.exclusive,
                projected: acc.projected.summary(),
                range_total_ns: acc.range_total,
            })
            .collect();
        range_gpu.sort_by(|a, b| (&a.group, Reverse(a.gpu_inclusive_ns), &a.range).cmp(&(&b.group, Reverse(b.gpu_inclusive_ns), &b.range)));
        if self.negative > 0 {
            notes.push(format!("{} events with a negative duration were left out", self.negative));
        }
        if self.too_deep > 0 {
            notes.push(format!("{} kernels or copies were not credited to ranges more than {MAX_CREDITED_DEPTH} levels above the one that launched them", self.too_deep));
        }
        Report { spaces: self.spaces, traced_ns: traced, marks: self.marks, gpu_ops_without_range: self.without_range, notes, ranges, kernels, copies, range_gpu }
    }
}

/// `label` without an XLA TraceMe payload: `Thunk:#hlo_op=a,x=1#` is `Thunk:`; a label with no
/// `name#...#` payload is itself.
pub fn fold_payload(label: &str) -> &str {
    match label.find('#') {
        Some(at) if at + 1 < label.len() && label.ends_with('#') => &label[..at],
        _ => label,
    }
}

/// The session duration of `space`: from `profile_start_time` to `profile_stop_time`, else the
/// span of its events.
fn traced_ns(space: &XSpace) -> u64 {
    if let (Some(start), Some(stop)) = (task_env_time(space, PROFILE_START_TIME), task_env_time(space, PROFILE_STOP_TIME)) {
        if stop > start {
            return u64::try_from(i128::from(stop) - i128::from(start)).unwrap_or(u64::MAX);
        }
    }
    let mut span: Option<(i128, i128)> = None;
    for line in space.planes.iter().flat_map(|p| &p.lines) {
        for e in &line.events {
            let start = start_ps(line, e);
            let end = start + i128::from(e.duration_ps.max(0));
            span = Some(span.map_or((start, end), |(a, b)| (a.min(start), b.max(end))));
        }
    }
    span.map_or(0, |(a, b)| ps_to_ns(b - a))
}

/// Where `e` starts, ps on the space's time base.
fn start_ps(line: &XLine, e: &XEvent) -> i128 {
    i128::from(line.timestamp_ns) * 1000 + i128::from(e.offset_ps())
}

/// ps to whole ns, clamped to u64.
fn ps_to_ns(ps: i128) -> u64 {
    u64::try_from(ps.max(0) / 1000).unwrap_or(u64::MAX)
}

fn line_name(line: &XLine) -> &str {
    if line.display_name.is_empty() { &line.name } else { &line.display_name }
}

fn event_name<'a>(plane: &'a XPlane, e: &XEvent) -> &'a str {
    plane.event_metadata.get(&e.metadata_id).map_or("", |m| if m.display_name.is_empty() { &m.name } else { &m.display_name })
}

fn stat_id(plane: &XPlane, name: &str) -> Option<i64> {
    plane.stat_metadata.values().find(|m| m.name == name).map(|m| m.id)
}

fn uint_value(s: &XStat) -> Option<u64> {
    match s.value {
        Some(x_stat::Value::Uint64Value(v)) => Some(v),
        // CAST: a flow id written signed is the same bits.
        Some(x_stat::Value::Int64Value(v)) => Some(v as u64),
        _ => None,
    }
}

fn uint_stat(stats: &[XStat], id: i64) -> Option<u64> {
    stats.iter().find(|s| s.metadata_id == id).and_then(uint_value)
}

/// A string stat `id` among `stats`, inline or as a `ref_value`.
fn str_stat<'a>(plane: &'a XPlane, mut stats: impl Iterator<Item = &'a XStat>, id: Option<i64>) -> Option<&'a str> {
    let id = id?;
    match &stats.find(|s| s.metadata_id == id)?.value {
        Some(x_stat::Value::StrValue(s)) => Some(s),
        // CAST: stat metadata ids are positive; a damaged one finds nothing.
        Some(x_stat::Value::RefValue(r)) => plane.stat_metadata.get(&(*r as i64)).map(|m| m.name.as_str()),
        _ => None,
    }
}

/// The number after `key` among the whitespace-separated words of `details` (0 if none).
fn details_number(details: &str, key: &str) -> u64 {
    details.split_whitespace().find_map(|w| w.strip_prefix(key)?.parse().ok()).unwrap_or(0)
}

#[cfg(test)]
mod tests;
