//! Export throughput: a trace of N events (8 threads, nested ranges and marks, 64 distinct
//! labels) to serialized XSpace bytes (build the /host:ROCTX plane, merge into /host:CPU, number
//! rows, encode), at 1M and 10M events. Also prints bytes per event. Results: BENCHMARKS.md.
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use prost::Message;
use roctx_export::{xplane, Event, EventKind, Trace};

fn trace(n: usize) -> Trace {
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
    t
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("xspace_export");
    group.sample_size(10);
    for n in [1_000_000usize, 10_000_000] {
        let t = trace(n);
        let bytes = xplane::standalone_xspace(&t).encode_to_vec();
        eprintln!("{n} events -> {} bytes, {:.1} bytes/event", bytes.len(), bytes.len() as f64 / n as f64);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &t, |b, t| {
            b.iter(|| xplane::standalone_xspace(t).encode_to_vec().len())
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
