//! `roctx stats`, end to end: the four reports in the three formats over a file, a run and a log
//! directory, combined and per process, `--top` and `--report`, and bad input. The trace goes
//! through the real writer (`standalone_xspace`), so the flow ids that tie a kernel to its
//! range are the ones roctx_utils writes. Every number is worked out in the comments.

mod util;

use roctx_export::{logdir, xplane, Event, EventKind, KernelEvent, Trace};
use roctx_kernels::{Direction, MemCopy, Work};
use serde_json::Value;
use util::{xla_space, Dir};

const RUN: &str = "2026_01_01_00_00_00";

/// A 1 ms session. Thread 10: `step` 0-600 us launching `add` (10 us) and a 1 MB copy (20 us)
/// itself, and a nested `fwd` 100-300 us launching two `gemm(float const*, int)` (20 and 30
/// us). Thread 11: `step` 0-400 us launching an `add` of 5 us. A mark.
fn trace() -> Trace {
    let mut t = Trace::new("host0", 1_000_000, 2_000_000);
    let (step, fwd, tick) = (t.label("step"), t.label("fwd"), t.label("tick"));
    let range = |tid, start_ns, end_ns, label, seq| Event { kind: EventKind::Range, tid, end_tid: tid, start_ns, end_ns, label, depth: 0, seq };
    t.events.push(range(10, 1_000_000, 1_600_000, step, 1));
    t.events.push(range(10, 1_100_000, 1_300_000, fwd, 2));
    t.events.push(range(11, 1_000_000, 1_400_000, step, 1));
    t.events.push(Event { kind: EventKind::Mark, tid: 10, end_tid: 10, start_ns: 1_050_000, end_ns: 1_050_000, label: tick, depth: 0, seq: 0 });
    let kernel = |name: &str, start_ns, end_ns, stream, launched_by| KernelEvent {
        start_ns,
        end_ns,
        stream,
        name: name.to_owned(),
        details: "grid:1,1,1 block:64,1,1".to_owned(),
        launched_by: Some(launched_by),
        ..KernelEvent::default()
    };
    t.kernels.push(kernel("gemm(float const*, int)", 1_150_000, 1_170_000, 7, 1));
    t.kernels.push(kernel("gemm(float const*, int)", 1_200_000, 1_230_000, 7, 1));
    t.kernels.push(kernel("add", 1_350_000, 1_360_000, 7, 0));
    t.kernels.push(kernel("add", 1_050_000, 1_055_000, 9, 2));
    let copy = MemCopy { bytes: 1_000_000, direction: Direction::HostToDevice, ..MemCopy::default() };
    // The details as `Trace::add_kernels` writes them for a copy.
    let details = "kind_src:pinned kind_dst:device size:1000000 dest:0 async:1".to_owned();
    t.kernels.push(KernelEvent { work: Work::Copy(copy), name: "MemcpyH2D".into(), details, ..kernel("", 1_010_000, 1_030_000, 9, 0) });
    t
}

/// A run of `n` processes of [`trace`]; returns the log directory's name.
fn ranks(dir: &Dir, n: usize) -> &'static str {
    for rank in 0..n {
        logdir::write(&dir.path("logs"), RUN, &format!("h_rank{rank}"), &xplane::standalone_xspace(&trace())).unwrap();
    }
    "logs"
}

fn row<'a>(rows: &'a Value, key: &str, name: &str) -> &'a Value {
    rows.as_array().unwrap().iter().find(|r| r[key] == name).unwrap_or_else(|| panic!("no {key} {name} in {rows:#}"))
}

#[test]
fn json_has_the_four_reports_with_hand_computed_numbers() {
    let dir = Dir::new("stats_json");
    let file = dir.write_space("one.xplane.pb", &xplane::standalone_xspace(&trace()));
    let doc = dir.command().args(["stats", "--format", "json"]).args([&file]).expect(0).json();
    assert_eq!((doc["schema"].as_str(), doc["version"].as_u64()), (Some("roctx.stats"), Some(1)));
    assert_eq!(doc["reports"], serde_json::json!(["ranges", "kernels", "copies", "range_gpu"]));
    let p = &doc["processes"][0];
    assert_eq!((p["process"].as_str(), p["traced_ns"].as_u64(), p["marks"].as_u64()), (Some("one"), Some(1_000_000), Some(1)));

    // Whole durations: step 600 + 400 us = 100 % of 1 ms; the nested fwd is in step's too.
    let step = row(&p["ranges"], "range", "step");
    assert_eq!((step["count"].as_u64(), step["total_ns"].as_u64(), step["median_ns"].as_f64(), step["traced_pct"].as_f64()), (Some(2), Some(1_000_000), Some(500_000.0), Some(100.0)));
    assert_eq!(row(&p["ranges"], "range", "fwd")["total_ns"], 200_000);
    assert_eq!(p["ranges"][0]["range"], "step", "longest first");

    let gemm = row(&p["kernels"], "kernel", "gemm(float const*, int)");
    assert_eq!((gemm["count"].as_u64(), gemm["total_ns"].as_u64(), gemm["min_ns"].as_u64(), gemm["max_ns"].as_u64()), (Some(2), Some(50_000), Some(20_000), Some(30_000)));
    let add = row(&p["kernels"], "kernel", "add");
    assert_eq!((add["count"].as_u64(), add["total_ns"].as_u64()), (Some(2), Some(15_000)));
    assert!((gemm["gpu_pct"].as_f64().unwrap() - 50.0 / 65.0 * 100.0).abs() < 1e-9);

    // 1 MB in 20 us: 50 GB/s.
    let copy = row(&p["copies"], "operation", "MemcpyH2D");
    assert_eq!((copy["kind"].as_str(), copy["bytes"].as_u64(), copy["total_ns"].as_u64(), copy["gbps"].as_f64()), (Some("memcpy"), Some(1_000_000), Some(20_000), Some(50.0)));

    // step: thread 10's own add + copy (30 us) and its fwd's gemms (50), thread 11's add (5);
    // projected 10-360 us (350) and 50-55 (5).
    let step = row(&p["range_gpu"], "range", "step");
    assert_eq!(
        (step["instances"].as_u64(), step["gpu_ops"].as_u64(), step["gpu_inclusive_ns"].as_u64(), step["gpu_exclusive_ns"].as_u64()),
        (Some(2), Some(5), Some(85_000), Some(35_000))
    );
    assert_eq!((step["projected"]["total_ns"].as_u64(), step["projected"]["max_ns"].as_u64(), step["range_total_ns"].as_u64()), (Some(355_000), Some(350_000), Some(1_000_000)));
    let fwd = row(&p["range_gpu"], "range", "fwd");
    assert_eq!((fwd["gpu_inclusive_ns"].as_u64(), fwd["gpu_exclusive_ns"].as_u64(), fwd["projected"]["total_ns"].as_u64()), (Some(50_000), Some(50_000), Some(80_000)));
}

#[test]
fn a_table_is_aligned_in_us_and_csv_quotes_names_with_commas() {
    let dir = Dir::new("stats_table_csv");
    let file = dir.write_space("one.xplane.pb", &xplane::standalone_xspace(&trace()));
    let table = dir.command().args(["stats"]).args([&file]).expect(0).stdout;
    assert!(table.contains("traced 1.000 ms; 1 mark"), "{table}");
    assert!(table.contains("ranges: 2 rows"), "{table}");
    assert!(table.lines().any(|l| l.trim_start().starts_with("1000.000") && l.ends_with("  step")), "{table}");
    assert!(table.lines().any(|l| l.trim_start().starts_with("50.000") && l.ends_with("  gemm(float const*, int)")), "{table}");
    assert!(table.contains("range_gpu: 2 labels with GPU work"), "{table}");

    let csv = dir.command().args(["stats", "--format", "csv", "--report", "kernels,copies"]).args([&file]).expect(0).stdout;
    let tables: Vec<&str> = csv.split("\n\n").collect();
    assert_eq!(tables.len(), 2, "{csv}");
    let mut kernels = tables[0].lines();
    assert_eq!(kernels.next(), Some("report,process,group,kernel,count,total_ns,avg_ns,median_ns,min_ns,max_ns,gpu_pct"));
    let gemm = kernels.next().unwrap();
    assert!(gemm.starts_with("kernels,one,,\"gemm(float const*, int)\",2,50000,25000,25000,20000,30000,"), "{gemm}");
    assert!(tables[1].starts_with("report,process,group,kind,operation,bytes,count,total_ns"), "{csv}");
    assert!(tables[1].contains("\ncopies,one,,memcpy,MemcpyH2D,1000000,1,20000,20000,20000,20000,20000,50\n"), "{csv}");
}

#[test]
fn a_run_is_combined_unless_per_process_and_a_log_directory_is_its_newest_run() {
    let dir = Dir::new("stats_run");
    let logs = ranks(&dir, 3);
    let run_dir = format!("{logs}/plugins/profile/{RUN}");
    for input in [logs, run_dir.as_str()] {
        let doc = dir.command().args(["stats", "--format", "json", input]).expect(0).json();
        let all = &doc["processes"][0];
        assert_eq!(doc["processes"].as_array().unwrap().len(), 1);
        assert_eq!((all["process"].as_str(), all["traced_ns"].as_u64(), all["files"].as_array().unwrap().len()), (Some("all"), Some(3_000_000), 3));
        assert_eq!(row(&all["kernels"], "kernel", "add")["count"], 6);
        assert_eq!(row(&all["range_gpu"], "range", "step")["gpu_inclusive_ns"], 255_000);
    }
    let doc = dir.command().args(["stats", "--format", "json", "--per-process", logs]).expect(0).json();
    let names: Vec<&str> = doc["processes"].as_array().unwrap().iter().map(|p| p["process"].as_str().unwrap()).collect();
    assert_eq!(names, ["h_rank0", "h_rank1", "h_rank2"]);
    assert_eq!(row(&doc["processes"][2]["kernels"], "kernel", "add")["count"], 2);
    let csv = dir.command().args(["stats", "--format", "csv", "--per-process", "--report", "ranges", logs]).expect(0).stdout;
    assert_eq!(csv.lines().filter(|l| l.starts_with("ranges,h_rank1,,step,")).count(), 1, "{csv}");
}

#[test]
fn top_report_per_thread_and_fold_payload_shape_the_rows() {
    let dir = Dir::new("stats_options");
    let file = dir.write_space("one.xplane.pb", &xplane::standalone_xspace(&trace()));
    let doc = dir.command().args(["stats", "--format", "json", "--top", "1", "--report", "kernels,kernels"]).args([&file]).expect(0).json();
    assert_eq!(doc["reports"], serde_json::json!(["kernels"]));
    assert_eq!(doc["processes"][0]["kernels"].as_array().unwrap().len(), 1);
    assert!(doc["processes"][0].get("ranges").is_none());
    let table = dir.command().args(["stats", "--top", "1", "--report", "kernels"]).args([&file]).expect(0).stdout;
    assert!(table.contains("... 1 row not shown (--top 0 shows all)"), "{table}");

    let doc = dir.command().args(["stats", "--format", "json", "--per-thread", "--report", "ranges,kernels"]).args([&file]).expect(0).json();
    let groups: Vec<(&str, &str)> = doc["processes"][0]["ranges"].as_array().unwrap().iter().map(|r| (r["group"].as_str().unwrap(), r["range"].as_str().unwrap())).collect();
    assert_eq!(groups, [("Host Threads/10/ROCTX", "step"), ("Host Threads/10/ROCTX", "fwd"), ("Host Threads/11/ROCTX", "step")]);
    let streams: Vec<&str> = doc["processes"][0]["kernels"].as_array().unwrap().iter().map(|r| r["group"].as_str().unwrap()).collect();
    assert!(streams.iter().all(|g| g.starts_with("/device:GPU:0 Stream #")), "{streams:?}");

    let mut t = Trace::new("h", 0, 1000);
    for (i, label) in ["Thunk:#hlo_op=a#", "Thunk:#hlo_op=b#"].into_iter().enumerate() {
        let l = t.label(label);
        t.events.push(Event { kind: EventKind::Range, tid: 1, end_tid: 1, start_ns: i as u64 * 100, end_ns: i as u64 * 100 + 50, label: l, depth: 0, seq: 0 });
    }
    let xla = dir.write_space("thunks.xplane.pb", &xplane::standalone_xspace(&t));
    let doc = dir.command().args(["stats", "--format", "json", "--fold-payload", "--report", "ranges"]).args([&xla]).expect(0).json();
    assert_eq!(doc["processes"][0]["ranges"], serde_json::json!([{"group": "", "range": "Thunk:", "count": 2, "total_ns": 100, "avg_ns": 50.0, "median_ns": 50.0, "min_ns": 50, "max_ns": 50, "traced_pct": 10.0}]));
}

#[test]
fn a_trace_without_ranges_or_gpu_work_says_so_plainly() {
    let dir = Dir::new("stats_empty");
    let file = dir.write_space("xla.xplane.pb", &xla_space());
    let table = dir.command().args(["stats"]).args([&file]).expect(0).stdout;
    assert!(table.contains("ranges: none in this trace (no ROCTX or NVTX range)"), "{table}");
    assert!(table.contains("kernels: none in this trace"), "{table}");
    assert!(table.contains("copies: none in this trace"), "{table}");
    assert!(table.contains("range_gpu: no kernel or copy was launched inside a range"), "{table}");
    let doc = dir.command().args(["stats", "--format", "json"]).args([&file]).expect(0).json();
    assert_eq!(doc["processes"][0]["kernels"], serde_json::json!([]));
}

#[test]
fn bad_input_and_bad_flags_exit_2_with_a_message() {
    let dir = Dir::new("stats_bad");
    let run = dir.command().args(["stats", "missing.xplane.pb"]).expect(2);
    assert!(run.stderr.contains("missing.xplane.pb does not exist"), "{}", run.stderr);
    let junk = dir.write("junk.xplane.pb", b"\xff\xff\xff\xff not a proto");
    let run = dir.command().args(["stats"]).args([&junk]).expect(2);
    assert!(run.stderr.contains("not an XSpace"), "{}", run.stderr);
    let file = dir.write_space("one.xplane.pb", &xplane::standalone_xspace(&trace()));
    let run = dir.command().args(["stats", "--report", "ranges,bogus"]).args([&file]).expect(2);
    assert!(run.stderr.contains("range_gpu"), "the valid reports are listed: {}", run.stderr);
    let run = dir.command().args(["stats", "--format", "xml"]).args([&file]).expect(2);
    assert!(run.stderr.contains("csv"), "{}", run.stderr);
}

/// Issue 40: what a received file puts in a label never becomes a line of its own (a forged row
/// or note), a live spreadsheet formula, or a raw control byte, in any format.
#[test]
fn labels_from_a_file_never_forge_lines_formulas_or_escapes() {
    let dir = Dir::new("stats_hostile_labels");
    let mut t = trace();
    let labels = [
        "step\n    999.000    99.9        1      999.000      999.000      999.000      999.000  forged",
        "=HYPERLINK(\"http://x\",\"y\")",
        "+1+1",
        "-cmd",
        "@SUM(A1)",
        "\tTAB",
        "bell\u{7}esc\u{1b}[2Jcr\r",
    ];
    for (i, text) in labels.iter().enumerate() {
        let label = t.label(text);
        let tid = 20 + i as u64;
        t.events.push(Event { kind: EventKind::Range, tid, end_tid: tid, start_ns: 1_000_000, end_ns: 1_000_100, label, depth: 0, seq: 1 });
    }
    t.warnings.push("dropped nothing\nnote: forged note".into());
    let file = dir.write_space("hostile.xplane.pb", &xplane::standalone_xspace(&t));

    let table = dir.command().args(["stats", "--report", "ranges"]).args([&file]).expect(0).stdout;
    assert!(!table.lines().any(|l| l.trim_end().ends_with("forged") && !l.contains("step")), "a label started a line of its own:\n{table}");
    assert!(!table.lines().any(|l| l.starts_with("note: forged")), "a note was forged:\n{table}");
    assert!(table.contains("step\u{fffd}    999.000"), "{table}");

    let csv = dir.command().args(["stats", "--format", "csv", "--report", "ranges"]).args([&file]).expect(0).stdout;
    assert!(!csv.chars().any(|c| c.is_control() && c != '\n'), "a raw control byte in the CSV: {csv:?}");
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 1 + 2 + labels.len(), "one line per row:\n{csv}");
    for formula in ["=HYPERLINK", "+1+1", "-cmd", "@SUM(A1)"] {
        let cell = format!(",\"'{}", formula.replace('"', "\"\""));
        assert!(csv.contains(&cell), "{formula} not neutralised: {csv}");
    }
    for row in &rows[1..] {
        let range = row.split(',').nth(3).unwrap();
        assert!(!range.starts_with(['=', '+', '-', '@']), "a live formula: {row}");
    }
    assert!(csv.contains("\u{fffd}TAB"), "{csv}");
}

/// Issue 40: 1 M distinct labels (a 42 MB file) took 1.16 GB (RSS): every label's rows, and a
/// copy of its name per range. Now the labels past the first `MAX_LABELS` (100,000) distinct
/// ones of a table are summed in one row, said in a note, and a range costs an index: the run
/// fits 700 MB of address space, near what decoding the file takes (`inspect` fits 600 MB).
#[test]
fn a_million_distinct_labels_are_summed_past_a_bound_and_memory_stays_near_the_decoded_file() {
    let dir = Dir::new("stats_many_labels");
    let file = dir.write_space("labels.xplane.pb", &util::many_labels(1_000_000));
    let run = dir.command().args(["stats", "--report", "ranges", "--top", "3"]).args([&file]).run_after("ulimit -v 700000");
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{}", run.stdout);
    assert!(run.stdout.contains("note: ranges: 900000 ranges past the first 100000 distinct labels are summed in the row \"(other labels)\""), "{}", run.stdout);
    assert!(run.stdout.contains("ranges: 100001 rows"), "{}", run.stdout);
    assert!(run.stdout.lines().any(|l| l.contains(" 900000 ") && l.ends_with("  (other labels)")), "{}", run.stdout);
}
