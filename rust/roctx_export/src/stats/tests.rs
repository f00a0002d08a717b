//! Hand-computed fixtures: every number below is worked out from the events in the comments.
use super::*;
use crate::xplane::{task_env_plane, FLOW_CONSUMER_STAT, FLOW_PRODUCER_STAT, NVTX_RANGE_STAT};
use crate::xplane_proto::{x_event, XEventMetadata, XStatMetadata};

const US: i64 = 1_000_000; // ps

/// Builds a plane: named event metadata on first use, stat metadata by name.
struct PlaneBuilder(XPlane);

impl PlaneBuilder {
    fn new(name: &str) -> PlaneBuilder {
        PlaneBuilder(XPlane { name: name.to_owned(), ..XPlane::default() })
    }
    fn stat(&mut self, name: &str) -> i64 {
        if let Some(id) = stat_id(&self.0, name) {
            return id;
        }
        let id = self.0.stat_metadata.len() as i64 + 1;
        self.0.stat_metadata.insert(id, XStatMetadata { id, name: name.to_owned(), description: String::new() });
        id
    }
    fn meta(&mut self, name: &str) -> i64 {
        if let Some(m) = self.0.event_metadata.values().find(|m| m.name == name) {
            return m.id;
        }
        let id = self.0.event_metadata.len() as i64 + 1;
        self.0.event_metadata.insert(id, XEventMetadata { id, name: name.to_owned(), ..XEventMetadata::default() });
        id
    }
    fn line(&mut self, name: &str) -> usize {
        self.0.lines.push(XLine { id: self.0.lines.len() as i64 + 1, name: name.to_owned(), ..XLine::default() });
        self.0.lines.len() - 1
    }
    /// An event `name` on line `line` from `start_us` for `dur_us`, with `stats` (name, value).
    fn event(&mut self, line: usize, name: &str, start_us: i64, dur_us: i64, stats: &[(&str, x_stat::Value)]) {
        let metadata_id = self.meta(name);
        let stats = stats.iter().map(|(n, v)| XStat { metadata_id: self.stat(n), value: Some(v.clone()) }).collect();
        self.0.lines[line].events.push(XEvent { metadata_id, data: Some(x_event::Data::OffsetPs(start_us * US)), duration_ps: dur_us * US, stats });
    }
}

fn flow(id: u64) -> x_stat::Value {
    x_stat::Value::Uint64Value(id)
}

fn text(s: &str) -> x_stat::Value {
    x_stat::Value::StrValue(s.to_owned())
}

/// A 1 ms session. Thread 7: `step` 0-500 us launching `add` and a copy itself, with two
/// nested `fwd` (100-200, 250-300) each launching a `gemm`, and a mark; thread 8: `step` 0-300
/// launching a longer `gemm` on another stream. A memset no range launched. An op-scope line
/// and a line of events without details, which count for nothing.
fn fixture() -> XSpace {
    let mut cpu = PlaneBuilder::new("/host:CPU");
    let t7 = cpu.line("Host Threads/7/ROCTX");
    cpu.event(t7, "step", 0, 500, &[(FLOW_PRODUCER_STAT, flow(100))]);
    cpu.event(t7, "fwd", 100, 100, &[(FLOW_PRODUCER_STAT, flow(101))]);
    cpu.event(t7, "tick", 50, 0, &[]);
    cpu.event(t7, "fwd", 250, 50, &[(FLOW_PRODUCER_STAT, flow(102))]);
    let t8 = cpu.line("Host Threads/8/ROCTX");
    cpu.event(t8, "step", 0, 300, &[(FLOW_PRODUCER_STAT, flow(103))]);
    // A plain host thread line (XLA's TraceMe): not a ROCTX range.
    let host = cpu.line("python3");
    cpu.event(host, "TraceMe", 0, 900, &[]);

    let mut gpu = PlaneBuilder::new("/device:GPU:0");
    let s7 = gpu.line("Stream #7(Compute)");
    let k = |c| [("kernel_details", text("grid:1,1,1 block:64,1,1")), (FLOW_CONSUMER_STAT, flow(c))];
    gpu.event(s7, "gemm", 110, 20, &k(101));
    gpu.event(s7, "add", 140, 5, &k(100));
    gpu.event(s7, "gemm", 260, 20, &k(102));
    let s9 = gpu.line("Stream #9(Compute,MemcpyH2D,Memset)");
    gpu.event(s9, "gemm", 120, 30, &k(103));
    gpu.event(s9, "MemcpyH2D", 10, 10, &[("memcpy_details", text("kind_src:pinned kind_dst:device size:1000000 dest:0 async:1")), (FLOW_CONSUMER_STAT, flow(100))]);
    gpu.event(s9, "Memset 1", 30, 1, &[("Memset_details", text("kind:device num_bytes:4096 async:1"))]);
    let ops = gpu.line("Op scopes (Stream #7)");
    gpu.event(ops, "MUL_MAT", 110, 20, &[("kernel_details", text("never on an op event")), ("hlo_op", text("MUL_MAT"))]);
    let derived = gpu.line("XLA Ops");
    gpu.event(derived, "fusion.1", 110, 20, &[]);

    XSpace { planes: vec![task_env_plane(5_000_000, 6_000_000), cpu.0, gpu.0], ..XSpace::default() }
}

fn stats(space: &XSpace, options: Options) -> Report {
    let mut s = Stats::new(options);
    s.add(space);
    s.report()
}

fn summary(count: u64, total_us: u64, median_us: f64, min_us: u64, max_us: u64) -> Summary {
    Summary { count, total_ns: total_us * 1000, avg_ns: total_us as f64 * 1000.0 / count as f64, median_ns: median_us * 1000.0, min_ns: min_us * 1000, max_ns: max_us * 1000 }
}

#[test]
fn ranges_count_their_whole_duration_nested_time_in_every_enclosing_row_as_nsys_does() {
    let r = stats(&fixture(), Options::default());
    assert_eq!(r.traced_ns, 1_000_000, "profile_start_time to profile_stop_time");
    assert_eq!(r.marks, 1);
    let rows: Vec<(&str, Summary, f64)> = r.ranges.iter().map(|x| (x.range.as_str(), x.time, x.traced_pct)).collect();
    assert_eq!(
        rows,
        [
            // 500 + 300 us of 1 ms traced: the nested fwd time is inside step's too.
            ("step", summary(2, 800, 400.0, 300, 500), 80.0),
            ("fwd", summary(2, 150, 75.0, 50, 100), 15.0),
        ]
    );
}

#[test]
fn kernels_are_the_events_with_kernel_details_by_name_op_scopes_and_derived_lines_left_out() {
    let r = stats(&fixture(), Options::default());
    let rows: Vec<(&str, Summary)> = r.kernels.iter().map(|x| (x.kernel.as_str(), x.time)).collect();
    // gemm: 20 + 20 us on stream 7 and 30 on stream 9.
    assert_eq!(rows, [("gemm", summary(3, 70, 20.0, 20, 30)), ("add", summary(1, 5, 5.0, 5, 5))]);
    assert!((r.kernels[0].gpu_pct - 70.0 / 75.0 * 100.0).abs() < 1e-9);
    assert!((r.kernels[1].gpu_pct - 5.0 / 75.0 * 100.0).abs() < 1e-9);
}

#[test]
fn copies_and_sets_have_their_bytes_and_bandwidth() {
    let r = stats(&fixture(), Options::default());
    let rows: Vec<(&str, &str, u64, Summary, f64)> = r.copies.iter().map(|c| (c.kind.as_str(), c.operation.as_str(), c.bytes, c.time, c.gbps)).collect();
    assert_eq!(
        rows,
        [
            // 1 MB in 10 us: 100 GB/s; 4096 B in 1 us: 4.096 GB/s.
            ("memcpy", "MemcpyH2D", 1_000_000, summary(1, 10, 10.0, 10, 10), 100.0),
            ("memset", "Memset device", 4096, summary(1, 1, 1.0, 1, 1), 4.096),
        ]
    );
}

#[test]
fn range_gpu_time_is_exclusive_for_the_launching_range_and_inclusive_up_its_nest() {
    let r = stats(&fixture(), Options::default());
    let step = r.range_gpu.iter().find(|x| x.range == "step").unwrap();
    // Thread 7's step: itself add 5 + copy 10 = 15 us; with its fwds' gemms 15 + 20 + 20 = 55 us
    // in 4 ops, projected 10-280 us = 270. Thread 8's: one gemm of 30 us, projected 30.
    assert_eq!(
        *step,
        RangeGpuRow {
            group: String::new(),
            range: "step".into(),
            instances: 2,
            instances_with_gpu: 2,
            gpu_ops: 5,
            gpu_inclusive_ns: 85_000,
            gpu_exclusive_ns: 45_000,
            projected: Summary { count: 2, total_ns: 300_000, avg_ns: 150_000.0, median_ns: 150_000.0, min_ns: 30_000, max_ns: 270_000 },
            range_total_ns: 800_000,
        }
    );
    let fwd = r.range_gpu.iter().find(|x| x.range == "fwd").unwrap();
    assert_eq!((fwd.instances, fwd.gpu_ops, fwd.gpu_inclusive_ns, fwd.gpu_exclusive_ns, fwd.projected.total_ns, fwd.range_total_ns), (2, 2, 40_000, 40_000, 40_000, 150_000));
    assert_eq!(r.range_gpu[0].range, "step", "sorted by inclusive GPU time");
    assert_eq!(r.gpu_ops_without_range, 1, "the memset");
}

#[test]
fn per_thread_splits_ranges_by_thread_line_and_gpu_work_by_stream_line() {
    let r = stats(&fixture(), Options { per_thread: true, ..Options::default() });
    let ranges: Vec<(&str, &str, u64)> = r.ranges.iter().map(|x| (x.group.as_str(), x.range.as_str(), x.time.total_ns)).collect();
    assert_eq!(ranges, [("Host Threads/7/ROCTX", "step", 500_000), ("Host Threads/7/ROCTX", "fwd", 150_000), ("Host Threads/8/ROCTX", "step", 300_000)]);
    let kernels: Vec<(&str, &str, u64, f64)> = r.kernels.iter().map(|x| (x.group.as_str(), x.kernel.as_str(), x.time.total_ns, x.gpu_pct)).collect();
    let s7 = "/device:GPU:0 Stream #7(Compute)";
    let s9 = "/device:GPU:0 Stream #9(Compute,MemcpyH2D,Memset)";
    assert_eq!(kernels[0], (s7, "gemm", 40_000, 40.0 / 45.0 * 100.0));
    assert_eq!(kernels[1].0, s7);
    assert_eq!(kernels[2], (s9, "gemm", 30_000, 100.0), "a share of its own stream's time");
    let step7 = r.range_gpu.iter().find(|x| x.group == "Host Threads/7/ROCTX" && x.range == "step").unwrap();
    assert_eq!((step7.instances, step7.gpu_inclusive_ns, step7.projected.max_ns), (1, 55_000, 270_000));
}

#[test]
fn fold_payload_joins_labels_that_differ_only_in_an_xla_payload() {
    assert_eq!(fold_payload("Thunk:#hlo_op=fusion.1,hlo_module=m#"), "Thunk:");
    assert_eq!(fold_payload("plain"), "plain");
    assert_eq!(fold_payload("a#b"), "a#b", "no closing #: not a payload");
    assert_eq!(fold_payload("#"), "#");
    let mut cpu = PlaneBuilder::new("/host:CPU");
    let l = cpu.line("Host Threads/1/ROCTX");
    cpu.event(l, "Thunk:#hlo_op=a#", 0, 10, &[]);
    cpu.event(l, "Thunk:#hlo_op=b#", 20, 30, &[]);
    let space = XSpace { planes: vec![cpu.0], ..XSpace::default() };
    assert_eq!(stats(&space, Options::default()).ranges.len(), 2);
    let folded = stats(&space, Options { fold_payload: true, ..Options::default() });
    assert_eq!(folded.ranges.len(), 1);
    assert_eq!((folded.ranges[0].range.as_str(), folded.ranges[0].time.count, folded.ranges[0].time.total_ns), ("Thunk:", 2, 40_000));
    // No Task Environment: the traced time is the events' span, 0-50 us.
    assert_eq!(folded.traced_ns, 50_000);
}

#[test]
fn a_label_without_a_flow_id_still_gets_its_gpu_time_and_overlapping_ranges_are_not_nested() {
    let mut cpu = PlaneBuilder::new("/host:ROCTX");
    let l = cpu.line("Host Threads/3/ROCTX");
    // A start/end range overlapping another without being inside it: 0-100 and 50-150.
    cpu.event(l, "a", 0, 100, &[(FLOW_PRODUCER_STAT, flow(1))]);
    cpu.event(l, "b", 50, 100, &[(FLOW_PRODUCER_STAT, flow(2))]);
    let mut gpu = PlaneBuilder::new("/device:GPU:1");
    let s = gpu.line("Stream #1");
    gpu.event(s, "k", 60, 10, &[("kernel_details", text("")), (FLOW_CONSUMER_STAT, flow(2))]);
    gpu.event(s, "k", 80, 10, &[("kernel_details", text("")), (NVTX_RANGE_STAT, text("c"))]);
    let r = stats(&XSpace { planes: vec![cpu.0, gpu.0], ..XSpace::default() }, Options::default());
    let a = r.range_gpu.iter().find(|x| x.range == "a").unwrap();
    assert_eq!((a.gpu_ops, a.gpu_inclusive_ns), (0, 0), "b is not inside a");
    let b = r.range_gpu.iter().find(|x| x.range == "b").unwrap();
    assert_eq!((b.gpu_ops, b.gpu_inclusive_ns, b.gpu_exclusive_ns), (1, 10_000, 10_000));
    let c = r.range_gpu.iter().find(|x| x.range == "c").unwrap();
    assert_eq!((c.instances, c.gpu_ops, c.gpu_inclusive_ns, c.projected.count), (0, 1, 10_000, 0), "by label: no instance, no projection");
}

#[test]
fn several_spaces_add_up_and_an_empty_space_has_empty_reports() {
    let mut s = Stats::new(Options::default());
    s.add(&fixture());
    s.add(&fixture());
    s.add(&XSpace::default());
    let r = s.report();
    assert_eq!((r.spaces, r.traced_ns, r.marks), (3, 2_000_000, 2));
    assert_eq!(r.ranges[0].time.count, 4);
    assert_eq!(r.kernels[0].time.total_ns, 140_000);
    let empty = stats(&XSpace::default(), Options::default());
    assert!(empty.ranges.is_empty() && empty.kernels.is_empty() && empty.copies.is_empty() && empty.range_gpu.is_empty());
    assert_eq!(empty.traced_ns, 0);
}

#[test]
fn a_deep_nest_credits_only_the_nearest_levels_and_says_so() {
    let mut cpu = PlaneBuilder::new("/host:CPU");
    let l = cpu.line("Host Threads/1/ROCTX");
    let depth = MAX_CREDITED_DEPTH as i64 + 10;
    for i in 0..depth {
        let stats = if i == depth - 1 { vec![(FLOW_PRODUCER_STAT, flow(9))] } else { vec![] };
        cpu.event(l, &format!("r{i}"), i, 10_000 - 2 * i, &stats);
    }
    let mut gpu = PlaneBuilder::new("/device:GPU:0");
    let s = gpu.line("Stream #1");
    gpu.event(s, "k", 5000, 1, &[("kernel_details", text("")), (FLOW_CONSUMER_STAT, flow(9))]);
    let r = stats(&XSpace { planes: vec![cpu.0, gpu.0], ..XSpace::default() }, Options::default());
    let credited = r.range_gpu.iter().filter(|x| x.gpu_ops == 1).count();
    assert_eq!(credited, MAX_CREDITED_DEPTH);
    assert!(r.notes.iter().any(|n| n.contains("more than 256 levels")), "{:?}", r.notes);
}

#[test]
fn damaged_input_never_panics_and_bad_durations_are_counted() {
    let mut gpu = PlaneBuilder::new("/device:GPU:0");
    let s = gpu.line("Stream #1");
    gpu.event(s, "k", 0, -5, &[("kernel_details", text(""))]);
    gpu.event(s, "copy", 0, 5, &[("memcpy_details", x_stat::Value::RefValue(999))]);
    gpu.event(s, "copy2", 0, 5, &[("memcpy_details", text("size:notanumber"))]);
    gpu.0.lines[0].events.push(XEvent { metadata_id: 12345, data: None, duration_ps: i64::MAX, stats: vec![XStat { metadata_id: 777, value: None }] });
    gpu.0.lines[0].timestamp_ns = i64::MAX;
    let mut cpu = PlaneBuilder::new("/host:CPU");
    let l = cpu.line("x/ROCTX");
    cpu.event(l, "r", i64::MAX / US, -1, &[(FLOW_PRODUCER_STAT, x_stat::Value::DoubleValue(1.5))]);
    let r = stats(&XSpace { planes: vec![cpu.0, gpu.0], ..XSpace::default() }, Options::default());
    assert!(r.notes.iter().any(|n| n.contains("2 events with a negative duration")), "{:?}", r.notes);
    // A dangling ref is no details; unparsable sizes are 0 bytes.
    assert_eq!(r.copies.iter().map(|c| c.bytes).sum::<u64>(), 0);
}
