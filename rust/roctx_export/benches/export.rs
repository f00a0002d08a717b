//! Export throughput: a trace of N events (8 threads, nested ranges and marks, 64 distinct
//! labels) to serialized XSpace bytes (build the /host:ROCTX plane, merge into /host:CPU, number
//! rows, encode), at 1M and 10M events, two ways: `bytes` (events straight to wire bytes, what
//! the log directory writer runs) and `message` (prost structs, then prost's encoding). Also
//! prints bytes per event. Events come in the collector's snapshot order (by thread, then
//! start), as `Trace::from_snapshot` passes them on; `bytes_interleaved` shows the cost of a
//! trace whose threads are interleaved. Results: BENCHMARKS.md.
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use prost::Message;
use roctx_export::{xplane, Event, EventKind, Trace};

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
}

criterion_group!(benches, bench);
criterion_main!(benches);
