// An NVTX range loop on 1..16 threads as a CUDA program runs it: NVIDIA's own NVTX3 headers
// (third_party/nvtx3), whose loader finds the tool through NVTX_INJECTION64_PATH, exactly as
// JAX, PyTorch and nsys see it (issue 21). One configuration per process (the injection and the
// environment are read once); scripts/bench_nvtx_threads.sh runs them side by side:
//
//   floor      no NVTX: two TSC reads and a 24-byte append to a thread-local buffer per pair,
//              the hardware floor of a captured range (as bench/side_by_side.cc).
//   cupti      NVTX_INJECTION64_PATH = libcupti, with CUPTI's MARKER activity enabled by this
//              program (CUPTI's own NVTX capture: what nsys and XProf's NVTX plane pay).
//              BENCH_CUPTI names the libcupti to load.
//   ours       NVTX_INJECTION64_PATH = libroctx_utils_nvtx.so with an in-process session
//              (ROCTX_UTILS_KERNELS and ROCTX_UTILS_CUPTI_LIBRARY choose whether kernels are
//              traced, and by which libcupti).
//
// BENCH_REGISTERED=1: the pairs are XLA's instead (nvtxDomainRangePushEx with a registered
// string on the "TSL" domain, then nvtxDomainRangePop), as JAX's thunks push them.
//
// BENCH_SESSION_PER_ROUND=1 (ours): a session per round, whose chunks the next round reuses
// (RestartOurSession); by default one session records every round into fresh memory.
// Each thread runs BENCH_PAIRS nvtxRangePushA + nvtxRangePop pairs (default 1,000,000) after a
// barrier; a round's time is the slowest thread's; best of BENCH_ROUNDS (default 3). Prints one
// line per thread count: `<mode> threads=<n> ns_per_pair=<x> mranges_per_s=<y>`.
#include <dlfcn.h>
#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "nvtx3/nvToolsExt.h"
#include "roctx_utils/roctx_utils.h"

namespace {

constexpr const char kLabel[] = "Thunk:#hlo_op=fusion.3,unique_hlo_op_id=7#";

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t Ticks() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return NowNs();
#endif
}

struct Slot {
  uint64_t start, end_label, seq;
};
// A 64K-slot ring (1.5 MiB), as bench/side_by_side.cc's floor: the floor measures two TSC reads
// and an append, not the page faults of a growing buffer (a 2M-slot vector per new thread, as
// before, faulted 24 MB in every round: about 7 ns of a 28 ns pair on the dev VM, issue 44).
thread_local std::vector<Slot>* t_floor = nullptr;

void FloorPair(uint64_t i) {
  if (t_floor == nullptr) {
    t_floor = new std::vector<Slot>();
    t_floor->reserve(1 << 16);
  }
  const uint64_t a = Ticks();
  const uint64_t b = Ticks();
  if (t_floor->size() == t_floor->capacity()) t_floor->clear();
  t_floor->push_back({a, b - a, i});
}

// ---- CUPTI's NVTX capture ----
using BufReq = void (*)(uint8_t**, size_t*, size_t*);
using BufDone = void (*)(void*, uint32_t, uint8_t*, size_t, size_t);
void Requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 8 << 20;
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, *size));
  *max_records = 0;
}
void Completed(void*, uint32_t, uint8_t* buffer, size_t, size_t) { free(buffer); }

bool StartCuptiMarkers() {
  const char* path = std::getenv("BENCH_CUPTI");
  void* cupti = path ? dlopen(path, RTLD_NOW | RTLD_GLOBAL) : nullptr;
  if (cupti == nullptr) {
    std::fprintf(stderr, "BENCH_CUPTI: cannot load %s\n", path ? path : "(unset)");
    return false;
  }
  auto reg = reinterpret_cast<int (*)(BufReq, BufDone)>(dlsym(cupti, "cuptiActivityRegisterCallbacks"));
  auto enable = reinterpret_cast<int (*)(int)>(dlsym(cupti, "cuptiActivityEnable"));
  if (reg == nullptr || enable == nullptr || reg(Requested, Completed) != 0) return false;
  const int marker = 12;  // CUPTI_ACTIVITY_KIND_MARKER
  if (enable(marker) != 0) {
    std::fprintf(stderr, "cuptiActivityEnable(MARKER) failed\n");
    return false;
  }
  return true;
}

// ---- ours ----
int (*g_start)(const roctx_utils_session_options*) = nullptr;
int (*g_stop)(roctx_utils_snapshot**) = nullptr;
void (*g_free)(roctx_utils_snapshot*) = nullptr;
roctx_utils_session_options g_options{};

bool StartOurSession() {
  nvtxRangePushA("warm-up");  // loads the injection
  nvtxRangePop();
  const char* path = std::getenv("NVTX_INJECTION64_PATH");
  void* lib = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  auto start = lib ? reinterpret_cast<int (*)(const roctx_utils_session_options*)>(dlsym(lib, "roctx_utils_session_start"))
                   : nullptr;
  if (start == nullptr) {
    std::fprintf(stderr, "the injection is not loaded\n");
    return false;
  }
  roctx_utils_session_options o{};
  o.struct_size = sizeof(o);
  o.mode = ROCTX_UTILS_CAPTURE_IN_PROCESS;
  o.max_events_per_thread = 1u << 26;
  g_start = start;
  g_stop = reinterpret_cast<int (*)(roctx_utils_snapshot**)>(dlsym(lib, "roctx_utils_session_stop"));
  g_free = reinterpret_cast<void (*)(roctx_utils_snapshot*)>(dlsym(lib, "roctx_utils_snapshot_free"));
  g_options = o;
  return start(&o) == ROCTX_UTILS_OK;
}

// BENCH_SESSION_PER_ROUND=1: a new session for every round, as bench/side_by_side.cc's
// roctx_utils modes have one per benchmark run. A stopped session's chunks go to the
// collector's pool (up to 256 MiB), so the next round records into memory already faulted in;
// by default one session records every round, into fresh memory, as a program's one session
// does (`roctx record`), and the page faults of the growing buffers are paid (issue 44).
void RestartOurSession() {
  roctx_utils_snapshot* s = nullptr;
  if (g_stop == nullptr || g_free == nullptr || g_stop(&s) != ROCTX_UTILS_OK) return;
  g_free(s);
  if (g_start(&g_options) != ROCTX_UTILS_OK) std::fprintf(stderr, "the session did not start again\n");
}

// XLA's way (BENCH_REGISTERED=1): a registered title on XLA's domain.
nvtxDomainHandle_t g_domain = nullptr;
nvtxEventAttributes_t g_attr{};

void SetUpRegistered() {
  g_domain = nvtxDomainCreateA("TSL");
  g_attr.version = NVTX_VERSION;
  g_attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  g_attr.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  g_attr.message.registered = nvtxDomainRegisterStringA(g_domain, kLabel);
}

double Round(int threads, uint64_t pairs, bool floor) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<uint64_t> took(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      nvtxRangePushA("thread warm-up");  // the thread's first range allocates its buffer
      nvtxRangePop();
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) {
      }
      const uint64_t t0 = NowNs();
      if (floor) {
        for (uint64_t i = 0; i < pairs; ++i) FloorPair(i);
      } else if (g_domain != nullptr) {
        for (uint64_t i = 0; i < pairs; ++i) {
          nvtxDomainRangePushEx(g_domain, &g_attr);
          nvtxDomainRangePop(g_domain);
        }
      } else {
        for (uint64_t i = 0; i < pairs; ++i) {
          nvtxRangePushA(kLabel);
          nvtxRangePop();
        }
      }
      took[t] = NowNs() - t0;
    });
  }
  while (ready.load() < threads) {
  }
  go.store(true, std::memory_order_release);
  for (auto& th : pool) th.join();
  return static_cast<double>(*std::max_element(took.begin(), took.end()));
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "ours";
  const uint64_t pairs = std::getenv("BENCH_PAIRS") ? std::strtoull(std::getenv("BENCH_PAIRS"), nullptr, 10) : 1000000;
  const int rounds = std::getenv("BENCH_ROUNDS") ? std::atoi(std::getenv("BENCH_ROUNDS")) : 3;
  const int max_threads = std::getenv("BENCH_MAX_THREADS") ? std::atoi(std::getenv("BENCH_MAX_THREADS")) : 16;
  if (mode == "cupti" && !StartCuptiMarkers()) return 1;
  if (mode == "ours" && !StartOurSession()) return 1;
  const char* registered = std::getenv("BENCH_REGISTERED");
  if (registered != nullptr && std::strcmp(registered, "1") == 0) SetUpRegistered();
  const char* per_round = std::getenv("BENCH_SESSION_PER_ROUND");
  const bool restart = mode == "ours" && per_round != nullptr && std::strcmp(per_round, "1") == 0;
  for (int threads = 1; threads <= max_threads; threads *= 2) {
    double best = 1e300;
    for (int r = 0; r < rounds; ++r) {
      best = std::min(best, Round(threads, pairs, mode == "floor"));
      if (restart) RestartOurSession();
    }
    const double ns = best / static_cast<double>(pairs);
    std::printf("%s threads=%d ns_per_pair=%.1f mranges_per_s=%.2f\n", mode.c_str(), threads, ns,
                threads * 1e3 / ns);
    std::fflush(stdout);
  }
  return 0;
}
