//! Bounded fuzzing of the report parser and everything downstream of it: `Report::from_slice`
//! on arbitrary bytes, then, for what parses, the writer, the analysis against several peak
//! sets and the SVG plot. Deterministic; runs in `cargo test`. See rust/fuzz/README.md.
//!
//! Each corpus file (`rust/fuzz/corpus/roofline/`) is one report: the fixtures, plus small
//! reports with edge values (empty, zero times and bytes, the largest integers, subnormal and
//! huge times, control characters and markup in names). Checked:
//!
//! - no input panics;
//! - a refusal is one clean line: non-empty, no control character, under 1000 characters, and
//!   its JSON path (if any) starts at a top-level key (`rows[3].kernels[0].gpu_time_us`);
//! - an accepted report writes (`to_json`) and reads back equal, bit for bit;
//! - its analysis (no peaks, MI300X, Strix Halo, overrides) accounts for every row once, with
//!   non-negative totals; its SVG has one `op` circle per plottable group, only finite
//!   coordinates, and no unescaped markup from the report's strings.

use roctx_roofline::{analyse, svg, Device, Peaks, Report};

#[path = "../../fuzz/mutate.rs"]
mod mutate;

const REPORT: mutate::Config = mutate::Config {
    name: "roofline",
    manifest_dir: env!("CARGO_MANIFEST_DIR"),
    mutations_per_seed: 8_000,
    max_len: 16 << 10,
    protobuf: false,
    known_bugs: &[],
};

fn check_error(message: &str) {
    assert!(!message.is_empty(), "empty error message");
    assert!(message.len() < 1000, "error message of {} bytes", message.len());
    assert!(!message.chars().any(char::is_control), "control character in {message:?}");
    let first = message.split([':', '.', '[']).next().unwrap_or("");
    let top_keys = ["schema_version", "device", "total_gpu_time_us", "rows"];
    let whole = ["truncated JSON", "malformed JSON", "the report is", "expected a JSON object"];
    assert!(top_keys.contains(&first) || whole.iter().any(|w| message.starts_with(w)), "unexpected error shape: {message:?}");
}

fn check_report(report: &Report) {
    let text = report.to_json().unwrap_or_else(|e| panic!("a parsed report must write: {e}"));
    let again = Report::from_json(&text).unwrap_or_else(|e| panic!("a written report must parse: {e}\n{text}"));
    assert_eq!(&again, report, "round trip changed the report");
    let peak_sets = [
        None,
        Some(Peaks::of(Device::lookup("gfx942").unwrap())),
        Some(Peaks::of(Device::lookup("gfx1151").unwrap())),
        Peaks::with_overrides(None, Some(1e-3), Some(1e6)),
    ];
    let included = report.rows.iter().filter(|r| r.invocation != Some(0)).count() as u64;
    for peaks in &peak_sets {
        let a = analyse(report, peaks.as_ref());
        assert_eq!(a.rows, included);
        assert_eq!(a.groups.iter().map(|g| g.count).sum::<u64>(), included, "every row in one group");
        for g in &a.groups {
            assert!(g.total_time_us >= 0.0 && g.bytes >= 0.0 && g.flops >= 0.0, "{g:?}");
            assert!(g.bytes <= g.bytes_emitted || g.bytes_emitted.is_infinite(), "MoE scaling only lowers bytes: {g:?}");
            assert_eq!(g.roof.is_some(), peaks.is_some());
        }
        let plot = svg::render(&a);
        let plottable = a
            .groups
            .iter()
            .filter(|g| matches!((g.arithmetic_intensity, g.flops_per_s), (Some(ai), Some(p)) if ai > 0.0 && p > 0.0 && ai.is_finite() && p.is_finite()))
            .count();
        assert_eq!(plot.matches("<circle class=\"op\"").count(), plottable);
        check_coordinates(&plot);
        assert!(!plot.chars().any(|c| c.is_control() && c != '\n'), "control character in the plot");
        assert_eq!(plot.matches('<').count(), plot.matches('>').count(), "unescaped markup in the plot");
        let _ = serde_json::to_string(&a).expect("the analysis serializes");
    }
}

/// Every geometric attribute of the plot is a finite number.
fn check_coordinates(plot: &str) {
    for attr in ["cx", "cy", "r", "x", "y", "x1", "y1", "x2", "y2", "width", "height"] {
        let needle = format!(" {attr}=\"");
        for (at, _) in plot.match_indices(&needle) {
            let value = &plot[at + needle.len()..];
            let value = &value[..value.find('"').expect("closed attribute")];
            assert!(value.parse::<f64>().is_ok_and(f64::is_finite), "{attr}=\"{value}\" in the plot");
        }
    }
}

fn target(input: &[u8]) {
    match Report::from_slice(input) {
        Ok(report) => check_report(&report),
        Err(err) => check_error(&err.to_string()),
    }
}

#[test]
fn fuzz_report_parse_analyse_plot() {
    let outcome = mutate::run(&REPORT, &target);
    mutate::assert_clean(&REPORT, &outcome);
}

/// Every row of the fixtures, alone in a minified report: small seeds whose mutations reach
/// the numbers more often than the whole fixture's do.
fn row_seeds() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for fixture in ["decode_gfx1151.json", "reference_gfx942.json"] {
        let text = std::fs::read_to_string(format!("{}/tests/fixtures/{fixture}", env!("CARGO_MANIFEST_DIR"))).unwrap();
        out.push((format!("fixture_{fixture}"), text.clone().into_bytes()));
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        for (i, row) in doc["rows"].as_array().unwrap().iter().enumerate() {
            let mut one = doc.clone();
            one["rows"] = serde_json::Value::Array(vec![row.clone()]);
            let stem = fixture.trim_end_matches(".json");
            out.push((format!("row_{stem}_{i}.json"), serde_json::to_vec(&one).unwrap()));
        }
    }
    out
}

fn seeds() -> Vec<(String, Vec<u8>)> {
    let mut out = row_seeds();
    let edge = |name: &str, text: &str| (name.to_owned(), text.as_bytes().to_vec());
    let row = |fields: &str| {
        format!(
            r#"{{"schema_version":1,"device":"gfx942","total_gpu_time_us":1,"rows":[{{"ggml_op":"MUL_MAT","dtype":"f32","quant":"q4_K","ne":[1,1,1,1],"src_ne":[[256,1,1,1]],"src_types":["q4_K"],"op_params":[],"bytes":1,"dst_bytes":0,"src_bytes":[1],"M":1,"N":1,"K":256,"kernels":[{{"name":"k","gpu_time_us":1}}]{fields}}}]}}"#
        )
    };
    out.extend([
        edge("empty_rows.json", r#"{"schema_version":1,"device":"","total_gpu_time_us":0,"rows":[]}"#),
        edge("reference_empty.json", r#"{"device":"gfx90a","total_gpu_time_us":0,"rows":[]}"#),
        edge("zero_time_zero_bytes.json", &row("").replace("\"bytes\":1", "\"bytes\":0").replace("\"gpu_time_us\":1", "\"gpu_time_us\":0")),
        edge("largest_integers.json", &row("").replace("\"bytes\":1", "\"bytes\":18446744073709551615").replace("[1,1,1,1]", "[18446744073709551615,9007199254740993,1,1]")),
        edge("subnormal_time.json", &row("").replace("\"gpu_time_us\":1", "\"gpu_time_us\":5e-324")),
        edge("huge_times.json", &row(r#","invocation":1"#).replace("[{\"name\":\"k\",\"gpu_time_us\":1}]", "[{\"name\":\"k\",\"gpu_time_us\":1.7e308},{\"name\":\"k\",\"gpu_time_us\":1.7e308}]")),
        edge("markup_names.json", &row(r#","name":"<a href='x'>&amp;</a>\u0000\u001b[31m""#).replace("\"name\":\"k\"", "\"name\":\"]]><script>&\\\"\\uffff\"").replace("MUL_MAT", "<b>&")),
        edge("moe_shape_bound.json", &row(r#","n_experts":8,"top_k":2,"experts_used":0"#).replace("\"MUL_MAT\"", "\"MUL_MAT_ID\"")),
        edge("moe_histogram.json", &row(r#","n_experts":2,"top_k":1,"experts_used":1,"tokens_per_expert":[0,1]"#).replace("\"MUL_MAT\"", "\"MUL_MAT_ID\"")),
        edge("fused_nulls.json", &row(r#","fused_ops":[{"ggml_op":"ADD","dtype":"f32","quant":"","ne":[0,0,0,0],"src_ne":[],"src_types":[],"op_params":[],"M":0,"N":0,"K":0,"top_k":0,"n_experts":null}],"experts_used":null"#)),
        edge("op_params_full.json", &row("").replace("\"op_params\":[]", "\"op_params\":[-2147483648,4294967295,0,1,2,3,4,5,6,7,8,9,10,11,12,13]")),
        edge("invocation_zero_only.json", &row(r#","invocation":0"#)),
    ]);
    out
}

/// Rewrites the seeds (other files are kept):
/// `cargo test -p roctx_roofline --test fuzz_report -- --ignored regenerate_corpus`.
#[test]
#[ignore = "writes rust/fuzz/corpus/roofline; run by hand after changing the fixtures"]
fn regenerate_corpus() {
    let dir = mutate::corpus_dir(REPORT.manifest_dir, REPORT.name);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, bytes) in seeds() {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

/// The committed corpus holds every generated seed, unchanged: a fixture edit without
/// `regenerate_corpus` would leave the fuzzer on stale inputs.
#[test]
fn the_corpus_holds_the_generated_seeds() {
    let dir = mutate::corpus_dir(REPORT.manifest_dir, REPORT.name);
    for (name, bytes) in seeds() {
        let stored = std::fs::read(dir.join(&name)).unwrap_or_else(|e| panic!("{name}: {e}; run regenerate_corpus"));
        assert!(stored == bytes, "{name} differs from its generator; run regenerate_corpus");
    }
}
