// Cost of an NVTX range through the injection library, as an NVTX3 client pays it: the slot
// call (nvtxRangePushA + nvtxRangePop, nvtxDomainRangePushEx with a registered title + pop).
// This binary plays the client's loader (as //cc_tests:nvtx_injection_test does) and links no
// roctx_utils of its own. Run by scripts/bench_nvtx.sh, once per configuration (environment is
// read once per process): no session (nobody listening), an in-process session, and an
// in-process session with kernels traced through the fake libcupti (a CUSTOM2 pop+push per
// range change).
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "benchmark/benchmark.h"
#include "roctx_utils/roctx_utils.h"

namespace {

using Fn = void (*)();
using Slot = Fn*;
struct Callbacks {
  size_t struct_size;
  int (*get_module_function_table)(int, Slot**, unsigned*);
};
struct Attr {
  uint16_t version, size;
  uint32_t category;
  int32_t color_type;
  uint32_t color;
  int32_t payload_type, reserved0;
  uint64_t payload;
  int32_t message_type;
  const void* message;
};

Fn core[17], core2[17];
std::vector<Slot> core_t(17), core2_t(17);

int GetModule(int module, Slot** table, unsigned* size) {
  if (module == 1) { *table = core_t.data(); *size = 16; return 1; }
  if (module == 5) { *table = core2_t.data(); *size = 16; return 1; }
  return 0;
}
const void* GetExportTable(uint32_t id) {
  static Callbacks callbacks{sizeof(Callbacks), &GetModule};
  return id == 1 ? &callbacks : nullptr;
}

void* Lib() {
  static void* lib = [] {
    for (int i = 1; i < 16; ++i) core_t[i] = &core[i], core2_t[i] = &core2[i];
    void* l = dlopen(std::getenv("NVTX_INJECTION64_PATH"), RTLD_NOW);
    auto init = l ? reinterpret_cast<int (*)(const void* (*)(uint32_t))>(dlsym(l, "InitializeInjectionNvtx2")) : nullptr;
    if (init == nullptr || init(&GetExportTable) != 1) std::fprintf(stderr, "injection not loaded\n");
    return l;
  }();
  return lib;
}

void StartSession(const benchmark::State&) {
  if (std::getenv("BENCH_SESSION") == nullptr) return;
  auto start = reinterpret_cast<int (*)(const roctx_utils_session_options*)>(dlsym(Lib(), "roctx_utils_session_start"));
  roctx_utils_session_options o{};
  o.struct_size = sizeof(o);
  o.mode = ROCTX_UTILS_CAPTURE_IN_PROCESS;
  o.max_events_per_thread = 1 << 24;
  if (start(&o) != ROCTX_UTILS_OK) std::fprintf(stderr, "session did not start\n");
}

void StopSession(const benchmark::State&) {
  if (std::getenv("BENCH_SESSION") == nullptr) return;
  auto stop = reinterpret_cast<int (*)(roctx_utils_snapshot**)>(dlsym(Lib(), "roctx_utils_session_stop"));
  auto free_ = reinterpret_cast<void (*)(roctx_utils_snapshot*)>(dlsym(Lib(), "roctx_utils_snapshot_free"));
  roctx_utils_snapshot* s = nullptr;
  if (stop(&s) == ROCTX_UTILS_OK) free_(s);
}

void BM_RangePushAPop(benchmark::State& state) {
  Lib();
  auto push = reinterpret_cast<int (*)(const char*)>(core[9]);
  auto pop = reinterpret_cast<int (*)()>(core[11]);
  for (auto _ : state) {
    push("Thunk:#hlo_op=fusion.3,unique_hlo_op_id=7#");
    pop();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RangePushAPop)->Setup(StartSession)->Teardown(StopSession)->UseRealTime();

// XLA's execution ranges: the TSL domain, a registered title, an extension payload.
void BM_DomainRangePushExRegistered(benchmark::State& state) {
  Lib();
  auto create = reinterpret_cast<void* (*)(const char*)>(core2[12]);
  auto reg = reinterpret_cast<void* (*)(void*, const char*)>(core2[10]);
  auto push = reinterpret_cast<int (*)(void*, const Attr*)>(core2[4]);
  auto pop = reinterpret_cast<int (*)(void*)>(core2[5]);
  void* tsl = create("TSL");
  Attr a{3, 48, 0, 0, 0, static_cast<int32_t>(0xDFBD0009), 1, 0x10, 3,
         reg(tsl, "Thunk:#name=jit(f)/dot_general,hlo_op=custom-call.1,unique_hlo_op_id=8589934595#")};
  for (auto _ : state) {
    push(tsl, &a);
    pop(tsl);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DomainRangePushExRegistered)->Setup(StartSession)->Teardown(StopSession)->UseRealTime();

}  // namespace
BENCHMARK_MAIN();
