// One captured range (push + pop), side by side in one binary and one run (issue 13):
//
//   nvtx3_no_tool     NVTX3's nvtxRangePushA/nvtxRangePop with no tool attached (headers from
//                     PyPI's nvidia-nvtx, third_party/nvtx3): what CUDA users pay when nobody
//                     listens.
//   boottime_x2       two clock_gettime(CLOCK_BOOTTIME) reads: the clock our events use today.
//   floor             the hardware floor of a captured range: two TSC reads and a 24-byte append
//                     to a thread-local buffer, nothing else.
//   upstream_model    XLA's ROCm MarkerCallback path (nvtx_utils_contract.md 9.2-9.5): a
//                     std::string per frame, two BOOTTIME reads, the global collector mutex,
//                     then the collector's event mutex and a vector append of an event that owns
//                     its label.
//   roctx_utils       tsl::profiler::RangePush/RangePop through //:roctx_utils_impl with
//                     in-process capture (XLA_ROCM_ENABLE_ROCTX=1 ROCTX_UTILS_CAPTURE=self and no
//                     roctx library, so the figure is the capture alone).
//   roctx_utils_registered  the same with a RegisterString title, as XLA's thunks push theirs
//                     (detail::RangePush): a label known before the range, like Tracy's static
//                     one, so the pair to compare with tracy_static.
//   tracy_static      Tracy v0.14's zone with a literal label (ZoneScopedN) and with a label known
//   tracy_runtime     only at run time (ZoneTransientN), its client only, no server: the anchor of
//                     issue 44. Registered only when BENCH_TRACY_LIB names the library that
//                     scripts/bench_tracy.sh builds from Tracy's source (bench/tracy_zone.cc).
//
// Every variant runs BENCH_PAIRS pairs per thread (default 2,000,000) on 1, 2, 4, ... up to
// BENCH_MAX_THREADS threads (default 16), 3 repetitions; scripts/bench.sh runs it and
// scripts/bench_tables.py turns its JSON into BENCHMARKS.md's tables.
#include <dlfcn.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "benchmark/benchmark.h"
#include "bench/capture_session.h"
#include "nvtx3/nvToolsExt.h"
#include "roctx_utils/roctx_utils.h"
#include "tsl/profiler/lib/nvtx_utils.h"

namespace {

constexpr const char kLabel[] = "Thunk:#hlo_op=fusion.3,unique_hlo_op_id=7#";  // 41 bytes, as XLA

uint64_t Boottime() {
  timespec ts;
  if (clock_gettime(CLOCK_BOOTTIME, &ts) != 0) return 0;
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t Ticks() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return Boottime();
#endif
}

// ---- nvtx3_no_tool ----------------------------------------------------------------------

void BM_Nvtx3NoTool(benchmark::State& state) {
  for (auto _ : state) {
    nvtxRangePushA(kLabel);
    nvtxRangePop();
  }
  state.SetItemsProcessed(state.iterations());
}

// ---- boottime_x2 ------------------------------------------------------------------------

void BM_BoottimeX2(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(Boottime());
    benchmark::DoNotOptimize(Boottime());
  }
  state.SetItemsProcessed(state.iterations());
}

// ---- floor ------------------------------------------------------------------------------

struct FloorEvent {  // 24 bytes: start, duration, label id, depth, kind
  uint64_t start;
  uint32_t duration;
  uint32_t label;
  uint32_t seq;
  uint16_t depth;
  uint8_t kind;
  uint8_t flags;
};
static_assert(sizeof(FloorEvent) == 24, "the floor's event is 24 bytes");

struct FloorBuffer {
  static constexpr size_t kCap = 1 << 16;  // a ring: the floor must not measure page faults
  FloorEvent events[kCap];
  size_t len = 0;
  uint64_t open_start = 0;
};
thread_local std::unique_ptr<FloorBuffer> floor_buffer;

void BM_Floor(benchmark::State& state) {
  if (!floor_buffer) floor_buffer = std::make_unique<FloorBuffer>();
  FloorBuffer& b = *floor_buffer;
  for (auto _ : state) {
    b.open_start = Ticks();  // push
    const uint64_t end = Ticks();  // pop
    FloorEvent& e = b.events[b.len++ & (FloorBuffer::kCap - 1)];
    e.start = b.open_start;
    e.duration = static_cast<uint32_t>(end - b.open_start);
    e.label = 1;
    e.seq = static_cast<uint32_t>(b.len);
    e.depth = 0;
    e.kind = 0;
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
}

// ---- upstream_model ---------------------------------------------------------------------

namespace upstream {

struct RoctxFrame {
  std::string message;
  uint64_t start_ns;
  uint64_t generation;
};
thread_local std::vector<RoctxFrame> tls_roctx_stack;
std::atomic<uint64_t> roctx_generation{1};

struct RocmTracerEvent {  // the fields EmitMarkerEvent sets (9.5)
  int type = 0;           // Generic
  int source = 0;         // ApiCallback
  int domain = 0;         // InvalidDomain
  std::string name;       // the label, owned by the event
  std::string roctx_range;
  uint64_t start_time_ns = 0;
  uint64_t end_time_ns = 0;
  uint32_t device_id = UINT32_MAX;
  uint64_t correlation_id = UINT64_MAX;
  uint64_t thread_id = 0;
  uint64_t stream_id = UINT64_MAX;
  uint64_t scope_range_id = 0;
};

struct Collector {
  std::mutex events_mutex;
  std::vector<RocmTracerEvent> events;
  void AddEvent(RocmTracerEvent&& event, bool /*is_auxiliary*/) {
    std::lock_guard<std::mutex> lock(events_mutex);
    events.push_back(std::move(event));
  }
};

std::mutex collector_mutex;
Collector* collector = nullptr;
thread_local uint64_t tid = 0;

void Push(const char* message) {  // MARKER_CORE_API roctxRangePushA, ENTER
  tls_roctx_stack.push_back({message ? message : "", Boottime(), roctx_generation.load(std::memory_order_relaxed)});
}

void EmitMarkerEvent(const std::string& label, uint64_t start, uint64_t end, uint64_t thread_id) {
  RocmTracerEvent event;
  event.name = label;
  event.start_time_ns = start;
  event.end_time_ns = end;
  event.thread_id = thread_id;
  std::lock_guard<std::mutex> lock(collector_mutex);
  if (collector != nullptr) collector->AddEvent(std::move(event), false);
}

void Pop() {  // roctxRangePop, EXIT
  if (tls_roctx_stack.empty()) return;
  RoctxFrame frame = std::move(tls_roctx_stack.back());
  tls_roctx_stack.pop_back();
  const uint64_t ts = Boottime();
  if (frame.generation != roctx_generation.load(std::memory_order_relaxed) || frame.start_ns == 0 || ts == 0 ||
      frame.message.empty()) {
    return;
  }
  if (tid == 0) tid = static_cast<uint64_t>(pthread_self());
  EmitMarkerEvent(frame.message, frame.start_ns, ts, tid);
}

void Enable(const benchmark::State&) {
  std::lock_guard<std::mutex> lock(collector_mutex);
  roctx_generation.fetch_add(1, std::memory_order_relaxed);
  collector = new Collector();
}

void Disable(const benchmark::State&) {
  std::lock_guard<std::mutex> lock(collector_mutex);
  delete collector;
  collector = nullptr;
}

}  // namespace upstream

void BM_UpstreamModel(benchmark::State& state) {
  for (auto _ : state) {
    upstream::Push(kLabel);
    upstream::Pop();
  }
  state.SetItemsProcessed(state.iterations());
}

// ---- roctx_utils ------------------------------------------------------------------------

using roctx_utils_bench::StartSession;
using roctx_utils_bench::StopSession;

void BM_RoctxUtils(benchmark::State& state) {
  for (auto _ : state) {
    tsl::profiler::RangePush(nullptr, kLabel);
    tsl::profiler::RangePop(nullptr);
  }
  state.SetItemsProcessed(state.iterations());
}

// ---- tracy_static, tracy_runtime ------------------------------------------------------

struct Tracy {
  void (*zone_static)() = nullptr;
  void (*zone_runtime)(const char*) = nullptr;
  int version = 0;
};
Tracy tracy;

// With no server, Tracy keeps every event until one connects: 64 bytes a zone, about 12 GB in
// this run, and its queue allocating new blocks on the zone's path, which a connected server's
// steady draining never makes it do. When it cannot listen on its port, its worker instead
// empties the queue every 10 ms, the steady state a server gives the client. So the benchmark
// holds Tracy's port (an IPv4 listening socket on a free port; TRACY_PORT and TRACY_ONLY_IPV4
// point Tracy at it) before the library, whose worker starts when it is loaded, is opened.
bool LoadTracy(const char* path) {
  const int sock = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof(addr);
  if (sock < 0 || bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(sock, 1) != 0 ||
      getsockname(sock, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::fprintf(stderr, "BENCH_TRACY_LIB: cannot hold a port for Tracy; no Tracy rows\n");
    return false;
  }
  setenv("TRACY_PORT", std::to_string(ntohs(addr.sin_port)).c_str(), 1);
  setenv("TRACY_ONLY_IPV4", "1", 1);
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  auto version = lib ? reinterpret_cast<int (*)()>(dlsym(lib, "roctx_bench_tracy_version")) : nullptr;
  tracy.zone_static = lib ? reinterpret_cast<void (*)()>(dlsym(lib, "roctx_bench_tracy_static")) : nullptr;
  tracy.zone_runtime = lib ? reinterpret_cast<void (*)(const char*)>(dlsym(lib, "roctx_bench_tracy_runtime")) : nullptr;
  if (version == nullptr || tracy.zone_static == nullptr || tracy.zone_runtime == nullptr) {
    std::fprintf(stderr, "BENCH_TRACY_LIB=%s: %s; no Tracy rows\n", path, lib ? "not bench/tracy_zone.cc's library" : dlerror());
    return false;
  }
  tracy.version = version();
  return true;  // the socket stays open for the process's life
}

void BM_TracyStatic(benchmark::State& state) {
  for (auto _ : state) tracy.zone_static();
  state.SetItemsProcessed(state.iterations());
}

void BM_TracyRuntime(benchmark::State& state) {
  const char* label = kLabel;
  benchmark::DoNotOptimize(label);  // a label the compiler cannot see through, as at run time
  for (auto _ : state) tracy.zone_runtime(label);
  state.SetItemsProcessed(state.iterations());
}

void BM_RoctxUtilsRegistered(benchmark::State& state) {
  static tsl::profiler::StringHandle title = tsl::profiler::RegisterString(nullptr, kLabel);
  for (auto _ : state) {
    tsl::profiler::detail::RangePush(nullptr, title, 0, nullptr, 0);
    tsl::profiler::RangePop(nullptr);
  }
  state.SetItemsProcessed(state.iterations());
}

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  if (*end != '\0' || n <= 0) {
    std::fprintf(stderr, "%s=%s is not a positive integer; using %lld\n", name, v, static_cast<long long>(fallback));
    return fallback;
  }
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  if (std::getenv("NVTX_INJECTION64_PATH") != nullptr) {
    std::fprintf(stderr, "NVTX_INJECTION64_PATH is set: nvtx3_no_tool would measure that tool; unset it\n");
    return 2;
  }
  const int64_t pairs = EnvInt("BENCH_PAIRS", 2000000);
  const int max_threads = static_cast<int>(EnvInt("BENCH_MAX_THREADS", 16));
  auto common = [&](benchmark::internal::Benchmark* b) {
    b->Iterations(pairs)->Repetitions(3)->ReportAggregatesOnly(true)->UseRealTime()->ThreadRange(1, max_threads);
  };
  common(benchmark::RegisterBenchmark("nvtx3_no_tool", BM_Nvtx3NoTool));
  common(benchmark::RegisterBenchmark("boottime_x2", BM_BoottimeX2));
  common(benchmark::RegisterBenchmark("floor", BM_Floor));
  common(benchmark::RegisterBenchmark("upstream_model", BM_UpstreamModel)->Setup(upstream::Enable)->Teardown(upstream::Disable));
  common(benchmark::RegisterBenchmark("roctx_utils", BM_RoctxUtils)->Setup(StartSession)->Teardown(StopSession));
  common(benchmark::RegisterBenchmark("roctx_utils_registered", BM_RoctxUtilsRegistered)->Setup(StartSession)->Teardown(StopSession));
  const char* tracy_lib = std::getenv("BENCH_TRACY_LIB");
  if (tracy_lib != nullptr && *tracy_lib != '\0' && LoadTracy(tracy_lib)) {
    benchmark::AddCustomContext("tracy_version", std::to_string(tracy.version / 10000) + "." +
                                                     std::to_string(tracy.version / 100 % 100) + "." +
                                                     std::to_string(tracy.version % 100));
    common(benchmark::RegisterBenchmark("tracy_static", BM_TracyStatic));
    common(benchmark::RegisterBenchmark("tracy_runtime", BM_TracyRuntime));
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
