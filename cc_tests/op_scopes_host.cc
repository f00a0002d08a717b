// A program with op scopes and their kernels, for XProf's op statistics and Roofline Model
// (issue 26): it writes ROCTX_UTILS_XSPACE_OUT and the roofline report at exit, and
// tests/xprof/check_op_scopes.py holds what XProf shows against `roctx roofline`.
//
// Three builds of this file:
// - ROCm (op_scopes_host): linked with //:roctx_utils_impl in tool mode, roofline.h op scopes,
//   the kernels dispatched through the fake rocprofiler-sdk (ROCTX_UTILS_ROCPROFILER_LIBRARY),
//   device gfx942;
// - CUPTI (op_scopes_host_cupti, OP_SCOPES_CUPTI): the NVTX injection library
//   (ROCTX_UTILS_TEST_LIBRARY) loaded as a host that knows nothing of us would have it, the
//   kernels launched through the fake CUPTI (also the CUDA driver, initialised first, that
//   ROCTX_UTILS_CUDA_LIBRARY names), device h200;
// - ggml (op_scopes_host_ggml, OP_SCOPES_GGML): llama.cpp's five hooks (ggml_cuda_roofline_*)
//   as ggml-cuda calls them, on //:roctx_utils_impl and the fake rocprofiler-sdk, this program
//   playing ggml (ggml_stand_in.h) and the HIP runtime of the MoE read-back, device gfx942.
//
// The workload is fixed: each invocation's kernels back to back on one stream, a 1 us gap
// between kernels (so an op's span is longer than its kernels' time) and 3 us between ops,
// between the ROCTX marks "decode begins" and "decode ends". roofline.h builds, 4 op groups:
//   MUL_MAT q4_K[4096,4096] x f32[4096] (16x: quantize_q8_1 2 us + mul_mat_vec_q 40 us),
//   MUL_MAT f16[4096,4096] x f32[4096,512] (4x: gemm_f16 100 us: compute-bound),
//   ADD f32[4096] + f32[4096] (16x: add_f32 3 us), RMS_NORM f32[4096] (16x: rms_norm 4 us).
// The ggml build, 5 op groups after a warm-up op that reset discards: the two MUL_MATs, a
// MUL_MAT q4_K[1024,4096] fused with its ADD (16x: mul_mat_vec_q_add 10 us), the RMS_NORM, and
// a MoE MUL_MAT_ID q4_K[2048,768,8] of 5 tokens, top-2, whose routing uses 1 to 4 experts by
// invocation, so its bytes differ per invocation (8x: mul_mat_id_q 20 us).
#include <dlfcn.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "roctx_utils/roofline.h"
#ifdef OP_SCOPES_GGML
#include "cc_tests/ggml_stand_in.h"

// The HIP runtime of the MoE read-back (roofline.md 5.4): the ids tensor is host memory here.
extern "C" {
__attribute__((visibility("default"))) int hipStreamSynchronize(void*) { return 0; }
__attribute__((visibility("default"))) int hipMemcpy(void* dst, const void* src, size_t n, int kind) {
  if (kind != 2) return 21;  // hipErrorInvalidMemcpyDirection: only device-to-host is asked
  std::memcpy(dst, src, n);
  return 0;
}
}
#endif

namespace {

using OpBeginFn = uint64_t (*)(const roctx_utils_op_desc*);
using VoidFn = void (*)();
using SetDeviceFn = void (*)(const char*);
using MarkFn = void (*)(const char*);

struct Api {
  OpBeginFn op_begin = nullptr;
  VoidFn op_end = nullptr;
  SetDeviceFn set_device = nullptr;
  MarkFn mark = nullptr;
  // Launches kernel `name` on `stream`, running from `start` to `end` (device clock = the
  // capture clock). Any thread.
  void (*launch)(const char* name, uint64_t start, uint64_t end, uint32_t stream) = nullptr;
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

// CUPTI identifies a kernel by its name's address, as a module's would be: one stable string
// per kernel, for the life of the process.
std::mutex* g_names_lock = new std::mutex;
std::set<std::string>* g_names = new std::set<std::string>;

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
  g_api.launch = [](const char* name, uint64_t start, uint64_t end, uint32_t stream) {
    const char* stable = nullptr;
    {
      std::lock_guard<std::mutex> hold(*g_names_lock);
      stable = g_names->insert(name).first->c_str();
    }
    fake_cupti_launch(stable, start, end, 0, 7 + stream, 128, 256);
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
std::mutex* g_symbols_lock = new std::mutex;
std::map<std::string, uint64_t>* g_symbols = new std::map<std::string, uint64_t>;  // name: id

bool Load() {
  g_api.op_begin = &roctx_utils_op_begin;
  g_api.op_end = &roctx_utils_op_end;
  g_api.set_device = &roctx_utils_roofline_set_device;
  g_api.mark = &roctx_utils_mark;
#ifdef OP_SCOPES_GGML
  ggml_cuda_roofline_init();  // start-up as llama.cpp's backend init does it: kernel tracing
#else
  roctx_utils_mark("start");  // start-up: tool mode, kernel tracing
#endif
  void* sdk = dlopen(std::getenv("ROCTX_UTILS_ROCPROFILER_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
  if (sdk == nullptr) {
    std::fprintf(stderr, "op_scopes_host: the fake SDK is not loaded\n");
    return false;
  }
  g_load_symbol = reinterpret_cast<LoadSymbolFn>(dlsym(sdk, "fake_sdk_load_kernel_symbol"));
  g_dispatch = reinterpret_cast<DispatchFn>(dlsym(sdk, "fake_sdk_dispatch_kernel"));
  g_api.launch = [](const char* name, uint64_t start, uint64_t end, uint32_t stream) {
    uint64_t id = 0;
    {
      // A kernel's code object is loaded once, before its first dispatch.
      std::lock_guard<std::mutex> hold(*g_symbols_lock);
      auto [it, fresh] = g_symbols->emplace(name, g_symbols->size() + 1);
      id = it->second;
      if (fresh) g_load_symbol(id, it->first.c_str(), 100);
    }
    g_dispatch(id, start, end, 1, 3 + stream);
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

// Launches `kernels` on `stream` back to back from `t` (1 us apart), then leaves 3 us before
// the next op.
int Launch(const std::vector<std::pair<const char*, uint64_t>>& kernels, uint64_t& t, uint32_t stream = 0) {
  for (const auto& [name, us] : kernels) {
    g_api.launch(name, t, t + us * 1000, stream);
    t += us * 1000 + 1000;
  }
  t += 2000;
  return static_cast<int>(kernels.size());
}

#ifdef OP_SCOPES_GGML
using ggml_stand_in::Node;
using ggml_stand_in::Tensor;

void SetDevice() { ggml_cuda_roofline_set_device(kDevice); }

// llama.cpp's sequence: a warm-up op, reset, then begin_op per node (the next begin_op ends an
// op; the last one ends at exit) and fuse_ops after a fused group's head. One thread, as
// ggml-cuda's: `stream` is not used.
size_t Workload(uint64_t& t, int& launched, uint32_t /*stream*/) {
  ggml_tensor wq = Tensor(kQ4K, {4096, 4096}, "blk.0.attn_q.weight"), x = Tensor(kF32, {4096, 1}, "attn_norm-0");
  ggml_tensor q = Node(kOpMulMat, kF32, {4096, 1}, {&wq, &x}, "Qcur-0");
  ggml_tensor wf = Tensor(kF16, {4096, 4096}, "blk.0.ffn_up.weight"), xb = Tensor(kF32, {4096, 512}, "ffn_inp-0");
  ggml_tensor up = Node(kOpMulMat, kF32, {4096, 512}, {&wf, &xb}, "ffn_up-0");
  ggml_tensor wo = Tensor(kQ4K, {1024, 4096}, "blk.0.attn_output.weight"), kqv = Tensor(kF32, {1024, 1}, "kqv_out-0");
  ggml_tensor residual = Tensor(kF32, {4096, 1}, "inp_embd");
  ggml_tensor out = Node(kOpMulMat, kF32, {4096, 1}, {&wo, &kqv}, "attn_out-0");
  ggml_tensor add = Node(kOpAdd, kF32, {4096, 1}, {&out, &residual}, "ffn_inp-0");
  ggml_tensor norm = Node(kOpRmsNorm, kF32, {4096, 1}, {&add}, "norm-0");
  ggml_tensor experts = Tensor(kQ4K, {2048, 768, 8}, "blk.0.ffn_down_exps.weight");
  ggml_tensor in = Tensor(kF32, {2048, 1, 5}, "ffn_moe_swiglu-0"), ids = Tensor(kI32, {2, 5}, "ffn_moe_topk-0");
  int32_t routing[10] = {};
  ids.data = routing;
  ggml_tensor moe = Node(kOpMulMatId, kF32, {768, 2, 5}, {&experts, &in, &ids}, "ffn_moe_down-0");
  ggml_tensor* nodes[] = {&q, &up, &out, &add, &norm, &moe};
  ggml_cgraph graph{6, nodes};

  int stream = 0;  // ggml-cuda always names its stream; the read-back synchronizes it
  ggml_cuda_roofline_begin_op(&norm, &stream);  // the warm-up, discarded by reset
  Launch({{"rms_norm", 4}}, t);
  ggml_cuda_roofline_reset();
  for (int round = 0; round < 16; ++round) {
    ggml_cuda_roofline_begin_op(&q, &stream);
    launched += Launch({{"quantize_q8_1", 2}, {"mul_mat_vec_q", 40}}, t);
    if (round < 4) {
      ggml_cuda_roofline_begin_op(&up, &stream);
      launched += Launch({{"gemm_f16", 100}}, t);
    }
    ggml_cuda_roofline_begin_op(&out, &stream);
    ggml_cuda_roofline_fuse_ops(&graph, 2, 2);  // attn_out + ffn_inp: one launch
    launched += Launch({{"mul_mat_vec_q_add", 10}}, t);
    ggml_cuda_roofline_begin_op(&norm, &stream);
    launched += Launch({{"rms_norm", 4}}, t);
    if (round < 8) {
      // Token j's two experts are j % n and (j + 1) % n of n = 1 + round % 4 (n = 1: both 0).
      const int n = 1 + round % 4;
      for (int j = 0; j < 5; ++j) {
        routing[2 * j] = j % n;
        routing[2 * j + 1] = (j + 1) % n;
      }
      ggml_cuda_roofline_begin_op(&moe, &stream);
      launched += Launch({{"mul_mat_id_q", 20}}, t);
    }
  }
  return 5;
}
#else
void SetDevice() { g_api.set_device(kDevice); }

// The 4 groups' invocations on this thread, its kernels on `stream`.
size_t Workload(uint64_t& t, int& launched, uint32_t stream) {
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
        return 0;
      }
      launched += Launch(g.kernels, t, stream);
      g_api.op_end();
    }
  }
  return groups.size();
}
#endif

}  // namespace

// OP_SCOPES_THREADS threads (default 1; the ggml build: 1) run the workload at once, each on
// a stream of its own, over the same device interval.
int main() {
  if (!Load()) return 1;
  const char* threads_env = std::getenv("OP_SCOPES_THREADS");
  const int threads = threads_env != nullptr ? std::atoi(threads_env) : 1;
#ifdef OP_SCOPES_GGML
  if (threads != 1) {
#else
  if (threads < 1 || threads > 64) {
#endif
    std::fprintf(stderr, "op_scopes_host: OP_SCOPES_THREADS=%s is not supported\n", threads_env);
    return 2;
  }
  SetDevice();
  g_api.mark("decode begins");
  const uint64_t start = g_api.now() + 1000;
  std::vector<uint64_t> ends(threads, start);
  std::vector<int> launched(threads, 0);
  std::vector<size_t> groups(threads, 0);
  std::vector<std::thread> running;
  for (int i = 0; i < threads; ++i) {
    running.emplace_back([&, i] { groups[i] = Workload(ends[i], launched[i], static_cast<uint32_t>(i)); });
  }
  int kernels = 0;
  uint64_t t = start;
  for (int i = 0; i < threads; ++i) {
    running[i].join();
    if (groups[i] == 0) return 1;
    kernels += launched[i];
    t = std::max(t, ends[i]);
  }
  g_api.mark("decode ends");
  // The device times above run ahead of the clock: wait until they are in the past, so the
  // session's window (start to the exit-time stop) holds every kernel.
  while (g_api.now() < t) {
    timespec pause{0, 1000000};
    nanosleep(&pause, nullptr);
  }
  std::printf("op_scopes_host: %d kernels in %zu op groups on %d thread(s) on %s\n", kernels, groups[0], threads, kDevice);
  return 0;
}
