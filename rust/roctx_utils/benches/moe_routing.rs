//! The MoE routing of one `MUL_MAT_ID` counted from its read-back ids (`listener::moe`): 512
//! tokens of a top-8, 128-expert MoE, as the contiguous tensor `test-backend-ops` builds and as
//! llama.cpp's view of the top-k columns of its 128-wide argsort rows. The ring resolves a
//! graph's worth of these between two launches of the host (issue 28). Results: BENCHMARKS.md
//! "llama.cpp's hook per op".
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use roctx_utils::listener::moe::{routing_from_ids, IdsLayout};

fn routing(c: &mut Criterion) {
    let (top_k, tokens, experts) = (8u64, 512u64, 128u64);
    // Expert ids of a pseudo-random routing, each row's 128 argsort slots filled.
    let ids: Vec<u8> = (0..tokens * experts).flat_map(|i| ((((i * 2_654_435_761) >> 7) % experts) as i32).to_le_bytes()).collect();
    let contiguous = IdsLayout { ne: [top_k, tokens, 1, 1], nb: [4, 4 * top_k, 4 * top_k * tokens, 4 * top_k * tokens], bytes: (4 * top_k * tokens) as usize, n_experts: experts };
    let view = IdsLayout { ne: [top_k, tokens, 1, 1], nb: [4, 4 * experts, 4 * experts * tokens, 4 * experts * tokens], bytes: (4 * experts * (tokens - 1) + 4 * top_k) as usize, n_experts: experts };
    let mut group = c.benchmark_group("moe_routing");
    group.throughput(Throughput::Elements(top_k * tokens));
    group.bench_function("contiguous_512_tokens", |b| b.iter(|| routing_from_ids(std::hint::black_box(&ids[..contiguous.bytes]), &contiguous)));
    group.bench_function("argsort_view_512_tokens", |b| b.iter(|| routing_from_ids(std::hint::black_box(&ids[..view.bytes]), &view)));
    group.finish();
}

criterion_group!(benches, routing);
criterion_main!(benches);
