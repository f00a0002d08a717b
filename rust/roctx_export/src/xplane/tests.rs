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
    t.events.push(Event { kind: EventKind::Range, tid: 4242, end_tid: 4242, start_ns: 1_005_000, end_ns: 1_085_000, label: outer, depth: 0 });
    t.events.push(Event { kind: EventKind::Range, tid: 4242, end_tid: 4242, start_ns: 1_015_000, end_ns: 1_045_000, label: inner, depth: 0 });
    t.events.push(Event { kind: EventKind::Mark, tid: 4242, end_tid: 4242, start_ns: 1_050_000, end_ns: 1_050_000, label: mark, depth: 0 });
    t.events.push(Event { kind: EventKind::Range, tid: 7, end_tid: 7, start_ns: 1_100_000, end_ns: 1_200_000, label: inner, depth: 0 });
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
