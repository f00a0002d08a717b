//! `roctx roofline`, end to end on the fixture reports of `roctx_roofline/tests/fixtures/`.
//! Contents:
//!
//! - the table: header (device, peaks, source, totals) and each group's values;
//! - `--json`: the same analysis as one document;
//! - `--svg`: a well-formed document with the ceilings, the ridges, one circle per group and
//!   escaped names;
//! - peaks: `--device`, `--peak-bw`/`--peak-flops`, a device with no peaks;
//! - errors: each one's message and exit code.

mod util;

use std::fs;
use std::path::PathBuf;

use serde_json::Value;
use util::{s, Dir};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../roctx_roofline/tests/fixtures").join(name)
}

/// The fixture copied into `dir` (so messages show a short relative name).
fn copy(dir: &Dir, name: &str) -> PathBuf {
    dir.write(name, &fs::read(fixture(name)).unwrap())
}

/// The table line of the group whose op column is `op`, split on runs of two spaces or more.
fn row(out: &str, op: &str) -> Vec<String> {
    let line = out.lines().find(|l| l.starts_with(&format!("{op} "))).unwrap_or_else(|| panic!("no row {op}:\n{out}"));
    line.split("  ").map(str::trim).filter(|c| !c.is_empty()).map(str::to_owned).collect()
}

fn close(v: &Value, expect: f64) -> bool {
    v.as_f64().is_some_and(|x| (x - expect).abs() <= 1e-9 * expect.abs().max(1.0))
}

// --- the table ---------------------------------------------------------------------------------

#[test]
fn the_table_shows_peaks_with_their_source_and_each_group_s_numbers() {
    let dir = Dir::new("roofline_table");
    copy(&dir, "decode_gfx1151.json");
    let run = dir.command().args(["roofline", "decode_gfx1151.json"]).expect(0);
    let out = &run.stdout;
    assert!(out.starts_with("report: decode_gfx1151.json (schema 1)\ndevice: gfx1151, peaks of AMD Strix Halo / Radeon 8060S\n"), "{out}");
    assert!(out.contains("peaks: memory 256 GB/s; fp32 vector 29.7 TFLOP/s (ridge 116.0), fp32 vector (single issue) 14.8 TFLOP/s (ridge 58.0), fp16 matrix 59.4 TFLOP/s (ridge 232.0)\n"), "{out}");
    assert!(out.contains("source: techpowerup (CU count, clock); ggml-org/llama.cpp#24438 (256 GB/s)"), "{out}");
    assert!(out.contains("total GPU time: 995.5 us (6 rows analysed, 995.5 us; 1 left out)\nnote: 1 row(s) of invocation 0 (1.5 us of kernels attributed to no op) left out\n"), "{out}");
    // op, shapes, count, total, avg, GB/s, GFLOP/s, AI, %BW, %FLOPs, %roofline, bound, ceiling
    assert_eq!(row(out, "MUL_MAT"), ["MUL_MAT", "q4_K[4096,32000] f32[4096] -> f32[32000]", "2", "764.0", "382.00", "193.4", "686.2", "3.55", "75.5", "1.16", "75.5", "memory", "fp16 matrix"]);
    assert_eq!(row(out, "MUL_MAT_ID")[2..11], ["2", "215.0", "107.50", "215.2", "936.4", "4.35", "84.1", "1.58", "84.1"]);
    assert_eq!(row(out, "MUL_MAT+ADD")[..8], ["MUL_MAT+ADD", "q4_K[4864,896] f32[4864] -> f32[896]", "1", "14.0", "14.00", "177.0", "622.7", "3.52"]);
    // RDNA fp32 vector work: dual-issue / single-issue, explained below the table.
    assert_eq!(row(out, "ADD")[9..], ["0.01/0.01", "7.7", "memory", "fp32 vector"]);
    assert!(out.contains("%peakFLOPs a/b and bound a/b: against the fp32 vector peak (dual issue"), "{out}");
    let order: Vec<&str> = out.lines().skip_while(|l| !l.starts_with("op ")).skip(1).take(4).map(|l| l.split(' ').next().unwrap()).collect();
    assert_eq!(order, ["MUL_MAT", "MUL_MAT_ID", "MUL_MAT+ADD", "ADD"]);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
}

#[test]
fn top_limits_the_groups_and_says_how_many_are_hidden() {
    let dir = Dir::new("roofline_top");
    copy(&dir, "decode_gfx1151.json");
    let out = dir.command().args(["roofline", "decode_gfx1151.json", "--top", "1"]).expect(0).stdout;
    assert!(out.contains("\nMUL_MAT ") && !out.contains("\nADD "), "{out}");
    assert!(out.contains("... 3 more group(s); --top 0 shows all"), "{out}");
    let doc = dir.command().args(["roofline", "--json", "--top", "2", "decode_gfx1151.json"]).expect(0).json();
    assert_eq!(doc["groups"].as_array().unwrap().len(), 2);
}

// --- JSON --------------------------------------------------------------------------------------

#[test]
fn json_reports_the_same_analysis() {
    let dir = Dir::new("roofline_json");
    copy(&dir, "decode_gfx1151.json");
    let doc = dir.command().args(["roofline", "--json", "decode_gfx1151.json"]).expect(0).json();
    assert_eq!((&doc["device"], &doc["schema_version"], &doc["rows"], &doc["rows_excluded"]), (&Value::from("gfx1151"), &Value::from(1), &Value::from(6), &Value::from(1)));
    assert_eq!(doc["peaks"]["mem_bw"], 256e9);
    assert_eq!(doc["peaks"]["ceilings"][0]["ceiling"], "fp32_vector");
    let groups = doc["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 4, "--json shows every group");
    let lm = &groups[0];
    assert_eq!((&lm["op"], &lm["count"], &lm["total_time_us"], &lm["avg_time_us"]), (&Value::from("MUL_MAT"), &Value::from(2), &Value::from(764.0), &Value::from(382.0)));
    assert_eq!(lm["bytes"], 147_744_768.0);
    assert_eq!(lm["flops"], 524_288_000.0);
    assert!(close(&lm["bytes_per_s"], 147_744_768.0 / 764e-6));
    assert!(close(&lm["roof"]["pct_of_peak_bw"], 147_744_768.0 / 764e-6 / 256e9 * 100.0));
    assert_eq!((&lm["roof"]["ceiling"], &lm["roof"]["bound"]), (&Value::from("fp16_matrix"), &Value::from("memory")));
    let moe = &groups[1];
    assert_eq!(moe["bytes"], 17_825_920.0 + 28_442_752.0);
    assert_eq!((&moe["rows_experts_used"], &moe["rows_shape_bound"]), (&Value::from(1), &Value::from(1)));
    assert_eq!(moe["moe_accounting"], serde_json::json!({"exact": 1, "shape bound": 1}), "the reference format: read back, or its fallback");
    let fused = &groups[2];
    assert_eq!((&fused["bytes"], &fused["flops"]), (&Value::from(2_478_080.0), &Value::from(8_717_184.0)));
    assert!(close(&groups[3]["roof"]["single_issue"]["peak_flops"], 14.848e12));
}

#[test]
fn moe_rows_say_how_their_experts_were_counted() {
    let dir = Dir::new("roofline_moe_accounting");
    let mut doc: Value = serde_json::from_slice(&fs::read(fixture("decode_gfx1151.json")).unwrap()).unwrap();
    for row in doc["rows"].as_array_mut().unwrap() {
        if row["ggml_op"] == "MUL_MAT_ID" {
            row["moe_accounting"] = Value::from("analytic");
        }
    }
    dir.write("analytic.json", doc.to_string().as_bytes());
    let out = dir.command().args(["roofline", "analytic.json"]).expect(0).stdout;
    assert!(out.contains("\nMUL_MAT_ID [analytic] "), "{out}");
    assert!(out.contains("note: 2 MUL_MAT_ID row(s) count their experts analytically, min(M*top_k, n_experts): exact at 1 token"), "{out}");
    let json = dir.command().args(["roofline", "--json", "analytic.json"]).expect(0).json();
    let moe = json["groups"].as_array().unwrap().iter().find(|g| g["op"] == "MUL_MAT_ID").unwrap().clone();
    assert_eq!(moe["moe_accounting"], serde_json::json!({"analytic": 2}));
    // The reference format's rows (no moe_accounting): read back, or the shape bound.
    copy(&dir, "decode_gfx1151.json");
    let out = dir.command().args(["roofline", "decode_gfx1151.json"]).expect(0).stdout;
    assert!(out.contains("\nMUL_MAT_ID [1 exact, 1 shape bound] "), "{out}");
    assert!(!out.contains("analytically"), "{out}");
}

// --- several reports, and a report cut short ----------------------------------------------------

#[test]
fn several_reports_are_joined_and_a_cut_short_one_says_so() {
    let dir = Dir::new("roofline_join");
    copy(&dir, "decode_gfx1151.json");
    // A fork child's report beside it, written at the SIGTERM that ended the child (issue 29).
    let mut child: Value = serde_json::from_slice(&fs::read(fixture("decode_gfx1151.json")).unwrap()).unwrap();
    child["cut_short"] = Value::from("cut short by SIGTERM: what was captured until the process ended by it");
    dir.write("decode_gfx1151.pid42.json", child.to_string().as_bytes());
    let run = dir.command().args(["roofline", "decode_gfx1151.json", "decode_gfx1151.pid42.json"]).expect(0);
    assert!(run.stdout.starts_with("report: decode_gfx1151.json + decode_gfx1151.pid42.json (schema 1, joined)\n"), "{}", run.stdout);
    assert!(run.stdout.contains("total GPU time: 1991 us (12 rows analysed, 1991 us; 2 left out)"), "{}", run.stdout);
    assert_eq!(row(&run.stdout, "MUL_MAT")[2..4], ["4", "1528.0"]);
    assert_eq!(run.stderr, "note: decode_gfx1151.pid42.json: cut short by SIGTERM: what was captured until the process ended by it\n");
    // The same report twice (however spelled) would count twice: refused (issue 40).
    for (a, b) in [("decode_gfx1151.json", "decode_gfx1151.json"), ("decode_gfx1151.json", "./decode_gfx1151.json")] {
        let err = dir.command().args(["roofline", a, b]).expect(2).stderr;
        assert!(err.contains("decode_gfx1151.json is given twice") && err.contains("its ops would count twice"), "{err}");
    }
    // Another device's report is refused: one roofline judges one device.
    child["device"] = Value::from("gfx942");
    child.as_object_mut().unwrap().remove("cut_short");
    dir.write("mi300x.json", child.to_string().as_bytes());
    let err = dir.command().args(["roofline", "decode_gfx1151.json", "mi300x.json"]).expect(2).stderr;
    assert!(err.contains("mi300x.json is from device \"gfx942\", decode_gfx1151.json from \"gfx1151\": one roofline judges one device"), "{err}");
}

// --- SVG ---------------------------------------------------------------------------------------

/// Checks that `text` is well-formed XML as far as an SVG needs: tags nest and close, attribute
/// values are quoted, `&` starts an entity, no raw `<` in text. Returns the element names of
/// the start tags, in order, with their `class` attribute.
fn check_xml(text: &str) -> Vec<(String, String)> {
    let mut stack: Vec<String> = Vec::new();
    let mut elements = Vec::new();
    let mut rest = text.strip_prefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n").expect("XML declaration");
    while !rest.is_empty() {
        let lt = rest.find('<').unwrap_or(rest.len());
        let content = &rest[..lt];
        assert!(!content.contains('>'), "raw > in text {content:?}");
        for (i, _) in content.match_indices('&') {
            let entity = &content[i..content[i..].find(';').map_or(content.len(), |e| i + e + 1)];
            assert!(["&amp;", "&lt;", "&gt;", "&quot;", "&apos;", "&#10;"].contains(&entity), "bad entity {entity:?}");
        }
        if lt == rest.len() {
            break;
        }
        let gt = rest[lt..].find('>').expect("unclosed tag") + lt;
        let tag = &rest[lt + 1..gt];
        rest = &rest[gt + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop().as_deref(), Some(name), "mismatched </{name}>");
            continue;
        }
        let self_closing = tag.ends_with('/');
        let tag = tag.trim_end_matches('/');
        let name = tag.split_whitespace().next().expect("element name").to_owned();
        let attrs = &tag[name.len()..];
        assert_eq!(attrs.matches('"').count() % 2, 0, "unbalanced quotes in <{tag}>");
        for piece in attrs.split('"').step_by(2) {
            assert!(!piece.contains('<') && !piece.contains('&'), "unquoted markup in <{tag}>");
        }
        let class = attrs.split("class=\"").nth(1).map(|c| c[..c.find('"').unwrap()].to_owned()).unwrap_or_default();
        elements.push((name.clone(), class));
        if !self_closing {
            stack.push(name);
        }
    }
    assert!(stack.is_empty(), "unclosed elements {stack:?}");
    elements
}

#[test]
fn svg_has_the_ceilings_the_ridges_one_circle_per_group_and_escaped_names() {
    let dir = Dir::new("roofline_svg");
    copy(&dir, "decode_gfx1151.json");
    let run = dir.command().args(["roofline", "decode_gfx1151.json", "--svg", "plots/roofline.svg"]).expect(0);
    assert_eq!(run.stderr, "wrote plots/roofline.svg\n");
    let svg = fs::read_to_string(dir.path("plots/roofline.svg")).unwrap();
    let elements = check_xml(&svg);
    assert_eq!(elements[0].0, "svg");
    let count = |class: &str| elements.iter().filter(|(_, c)| c == class).count();
    assert_eq!(count("op"), 4, "one circle per group");
    assert_eq!(count("ceiling bandwidth"), 1);
    assert_eq!(count("ceiling compute"), 3, "fp16 matrix, fp32 vector, fp32 single issue");
    assert_eq!(count("ridge"), 3);
    assert!(count("xlabel") >= 3 && count("ylabel") >= 3, "decade labels");
    assert!(svg.contains("mul_mat_vec_q&lt;(ggml_type)12, 1&gt; &amp; &quot;lm_head&quot;"), "kernel names escaped in the tooltip");
    assert!(svg.contains("<title>ridge 232 FLOP/byte (fp16 matrix)</title>"), "{svg}");
    // The same input gives the same bytes.
    dir.command().args(["roofline", "decode_gfx1151.json", "--svg", "again.svg"]).expect(0);
    assert_eq!(fs::read_to_string(dir.path("again.svg")).unwrap(), svg);
}

#[test]
fn svg_is_never_written_over_a_directory_or_the_report() {
    let dir = Dir::new("roofline_svg_refused");
    copy(&dir, "decode_gfx1151.json");
    fs::create_dir_all(dir.path("plot.svg")).unwrap();
    let run = dir.command().args(["roofline", "decode_gfx1151.json", "--svg", "plot.svg"]).expect(2);
    assert!(run.stderr.starts_with("roctx: plot.svg is a directory\n"), "{}", run.stderr);
    assert!(run.stdout.is_empty());
    let run = dir.command().args(["roofline", "decode_gfx1151.json", "--svg", "decode_gfx1151.json"]).expect(2);
    assert!(run.stderr.starts_with("roctx: refusing to overwrite input decode_gfx1151.json with the output"), "{}", run.stderr);
}

// --- peaks -------------------------------------------------------------------------------------

#[test]
fn device_and_overrides_replace_the_report_s_peaks() {
    let dir = Dir::new("roofline_peaks");
    copy(&dir, "decode_gfx1151.json");
    let doc = dir.command().args(["roofline", "--json", "--device", "h200", "decode_gfx1151.json"]).expect(0).json();
    assert_eq!(doc["peaks"]["name"], "NVIDIA H200 SXM");
    assert_eq!(doc["peaks"]["mem_bw"], 4.8e12);
    assert_eq!(doc["groups"][0]["roof"]["peak_flops"], 989e12, "no int8 rate cited for the H200: fp16 matrix");
    let doc = dir.command().args(["roofline", "--json", "--peak-bw", "1000", "decode_gfx1151.json"]).expect(0).json();
    assert_eq!(doc["peaks"]["mem_bw"], 1e12);
    assert!(doc["peaks"]["source"].as_str().unwrap().ends_with("overridden by --peak-bw 1000 GB/s"));
    let out = dir.command().args(["roofline", "--device", "gfx1030", "--peak-bw", "576", "--peak-flops", "23.7", "decode_gfx1151.json"]).expect(0).stdout;
    assert!(out.contains("peaks of custom\npeaks: memory 576 GB/s; --peak-flops 23.7 TFLOP/s (ridge 41.1)\nsource: --peak-bw 576 GB/s, --peak-flops 23.7 TFLOP/s\n"), "{out}");
}

#[test]
fn a_device_without_peaks_gets_the_table_without_percentages_and_a_warning() {
    let dir = Dir::new("roofline_no_peaks");
    let text = fs::read_to_string(fixture("decode_gfx1151.json")).unwrap().replace("\"gfx1151\"", "\"gfx1030\"");
    dir.write("r.json", text.as_bytes());
    let run = dir.command().args(["roofline", "r.json"]).expect(0);
    assert!(run.stderr.starts_with("roctx: warning: device \"gfx1030\" is not in the peak table (mi300x (gfx942), "), "{}", run.stderr);
    assert!(run.stderr.contains("Pass --device ARCH, or --peak-bw GBPS and --peak-flops TFLOPS"), "{}", run.stderr);
    assert!(run.stdout.contains("device: gfx1030, no peaks\n"), "{}", run.stdout);
    assert_eq!(row(&run.stdout, "MUL_MAT")[5..], ["193.4", "686.2", "3.55", "-", "-", "-", "-", "-"]);
}

// --- errors ------------------------------------------------------------------------------------

#[test]
fn each_error_names_the_file_and_the_cause_and_exits_2() {
    let dir = Dir::new("roofline_errors");
    let full = fs::read_to_string(fixture("decode_gfx1151.json")).unwrap();
    dir.write("cut.json", &full.as_bytes()[..full.len() / 2]);
    dir.write("bad.json", full.replacen("\"gpu_time_us\": 4.0", "\"gpu_time_us\": \"4.0\"", 1).as_bytes());
    dir.write("neg.json", full.replacen("\"gpu_time_us\": 380.0", "\"gpu_time_us\": -380.0", 1).as_bytes());
    dir.write("ne.json", full.replacen("\"ne\": [\n    32000,", "\"ne\": [\n", 1).as_bytes());
    dir.write("empty.json", b"");
    copy(&dir, "decode_gfx1151.json");
    let hint = "hint: roctx roofline reads the JSON report of a GGML_ROOFLINE_OUT run (schema in docs/roofline.md)\n";
    let cases: &[(&[&str], String)] = &[
        (&["roofline", "missing.json"], "roctx: missing.json does not exist\n".to_owned()),
        (&["roofline", "bad.json"], format!("roctx: reading bad.json: rows[0].kernels[0].gpu_time_us: expected a number, got \"4.0\"\n{hint}")),
        (&["roofline", "neg.json"], format!("roctx: reading neg.json: rows[0].kernels[1].gpu_time_us: time must not be negative, got -380\n{hint}")),
        (&["roofline", "ne.json"], format!("roctx: reading ne.json: rows[0].ne: expected 4 integers, got 3 values\n{hint}")),
        (&["roofline", "empty.json"], format!("roctx: reading empty.json: the report is empty (expected a JSON object)\n{hint}")),
        (
            &["roofline", "--device", "gfx9999", "decode_gfx1151.json"],
            "roctx: unknown device \"gfx9999\"; the peak table has mi300x (gfx942), mi250x-gcd (gfx90a), mi250x, mi250, rx7900xtx (gfx1100), strix-halo (gfx1151), h200\nhint: for another GPU pass --peak-bw GBPS and --peak-flops TFLOPS (datasheet figures)\n".to_owned(),
        ),
        (
            &["roofline", "--device", "gfx9999", "--peak-bw", "100", "decode_gfx1151.json"],
            "roctx: unknown device \"gfx9999\"; the peak table has mi300x (gfx942), mi250x-gcd (gfx90a), mi250x, mi250, rx7900xtx (gfx1100), strix-halo (gfx1151), h200\nhint: for another GPU pass --peak-bw GBPS and --peak-flops TFLOPS (datasheet figures)\n".to_owned(),
        ),
    ];
    for (args, stderr) in cases {
        let run = dir.command().args(*args).expect(2);
        assert_eq!(&run.stderr, stderr, "roctx {}", run.args);
        assert!(run.stdout.is_empty(), "roctx {}: {}", run.args, run.stdout);
    }
    let run = dir.command().args(["roofline", "cut.json"]).expect(2);
    assert!(run.stderr.starts_with("roctx: reading cut.json: truncated JSON: EOF while parsing"), "{}", run.stderr);
    let run = dir.command().args(["roofline", "--peak-flops", "0", "decode_gfx1151.json"]).expect(2);
    assert!(run.stderr.contains("invalid value '0' for '--peak-flops <TFLOPS>': expected a number above 0"), "{}", run.stderr);
    let run = dir.command().args(["roofline", s(&dir.path(""))]).expect(2);
    assert!(run.stderr.contains("is not a regular file (a directory)") && run.stderr.contains("roctx roofline reads the JSON file GGML_ROOFLINE_OUT named"), "{}", run.stderr);
}

#[test]
fn one_override_alone_is_refused_when_the_report_s_device_has_no_peaks() {
    let dir = Dir::new("roofline_one_override");
    let text = fs::read_to_string(fixture("decode_gfx1151.json")).unwrap().replace("\"gfx1151\"", "\"\"");
    dir.write("r.json", text.as_bytes());
    let run = dir.command().args(["roofline", "--peak-bw", "100", "r.json"]).expect(2);
    assert!(run.stderr.starts_with("roctx: --peak-bw alone is not enough: device \"\" is not in the peak table, so --peak-flops is needed too\nhint: pass both"), "{}", run.stderr);
    let run = dir.command().args(["roofline", "r.json"]).expect(0);
    assert!(run.stderr.starts_with("roctx: warning: the report names no device"), "{}", run.stderr);
}

/// Issue 40: a line break in an op name, the device or the cut-short note of a received report
/// never prints as a row or a note of its own.
#[test]
fn a_line_break_in_a_report_never_prints_as_a_line_of_its_own() {
    let dir = Dir::new("roofline_hostile");
    let mut report: Value = serde_json::from_slice(&fs::read(fixture("decode_gfx1151.json")).unwrap()).unwrap();
    report["cut_short"] = Value::from("cut short\nnote: forged.json: all is well");
    report["rows"][0]["ggml_op"] = Value::from("MUL_MAT\nADD     forged row");
    dir.write("hostile.json", report.to_string().as_bytes());
    let run = dir.command().args(["roofline", "--top", "0", "hostile.json"]).expect(0);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("cut short\u{fffd}note: forged.json"), "{}", run.stderr);
    assert!(!run.stdout.lines().any(|l| l.starts_with("ADD     forged row")), "{}", run.stdout);
    assert!(!run.stdout.chars().any(|c| c.is_control() && c != '\n'), "{:?}", run.stdout);
}
