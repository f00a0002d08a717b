// Cost of one range (push + pop) through the drop-in interface, in the configurations XLA hits.
// The emission latch is per process, so scripts/bench_emitter.sh runs this binary three times:
// emission off, on without roctx, and on with the fake roctx (cc_tests/fake_roctx.cc). Each run
// also times the raw roctx pair when a library is bound, so our overhead is the difference.
#include <dlfcn.h>

#include <atomic>

#include "benchmark/benchmark.h"
#include "roctx_utils/roctx_utils.h"
#include "tsl/profiler/lib/nvtx_utils.h"
#include "tsl/profiler/lib/scoped_annotation.h"
#include "xla/tsl/profiler/backends/cpu/annotation_stack.h"

namespace {

using tsl::profiler::AnnotationStack;

// What XLA's thunks do per op: a ScopedAnnotation, AnnotationStack off (no profiler session).
void BM_ScopedAnnotation(benchmark::State& state) {
  AnnotationStack::Enable(false);
  for (auto _ : state) {
    tsl::profiler::ScopedAnnotation a("Thunk:#hlo_op=fusion.3#");
  }
}
BENCHMARK(BM_ScopedAnnotation);

// The same routing with nothing out of line but what the interface makes a call: the two
// DefaultProfilerDomain() calls and the two IsEnabled() loads. What ScopedAnnotation costs
// when its templates are inlined into the caller.
void BM_ScopedAnnotationInlined(benchmark::State& state) {
  AnnotationStack::Enable(false);
  for (auto _ : state) {
    if (auto* d = tsl::profiler::DefaultProfilerDomain(); d != nullptr) {
      tsl::profiler::RangePush(d, "Thunk:#hlo_op=fusion.3#");
    } else if (AnnotationStack::IsEnabled()) {
      AnnotationStack::PushAnnotation("Thunk:#hlo_op=fusion.3#");
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (auto* d = tsl::profiler::DefaultProfilerDomain(); d != nullptr) {
      tsl::profiler::RangePop(d);
    } else if (AnnotationStack::IsEnabled()) {
      AnnotationStack::PopAnnotation();
    }
  }
}
BENCHMARK(BM_ScopedAnnotationInlined);

// The same during a profiler session: AnnotationStack on, so the backend dual-pushes.
void BM_ScopedAnnotationStackOn(benchmark::State& state) {
  AnnotationStack::Enable(true);
  for (auto _ : state) {
    tsl::profiler::ScopedAnnotation a("Thunk:#hlo_op=fusion.3#");
  }
  AnnotationStack::Enable(false);
}
BENCHMARK(BM_ScopedAnnotationStackOn);

// The bare backend pair, AnnotationStack off: bridge + latch check + roctx (if bound).
void BM_RangePushPop(benchmark::State& state) {
  AnnotationStack::Enable(false);
  auto* domain = tsl::profiler::DefaultProfilerDomain();
  for (auto _ : state) {
    tsl::profiler::RangePush(domain, "Thunk:#hlo_op=fusion.3#");
    tsl::profiler::RangePop(domain);
  }
}
BENCHMARK(BM_RangePushPop);

// The registered-title path XLA's InstructionAnnotation takes.
void BM_DetailRangePushPop(benchmark::State& state) {
  AnnotationStack::Enable(false);
  auto* domain = tsl::profiler::DefaultProfilerDomain();
  auto* title = tsl::profiler::RegisterString(domain, "Thunk:#hlo_op=fusion.3#");
  for (auto _ : state) {
    tsl::profiler::detail::RangePush(domain, title, 0, nullptr, 0);
    tsl::profiler::RangePop(domain);
  }
}
BENCHMARK(BM_DetailRangePushPop);

// Baseline: the bound roctx library called directly, as if XLA linked it.
void BM_RawRoctxPair(benchmark::State& state) {
  const char* path = roctx_utils_roctx_library();
  void* lib = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  auto push = lib ? reinterpret_cast<int (*)(const char*)>(dlsym(lib, "roctxRangePushA")) : nullptr;
  auto pop = lib ? reinterpret_cast<int (*)()>(dlsym(lib, "roctxRangePop")) : nullptr;
  if (!push || !pop) {
    state.SkipWithError("no roctx library bound in this run");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(push("Thunk:#hlo_op=fusion.3#"));
    benchmark::DoNotOptimize(pop());
  }
}
BENCHMARK(BM_RawRoctxPair);

void BM_RegisterStringHit(benchmark::State& state) {
  const std::string label = "Thunk:#name=fusion.3,hlo_op=fusion.3,unique_hlo_op_id=7#";
  for (auto _ : state) {
    benchmark::DoNotOptimize(tsl::profiler::RegisterString(nullptr, label));
  }
}
BENCHMARK(BM_RegisterStringHit);

}  // namespace

BENCHMARK_MAIN();
