//! The `roctx` binary, end to end. Contents:
//!
//! - `inspect`: text and JSON summaries, log directories, the exit code scripts gate on;
//! - `merge`: an XLA capture plus a roctx_utils log directory;
//! - `convert`: Chrome JSON to stdout and to a gzip file;
//! - runs of several processes (one file per rank): inspect lists them, `merge --per-process`
//!   and `convert` keep each apart in one file;
//! - errors: what users see for bad paths, bad files and bad flags, and that nothing panics.
//!
//! The harness (`TestCommand`, scratch `Dir`, fixtures) is in `util/`.

mod util;

use std::io::Read;
use std::process::Stdio;

use roctx_export::logdir;
use roctx_export::xplane_proto::XSpace;
use serde_json::Value;
use util::{plane, s, sample_space, xla_space, Dir};

/// The JSON line entry named `name` in plane `plane` of the first file of an inspect document.
fn json_line<'a>(doc: &'a Value, plane: &str, name: &str) -> &'a Value {
    let planes = doc["files"][0]["planes"].as_array().expect("planes");
    let p = planes.iter().find(|p| p["name"] == plane).unwrap_or_else(|| panic!("no plane {plane} in {doc:#}"));
    p["lines"].as_array().unwrap().iter().find(|l| l["name"] == name).unwrap_or_else(|| panic!("no line {name} in {p:#}"))
}

// --- inspect ------------------------------------------------------------------------------

#[test]
fn inspect_shows_rows_nesting_depth_and_event_names_of_a_log_directory_file() {
    let dir = Dir::new("inspect_text");
    let file = logdir::write(&dir.path("logs"), "2026_01_01_00_00_00", "host0", &sample_space()).unwrap();
    let run = dir.command().args(["inspect", s(&file)]).expect(0);
    let out = &run.stdout;
    assert!(out.starts_with(s(&file)), "{out}");
    assert!(out.contains("hostnames: host0"), "{out}");
    assert!(out.contains("xspace warning: roctx_utils: 3 events dropped"), "{out}");
    assert!(out.contains("plane \"/host:CPU\" (id 0): 2 lines, 5 events, rendered by XProf"), "{out}");
    // row, id, events, depth, then the name.
    let row = |name: &str| -> Vec<String> {
        let line = out.lines().find(|l| l.contains(name)).unwrap_or_else(|| panic!("no row {name}:\n{out}"));
        line.split_whitespace().map(str::to_owned).collect()
    };
    let main = row("Host Threads/4242/ROCTX (shown as \"Host Threads/4242/ROCTX (main)\")");
    assert_eq!(main[..4], ["1", "4242", "4", "2"].map(String::from));
    assert!(main.join(" ").ends_with("outer, inner, mark"), "{main:?}");
    let other = row("Host Threads/4300/ROCTX");
    assert_eq!(other[..4], ["2", "4300", "1", "1"].map(String::from));
    assert!(out.contains("validation: ok"), "{out}");
    assert!(run.stderr.is_empty(), "{}", run.stderr);
}

#[test]
fn inspect_json_reports_the_same_values_with_stable_keys() {
    let dir = Dir::new("inspect_json");
    let file = logdir::write(&dir.path("logs"), "2026_01_01_00_00_00", "host0", &sample_space()).unwrap();
    let doc = dir.command().args(["inspect", "--json", s(&file)]).expect(0).json();
    let mut keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["error_count", "files", "warning_count"]);
    assert_eq!((doc["error_count"].as_u64(), doc["warning_count"].as_u64()), (Some(0), Some(0)));
    let f = &doc["files"][0];
    assert_eq!(f["path"], s(&file));
    assert_eq!(f["hostnames"][0], "host0");
    assert_eq!(f["xspace_warnings"][0], "roctx_utils: 3 events dropped");
    assert_eq!(f["issues"].as_array().unwrap().len(), 0);
    let p = &f["planes"][0];
    assert_eq!((&p["name"], &p["line_count"], &p["event_count"], &p["rendered"]), (&Value::from("/host:CPU"), &Value::from(2), &Value::from(5), &Value::from(true)));
    let l = json_line(&doc, "/host:CPU", "Host Threads/4242/ROCTX");
    assert_eq!(l["row"], 1);
    assert_eq!(l["id"], 4242);
    assert_eq!(l["display_id"], 1);
    assert_eq!(l["display_name"], "Host Threads/4242/ROCTX (main)");
    assert_eq!(l["event_count"], 4);
    assert_eq!(l["depth"], 2);
    assert_eq!(l["event_names"], serde_json::json!(["outer", "inner", "mark"]));
    assert_eq!(json_line(&doc, "/host:CPU", "Host Threads/4300/ROCTX")["row"], 2);
}

#[test]
fn inspect_of_a_log_directory_reads_only_its_newest_run() {
    let dir = Dir::new("inspect_logdir");
    let logs = dir.path("logs");
    let mut old = sample_space();
    old.hostnames = vec!["old-host".into()];
    logdir::write(&logs, "2025_06_01_00_00_00", "old-host", &old).unwrap();
    let mut new = sample_space();
    new.hostnames = vec!["new-host".into()];
    logdir::write(&logs, "2026_01_01_00_00_00", "new-host", &new).unwrap();
    let doc = dir.command().args(["inspect", "--json", "logs"]).expect(0).json();
    let files = doc["files"].as_array().unwrap();
    assert_eq!(files.len(), 1, "{doc:#}");
    assert!(files[0]["path"].as_str().unwrap().ends_with("2026_01_01_00_00_00/new-host.xplane.pb"), "{doc:#}");
    assert_eq!(files[0]["hostnames"][0], "new-host");
    // A second host in the same run is inspected too.
    logdir::write(&logs, "2026_01_01_00_00_00", "second-host", &sample_space()).unwrap();
    let run = dir.command().args(["inspect", "logs"]).expect(0);
    let headers: Vec<&str> = run.stdout.lines().filter(|l| !l.starts_with(' ') && !l.is_empty()).collect();
    assert_eq!(
        headers,
        [
            "run 2026_01_01_00_00_00: 2 processes: new-host, second-host",
            "logs/plugins/profile/2026_01_01_00_00_00/new-host.xplane.pb",
            "logs/plugins/profile/2026_01_01_00_00_00/second-host.xplane.pb"
        ],
        "{}",
        run.stdout
    );
}

// --- runs of several processes (one file per rank) -----------------------------------------

const RUN: &str = "2026_01_01_00_00_00";

/// A run of three processes, `h_rank0..2` on hosts `node0..2`, with the same threads (4242 and
/// 4300) each; returns the log directory's name.
fn three_ranks(dir: &Dir) -> &'static str {
    for rank in 0..3 {
        let mut space = sample_space();
        space.hostnames = vec![format!("node{rank}")];
        logdir::write(&dir.path("logs"), RUN, &format!("h_rank{rank}"), &space).unwrap();
    }
    "logs"
}

#[test]
fn inspect_of_a_run_lists_its_processes_first() {
    let dir = Dir::new("inspect_run");
    let logs = three_ranks(&dir);
    let run_dir = format!("{logs}/plugins/profile/{RUN}");
    for input in [logs, run_dir.as_str()] {
        let run = dir.command().args(["inspect", input]).expect(0);
        let mut lines = run.stdout.lines();
        assert_eq!(lines.next(), Some("run 2026_01_01_00_00_00: 3 processes: h_rank0, h_rank1, h_rank2"), "{}", run.stdout);
        assert_eq!(lines.next(), Some(""), "{}", run.stdout);
        assert_eq!(lines.next(), Some(format!("{run_dir}/h_rank0.xplane.pb").as_str()), "{}", run.stdout);
        assert_eq!(run.stdout.matches("validation: ok").count(), 3, "{}", run.stdout);

        let doc = dir.command().args(["inspect", "--json", input]).expect(0).json();
        let mut keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(keys, ["error_count", "files", "processes", "run", "warning_count"]);
        assert_eq!(doc["processes"], serde_json::json!(["h_rank0", "h_rank1", "h_rank2"]));
        assert_eq!(doc["run"], RUN);
        assert_eq!(doc["files"].as_array().unwrap().len(), 3);
        assert_eq!(doc["files"][2]["path"], format!("{run_dir}/h_rank2.xplane.pb"));
    }
    // A run of one process is just its file, as before.
    let single = dir.command().args(["inspect", "--json", &format!("{run_dir}/h_rank1.xplane.pb")]).expect(0).json();
    assert!(single.get("processes").is_none() && single.get("run").is_none(), "{single:#}");
}

#[test]
fn merge_per_process_keeps_each_process_of_a_run_apart_in_one_file() {
    let dir = Dir::new("merge_per_process");
    let logs = three_ranks(&dir);
    let run = dir.command().args(["merge", "--per-process", logs, "-o", "all.xplane.pb"]).expect(0);
    assert!(run.stdout.starts_with("merged 3 files into all.xplane.pb as 3 processes: node0, node1, node2; 4 planes"), "{}", run.stdout);
    assert!(run.stdout.contains("0 validation errors"), "{}", run.stdout);

    let doc = dir.command().args(["inspect", "--json", "all.xplane.pb"]).expect(0).json();
    assert_eq!(doc["error_count"], 0, "{doc:#}");
    let planes = doc["files"][0]["planes"].as_array().unwrap();
    let names: Vec<&str> = planes.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["/host:CPU h_rank0", "/host:CPU h_rank1", "/host:CPU h_rank2", "Task Environment"]);
    let mut ids: Vec<i64> = planes.iter().map(|p| p["id"].as_i64().unwrap()).collect();
    ids.dedup();
    assert_eq!(ids.len(), 4, "{ids:?}");
    for (rank, plane) in planes.iter().take(3).enumerate() {
        let host = format!("/host:CPU h_rank{rank}");
        assert_eq!(plane["rendered"], true);
        // Every rank's thread 4242 in its own process, nesting and all.
        assert_eq!(json_line(&doc, &host, "Host Threads/4242/ROCTX")["event_count"], 4);
        assert_eq!(json_line(&doc, &host, "Host Threads/4242/ROCTX")["depth"], 2);
    }
    assert_eq!(doc["files"][0]["hostnames"], serde_json::json!(["node0", "node1", "node2"]));
    let text = dir.command().args(["inspect", "all.xplane.pb"]).expect(0).stdout;
    assert_eq!(text.matches(", rendered by XProf").count(), 3, "{text}");

    // Without --per-process the three are taken for captures of one process: one /host:CPU.
    dir.command().args(["merge", logs, "-o", "one.xplane.pb"]).expect(0);
    let doc = dir.command().args(["inspect", "--json", "one.xplane.pb"]).expect(0).json();
    assert_eq!(doc["files"][0]["planes"].as_array().unwrap().iter().filter(|p| p["name"] == "/host:CPU").count(), 1);
}

#[test]
fn convert_of_a_run_writes_one_trace_with_a_process_group_per_file() {
    let dir = Dir::new("convert_run");
    let logs = three_ranks(&dir);
    let doc = dir.command().args(["convert", "--format", "chrome", logs]).expect(0).json();
    let events = doc["traceEvents"].as_array().unwrap();
    let processes: Vec<(u64, &str)> =
        events.iter().filter(|e| e["name"] == "process_name").map(|e| (e["pid"].as_u64().unwrap(), e["args"]["name"].as_str().unwrap())).collect();
    assert_eq!(processes, [(1, "h_rank0 /host:CPU"), (100_001, "h_rank1 /host:CPU"), (200_001, "h_rank2 /host:CPU")]);
    // The same thread of every rank, each under its own process.
    let mut pids: Vec<u64> = events.iter().filter(|e| e["ph"] == "X" && e["name"] == "outer").map(|e| e["pid"].as_u64().unwrap()).collect();
    pids.dedup();
    assert_eq!(pids, [1, 100_001, 200_001]);
    assert_eq!(doc["otherData"]["processes"], serde_json::json!(["h_rank0", "h_rank1", "h_rank2"]));
    assert_eq!(doc["otherData"]["hostnames"], serde_json::json!(["node0", "node1", "node2"]));

    let run = dir.command().args(["convert", "--format", "chrome", &format!("{logs}/plugins/profile/{RUN}"), "-o", "run.json.gz"]).expect(0);
    assert!(run.stdout.starts_with("wrote run.json.gz: ") && run.stdout.ends_with(" trace events from 3 processes, gzip\n"), "{}", run.stdout);
}

#[test]
fn convert_of_a_run_with_an_unreadable_file_names_it_and_writes_nothing() {
    let dir = Dir::new("convert_run_unreadable");
    let logs = three_ranks(&dir);
    let bad = format!("{logs}/plugins/profile/{RUN}/h_rank1.xplane.pb");
    dir.write(&bad, b"\xff\xff\xff\xff");
    let run = dir.command().args(["convert", "--format", "chrome", logs, "-o", "run.json"]).expect(2);
    assert!(run.stderr.starts_with(&format!("roctx: reading {bad}: not an XSpace (")), "{}", run.stderr);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert_eq!(dir.names(), ["logs"], "an output or a temporary file was left behind");
}

#[test]
fn inspect_exits_1_when_two_lines_share_an_xprof_row() {
    let dir = Dir::new("inspect_collision");
    // The old XLA NVTX scheme: (1<<32)+5 is drawn in thread 5's row.
    let space = XSpace { planes: vec![plane("/host:CPU", "work", &[(5, "thread 5", 2), ((1 << 32) + 5, "Host Threads/5/NVTX", 1)])], ..XSpace::default() };
    let file = dir.write_space("collide.xplane.pb", &space);
    let run = dir.command().args(["inspect", s(&file)]).expect(1);
    assert!(run.stdout.contains("validation: 1 error, 0 warnings"), "{}", run.stdout);
    assert!(run.stdout.contains("share XProf row 5"), "{}", run.stdout);
    let doc = dir.command().args(["inspect", "--json", s(&file)]).expect(1).json();
    assert_eq!(doc["error_count"], 1);
    assert_eq!(json_line(&doc, "/host:CPU", "thread 5")["row"], 5);
    assert_eq!(json_line(&doc, "/host:CPU", "Host Threads/5/NVTX")["row"], 5);
    let issue = &doc["files"][0]["issues"][0];
    assert_eq!(issue["severity"], "error");
    assert!(issue["message"].as_str().unwrap().contains("would be drawn as one"), "{issue}");
}

#[test]
fn an_empty_file_is_an_empty_xspace_with_a_warning_not_an_error() {
    let dir = Dir::new("empty_file");
    dir.write("empty.xplane.pb", b"");
    let run = dir.command().args(["inspect", "empty.xplane.pb"]).expect(0);
    assert!(run.stdout.contains("warning: no planes"), "{}", run.stdout);
    let doc = dir.command().args(["inspect", "--json", "empty.xplane.pb"]).expect(0).json();
    assert_eq!((doc["error_count"].as_u64(), doc["warning_count"].as_u64()), (Some(0), Some(1)));
}

// --- merge --------------------------------------------------------------------------------

#[test]
fn merge_puts_each_roctx_row_right_after_its_xla_thread_without_collisions() {
    let dir = Dir::new("merge");
    dir.write_space("xla/plugins/profile/2026_01_01_00_00_00/host0.xplane.pb", &xla_space());
    logdir::write(&dir.path("roctx"), "2026_01_01_00_00_01", "host0", &sample_space()).unwrap();
    let run = dir.command().args(["merge", "xla", "roctx", "-o", "out/merged.xplane.pb"]).expect(0);
    assert!(run.stdout.starts_with("merged 2 files into out/merged.xplane.pb: host0; 3 planes"), "{}", run.stdout);
    assert!(run.stdout.contains("0 validation errors"), "{}", run.stdout);
    assert_eq!(run.stdout.lines().count(), 1, "{}", run.stdout);

    let doc = dir.command().args(["inspect", "--json", "out/merged.xplane.pb"]).expect(0).json();
    assert_eq!(doc["error_count"], 0, "{doc:#}");
    let row = |name: &str| json_line(&doc, "/host:CPU", name)["row"].as_u64().unwrap();
    assert_eq!(row("Host Threads/4242/ROCTX"), row("python3") + 1);
    assert_eq!(row("Host Threads/4300/ROCTX"), row("tf_XLACpu/4300") + 1);
    // The thread lines kept their own events; the ROCTX lines theirs.
    assert_eq!(json_line(&doc, "/host:CPU", "python3")["event_count"], 3);
    assert_eq!(json_line(&doc, "/host:CPU", "Host Threads/4242/ROCTX")["event_count"], 4);
    assert_eq!(json_line(&doc, "/host:CPU", "Host Threads/4242/ROCTX")["depth"], 2);
    assert_eq!(json_line(&doc, "/device:GPU:0", "Stream #1")["event_count"], 4);
    let rows: Vec<u64> = doc["files"][0]["planes"].as_array().unwrap().iter().find(|p| p["name"] == "/host:CPU").unwrap()["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["row"].as_u64().unwrap())
        .collect();
    let mut distinct = rows.clone();
    distinct.dedup();
    assert_eq!(distinct, rows, "rows collide");
    assert_eq!(doc["files"][0]["hostnames"], serde_json::json!(["host0"]));
}

#[test]
fn merge_refuses_to_overwrite_an_input() {
    let dir = Dir::new("merge_overwrite");
    let input = dir.write_space("a.xplane.pb", &sample_space());
    let before = std::fs::read(&input).unwrap();
    let run = dir.command().args(["merge", "a.xplane.pb", "-o", "./a.xplane.pb"]).expect(2);
    assert!(run.stderr.starts_with("roctx: refusing to overwrite input a.xplane.pb"), "{}", run.stderr);
    assert!(run.stderr.contains("hint: choose another output file with -o"), "{}", run.stderr);
    assert_eq!(std::fs::read(&input).unwrap(), before);
}

// --- convert ------------------------------------------------------------------------------

/// The `X` event named `name` of a Chrome trace document.
fn complete_event<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["traceEvents"].as_array().unwrap().iter().find(|e| e["ph"] == "X" && e["name"] == name).unwrap_or_else(|| panic!("no X event {name}"))
}

#[test]
fn convert_writes_chrome_json_with_nvtx_range_args_to_stdout() {
    let dir = Dir::new("convert_stdout");
    let file = dir.write_space("t.xplane.pb", &sample_space());
    let doc = dir.command().args(["convert", "--format", "chrome", s(&file)]).expect(0).json();
    let outer = complete_event(&doc, "outer");
    assert_eq!(outer["args"]["nvtx_range"], "outer");
    assert_eq!(outer["dur"], 80.0);
    assert_eq!(complete_event(&doc, "inner")["args"]["nvtx_range"], "inner");
    assert_eq!(doc["otherData"]["hostnames"][0], "host0");
}

#[test]
fn convert_to_a_gz_file_writes_gzip_and_creates_its_directory() {
    let dir = Dir::new("convert_gz");
    dir.write_space("t.xplane.pb", &sample_space());
    let run = dir.command().args(["convert", "--format", "chrome", "t.xplane.pb", "-o", "out/trace.json.gz"]).expect(0);
    assert!(run.stdout.starts_with("wrote out/trace.json.gz: "), "{}", run.stdout);
    let gz = std::fs::read(dir.path("out/trace.json.gz")).unwrap();
    let mut text = String::new();
    flate2::read::GzDecoder::new(gz.as_slice()).read_to_string(&mut text).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(complete_event(&doc, "outer")["args"]["nvtx_range"], "outer");
}

// --- errors -------------------------------------------------------------------------------

#[test]
fn a_nonexistent_path_is_named_and_exits_2() {
    let dir = Dir::new("nonexistent");
    for args in [vec!["inspect", "nope.xplane.pb"], vec!["merge", "nope.xplane.pb", "-o", "x.xplane.pb"], vec!["convert", "--format", "chrome", "nope.xplane.pb"]] {
        let run = dir.command().args(&args).expect(2);
        assert_eq!(run.stderr, "roctx: nope.xplane.pb does not exist\n", "{args:?}");
        assert!(run.stdout.is_empty());
    }
    assert!(!dir.path("x.xplane.pb").exists());
}

#[test]
fn random_bytes_are_not_an_xspace_and_exit_2() {
    let dir = Dir::new("random_bytes");
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let bytes: Vec<u8> = (0..4096)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 32) as u8
        })
        .collect();
    dir.write("noise.xplane.pb", &bytes);
    let run = dir.command().args(["inspect", "noise.xplane.pb"]).expect(2);
    assert!(
        run.stderr.starts_with("roctx: reading noise.xplane.pb: not an XSpace (failed to decode Protobuf message"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.trim_end().ends_with("); expected a .xplane.pb file or a TensorBoard log directory"), "{}", run.stderr);
}

#[test]
fn an_unknown_format_lists_the_supported_ones_and_exits_2() {
    let dir = Dir::new("unknown_format");
    dir.write_space("t.xplane.pb", &sample_space());
    let run = dir.command().args(["convert", "--format", "perfetto-proto", "t.xplane.pb"]).expect(2);
    assert!(run.stderr.starts_with("roctx: invalid value 'perfetto-proto' for '--format <FORMAT>'"), "{}", run.stderr);
    assert!(run.stderr.contains("[possible values: chrome]"), "{}", run.stderr);
    let run = dir.command().args(["convert", "t.xplane.pb"]).expect(2);
    assert!(run.stderr.contains("--format <FORMAT>"), "{}", run.stderr);
}

#[test]
fn a_log_directory_without_traces_gets_a_hint() {
    let dir = Dir::new("empty_logdir");
    std::fs::create_dir_all(dir.path("logs/plugins/profile/2026_01_01_00_00_00")).unwrap();
    let run = dir.command().args(["inspect", "logs"]).expect(2);
    assert!(run.stderr.starts_with("roctx: no *.xplane.pb under logs"), "{}", run.stderr);
    assert!(run.stderr.contains("\nhint: pass a .xplane.pb file, or the directory given to `tensorboard --logdir`"), "{}", run.stderr);
}

#[test]
fn truncated_files_never_panic() {
    let dir = Dir::new("truncated");
    let merged = {
        use prost::Message;
        roctx_export::xplane::merge_spaces(vec![xla_space(), sample_space()]).encode_to_vec()
    };
    // Every 7th cut, plus the last few bytes: each is read as an XSpace or rejected with exit 2.
    for cut in (0..merged.len()).step_by(7).chain(merged.len() - 3..merged.len()) {
        let name = format!("cut{cut}.xplane.pb");
        dir.write(&name, &merged[..cut]);
        for args in [vec!["inspect", &name], vec!["convert", "--format", "chrome", &name], vec!["merge", &name, "-o", "m.xplane.pb"], vec!["stats", &name]] {
            let run = dir.command().args(&args).run();
            assert!([0, 1, 2].contains(&run.code), "{args:?}: exit {}\n{}", run.code, run.stderr);
            assert!(!run.stderr.contains("panicked"), "{args:?}: {}", run.stderr);
            if run.code == 2 {
                assert!(run.stderr.starts_with("roctx: reading "), "{args:?}: {}", run.stderr);
            }
        }
    }
}

#[test]
fn a_closed_stdout_exits_quietly_with_0() {
    let dir = Dir::new("broken_pipe");
    // Enough lines that the text (several hundred KB) cannot fit in a pipe buffer.
    let lines: Vec<(i64, String, usize)> = (1..=5000).map(|i| (i, format!("thread number {i} with a longish name"), 1)).collect();
    let lines: Vec<(i64, &str, usize)> = lines.iter().map(|(i, n, c)| (*i, n.as_str(), *c)).collect();
    let space = XSpace { planes: vec![plane("/host:CPU", "e", &lines)], ..XSpace::default() };
    dir.write_space("big.xplane.pb", &space);
    for args in [vec!["inspect", "big.xplane.pb"], vec!["convert", "--format", "chrome", "big.xplane.pb"]] {
        let mut cmd = dir.command();
        let mut child = cmd.args(&args).process().stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stderr.is_empty(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

// --- resources: measurement inputs ------------------------------------------------------------

/// Writes the measurement inputs of the hardening work (not a test): the 10 MB file of 5 M
/// events, the 100 k-line file and the 100 k-thread file with ROCTX lines, into `$ROCTX_BIG_DIR`. Run by hand:
/// `ROCTX_BIG_DIR=/tmp/big cargo test -p roctx_cli --test cli -- --ignored write_big_inputs`.
#[test]
#[ignore = "writes large measurement inputs; run by hand with ROCTX_BIG_DIR set"]
fn write_big_inputs() {
    use prost::Message;
    let dir = std::path::PathBuf::from(std::env::var_os("ROCTX_BIG_DIR").expect("ROCTX_BIG_DIR"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("events5m.xplane.pb"), util::many_events(5_000_000).encode_to_vec()).unwrap();
    std::fs::write(dir.join("lines100k.xplane.pb"), util::many_lines(100_000).encode_to_vec()).unwrap();
    std::fs::write(dir.join("threads100k.xplane.pb"), util::many_threads(100_000).encode_to_vec()).unwrap();
}

// --- outputs: only regular files are replaced --------------------------------------------------

// Used to be replaced by a regular file (temporary file + rename), exit 0: a device, a FIFO
// someone reads, or a link (instead of its target).
#[test]
fn an_output_that_is_a_link_fifo_device_or_directory_is_refused_and_left_as_it_was() {
    use std::os::unix::fs::FileTypeExt;
    let dir = Dir::new("output_kinds");
    dir.write_space("t.xplane.pb", &sample_space());
    let target = dir.write("target.json", b"keep");
    std::os::unix::fs::symlink("target.json", dir.path("link.json")).unwrap();
    dir.mkfifo("fifo.json");
    std::fs::create_dir(dir.path("sub")).unwrap();
    let device = dir.char_device();
    let device_name = s(&device).to_owned();
    let regular_only = "roctx only writes regular files, and would replace it with one\nhint: -o takes a regular file name (`roctx convert` without -o writes to stdout, which can go anywhere)\n";
    let cases = [
        ("link.json", "roctx: link.json is a symbolic link; roctx does not write through or replace links\nhint: name the link's target instead: -o target.json\n".to_owned()),
        ("fifo.json", format!("roctx: fifo.json is a FIFO; {regular_only}")),
        (device_name.as_str(), format!("roctx: {device_name} is a character device; {regular_only}")),
        ("sub", "roctx: sub is a directory\nhint: -o takes a file name, such as merged.xplane.pb\n".to_owned()),
    ];
    for (out, expected) in &cases {
        for args in [vec!["convert", "--format", "chrome", "t.xplane.pb", "-o", out], vec!["merge", "t.xplane.pb", "-o", out]] {
            let run = dir.command().args(&args).expect(2);
            assert_eq!(&run.stderr, expected, "{args:?}");
            assert!(run.stdout.is_empty(), "{args:?}: {}", run.stdout);
        }
    }
    assert_eq!(std::fs::read(&target).unwrap(), b"keep");
    assert!(std::fs::symlink_metadata(dir.path("link.json")).unwrap().file_type().is_symlink());
    assert!(std::fs::symlink_metadata(dir.path("fifo.json")).unwrap().file_type().is_fifo());
    assert!(std::fs::symlink_metadata(&device).unwrap().file_type().is_char_device());
    assert!(dir.path("sub").is_dir());
    let mut expected = vec!["fifo.json", "link.json", "sub", "t.xplane.pb", "target.json"];
    if device.starts_with(dir.path("")) {
        expected.push("null");
        expected.sort();
    }
    assert_eq!(dir.names(), expected, "a temporary file was left behind");
}

#[test]
fn an_output_that_is_a_regular_file_is_replaced() {
    let dir = Dir::new("output_regular");
    dir.write_space("t.xplane.pb", &sample_space());
    dir.write("out.json", b"old");
    dir.command().args(["convert", "--format", "chrome", "t.xplane.pb", "-o", "out.json"]).expect(0);
    let doc: Value = serde_json::from_slice(&std::fs::read(dir.path("out.json")).unwrap()).unwrap();
    assert_eq!(complete_event(&doc, "outer")["args"]["nvtx_range"], "outer");
    assert_eq!(dir.names(), ["out.json", "t.xplane.pb"]);
}

// A full disk midway (here: a file size limit, with SIGXFSZ ignored so that write() fails with
// EFBIG instead of killing roctx) must leave the old output and no temporary file.
#[test]
fn a_write_that_hits_a_file_size_limit_exits_2_and_leaves_no_temporary_file() {
    let dir = Dir::new("file_size_limit");
    dir.write_space("big.xplane.pb", &util::many_events(20_000));
    dir.write("old.json", b"old");
    for (args, out) in [
        (vec!["convert", "--format", "chrome", "big.xplane.pb", "-o", "out.json"], "out.json"),
        (vec!["convert", "--format", "chrome", "big.xplane.pb", "-o", "out.json.gz"], "out.json.gz"),
        (vec!["convert", "--format", "chrome", "big.xplane.pb", "-o", "old.json"], "old.json"),
        (vec!["merge", "big.xplane.pb", "-o", "out.xplane.pb"], "out.xplane.pb"),
    ] {
        let run = dir.command().args(&args).run_after("trap '' XFSZ; ulimit -f 1");
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert_eq!(
            run.stderr,
            format!("roctx: writing {out}: File too large (os error 27)\nhint: the disk is full or a file size limit (ulimit -f) was reached; {out} was left as it was and no partial file remains\n"),
            "{args:?}"
        );
        assert_eq!(dir.names(), ["big.xplane.pb", "old.json"], "{args:?}: a temporary or partial file was left behind");
        assert_eq!(std::fs::read(dir.path("old.json")).unwrap(), b"old");
    }
}

// --- inputs: regular files of at most 1 GiB ---------------------------------------------------

// A FIFO or a device used to be reported as missing, and a FIFO in a log directory was opened,
// which blocks until a writer comes (forever).
#[test]
fn a_fifo_or_device_input_is_named_for_what_it_is_and_never_opened() {
    let dir = Dir::new("input_kinds");
    dir.mkfifo("pipe.xplane.pb");
    dir.mkfifo("logs/plugins/profile/2026_01_01_00_00_00/host.xplane.pb");
    let hint = "hint: roctx reads .xplane.pb files and log directories; save the trace to a file first\n";
    let cases = [
        ("pipe.xplane.pb", "roctx: pipe.xplane.pb is not a regular file (a FIFO)\n"),
        ("/dev/zero", "roctx: /dev/zero is not a regular file (a character device)\n"),
        ("logs", "roctx: logs/plugins/profile/2026_01_01_00_00_00/host.xplane.pb is not a regular file (a FIFO)\n"),
    ];
    for (input, message) in cases {
        for args in [vec!["inspect", input], vec!["convert", "--format", "chrome", input], vec!["merge", input, "-o", "m.xplane.pb"]] {
            let run = dir.command().args(&args).expect_within(std::time::Duration::from_secs(30), 2);
            assert_eq!(run.stderr, format!("{message}{hint}"), "{args:?}");
        }
    }
    assert!(!dir.path("m.xplane.pb").exists());
}

/// Issue 40: one FIFO among a run's traces made `stats` (and every command) refuse the whole
/// run; it is skipped with a warning, and the rest is read.
#[test]
fn a_fifo_among_a_runs_traces_is_skipped_with_a_warning() {
    let dir = Dir::new("run_with_fifo");
    let run = "logs/plugins/profile/2026_01_01_00_00_00";
    dir.write_space(&format!("{run}/a.xplane.pb"), &sample_space());
    dir.mkfifo(&format!("{run}/b.xplane.pb"));
    let warning = format!("roctx: warning: skipping {run}/b.xplane.pb: not a regular file (a FIFO)\n");
    for args in [vec!["stats", "logs"], vec!["inspect", "logs"], vec!["convert", "--format", "chrome", "logs", "-o", "c.json"]] {
        let out = dir.command().args(&args).expect_within(std::time::Duration::from_secs(30), 0);
        assert_eq!(out.stderr.lines().next().map(|l| format!("{l}\n")), Some(warning.clone()), "{args:?}: {}", out.stderr);
    }
}

#[test]
fn an_input_over_1_gib_is_refused_before_it_is_read() {
    let dir = Dir::new("input_size");
    // Sparse: no disk space, and nothing is read if the size is checked first.
    std::fs::File::create(dir.path("huge.xplane.pb")).unwrap().set_len((1 << 30) + 1).unwrap();
    let run = dir.command().args(["inspect", "huge.xplane.pb"]).expect_within(std::time::Duration::from_secs(30), 2);
    assert_eq!(
        run.stderr.lines().next(),
        Some("roctx: huge.xplane.pb is over roctx's input limit of 1 GiB (1073741824 bytes)"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("\nhint: roctx decodes each input whole, taking up to ~29x its size in memory"), "{}", run.stderr);
}

#[test]
fn a_dangling_link_input_names_its_missing_target() {
    let dir = Dir::new("input_dangling");
    std::os::unix::fs::symlink("gone.xplane.pb", dir.path("link.xplane.pb")).unwrap();
    let run = dir.command().args(["inspect", "link.xplane.pb"]).expect(2);
    assert_eq!(run.stderr, "roctx: link.xplane.pb is a symbolic link to gone.xplane.pb, which does not exist\n");
}

// --- resources: output proportional to distinct problems --------------------------------------

// Used to print one line per event (335 MB for 5 M events) in inspect, and one stderr line per
// event in merge.
#[test]
fn a_problem_on_every_event_is_reported_once_with_its_count() {
    let dir = Dir::new("repeated_problem");
    dir.write_space("big.xplane.pb", &util::many_events(100_000));
    let finding = "/host:CPU: 99,900 events on line \"Host Threads/1\" reference event metadata that does not exist (first: missing metadata 0 on line \"Host Threads/1\" at offset 0 ps)";
    let run = dir.command().args(["inspect", "big.xplane.pb"]).expect(1);
    assert!(run.stdout.contains("  validation: 99900 errors, 0 warnings\n"), "{}", run.stdout);
    assert!(run.stdout.contains(&format!("    error: {finding}\n")), "{}", run.stdout);
    assert!(run.stdout.lines().count() < 10, "{}", run.stdout);
    let doc = dir.command().args(["inspect", "--json", "big.xplane.pb"]).expect(1).json();
    assert_eq!(doc["error_count"], 99_900);
    let issues = doc["files"][0]["issues"].as_array().unwrap();
    assert_eq!(issues.len(), 1, "{issues:?}");
    assert_eq!((issues[0]["message"].as_str(), issues[0]["count"].as_u64()), (Some(finding), Some(99_900)));
    let run = dir.command().args(["merge", "big.xplane.pb", "-o", "m.xplane.pb"]).expect(1);
    assert!(run.stdout.contains("99900 validation errors"), "{}", run.stdout);
    assert_eq!(run.stderr, format!("roctx: m.xplane.pb: {finding}\nhint: run `roctx inspect m.xplane.pb` to see its rows\n"));
}

#[test]
fn merge_of_100k_lines_keeps_them_all() {
    let dir = Dir::new("merge_many_lines");
    dir.write_space("lines.xplane.pb", &util::many_lines(100_000));
    let run = dir.command().args(["merge", "lines.xplane.pb", "-o", "m.xplane.pb"]).expect(0);
    assert!(run.stdout.contains("1 plane, 100000 lines, 100000 events; 0 validation errors"), "{}", run.stdout);
}

// convert used to build a serde_json::Value per event and inspect --json a Value per finding
// (~1.9 KB per event: 9.6 GB for 5 M events). Now memory is the decoded file plus a constant:
// 500 k events (28 MB decoded) run within 300 MB of address space, where the old code needed
// about 1 GB.
#[test]
fn convert_and_inspect_json_run_in_memory_proportional_to_the_file_not_the_events() {
    let dir = Dir::new("bounded_memory");
    dir.write_space("big.xplane.pb", &util::many_events(500_000));
    let limit = "ulimit -v 307200";
    let run = dir.command().args(["convert", "--format", "chrome", "big.xplane.pb", "-o", "big.json.gz"]).run_after(limit);
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{}", run.stdout);
    assert_eq!(run.stdout, "wrote big.json.gz: 500004 trace events, gzip\n");
    let run = dir.command().args(["inspect", "--json", "big.xplane.pb"]).run_after(limit);
    assert_eq!((run.code, run.stderr.as_str()), (1, ""));
    assert_eq!(run.json()["error_count"], 499_500);
}

#[test]
fn no_escape_sequence_from_a_file_or_its_name_reaches_the_terminal() {
    // Issue 25, item 18: `roctx inspect <run>` printed control characters from names raw.
    let dir = Dir::new("inspect_escapes");
    let mut space = sample_space();
    space.hostnames = vec!["host\u{1b}]0;pwned\u{7}".into()];
    space.warnings.push("bad \u{1b}[2J clear".into());
    let evil = dir.write_space("run/h\u{1b}[31mred\u{9b}2J.xplane.pb", &space);
    let _ = dir.write_space("run/plain.xplane.pb", &sample_space());
    for args in [vec!["inspect", "run"], vec!["inspect", s(&evil)], vec!["inspect", "run/missing\u{1b}[1m.xplane.pb"], vec!["stats", "run"], vec!["stats", "--per-process", "run"]] {
        let run = dir.command().args(&args).run();
        for (what, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
            assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "roctx {args:?}: control character on {what}: {text:?}");
        }
        assert!(run.code == 0 || run.code == 2, "{}", run.stderr);
    }
}
