// A test double of libcupti's activity API (nvidia_sources.md C), with CUPTI 13.0's record
// layouts, offsets asserted: CUpti_ActivityKernel10 (kind CONCURRENT_KERNEL 10, 216 bytes; the
// 208-byte prefix shared with Kernel9/13), CUpti_ActivityMemcpy6 (MEMCPY 1, 96),
// CUpti_ActivityMemset4 (MEMSET 2, 88), CUpti_ActivityMemcpyPtoP4 (MEMCPY2 22, 96),
// CUpti_ActivityExternalCorrelation (39, 24), CUpti_ActivityAPI (DRIVER 4 / RUNTIME 5, 40).
// cuptiActivityGetNextRecord steps each record by its kind's size (an unknown kind ends the walk
// with 21, CUPTI_ERROR_INVALID_KIND; the end of the buffer with 12, MAX_LIMIT_REACHED). A record
// of a kind is written only while that kind is enabled.
//
// Timestamps (C.7): API records' start/end come from the callback registered with
// cuptiActivityRegisterTimestampCallback (refused once any kind is enabled), else from
// CLOCK_REALTIME in ns, as real CUPTI's default clock; cuptiGetTimestamp reads the same clock.
// Device records' start/end are whatever the test passes (already on the client's clock).
//
// Calls (the hooks below) make their records on the calling thread, as the CUDA call would:
// - one fresh correlation id per call, shared by its API record and every device record it makes;
// - the API record spans the hook's own call on the timestamp clock (start at entry, end just
//   before the records are queued, end > start), RUNTIME (the cudart function's cbid) if that
//   kind is enabled, else DRIVER (the driver function's cbid) if that one is, never both; its
//   threadId is the low 32 bits of pthread_self() (what CUDA 13's CUPTI writes, not the OS tid);
// - one external-correlation record per external kind whose stack on this thread is not empty
//   (innermost id) whenever EXTERNAL_CORRELATION is enabled, first;
// - then the API record and the device records, except for a graph launch, where the API record
//   comes after its device records (as measured on CUDA 13.0).
// Memcpy/memset records are flagged asynchronous (1), contextId 0 as kernels', channels 0, and a
// Memcpy6's runtimeCorrelationId is the correlation id when the call was a runtime one (RUNTIME
// enabled), else 0; its copyCount is 1 (not a batch).
//
// Buffers and clients (measured with libcupti 13.0 on an H200, client A with records pending,
// then XLA's tracer B: cuptiSubscribe, cuptiEnableDomain, cuptiActivityRegisterCallbacks,
// cuptiActivityEnable, work, cuptiActivityDisable, cuptiActivityFlushAll(1), cuptiUnsubscribe,
// cuptiFinalize): pending records sit in a buffer CUPTI requested from the client whose request
// callback was registered when the first record of the pending batch was queued (its "owner";
// none registered then: whoever is registered at the flush). Any cuptiActivityFlushAll (flag 0
// or 1) puts them into buffers from the owner's request callback (the first buffer; following
// ones from the callback registered at the flush), and hands them to the completion callback
// registered at the flush, on the flushing thread: so after B registers, A's pending records
// reach B's completion callback in A's buffer. A declined buffer (null) drops the rest; so does
// a record larger than the buffer (the buffer is completed empty). With one client nothing of
// this shows. cuptiSubscribe: one subscriber at a time (another gets 39,
// CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED). cuptiFinalize destroys CUPTI's state: buffer
// callbacks, enabled kinds, timestamp callback (back to CLOCK_REALTIME), the subscriber slot; and
// discards pending records, including those of a call in flight. Afterwards a client may
// register all of it again and gets records again. Correlation ids go on increasing across it
// (fake_cupti_restart_correlation_ids() for the other possibility). Kernel-name storage,
// threads' external-correlation stacks and the hooks' counters survive it.
//
// Everything is under one mutex, never held while a client callback runs.
//
// Hooks for tests: fake_cupti_launch() (a cudaLaunchKernel: cbid 211, driver cuLaunchKernel
// 307) and fake_cupti_launch_at() (the same with the API interval given); fake_cupti_copy() (a
// cudaMemcpyAsync: 41, driver cuMemcpyAsync 306); fake_cupti_memset() (a cudaMemsetAsync: 51,
// driver cuMemsetD8Async 216);
// fake_cupti_graph_launch() (a cudaGraphLaunch_v10000: 311, driver cuGraphLaunch 514);
// fake_cupti_call_without_gpu_work() (a cudaGetDevice: 17, driver cuDeviceGet 12: an API record
// only); fake_cupti_api_records_on(domain, cbid) (cuptiActivityEnableRuntimeApi/DriverApi's
// per-function switches, CUPTI 12.5+, with cuptiGetCallbackName naming every id);
// fake_cupti_enabled(kind), fake_cupti_depth(kind), fake_cupti_disable_count(),
// fake_cupti_subscribe_count(), fake_cupti_finalize_count(),
// fake_cupti_records_delivered_to(completion), fake_cupti_restart_correlation_ids().
#include <pthread.h>

#include <new>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

// A node of a graph launched by fake_cupti_graph_launch (tests declare it identically).
typedef struct fake_cupti_graph_node {
  int kind;          // 10 kernel, 1 memcpy, 2 memset; any other: the node makes no record
  const char* name;  // kernels: stable storage, as fake_cupti_launch
  uint64_t start, end;
  uint64_t bytes;     // memcpy, memset
  int copy_kind;      // memcpy: CUPTI_ACTIVITY_MEMCPY_KIND (10, PTOP: a MemcpyPtoP4)
} fake_cupti_graph_node;

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
static_assert(offsetof(Kernel10, graph_node_id) == 144, "C.4");
static_assert(offsetof(Kernel10, graph_id) == 156, "C.4");

struct Memcpy6 {
  uint32_t kind;
  uint8_t copy_kind, src_kind, dst_kind, flags;
  uint64_t bytes, start, end;
  uint32_t device_id, context_id, stream_id, correlation_id;
  uint32_t runtime_correlation_id, pad;
  void* reserved0;
  uint64_t graph_node_id;
  uint32_t graph_id, channel_id, channel_type, pad2;
  uint64_t copy_count;
};
static_assert(sizeof(Memcpy6) == 96, "Memcpy6");
static_assert(offsetof(Memcpy6, copy_kind) == 4, "Memcpy6");
static_assert(offsetof(Memcpy6, src_kind) == 5, "Memcpy6");
static_assert(offsetof(Memcpy6, dst_kind) == 6, "Memcpy6");
static_assert(offsetof(Memcpy6, flags) == 7, "Memcpy6");
static_assert(offsetof(Memcpy6, bytes) == 8, "Memcpy6");
static_assert(offsetof(Memcpy6, start) == 16, "Memcpy6");
static_assert(offsetof(Memcpy6, end) == 24, "Memcpy6");
static_assert(offsetof(Memcpy6, device_id) == 32, "Memcpy6");
static_assert(offsetof(Memcpy6, context_id) == 36, "Memcpy6");
static_assert(offsetof(Memcpy6, stream_id) == 40, "Memcpy6");
static_assert(offsetof(Memcpy6, correlation_id) == 44, "Memcpy6");
static_assert(offsetof(Memcpy6, runtime_correlation_id) == 48, "Memcpy6");
static_assert(offsetof(Memcpy6, pad) == 52, "Memcpy6");
static_assert(offsetof(Memcpy6, reserved0) == 56, "Memcpy6");
static_assert(offsetof(Memcpy6, graph_node_id) == 64, "Memcpy6");
static_assert(offsetof(Memcpy6, graph_id) == 72, "Memcpy6");
static_assert(offsetof(Memcpy6, channel_id) == 76, "Memcpy6");
static_assert(offsetof(Memcpy6, channel_type) == 80, "Memcpy6");
static_assert(offsetof(Memcpy6, pad2) == 84, "Memcpy6");
static_assert(offsetof(Memcpy6, copy_count) == 88, "Memcpy6");

struct Memset4 {
  uint32_t kind, value;
  uint64_t bytes, start, end;
  uint32_t device_id, context_id, stream_id, correlation_id;
  uint16_t flags, memory_kind;
  uint32_t pad;
  void* reserved0;
  uint64_t graph_node_id;
  uint32_t graph_id, channel_id, channel_type, pad2;
};
static_assert(sizeof(Memset4) == 88, "Memset4");
static_assert(offsetof(Memset4, value) == 4, "Memset4");
static_assert(offsetof(Memset4, bytes) == 8, "Memset4");
static_assert(offsetof(Memset4, start) == 16, "Memset4");
static_assert(offsetof(Memset4, end) == 24, "Memset4");
static_assert(offsetof(Memset4, device_id) == 32, "Memset4");
static_assert(offsetof(Memset4, context_id) == 36, "Memset4");
static_assert(offsetof(Memset4, stream_id) == 40, "Memset4");
static_assert(offsetof(Memset4, correlation_id) == 44, "Memset4");
static_assert(offsetof(Memset4, flags) == 48, "Memset4");
static_assert(offsetof(Memset4, memory_kind) == 50, "Memset4");
static_assert(offsetof(Memset4, pad) == 52, "Memset4");
static_assert(offsetof(Memset4, reserved0) == 56, "Memset4");
static_assert(offsetof(Memset4, graph_node_id) == 64, "Memset4");
static_assert(offsetof(Memset4, graph_id) == 72, "Memset4");
static_assert(offsetof(Memset4, channel_id) == 76, "Memset4");
static_assert(offsetof(Memset4, channel_type) == 80, "Memset4");
static_assert(offsetof(Memset4, pad2) == 84, "Memset4");

struct MemcpyPtoP4 {
  uint32_t kind;
  uint8_t copy_kind, src_kind, dst_kind, flags;
  uint64_t bytes, start, end;
  uint32_t device_id, context_id, stream_id;
  uint32_t src_device_id, src_context_id, dst_device_id, dst_context_id;
  uint32_t correlation_id;
  void* reserved0;
  uint64_t graph_node_id;
  uint32_t graph_id, channel_id, channel_type, pad;
};
static_assert(sizeof(MemcpyPtoP4) == 96, "MemcpyPtoP4");
static_assert(offsetof(MemcpyPtoP4, copy_kind) == 4, "MemcpyPtoP4");
static_assert(offsetof(MemcpyPtoP4, src_kind) == 5, "MemcpyPtoP4");
static_assert(offsetof(MemcpyPtoP4, dst_kind) == 6, "MemcpyPtoP4");
static_assert(offsetof(MemcpyPtoP4, flags) == 7, "MemcpyPtoP4");
static_assert(offsetof(MemcpyPtoP4, bytes) == 8, "MemcpyPtoP4");
static_assert(offsetof(MemcpyPtoP4, start) == 16, "MemcpyPtoP4");
static_assert(offsetof(MemcpyPtoP4, end) == 24, "MemcpyPtoP4");
static_assert(offsetof(MemcpyPtoP4, device_id) == 32, "MemcpyPtoP4");
static_assert(offsetof(MemcpyPtoP4, context_id) == 36, "MemcpyPtoP4");
static_assert(offsetof(MemcpyPtoP4, stream_id) == 40, "MemcpyPtoP4");
static_assert(offsetof(MemcpyPtoP4, src_device_id) == 44, "MemcpyPtoP4");
static_assert(offsetof(MemcpyPtoP4, src_context_id) == 48, "MemcpyPtoP4");
static_assert(offsetof(MemcpyPtoP4, dst_device_id) == 52, "MemcpyPtoP4");
static_assert(offsetof(MemcpyPtoP4, dst_context_id) == 56, "MemcpyPtoP4");
static_assert(offsetof(MemcpyPtoP4, correlation_id) == 60, "MemcpyPtoP4");
static_assert(offsetof(MemcpyPtoP4, reserved0) == 64, "MemcpyPtoP4");
static_assert(offsetof(MemcpyPtoP4, graph_node_id) == 72, "MemcpyPtoP4");
static_assert(offsetof(MemcpyPtoP4, graph_id) == 80, "MemcpyPtoP4");
static_assert(offsetof(MemcpyPtoP4, channel_id) == 84, "MemcpyPtoP4");
static_assert(offsetof(MemcpyPtoP4, channel_type) == 88, "MemcpyPtoP4");
static_assert(offsetof(MemcpyPtoP4, pad) == 92, "MemcpyPtoP4");

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

constexpr uint32_t kMemcpy = 1, kMemset = 2, kDriver = 4, kRuntime = 5, kKernel = 10, kMemcpy2 = 22,
                   kExternal = 39;
constexpr uint8_t kCopyPtoP = 10;      // CUPTI_ACTIVITY_MEMCPY_KIND_PTOP
constexpr uint8_t kMemoryDevice = 3;   // CUPTI_ACTIVITY_MEMORY_KIND_DEVICE
constexpr uint8_t kFlagAsync = 1;      // CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC / _MEMSET_ASYNC

// (runtime cbid, driver cbid) of each call modelled (C.3).
struct Cbids {
  uint32_t runtime, driver;
};
constexpr Cbids kLaunchKernel{211, 307};  // cudaLaunchKernel_v7000 / cuLaunchKernel
constexpr Cbids kMemcpyAsync{41, 306};  // cudaMemcpyAsync_v3020 / cuMemcpyAsync
constexpr Cbids kMemsetAsync{51, 216};  // cudaMemsetAsync_v3020 / cuMemsetD8Async
constexpr Cbids kGraphLaunch{311, 514};   // cudaGraphLaunch_v10000 / cuGraphLaunch
constexpr Cbids kGetDevice{17, 12};       // cudaGetDevice_v3020 / cuDeviceGet: no GPU work

// Callback ids per domain (CUpti_CallbackDomain: DRIVER_API 1, RUNTIME_API 2), named by
// cuptiGetCallbackName: the calls modelled by their names, every other id below the domain's
// size by a name of no real function. Past the size: CUPTI_ERROR_INVALID_PARAMETER.
constexpr uint32_t kDomainDriver = 1, kDomainRuntime = 2, kDriverCbids = 800, kRuntimeCbids = 600;
const std::vector<std::string>& CallbackNames(uint32_t domain) {
  static const auto* names = [] {
    auto* n = new std::vector<std::string>[3];
    n[kDomainDriver].resize(kDriverCbids);
    n[kDomainRuntime].resize(kRuntimeCbids);
    for (uint32_t i = 1; i < kDriverCbids; ++i) n[kDomainDriver][i] = "cuDriverFunction" + std::to_string(i);
    for (uint32_t i = 1; i < kRuntimeCbids; ++i) n[kDomainRuntime][i] = "cudaRuntimeFunction" + std::to_string(i);
    n[kDomainRuntime][kLaunchKernel.runtime] = "cudaLaunchKernel_v7000";
    n[kDomainRuntime][kMemcpyAsync.runtime] = "cudaMemcpyAsync_v3020";
    n[kDomainRuntime][kMemsetAsync.runtime] = "cudaMemsetAsync_v3020";
    n[kDomainRuntime][kGraphLaunch.runtime] = "cudaGraphLaunch_v10000";
    n[kDomainRuntime][kGetDevice.runtime] = "cudaGetDevice_v3020";
    n[kDomainDriver][kLaunchKernel.driver] = "cuLaunchKernel";
    n[kDomainDriver][kMemcpyAsync.driver] = "cuMemcpyAsync";
    n[kDomainDriver][kMemsetAsync.driver] = "cuMemsetD8Async";
    n[kDomainDriver][kGraphLaunch.driver] = "cuGraphLaunch";
    n[kDomainDriver][kGetDevice.driver] = "cuDeviceGet";
    return n;
  }();
  return names[domain == kDomainDriver || domain == kDomainRuntime ? domain : 0];
}

constexpr int kResultInvalidParameter = 1, kResultMaxLimitReached = 12, kResultQueueEmpty = 18,
              kResultInvalidKind = 21, kResultMultipleSubscribers = 39;

using Requested = void (*)(uint8_t**, size_t*, size_t*);
using Completed = void (*)(void*, uint32_t, uint8_t*, size_t, size_t);
using Record = std::vector<uint8_t>;

std::mutex g_mutex;

// fork() safety: the mutex is held across fork(), so a child never inherits it locked by a
// thread that does not exist in it (what the real library does is not known; a test of a
// client's own fork safety must not hang in its double first).
const bool g_fork_safe = [] {
  pthread_atfork([] { g_mutex.lock(); }, [] { g_mutex.unlock(); }, [] { new (&g_mutex) std::mutex(); });
  return true;
}();
// Exit safety: the containers below are made once and never destroyed (references to heap
// objects, reachable from these globals, so not leaks), because threads of the host may still
// call CUPTI while the process exits and its static destructors run; a destroyed set or vector
// under them crashed 8 of 60 exiting processes.
Requested g_requested = nullptr;
Completed g_completed = nullptr;
std::set<int>& g_enabled = *new std::set<int>;
// (domain, cbid) whose API records are off (cuptiActivityEnableRuntimeApi/DriverApi(cbid, 0)):
// the call still takes its correlation id and makes its device records, but no API record.
std::set<std::pair<uint32_t, uint32_t>>& g_api_off = *new std::set<std::pair<uint32_t, uint32_t>>;
uint64_t (*g_timestamp)() = nullptr;  // cuptiActivityRegisterTimestampCallback; null = default
int g_disable_calls = 0;
std::vector<Record>& g_pending = *new std::vector<Record>;  // one entry per record, in order
Requested g_pending_owner = nullptr;  // registered when g_pending's first record was queued
uint64_t g_generation = 0;            // cuptiFinalize calls: a call in flight across one is lost
uint32_t g_next_correlation = 1;
// Stable name storage per kernel.
std::map<const char*, std::string>& g_names = *new std::map<const char*, std::string>;
// Completion callback -> records handed to it.
std::map<const void*, uint64_t>& g_delivered = *new std::map<const void*, uint64_t>;
// Subscriber handles: a distinct address per subscription, so a stale handle is not the
// current one (statics, not allocations: nothing for LeakSanitizer to find).
char g_subscriber_slots[256];
void* g_subscriber = nullptr;
int g_subscribe_calls = 0, g_finalize_calls = 0;
thread_local std::map<int, std::vector<uint64_t>> t_stacks;

template <typename T>
void Add(std::vector<Record>& out, const T& record) {
  const auto* p = reinterpret_cast<const uint8_t*>(&record);
  out.emplace_back(p, p + sizeof(T));
}

size_t RecordSize(uint32_t kind) {
  switch (kind) {
    case kMemcpy: return sizeof(Memcpy6);
    case kMemset: return sizeof(Memset4);
    case kDriver:
    case kRuntime: return sizeof(ApiRecord);
    case kKernel: return sizeof(Kernel10);
    case kMemcpy2: return sizeof(MemcpyPtoP4);
    case kExternal: return sizeof(External);
    default: return 0;
  }
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

// Where a device record came from: a plain call (graph ids 0) or node `node` of a graph launch.
struct Origin {
  uint32_t correlation;
  uint32_t runtime_correlation;  // Memcpy6's: the id when the call was a runtime one, else 0
  uint32_t graph_id;
  uint64_t graph_node_id;
};

Origin GraphNode(const Origin& call, uint32_t graph_exec_id, int node) {
  Origin o = call;
  o.graph_id = graph_exec_id;
  o.graph_node_id = (static_cast<uint64_t>(graph_exec_id) << 32) | static_cast<uint32_t>(node);
  return o;
}

// The device-record builders, called with g_mutex held; each writes nothing unless its kind is
// enabled.

void KernelRecord(std::vector<Record>& out, const Origin& o, const char* name, uint64_t start, uint64_t end,
                  uint32_t device, uint32_t stream, int32_t grid_x, int32_t block_x) {
  if (!g_enabled.count(kKernel)) return;
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
  k.correlation_id = o.correlation;
  if (name != nullptr) {
    auto it = g_names.find(name);
    if (it == g_names.end()) it = g_names.emplace(name, name).first;
    k.name = it->second.c_str();
  }
  k.graph_node_id = o.graph_node_id;
  k.graph_id = o.graph_id;
  Add(out, k);
}

void CopyRecord(std::vector<Record>& out, const Origin& o, uint8_t copy_kind, uint8_t src_kind, uint8_t dst_kind,
                uint64_t bytes, uint64_t start, uint64_t end, uint32_t device, uint32_t stream) {
  if (copy_kind == kCopyPtoP) {
    if (!g_enabled.count(kMemcpy2)) return;
    MemcpyPtoP4 m{};
    m.kind = kMemcpy2;
    m.copy_kind = copy_kind;
    m.src_kind = src_kind;
    m.dst_kind = dst_kind;
    m.flags = kFlagAsync;
    m.bytes = bytes;
    m.start = start;
    m.end = end;
    m.device_id = device;
    m.stream_id = stream;
    m.src_device_id = device;
    m.dst_device_id = device + 1;
    m.correlation_id = o.correlation;
    m.graph_node_id = o.graph_node_id;
    m.graph_id = o.graph_id;
    Add(out, m);
    return;
  }
  if (!g_enabled.count(kMemcpy)) return;
  Memcpy6 m{};
  m.kind = kMemcpy;
  m.copy_kind = copy_kind;
  m.src_kind = src_kind;
  m.dst_kind = dst_kind;
  m.flags = kFlagAsync;
  m.bytes = bytes;
  m.start = start;
  m.end = end;
  m.device_id = device;
  m.stream_id = stream;
  m.correlation_id = o.correlation;
  m.runtime_correlation_id = o.runtime_correlation;
  m.graph_node_id = o.graph_node_id;
  m.graph_id = o.graph_id;
  m.copy_count = 1;
  Add(out, m);
}

void MemsetRecord(std::vector<Record>& out, const Origin& o, uint32_t value, uint64_t bytes, uint64_t start,
                  uint64_t end, uint32_t device, uint32_t stream) {
  if (!g_enabled.count(kMemset)) return;
  Memset4 m{};
  m.kind = kMemset;
  m.value = value;
  m.bytes = bytes;
  m.start = start;
  m.end = end;
  m.device_id = device;
  m.stream_id = stream;
  m.correlation_id = o.correlation;
  m.flags = kFlagAsync;
  m.memory_kind = kMemoryDevice;
  m.graph_node_id = o.graph_node_id;
  m.graph_id = o.graph_id;
  Add(out, m);
}

// Queues one call's records together (g_mutex held). The first record of a batch fixes whose
// buffer the batch is in.
void QueueLocked(std::vector<Record>& records) {
  if (records.empty()) return;
  if (g_pending.empty()) g_pending_owner = g_requested;
  for (auto& r : records) g_pending.push_back(std::move(r));
}

// One CUDA call on the calling thread (see the header): external-correlation records, the API
// record and `device`'s records (built with g_mutex held), the API record last when `api_last`.
// `api_start_in`/`api_end_in` null: read the clock (entry before anything is built, exit after
// everything is, as CUPTI brackets the call).
uint32_t Call(Cbids cbids, bool api_last, const uint64_t* api_start_in, const uint64_t* api_end_in,
              const std::function<void(std::vector<Record>&, const Origin&)>& device) {
  const uint64_t api_start = api_start_in != nullptr ? *api_start_in : Now();
  std::vector<Record> records;  // this call's, queued together below
  size_t api_index = SIZE_MAX;  // which of them is the API record
  uint32_t correlation = 0;
  uint64_t generation = 0;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    generation = g_generation;
    correlation = g_next_correlation++;
    for (auto& [kind, stack] : t_stacks) {
      if (!stack.empty() && g_enabled.count(kExternal)) Add(records, External{kExternal, kind, stack.back(), correlation, 0});
    }
    // cudart's call makes one API record: RUNTIME; its internal driver call produces no DRIVER
    // record (C.8). Without RUNTIME, a driver-API call: DRIVER.
    uint32_t api_kind = g_enabled.count(kRuntime) ? kRuntime : g_enabled.count(kDriver) ? kDriver : 0;
    const bool runtime_call = api_kind == kRuntime;
    if (api_kind != 0 && g_api_off.count({runtime_call ? kDomainRuntime : kDomainDriver, runtime_call ? cbids.runtime : cbids.driver})) {
      api_kind = 0;  // this function's records are off
    }
    const ApiRecord api{api_kind,
                        api_kind == kRuntime ? cbids.runtime : cbids.driver,
                        api_start,
                        api_start,  // end set below
                        static_cast<uint32_t>(getpid()),
                        // CUDA 13's CUPTI: the low 32 bits of pthread_self(), not gettid().
                        static_cast<uint32_t>(static_cast<uint64_t>(pthread_self())),
                        correlation,
                        0};
    if (api_kind != 0 && !api_last) {
      api_index = records.size();
      Add(records, api);
    }
    device(records, Origin{correlation, runtime_call ? correlation : 0, 0, 0});
    if (api_kind != 0 && api_last) {
      api_index = records.size();
      Add(records, api);
    }
  }
  if (api_index != SIZE_MAX) {
    uint64_t api_end = api_end_in != nullptr ? *api_end_in : Now();
    if (api_end_in == nullptr && api_end <= api_start) api_end = api_start + 1;
    std::memcpy(records[api_index].data() + offsetof(ApiRecord, end), &api_end, sizeof(api_end));
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  if (generation == g_generation) QueueLocked(records);
  return correlation;
}

}  // namespace

FAKE_EXPORT int cuptiGetVersion(uint32_t* v) {
  if (v == nullptr) return kResultInvalidParameter;
  const char* env = std::getenv("FAKE_CUPTI_VERSION");
  *v = env ? static_cast<uint32_t>(std::strtoul(env, nullptr, 10)) : 130001u;
  return 0;
}

FAKE_EXPORT int cuptiGetResultString(int result, const char** out) {
  if (out == nullptr) return kResultInvalidParameter;
  switch (result) {
    case 0: *out = "CUPTI_SUCCESS"; break;
    case kResultInvalidParameter: *out = "CUPTI_ERROR_INVALID_PARAMETER"; break;
    case kResultMaxLimitReached: *out = "CUPTI_ERROR_MAX_LIMIT_REACHED"; break;
    case kResultQueueEmpty: *out = "CUPTI_ERROR_QUEUE_EMPTY"; break;
    case kResultInvalidKind: *out = "CUPTI_ERROR_INVALID_KIND"; break;
    case kResultMultipleSubscribers: *out = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"; break;
    default: *out = "CUPTI_ERROR_UNKNOWN"; break;
  }
  return 0;
}

// Replaces whoever registered before; records already pending stay in the owner's buffer but
// reach this client's completion callback at the next flush.
FAKE_EXPORT int cuptiActivityRegisterCallbacks(Requested requested, Completed completed) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (requested == nullptr || completed == nullptr) return kResultInvalidParameter;
  g_requested = requested;
  g_completed = completed;
  return 0;
}

// Only before any kind is enabled (C.7): afterwards refused (1) and the clock stays. A null
// callback goes back to CLOCK_REALTIME.
FAKE_EXPORT int cuptiActivityRegisterTimestampCallback(uint64_t (*callback)()) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_enabled.empty()) return kResultInvalidParameter;
  g_timestamp = callback;
  return 0;
}

FAKE_EXPORT int cuptiGetTimestamp(uint64_t* ts) {
  if (ts == nullptr) return kResultInvalidParameter;
  *ts = Now();
  return 0;
}

FAKE_EXPORT int cuptiActivityEnable(int kind) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_enabled.insert(kind);
  return 0;
}

// Records already queued stay queued (and are flushed); later calls no longer make this kind.
FAKE_EXPORT int cuptiActivityDisable(int kind) {
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_disable_calls;
  g_enabled.erase(kind);
  return 0;
}

// Records are variable-length: each is preceded by nothing, so the iteration walks the same
// sizes it wrote (kind -> size), as CUPTI walks its own layout.
FAKE_EXPORT int cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, uint8_t** record) {
  if (buffer == nullptr || record == nullptr) return kResultInvalidParameter;
  size_t at = 0;
  if (*record != nullptr) {
    uint32_t kind;
    std::memcpy(&kind, *record, 4);
    const size_t size = RecordSize(kind);
    if (size == 0) return kResultInvalidKind;
    at = static_cast<size_t>(*record - buffer) + size;
  }
  if (at >= valid) return kResultMaxLimitReached;
  *record = buffer + at;
  return 0;
}

// Flag 0 and 1 alike: everything pending, in the batch owner's buffer (the first; later ones
// from whoever is registered now), to whoever is registered now (see the header).
FAKE_EXPORT int cuptiActivityFlushAll(uint32_t) {
  std::vector<Record> records;
  Requested owner, requested;
  Completed completed;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    records.swap(g_pending);
    owner = g_pending_owner;
    g_pending_owner = nullptr;
    requested = g_requested;
    completed = g_completed;
  }
  if (owner == nullptr) owner = requested;
  if (owner == nullptr || completed == nullptr) return 0;  // nobody to hand them to: dropped
  size_t next = 0;
  for (Requested from = owner; next < records.size() && from != nullptr; from = requested) {
    uint8_t* buffer = nullptr;
    size_t size = 0, max_records = 0;
    from(&buffer, &size, &max_records);
    if (buffer == nullptr) return 0;  // declined: the records are dropped
    size_t used = 0, count = 0;
    while (next < records.size() && used + records[next].size() <= size) {
      std::memcpy(buffer + used, records[next].data(), records[next].size());
      used += records[next].size();
      ++next;
      ++count;
    }
    const bool stuck = count == 0;  // a record larger than the buffer: no buffer would do
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      g_delivered[reinterpret_cast<const void*>(completed)] += count;
    }
    completed(nullptr, 0, buffer, size, used);
    if (stuck) return 0;
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
  if (stack.empty()) return kResultQueueEmpty;
  if (last != nullptr) *last = stack.back();
  stack.pop_back();
  return 0;
}

// The callback API's one subscriber slot. The callback is never called: the fake models only
// what a subscription does to other clients (it takes the slot).
FAKE_EXPORT int cuptiSubscribe(void** subscriber, void* /*callback*/, void* /*userdata*/) {
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_subscribe_calls;
  if (subscriber == nullptr) return kResultInvalidParameter;
  if (g_subscriber != nullptr) {
    *subscriber = nullptr;
    return kResultMultipleSubscribers;
  }
  g_subscriber = &g_subscriber_slots[static_cast<size_t>(g_subscribe_calls) % sizeof(g_subscriber_slots)];
  *subscriber = g_subscriber;
  return 0;
}

// Only the current subscriber's handle is accepted (else 1, INVALID_PARAMETER).
FAKE_EXPORT int cuptiUnsubscribe(void* subscriber) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (subscriber == nullptr || subscriber != g_subscriber) return kResultInvalidParameter;
  g_subscriber = nullptr;
  return 0;
}

// Accepted for the current subscriber (no callback is ever made), else 1.
FAKE_EXPORT int cuptiEnableDomain(uint32_t /*enable*/, void* subscriber, int /*domain*/) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (subscriber == nullptr || subscriber != g_subscriber) return kResultInvalidParameter;
  return 0;
}

// Measured on 13.0: every client's callbacks, kinds and clock go, and what was pending is lost.
FAKE_EXPORT int cuptiFinalize(void) {
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_finalize_calls;
  ++g_generation;
  g_requested = nullptr;
  g_completed = nullptr;
  g_enabled.clear();
  g_api_off.clear();  // assumed, as the kinds (not measured)
  g_timestamp = nullptr;
  g_subscriber = nullptr;
  g_pending.clear();
  g_pending_owner = nullptr;
  return 0;
}

// Whether calls of one function make API records (CUPTI 12.5+). Process-wide, as CUPTI's.
int EnableApi(uint32_t domain, uint32_t cbid, uint8_t enable) {
  if (cbid == 0 || cbid >= CallbackNames(domain).size()) return kResultInvalidParameter;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (enable != 0) {
    g_api_off.erase({domain, cbid});
  } else {
    g_api_off.insert({domain, cbid});
  }
  return 0;
}
FAKE_EXPORT int cuptiActivityEnableRuntimeApi(uint32_t cbid, uint8_t enable) { return EnableApi(kDomainRuntime, cbid, enable); }
FAKE_EXPORT int cuptiActivityEnableDriverApi(uint32_t cbid, uint8_t enable) { return EnableApi(kDomainDriver, cbid, enable); }

FAKE_EXPORT int cuptiGetCallbackName(uint32_t domain, uint32_t cbid, const char** name) {
  const auto& names = CallbackNames(domain);
  if (name == nullptr || cbid == 0 || cbid >= names.size()) return kResultInvalidParameter;
  *name = names[cbid].c_str();
  return 0;
}

// ---- test hooks ----

// Whether calls of `cbid` of `domain` make API records now.
FAKE_EXPORT int fake_cupti_api_records_on(uint32_t domain, uint32_t cbid) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_api_off.count({domain, cbid}) ? 0 : 1;
}

// A cudaGetDevice (driver: cuDeviceGet) on the calling thread: its API record only, if that
// function's records are on. Returns its correlation id.
FAKE_EXPORT uint32_t fake_cupti_call_without_gpu_work() {
  return Call(kGetDevice, false, nullptr, nullptr, [](std::vector<Record>&, const Origin&) {});
}

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

// cuptiSubscribe calls so far, refused ones included.
FAKE_EXPORT int fake_cupti_subscribe_count(void) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_subscribe_calls;
}

// cuptiFinalize calls so far.
FAKE_EXPORT int fake_cupti_finalize_count(void) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_finalize_calls;
}

// Records handed so far to `completion_callback` (a cuptiActivityRegisterCallbacks completion
// function), counted as each buffer is handed over, before the callback runs.
FAKE_EXPORT uint64_t fake_cupti_records_delivered_to(void* completion_callback) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_delivered.find(completion_callback);
  return it == g_delivered.end() ? 0 : it->second;
}

// The next correlation id is 1: a CUPTI that restarts its ids at cuptiFinalize, for a test to
// call right after one (by default ids go on increasing, which is what the fake does).
FAKE_EXPORT void fake_cupti_restart_correlation_ids(void) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_next_correlation = 1;
}

// A kernel `name` launched now from the calling thread, run on the device from `start` to `end`
// (ns, the client's clock) on `device`/`stream`, with a grid of grid_x blocks of block_x threads.
// Its API record spans this call on CUPTI's clock. Returns the launch's correlation id. `name`
// identifies the kernel by its address, as CUPTI's name pointer does: pass storage that lives
// as long as the kernel's module would (a string literal), never a temporary.
FAKE_EXPORT uint32_t fake_cupti_launch(const char* name, uint64_t start, uint64_t end, uint32_t device, uint32_t stream,
                                       int32_t grid_x, int32_t block_x) {
  return Call(kLaunchKernel, false, nullptr, nullptr, [&](std::vector<Record>& out, const Origin& o) {
    KernelRecord(out, o, name, start, end, device, stream, grid_x, block_x);
  });
}

// fake_cupti_launch with the API record's interval given (as given, unchecked): a launch call
// that took [api_start, api_end] on CUPTI's clock.
FAKE_EXPORT uint32_t fake_cupti_launch_at(const char* name, uint64_t api_start, uint64_t api_end, uint64_t start,
                                          uint64_t end, uint32_t device, uint32_t stream, int32_t grid_x,
                                          int32_t block_x) {
  return Call(kLaunchKernel, false, &api_start, &api_end, [&](std::vector<Record>& out, const Origin& o) {
    KernelRecord(out, o, name, start, end, device, stream, grid_x, block_x);
  });
}

// A cudaMemcpyAsync of `bytes` on `device`/`stream`, run from `start` to `end`: a Memcpy6 with
// the kinds given (CUPTI_ACTIVITY_MEMCPY_KIND: HTOD 1, DTOH 2, DTOD 8, PTOP 10;
// CUPTI_ACTIVITY_MEMORY_KIND: PAGEABLE 1, PINNED 2, DEVICE 3), or for PTOP a MemcpyPtoP4 (kind
// MEMCPY2) from `device` to `device` + 1. Returns the call's correlation id.
FAKE_EXPORT uint32_t fake_cupti_copy(int copy_kind, int src_kind, int dst_kind, uint64_t bytes, uint64_t start,
                                     uint64_t end, uint32_t device, uint32_t stream) {
  return Call(kMemcpyAsync, false, nullptr, nullptr, [&](std::vector<Record>& out, const Origin& o) {
    CopyRecord(out, o, static_cast<uint8_t>(copy_kind), static_cast<uint8_t>(src_kind), static_cast<uint8_t>(dst_kind),
               bytes, start, end, device, stream);
  });
}

// A cudaMemsetAsync of `bytes` of device memory to `value`. Returns the call's correlation id.
FAKE_EXPORT uint32_t fake_cupti_memset(uint32_t value, uint64_t bytes, uint64_t start, uint64_t end, uint32_t device,
                                       uint32_t stream) {
  return Call(kMemsetAsync, false, nullptr, nullptr, [&](std::vector<Record>& out, const Origin& o) {
    MemsetRecord(out, o, value, bytes, start, end, device, stream);
  });
}

// A cudaGraphLaunch of executable graph `graph_exec_id` on `device`/`stream`: one API record,
// after node i's record (what CUDA 13.0 was measured to write: the launch's correlation id,
// graphId = graph_exec_id, graphNodeId = graph_exec_id << 32 | i; kernels on a grid of 1 block of
// 1 thread; copies device to device (memory kinds DEVICE), PTOP ones as fake_cupti_copy's;
// memsets of device memory to 0). Returns the launch's correlation id.
FAKE_EXPORT uint32_t fake_cupti_graph_launch(uint32_t graph_exec_id, const fake_cupti_graph_node* nodes, int n,
                                             uint32_t device, uint32_t stream) {
  return Call(kGraphLaunch, true, nullptr, nullptr, [&](std::vector<Record>& out, const Origin& call) {
    for (int i = 0; nodes != nullptr && i < n; ++i) {
      const fake_cupti_graph_node& node = nodes[i];
      const Origin o = GraphNode(call, graph_exec_id, i);
      switch (node.kind) {
        case kKernel: KernelRecord(out, o, node.name, node.start, node.end, device, stream, 1, 1); break;
        case kMemcpy:
          CopyRecord(out, o, static_cast<uint8_t>(node.copy_kind), kMemoryDevice, kMemoryDevice, node.bytes,
                     node.start, node.end, device, stream);
          break;
        case kMemset: MemsetRecord(out, o, 0, node.bytes, node.start, node.end, device, stream); break;
        default: break;
      }
    }
  });
}

// ---- The CUDA driver's device queries (cuda.h), as an H200 answers them ----
// The library also stands in for libcuda.so.1 where a test names it in
// ROCTX_UTILS_CUDA_LIBRARY: cuInit first (as cudart does), then one device, ordinal 0.
// Before cuInit every query answers CUDA_ERROR_NOT_INITIALIZED (3), as the driver does.
namespace {
std::atomic<bool> g_cu_initialised{false};
constexpr int kCudaSuccess = 0, kCudaNotInitialized = 3, kCudaInvalidValue = 1, kCudaInvalidDevice = 101;
}  // namespace

FAKE_EXPORT int cuInit(unsigned int flags) {
  if (flags != 0) return kCudaInvalidValue;
  g_cu_initialised.store(true);
  return kCudaSuccess;
}

FAKE_EXPORT int cuDeviceGet(int* device, int ordinal) {
  if (!g_cu_initialised.load()) return kCudaNotInitialized;
  if (device == nullptr) return kCudaInvalidValue;
  if (ordinal != 0) return kCudaInvalidDevice;
  *device = 0;
  return kCudaSuccess;
}

FAKE_EXPORT int cuDeviceGetAttribute(int* value, int attribute, int device) {
  if (!g_cu_initialised.load()) return kCudaNotInitialized;
  if (value == nullptr) return kCudaInvalidValue;
  if (device != 0) return kCudaInvalidDevice;
  switch (attribute) {
    case 13: *value = 1980000; return kCudaSuccess;  // CLOCK_RATE, kHz
    case 16: *value = 132; return kCudaSuccess;      // MULTIPROCESSOR_COUNT
    case 36: *value = 2619000; return kCudaSuccess;  // MEMORY_CLOCK_RATE, kHz
    case 37: *value = 6144; return kCudaSuccess;     // GLOBAL_MEMORY_BUS_WIDTH, bits
    case 75: *value = 9; return kCudaSuccess;        // COMPUTE_CAPABILITY_MAJOR
    case 76: *value = 0; return kCudaSuccess;        // COMPUTE_CAPABILITY_MINOR
    default: return kCudaInvalidValue;
  }
}

FAKE_EXPORT int cuDeviceTotalMem_v2(size_t* bytes, int device) {
  if (!g_cu_initialised.load()) return kCudaNotInitialized;
  if (bytes == nullptr) return kCudaInvalidValue;
  if (device != 0) return kCudaInvalidDevice;
  *bytes = 150754820096;  // 140.4 GiB, what an H200 reports
  return kCudaSuccess;
}

FAKE_EXPORT int cuDeviceGetName(char* name, int len, int device) {
  if (!g_cu_initialised.load()) return kCudaNotInitialized;
  if (name == nullptr || len <= 0) return kCudaInvalidValue;
  if (device != 0) return kCudaInvalidDevice;
  snprintf(name, static_cast<size_t>(len), "%s", "NVIDIA H200");
  return kCudaSuccess;
}
