// A test double of libcupti's activity API (nvidia_sources.md C), with CUPTI 13.0's record
// layouts: CUpti_ActivityKernel10 (216 bytes; the 208-byte prefix shared with Kernel9/13),
// CUpti_ActivityExternalCorrelation (24), CUpti_ActivityAPI (40). Records are written into the
// client's requested buffers in CUPTI's order (external correlation, then the API record, then
// the kernel) and handed back by cuptiActivityFlushAll, on the calling thread.
//
// Timestamps (C.7): API records' start/end come from the callback registered with
// cuptiActivityRegisterTimestampCallback (refused once any kind is enabled), else from
// CLOCK_REALTIME in ns, as real CUPTI's default clock; cuptiGetTimestamp reads the same clock.
// Kernel start/end are whatever the test passes (already on the client's clock).
//
// Hooks for tests: fake_cupti_launch() launches a "kernel" from the calling thread, as cudart's
// cudaLaunchKernel would: its API record spans the hook's own call on the timestamp clock
// (start at entry, end just before the records are queued, end > start), RUNTIME (cbid 211
// cudaLaunchKernel) if that kind is enabled, else DRIVER (cbid 307 cuLaunchKernel) if that one
// is, never both; its threadId is the low 32 bits of pthread_self() (what CUDA 13's CUPTI
// writes, not the OS tid); one external-correlation record per external kind whose stack on this
// thread is not empty (innermost id) whenever EXTERNAL_CORRELATION is enabled.
// fake_cupti_launch_at() is the same with a given API interval. fake_cupti_enabled(kind),
// fake_cupti_depth(kind), fake_cupti_disable_count().
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

struct Kernel10 {
  uint32_t kind;
  uint8_t cache_config, shared_memory_config;
  uint16_t registers_per_thread;
  uint32_t partitioned_requested, partitioned_executed;
  uint64_t start, end, completed;
  uint32_t device_id, context_id, stream_id;
  int32_t grid[3], block[3];
  int32_t static_shared, dynamic_shared;
  uint32_t local_per_thread, local_total, correlation_id;
  int64_t grid_id;
  const char* name;
  uint64_t reserved0, queued, submitted;
  uint8_t launch_type, carveout_requested_flag, carveout_requested, padding;
  uint32_t shared_executed;
  uint64_t graph_node_id;
  uint32_t shmem_limit_config, graph_id;
  void* access_policy_window;
  uint32_t channel_id, channel_type;
  uint32_t cluster[3], cluster_scheduling_policy;
  uint64_t local_total_v2;
  uint32_t max_potential_cluster_size, max_active_clusters;
  uint8_t is_device_launched, padding3[7];
};
static_assert(sizeof(Kernel10) == 216, "C.4");
static_assert(offsetof(Kernel10, correlation_id) == 92, "C.4");
static_assert(offsetof(Kernel10, name) == 104, "C.4");

struct External {
  uint32_t kind;
  int32_t external_kind;
  uint64_t external_id;
  uint32_t correlation_id, reserved;
};
static_assert(sizeof(External) == 24, "C.5");

struct ApiRecord {
  uint32_t kind, cbid;
  uint64_t start, end;
  uint32_t process_id, thread_id, correlation_id, return_value;
};
static_assert(sizeof(ApiRecord) == 40, "C.5");

constexpr uint32_t kDriver = 4, kRuntime = 5, kKernel = 10, kExternal = 39;
constexpr uint32_t kCbidCudaLaunchKernel = 211;  // runtime cudaLaunchKernel_v7000 (C.3)
constexpr uint32_t kCbidCuLaunchKernel = 307;    // driver cuLaunchKernel (C.3)

using Requested = void (*)(uint8_t**, size_t*, size_t*);
using Completed = void (*)(void*, uint32_t, uint8_t*, size_t, size_t);

std::mutex g_mutex;
Requested g_requested = nullptr;
Completed g_completed = nullptr;
std::set<int> g_enabled;
uint64_t (*g_timestamp)() = nullptr;  // cuptiActivityRegisterTimestampCallback; null = default
int g_disable_calls = 0;
std::vector<std::vector<uint8_t>> g_pending;  // one entry per record, in order
uint32_t g_next_correlation = 1;
std::map<const char*, std::string> g_names;  // stable name storage per kernel
thread_local std::map<int, std::vector<uint64_t>> t_stacks;

template <typename T>
void Append(const T& record) {
  std::vector<uint8_t> bytes(sizeof(T));
  std::memcpy(bytes.data(), &record, sizeof(T));
  g_pending.push_back(std::move(bytes));
}

uint64_t RealtimeNs() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_nsec);
}

// CUPTI's clock now: the registered callback (called without g_mutex held, so a callback that
// calls back into CUPTI does not deadlock), else CLOCK_REALTIME.
uint64_t Now() {
  uint64_t (*ts)() = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    ts = g_timestamp;
  }
  return ts != nullptr ? ts() : RealtimeNs();
}

// The launch behind fake_cupti_launch / _launch_at. `api_start`/`api_end` null: read the clock
// (entry before anything is built, exit after everything is, as CUPTI brackets the call).
uint32_t Launch(const char* name, const uint64_t* api_start_in, const uint64_t* api_end_in,
                uint64_t start, uint64_t end, uint32_t device, uint32_t stream, int32_t grid_x,
                int32_t block_x) {
  const uint64_t api_start = api_start_in != nullptr ? *api_start_in : Now();
  std::vector<std::vector<uint8_t>> records;  // this launch's, queued together below
  size_t api_index = SIZE_MAX;                // which of them is the API record
  uint32_t correlation = 0;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    correlation = g_next_correlation++;
    auto add = [&records](const void* p, size_t n) {
      records.emplace_back(static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
    };
    for (auto& [kind, stack] : t_stacks) {
      if (!stack.empty() && g_enabled.count(kExternal)) {
        External e{kExternal, kind, stack.back(), correlation, 0};
        add(&e, sizeof(e));
      }
    }
    // cudart's launch makes one API record: RUNTIME; its internal driver call produces no
    // DRIVER record for the launch (C.8). Without RUNTIME, a driver-API launch: DRIVER.
    const uint32_t api_kind =
        g_enabled.count(kRuntime) ? kRuntime : g_enabled.count(kDriver) ? kDriver : 0;
    if (api_kind != 0) {
      ApiRecord a{api_kind,
                  api_kind == kRuntime ? kCbidCudaLaunchKernel : kCbidCuLaunchKernel,
                  api_start,
                  api_start,  // end set below
                  static_cast<uint32_t>(getpid()),
                  // CUDA 13's CUPTI: the low 32 bits of pthread_self(), not gettid().
                  static_cast<uint32_t>(static_cast<uint64_t>(pthread_self())),
                  correlation,
                  0};
      api_index = records.size();
      add(&a, sizeof(a));
    }
    if (g_enabled.count(kKernel)) {
      auto it = g_names.find(name);
      if (it == g_names.end()) it = g_names.emplace(name, name).first;
      Kernel10 k{};
      k.kind = kKernel;
      k.start = start;
      k.end = end;
      k.device_id = device;
      k.stream_id = stream;
      k.grid[0] = grid_x;
      k.grid[1] = k.grid[2] = 1;
      k.block[0] = block_x;
      k.block[1] = k.block[2] = 1;
      k.correlation_id = correlation;
      k.name = it->second.c_str();
      add(&k, sizeof(k));
    }
  }
  if (api_index != SIZE_MAX) {
    uint64_t api_end = api_end_in != nullptr ? *api_end_in : Now();
    if (api_end_in == nullptr && api_end <= api_start) api_end = api_start + 1;
    std::memcpy(records[api_index].data() + offsetof(ApiRecord, end), &api_end, sizeof(api_end));
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  for (auto& r : records) g_pending.push_back(std::move(r));
  return correlation;
}

}  // namespace

FAKE_EXPORT int cuptiGetVersion(uint32_t* v) {
  if (v == nullptr) return 1;
  const char* env = std::getenv("FAKE_CUPTI_VERSION");
  *v = env ? static_cast<uint32_t>(std::strtoul(env, nullptr, 10)) : 130001u;
  return 0;
}

FAKE_EXPORT int cuptiGetResultString(int result, const char** out) {
  if (out == nullptr) return 1;
  *out = result == 0 ? "CUPTI_SUCCESS" : result == 18 ? "CUPTI_ERROR_QUEUE_EMPTY" : "CUPTI_ERROR_UNKNOWN";
  return 0;
}

FAKE_EXPORT int cuptiActivityRegisterCallbacks(Requested requested, Completed completed) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (requested == nullptr || completed == nullptr) return 1;
  g_requested = requested;
  g_completed = completed;
  return 0;
}

// Only before any kind is enabled (C.7): afterwards refused (1) and the clock stays. A null
// callback goes back to CLOCK_REALTIME.
FAKE_EXPORT int cuptiActivityRegisterTimestampCallback(uint64_t (*callback)()) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_enabled.empty()) return 1;
  g_timestamp = callback;
  return 0;
}

FAKE_EXPORT int cuptiGetTimestamp(uint64_t* ts) {
  if (ts == nullptr) return 1;
  *ts = Now();
  return 0;
}

FAKE_EXPORT int cuptiActivityEnable(int kind) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_enabled.insert(kind);
  return 0;
}

// Records already queued stay queued (and are flushed); later launches no longer make this kind.
FAKE_EXPORT int cuptiActivityDisable(int kind) {
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_disable_calls;
  g_enabled.erase(kind);
  return 0;
}

// Records are variable-length: each is preceded by nothing, so the iteration walks the same
// sizes it wrote (kind -> size), as CUPTI walks its own layout.
FAKE_EXPORT int cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, uint8_t** record) {
  if (buffer == nullptr || record == nullptr) return 1;
  size_t at = 0;
  if (*record != nullptr) {
    uint32_t kind;
    std::memcpy(&kind, *record, 4);
    const size_t size = kind == kKernel ? sizeof(Kernel10) : kind == kExternal ? sizeof(External) : sizeof(ApiRecord);
    at = static_cast<size_t>(*record - buffer) + size;
  }
  if (at >= valid) return 12;  // CUPTI_ERROR_MAX_LIMIT_REACHED
  *record = buffer + at;
  return 0;
}

FAKE_EXPORT int cuptiActivityFlushAll(uint32_t) {
  std::vector<std::vector<uint8_t>> records;
  Requested requested;
  Completed completed;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    records.swap(g_pending);
    requested = g_requested;
    completed = g_completed;
  }
  if (requested == nullptr || completed == nullptr) return 0;
  size_t next = 0;
  while (next < records.size()) {
    uint8_t* buffer = nullptr;
    size_t size = 0, max_records = 0;
    requested(&buffer, &size, &max_records);
    if (buffer == nullptr) return 0;  // declined: the records are dropped
    size_t used = 0;
    while (next < records.size() && used + records[next].size() <= size) {
      std::memcpy(buffer + used, records[next].data(), records[next].size());
      used += records[next].size();
      ++next;
    }
    completed(nullptr, 0, buffer, size, used);
  }
  return 0;
}

FAKE_EXPORT int cuptiActivityGetNumDroppedRecords(void*, uint32_t, size_t* dropped) {
  if (dropped != nullptr) *dropped = 0;
  return 0;
}

FAKE_EXPORT int cuptiActivityPushExternalCorrelationId(int kind, uint64_t id) {
  t_stacks[kind].push_back(id);
  return 0;
}

FAKE_EXPORT int cuptiActivityPopExternalCorrelationId(int kind, uint64_t* last) {
  auto& stack = t_stacks[kind];
  if (stack.empty()) return 18;  // CUPTI_ERROR_QUEUE_EMPTY
  if (last != nullptr) *last = stack.back();
  stack.pop_back();
  return 0;
}

// ---- test hooks ----

FAKE_EXPORT int fake_cupti_enabled(int kind) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_enabled.count(kind) ? 1 : 0;
}

// Depth of the calling thread's external-correlation stack of `kind`.
FAKE_EXPORT int fake_cupti_depth(int kind) { return static_cast<int>(t_stacks[kind].size()); }

// cuptiActivityDisable calls so far.
FAKE_EXPORT int fake_cupti_disable_count() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_disable_calls;
}

// A kernel `name` launched now from the calling thread, run on the device from `start` to `end`
// (ns, the client's clock) on `device`/`stream`, with a grid of grid_x blocks of block_x threads.
// Its API record spans this call on CUPTI's clock. Returns the launch's correlation id. `name`
// identifies the kernel by its address, as CUPTI's name pointer does: pass storage that lives
// as long as the kernel's module would (a string literal), never a temporary.
FAKE_EXPORT uint32_t fake_cupti_launch(const char* name, uint64_t start, uint64_t end, uint32_t device, uint32_t stream,
                                       int32_t grid_x, int32_t block_x) {
  return Launch(name, nullptr, nullptr, start, end, device, stream, grid_x, block_x);
}

// fake_cupti_launch with the API record's interval given (as given, unchecked): a launch call
// that took [api_start, api_end] on CUPTI's clock.
FAKE_EXPORT uint32_t fake_cupti_launch_at(const char* name, uint64_t api_start, uint64_t api_end, uint64_t start,
                                          uint64_t end, uint32_t device, uint32_t stream, int32_t grid_x,
                                          int32_t block_x) {
  return Launch(name, &api_start, &api_end, start, end, device, stream, grid_x, block_x);
}
