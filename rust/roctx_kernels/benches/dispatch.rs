//! Kernel-stage throughput (issue 11 item 7; results: BENCHMARKS.md "Kernel stage"):
//!
//! - `ingest`: records/s through `record_dispatch` (decode of the external-correlation value
//!   into invocation and range, the reset-floor check, the append), in batches of [`BATCH`]
//!   records as the listener hands them over at the 4 MiB watermark. Only that call is timed:
//!   op scopes are begun, batches built and the store reset (every [`GENERATION`] batches, to
//!   stay under `MAX_DISPATCHES`) outside the clock. The batch is moved in and freed inside,
//!   as the listener's is.
//! - `begin_invocation`: the store's part of an op scope (the descriptor's geometry looked up or
//!   stored, the invocation inserted); the C ABI's total is bench/kernels_benchmark.cc.
//! - `snapshot`: a copy of 100k dispatches, sorted by device start, names demangled once.
//! - `begin_scoped_alone` and `begin_scoped_while_delivering` (issue 42): llama.cpp's per-node
//!   op scope with a remembered geometry ([`roctx_kernels::begin_invocation_at_scoped`]), alone,
//!   and while another thread delivers what a CUPTI buffer holds (300 launches and their 300
//!   kernels, joined) every 2 ms, as the listener's buffer callback does under a launch-bound
//!   op. What the second costs over the first is what a launching thread waits for the join.
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

mod common;
use common::{Capture, BATCH};

/// Batches between two resets: 16 x 22,795 = 365k records, well under `MAX_DISPATCHES`.
const GENERATION: usize = 16;

fn ingest(c: &mut Criterion) {
    common::register_kernels();
    let mut capture = Capture::default();
    let mut pending: Vec<Vec<roctx_kernels::RawDispatch>> = Vec::new();
    let mut group = c.benchmark_group("kernels");
    group.sample_size(20).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4));
    group.throughput(Throughput::Elements(BATCH as u64));
    group.bench_function("ingest", |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                if pending.is_empty() {
                    // Untimed: a fresh store, and the next generation's op scopes and records
                    // (invocations begun after the reset, so none is discarded as warm-up).
                    roctx_kernels::reset();
                    pending = (0..GENERATION).map(|_| capture.dispatches(BATCH)).collect();
                }
                let batch = pending.pop().unwrap_or_default();
                let t = Instant::now();
                roctx_kernels::record_dispatch(batch);
                timed += t.elapsed();
            }
            timed
        })
    });
    let s = roctx_kernels::snapshot().stats;
    assert_eq!((s.dropped_cap, s.before_reset, s.rejected_records), (0, 0, 0), "every record kept: {s:?}");

    // Issue 21: the same records attributed by the launch join (their launch call records
    // delivered with them, each looked up in its thread's op log). Timed: both calls.
    // Each batch is made just before it is delivered (untimed), as its ops ran just before.
    let mut capture = Capture::default();
    let mut delivered = 0usize;
    group.bench_function("ingest_joined", |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                if delivered % GENERATION == 0 {
                    roctx_kernels::reset();
                }
                delivered += 1;
                let (launches, batch) = capture.joined(BATCH);
                let t = Instant::now();
                roctx_kernels::record_launches(launches);
                roctx_kernels::record_dispatch(batch);
                timed += t.elapsed();
            }
            timed
        })
    });
    let s = roctx_kernels::snapshot();
    assert_eq!((s.stats.unjoined, s.stats.before_reset), (0, 0), "every record joined: {:?}", s.stats);
    assert!(s.dispatches.iter().filter(|d| d.invocation != 0).count() > s.dispatches.len() * 8 / 10, "kernels found their ops");

    group.throughput(Throughput::Elements(1));
    let ops: Vec<_> = (0..16).map(common::op).collect();
    group.bench_function("begin_invocation", |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            let mut i = 0u64;
            while i < iters {
                roctx_kernels::reset(); // untimed: the invocation map stays at most 64k long
                let n = (iters - i).min(1 << 16);
                let descs: Vec<_> = (0..n).map(|j| ops[(j % 16) as usize].clone()).collect();
                let t = Instant::now();
                for d in descs {
                    black_box(roctx_kernels::begin_invocation(d));
                }
                timed += t.elapsed();
                i += n;
            }
            timed
        })
    });

    roctx_kernels::reset();
    let mut capture = Capture::default();
    for _ in 0..(100_000 / BATCH) {
        roctx_kernels::record_dispatch(capture.dispatches(BATCH));
    }
    roctx_kernels::record_dispatch(capture.dispatches(100_000 % BATCH));
    assert_eq!(roctx_kernels::snapshot().dispatches.len(), 100_000);
    group.throughput(Throughput::Elements(100_000));
    group.bench_function("snapshot_100k", |b| b.iter(|| roctx_kernels::snapshot().dispatches.len()));
    group.finish();
}

/// Launches and kernels per simulated CUPTI buffer (64 KiB of kernel and API records).
const BUFFER_RECORDS: u64 = 300;

fn begin_while_delivering(c: &mut Criterion) {
    let mut group = c.benchmark_group("kernels");
    group.sample_size(20).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4));
    group.throughput(Throughput::Elements(1));
    let key = |op| roctx_kernels::begin_invocation_keyed(common::op(op)).1.expect("a geometry");
    let timed = |b: &mut criterion::Bencher, key: &mut roctx_kernels::GeometryKey| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            let mut i = 0u64;
            while i < iters {
                // Untimed: a reset every 64k ops keeps the invocation map bounded.
                roctx_kernels::reset();
                *key = roctx_kernels::begin_invocation_keyed(common::op(1)).1.expect("a geometry");
                let n = (iters - i).min(1 << 16);
                let t = Instant::now();
                for j in 0..n {
                    black_box(roctx_kernels::begin_invocation_at_scoped(*key, 7, j));
                }
                timed += t.elapsed();
                i += n;
            }
            timed
        })
    };
    let mut k = key(1);
    group.bench_function("begin_scoped_alone", |b| timed(b, &mut k));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let deliverer = {
        let stop = std::sync::Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut correlation = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let (launches, kernels): (Vec<_>, Vec<_>) = (0..BUFFER_RECORDS)
                    .map(|_| {
                        correlation += 1;
                        let at = correlation * 1_000;
                        let launch = roctx_kernels::Launch { correlation_id: correlation, thread_id: 7, start_ns: at, end_ns: at + 500 };
                        let kernel = roctx_kernels::RawDispatch { start_ns: at + 600, end_ns: at + 900, kernel_id: 1, by_launch: true, correlation_id: correlation, agent_id: 1, ..Default::default() };
                        (launch, kernel)
                    })
                    .unzip();
                roctx_kernels::record_launches(launches);
                roctx_kernels::record_dispatch(kernels);
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    group.bench_function("begin_scoped_while_delivering", |b| timed(b, &mut k));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    deliverer.join().expect("the delivering thread");
    group.finish();
}

criterion_group!(benches, ingest, begin_while_delivering);
criterion_main!(benches);
