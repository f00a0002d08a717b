// Kernel stage (issue 11 item 7), through the C ABI against the fake rocprofiler-sdk in tool
// mode. Configuration is read once per process, so scripts/bench_kernels.sh runs this binary
// once per configuration:
//   off       no capture configured at all (op scopes are dormant)
//   untraced  tool mode (ROCTX_UTILS_CAPTURE=sdk) with ROCTX_UTILS_KERNELS=0: kernels not traced
//   traced    tool mode with ROCTX_UTILS_ROOFLINE_OUT: kernels traced and attributed (tracing
//             is on by default in tool mode; the report path only adds the write at exit)
// Benchmarks:
//   BM_OpBeginEnd         roctx_utils_op_begin(&desc) + roctx_utils_op_end() per op. Traced, that
//                         is the descriptor read, the store's begin_invocation and two
//                         external-correlation replacements (pop + push each). The store is
//                         reset, untimed, every 64k ops so the invocation map stays bounded.
//   BM_OpBeginOnly        op_begin alone, ops back to back (each replaces the open scope).
//   BM_RangePushPop       a ROCTX range pair through emitter -> fake roctx -> fake SDK callback ->
//                         our listener, in a session; traced, each push and each pop also replaces
//                         the thread's external-correlation entry (range_changed).
//   BM_DispatchThroughSdk records/s end to end: fake_sdk_dispatch_kernel on this thread (the
//                         fake appends to its buffer and seals a batch at our 4 MiB watermark),
//                         delivery on the fake's own thread into our listener's decoder and the
//                         kernel store, then roctx_utils_roofline_reset() (flush: waits for the
//                         last delivery; then clears the store). Arg = kernels per op scope
//                         (0: one op scope for the whole iteration; 3: llama.cpp's shape, so
//                         the op_begin cost is included). Traced configuration only.
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "benchmark/benchmark.h"
#include "cc_tests/fake_sdk_hooks.h"
#include "roctx_utils/roctx_utils.h"
#include "roctx_utils/roofline.h"
#include "tsl/profiler/lib/nvtx_utils.h"

namespace {

struct Fake {
  FakeSdkLoadKernelSymbolFn load_symbol = nullptr;
  FakeSdkDispatchKernelFn dispatch = nullptr;
  FakeSdkCounterFn delivered = nullptr;

  // The fake is dlopen'ed by our listener at start-up (which op_begin triggers); null members
  // when it is not loaded (configuration "off").
  static const Fake& Get() {
    static const Fake fake = [] {
      roctx_utils_op_begin(nullptr);  // start-up: tool mode configures the SDK first
      Fake f;
      const char* path = std::getenv("ROCTX_UTILS_ROCPROFILER_LIBRARY");
      void* sdk = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : nullptr;
      if (sdk == nullptr) return f;
      f.load_symbol = reinterpret_cast<FakeSdkLoadKernelSymbolFn>(dlsym(sdk, "fake_sdk_load_kernel_symbol"));
      f.dispatch = reinterpret_cast<FakeSdkDispatchKernelFn>(dlsym(sdk, "fake_sdk_dispatch_kernel"));
      f.delivered = reinterpret_cast<FakeSdkCounterFn>(dlsym(sdk, "fake_sdk_records_delivered"));
      char name[64];
      for (uint64_t id = 1; id <= 48 && f.load_symbol; ++id) {
        std::snprintf(name, sizeof(name), "_Z15mul_mat_kernel%02lluILi256EEvPKvS1_Pfi",
                      static_cast<unsigned long long>(id));
        f.load_symbol(id, name, 1);
      }
      return f;
    }();
    return fake;
  }
};

// A decode MUL_MAT as llama.cpp describes it: q4_K weight [4096, 14336], one token.
struct MatmulDesc {
  roctx_utils_op_source src[2] = {{"q4_K", {4096, 14336, 1, 1}, 33030144},
                                  {"f32", {4096, 1, 1, 1}, 16384}};
  roctx_utils_op_desc desc{};
  MatmulDesc() {
    desc.struct_size = sizeof(desc);
    desc.op = "MUL_MAT";
    desc.name = "blk.0.ffn_up";
    desc.dtype = "f32";
    desc.quant = "q4_K";
    desc.ne[0] = 14336;
    desc.ne[1] = desc.ne[2] = desc.ne[3] = 1;
    desc.src = src;
    desc.n_src = 2;
    desc.bytes = 33030144 + 16384 + 57344;
    desc.dst_bytes = 57344;
    desc.m = 1;
    desc.n = 14336;
    desc.k = 4096;
  }
};

void BM_OpBeginEnd(benchmark::State& state) {
  Fake::Get();
  MatmulDesc m;
  uint64_t attributed = 0, n = 0;
  for (auto _ : state) {
    attributed += roctx_utils_op_begin(&m.desc) != 0;
    roctx_utils_op_end();
    if (++n % 65536 == 0) {
      state.PauseTiming();
      roctx_utils_roofline_reset();
      state.ResumeTiming();
    }
  }
  state.counters["attributed"] = benchmark::Counter(static_cast<double>(attributed) / static_cast<double>(n));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_OpBeginEnd);

// Consecutive op scopes without op_end between them (a graph's ops back to back): each begin
// replaces the open scope, so one external-correlation replacement per op instead of two.
void BM_OpBeginOnly(benchmark::State& state) {
  Fake::Get();
  MatmulDesc m;
  uint64_t n = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(roctx_utils_op_begin(&m.desc));
    if (++n % 65536 == 0) {
      state.PauseTiming();
      roctx_utils_roofline_reset();
      state.ResumeTiming();
    }
  }
  roctx_utils_op_end();
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_OpBeginOnly);

void StartSession(const benchmark::State&) {
  Fake::Get();
  roctx_utils_session_options o{};
  o.struct_size = sizeof(o);
  o.max_events_per_thread = 1 << 24;  // larger than any run, so nothing is dropped
  roctx_utils_session_start(&o);
}

void StopSession(const benchmark::State&) {
  roctx_utils_snapshot* s = nullptr;
  if (roctx_utils_session_stop(&s) == ROCTX_UTILS_OK) roctx_utils_snapshot_free(s);
}

void BM_RangePushPop(benchmark::State& state) {
  for (auto _ : state) {
    tsl::profiler::RangePush(nullptr, "Thunk:#hlo_op=fusion.3,unique_hlo_op_id=7#");
    tsl::profiler::RangePop(nullptr);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RangePushPop)->Setup(StartSession)->Teardown(StopSession);

// Records per iteration: four deliveries at the 4 MiB watermark (184-byte records).
constexpr uint64_t kRecords = 4 * ((4 << 20) / 184);

void BM_DispatchThroughSdk(benchmark::State& state) {
  const Fake& f = Fake::Get();
  MatmulDesc m;
  if (f.dispatch == nullptr || roctx_utils_op_begin(&m.desc) == 0) {
    state.SkipWithError("kernels are not traced in this configuration");
    return;
  }
  const uint64_t per_op = static_cast<uint64_t>(state.range(0));
  roctx_utils_roofline_reset();
  const uint64_t delivered_before = f.delivered();
  uint64_t clock = 1000;
  for (auto _ : state) {
    for (uint64_t i = 0; i < kRecords; ++i) {
      if (per_op != 0 ? i % per_op == 0 : i == 0) roctx_utils_op_begin(&m.desc);
      f.dispatch(1 + i % 48, clock, clock + 4000, 1, 1);
      clock += 5000;
    }
    roctx_utils_op_end();
    roctx_utils_roofline_reset();  // flush (returns after the last batch is decoded), clear
  }
  const double expected = static_cast<double>(state.iterations() * kRecords);
  state.counters["delivered"] = benchmark::Counter(static_cast<double>(f.delivered() - delivered_before) / expected);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kRecords));
}
BENCHMARK(BM_DispatchThroughSdk)->Arg(0)->Arg(3)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
