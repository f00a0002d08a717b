// Cost of one captured range (push + pop) in in-process mode, on 1..N threads at once: the
// per-thread buffers must scale without a global lock. A session is started before each run
// (Setup) and stopped after it (Teardown); chunks are reused between runs, so the steady state
// allocates nothing. Run by scripts/bench_capture.sh (env: XLA_ROCM_ENABLE_ROCTX=1,
// ROCTX_UTILS_CAPTURE=self).
#include <cstdio>

#include "benchmark/benchmark.h"
#include "bench/capture_session.h"
#include "roctx_utils/roctx_utils.h"
#include "tsl/profiler/lib/nvtx_utils.h"
#include "tsl/profiler/lib/scoped_annotation.h"

namespace {

using roctx_utils_bench::StartSession;
using roctx_utils_bench::StopSession;

// The backend pair XLA's thunks reach with emission on: recorded in-process.
void BM_CapturedRangePushPop(benchmark::State& state) {
  for (auto _ : state) {
    tsl::profiler::RangePush(nullptr, "Thunk:#hlo_op=fusion.3,unique_hlo_op_id=7#");
    tsl::profiler::RangePop(nullptr);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CapturedRangePushPop)
    ->Setup(StartSession)
    ->Teardown(StopSession)
    ->ThreadRange(1, 16)
    ->UseRealTime();

// The same through ScopedAnnotation (two DefaultProfilerDomain() reads on top).
void BM_CapturedScopedAnnotation(benchmark::State& state) {
  for (auto _ : state) {
    tsl::profiler::ScopedAnnotation a("Thunk:#hlo_op=fusion.3,unique_hlo_op_id=7#");
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CapturedScopedAnnotation)->Setup(StartSession)->Teardown(StopSession)->Threads(1)->UseRealTime();

// A mark: one clock read, one append.
void BM_CapturedMark(benchmark::State& state) {
  for (auto _ : state) roctx_utils_mark("step_boundary");
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CapturedMark)->Setup(StartSession)->Teardown(StopSession)->ThreadRange(1, 16)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
