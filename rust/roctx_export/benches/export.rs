//! Export throughput: a trace of N events (8 threads, nested ranges and marks, 64 distinct
//! labels) to serialized XSpace bytes (build the /host:ROCTX plane, merge into /host:CPU, number
//! rows, encode), at 1M and 10M events, two ways: `bytes` (events straight to wire bytes, what
//! the log directory writer runs) and `message` (prost structs, then prost's encoding). Also
//! prints bytes per event. Events come in the collector's snapshot order (by thread, then
//! start), as `Trace::from_snapshot` passes them on; `bytes_interleaved` shows the cost of a
//! trace whose threads are interleaved. `xspace_export_ops` writes a llama.cpp-sized kernel trace
//! (384k op invocations of 9 groups, 2 kernels each, on one GPU stream: the H200
//! `test-backend-ops perf` run) without and with its op costs: what the op events on the GPU
//! plane and the module in `/host:metadata` add (issue 26). Results: BENCHMARKS.md.
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use prost::Message;
use roctx_export::{xplane, DeviceCaps, Event, EventKind, KernelEvent, OpCost, Trace};

/// `n` events on 8 threads, in the order the collector's snapshot hands them over (by thread,
/// then start) when `snapshot_order`, else round-robin over the threads.
fn trace(n: usize, snapshot_order: bool) -> Trace {
    let mut t = Trace::new("bench", 0, n as u64 * 1000);
    for i in 0..64 {
        t.label(&format!("Thunk:#name=fusion.{i},hlo_op=fusion.{i},unique_hlo_op_id={i}#"));
    }
    t.events.reserve(n);
    for i in 0..n {
        let tid = 1000 + (i % 8) as u64;
        let start = (i / 8) as u64 * 1000;
        let (kind, end) = match i % 16 {
            15 => (EventKind::Mark, start),
            _ => (EventKind::Range, start + 900 - (i % 3) as u64 * 100),
        };
        t.events.push(Event { kind, tid, end_tid: tid, start_ns: start, end_ns: end, label: (i % 64) as u32, depth: 0, seq: 0 });
    }
    if snapshot_order {
        t.events.sort_by_key(|e| (e.tid, e.start_ns, std::cmp::Reverse(e.end_ns)));
    }
    t
}

/// `invocations` op invocations of 9 groups, round robin, each 2 kernels back to back on GPU 0
/// stream 7, inside one ROCTX range; with each invocation's cost when `costs`.
fn op_trace(invocations: u32, costs: bool) -> Trace {
    let n = u64::from(invocations);
    let mut t = Trace::new("bench", 0, n * 20_000 + 1000);
    let label = t.label("test-backend-ops perf");
    t.events.push(Event { kind: EventKind::Range, tid: 1000, end_tid: 1000, start_ns: 0, end_ns: n * 20_000, label, depth: 0, seq: 1 });
    let groups: Vec<String> = (0..9).map(|g| format!("MUL_MAT q4_K[4096,{}] f32[4096,{g}] -> f32[{},{g}]", 4096 * (g + 1), 4096 * (g + 1))).collect();
    t.kernels.reserve(2 * invocations as usize);
    for i in 1..=invocations {
        let at = u64::from(i) * 20_000;
        for (k, name) in ["quantize_q8_1(float const*, void*, long, long)", "void mul_mat_vec_q<(ggml_type)12, 1>(void const*, void const*, float*)"].iter().enumerate() {
            let start = at + k as u64 * 5_000;
            t.kernels.push(KernelEvent {
                start_ns: start,
                end_ns: start + 4_000,
                stream: 7,
                name: (*name).to_owned(),
                correlation_id: u64::from(i) * 2 + k as u64,
                details: "grid:128,1,1 block:256,1,1".to_owned(),
                launched_by: Some(0),
                invocation: i,
                ..KernelEvent::default()
            });
        }
        if costs {
            let g = (i % 9) as usize;
            t.op_costs.insert(i, OpCost { group: groups[g].clone(), op_type: "MUL_MAT".to_owned(), flops: 2 * 4096 * 4096 * (g as u64 + 1), bytes: 9_437_184 * (g as u64 + 1) });
        }
    }
    if costs {
        t.devices.insert(0, DeviceCaps { vendor: Some("Nvidia".to_owned()), clock_rate_khz: Some(1_980_000), core_count: Some(132), memory_bandwidth: Some(4_800_000_000_000), memory_size: Some(150_754_820_096), compute_cap: Some((9, 0)), peak_tflops: Some(989.4) });
    }
    t
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("xspace_export");
    group.sample_size(10);
    for n in [1_000_000usize, 10_000_000] {
        let t = trace(n, true);
        let bytes = xplane::standalone_xspace(&t).encode_to_vec();
        eprintln!("{n} events -> {} bytes, {:.1} bytes/event", bytes.len(), bytes.len() as f64 / n as f64);
        group.throughput(Throughput::Elements(n as u64));
        assert_eq!(xplane::standalone_xspace_bytes(&t).len(), bytes.len());
        // What the log directory writer runs: events straight to bytes.
        group.bench_with_input(BenchmarkId::new("bytes", n), &t, |b, t| b.iter(|| xplane::standalone_xspace_bytes(t).len()));
        // The message first, then prost's encoding (what merges and the C API's XSpace use).
        group.bench_with_input(BenchmarkId::new("message", n), &t, |b, t| {
            b.iter(|| xplane::standalone_xspace(t).encode_to_vec().len())
        });
    }
    // The same events with the threads interleaved (a hand-built trace): the exporter then
    // walks the trace once per thread.
    let t = trace(1_000_000, false);
    group.throughput(Throughput::Elements(1_000_000));
    group.bench_with_input(BenchmarkId::new("bytes_interleaved", 1_000_000), &t, |b, t| b.iter(|| xplane::standalone_xspace_bytes(t).len()));
    group.finish();

    let mut group = c.benchmark_group("xspace_export_ops");
    group.sample_size(10);
    let invocations = 383_917u32;
    group.throughput(Throughput::Elements(u64::from(invocations)));
    for (name, costs) in [("kernels_only", false), ("with_op_events", true)] {
        let t = op_trace(invocations, costs);
        let bytes = xplane::standalone_xspace_bytes(&t).len();
        eprintln!("{name}: {invocations} invocations, {} kernels -> {bytes} bytes", t.kernels.len());
        group.bench_with_input(BenchmarkId::new(name, invocations), &t, |b, t| b.iter(|| xplane::standalone_xspace_bytes(t).len()));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
