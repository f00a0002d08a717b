//! The roofline arithmetic (spec §6) over a [`Report`]: per-row FLOPs, corrected bytes and time,
//! identical ops grouped, each group placed against a ceiling of [`Peaks`]. Owns every formula;
//! reads the report, never changes it, and holds no hardware number of its own.
//!
//! Per row: T = Σ `kernels[].gpu_time_us`; F from the geometry ([`row_flops`]); B the emitted
//! `bytes` corrected for MoE ([`row_bytes`]). Per group the sums are taken first and the
//! ratios after (AI = ΣF/ΣB, P = ΣF/ΣT, BW = ΣB/ΣT), so a group of MoE launches that stream
//! different numbers of experts is weighted by what each moved.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::peaks::{Ceiling, Peaks};
use crate::report::{Report, Row, MOE_ANALYTIC, MOE_EXACT};

/// Ops that only move or reinterpret data: no arithmetic, so 0 FLOPs (and no point on the plot).
pub const DATA_MOVEMENT_OPS: &[&str] = &["NONE", "DUP", "CPY", "CONT", "RESHAPE", "VIEW", "PERMUTE", "TRANSPOSE", "GET_ROWS", "SET_ROWS", "CONCAT"];

/// Which side of the ridge a group is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// AI below the ridge: bandwidth limits it.
    Memory,
    /// AI at or above the ridge: compute limits it.
    Compute,
}

impl Bound {
    /// `memory` or `compute`.
    pub fn label(self) -> &'static str {
        match self {
            Bound::Memory => "memory",
            Bound::Compute => "compute",
        }
    }
}

/// How a row's bytes were obtained (§5.3, §5.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BytesRule {
    /// `bytes` as emitted (fused rows: already the group's external traffic).
    AsEmitted,
    /// MoE: the expert tensor scaled to `experts_used / n_experts`.
    ExpertsUsed,
    /// MoE without a routing read-back: scaled to `min(M·top_k, n_experts) / n_experts`, an
    /// upper bound.
    ShapeBound,
}

/// FLOPs of one op (§6): `MUL_MAT` 2·M·N·K; `MUL_MAT_ID` 2·M·top_k·N·K; data movement
/// ([`DATA_MOVEMENT_OPS`]) 0; anything else ≈ numel(dst), one operation per output element.
pub fn op_flops(op: &str, m: u64, n: u64, k: u64, top_k: u64, ne: [u64; 4]) -> f64 {
    // CAST: shapes and counts to f64; products of large shapes overflow u64, not f64.
    let f = |x: u64| x as f64;
    match op {
        "MUL_MAT" => 2.0 * f(m) * f(n) * f(k),
        "MUL_MAT_ID" => 2.0 * f(m) * f(top_k) * f(n) * f(k),
        op if DATA_MOVEMENT_OPS.contains(&op) => 0.0,
        _ => ne.iter().map(|&d| f(d)).product(),
    }
}

/// A row's FLOPs: its own op's, or on a fused row the sum over `fused_ops` (each node keeps
/// its geometry, §5.3).
pub fn row_flops(row: &Row) -> f64 {
    if row.fused_ops.is_empty() {
        op_flops(&row.ggml_op, row.m, row.n, row.k, row.top_k, row.ne)
    } else {
        row.fused_ops.iter().map(|f| op_flops(&f.ggml_op, f.m, f.n, f.k, f.top_k, f.ne)).sum()
    }
}

/// A row's bytes and the rule used. `bytes` as emitted, except for `MUL_MAT_ID` with
/// `n_experts > 0`, whose expert tensor (`src_bytes[0]`, all experts) is replaced by the
/// experts streamed: `src_bytes[0]·experts_used/n_experts` when `experts_used > 0`, else the
/// shape bound `src_bytes[0]·min(M·top_k, n_experts)/n_experts` (§5.4).
pub fn row_bytes(row: &Row) -> (f64, BytesRule) {
    // CAST: byte counts to f64 (exact below 2^53, i.e. 8 PiB).
    let emitted = row.bytes as f64;
    let expert_tensor = row.src_bytes.first().copied().unwrap_or(0);
    if row.ggml_op != "MUL_MAT_ID" || row.n_experts == 0 || expert_tensor == 0 {
        return (emitted, BytesRule::AsEmitted);
    }
    let (used, rule) = match row.experts_used {
        Some(used) if used > 0 => (used.min(row.n_experts), BytesRule::ExpertsUsed),
        _ => (row.m.saturating_mul(row.top_k).min(row.n_experts), BytesRule::ShapeBound),
    };
    let scaled = expert_tensor as f64 * used as f64 / row.n_experts as f64;
    // Scaling only ever removes idle experts: a row whose `bytes` leave out (part of) the
    // expert tensor is neither made negative nor raised above what was emitted.
    (((emitted - expert_tensor as f64).max(0.0) + scaled).min(emitted), rule)
}

/// How a `MUL_MAT_ID` row's experts were counted: its `moe_accounting`, else (the llama.cpp
/// reference format, which always reads the ids back) `exact` when `experts_used > 0` and
/// `shape bound` when the read-back failed; `None` for other rows.
pub fn moe_accounting(row: &Row) -> Option<&str> {
    if row.ggml_op != "MUL_MAT_ID" {
        return None;
    }
    Some(match (&row.moe_accounting, row.experts_used) {
        (Some(a), _) => a.as_str(),
        (None, Some(used)) if used > 0 => MOE_EXACT,
        (None, _) => "shape bound",
    })
}

/// A row's device time: Σ of its kernels' `gpu_time_us`.
pub fn row_time_us(row: &Row) -> f64 {
    row.kernels.iter().map(|k| k.gpu_time_us).sum()
}

/// A group's place under one ceiling.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Roof {
    /// The compute ceiling used ([`Peaks::ceiling_for`]).
    pub ceiling: Ceiling,
    /// Its peak, FLOP/s.
    pub peak_flops: f64,
    /// Peak memory bandwidth, B/s.
    pub peak_bw: f64,
    /// Ridge point `peak_flops / peak_bw`, FLOP/byte.
    pub ridge: f64,
    /// `min(peak_flops, AI·peak_bw)`, FLOP/s.
    pub attainable_flops: f64,
    /// Achieved / attainable, percent; `None` without time.
    pub pct_of_roofline: Option<f64>,
    /// Achieved bandwidth / peak bandwidth, percent.
    pub pct_of_peak_bw: Option<f64>,
    /// Achieved compute / peak compute, percent.
    pub pct_of_peak_flops: Option<f64>,
    /// Memory- or compute-bound by the ridge; `None` for an op with neither FLOPs nor bytes.
    pub bound: Option<Bound>,
    /// On RDNA, for fp32 vector work: the same measures against the single-issue peak (§7.4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub single_issue: Option<SingleIssue>,
}

/// The single-issue (128 FLOP/clk/CU) view of an RDNA fp32 vector op.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SingleIssue {
    /// Single-issue peak, FLOP/s.
    pub peak_flops: f64,
    /// Its ridge point, FLOP/byte.
    pub ridge: f64,
    /// Achieved / single-issue attainable, percent.
    pub pct_of_roofline: Option<f64>,
    /// Achieved / single-issue peak, percent.
    pub pct_of_peak_flops: Option<f64>,
    /// Bound by the single-issue ridge.
    pub bound: Option<Bound>,
}

/// Identical ops (same op, shapes, types, fused nodes) summed over their invocations.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Group {
    /// One line naming the group: `MUL_MAT+ADD q4_K[4864,896] f32[4864] -> f32[896]`.
    pub label: String,
    /// The op, fused ops joined by `+`.
    pub op: String,
    /// The sources and destination, types and shapes with trailing 1s dropped.
    pub shapes: String,
    /// Destination type.
    pub dtype: String,
    /// `src[0]` type.
    pub quant: String,
    /// Invocations.
    pub count: u64,
    /// Σ T, µs.
    pub total_time_us: f64,
    /// Σ T / count, µs.
    pub avg_time_us: f64,
    /// Σ F.
    pub flops: f64,
    /// Σ B, corrected.
    pub bytes: f64,
    /// Σ `bytes` as emitted.
    pub bytes_emitted: f64,
    /// Rows whose bytes used the MoE `experts_used` rule.
    pub rows_experts_used: u64,
    /// Rows whose bytes used the MoE shape bound.
    pub rows_shape_bound: u64,
    /// `MUL_MAT_ID` rows by how their experts were counted ([`moe_accounting`]), sorted.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub moe_accounting: BTreeMap<String, u64>,
    /// ΣF / ΣB, FLOP/byte; `None` without bytes.
    pub arithmetic_intensity: Option<f64>,
    /// ΣF / ΣT, FLOP/s; `None` without time.
    pub flops_per_s: Option<f64>,
    /// ΣB / ΣT, B/s; `None` without time.
    pub bytes_per_s: Option<f64>,
    /// Placement under the peaks; `None` without peaks.
    pub roof: Option<Roof>,
    /// Distinct kernel names, in first-seen order (at most 8).
    pub kernels: Vec<String>,
}

/// A whole report analysed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Analysis {
    /// The report's `device`.
    pub device: String,
    /// The report's `schema_version` (`None`: llama.cpp reference format).
    pub schema_version: Option<u64>,
    /// The peaks used, if any.
    pub peaks: Option<Peaks>,
    /// The report's `total_gpu_time_us`.
    pub total_gpu_time_us: f64,
    /// Σ T over the rows analysed.
    pub analysed_time_us: f64,
    /// Rows analysed.
    pub rows: u64,
    /// Rows left out (invocation 0: kernels attributed to no op).
    pub rows_excluded: u64,
    /// What the reader should know about the numbers (exclusions, format caveats).
    pub notes: Vec<String>,
    /// Groups by total time, longest first.
    pub groups: Vec<Group>,
}

/// Shape with trailing 1s dropped (`[896]`, `[4864,896]`); an empty tensor keeps its 0.
fn shape(ne: &[u64; 4]) -> String {
    let len = ne.iter().rposition(|&d| d != 1).map_or(1, |i| i + 1);
    let dims: Vec<String> = ne[..len].iter().map(u64::to_string).collect();
    format!("[{}]", dims.join(","))
}

fn tensor(ty: &str, ne: &[u64; 4]) -> String {
    let ty = if ty.is_empty() { "-" } else { ty };
    format!("{ty}{}", shape(ne))
}

/// The one-line label of the group `row` belongs to ([`Group::label`]:
/// `MUL_MAT+ADD q4_K[4864,896] f32[4864] -> f32[896]`).
pub fn group_label(row: &Row) -> String {
    format!("{} {}", op_name(row), shapes(row))
}

/// The op of the group `row` belongs to ([`Group::op`]: fused ops joined by `+`).
pub fn group_op(row: &Row) -> String {
    op_name(row)
}

/// The identity of the group `row` belongs to: rows of one key are one [`Group`] (op, dst
/// shape, every source's shape and type, dtype, quant, fused nodes). Two keys can share a
/// [`group_label`].
pub fn group_key(row: &Row) -> String {
    key(row)
}

/// The grouping key: op, dst shape, every source's shape and type, dtype, quant, fused nodes.
fn key(row: &Row) -> String {
    let fused: Vec<String> = row.fused_ops.iter().map(|f| format!("{}{}", f.ggml_op, shape(&f.ne))).collect();
    format!("{}|{:?}|{:?}|{:?}|{}|{}|{}", row.ggml_op, row.ne, row.src_ne, row.src_types, row.dtype, row.quant, fused.join("+"))
}

fn op_name(row: &Row) -> String {
    if row.fused_ops.is_empty() {
        row.ggml_op.clone()
    } else {
        row.fused_ops.iter().map(|f| f.ggml_op.as_str()).collect::<Vec<_>>().join("+")
    }
}

fn shapes(row: &Row) -> String {
    let srcs: Vec<String> = row.src_ne.iter().zip(&row.src_types).map(|(ne, ty)| tensor(ty, ne)).collect();
    format!("{} -> {}", srcs.join(" "), tensor(&row.dtype, &row.ne))
}

fn ratio(num: f64, den: f64) -> Option<f64> {
    (den > 0.0).then(|| num / den)
}

fn bound(ai: Option<f64>, flops: f64, ridge: f64) -> Option<Bound> {
    match ai {
        Some(ai) => Some(if ai < ridge { Bound::Memory } else { Bound::Compute }),
        None if flops > 0.0 => Some(Bound::Compute),
        None => None,
    }
}

fn roof(g: &Group, peaks: &Peaks, op: &str) -> Option<Roof> {
    let (ceiling, peak) = peaks.ceiling_for(op, &g.quant)?;
    let bw = peaks.mem_bw;
    let attainable = |peak: f64| match g.arithmetic_intensity {
        Some(ai) => peak.min(ai * bw),
        None => peak,
    };
    let pct = |x: Option<f64>, of: f64| x.and_then(|x| ratio(x * 100.0, of));
    let ridge = peak / bw;
    let single_issue = peaks.single_issue(ceiling).map(|single| SingleIssue {
        peak_flops: single,
        ridge: single / bw,
        pct_of_roofline: pct(g.flops_per_s, attainable(single)),
        pct_of_peak_flops: pct(g.flops_per_s, single),
        bound: bound(g.arithmetic_intensity, g.flops, single / bw),
    });
    Some(Roof {
        ceiling,
        peak_flops: peak,
        peak_bw: bw,
        ridge,
        attainable_flops: attainable(peak),
        pct_of_roofline: pct(g.flops_per_s, attainable(peak)),
        pct_of_peak_bw: pct(g.bytes_per_s, bw),
        pct_of_peak_flops: pct(g.flops_per_s, peak),
        bound: bound(g.arithmetic_intensity, g.flops, ridge),
        single_issue,
    })
}

/// Analyses `report` against `peaks` (or none: times, bytes, FLOPs and AI only).
pub fn analyse(report: &Report, peaks: Option<&Peaks>) -> Analysis {
    let mut groups: Vec<Group> = Vec::new();
    let mut heads: Vec<String> = Vec::new(); // the row-level op of each group, for its ceiling
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    let (mut excluded, mut excluded_us, mut analysed_us, mut rows, mut fused_rows) = (0u64, 0.0, 0.0, 0u64, 0u64);
    let mut analytic_rows = 0u64;
    for row in &report.rows {
        let t = row_time_us(row);
        if row.invocation == Some(0) {
            excluded += 1;
            excluded_us += t;
            continue;
        }
        rows += 1;
        analysed_us += t;
        fused_rows += u64::from(!row.fused_ops.is_empty());
        let (b, rule) = row_bytes(row);
        let i = *index.entry(key(row)).or_insert_with(|| {
            let (op, shapes) = (op_name(row), shapes(row));
            groups.push(Group {
                label: format!("{op} {shapes}"),
                op,
                shapes,
                dtype: row.dtype.clone(),
                quant: row.quant.clone(),
                count: 0,
                total_time_us: 0.0,
                avg_time_us: 0.0,
                flops: 0.0,
                bytes: 0.0,
                bytes_emitted: 0.0,
                rows_experts_used: 0,
                rows_shape_bound: 0,
                moe_accounting: BTreeMap::new(),
                arithmetic_intensity: None,
                flops_per_s: None,
                bytes_per_s: None,
                roof: None,
                kernels: Vec::new(),
            });
            heads.push(row.ggml_op.clone());
            groups.len() - 1
        });
        let g = &mut groups[i];
        g.count += 1;
        g.total_time_us += t;
        g.flops += row_flops(row);
        g.bytes += b;
        // CAST: bytes to f64, exact below 2^53.
        g.bytes_emitted += row.bytes as f64;
        g.rows_experts_used += u64::from(rule == BytesRule::ExpertsUsed);
        g.rows_shape_bound += u64::from(rule == BytesRule::ShapeBound);
        if let Some(a) = moe_accounting(row) {
            *g.moe_accounting.entry(a.to_owned()).or_default() += 1;
            if a == MOE_ANALYTIC {
                analytic_rows += 1;
            }
        }
        for k in &row.kernels {
            if g.kernels.len() < 8 && !g.kernels.contains(&k.name) {
                g.kernels.push(k.name.clone());
            }
        }
    }
    for (g, head) in groups.iter_mut().zip(&heads) {
        // CAST: an invocation count, far below 2^53.
        g.avg_time_us = g.total_time_us / g.count as f64;
        g.arithmetic_intensity = ratio(g.flops, g.bytes);
        g.flops_per_s = ratio(g.flops * 1e6, g.total_time_us);
        g.bytes_per_s = ratio(g.bytes * 1e6, g.total_time_us);
        g.roof = peaks.and_then(|p| roof(g, p, head));
    }
    groups.sort_by(|a, b| b.total_time_us.total_cmp(&a.total_time_us).then_with(|| a.label.cmp(&b.label)));
    let mut notes = Vec::new();
    if excluded > 0 {
        notes.push(format!("{excluded} row(s) of invocation 0 ({excluded_us} us of kernels attributed to no op) left out"));
    }
    if report.schema_version.is_none() && fused_rows > 0 {
        notes.push(format!(
            "{fused_rows} fused row(s) in a report without schema_version: their bytes are taken as emitted, the group's external traffic in PR #33 reports; PR #48 producers emit the head node's bytes there, which undercounts"
        ));
    }
    if analytic_rows > 0 {
        notes.push(format!(
            "{analytic_rows} MUL_MAT_ID row(s) count their experts analytically, min(M*top_k, n_experts): exact at 1 token, an upper bound above (their bandwidth a lower bound); GGML_ROOFLINE_MOE=exact reads the routing back"
        ));
    }
    let gap = (analysed_us - report.total_gpu_time_us).abs();
    if gap > 1e-6 * report.total_gpu_time_us.max(1.0) {
        notes.push(format!("the rows' kernels add up to {analysed_us} us, the report's total_gpu_time_us is {}", report.total_gpu_time_us));
    }
    Analysis {
        device: report.device.clone(),
        schema_version: report.schema_version,
        peaks: peaks.cloned(),
        total_gpu_time_us: report.total_gpu_time_us,
        analysed_time_us: analysed_us,
        rows,
        rows_excluded: excluded,
        notes,
        groups,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peaks::Device;
    use crate::report::{FusedOp, Kernel};

    fn mul_mat_id(experts_used: Option<u64>) -> Row {
        Row {
            ggml_op: "MUL_MAT_ID".into(),
            dtype: "f32".into(),
            quant: "q4_K".into(),
            ne: [768, 8, 4, 1],
            src_ne: vec![[2048, 768, 64, 1], [2048, 1, 4, 1], [8, 4, 1, 1]],
            src_types: vec!["q4_K".into(), "f32".into(), "i32".into()],
            bytes: 56_754_304,
            dst_bytes: 98_304,
            src_bytes: vec![56_623_104, 32_768, 128],
            m: 4,
            n: 768,
            k: 2048,
            n_experts: 64,
            top_k: 8,
            experts_used,
            kernels: vec![Kernel { name: "mmq".into(), gpu_time_us: 100.0 }],
            ..Row::default()
        }
    }

    #[test]
    fn moe_bytes_scale_the_expert_tensor_by_experts_used_else_by_the_shape_bound() {
        assert_eq!(row_bytes(&mul_mat_id(Some(20))), (131_200.0 + 17_694_720.0, BytesRule::ExpertsUsed));
        // No read-back: min(M·top_k = 32, E = 64) of 64 experts.
        assert_eq!(row_bytes(&mul_mat_id(Some(0))), (131_200.0 + 28_311_552.0, BytesRule::ShapeBound));
        assert_eq!(row_bytes(&mul_mat_id(None)).1, BytesRule::ShapeBound);
        let mut prefill = mul_mat_id(None);
        prefill.m = 512; // saturates at all experts: the emitted bytes
        assert_eq!(row_bytes(&prefill), (56_754_304.0, BytesRule::ShapeBound));
        assert_eq!(row_flops(&mul_mat_id(None)), 2.0 * 4.0 * 8.0 * 768.0 * 2048.0);
        // bytes that leave out the expert tensor stay as emitted (found by fuzz_report).
        let short = Row { bytes: 1000, ..mul_mat_id(Some(20)) };
        assert_eq!(row_bytes(&short).0, 1000.0);
    }

    #[test]
    fn fused_rows_sum_their_nodes_flops_and_keep_the_emitted_external_bytes() {
        let node = |op: &str, m, n, k| FusedOp { ggml_op: op.into(), ne: [896, 1, 1, 1], m, n, k, ..FusedOp::default() };
        let row = Row { ggml_op: "MUL_MAT".into(), fused_ops: vec![node("MUL_MAT", 1, 896, 4864), node("ADD", 0, 0, 0)], bytes: 2_478_080, m: 1, n: 896, k: 4864, ..Row::default() };
        assert_eq!(row_flops(&row), (2 * 896 * 4864 + 896) as f64);
        assert_eq!(row_bytes(&row), (2_478_080.0, BytesRule::AsEmitted));
        assert_eq!(op_flops("CPY", 0, 0, 0, 0, [4096, 1, 1, 1]), 0.0);
        assert_eq!(op_flops("RMS_NORM", 0, 0, 0, 0, [4096, 2, 1, 1]), 8192.0);
    }

    #[test]
    fn groups_sum_before_dividing_and_place_against_the_ridge() {
        let mut report = Report::new("gfx942");
        report.rows = vec![mul_mat_id(Some(20)), mul_mat_id(Some(0)), Row { invocation: Some(0), ggml_op: "CPY".into(), kernels: vec![Kernel { name: "copy".into(), gpu_time_us: 5.0 }], ..Row::default() }];
        report.total_gpu_time_us = 200.0;
        let peaks = Peaks::of(Device::lookup("gfx942").unwrap());
        let a = analyse(&report, Some(&peaks));
        assert_eq!((a.rows, a.rows_excluded, a.groups.len()), (2, 1, 1));
        assert!(a.notes[0].starts_with("1 row(s) of invocation 0 (5 us"), "{:?}", a.notes);
        assert_eq!(a.notes.len(), 1, "{:?}", a.notes);
        let g = &a.groups[0];
        let bytes = 131_200.0 * 2.0 + 17_694_720.0 + 28_311_552.0;
        assert_eq!((g.count, g.total_time_us, g.avg_time_us, g.bytes, g.rows_experts_used, g.rows_shape_bound), (2, 200.0, 100.0, bytes, 1, 1));
        let flops = 2.0 * 2.0 * 4.0 * 8.0 * 768.0 * 2048.0;
        assert_eq!(g.arithmetic_intensity, Some(flops / bytes));
        assert_eq!(g.bytes_per_s, Some(bytes / 200e-6));
        let roof = g.roof.as_ref().unwrap();
        assert_eq!(roof.ceiling, Ceiling::Int8Matrix);
        assert_eq!(roof.bound, Some(Bound::Memory));
        assert_eq!(roof.attainable_flops, flops / bytes * 5.3e12);
        let pct_bw = roof.pct_of_peak_bw.unwrap();
        assert!((pct_bw - bytes / 200e-6 / 5.3e12 * 100.0).abs() < 1e-9);
        // Memory-bound: % of roofline is % of peak bandwidth.
        assert!((roof.pct_of_roofline.unwrap() - pct_bw).abs() < 1e-9);
        assert_eq!(g.label, "MUL_MAT_ID q4_K[2048,768,64] f32[2048,1,4] i32[8,4] -> f32[768,8,4]");
        assert!(analyse(&report, None).groups[0].roof.is_none());
    }
}
