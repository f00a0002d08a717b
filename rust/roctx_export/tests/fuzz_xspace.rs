//! Bounded fuzzing of everything that reads an XSpace someone else wrote (a file given to
//! `roctx inspect`/`merge`/`convert`, or the host's bytes given to `merge_into_xspace`), and of
//! the writer on arbitrary traces. Deterministic; runs in `cargo test`. See rust/fuzz/README.md.
//!
//! - `fuzz_xspace_decode_inspect_merge` (corpus `rust/fuzz/corpus/xspace/`, `.xplane.pb` files):
//!   whatever prost decodes must summarize, validate, convert to Chrome JSON and merge without a
//!   panic; merging never loses or invents an event (only a later input's `Task Environment`
//!   plane is dropped, by design); a merged space has one plane per name, no marker or extra host
//!   plane left, and a `/host:CPU` whose lines have distinct ids and rows numbered 1..n;
//!   folding it with itself as two processes keeps every event (but the Task Environment planes
//!   after the one kept) and gives planes distinct names and ids 1..n.
//! - `fuzz_trace_to_xspace` (corpus `rust/fuzz/corpus/trace/`, packed events): our own writer's
//!   output always validates without errors and keeps every event that ends after it starts.

use std::collections::HashSet;

use prost::Message;
use roctx_export::inspect::Summary;
use roctx_export::xplane::{self, HOST_PLANE, HOST_PLANES, NVTX_PLANE, ROCTX_PLANE, TASK_ENV_PLANE};
use roctx_export::xplane_proto::{x_event, x_stat, XEvent, XEventMetadata, XLine, XPlane, XSpace, XStat, XStatMetadata};
use roctx_export::{chrome, Event, EventKind, Trace};

#[path = "../../fuzz/mutate.rs"]
mod mutate;

const XSPACE: mutate::Config = mutate::Config {
    name: "xspace",
    manifest_dir: env!("CARGO_MANIFEST_DIR"),
    mutations_per_seed: 450,
    max_len: 64 << 10,
    protobuf: true,
    known_bugs: &[],
};

const TRACE: mutate::Config = mutate::Config {
    name: "trace",
    manifest_dir: env!("CARGO_MANIFEST_DIR"),
    mutations_per_seed: 1600,
    max_len: 8 << 10,
    protobuf: false,
    known_bugs: &[],
};

// ---------------------------------------------------------------------------------------------
// Fixtures (also the corpus seeds; `regenerate_corpus` writes them).

/// Wall-clock ns of the XLA session start.
const WALL_START_NS: i64 = 1_732_000_000_000_000_000;
/// `CLOCK_BOOTTIME` ns of the same instant.
const BOOT_START_NS: u64 = 5_000_000_000;

fn xla_line(plane: &mut XPlane, id: i64, name: &str, events: &[(&str, i64, i64)]) {
    let mut line = XLine { id, name: name.to_owned(), timestamp_ns: WALL_START_NS, ..XLine::default() };
    for &(event, start_us, end_us) in events {
        let metadata_id = match plane.event_metadata.values().find(|m| m.name == event) {
            Some(m) => m.id,
            None => {
                let id = plane.event_metadata.len() as i64 + 1;
                plane.event_metadata.insert(id, XEventMetadata { id, name: event.to_owned(), ..XEventMetadata::default() });
                id
            }
        };
        line.events.push(XEvent {
            metadata_id,
            data: Some(x_event::Data::OffsetPs(start_us * 1_000_000)),
            duration_ps: (end_us - start_us) * 1_000_000,
            stats: vec![XStat { metadata_id: 1, value: Some(x_stat::Value::StrValue("train_step".to_owned())) }],
        });
    }
    line.duration_ps = line.events.iter().map(|e| e.offset_ps() + e.duration_ps).max().unwrap_or(0);
    plane.lines.push(line);
}

fn xla_plane(name: &str) -> XPlane {
    let mut plane = XPlane { name: name.to_owned(), ..XPlane::default() };
    plane.stat_metadata.insert(1, XStatMetadata { id: 1, name: "tf_op".to_owned(), description: String::new() });
    plane
}

/// An XLA GPU capture before post-processing (rust/roctx_export/examples/xprof_fixture.rs):
/// thread lines whose ids are the ROCTX tids, a 64-bit `python` line id, an NVTX plane.
fn xla_capture() -> XSpace {
    let mut cpu = xla_plane(HOST_PLANE);
    xla_line(&mut cpu, 4242, "Host Threads/4242", &[("jit_train_step", 4, 95), ("ExecuteThunks", 6, 90), ("hipLaunchKernel", 16, 20)]);
    xla_line(&mut cpu, 4243, "Host Threads/4243", &[("ExecuteThunks", 2, 88), ("hipMemcpyAsync", 30, 34)]);
    xla_line(&mut cpu, -0x6000_0000_0000_0000, "python", &[("$train.py:10 train_step", 0, 99), ("$train.py:20 update", 40, 60)]);
    let mut nvtx = xla_plane(NVTX_PLANE);
    xla_line(&mut nvtx, 4242, "Host Threads/4242/NVTX", &[("NVTX:outer", 5, 85), ("NVTX:inner", 15, 45)]);
    let mut gpu = xla_plane("/device:GPU:0");
    xla_line(&mut gpu, 1, "Stream #1", &[("loop_fusion_3_kernel", 17, 44)]);
    XSpace { planes: vec![cpu, nvtx, gpu], hostnames: vec!["fixture-host".to_owned()], ..XSpace::default() }
}

/// Our capture of the same run: nested ranges, marks, a cross-thread range, thread names.
fn roctx_trace() -> Trace {
    let mut trace = Trace::new("fixture-host", BOOT_START_NS, BOOT_START_NS + 100_000);
    trace.realtime_offset_ns = WALL_START_NS - BOOT_START_NS as i64;
    let us = |t: u64| BOOT_START_NS + t * 1_000;
    let mut add = |kind: EventKind, tid: u64, end_tid: u64, label: &str, start_us: u64, end_us: u64| {
        let label = trace.label(label);
        trace.events.push(Event { kind, tid, end_tid, start_ns: us(start_us), end_ns: us(end_us), label, depth: 0, seq: 0 });
    };
    use EventKind::{Mark, ProcessRange, Range};
    add(Range, 4242, 4242, "jit_train_step", 5, 85);
    add(Range, 4242, 4242, "Thunk:#hlo_op=fusion.3,unique_hlo_op_id=7#", 10, 60);
    add(Range, 4242, 4242, "loop_fusion_3_kernel", 15, 45);
    add(Mark, 4242, 4242, "step_marker", 90, 90);
    add(Range, 4243, 4243, "jit_train_step", 5, 80);
    add(ProcessRange, 4243, 4300, "async_copy", 12, 70);
    add(Range, 4300, 4300, "host_callback", 20, 40);
    add(Mark, 4300, 4300, "checkpoint", 50, 50);
    trace.thread_names.insert(4242, "xla_gpu_exec_0".to_owned());
    trace.thread_names.insert(4300, "xla_gpu_exec_2".to_owned());
    trace.warnings.push("roctx_utils: 3 ROCTX events dropped".to_owned());
    trace
}

/// The XLA-like capture merged with our output: what `roctx merge` writes.
fn merged_fixture() -> XSpace {
    xplane::merge_spaces(vec![xla_capture(), xplane::standalone_xspace(&roctx_trace())])
}

/// Values at the edges: i64 offsets/durations, every stat kind, dangling references, an
/// aggregated (`num_occurrences`) event, a TPU plane, an Int64 `profile_start_time`.
fn edge_space() -> XSpace {
    let mut cpu = xla_plane(HOST_PLANE);
    cpu.stat_metadata.insert(2, XStatMetadata { id: 2, name: "nvtx_range".to_owned(), description: "d".to_owned() });
    cpu.event_metadata.insert(7, XEventMetadata { id: 7, name: "e".to_owned(), display_name: "E".to_owned(), child_id: vec![1, -1], ..XEventMetadata::default() });
    let values = [
        x_stat::Value::DoubleValue(f64::NAN),
        x_stat::Value::DoubleValue(-0.0),
        x_stat::Value::Uint64Value(u64::MAX),
        x_stat::Value::Int64Value(i64::MIN),
        x_stat::Value::StrValue("\u{0}\n\"".to_owned()),
        x_stat::Value::BytesValue(vec![0xff, 0]),
        x_stat::Value::RefValue(u64::MAX),
        x_stat::Value::RefValue(2),
        x_stat::Value::CompressedStrValue(vec![0x78, 0x9c]),
    ];
    let stats = values.iter().map(|v| XStat { metadata_id: 2, value: Some(v.clone()) }).collect::<Vec<_>>();
    let ev = |offset: i64, duration: i64| XEvent { metadata_id: 7, data: Some(x_event::Data::OffsetPs(offset)), duration_ps: duration, stats: stats.clone() };
    cpu.lines.push(XLine {
        id: i64::MAX,
        display_id: i64::MIN,
        name: "Host Threads/18446744073709551615/ROCTX".to_owned(),
        timestamp_ns: i64::MAX,
        duration_ps: -1,
        events: vec![ev(i64::MAX, i64::MAX), ev(i64::MIN, i64::MIN), ev(0, -5)],
        ..XLine::default()
    });
    cpu.lines.push(XLine {
        id: 0,
        name: "Host Threads/0".to_owned(),
        timestamp_ns: i64::MIN,
        events: vec![XEvent { metadata_id: 99, data: Some(x_event::Data::NumOccurrences(3)), duration_ps: 10, stats: vec![] }],
        ..XLine::default()
    });
    let mut roctx = xla_plane(ROCTX_PLANE);
    xla_line(&mut roctx, 0, "Host Threads/0/ROCTX", &[("r", 0, 1)]);
    xla_line(&mut roctx, 0, "Host Threads/0/ROCTX", &[("r", 2, 3)]);
    let mut env = xplane::task_env_plane(1, 2);
    env.stats[0].value = Some(x_stat::Value::Int64Value(-7));
    let mut tpu = xla_plane("/device:TPU:0");
    xla_line(&mut tpu, 3, "XLA Ops", &[("op", 0, 1)]);
    XSpace {
        planes: vec![cpu, roctx, env, tpu, xla_plane("/host:python-tracer")],
        errors: vec!["e".to_owned()],
        warnings: vec!["w".to_owned()],
        hostnames: vec!["a".to_owned(), "a".to_owned()],
    }
}

/// Metadata and line ids far from the small ones writers use (XLA's line ids are 64-bit), on a
/// plane that other inputs also have (merges re-key metadata into it).
fn large_ids_space() -> XSpace {
    let mut gpu = XPlane { name: "/device:GPU:0".to_owned(), ..XPlane::default() };
    let (event_id, stat_id) = (1i64 << 62, (1i64 << 62) + 1);
    gpu.event_metadata.insert(event_id, XEventMetadata { id: event_id, name: "big_kernel".to_owned(), ..XEventMetadata::default() });
    gpu.stat_metadata.insert(stat_id, XStatMetadata { id: stat_id, name: "correlation_id".to_owned(), description: String::new() });
    gpu.lines.push(XLine {
        id: -(1 << 40),
        name: "Stream #1".to_owned(),
        timestamp_ns: 1 << 40,
        events: vec![XEvent {
            metadata_id: event_id,
            data: Some(x_event::Data::OffsetPs(1 << 50)),
            duration_ps: 1 << 50,
            stats: vec![XStat { metadata_id: stat_id, value: Some(x_stat::Value::RefValue(stat_id as u64)) }],
        }],
        ..XLine::default()
    });
    XSpace { planes: vec![gpu], ..XSpace::default() }
}

/// Metadata ids at i64::MAX on a plane another input also has: re-keying the other input's
/// metadata into it must not overflow (regression seed: `max + 1` used to).
fn max_ids_space() -> XSpace {
    let mut space = large_ids_space();
    let gpu = &mut space.planes[0];
    for m in std::mem::take(&mut gpu.event_metadata).into_values() {
        gpu.event_metadata.insert(i64::MAX, XEventMetadata { id: i64::MAX, ..m });
    }
    for m in std::mem::take(&mut gpu.stat_metadata).into_values() {
        gpu.stat_metadata.insert(i64::MAX, XStatMetadata { id: i64::MAX, ..m });
    }
    let event = &mut gpu.lines[0].events[0];
    event.metadata_id = i64::MAX;
    event.stats[0] = XStat { metadata_id: i64::MAX, value: Some(x_stat::Value::RefValue(i64::MAX as u64)) };
    space
}

/// (file name, bytes) of every XSpace seed.
fn xspace_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let standalone = xplane::standalone_xspace(&roctx_trace());
    let mut unmerged = xla_capture();
    unmerged.planes.push(xplane::roctx_plane_based(&roctx_trace(), 0));
    vec![
        ("empty.xplane.pb", Vec::new()),
        ("standalone.xplane.pb", standalone.encode_to_vec()),
        ("xla_capture.xplane.pb", xla_capture().encode_to_vec()),
        ("xla_unmerged_roctx_absolute.xplane.pb", unmerged.encode_to_vec()),
        ("merged_xla_roctx.xplane.pb", merged_fixture().encode_to_vec()),
        ("edge_values.xplane.pb", edge_space().encode_to_vec()),
        ("large_ids.xplane.pb", large_ids_space().encode_to_vec()),
        ("regress_metadata_id_max.xplane.pb", max_ids_space().encode_to_vec()),
    ]
}

/// Packed trace input: start, stop (u64 LE), realtime offset (i64 LE), then 39-byte events:
/// kind (u8, mod 3), tid, end_tid, start_ns, end_ns (u64 LE), label (u32 LE), depth (u16 LE).
fn pack_trace(trace: &Trace) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&trace.start_ns.to_le_bytes());
    out.extend_from_slice(&trace.stop_ns.to_le_bytes());
    out.extend_from_slice(&trace.realtime_offset_ns.to_le_bytes());
    for e in &trace.events {
        out.push(e.kind as u8);
        for v in [e.tid, e.end_tid, e.start_ns, e.end_ns] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&e.label.to_le_bytes());
        out.extend_from_slice(&e.depth.to_le_bytes());
    }
    out
}

const TRACE_LABELS: [&str; 4] = ["jit_train_step", "Thunk:#hlo_op=fusion.3#", "", "step_marker"];

fn unpack_trace(bytes: &[u8]) -> Trace {
    let word = |at: usize| -> u64 {
        let mut b = [0u8; 8];
        let avail = bytes.len().saturating_sub(at).min(8);
        b[..avail].copy_from_slice(&bytes[at.min(bytes.len())..at.min(bytes.len()) + avail]);
        u64::from_le_bytes(b)
    };
    let mut trace = Trace::new("fuzz-host", word(0), word(8));
    trace.realtime_offset_ns = word(16) as i64;
    trace.labels = TRACE_LABELS.iter().map(|s| (*s).to_owned()).collect();
    for rec in bytes.get(24..).unwrap_or_default().chunks_exact(39) {
        let u = |at: usize| u64::from_le_bytes(rec[at..at + 8].try_into().unwrap());
        let kind = match rec[0] % 3 {
            0 => EventKind::Range,
            1 => EventKind::Mark,
            _ => EventKind::ProcessRange,
        };
        let tid = u(1);
        let event = Event {
            kind,
            tid,
            end_tid: u(9),
            start_ns: u(17),
            end_ns: u(25),
            label: u32::from_le_bytes(rec[33..37].try_into().unwrap()),
            depth: u16::from_le_bytes(rec[37..39].try_into().unwrap()), seq: 0,
        };
        if tid % 3 == 0 {
            trace.thread_names.insert(tid, format!("thread {tid}"));
        }
        trace.events.push(event);
    }
    trace
}

fn trace_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let fixture = roctx_trace();
    let mut late = fixture.clone();
    late.start_ns = u64::MAX / 2;
    late.stop_ns = u64::MAX / 2 + 1_000;
    for e in &mut late.events {
        e.start_ns += u64::MAX / 2 - BOOT_START_NS;
        e.end_ns += u64::MAX / 2 - BOOT_START_NS;
    }
    let mut unordered = fixture.clone();
    unordered.events.reverse();
    unordered.events.push(Event { kind: EventKind::Range, tid: 9, end_tid: 9, start_ns: BOOT_START_NS + 10, end_ns: BOOT_START_NS + 5, label: 0, depth: 3, seq: 0 });
    unordered.events.push(Event { kind: EventKind::Mark, tid: 9, end_tid: 9, start_ns: BOOT_START_NS - 10, end_ns: BOOT_START_NS - 10, label: 7, depth: 0, seq: 0 });
    vec![
        ("empty.bin", Vec::new()),
        ("fixture.bin", pack_trace(&fixture)),
        ("late_clock.bin", pack_trace(&late)),
        ("unordered_inverted_unknown_label.bin", pack_trace(&unordered)),
    ]
}

// ---------------------------------------------------------------------------------------------
// Properties.

/// The fixtures every input is merged with, built once.
struct Fixtures {
    trace: Trace,
    xla: XSpace,
    xla_bytes: Vec<u8>,
    merged: XSpace,
}

fn fixtures() -> &'static Fixtures {
    static FIXTURES: std::sync::OnceLock<Fixtures> = std::sync::OnceLock::new();
    FIXTURES.get_or_init(|| Fixtures { trace: roctx_trace(), xla: xla_capture(), xla_bytes: xla_capture().encode_to_vec(), merged: merged_fixture() })
}

fn events(space: &XSpace) -> usize {
    space.planes.iter().flat_map(|p| &p.lines).map(|l| l.events.len()).sum()
}

/// The events `merge_spaces(spaces)` must keep: all of them, except those on the
/// `Task Environment` planes of an input that follows one which already had such a plane.
fn expected_merged_events(spaces: &[&XSpace]) -> usize {
    let mut env_seen = false;
    // GPU planes of one name are merged side by side (a later one's rows beside the first's):
    // every event is kept.
    let mut total = 0;
    for space in spaces {
        for plane in &space.planes {
            let n = plane.lines.iter().map(|l| l.events.len()).sum::<usize>();
            if !(env_seen && plane.name == TASK_ENV_PLANE) {
                total += n;
            }
        }
        env_seen |= space.planes.iter().any(|p| p.name == TASK_ENV_PLANE);
    }
    total
}

/// After a host merge: one plane per name, no host plane but `/host:CPU`, and `/host:CPU`'s lines
/// have distinct ids and `display_id` 1..n in order (distinct XProf rows).
fn check_merged_host(space: &XSpace, what: &str) {
    let mut names = HashSet::new();
    for plane in &space.planes {
        assert!(names.insert(plane.name.as_str()), "{what}: plane {:?} twice", plane.name);
        assert!(
            plane.name == HOST_PLANE || !(HOST_PLANES.contains(&plane.name.as_str()) || plane.name == NVTX_PLANE || plane.name == ROCTX_PLANE),
            "{what}: plane {:?} left unmerged",
            plane.name
        );
    }
    if let Some(host) = space.planes.iter().find(|p| p.name == HOST_PLANE) {
        let mut ids = HashSet::new();
        for (row, line) in host.lines.iter().enumerate() {
            assert!(ids.insert(line.id), "{what}: two /host:CPU lines with id {}", line.id);
            assert_eq!(line.display_id, row as i64 + 1, "{what}: line {:?} is not numbered in order", line.name);
        }
        assert!(
            !xplane::validate(space).iter().any(|i| i.message.starts_with(&format!("{HOST_PLANE}: ")) && i.message.contains("share XProf row")),
            "{what}: merged host rows collide"
        );
    }
}

fn read_everything(space: &XSpace) {
    let summary = Summary::of(space);
    assert_eq!(summary.event_count(), events(space));
    assert_eq!(summary.line_count(), space.planes.iter().map(|p| p.lines.len()).sum::<usize>());
    serde_json::to_string(&summary).expect("summary serializes");
    let _ = xplane::validate(space);
    let _ = xplane::time_base(space);
    serde_json::to_string(&chrome::from_xspace(space)).expect("chrome json serializes");
}

fn xspace_target(bytes: &[u8]) {
    let Ok(a) = XSpace::decode(bytes) else { return };
    read_everything(&a);

    let mut host = a.clone();
    xplane::merge_host_planes(&mut host);
    assert_eq!(events(&host), events(&a), "merge_host_planes changed the event count");
    if a.planes.iter().any(|p| HOST_PLANES.contains(&p.name.as_str()) || p.name == NVTX_PLANE || p.name == ROCTX_PLANE) {
        check_merged_host(&host, "merge_host_planes");
    }

    let twice = xplane::merge_spaces(vec![a.clone(), a.clone()]);
    assert_eq!(events(&twice), expected_merged_events(&[&a, &a]), "merge of a space with itself lost or invented events");
    check_merged_host(&twice, "merge_spaces(a, a)");
    read_everything(&twice);

    // The same process twice, as a run of two: nothing lost but the Task Environment planes
    // after the one kept, and never two planes of one name.
    let folded = xplane::fold_processes(vec![("p".to_owned(), a.clone()), ("p".to_owned(), a.clone())]);
    let env: Vec<usize> = a.planes.iter().filter(|p| p.name == TASK_ENV_PLANE).map(|p| p.lines.iter().map(|l| l.events.len()).sum()).collect();
    let kept_env = env.first().copied().unwrap_or(0);
    assert_eq!(events(&folded), 2 * (events(&a) - env.iter().sum::<usize>()) + kept_env, "fold_processes lost or invented events");
    let mut names = HashSet::new();
    assert!(folded.planes.iter().all(|p| names.insert(p.name.as_str())), "fold_processes left two planes of one name");
    assert!(folded.planes.iter().zip(1..).all(|(p, id)| p.id == id), "fold_processes did not number planes 1..n");
    read_everything(&folded);

    let fixture = fixtures().merged.clone();
    for (first, second) in [(&fixture, &a), (&a, &fixture)] {
        let merged = xplane::merge_spaces(vec![first.clone(), second.clone()]);
        assert_eq!(events(&merged), expected_merged_events(&[first, second]), "merge with the fixture lost or invented events");
        check_merged_host(&merged, "merge_spaces(a, fixture)");
        read_everything(&merged);
    }

    // The host-side merge of the C API (roctx_utils_merge_into_xspace).
    let trace = &fixtures().trace;
    let out = xplane::merge_into_bytes(bytes, trace).expect("bytes that decode must merge");
    let out = XSpace::decode(out.as_slice()).expect("merge_into_bytes output decodes");
    assert_eq!(events(&out), events(&a) + trace.events.len(), "merge_into_bytes lost or invented events");
    check_merged_host(&out, "merge_into_bytes");
}

fn trace_target(bytes: &[u8]) {
    let trace = unpack_trace(bytes);
    let kept = trace.events.iter().filter(|e| e.end_ns >= e.start_ns).count();
    let space = xplane::standalone_xspace(&trace);
    assert_eq!(events(&space), kept, "standalone_xspace lost or invented events");
    let issues = xplane::validate(&space);
    assert!(!issues.iter().any(|i| i.error), "our own output does not validate: {issues:?}");
    check_merged_host(&space, "standalone_xspace");
    read_everything(&space);
    let plane = xplane::roctx_plane(&trace);
    assert_eq!(events(&XSpace { planes: vec![plane], ..XSpace::default() }), kept);
    let merged = xplane::merge_into_bytes(&fixtures().xla_bytes, &trace).expect("fixture decodes");
    let merged = XSpace::decode(merged.as_slice()).expect("merge_into_bytes output decodes");
    assert_eq!(events(&merged), events(&fixtures().xla) + kept);
    check_merged_host(&merged, "merge_into_bytes(xla, trace)");
}

// ---------------------------------------------------------------------------------------------
// Tests.

#[test]
fn fuzz_xspace_decode_inspect_merge() {
    let outcome = mutate::run(&XSPACE, &xspace_target);
    mutate::assert_clean(&XSPACE, &outcome);
}

#[test]
fn fuzz_trace_to_xspace() {
    let outcome = mutate::run(&TRACE, &trace_target);
    mutate::assert_clean(&TRACE, &outcome);
}

/// The committed seeds are what the generators produce today (map order aside), so a format
/// change that makes them stale is noticed: every seed decodes.
#[test]
fn committed_seeds_decode() {
    for (name, bytes) in mutate::load_corpus(&mutate::corpus_dir(XSPACE.manifest_dir, XSPACE.name)) {
        if !name.starts_with("crash-") {
            XSpace::decode(bytes.as_slice()).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
    assert_eq!(unpack_trace(&pack_trace(&roctx_trace())).events, roctx_trace().events);
}

/// Rewrites the generated seeds of both corpora (other files, such as crash reproducers, are
/// kept): `cargo test -p roctx_export --test fuzz_xspace -- --ignored regenerate_corpus`.
#[test]
#[ignore = "writes rust/fuzz/corpus/{xspace,trace}; run by hand after a format change"]
fn regenerate_corpus() {
    for (config, seeds) in [(&XSPACE, xspace_seeds()), (&TRACE, trace_seeds())] {
        let dir = mutate::corpus_dir(config.manifest_dir, config.name);
        std::fs::create_dir_all(&dir).unwrap();
        for (name, bytes) in seeds {
            std::fs::write(dir.join(name), bytes).unwrap();
        }
    }
}

