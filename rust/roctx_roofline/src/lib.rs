/*!
Per-op GPU roofline analysis of ggml/llama.cpp profiles, modelled on AMD-Ecosystem/llama.cpp's
`GGML_HIP_ROOFLINE` (spec `roofline.md`). The profiler writes one JSON report row per op
invocation (shapes, types, bytes, kernels with device times); this crate reads and writes that
report, counts FLOPs and bytes per op, groups identical ops, places them under the peaks of the
GPU and draws the roofline. It needs no ROCm: the `roctx roofline` command is built on it, and
the capture side builds a [`Report`] and calls [`Report::to_json`].

# Brief overview

- [`report`]: the schema (§5) as [`Report`], [`Row`], [`FusedOp`], [`Kernel`]; a writer with
  stable key order and full precision, and a parser that names the JSON path of what it refuses.
  Our reports carry `"schema_version": 1`; the reference format (none) parses too.
- [`ggml`]: the ggml type table (block elements, bytes per block, bits per weight) and
  `ggml_nbytes` (§8).
- [`analysis`]: FLOPs, corrected bytes (fused external traffic, MoE expert scaling, §5.3-5.4),
  time, arithmetic intensity, achieved and attainable performance, % of roofline, of peak
  bandwidth and of peak compute, memory- or compute-bound; identical ops grouped, longest
  total time first ([`analyse`]).
- [`peaks`]: the per-architecture peak table (§7) with a cited source per entry, the ceiling an
  op is judged against, `--peak-bw`/`--peak-flops` style overrides ([`Peaks::with_overrides`]).
- [`build`]: the report from a capture of the kernel stage (`roctx_kernels`).
- [`svg`]: a self-contained, deterministic SVG roofline plot ([`svg::render`]).

# Example

```
use roctx_roofline::{analyse, Device, Kernel, Peaks, Report, Row};

// A decode matmul on Strix Halo: q4_K weight [4096, 32000], one token.
let mut report = Report::new("gfx1151");
report.rows.push(Row {
    ggml_op: "MUL_MAT".into(),
    dtype: "f32".into(),
    quant: "q4_K".into(),
    ne: [32000, 1, 1, 1],
    src_ne: vec![[4096, 32000, 1, 1], [4096, 1, 1, 1]],
    src_types: vec!["q4_K".into(), "f32".into()],
    bytes: 73_872_384,
    dst_bytes: 128_000,
    src_bytes: vec![73_728_000, 16_384],
    m: 1, n: 32000, k: 4096,
    kernels: vec![Kernel { name: "mul_mat_vec_q".into(), gpu_time_us: 384.0 }],
    ..Row::default()
});
report.total_gpu_time_us = 384.0;

// Round trip through the JSON the profiler writes.
let report = Report::from_json(&report.to_json().unwrap()).unwrap();

let peaks = Peaks::of(Device::lookup(&report.device).unwrap());
let analysis = analyse(&report, Some(&peaks));
let g = &analysis.groups[0];
let ai = g.arithmetic_intensity.unwrap();
assert!((ai - 3.55).abs() < 0.01); // ≈ 2 / (4.5 bits / 8): far left of every ridge (§9)
let roof = g.roof.as_ref().unwrap();
assert_eq!(roof.bound, Some(roctx_roofline::Bound::Memory));
assert!((roof.pct_of_peak_bw.unwrap() - 75.1).abs() < 0.1); // 192 GB/s of 256
let svg = roctx_roofline::svg::render(&analysis);
assert_eq!(svg.matches(r#"class="op""#).count(), 1);
```
*/
#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

pub mod analysis;
pub mod build;
pub mod ggml;
pub mod peaks;
pub mod report;
pub mod svg;

pub use analysis::{analyse, Analysis, Bound, BytesRule, Group, Roof, SingleIssue};
pub use peaks::{Ceiling, CeilingPeak, Device, Peaks};
pub use report::{FusedOp, Kernel, Report, ReportError, Row};
