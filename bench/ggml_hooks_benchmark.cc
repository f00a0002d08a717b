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
// Each also as .../merged_elsewhere: another thread reads the kernel stage every 100 us, as
// the tracer's buffer thread does in a process (each delivered buffer merges every thread's op
// log), so the timed thread pays only its own part of an op; without it, the timed thread merges
// its own log every 4,096 ops and pays the stage's side of the op too.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

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

}  // namespace

BENCHMARK_MAIN();
