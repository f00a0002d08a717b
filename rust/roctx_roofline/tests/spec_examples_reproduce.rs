//! The spec's worked examples, end to end from the fixture reports in `tests/fixtures/`:
//!
//! - `decode_gfx1151.json` (schema 1, Strix Halo): the decode lm_head-like `MUL_MAT` of §9
//!   (two invocations, each a `quantize_q8_1` kernel plus the matrix-vector kernel), the fused
//!   `MUL_MAT`+`ADD` of §5.3, a MoE `MUL_MAT_ID` read back (`experts_used` 20 of 64) and the
//!   same shape without a read-back (shape bound), an f32 `ADD`, and an invocation-0 `CPY`;
//! - `reference_gfx942.json`: the same fused row in the llama.cpp reference format (no
//!   `schema_version`, storage ids this version skips).

use roctx_roofline::{analyse, Bound, Ceiling, Device, Peaks, Report};

fn fixture(name: &str) -> Report {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    Report::from_slice(&std::fs::read(&path).unwrap()).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

#[test]
fn the_decode_fixture_reproduces_sections_5_3_5_4_and_9() {
    let report = fixture("decode_gfx1151.json");
    assert_eq!((report.schema_version, report.device.as_str(), report.total_gpu_time_us, report.rows.len()), (Some(1), "gfx1151", 995.5, 7));
    let peaks = Peaks::of(Device::lookup(&report.device).unwrap());
    let a = analyse(&report, Some(&peaks));
    assert_eq!((a.rows, a.rows_excluded, a.analysed_time_us), (6, 1, 995.5));
    let ops: Vec<&str> = a.groups.iter().map(|g| g.op.as_str()).collect();
    assert_eq!(ops, ["MUL_MAT", "MUL_MAT_ID", "MUL_MAT+ADD", "ADD"], "longest total time first");

    // §9: q4_K [4096, 32000] decode, M = 1.
    let lm = &a.groups[0];
    assert_eq!((lm.count, lm.total_time_us, lm.avg_time_us), (2, 764.0, 382.0));
    assert_eq!(lm.bytes, 2.0 * (73_728_000.0 + 16_384.0 + 128_000.0));
    assert_eq!(lm.flops, 2.0 * (2.0 * 32_000.0 * 4096.0));
    let ai = lm.arithmetic_intensity.unwrap();
    assert!((ai - 3.6).abs() < 0.1, "AI ≈ 2 / (4.5/8) ≈ 3.6, got {ai}");
    let roof = lm.roof.as_ref().unwrap();
    assert_eq!(roof.ceiling, Ceiling::Fp16Matrix);
    assert_eq!(roof.bound, Some(Bound::Memory));
    assert_eq!(roof.ridge.round(), 232.0);
    // §9: attainable on Strix Halo ≈ 256 GB/s × 3.6 ≈ 0.9 TFLOP/s.
    assert!(close(roof.attainable_flops, ai * 256e9) && (roof.attainable_flops / 1e12 - 0.9).abs() < 0.05);
    assert!(close(roof.pct_of_peak_bw.unwrap(), lm.bytes / 764e-6 / 256e9 * 100.0));
    assert!(close(roof.pct_of_roofline.unwrap(), roof.pct_of_peak_bw.unwrap()));
    assert!(close(roof.pct_of_peak_flops.unwrap(), lm.flops / 764e-6 / 59.392e12 * 100.0));
    assert_eq!(lm.kernels, ["quantize_q8_1", "mul_mat_vec_q<(ggml_type)12, 1> & \"lm_head\""]);

    // §5.4: experts_used 20/64 on one launch, min(4·8, 64)/64 on the other.
    let moe = &a.groups[1];
    assert_eq!((moe.count, moe.rows_experts_used, moe.rows_shape_bound), (2, 1, 1));
    assert_eq!(moe.bytes_emitted, 2.0 * 56_754_304.0);
    assert_eq!(moe.bytes, (131_200.0 + 56_623_104.0 * 20.0 / 64.0) + (131_200.0 + 56_623_104.0 * 32.0 / 64.0));
    assert_eq!(moe.flops, 2.0 * (2.0 * 4.0 * 8.0 * 768.0 * 2048.0));

    // §5.3: external traffic as emitted, FLOPs summed over the fused nodes.
    let fused = &a.groups[2];
    let row = report.rows.iter().find(|r| !r.fused_ops.is_empty()).unwrap();
    assert_eq!((row.bytes, row.dst_bytes, row.src_bytes.as_slice()), (2_478_080, 3584, &[2_451_456, 19_456][..]));
    assert_eq!((fused.bytes, fused.flops), (2_478_080.0, (2 * 896 * 4864 + 896) as f64));

    // An f32 element-wise op is judged against the fp32 vector peak, both issue modes (§7.4).
    let add = &a.groups[3];
    assert_eq!((add.flops, add.bytes), (4096.0, 49_152.0));
    let r = add.roof.as_ref().unwrap();
    assert_eq!(r.ceiling, Ceiling::Fp32Vector);
    let single = r.single_issue.as_ref().unwrap();
    assert!(close(single.pct_of_peak_flops.unwrap(), 2.0 * r.pct_of_peak_flops.unwrap()));
    assert_eq!((r.ridge.round(), single.ridge.round()), (116.0, 58.0));
}

#[test]
fn the_reference_format_parses_and_is_flagged_for_its_fused_bytes() {
    let report = fixture("reference_gfx942.json");
    assert_eq!(report.schema_version, None);
    let a = analyse(&report, Some(&Peaks::of(Device::lookup("gfx942").unwrap())));
    assert_eq!(a.groups[0].bytes, 2_478_080.0);
    assert_eq!(a.groups[0].roof.as_ref().unwrap().ceiling, Ceiling::Int8Matrix);
    assert!(a.notes.iter().any(|n| n.contains("without schema_version")), "{:?}", a.notes);
}

#[test]
fn a_fixture_written_back_reads_back_equal() {
    for name in ["decode_gfx1151.json", "reference_gfx942.json"] {
        let report = fixture(name);
        let again = Report::from_json(&report.to_json().unwrap()).unwrap();
        assert_eq!(again, report, "{name}");
    }
}

/// docs/roofline_example.svg is the current rendering of the decode fixture; regenerate it as
/// docs/roofline.md says when the plot changes.
#[test]
fn the_documented_plot_is_the_current_rendering_of_the_fixture() {
    let report = fixture("decode_gfx1151.json");
    let analysis = analyse(&report, Some(&Peaks::of(Device::lookup(&report.device).unwrap())));
    let rendered = roctx_roofline::svg::render(&analysis);
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/roofline_example.svg");
    let documented = std::fs::read_to_string(path).unwrap();
    assert!(documented == rendered, "{path} is stale: regenerate it with the command in docs/roofline.md");
}
