//! The report from a capture: what the kernel stage ([`roctx_kernels`]) recorded, as the rows of
//! §5: one row per op invocation that dispatched at least one kernel, its kernels in device
//! start order, invocation 0 (no op) left out of the rows and out of `total_gpu_time_us`.
//! Kernels only: memory copies and sets are not rows of the report, nor in its GPU time.

use std::collections::BTreeMap;

use roctx_kernels::{KernelSnapshot, OpDescriptor, Work};

use crate::report::{FusedOp, Kernel, Report, Row, MOE_ANALYTIC, MOE_EXACT, MOE_HOST};

/// The report of `snapshot`; rows in invocation order.
pub fn report(snapshot: &KernelSnapshot) -> Report {
    let mut report = Report::new(snapshot.device.clone());
    let mut per_invocation: BTreeMap<u32, Vec<Kernel>> = BTreeMap::new();
    // `dispatches` is in device start order already.
    let kernels = || snapshot.dispatches.iter().filter(|d| d.work == Work::Kernel);
    for d in kernels() {
        if d.invocation == 0 || !snapshot.invocations.contains_key(&d.invocation) {
            continue;
        }
        let us = d.end_ns.saturating_sub(d.start_ns) as f64 / 1000.0;
        per_invocation.entry(d.invocation).or_default().push(Kernel { name: snapshot.name(d.kernel_id).to_owned(), gpu_time_us: us });
    }
    let mut total_ns: u64 = 0;
    for d in kernels() {
        if d.invocation != 0 && snapshot.invocations.contains_key(&d.invocation) {
            total_ns = total_ns.saturating_add(d.end_ns.saturating_sub(d.start_ns));
        }
    }
    report.total_gpu_time_us = total_ns as f64 / 1000.0;
    for (invocation, kernels) in per_invocation {
        let inv = &snapshot.invocations[&invocation];
        let Some(op) = snapshot.geometries.get(inv.geometry as usize) else { continue };
        let mut row = row_of(op);
        row.invocation = Some(u64::from(invocation));
        // Present only on rows whose ids were read back, one entry per expert (PR #53).
        row.tokens_per_expert = snapshot.tokens_per_expert.get(&invocation).filter(|t| t.len() as u64 == op.n_experts).map(|t| t.to_vec());
        if op.op == "MUL_MAT_ID" {
            let (used, accounting) = match (&row.tokens_per_expert, inv.experts_used) {
                (Some(_), used) => (used, MOE_EXACT),
                (None, used) if used > 0 => (used, MOE_HOST),
                // No routing (the default, or an exact read-back that was lost, counted where it
                // was): the experts the shapes allow, exact at one token (§5.4).
                (None, _) => (op.m.saturating_mul(op.top_k).min(op.n_experts), MOE_ANALYTIC),
            };
            row.experts_used = Some(used);
            row.moe_accounting = Some(accounting.to_owned());
        }
        row.kernels = kernels;
        report.rows.push(row);
    }
    report
}

fn shape(ne: &[i64; 4]) -> [u64; 4] {
    ne.map(|v| u64::try_from(v).unwrap_or(0))
}

fn row_of(op: &OpDescriptor) -> Row {
    Row {
        invocation: None,
        name: (!op.name.is_empty()).then(|| op.name.clone()),
        ggml_op: op.op.clone(),
        fused_ops: op.fused_ops.iter().map(fused_of).collect(),
        dtype: op.dtype.clone(),
        quant: op.quant.clone(),
        ne: shape(&op.ne),
        src_ne: op.src_ne.iter().map(shape).collect(),
        src_types: op.src_types.clone(),
        op_params: op.op_params.clone(),
        bytes: op.bytes,
        dst_bytes: op.dst_bytes,
        src_bytes: op.src_bytes.clone(),
        m: op.m,
        n: op.n,
        k: op.k,
        n_experts: op.n_experts,
        top_k: op.top_k,
        ..Row::default()
    }
}

fn fused_of(op: &OpDescriptor) -> FusedOp {
    FusedOp {
        ggml_op: op.op.clone(),
        dtype: op.dtype.clone(),
        quant: op.quant.clone(),
        ne: shape(&op.ne),
        src_ne: op.src_ne.iter().map(shape).collect(),
        src_types: op.src_types.clone(),
        op_params: op.op_params.clone(),
        m: op.m,
        n: op.n,
        k: op.k,
        top_k: op.top_k,
        n_experts: (op.n_experts > 0).then_some(op.n_experts),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use roctx_kernels::{Dispatch, Invocation};

    use super::*;

    fn dispatch(start: u64, end: u64, kernel: u64, invocation: u32) -> Dispatch {
        Dispatch { work: Default::default(), graph: Default::default(), start_ns: start, end_ns: end, kernel_id: kernel, invocation, range: 0, thread_id: 1, launch_ns: 0, agent_id: 1, queue_id: 1, dispatch_id: start, correlation_id: 0, workgroup: [256, 1, 1], grid: [65536, 1, 1] }
    }

    /// The PR #33 example (roofline.md 5.3): decode down-projection MUL_MAT fused with its ADD.
    fn fused_example() -> OpDescriptor {
        let mm = OpDescriptor {
            op: "MUL_MAT".into(),
            dtype: "f32".into(),
            quant: "q4_K".into(),
            ne: [896, 1, 1, 1],
            src_ne: vec![[4864, 896, 1, 1], [4864, 1, 1, 1]],
            src_types: vec!["q4_K".into(), "f32".into()],
            m: 1,
            n: 896,
            k: 4864,
            ..OpDescriptor::default()
        };
        let add = OpDescriptor {
            op: "ADD".into(),
            dtype: "f32".into(),
            quant: "f32".into(),
            ne: [896, 1, 1, 1],
            src_ne: vec![[896, 1, 1, 1], [896, 1, 1, 1]],
            src_types: vec!["f32".into(), "f32".into()],
            ..OpDescriptor::default()
        };
        OpDescriptor { bytes: 2_478_080, dst_bytes: 3584, src_bytes: vec![2_451_456, 19_456], fused_ops: vec![mm.clone(), add], ..mm }
    }

    #[test]
    fn copies_and_sets_are_neither_rows_nor_gpu_time() {
        use roctx_kernels::{MemCopy, MemSet, Work};
        let copy = Dispatch { work: Work::Copy(MemCopy { bytes: 64, ..MemCopy::default() }), kernel_id: 0, ..dispatch(1_200, 5_200, 0, 2) };
        let set = Dispatch { work: Work::Set(MemSet { bytes: 64, ..MemSet::default() }), kernel_id: 0, ..dispatch(6_000, 7_000, 0, 3) };
        let snapshot = KernelSnapshot {
            dispatches: vec![dispatch(100, 1_100, 1, 2), copy, set],
            names: HashMap::from([(1, Arc::from("k"))]),
            invocations: BTreeMap::from([(2, Invocation { geometry: 0, experts_used: 0 }), (3, Invocation { geometry: 0, experts_used: 0 })]),
            geometries: vec![Arc::new(OpDescriptor { op: "ADD".into(), ..OpDescriptor::default() })],
            ..KernelSnapshot::default()
        };
        let report = report(&snapshot);
        assert_eq!(report.rows.len(), 1, "invocation 3 launched only a memset: no row");
        assert_eq!(report.rows[0].kernels.len(), 1);
        assert_eq!(report.total_gpu_time_us, 1.0);
    }

    #[test]
    fn rows_follow_invocations_with_kernels_in_device_order_and_invocation_0_is_left_out() {
        let snapshot = KernelSnapshot {
            device: "gfx1151".into(),
            dispatches: vec![dispatch(100, 1_100, 1, 2), dispatch(1_200, 9_200, 2, 2), dispatch(10_000, 10_500, 3, 0), dispatch(20_000, 20_250, 3, 3)],
            names: HashMap::from([(1, Arc::from("quantize_q8_1")), (2, Arc::from("mul_mat_vec_q"))]),
            invocations: BTreeMap::from([(2, Invocation { geometry: 0, experts_used: 0 }), (3, Invocation { geometry: 1, experts_used: 0 }), (4, Invocation { geometry: 1, experts_used: 0 })]),
            geometries: vec![Arc::new(fused_example()), Arc::new(OpDescriptor { op: "RMS_NORM".into(), ..OpDescriptor::default() })],
            ..KernelSnapshot::default()
        };
        let report = report(&snapshot);
        assert_eq!(report.schema_version, Some(crate::report::SCHEMA_VERSION));
        assert_eq!(report.device, "gfx1151");
        assert_eq!(report.rows.len(), 2, "invocation 4 dispatched nothing: no row");
        let r = &report.rows[0];
        assert_eq!(r.invocation, Some(2));
        assert_eq!((r.bytes, r.dst_bytes, r.src_bytes.clone()), (2_478_080, 3584, vec![2_451_456, 19_456]));
        assert_eq!(r.fused_ops.iter().map(|f| f.ggml_op.as_str()).collect::<Vec<_>>(), ["MUL_MAT", "ADD"]);
        assert_eq!(r.kernels.iter().map(|k| (k.name.as_str(), k.gpu_time_us)).collect::<Vec<_>>(), [("quantize_q8_1", 1.0), ("mul_mat_vec_q", 8.0)]);
        assert_eq!(report.rows[1].kernels[0].name, "", "an unregistered kernel has an empty name");
        assert_eq!(report.total_gpu_time_us, 9.25, "invocation 0's 0.5 us excluded");
        // What we write reads back equal.
        let back = Report::from_json(&report.to_json().unwrap()).unwrap();
        assert_eq!(back, report);
    }

    #[test]
    fn a_moe_row_says_how_its_experts_were_counted() {
        // 128 experts, top-8: 1 token touches 8, 8 tokens at most 64, 512 tokens all 128.
        let moe = |m: u64| Arc::new(OpDescriptor { op: "MUL_MAT_ID".into(), n_experts: 128, top_k: 8, m, ..OpDescriptor::default() });
        let mut tokens = vec![0u64; 128];
        tokens[3] = 5;
        tokens[9] = 3;
        let snapshot = KernelSnapshot {
            dispatches: (2..=6).map(|i| dispatch(u64::from(i) * 100, u64::from(i) * 100 + 50, 1, i)).collect(),
            names: HashMap::from([(1, Arc::from("mul_mat_vec_q"))]),
            invocations: BTreeMap::from([
                (2, Invocation { geometry: 0, experts_used: 0 }),
                (3, Invocation { geometry: 1, experts_used: 0 }),
                (4, Invocation { geometry: 2, experts_used: 0 }),
                (5, Invocation { geometry: 1, experts_used: 2 }),
                (6, Invocation { geometry: 1, experts_used: 7 }),
            ]),
            geometries: vec![moe(1), moe(8), moe(512)],
            tokens_per_expert: BTreeMap::from([(5, Arc::from(tokens.clone()))]),
            ..KernelSnapshot::default()
        };
        let report = report(&snapshot);
        let got: Vec<(Option<u64>, Option<&str>, bool)> = report.rows.iter().map(|r| (r.experts_used, r.moe_accounting.as_deref(), r.tokens_per_expert.is_some())).collect();
        assert_eq!(
            got,
            [
                (Some(8), Some(MOE_ANALYTIC), false),
                (Some(64), Some(MOE_ANALYTIC), false),
                (Some(128), Some(MOE_ANALYTIC), false),
                (Some(2), Some(MOE_EXACT), true),
                (Some(7), Some(MOE_HOST), false),
            ]
        );
        let back = Report::from_json(&report.to_json().unwrap()).unwrap();
        assert_eq!(back, report);
    }
}
