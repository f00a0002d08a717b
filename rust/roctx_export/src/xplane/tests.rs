use super::*;
use crate::{Event, Trace};

fn line(id: i64, name: &str, n_events: usize) -> XLine {
    XLine {
        id,
        name: name.to_owned(),
        timestamp_ns: 1000,
        events: (0..n_events).map(|i| XEvent { metadata_id: 1, data: Some(x_event::Data::OffsetPs(i as i64 * 10)), duration_ps: 5, stats: vec![] }).collect(),
        ..XLine::default()
    }
}

fn plane(name: &str, lines: Vec<XLine>) -> XPlane {
    let mut p = XPlane { name: name.to_owned(), lines, ..XPlane::default() };
    p.event_metadata.insert(1, XEventMetadata { id: 1, name: format!("ev_{name}"), ..XEventMetadata::default() });
    p
}

fn ids(p: &XPlane) -> BTreeSet<i64> {
    p.lines.iter().map(|l| l.id).collect()
}

// Upstream's ConvertXPlaneToTraceEvents.Convert: python {10, 15}, CUPTI {10, 20}, NVTX {10, 50}.
#[test]
fn upstream_merge_remaps_only_colliding_marker_lines_and_sorts_by_name() {
    let mut space = XSpace {
        planes: vec![
            plane("/host:python-tracer", vec![line(10, "thread/10", 2), line(15, "thread/15", 1)]),
            plane("/host:CUPTI", vec![line(10, "thread/10", 1), line(20, "thread/20", 1)]),
            plane(NVTX_PLANE, vec![line(10, "thread/10/NVTX", 1), line(50, "thread/50/NVTX", 1)]),
        ],
        ..XSpace::default()
    };
    merge_host_planes(&mut space);
    assert_eq!(space.planes.len(), 1);
    let host = &space.planes[0];
    assert_eq!(host.name, HOST_PLANE);
    assert_eq!(ids(host), BTreeSet::from([10, 15, 20, 50, 1 << 32]));
    let line10 = host.lines.iter().find(|l| l.id == 10).unwrap();
    assert_eq!(line10.events.len(), 3);
    let names: Vec<_> = host.lines.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["thread/10", "thread/10/NVTX", "thread/15", "thread/20", "thread/50/NVTX"]);
    assert_eq!(host.lines.iter().find(|l| l.name == "thread/10/NVTX").unwrap().id, 1 << 32);
    assert_eq!(host.lines.iter().find(|l| l.name == "thread/50/NVTX").unwrap().id, 50);
}

// ROCm/xla's RoctxPlaneMergedWithLineIdRemapping.
#[test]
fn colliding_roctx_line_moves_into_the_roctx_id_range_and_only_host_cpu_remains() {
    let mut space = XSpace {
        planes: vec![
            plane(HOST_PLANE, vec![line(10, "Host Threads/10", 2)]),
            plane(ROCTX_PLANE, vec![line(10, "Host Threads/10/ROCTX", 1), line(60, "Host Threads/60/ROCTX", 1)]),
        ],
        ..XSpace::default()
    };
    merge_host_planes(&mut space);
    assert_eq!(space.planes.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), [HOST_PLANE]);
    let host = &space.planes[0];
    let roctx10 = host.lines.iter().find(|l| l.name == "Host Threads/10/ROCTX").unwrap();
    assert!((ROCTX_LINE_ID_START..3 << 32).contains(&roctx10.id));
    assert_eq!(host.lines.iter().find(|l| l.name == "Host Threads/10").unwrap().id, 10);
    assert_eq!(host.lines.iter().find(|l| l.name == "Host Threads/60/ROCTX").unwrap().id, 60);
}

#[test]
fn planes_with_the_same_name_merge_into_the_first() {
    let mut space = XSpace { planes: vec![plane("/device:GPU:0", vec![line(1, "Stream #1", 1)]), plane("/device:GPU:0", vec![line(2, "Stream #2", 1)])], ..XSpace::default() };
    merge_planes_with_same_names(&mut space);
    assert_eq!(space.planes.len(), 1);
    assert_eq!(ids(&space.planes[0]), BTreeSet::from([1, 2]));
}

// The case XLA's own remap gets wrong in XProf (xspace_and_xprof.md 8, U2): an NVTX line at
// 1<<32 and a ROCTX line at 2<<32 both render as row 0; with thread 10 a (2<<32)+10 line would
// render in row 10.
#[test]
fn every_line_gets_its_own_row_and_roctx_rows_follow_their_thread() {
    let mut space = XSpace {
        planes: vec![
            plane(HOST_PLANE, vec![line(10, "tf_XLAEigen/10", 2), line(50, "Host Threads/50", 1), line(11, "python", 1)]),
            plane(NVTX_PLANE, vec![line(10, "thread/10/NVTX", 1)]),
            plane(ROCTX_PLANE, vec![line(10, "Host Threads/10/ROCTX", 1), line(50, "Host Threads/50/ROCTX", 1), line(77, "Host Threads/77/ROCTX", 1)]),
        ],
        ..XSpace::default()
    };
    merge_host_planes(&mut space);
    let host = &space.planes[0];
    let rows: HashSet<u32> = host.lines.iter().map(row_key).collect();
    assert_eq!(rows.len(), host.lines.len(), "row collision");
    assert!(validate(&space).iter().all(|i| !i.error), "{:?}", validate(&space));
    let row_of = |name: &str| row_key(host.lines.iter().find(|l| l.name == name).unwrap());
    assert_eq!(row_of("Host Threads/10/ROCTX"), row_of("tf_XLAEigen/10") + 1);
    assert_eq!(row_of("Host Threads/50/ROCTX"), row_of("Host Threads/50") + 1);
    // Lines are stored in row order.
    let keys: Vec<u32> = host.lines.iter().map(row_key).collect();
    assert!(keys.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn validate_reports_what_xprof_would_draw_wrong() {
    let mut p = plane(HOST_PLANE, vec![line(5, "a", 1), line((1 << 32) + 5, "b", 1)]);
    p.lines[1].events[0].stats.push(XStat { metadata_id: 9, value: Some(x_stat::Value::RefValue(99)) });
    let issues = validate(&XSpace { planes: vec![p], ..XSpace::default() });
    let text: Vec<_> = issues.iter().map(|i| i.message.as_str()).collect();
    assert!(text.iter().any(|m| m.contains("share XProf row 5")), "{text:?}");
    assert!(text.iter().any(|m| m.contains("missing metadata 9")), "{text:?}");
    assert!(text.iter().any(|m| m.contains("dangling ref_value 99")), "{text:?}");
}

fn sample_trace() -> Trace {
    let mut t = Trace::new("host0", 1_000_000, 2_000_000);
    t.realtime_offset_ns = 5_000;
    let outer = t.label("outer");
    let inner = t.label("inner");
    let mark = t.label("mark");
    t.events.push(Event { kind: EventKind::Range, tid: 4242, end_tid: 4242, start_ns: 1_005_000, end_ns: 1_085_000, label: outer, depth: 0, seq: 0 });
    t.events.push(Event { kind: EventKind::Range, tid: 4242, end_tid: 4242, start_ns: 1_015_000, end_ns: 1_045_000, label: inner, depth: 0, seq: 0 });
    t.events.push(Event { kind: EventKind::Mark, tid: 4242, end_tid: 4242, start_ns: 1_050_000, end_ns: 1_050_000, label: mark, depth: 0, seq: 0 });
    t.events.push(Event { kind: EventKind::Range, tid: 7, end_tid: 7, start_ns: 1_100_000, end_ns: 1_200_000, label: inner, depth: 0, seq: 0 });
    t.thread_names.insert(4242, "main".to_owned());
    t.warnings.push("roctx_utils: 3 events dropped".to_owned());
    t
}

#[test]
fn roctx_plane_encodes_lines_events_and_nvtx_range_refs() {
    let t = sample_trace();
    let p = roctx_plane(&t);
    assert_eq!(p.name, ROCTX_PLANE);
    let l = p.lines.iter().find(|l| l.id == 4242).unwrap();
    assert_eq!(l.name, "Host Threads/4242/ROCTX");
    assert_eq!(l.display_name, "Host Threads/4242/ROCTX (main)");
    assert_eq!(l.timestamp_ns, 0); // relative to the session start, as XLA's final files are
    let names: Vec<_> = l.events.iter().map(|e| p.event_metadata[&e.metadata_id].name.as_str()).collect();
    assert_eq!(names, ["outer", "inner", "mark"]);
    assert_eq!((l.events[0].offset_ps(), l.events[0].duration_ps), (5_000_000, 80_000_000));
    assert_eq!(l.events[2].duration_ps, 0);
    for e in &l.events {
        let nvtx = &e.stats[0];
        assert_eq!(p.stat_metadata[&nvtx.metadata_id].name, NVTX_RANGE_STAT);
        let Some(x_stat::Value::RefValue(r)) = nvtx.value else { panic!("not a ref") };
        assert_eq!(p.stat_metadata[&(r as i64)].name, p.event_metadata[&e.metadata_id].name);
    }
    assert_eq!(nesting_depth(l), 2);
}

#[test]
fn encode_decode_round_trip_is_lossless() {
    let space = standalone_xspace(&sample_trace());
    let bytes = space.encode_to_vec();
    assert_eq!(XSpace::decode(bytes.as_slice()).unwrap(), space);
    assert_eq!(space.warnings, ["roctx_utils: 3 events dropped"]);
    assert_eq!(space.hostnames, ["host0"]);
}

#[test]
fn merging_into_existing_bytes_keeps_the_hosts_lines() {
    let host = XSpace { planes: vec![plane(HOST_PLANE, vec![line(4242, "Host Threads/4242", 3)])], ..XSpace::default() };
    let merged = merge_into_bytes(&host.encode_to_vec(), &sample_trace()).unwrap();
    let space = XSpace::decode(merged.as_slice()).unwrap();
    let planes: Vec<_> = space.planes.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(planes, [TASK_ENV_PLANE, HOST_PLANE]); // the host had no time base: ours is recorded
    let host = space.planes.iter().find(|p| p.name == HOST_PLANE).unwrap();
    let names: Vec<_> = host.lines.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["Host Threads/4242", "Host Threads/4242/ROCTX", "Host Threads/7/ROCTX"]);
    assert!(validate(&space).is_empty(), "{:?}", validate(&space));
    assert!(merge_into_bytes(b"\xff\xff\xff", &sample_trace()).is_err());
}

#[test]
fn merging_a_roctx_logdir_into_an_xla_capture_keeps_roctx_rows_apart() {
    let ours = standalone_xspace(&sample_trace());
    let xla = XSpace { planes: vec![plane(HOST_PLANE, vec![line(4242, "Host Threads/4242", 3), line(7, "python", 1)])], hostnames: vec!["host0".into()], ..XSpace::default() };
    let merged = merge_spaces(vec![xla, ours]);
    assert_eq!(merged.planes.iter().filter(|p| p.name == HOST_PLANE).count(), 1);
    let host = merged.planes.iter().find(|p| p.name == HOST_PLANE).unwrap();
    let thread = host.lines.iter().find(|l| l.name == "Host Threads/4242").unwrap();
    assert_eq!(thread.events.len(), 3, "ROCTX events folded into the thread line");
    let roctx = host.lines.iter().find(|l| l.name == "Host Threads/4242/ROCTX").unwrap();
    assert_eq!(roctx.events.len(), 3);
    assert_eq!(row_key(roctx), row_key(thread) + 1);
    assert!(validate(&merged).iter().all(|i| !i.error), "{:?}", validate(&merged));
    assert_eq!(merged.hostnames, ["host0"]);
}

#[test]
fn standalone_fast_path_equals_the_general_merge() {
    let t = sample_trace();
    let mut general = XSpace { planes: vec![roctx_plane(&t)], hostnames: vec![t.hostname.clone()], warnings: t.warnings.clone(), ..XSpace::default() };
    merge_host_planes(&mut general);
    let fast = standalone_xspace(&t);
    let lines = |s: &XSpace| s.planes[0].lines.iter().map(|l| (l.id, l.display_id, l.name.clone(), l.events.len())).collect::<Vec<_>>();
    assert_eq!(lines(&fast), lines(&general));
    assert_eq!(fast.planes[0].name, general.planes[0].name);
}

#[test]
fn extreme_timestamps_saturate_instead_of_overflowing() {
    let mut a = line(1, "t", 1);
    a.timestamp_ns = i64::MAX;
    a.events[0].data = Some(x_event::Data::OffsetPs(i64::MAX - 1));
    a.events[0].duration_ps = i64::MAX;
    let mut b = line(1, "t", 1);
    b.timestamp_ns = i64::MIN;
    let mut space = XSpace { planes: vec![plane(HOST_PLANE, vec![a.clone()]), plane("/host:CUPTI", vec![b])], ..XSpace::default() };
    merge_host_planes(&mut space);
    assert!(nesting_depth(&a) >= 1);
}

#[test]
fn standalone_files_count_from_the_session_start_and_record_it() {
    let t = sample_trace();
    let space = standalone_xspace(&t);
    assert_eq!(time_base(&space), Some(1_005_000)); // start_ns + realtime offset
    let host = &space.planes[0];
    assert!(host.lines.iter().all(|l| l.timestamp_ns == 0));
    assert!(validate(&space).iter().all(|i| !i.error));
}

#[test]
fn merging_follows_the_hosts_time_base() {
    let t = sample_trace(); // wall start 1_005_000
    // A normalized XLA file whose session started 5_000 ns before ours.
    let mut xla = XSpace { planes: vec![plane(HOST_PLANE, vec![line(1, "Host Threads/1", 1)]), task_env_plane(1_000_000, 3_000_000)], ..XSpace::default() };
    let merged = XSpace::decode(merge_into_bytes(&xla.encode_to_vec(), &t).unwrap().as_slice()).unwrap();
    let roctx = merged.planes.iter().flat_map(|p| &p.lines).find(|l| l.name == "Host Threads/4242/ROCTX").unwrap();
    assert_eq!(roctx.timestamp_ns, 5_000);
    // An XLA space before normalization: absolute wall-clock lines.
    xla.planes.pop();
    xla.planes[0].lines[0].timestamp_ns = 1_800_000_000_000_000_000;
    let merged = XSpace::decode(merge_into_bytes(&xla.encode_to_vec(), &t).unwrap().as_slice()).unwrap();
    let roctx = merged.planes.iter().flat_map(|p| &p.lines).find(|l| l.name == "Host Threads/4242/ROCTX").unwrap();
    assert_eq!(roctx.timestamp_ns, 1_005_000);
}

#[test]
fn merge_spaces_aligns_inputs_on_the_first_session_start() {
    let ours = standalone_xspace(&sample_trace()); // starts at wall 1_005_000, lines at 0
    let xla = XSpace { planes: vec![plane(HOST_PLANE, vec![line(4242, "Host Threads/4242", 1)]), task_env_plane(1_000_000, 2_000_000)], ..XSpace::default() };
    let merged = merge_spaces(vec![xla, ours]);
    assert_eq!(merged.planes.iter().filter(|p| p.name == TASK_ENV_PLANE).count(), 1);
    assert_eq!(time_base(&merged), Some(1_000_000));
    let roctx = merged.planes.iter().flat_map(|p| &p.lines).find(|l| l.name == "Host Threads/4242/ROCTX").unwrap();
    assert_eq!(roctx.timestamp_ns, 5_000);
}

#[test]
fn merging_into_a_space_that_already_has_a_roctx_plane_keeps_both() {
    let host = XSpace {
        planes: vec![plane(HOST_PLANE, vec![line(4242, "Host Threads/4242", 1)]), plane(ROCTX_PLANE, vec![line(99, "Host Threads/99/ROCTX", 2)])],
        ..XSpace::default()
    };
    let merged = XSpace::decode(merge_into_bytes(&host.encode_to_vec(), &sample_trace()).unwrap().as_slice()).unwrap();
    let host = merged.planes.iter().find(|p| p.name == HOST_PLANE).unwrap();
    let events = |name: &str| host.lines.iter().find(|l| l.name == name).map(|l| l.events.len());
    assert_eq!(events("Host Threads/99/ROCTX"), Some(2));
    assert_eq!(events("Host Threads/4242/ROCTX"), Some(3));
    assert!(!merged.planes.iter().any(|p| p.name == ROCTX_PLANE));
    assert!(validate(&merged).iter().all(|i| !i.error), "{:?}", validate(&merged));
}

/// `n` one-event lines `Host Threads/<i>` with ids 1..=n, all naming one event metadata.
fn many_lines(name: &str, n: i64) -> XPlane {
    plane(name, (1..=n).map(|i| line(i, &format!("Host Threads/{i}"), 1)).collect())
}

// Was quadratic: each src line looked its dst line up with a linear scan (100 k lines: 28 s in
// release), and each ROCTX line its thread. Now indexed; this runs in well under a second.
#[test]
fn merging_100k_lines_keeps_every_line_and_gives_each_its_own_row() {
    let n = 100_000;
    let mut roctx = plane(ROCTX_PLANE, (1..=n).step_by(2).map(|i| line(i, &roctx_line_name(i as u64), 2)).collect());
    roctx.lines.push(line(n + 1, &roctx_line_name(n as u64 + 1), 1)); // no thread line
    let merged = merge_spaces(vec![XSpace { planes: vec![many_lines(HOST_PLANE, n), roctx], ..XSpace::default() }]);
    let host = merged.planes.iter().find(|p| p.name == HOST_PLANE).unwrap();
    assert_eq!(host.lines.len() as i64, n + n / 2 + 1);
    let rows: HashSet<u32> = host.lines.iter().map(row_key).collect();
    assert_eq!(rows.len(), host.lines.len(), "row collision");
    let row_of = |name: &str| row_key(host.lines.iter().find(|l| l.name == name).unwrap());
    assert_eq!(row_of("Host Threads/99999/ROCTX"), row_of("Host Threads/99999") + 1);
    assert_eq!(row_of("Host Threads/1/ROCTX"), row_of("Host Threads/1") + 1);
    // Colliding ROCTX lines moved into the ROCTX id range, in order.
    let moved = host.lines.iter().find(|l| l.name == "Host Threads/3/ROCTX").unwrap();
    assert_eq!(moved.id, ROCTX_LINE_ID_START + 1);
    assert_eq!(moved.events.len(), 2);
    assert!(validate(&merged).iter().all(|i| !i.error), "{:?}", validate(&merged));
}

#[test]
fn merging_100k_planes_of_one_name_keeps_every_line() {
    let n = 100_000;
    let planes: Vec<XPlane> = (1..=n).map(|i| plane("/device:GPU:0", vec![line(i % 1000, &format!("Stream #{}", i % 1000), 1)])).collect();
    let mut space = XSpace { planes, ..XSpace::default() };
    merge_planes_with_same_names(&mut space);
    assert_eq!(space.planes.len(), 1);
    let gpu = &space.planes[0];
    assert_eq!(gpu.lines.len(), 1000);
    assert!(gpu.lines.iter().all(|l| l.events.len() == 100));
    assert_eq!(gpu.event_metadata.len(), 1);
    // A merged line's events are sorted by offset.
    assert!(gpu.lines[0].events.windows(2).all(|w| w[0].offset_ps() <= w[1].offset_ps()));
}

// XLA drops empty destination lines at the start of each MergePlanes call: an empty line a
// source brings stays after the last source, and goes when another source follows.
#[test]
fn merging_several_sources_drops_empty_lines_as_one_call_per_source_would() {
    let empty = |id| XLine { id, name: format!("empty {id}"), ..XLine::default() };
    let mut two = XSpace { planes: vec![plane("p", vec![line(1, "a", 1)]), plane("p", vec![empty(5)])], ..XSpace::default() };
    merge_planes_with_same_names(&mut two);
    assert_eq!(two.planes[0].lines.iter().map(|l| l.id).collect::<Vec<_>>(), [1, 5]);
    let mut three = XSpace { planes: vec![plane("p", vec![line(1, "a", 1)]), plane("p", vec![empty(5)]), plane("p", vec![line(2, "b", 1)])], ..XSpace::default() };
    merge_planes_with_same_names(&mut three);
    assert_eq!(three.planes[0].lines.iter().map(|l| l.id).collect::<Vec<_>>(), [1, 2]);
    // An empty line filled by a later line of the same source is kept, with its events.
    let mut refill = XSpace { planes: vec![plane("p", vec![line(1, "a", 1)]), plane("p", vec![empty(5), line(5, "five", 2)]), plane("p", vec![])], ..XSpace::default() };
    merge_planes_with_same_names(&mut refill);
    let five = refill.planes[0].lines.iter().find(|l| l.id == 5).unwrap();
    assert_eq!((five.name.as_str(), five.events.len()), ("five", 2));
}

// Used to compute the next metadata id as max + 1: a panic in debug builds and an id wrapped
// to i64::MIN in release when the plane merged into holds metadata id i64::MAX (the first of
// two planes with one name, as `roctx merge` of two files with, say, a TPU plane each does;
// GPU planes are no longer merged, see merging_two_spaces_keeps_one_filled_gpu_plane_of_a_name).
#[test]
fn metadata_ids_at_i64_max_do_not_overflow_when_planes_merge() {
    let mut first = plane("/device:TPU:0", vec![line(1, "Stream #1", 1)]);
    first.event_metadata.clear();
    first.event_metadata.insert(i64::MAX, XEventMetadata { id: i64::MAX, name: "at max".into(), ..XEventMetadata::default() });
    first.lines[0].events[0].metadata_id = i64::MAX;
    first.stat_metadata.insert(i64::MAX, XStatMetadata { id: i64::MAX, name: "stat at max".into(), description: String::new() });
    first.stat_metadata.insert(1, XStatMetadata { id: 1, name: "taken".into(), description: String::new() });
    let mut second = plane("/device:TPU:0", vec![line(i64::MAX, "Stream max", 1), line(7, "Stream #7", 1)]);
    second.stat_metadata.insert(3, XStatMetadata { id: 3, name: "new stat".into(), description: String::new() });
    second.stat_metadata.insert(4, XStatMetadata { id: 4, name: "ref target".into(), description: String::new() });
    second.lines[1].events[0].stats.push(XStat { metadata_id: 3, value: Some(x_stat::Value::RefValue(4)) });
    let merged = merge_spaces(vec![XSpace { planes: vec![first], ..XSpace::default() }, XSpace { planes: vec![second], ..XSpace::default() }]);
    let gpu = &merged.planes[0];
    // New metadata took the smallest free positive ids, not i64::MIN.
    assert_eq!(gpu.event_metadata.keys().copied().collect::<BTreeSet<_>>(), BTreeSet::from([1, i64::MAX]));
    assert_eq!(gpu.stat_metadata.keys().copied().collect::<BTreeSet<_>>(), BTreeSet::from([1, 2, 3, i64::MAX]));
    let name_of = |e: &XEvent| gpu.event_metadata[&e.metadata_id].name.as_str();
    let line_named = |name: &str| gpu.lines.iter().find(|l| l.name == name).unwrap();
    assert_eq!(name_of(&line_named("Stream #1").events[0]), "at max");
    assert_eq!(name_of(&line_named("Stream max").events[0]), "ev_/device:TPU:0");
    let stat = &line_named("Stream #7").events[0].stats[0];
    assert_eq!(gpu.stat_metadata[&stat.metadata_id].name, "new stat");
    let Some(x_stat::Value::RefValue(r)) = stat.value else { panic!("not a ref") };
    assert_eq!(gpu.stat_metadata[&(r as i64)].name, "ref target");
    assert!(validate(&merged).iter().all(|i| !i.error), "{:?}", validate(&merged));
}

// The candidate id used to be incremented unchecked: a panic (debug) or a wrap to i64::MIN
// (release) once it passed i64::MAX.
#[test]
fn line_id_remapping_that_runs_out_of_ids_keeps_the_line_and_counts_it() {
    let mut marker = plane(ROCTX_PLANE, vec![line(1, "a", 1), line(2, "b", 1), line(3, "c", 1)]);
    let mut occupied = HashSet::from([1, 2, i64::MAX - 1]);
    let stuck = change_occupied_line_ids(&mut marker, &mut occupied, i64::MAX - 1);
    assert_eq!(marker.lines.iter().map(|l| l.id).collect::<Vec<_>>(), [i64::MAX, 2, 3]);
    assert_eq!(stuck, 1);
}

#[test]
fn trace_times_past_i64_max_saturate_instead_of_overflowing() {
    let mut t = Trace::new("h", 1 << 63, u64::MAX);
    t.realtime_offset_ns = i64::MAX;
    let a = t.label("a");
    t.events.push(Event { kind: EventKind::Range, tid: 1, end_tid: 1, start_ns: 0, end_ns: u64::MAX, label: a, depth: 0, seq: 0 });
    t.events.push(Event { kind: EventKind::Range, tid: 1, end_tid: 1, start_ns: u64::MAX, end_ns: u64::MAX, label: a, depth: 0, seq: 0 });
    let space = standalone_xspace(&t);
    let events = &space.planes[0].lines[0].events;
    assert_eq!((events[0].offset_ps(), events[0].duration_ps), (i64::MIN, i64::MAX));
    assert_eq!((events[1].offset_ps(), events[1].duration_ps), (i64::MAX, 0));
}

#[test]
fn validate_counts_a_repeated_problem_once_per_plane() {
    let mut p = plane(HOST_PLANE, (1..=3).map(|i| line(i, &format!("t{i}"), 1000)).collect());
    for l in &mut p.lines {
        for e in &mut l.events {
            e.metadata_id = 9;
            e.stats.push(XStat { metadata_id: 1, value: Some(x_stat::Value::RefValue(u64::MAX)) });
        }
    }
    p.stat_metadata.insert(1, XStatMetadata { id: 1, name: "s".into(), description: String::new() });
    p.lines.push(line(1, "dup", 1));
    let issues = validate(&XSpace { planes: vec![p], ..XSpace::default() });
    let text: Vec<(&str, usize)> = issues.iter().map(|i| (i.message.as_str(), i.count)).collect();
    assert_eq!(
        text,
        [
            ("/host:CPU: 3,000 events on 3 lines reference event metadata that does not exist (first: missing metadata 9 on line \"t1\" at offset 0 ps)", 3000),
            ("/host:CPU: 3,000 ref_value stats on 3 lines name stat metadata that does not exist (first: dangling ref_value 18446744073709551615 on line \"t1\" at offset 0 ps)", 3000),
            ("/host:CPU: duplicate line id 1", 1),
            ("/host:CPU: lines \"t1\" and \"dup\" share XProf row 1 and would be drawn as one", 1),
        ]
    );
    assert_eq!(thousands(0), "0");
    assert_eq!(thousands(999), "999");
    assert_eq!(thousands(1000), "1,000");
    assert_eq!(thousands(4_999_999), "4,999,999");
}

#[test]
fn kernels_become_gpu_planes_under_the_range_that_launched_them_with_a_flow_each() {
    use roctx_kernels::{Dispatch, KernelSnapshot};
    let mut t = Trace::new("h", 1_000_000, 9_000_000);
    let step = t.label("step");
    let fusion = t.label("fusion.3");
    t.events.push(Event { kind: EventKind::Range, tid: 77, end_tid: 77, start_ns: 1_100_000, end_ns: 5_000_000, label: step, depth: 0, seq: 1 });
    t.events.push(Event { kind: EventKind::Range, tid: 77, end_tid: 77, start_ns: 1_200_000, end_ns: 1_300_000, label: fusion, depth: 1, seq: 2 });
    let d = |start: u64, end: u64, kernel: u64, queue: u64, range: u32| Dispatch {
        work: Default::default(),
        graph: Default::default(),
        start_ns: start,
        end_ns: end,
        kernel_id: kernel,
        invocation: 0,
        range,
        thread_id: 77,
        launch_ns: 0,
        agent_id: 0x5000,
        queue_id: queue,
        dispatch_id: start,
        correlation_id: start / 1000,
        workgroup: [256, 1, 1],
        grid: [65_536, 2, 1],
    };
    let snapshot = KernelSnapshot {
        dispatches: vec![
            d(1_250_000, 1_400_000, 1, 0x10, 2), // inside fusion.3
            d(1_500_000, 1_600_000, 2, 0x20, 1), // inside step, another queue
            d(6_000_000, 6_100_000, 2, 0x10, 0), // no range open at launch
            d(9_500_000, 9_600_000, 2, 0x10, 0), // after the session: not shown, counted
        ],
        names: [(1, "gemm_kernel".into()), (2, "copy_kernel".into())].into_iter().collect(),
        ..KernelSnapshot::default()
    };
    t.add_kernels(&snapshot);
    assert_eq!(t.kernels.len(), 3);
    assert!(t.warnings.iter().any(|w| w.contains("1 GPU kernels, copies and sets ran outside the session window")), "{:?}", t.warnings);

    let space = standalone_xspace(&t);
    let gpu = space.planes.iter().find(|p| p.name == "/device:GPU:0").expect("a GPU plane");
    let names: Vec<_> = gpu.lines.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["Stream #16(Compute)", "Stream #32(Compute)"], "one line per real stream, named as XLA names its own");
    let stat = |e: &XEvent, name: &str| {
        e.stats.iter().find(|s| gpu.stat_metadata[&s.metadata_id].name == name).and_then(|s| s.value.clone())
    };
    let first = &gpu.lines[0].events[0];
    assert_eq!(gpu.event_metadata[&first.metadata_id].name, "gemm_kernel");
    assert_eq!(first.duration_ps, 150_000_000);
    let Some(x_stat::Value::RefValue(r)) = stat(first, "nvtx_range") else { panic!("nvtx_range as a ref") };
    assert_eq!(gpu.stat_metadata[&(r as i64)].name, "fusion.3", "the innermost range open at launch");
    assert_eq!(stat(first, "kernel_details"), Some(x_stat::Value::StrValue("grid:256,2,1 block:256,1,1".into())));
    assert_eq!(stat(first, "correlation_id"), Some(x_stat::Value::Uint64Value(1250)));
    let step_kernel = &gpu.lines[1].events[0];
    let Some(x_stat::Value::RefValue(r)) = stat(step_kernel, "nvtx_range") else { panic!() };
    assert_eq!(gpu.stat_metadata[&(r as i64)].name, "step");
    assert!(stat(&gpu.lines[0].events[1], "nvtx_range").is_none(), "no range open: no nvtx_range");
    assert!(validate(&space).is_empty(), "{:?}", validate(&space));

    // Chrome: one arrow (s at the range, f at the kernel) per kernel with a launching range.
    let json = crate::chrome::from_xspace(&space);
    let events = json["traceEvents"].as_array().unwrap();
    let starts: Vec<_> = events.iter().filter(|e| e["ph"] == "s").collect();
    let ends: Vec<_> = events.iter().filter(|e| e["ph"] == "f").collect();
    assert_eq!((starts.len(), ends.len()), (2, 2));
    let host_pid = events.iter().find(|e| e["name"] == "fusion.3").unwrap()["pid"].clone();
    let gemm = events.iter().find(|e| e["name"] == "gemm_kernel").unwrap();
    let arrow_to_gemm = ends.iter().find(|f| f["ts"] == gemm["ts"]).expect("an arrow ends at the kernel");
    let arrow_from = starts.iter().find(|s| s["id"] == arrow_to_gemm["id"]).unwrap();
    assert_eq!(arrow_from["pid"], host_pid);
    assert_eq!(arrow_to_gemm["bp"], "e");
    assert!(gemm["args"].get("_c").is_some(), "the consumer id is an ordinary arg in Chrome JSON");
}

#[test]
fn copies_sets_and_graph_work_are_drawn_as_xla_draws_them_on_their_streams() {
    use roctx_kernels::{Direction, Dispatch, GraphNode, KernelSnapshot, MemCopy, MemSet, MemoryKind, Work};
    let mut t = Trace::new("h", 1_000_000, 9_000_000);
    let thunk = t.label("Thunk:#hlo_op=command_buffer_1#");
    t.events.push(Event { kind: EventKind::Range, tid: 77, end_tid: 77, start_ns: 1_100_000, end_ns: 1_200_000, label: thunk, depth: 0, seq: 1 });
    let node = |i: u64| GraphNode { graph_id: 2, node_id: (2 << 32) | i };
    let d = |work: Work, start: u64, stream: u64, graph: GraphNode| Dispatch {
        work,
        graph,
        start_ns: start,
        end_ns: start + 1_000,
        kernel_id: u64::from(work == Work::Kernel),
        invocation: 0,
        range: 0,
        thread_id: 77,
        launch_ns: 1_150_000, // one cudaGraphLaunch inside the thunk
        agent_id: 0,
        queue_id: stream,
        dispatch_id: start,
        correlation_id: 142,
        workgroup: [256, 1, 1],
        grid: [256, 1, 1],
    };
    let d2d = Work::Copy(MemCopy { bytes: 4_194_304, direction: Direction::DeviceToDevice, src: MemoryKind::Device, dst: MemoryKind::Device, is_async: true });
    let h2d = Work::Copy(MemCopy { bytes: 4096, direction: Direction::HostToDevice, src: MemoryKind::Pinned, dst: MemoryKind::Device, is_async: true });
    let set = Work::Set(MemSet { bytes: 4_194_304, value: 0, memory: MemoryKind::Device, is_async: true });
    let snapshot = KernelSnapshot {
        dispatches: vec![
            d(Work::Kernel, 2_000_000, 13, node(0)),
            d(d2d, 2_100_000, 13, node(1)),
            d(set, 2_200_000, 13, node(2)),
            d(h2d, 2_300_000, 14, GraphNode::default()),
        ],
        names: [(1, "k_add(float*, int)".into())].into_iter().collect(),
        ..KernelSnapshot::default()
    };
    t.add_kernels(&snapshot);
    let space = standalone_xspace(&t);
    let gpu = space.planes.iter().find(|p| p.name == "/device:GPU:0").expect("a GPU plane");
    let names: Vec<_> = gpu.lines.iter().map(|l| (l.id, l.name.as_str())).collect();
    assert_eq!(names, [(13, "Stream #13(Compute,MemcpyD2D,Memset)"), (14, "Stream #14(MemcpyH2D)")]);
    let stat = |e: &XEvent, name: &str| e.stats.iter().find(|s| gpu.stat_metadata[&s.metadata_id].name == name).and_then(|s| s.value.clone());
    let event_name = |e: &XEvent| gpu.event_metadata[&e.metadata_id].name.clone();
    let [kernel, copy, memset] = &gpu.lines[0].events[..] else { panic!("three events on stream 13") };
    assert_eq!((event_name(kernel), event_name(copy), event_name(memset)), ("k_add(float*, int)".into(), "MemcpyD2D".into(), "Memset 3".into()));
    assert_eq!(stat(copy, "memcpy_details"), Some(x_stat::Value::StrValue("kind_src:device kind_dst:device size:4194304 dest:0 async:1".into())));
    assert_eq!(stat(memset, "Memset_details"), Some(x_stat::Value::StrValue("kind:device num_bytes:4194304 async:1".into())));
    assert!(stat(copy, "kernel_details").is_none(), "a copy is not a kernel to XProf");
    for (i, e) in [kernel, copy, memset].into_iter().enumerate() {
        assert_eq!(stat(e, "cuda_graph_id"), Some(x_stat::Value::Uint64Value(2)));
        assert_eq!(stat(e, "cuda_graph_node_id"), Some(x_stat::Value::Uint64Value((2 << 32) | i as u64)));
        let Some(x_stat::Value::RefValue(r)) = stat(e, "nvtx_range") else { panic!("every graph node under the range open at the graph launch") };
        assert_eq!(gpu.stat_metadata[&(r as i64)].name, "Thunk:#hlo_op=command_buffer_1#");
    }
    let h2d_event = &gpu.lines[1].events[0];
    assert_eq!(event_name(h2d_event), "MemcpyH2D");
    assert!(stat(h2d_event, "cuda_graph_id").is_none(), "not a graph launch: no graph stats");
    assert!(validate(&space).is_empty(), "{:?}", validate(&space));
    // Chrome JSON carries them too, details as args.
    let json = crate::chrome::from_xspace(&space);
    let events = json["traceEvents"].as_array().unwrap();
    let copy_json = events.iter().find(|e| e["name"] == "MemcpyD2D").expect("the copy in Chrome JSON");
    assert_eq!(copy_json["args"]["memcpy_details"], "kind_src:device kind_dst:device size:4194304 dest:0 async:1");
    assert!(events.iter().any(|e| e["name"] == "thread_name" && e["args"]["name"] == "Stream #13(Compute,MemcpyD2D,Memset)"));
}

fn one_kernel_trace() -> Trace {
    use roctx_kernels::{Dispatch, KernelSnapshot};
    let mut t = Trace::new("h", 1_000_000, 9_000_000);
    let fusion = t.label("fusion.3");
    t.events.push(Event { kind: EventKind::Range, tid: 77, end_tid: 77, start_ns: 1_200_000, end_ns: 1_300_000, label: fusion, depth: 0, seq: 1 });
    let d = Dispatch {
        work: Default::default(),
        graph: Default::default(),
        start_ns: 1_250_000,
        end_ns: 1_400_000,
        kernel_id: 1,
        invocation: 0,
        range: 1,
        thread_id: 77,
        launch_ns: 0,
        agent_id: 0x5000,
        queue_id: 0x10,
        dispatch_id: 1,
        correlation_id: 5,
        workgroup: [256, 1, 1],
        grid: [256, 1, 1],
    };
    t.add_kernels(&KernelSnapshot { dispatches: vec![d], names: [(1, "gemm_kernel".into())].into_iter().collect(), ..KernelSnapshot::default() });
    t
}

// The XLA-host path (merge into the host's own XSpace) carries the kernels too, with flow ids
// that cannot pair with the host's own small ones.
#[test]
fn merging_into_a_host_space_adds_the_gpu_planes_unless_the_host_traced_kernels_itself() {
    let host = XSpace { planes: vec![plane(HOST_PLANE, vec![line(4242, "Host Threads/4242", 3)]), plane("/device:GPU:0", vec![])], ..XSpace::default() };
    let merged = XSpace::decode(merge_into_bytes(&host.encode_to_vec(), &one_kernel_trace()).unwrap().as_slice()).unwrap();
    let gpu: Vec<_> = merged.planes.iter().filter(|p| p.name == "/device:GPU:0").collect();
    assert_eq!(gpu.len(), 1, "the host's empty GPU plane is replaced, not doubled");
    assert_eq!(gpu[0].lines[0].events.len(), 1);
    assert_eq!(merged.planes.iter().filter(|p| p.id == gpu[0].id).count(), 1, "our plane's id is its own");
    let consumer = gpu[0].lines[0].events[0].stats.iter().find(|s| gpu[0].stat_metadata[&s.metadata_id].name == FLOW_CONSUMER_STAT).unwrap();
    assert_eq!(consumer.value, Some(x_stat::Value::Uint64Value(FLOW_ID_BASE | 1)));
    let host_plane = merged.planes.iter().find(|p| p.name == HOST_PLANE).unwrap();
    let producer = host_plane.lines.iter().flat_map(|l| &l.events).flat_map(|e| &e.stats).find(|s| host_plane.stat_metadata[&s.metadata_id].name == FLOW_PRODUCER_STAT);
    assert_eq!(producer.map(|s| s.value.clone()), Some(Some(x_stat::Value::Uint64Value(FLOW_ID_BASE | 1))));
    assert!(validate(&merged).is_empty(), "{:?}", validate(&merged));

    // A host whose own tracer filled the GPU plane gets our rows beside its own: each right
    // below the host's row of the same stream, its details renamed so that XProf's kernel
    // statistics (keyed on `kernel_details`) count the host's events once.
    let mut xla_line = line(16, "Stream #16(Compute)", 2);
    let mut other = line(40, "Stream #40(MemcpyH2D)", 1);
    let traced = {
        let mut p = plane("/device:GPU:0", vec![]);
        p.stat_metadata.insert(90, XStatMetadata { id: 90, name: "kernel_details".into(), description: String::new() });
        for l in [&mut xla_line, &mut other] {
            for e in &mut l.events {
                e.stats.push(XStat { metadata_id: 90, value: Some(x_stat::Value::StrValue("grid:1,1,1 block:1,1,1".into())) });
            }
        }
        p.lines = vec![xla_line, other];
        XSpace { planes: vec![plane(HOST_PLANE, vec![]), p], ..XSpace::default() }
    };
    let merged = XSpace::decode(merge_into_bytes(&traced.encode_to_vec(), &one_kernel_trace()).unwrap().as_slice()).unwrap();
    let gpu: Vec<_> = merged.planes.iter().filter(|p| p.name == "/device:GPU:0").collect();
    assert_eq!(gpu.len(), 1, "one plane, both tracers' rows in it");
    let mut rows: Vec<_> = gpu[0].lines.iter().map(|l| (row_key(l), l.name.as_str(), l.events.len())).collect();
    rows.sort();
    assert_eq!(rows, [(32, "Stream #16(Compute)", 2), (33, "Stream #16(Compute) roctx_utils", 1), (80, "Stream #40(MemcpyH2D)", 1)]);
    let with_details = |name: &str| {
        let id = gpu[0].stat_metadata.values().find(|m| m.name == name).map(|m| m.id);
        gpu[0].lines.iter().flat_map(|l| &l.events).filter(|e| e.stats.iter().any(|s| Some(s.metadata_id) == id)).count()
    };
    assert_eq!(with_details("kernel_details"), 3, "XLA's events only: XProf's kernel stats count them once");
    assert_eq!(with_details("roctx_kernel_details"), 1, "ours keep theirs under another name");
    assert!(merged.warnings.iter().any(|w| w.contains("are beside them")), "{:?}", merged.warnings);
    assert!(validate(&merged).is_empty(), "{:?}", validate(&merged));
}

// `roctx merge` of XLA's capture (its tracer filled /device:GPU:0) and our log directory: the
// kernels are not counted twice.
#[test]
fn merging_two_spaces_keeps_one_filled_gpu_plane_of_a_name() {
    let ours = standalone_xspace(&one_kernel_trace());
    let xla = XSpace { planes: vec![plane(HOST_PLANE, vec![]), plane("/device:GPU:0", vec![line(1, "Stream #1", 2)])], ..XSpace::default() };
    let merged = merge_spaces(vec![xla.clone(), ours.clone()]);
    let gpu: Vec<_> = merged.planes.iter().filter(|p| p.name == "/device:GPU:0").collect();
    assert_eq!(gpu.len(), 1);
    let xla_rows: Vec<_> = gpu[0].lines.iter().filter(|l| !l.name.ends_with("roctx_utils")).collect();
    assert_eq!(xla_rows.iter().map(|l| l.events.len()).sum::<usize>(), 2, "XLA's rows as they were");
    assert!(gpu[0].lines.iter().any(|l| l.name == "Stream #16(Compute) roctx_utils"), "ours beside them");
    assert!(merged.warnings.iter().any(|w| w.contains("already holds")), "{:?}", merged.warnings);
    // Alone, ours survive a merge.
    let merged = merge_spaces(vec![XSpace { planes: vec![plane(HOST_PLANE, vec![])], ..XSpace::default() }, ours]);
    let gpu: Vec<_> = merged.planes.iter().filter(|p| p.name == "/device:GPU:0").collect();
    assert_eq!((gpu.len(), gpu[0].lines[0].events.len()), (1, 1));
}

/// The bytes of [`standalone_xspace_bytes`] decode to exactly what [`standalone_xspace`] builds.
/// Without kernels (whose launchers are event indices), also for the trace in snapshot order,
/// which takes the span path, and which must give the same space.
fn assert_fast_bytes_equal_the_message(t: &Trace) {
    let fast = XSpace::decode(standalone_xspace_bytes(t).as_slice()).expect("the fast bytes decode");
    assert_eq!(fast, standalone_xspace(t));
    if t.kernels.is_empty() {
        let mut sorted = t.clone();
        sorted.events.retain(|e| e.end_ns >= e.start_ns);
        sorted.events.sort_by_key(|e| (e.tid, e.start_ns, std::cmp::Reverse(e.end_ns)));
        let fast = XSpace::decode(standalone_xspace_bytes(&sorted).as_slice()).expect("the fast bytes decode");
        assert_eq!(fast, standalone_xspace(&sorted));
        assert_eq!(fast, standalone_xspace(t));
    }
}

#[test]
fn standalone_bytes_are_the_standalone_message() {
    assert_fast_bytes_equal_the_message(&sample_trace());
    assert_fast_bytes_equal_the_message(&one_kernel_trace()); // a launcher: a flow stat
    assert_fast_bytes_equal_the_message(&Trace::new("empty", 5, 6));
    // Times at the i64 limits (10-byte varints, negative offsets), a label id past the table,
    // an event ending before it starts (left out), marks, many lines and metadata ids.
    let mut t = Trace::new("h", 1 << 63, u64::MAX);
    t.realtime_offset_ns = i64::MAX;
    let a = t.label("a");
    t.events.push(Event { kind: EventKind::Range, tid: 1, end_tid: 1, start_ns: 0, end_ns: u64::MAX, label: a, depth: 0, seq: 0 });
    t.events.push(Event { kind: EventKind::Range, tid: 1, end_tid: 1, start_ns: u64::MAX, end_ns: u64::MAX, label: a, depth: 0, seq: 0 });
    t.events.push(Event { kind: EventKind::Range, tid: 2, end_tid: 2, start_ns: 9, end_ns: 3, label: a, depth: 0, seq: 0 });
    t.events.push(Event { kind: EventKind::Mark, tid: u64::from(u32::MAX), end_tid: 0, start_ns: 1 << 63, end_ns: 1 << 63, label: 77, depth: 0, seq: 0 });
    assert_fast_bytes_equal_the_message(&t);
    let mut t = Trace::new("many", 0, 1 << 40);
    for i in 0..300u32 {
        t.label(&format!("op{i}"));
    }
    for i in 0..20_000u64 {
        let (kind, end) = if i % 9 == 0 { (EventKind::Mark, i * 7) } else { (EventKind::Range, i * 7 + i % 1000 * 1_000_000) };
        t.events.push(Event { kind, tid: i % 37, end_tid: i % 37, start_ns: i * 7, end_ns: end, label: (i % 300) as u32, depth: 0, seq: 0 });
    }
    t.thread_names.insert(3, "worker".to_owned());
    assert_fast_bytes_equal_the_message(&t);
}

/// [`sample_trace`] on `host`, its wall clock `offset_ns` ahead of its boot clock, with a kernel
/// on GPU 0 launched by its first range (a flow producer on the host, a consumer on the GPU).
fn process_trace(host: &str, offset_ns: i64) -> Trace {
    let mut t = sample_trace();
    t.hostname = host.to_owned();
    t.realtime_offset_ns = offset_ns;
    let kernel = crate::model::KernelEvent { start_ns: 1_010_000, end_ns: 1_020_000, gpu: 0, stream: 1, name: "gemm".into(), launched_by: Some(0), ..Default::default() };
    t.kernels.push(kernel);
    t
}

/// The flow stat values of `plane`'s events.
fn flow_values(plane: &XPlane) -> Vec<u64> {
    let flow: Vec<i64> = flow_stat_ids(plane);
    plane.lines.iter().flat_map(|l| &l.events).flat_map(|e| &e.stats).filter(|s| flow.contains(&s.metadata_id)).filter_map(flow_value).collect()
}

#[test]
fn folding_two_processes_keeps_both_apart_with_suffixed_names_unique_ids_and_aligned_times() {
    // Same tids, same GPU, same flow ids; rank 1's session started 2_000 ns before rank 0's.
    let rank0 = standalone_xspace(&process_trace("host0", 5_000));
    let rank1 = standalone_xspace(&process_trace("host1", 3_000));
    assert_eq!((time_base(&rank0), time_base(&rank1)), (Some(1_005_000), Some(1_003_000)));
    assert_eq!(flow_values(&rank0.planes[0]), flow_values(&rank1.planes[0]));
    let folded = fold_processes(vec![("h_rank0".into(), rank0.clone()), ("h_rank1".into(), rank1)]);

    let names: Vec<&str> = folded.planes.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["/host:CPU h_rank0", "/device:GPU:0 h_rank0", "/host:CPU h_rank1", "/device:GPU:0 h_rank1", TASK_ENV_PLANE]);
    assert_eq!(folded.planes.iter().map(|p| p.id).collect::<Vec<_>>(), [1, 2, 3, 4, 5]);
    let issues = validate(&folded);
    assert!(!issues.iter().any(|i| i.error), "{issues:?}");
    // Every event of both processes is there, each thread's line in its own process's plane.
    let events = |s: &XSpace| s.planes.iter().flat_map(|p| &p.lines).map(|l| l.events.len()).sum::<usize>();
    assert_eq!(events(&folded), 2 * events(&rank0));
    for host in [&folded.planes[0], &folded.planes[2]] {
        assert_eq!(host.lines.iter().filter(|l| l.name == "Host Threads/4242/ROCTX").count(), 1, "{}", host.name);
    }

    // Both on the earlier start (rank 1's), whose Task Environment plane is the one kept.
    assert_eq!(time_base(&folded), Some(1_003_000));
    assert!(folded.planes[0].lines.iter().chain(&folded.planes[1].lines).all(|l| l.timestamp_ns == 2_000));
    assert!(folded.planes[2].lines.iter().chain(&folded.planes[3].lines).all(|l| l.timestamp_ns == 0));

    // Each kernel stays tied to its own process's range.
    let (p0, c0) = (flow_values(&folded.planes[0]), flow_values(&folded.planes[1]));
    let (p1, c1) = (flow_values(&folded.planes[2]), flow_values(&folded.planes[3]));
    assert_eq!((p0.len(), p1.len()), (1, 1));
    assert_eq!((&p0, &p1), (&c0, &c1));
    assert_eq!(p0, flow_values(&rank0.planes[0]), "the first process keeps its ids");
    assert_ne!(p0, p1);

    assert_eq!(folded.hostnames, ["host0", "host1"]);
    assert_eq!(folded.warnings, ["h_rank0: roctx_utils: 3 events dropped", "h_rank1: roctx_utils: 3 events dropped"]);
}

#[test]
fn folded_stems_and_plane_names_never_repeat() {
    let one = || XSpace { planes: vec![plane(HOST_PLANE, vec![line(1, "Host Threads/1", 1)])], ..XSpace::default() };
    // A stem repeated (the same host in two runs), an empty one, and a plane name that a
    // suffixed one would take.
    let tricky = XSpace { planes: vec![plane("/host:CPU h", vec![line(1, "Host Threads/1", 1)])], ..XSpace::default() };
    let folded = fold_processes(vec![("h".into(), one()), ("h".into(), one()), (String::new(), one()), ("h-2".into(), one()), ("x".into(), tricky), ("h x".into(), one())]);
    let names: Vec<&str> = folded.planes.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["/host:CPU h", "/host:CPU h-3", "/host:CPU process", "/host:CPU h-2", "/host:CPU h x", "/host:CPU h x (2)"]);
    // Nor can a process's plane take the name of the kept Task Environment plane.
    let env = XSpace { planes: vec![task_env_plane(1, 2)], ..XSpace::default() };
    let task = XSpace { planes: vec![plane("Task", vec![])], ..XSpace::default() };
    let folded = fold_processes(vec![("Environment".into(), task), ("e".into(), env)]);
    let names: Vec<&str> = folded.planes.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["Task Environment (2)", TASK_ENV_PLANE]);
    assert_eq!(time_base(&folded), Some(1));
    assert!(!validate(&folded).iter().any(|i| i.error));
}

#[test]
fn a_folded_process_with_absolute_times_moves_onto_the_others_session_start() {
    let ours = standalone_xspace(&sample_trace()); // wall start 1_005_000, lines at 0
    let mut absolute = plane(HOST_PLANE, vec![line(1, "Host Threads/1", 1)]);
    absolute.lines[0].timestamp_ns = ABSOLUTE_NS + 7;
    let folded = fold_processes(vec![("abs".into(), XSpace { planes: vec![absolute], ..XSpace::default() }), ("ours".into(), ours)]);
    assert_eq!(folded.planes[0].lines[0].timestamp_ns, ABSOLUTE_NS + 7 - 1_005_000);
    assert_eq!(time_base(&folded), Some(1_005_000));
    assert!(folded.planes.iter().filter(|p| p.name.starts_with(HOST_PLANE)).flat_map(|p| &p.lines).skip(1).all(|l| l.timestamp_ns == 0));
}

#[test]
fn a_free_name_is_found_in_linear_total_work_however_many_repeats() {
    // Issue 25, item 8: each collision searched upward from (2): 32,000 planes of one name took
    // 70 s. Here the searches of n repeats probe about n names in all.
    let probes = std::cell::Cell::new(0u64);
    let mut next = HashMap::new();
    let mut taken: HashSet<String> = HashSet::new();
    for _ in 0..10_000 {
        let name = next_free("p", &mut next, |c| {
            probes.set(probes.get() + 1);
            !taken.contains(c)
        }, |b, n| format!("{b} ({n})"));
        assert!(taken.insert(name));
    }
    assert!(probes.get() <= 10_000, "{} probes for 10,000 names", probes.get());
    // And a name already taken by someone else is skipped.
    let mut next = HashMap::new();
    let taken: HashSet<&str> = ["p (2)", "p (3)"].into();
    assert_eq!(next_free("p", &mut next, |c| !taken.contains(c), |b, n| format!("{b} ({n})")), "p (4)");
}

#[test]
fn thousands_of_processes_of_one_stem_fold_into_distinct_names() {
    let one = || XSpace { planes: vec![plane("/host:CPU", vec![line(1, "t", 1)])], hostnames: vec!["h".into()], ..XSpace::default() };
    let folded = fold_processes((0..20_000).map(|_| ("h".to_owned(), one())).collect());
    let names: HashSet<&str> = folded.planes.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names.len(), 20_000);
    assert!(names.contains("/host:CPU h") && names.contains("/host:CPU h-20000"), "{:?}", folded.planes.last().map(|p| &p.name));
    assert_eq!(folded.hostnames, ["h"]);
}

#[test]
fn a_damaged_session_start_moves_nobody_and_is_said() {
    // Issue 25, item 15: a file whose profile_start_time is -1 shifted every other process by
    // 1.76e18 ns, silently.
    let rank0 = standalone_xspace(&process_trace("host0", 5_000));
    let rank1 = standalone_xspace(&process_trace("host1", 3_000));
    let mut damaged = standalone_xspace(&process_trace("host2", 4_000));
    for p in damaged.planes.iter_mut().filter(|p| p.name == TASK_ENV_PLANE) {
        for s in &mut p.stats {
            s.value = Some(x_stat::Value::Int64Value(-1));
        }
    }
    let line_times = |s: &XSpace| -> Vec<i64> { s.planes.iter().filter(|p| p.name != TASK_ENV_PLANE).flat_map(|p| &p.lines).map(|l| l.timestamp_ns).collect() };
    let damaged_times = line_times(&damaged);
    let folded = fold_processes(vec![("h_rank0".into(), rank0), ("h_rank2".into(), damaged), ("h_rank1".into(), rank1)]);
    assert_eq!(time_base(&folded), Some(1_003_000), "the damaged start is not the base");
    let host = |name: &str| folded.planes.iter().find(|p| p.name == name).unwrap();
    assert!(host("/host:CPU h_rank0").lines.iter().all(|l| l.timestamp_ns == 2_000));
    assert!(host("/host:CPU h_rank1").lines.iter().all(|l| l.timestamp_ns == 0));
    let kept: Vec<i64> = folded.planes.iter().filter(|p| p.name.ends_with("h_rank2")).flat_map(|p| &p.lines).map(|l| l.timestamp_ns).collect();
    assert_eq!(kept, damaged_times, "left as it was");
    assert!(folded.warnings.iter().any(|w| w.starts_with("h_rank2: session start -1 ns")), "{:?}", folded.warnings);
    // Far from the others (a year later) is damage too; 0 (absolute lines) and no start are not.
    let year = 365 * 24 * 3600 * 1_000_000_000i64;
    assert_eq!(plausible_bases(&[Some(1_000), Some(2_000), Some(1_000 + year), Some(0), None, Some(-5)]), [Some(1_000), Some(2_000), None, Some(0), None, None]);
}

/// A trace with op scopes: invocation 1 (group A, two kernels with a 1 us gap), 2 (group B),
/// 3 (group A again), a kernel of no op, a copy of op 1, and the costs a higher layer set.
fn op_scope_trace() -> Trace {
    use crate::model::OpCost;
    use roctx_kernels::{Dispatch, KernelSnapshot, Work};
    let mut t = Trace::new("host", 1_000_000, 9_000_000);
    let d = |work: Work, start: u64, end: u64, kernel: u64, invocation: u32| Dispatch {
        work,
        graph: Default::default(),
        start_ns: start,
        end_ns: end,
        kernel_id: kernel,
        invocation,
        range: 0,
        thread_id: 77,
        launch_ns: 0,
        agent_id: 0x5000,
        queue_id: 3,
        dispatch_id: start,
        correlation_id: start / 1000,
        workgroup: [256, 1, 1],
        grid: [256, 1, 1],
    };
    let snapshot = KernelSnapshot {
        dispatches: vec![
            d(Work::Kernel, 2_000_000, 2_010_000, 1, 1),
            d(Work::Kernel, 2_011_000, 2_031_000, 2, 1),
            d(Work::Copy(Default::default()), 2_032_000, 2_033_000, 0, 1),
            d(Work::Kernel, 2_040_000, 2_045_000, 3, 2),
            d(Work::Kernel, 2_050_000, 2_060_000, 1, 3),
            d(Work::Kernel, 2_061_000, 2_081_000, 2, 3),
            d(Work::Kernel, 2_090_000, 2_091_000, 3, 0),
        ],
        names: [(1, "quantize".into()), (2, "matvec".into()), (3, "add".into())].into_iter().collect(),
        ..KernelSnapshot::default()
    };
    t.add_kernels(&snapshot);
    let a = OpCost { group: "MUL_MAT q4_K[64,64] f32[64] -> f32[64]".into(), op_type: "MUL_MAT".into(), flops: 8192, bytes: 2816 };
    t.op_costs.insert(1, a.clone());
    t.op_costs.insert(3, a);
    t.op_costs.insert(2, OpCost { group: "ADD f32[64] f32[64] -> f32[64]".into(), op_type: "ADD".into(), flops: 64, bytes: 768 });
    t
}

fn stat_of<'a>(plane: &'a XPlane, e: &'a XEvent, name: &str) -> Option<&'a x_stat::Value> {
    e.stats.iter().find(|s| plane.stat_metadata[&s.metadata_id].name == name).and_then(|s| s.value.as_ref())
}

/// A string stat of `e` written as a `ref_value`: the name of the stat metadata it points at.
fn ref_stat_of<'a>(plane: &'a XPlane, e: &'a XEvent, name: &str) -> Option<&'a str> {
    match stat_of(plane, e, name)? {
        // CAST: stat metadata ids are positive.
        x_stat::Value::RefValue(id) => plane.stat_metadata.get(&(*id as i64)).map(|m| m.name.as_str()),
        _ => None,
    }
}

#[test]
fn op_scopes_are_one_event_per_invocation_as_long_as_its_kernels_ran_with_integer_costs() {
    use crate::hlo::{HloProto, HLO_PROTO_STAT};
    let t = op_scope_trace();
    let space = standalone_xspace(&t);
    assert!(validate(&space).is_empty(), "{:?}", validate(&space));
    let gpu = space.planes.iter().find(|p| p.name == "/device:GPU:0").unwrap();
    let op_line = gpu.lines.iter().find(|l| is_op_line(l)).expect("an op line");
    assert_eq!(op_line.name, "Op scopes (Stream #3)");
    assert_eq!(op_line.id, OP_LINE_BASE, "not a derived line id: XProf's op database reads it");
    let names: Vec<&str> = op_line.events.iter().map(|e| gpu.event_metadata[&e.metadata_id].name.as_str()).collect();
    let a = "MUL_MAT.q4_K_64x64.f32_64.to.f32_64";
    assert_eq!(names, [a, "ADD.f32_64.f32_64.to.f32_64", a], "one event per invocation, in start order");
    let first = &op_line.events[0];
    assert_eq!(first.offset_ps(), 1_000_000_000, "at its first kernel's start");
    assert_eq!(first.duration_ps, 30_000_000, "its kernels' time (10 + 20 us), not their span, nor the copy");
    assert_eq!(ref_stat_of(gpu, first, "hlo_op"), Some(a), "a ref_value, as XLA writes its strings: once per plane");
    assert_eq!(ref_stat_of(gpu, first, "tf_op"), Some("MUL_MAT/MUL_MAT q4_K[64,64] f32[64] -> f32[64]:MUL_MAT"));
    assert_eq!(ref_stat_of(gpu, first, "hlo_module"), Some("roctx_utils.op_scopes"));
    assert_eq!(stat_of(gpu, first, "flops"), Some(&x_stat::Value::Uint64Value(8192)), "an integer: XProf reads a double as 0");
    assert_eq!(stat_of(gpu, first, "bytes_accessed"), Some(&x_stat::Value::Uint64Value(2816)));
    let Some(x_stat::Value::Uint64Value(program_id)) = stat_of(gpu, first, "program_id").cloned() else { panic!("program_id") };
    // The kernels stay plain: no op stat that would make XProf count them as ops too.
    for line in gpu.lines.iter().filter(|l| !is_op_line(l)) {
        for e in &line.events {
            for s in ["hlo_op", "tf_op", "flops"] {
                assert!(stat_of(gpu, e, s).is_none(), "a kernel with {s}");
            }
        }
    }
    // The module XProf looks the name up in.
    let meta = space.planes.iter().find(|p| p.name == METADATA_PLANE).expect("/host:metadata");
    let m = &meta.event_metadata[&(program_id as i64)];
    let Some(x_stat::Value::BytesValue(bytes)) = m.stats.iter().find(|s| meta.stat_metadata[&s.metadata_id].name == HLO_PROTO_STAT).and_then(|s| s.value.clone()) else {
        panic!("Hlo Proto bytes")
    };
    let module = HloProto::decode(bytes.as_slice()).unwrap().hlo_module.unwrap();
    let instructions: Vec<&str> = module.computations[0].instructions.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(instructions, ["p", "ADD.f32_64.f32_64.to.f32_64", a, "result"]);
    // The same file, serialized by the fast writer.
    assert_eq!(XSpace::decode(standalone_xspace_bytes(&t).as_slice()).unwrap(), space);
}

#[test]
fn a_trace_without_op_costs_has_no_op_line_and_no_module() {
    let mut t = op_scope_trace();
    t.op_costs.clear();
    let space = standalone_xspace(&t);
    assert!(space.planes.iter().all(|p| p.name != METADATA_PLANE));
    assert!(space.planes.iter().flat_map(|p| &p.lines).all(|l| !is_op_line(l)));
}

#[test]
fn device_caps_become_the_plane_stats_xprof_takes_its_peaks_from() {
    let mut t = op_scope_trace();
    t.devices.insert(0, crate::DeviceCaps { vendor: Some("AMD".into()), clock_rate_khz: Some(2_100_000), core_count: Some(304), memory_bandwidth: Some(5_300_000_000_000), memory_size: None, compute_cap: Some((9, 4)), peak_tflops: Some(1307.4) });
    let space = standalone_xspace(&t);
    let gpu = space.planes.iter().find(|p| p.name == "/device:GPU:0").unwrap();
    let stat = |name: &str| gpu.stats.iter().find(|s| gpu.stat_metadata[&s.metadata_id].name == name).and_then(|s| s.value.clone());
    assert_eq!(stat("device_vendor"), Some(x_stat::Value::StrValue("AMD".into())));
    assert_eq!(stat("clock_rate"), Some(x_stat::Value::Uint64Value(2_100_000)));
    assert_eq!(stat("core_count"), Some(x_stat::Value::Uint64Value(304)));
    assert_eq!(stat("memory_bandwidth"), Some(x_stat::Value::Uint64Value(5_300_000_000_000)));
    assert_eq!(stat("compute_cap_major"), Some(x_stat::Value::Int64Value(9)));
    assert_eq!(stat("peak_teraflops_per_second"), Some(x_stat::Value::DoubleValue(1307.4)));
    assert_eq!(stat("memory_size"), None, "unknown: left out");
}

#[test]
fn beside_a_gpu_plane_the_host_filled_our_op_events_are_left_out_with_a_warning() {
    let t = op_scope_trace();
    let mut host = XSpace { planes: vec![plane("/device:GPU:0", vec![line(7, "Stream #7(Compute)", 3)])], ..XSpace::default() };
    add_gpu_planes(&mut host, gpu_planes(&t, 0));
    let gpu = host.planes.iter().find(|p| p.name == "/device:GPU:0").unwrap();
    assert!(gpu.lines.iter().all(|l| !is_op_line(l)), "XLA's kernels are its ops already: ours would count their time twice");
    assert!(gpu.lines.iter().any(|l| l.name.ends_with("roctx_utils")), "our kernels are still beside");
    assert!(host.warnings.iter().any(|w| w.contains("our 3 op scope events are left out")), "{:?}", host.warnings);
}

#[test]
fn merging_and_folding_keep_every_module_in_one_metadata_plane() {
    let t = op_scope_trace();
    let ours = standalone_xspace(&t);
    let our_id = *ours.planes.iter().find(|p| p.name == METADATA_PLANE).unwrap().event_metadata.keys().next().unwrap();
    // An XLA capture with its own module 1 (and a stat id that differs from ours).
    let mut xla = XSpace::default();
    let mut meta = XPlane { name: METADATA_PLANE.to_owned(), ..XPlane::default() };
    meta.stat_metadata.insert(9, XStatMetadata { id: 9, name: crate::hlo::HLO_PROTO_STAT.to_owned(), description: String::new() });
    meta.event_metadata.insert(1, XEventMetadata { id: 1, name: "jit_step".into(), stats: vec![XStat { metadata_id: 9, value: Some(x_stat::Value::BytesValue(vec![1, 2, 3])) }], ..XEventMetadata::default() });
    xla.planes.push(meta);
    let modules = |space: &XSpace| -> Vec<(i64, Vec<u8>)> {
        let planes: Vec<&XPlane> = space.planes.iter().filter(|p| p.name == METADATA_PLANE).collect();
        assert_eq!(planes.len(), 1, "one metadata plane, under its exact name");
        let p = planes[0];
        let mut out: Vec<(i64, Vec<u8>)> = p
            .event_metadata
            .values()
            .map(|m| {
                let s = m.stats.iter().find(|s| p.stat_metadata[&s.metadata_id].name == crate::hlo::HLO_PROTO_STAT).unwrap();
                let Some(x_stat::Value::BytesValue(b)) = &s.value else { panic!() };
                (m.id, b.clone())
            })
            .collect();
        out.sort();
        out
    };
    let merged = merge_spaces(vec![xla.clone(), ours.clone()]);
    let got = modules(&merged);
    assert_eq!(got.len(), 2);
    assert_eq!(got[0], (1, vec![1, 2, 3]), "XLA's module intact");
    assert_eq!(got[1].0, our_id);
    let folded = fold_processes(vec![("rank0".into(), ours.clone()), ("rank1".into(), ours), ("xla".into(), xla)]);
    let got = modules(&folded);
    assert_eq!(got.iter().map(|m| m.0).collect::<Vec<_>>(), [1, our_id], "the ranks' identical modules once, XLA's beside");
}
