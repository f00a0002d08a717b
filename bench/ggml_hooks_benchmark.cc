// llama.cpp's hooks (ggml_cuda_roofline_*) per op, on the host, kernels traced (issue 28): what
// `begin_op` costs a launch-bound op before its kernel is even launched. This binary plays ggml
// (cc_tests/ggml_stand_in.h) and the HIP runtime of the MoE read-back (cc_tests/fake_hip_async.h,
// everything synchronous), with GGML_ROOFLINE_OUT set and the fake rocprofiler-sdk as the SDK
// (scripts/bench_ggml_hooks.sh sets the environment). No kernel is dispatched: this is the hook's
// own part of an op. The store is reset, untimed, every 256k ops so its maps stay bounded.
//   BM_BeginOpAdd     begin_op of an ADD f32[4096] (two sources), ops back to back
//   BM_BeginOpMulMat  begin_op of a decode MUL_MAT q4_K[4096,14336] x f32[4096]
//   BM_BeginOpMoe     begin_op of a MUL_MAT_ID q4_K[2048,768,128] (top-8, 1 token): the op scope
//                     plus the non-blocking read-back (4 runtime calls, a slot of the ring; the
//                     previous one resolved when its event is polled)
//   BM_DecodeGraph    begin_op over a dense decode step's 248 distinct nodes (8 layers of 31, as
//                     scripts/nvidia/moe_layer.cpp's dense layer), a step per iteration, each
//                     node followed by launch_us of other work (0, or 2 µs with the caches
//                     emptied between steps, as a launch-bound step on the device); hook:0 does
//                     only the rest of the step, so the hook's cost per node is the difference
//                     over 248 (issue 42)
// Each also as .../merged_elsewhere: another thread reads the kernel stage every 100 us, as
// the tracer's buffer thread does in a process (each delivered buffer merges every thread's op
// log), so the timed thread pays only its own part of an op; without it, the timed thread merges
// its own log every 4,096 ops and pays the stage's side of the op too.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "benchmark/benchmark.h"
#include "cc_tests/fake_hip_async.h"
#include "cc_tests/ggml_stand_in.h"
#include "roctx_utils/roofline.h"

namespace {

using ggml_stand_in::Node;
using ggml_stand_in::Tensor;

void Init() {
  static const bool once = [] {
    fake_hip::Quiet(true);
    ggml_cuda_roofline_init();
    ggml_cuda_roofline_set_device("gfx942");
    return true;
  }();
  (void)once;
}

void Run(benchmark::State& state, ggml_tensor* node) {
  Init();
  std::atomic<bool> stop{false};
  std::thread reader;
  if (state.range(0) != 0) {
    reader = std::thread([&stop] {
      while (!stop.load(std::memory_order_relaxed)) {
        roctx_utils_kernel_stats stats{};
        stats.struct_size = sizeof(stats);
        roctx_utils_kernel_stats_get(&stats);
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
    });
  }
  int stream = 0;
  int64_t n = 0;
  for (auto _ : state) {
    ggml_cuda_roofline_begin_op(node, &stream);
    if (++n % (256 * 1024) == 0) {
      state.PauseTiming();
      ggml_cuda_roofline_reset();
      state.ResumeTiming();
    }
  }
  stop.store(true);
  if (reader.joinable()) reader.join();
}

// Arg 0: the timed thread merges its own log; 1: another thread merges it (file comment).
void Modes(benchmark::internal::Benchmark* b) { b->ArgName("merged_elsewhere")->Arg(0)->Arg(1); }

void BM_BeginOpAdd(benchmark::State& state) {
  ggml_tensor a = Tensor(kF32, {4096, 1}), b = Tensor(kF32, {4096, 1});
  ggml_tensor add = Node(kOpAdd, kF32, {4096, 1}, {&a, &b}, "l_out-0");
  Run(state, &add);
}
BENCHMARK(BM_BeginOpAdd)->Apply(Modes);

void BM_BeginOpMulMat(benchmark::State& state) {
  ggml_tensor w = Tensor(kQ4K, {4096, 14336}, "blk.0.ffn_down.weight"), x = Tensor(kF32, {4096, 1});
  ggml_tensor mm = Node(kOpMulMat, kF32, {14336, 1}, {&w, &x}, "ffn_out-0");
  Run(state, &mm);
}
BENCHMARK(BM_BeginOpMulMat)->Apply(Modes);

void BM_BeginOpMoe(benchmark::State& state) {
  ggml_tensor experts = Tensor(kQ4K, {2048, 768, 128}), in = Tensor(kF32, {2048, 1, 1});
  ggml_tensor ids = Tensor(kI32, {8, 1});
  int32_t routing[8] = {3, 17, 42, 64, 90, 101, 120, 127};
  ids.data = routing;
  ggml_tensor moe = Node(kOpMulMatId, kF32, {768, 8, 1}, {&experts, &in, &ids}, "ffn_moe_down-0");
  Run(state, &moe);
}
BENCHMARK(BM_BeginOpMoe)->Apply(Modes);

// A dense decoder layer's 31 nodes as ggml builds them at one token (shapes Llama-3.2-1B's:
// 2048 wide, 8192 FFN, 32 heads of 64, 8 KV heads, a 1,024-position f16 cache), each layer its
// own weights and nodes: 248 tensors the hook has not seen since the previous step.
struct DecodeGraph {
  std::vector<ggml_tensor> tensors;  // reserved: addresses stay put
  std::vector<ggml_tensor*> nodes;
  DecodeGraph() {
    tensors.reserve(8 * 64);
    ggml_tensor* x = Add(Tensor(kF32, {2048, 1}, "inp_embd"));
    for (int l = 0; l < 8; ++l) {
      char w[64];
      auto weight = [&](const char* what, std::vector<int64_t> ne, int type) {
        snprintf(w, sizeof(w), "blk.%d.%s.weight", l, what);
        return Add(Tensor(type, std::move(ne), w));
      };
      auto node = [&](int op, std::vector<int64_t> ne, std::initializer_list<ggml_tensor*> srcs, const char* what) {
        char n[64];
        snprintf(n, sizeof(n), "%s-%d", what, l);
        ggml_tensor* t = Add(Node(op, kF32, std::move(ne), srcs, n));
        nodes.push_back(t);
        return t;
      };
      ggml_tensor* kcache = weight("cache_k", {64, 1024, 8}, kF16);
      ggml_tensor* vcache = weight("cache_v", {1024, 64, 8}, kF16);
      ggml_tensor* h = node(kOpRmsNorm, {2048, 1}, {x}, "norm");
      h = node(kOpAdd, {2048, 1}, {h, weight("attn_norm", {2048}, kF32)}, "attn_norm");
      ggml_tensor* q = node(kOpMulMat, {2048, 1}, {weight("attn_q", {2048, 2048}, kQ4K), h}, "Qcur");
      ggml_tensor* k = node(kOpMulMat, {512, 1}, {weight("attn_k", {2048, 512}, kQ4K), h}, "Kcur");
      ggml_tensor* v = node(kOpMulMat, {512, 1}, {weight("attn_v", {2048, 512}, kQ4K), h}, "Vcur");
      q = node(kOpAdd, {64, 32, 1}, {q, x}, "Qcur_rope");
      k = node(kOpAdd, {64, 8, 1}, {k, x}, "Kcur_rope");
      node(kOpAdd, {64, 8, 1}, {k, kcache}, "k_cache_view");
      node(kOpAdd, {64, 8, 1}, {v, vcache}, "v_cache_view");
      ggml_tensor* kq = node(kOpMulMat, {1024, 1, 32}, {kcache, q}, "kq");
      kq = node(kOpAdd, {1024, 1, 32}, {kq, x}, "kq_soft_max");
      ggml_tensor* kqv = node(kOpMulMat, {64, 1, 32}, {vcache, kq}, "kqv");
      kqv = node(kOpAdd, {2048, 1}, {kqv, x}, "kqv_out");
      ggml_tensor* o = node(kOpMulMat, {2048, 1}, {weight("attn_output", {2048, 2048}, kQ4K), kqv}, "attn_out");
      ggml_tensor* r = node(kOpAdd, {2048, 1}, {o, x}, "ffn_inp");
      h = node(kOpRmsNorm, {2048, 1}, {r}, "norm");
      h = node(kOpAdd, {2048, 1}, {h, weight("ffn_norm", {2048}, kF32)}, "ffn_norm");
      ggml_tensor* g = node(kOpMulMat, {8192, 1}, {weight("ffn_gate", {2048, 8192}, kQ4K), h}, "ffn_gate");
      ggml_tensor* u = node(kOpMulMat, {8192, 1}, {weight("ffn_up", {2048, 8192}, kQ4K), h}, "ffn_up");
      ggml_tensor* s = node(kOpAdd, {8192, 1}, {g, u}, "ffn_swiglu");
      ggml_tensor* d = node(kOpMulMat, {2048, 1}, {weight("ffn_down", {8192, 2048}, kQ4K), s}, "ffn_out");
      x = node(kOpAdd, {2048, 1}, {d, r}, "l_out");
      // The rest of moe_layer.cpp's 31 computed nodes a layer (ROPE's, the cache copies',
      // GLU's parts), as more element-wise nodes.
      while (nodes.size() % 31 != 0) node(kOpAdd, {2048, 1}, {x, r}, "cpy");
    }
  }
  ggml_tensor* Add(ggml_tensor t) {
    tensors.push_back(t);
    return &tensors.back();
  }
};

// Writes a line in every 64 bytes of `buf`.
void Evict(std::vector<uint8_t>& buf) {
  for (size_t i = 0; i < buf.size(); i += 64) buf[i] += 1;
  benchmark::DoNotOptimize(buf.data());
}

// Busy for `ns` (the launch call's own time on the host).
void Spin(int64_t ns) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(ns);
  while (std::chrono::steady_clock::now() < until) {
  }
}

// One iteration is one step: begin_op on each of the graph's 248 nodes in order (hook:1; none
// with hook:0), each followed by `launch_us` µs of other work (the kernel's launch: a
// launch-bound decode step spends 3-4 µs per node on the device's host), and with launch_us > 0
// 4 MiB of other memory written after the step (twice the dev VM's L2, more than the H100
// host's per-core L2), so each step meets the hook's data cold as a real one does. The hook's
// cost per node is (hook:1 - hook:0) / 248 at the same launch_us. With launch_us > 0 the
// merges of the op log have the time they have in a process (the merger thread's, on another
// core); with 0 they compete with begin_op itself.
void BM_DecodeGraph(benchmark::State& state) {
  Init();
  static DecodeGraph graph;
  const int64_t launch_ns = state.range(0) * 1000;
  const bool hook = state.range(1) != 0;
  std::vector<uint8_t> buf(launch_ns > 0 ? 4 << 20 : 0);
  int stream = 0;
  int64_t n = 0;
  for (auto _ : state) {
    for (ggml_tensor* node : graph.nodes) {
      if (hook) ggml_cuda_roofline_begin_op(node, &stream);
      if (launch_ns > 0) Spin(launch_ns);
    }
    if (launch_ns > 0) Evict(buf);
    if (++n % 1024 == 0) {
      state.PauseTiming();
      ggml_cuda_roofline_reset();
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(graph.nodes.size()));
}
BENCHMARK(BM_DecodeGraph)->ArgNames({"launch_us", "hook"})->ArgsProduct({{0, 2}, {0, 1}})->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
