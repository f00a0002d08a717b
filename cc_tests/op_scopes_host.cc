// A program with op scopes (roofline.h) and their kernels, for XProf's op statistics and
// Roofline Model (issue 26): it writes ROCTX_UTILS_XSPACE_OUT and ROCTX_UTILS_ROOFLINE_OUT at
// exit, and tests/xprof/check_op_scopes.py holds what XProf shows against `roctx roofline`.
//
// Two builds of this file:
// - ROCm (op_scopes_host): linked with //:roctx_utils_impl in tool mode, the kernels dispatched
//   through the fake rocprofiler-sdk (ROCTX_UTILS_ROCPROFILER_LIBRARY), device gfx942;
// - CUPTI (op_scopes_host_cupti, OP_SCOPES_CUPTI): the NVTX injection library
//   (ROCTX_UTILS_TEST_LIBRARY) loaded as a host that knows nothing of us would have it, the
//   kernels launched through the fake CUPTI (also the CUDA driver, initialised first, that
//   ROCTX_UTILS_CUDA_LIBRARY names), device h200.
//
// The workload is fixed: 4 op groups, each invocation's kernels back to back on one stream, a
// 1 us gap between kernels (so an op's span is longer than its kernels' time) and 3 us between
// ops, inside one ROCTX range "decode":
//   MUL_MAT q4_K[4096,4096] x f32[4096] (16x: quantize_q8_1 2 us + mul_mat_vec_q 40 us),
//   MUL_MAT f16[4096,4096] x f32[4096,512] (4x: gemm_f16 100 us: compute-bound),
//   ADD f32[4096] + f32[4096] (16x: add_f32 3 us), RMS_NORM f32[4096] (16x: rms_norm 4 us).
#include <dlfcn.h>
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "roctx_utils/roofline.h"

namespace {

using OpBeginFn = uint64_t (*)(const roctx_utils_op_desc*);
using VoidFn = void (*)();
using SetDeviceFn = void (*)(const char*);
using MarkFn = void (*)(const char*);
using PushFn = int (*)(const char*);

struct Api {
  OpBeginFn op_begin = nullptr;
  VoidFn op_end = nullptr;
  SetDeviceFn set_device = nullptr;
  MarkFn mark = nullptr;
  // Launches kernel `name` running from `start` to `end` (device clock = the capture clock).
  void (*launch)(const std::string& name, uint64_t start, uint64_t end) = nullptr;
  uint64_t (*now)() = nullptr;
};

Api g_api;

#ifdef OP_SCOPES_CUPTI
extern "C" {
int cuInit(unsigned int flags);
int cuptiGetTimestamp(uint64_t* ts);
uint32_t fake_cupti_launch(const char* name, uint64_t start, uint64_t end, uint32_t device,
                           uint32_t stream, int32_t grid_x, int32_t block_x);
}

std::vector<std::string>* g_names = new std::vector<std::string>;  // CUPTI keeps name pointers

bool Load() {
  cuInit(0);  // what the CUDA runtime does first: the driver's device queries answer from now on
  void* lib = dlopen(std::getenv("ROCTX_UTILS_TEST_LIBRARY"), RTLD_NOW | RTLD_GLOBAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "op_scopes_host: %s\n", dlerror());
    return false;
  }
  g_api.op_begin = reinterpret_cast<OpBeginFn>(dlsym(lib, "roctx_utils_op_begin"));
  g_api.op_end = reinterpret_cast<VoidFn>(dlsym(lib, "roctx_utils_op_end"));
  g_api.set_device = reinterpret_cast<SetDeviceFn>(dlsym(lib, "roctx_utils_roofline_set_device"));
  g_api.mark = reinterpret_cast<MarkFn>(dlsym(lib, "roctx_utils_mark"));
  g_api.launch = [](const std::string& name, uint64_t start, uint64_t end) {
    g_names->push_back(name);
    fake_cupti_launch(g_names->back().c_str(), start, end, 0, 7, 128, 256);
  };
  g_api.now = [] {
    uint64_t ts = 0;
    cuptiGetTimestamp(&ts);
    return ts;
  };
  return g_api.op_begin && g_api.op_end && g_api.set_device && g_api.mark;
}
const char* kDevice = "h200";
#else
using LoadSymbolFn = int (*)(uint64_t, const char*, uint64_t);
using DispatchFn = int (*)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);
LoadSymbolFn g_load_symbol = nullptr;
DispatchFn g_dispatch = nullptr;
std::vector<std::string>* g_symbols = new std::vector<std::string>;

bool Load() {
  g_api.op_begin = &roctx_utils_op_begin;
  g_api.op_end = &roctx_utils_op_end;
  g_api.set_device = &roctx_utils_roofline_set_device;
  g_api.mark = &roctx_utils_mark;
  roctx_utils_mark("start");  // start-up: tool mode, kernel tracing
  void* sdk = dlopen(std::getenv("ROCTX_UTILS_ROCPROFILER_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
  if (sdk == nullptr) {
    std::fprintf(stderr, "op_scopes_host: the fake SDK is not loaded\n");
    return false;
  }
  g_load_symbol = reinterpret_cast<LoadSymbolFn>(dlsym(sdk, "fake_sdk_load_kernel_symbol"));
  g_dispatch = reinterpret_cast<DispatchFn>(dlsym(sdk, "fake_sdk_dispatch_kernel"));
  g_api.launch = [](const std::string& name, uint64_t start, uint64_t end) {
    uint64_t id = 0;
    for (; id < g_symbols->size() && (*g_symbols)[id] != name; ++id) {
    }
    if (id == g_symbols->size()) {
      g_symbols->push_back(name);
      g_load_symbol(id + 1, name.c_str(), 100);
    }
    g_dispatch(id + 1, start, end, 1, 3);
  };
  g_api.now = [] {
    timespec ts{};
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
  };
  return g_load_symbol && g_dispatch;
}
const char* kDevice = "gfx942";
#endif

struct Group {
  const char* op;
  const char* quant;
  roctx_utils_op_source src[2];
  uint32_t n_src;
  int64_t ne[4];
  uint64_t bytes, dst_bytes, m, n, k;
  std::vector<std::pair<const char*, uint64_t>> kernels;  // name, us
  int count;
};

}  // namespace

int main() {
  if (!Load()) return 1;
  g_api.set_device(kDevice);
  const std::vector<Group> groups = {
      {"MUL_MAT", "q4_K", {{"q4_K", {4096, 4096, 1, 1}, 9437184}, {"f32", {4096, 1, 1, 1}, 16384}}, 2,
       {4096, 1, 1, 1}, 9437184 + 16384 + 16384, 16384, 1, 4096, 4096,
       {{"quantize_q8_1", 2}, {"mul_mat_vec_q", 40}}, 16},
      {"MUL_MAT", "f16", {{"f16", {4096, 4096, 1, 1}, 33554432}, {"f32", {4096, 512, 1, 1}, 8388608}}, 2,
       {4096, 512, 1, 1}, 33554432 + 8388608 + 8388608, 8388608, 512, 4096, 4096,
       {{"gemm_f16", 100}}, 4},
      {"ADD", "f32", {{"f32", {4096, 1, 1, 1}, 16384}, {"f32", {4096, 1, 1, 1}, 16384}}, 2,
       {4096, 1, 1, 1}, 3 * 16384, 16384, 0, 0, 0, {{"add_f32", 3}}, 16},
      {"RMS_NORM", "f32", {{"f32", {4096, 1, 1, 1}, 16384}, {}}, 1,
       {4096, 1, 1, 1}, 2 * 16384, 16384, 0, 0, 0, {{"rms_norm", 4}}, 16},
  };
  g_api.mark("decode begins");
  uint64_t t = g_api.now() + 1000;
  int launched = 0;
  for (int round = 0; round < 16; ++round) {
    for (const Group& g : groups) {
      if (round >= g.count) continue;
      roctx_utils_op_desc d{};
      d.struct_size = sizeof(d);
      d.op = g.op;
      d.dtype = "f32";
      d.quant = g.quant;
      for (int i = 0; i < 4; ++i) d.ne[i] = g.ne[i];
      d.src = g.src;
      d.n_src = g.n_src;
      d.bytes = g.bytes;
      d.dst_bytes = g.dst_bytes;
      d.m = g.m;
      d.n = g.n;
      d.k = g.k;
      if (g_api.op_begin(&d) == 0) {
        std::fprintf(stderr, "op_scopes_host: op_begin refused %s\n", g.op);
        return 1;
      }
      for (const auto& [name, us] : g.kernels) {
        g_api.launch(name, t, t + us * 1000);
        t += us * 1000 + 1000;
        ++launched;
      }
      t += 2000;
      g_api.op_end();
    }
  }
  g_api.mark("decode ends");
  // The device times above run ahead of the clock: wait until they are in the past, so the
  // session's window (start to the exit-time stop) holds every kernel.
  while (g_api.now() < t) {
    timespec pause{0, 1000000};
    nanosleep(&pause, nullptr);
  }
  std::printf("op_scopes_host: %d kernels in %zu op groups on %s\n", launched, groups.size(), kDevice);
  return 0;
}
