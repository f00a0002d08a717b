//! The roofline report from a capture of 100k dispatches (the workload of
//! `roctx_kernels/benches/dispatch.rs`: ~40k op invocations of 16 geometries): `build::report`
//! (dispatches grouped per invocation, rows with their kernels' names) and the JSON the runtime
//! writes. The snapshot is taken once, outside the clock. Results: BENCHMARKS.md "Kernel stage".
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

#[path = "../../roctx_kernels/benches/common/mod.rs"]
mod common;

fn report(c: &mut Criterion) {
    common::register_kernels();
    let mut capture = common::Capture::default();
    let mut left = 100_000;
    while left > 0 {
        let n = left.min(common::BATCH);
        roctx_kernels::record_dispatch(capture.dispatches(n));
        left -= n;
    }
    let snapshot = roctx_kernels::snapshot();
    let report = roctx_roofline::build::report(&snapshot);
    eprintln!(
        "{} dispatches, {} invocations -> {} rows, {} bytes of JSON",
        snapshot.dispatches.len(),
        snapshot.invocations.len(),
        report.rows.len(),
        report.to_json().map(|j| j.len()).unwrap_or(0)
    );
    let mut group = c.benchmark_group("roofline");
    group.sample_size(20);
    group.throughput(Throughput::Elements(snapshot.dispatches.len() as u64));
    group.bench_function("build_report_100k", |b| b.iter(|| roctx_roofline::build::report(&snapshot).rows.len()));
    group.bench_function("report_to_json_100k", |b| b.iter(|| report.to_json().map(|j| j.len()).unwrap_or(0)));
    group.finish();
}

criterion_group!(benches, report);
criterion_main!(benches);
