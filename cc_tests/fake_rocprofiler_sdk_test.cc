// Checks the fake rocprofiler-sdk (fake_rocprofiler_sdk.cc) against rocprofiler_abi.md: this test
// plays the tool. It dlopens the fake (RTLD_NOW | RTLD_GLOBAL, as the FFI checklist says), drives
// force_configure -> configure -> initialize with its own C++ configure function, subscribes
// marker kinds with callbacks declared from the spec's layouts (not from the fake's), then
// replays markers and checks what arrives. The SDK state is process-global and configured once,
// so one binary per environment:
//   FAKE_ROCPROFILER_VERSION  the SDK version the fake pretends to be
//   FAKE_SDK_PATH             the fake SDK to dlopen
//   FAKE_ROCTX_PATH           the fake SDK roctx (forwarding check)
//   FAKE_ROCTX_LEGACY_PATH    the fake legacy libroctx64 (must never forward)
//   EXPECT_MODE               normal | early_roctx (a roctx call before configuring) | locked
//                             (FAKE_ROCPROFILER_LOCKED=1: someone else owns the SDK) |
//                             wrong_client_id (the tool names itself with the other layout)
#include <dlfcn.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace {

// ---- the spec's layouts (rocprofiler_abi.md 3.3, 5.1, 5.5), declared independently ----

struct Rec6 {
  uint64_t context_id;
  uint64_t thread_id;
  uint64_t internal;
  uint64_t external;
  int32_t kind;
  int32_t operation;
  int32_t phase;
  void* payload;
};
static_assert(sizeof(Rec6) == 56, "6.x record");
static_assert(offsetof(Rec6, kind) == 32 && offsetof(Rec6, payload) == 48, "6.x record");

struct Rec7 {
  uint64_t context_id;
  uint64_t thread_id;
  uint64_t internal;
  uint64_t external;
  uint64_t ancestor;
  int32_t kind;
  int32_t operation;
  int32_t phase;
  void* payload;
};
static_assert(sizeof(Rec7) == 64, "7.x record");
static_assert(offsetof(Rec7, kind) == 40 && offsetof(Rec7, payload) == 56, "7.x record");

struct ToolResult {
  size_t size;
  int (*initialize)(void (*fini)(), void* tool_data);
  void (*finalize)(void* tool_data);
  void* tool_data;
};
static_assert(sizeof(ToolResult) == 32, "tool_configure_result");

struct ClientId6 {
  const char* name;
  uint32_t handle;
};
struct ClientId7 {
  size_t size;
  const char* name;
  uint32_t handle;
};

constexpr int kEnter = 1, kExit = 2;
constexpr int kMarkerCore = 7, kMarkerControl = 8, kMarkerName = 9, kCodeObject = 10,
              kMarkerRange = 21;

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

uint32_t EnvVersion() {
  const std::string v = Env("FAKE_ROCPROFILER_VERSION");
  return v.empty() ? 10000 : static_cast<uint32_t>(std::stoul(v));
}
bool Is7() { return EnvVersion() >= 10000; }
int Locked() { return EnvVersion() < 500 ? 15 : 16; }
int AlreadyConfigured() { return EnvVersion() < 500 ? 14 : 15; }
int InvalidArgument() { return EnvVersion() < 500 ? 18 : 19; }
uint64_t NoneHandle() { return EnvVersion() > 10000 ? 0 : UINT64_MAX; }
std::string Mode() {
  const std::string m = Env("EXPECT_MODE");
  return m.empty() ? "normal" : m;
}

uint64_t Gettid() { return static_cast<uint64_t>(syscall(SYS_gettid)); }

// ---- what the callbacks saw ----

struct Seen {
  uint64_t context_id = 0, thread_id = 0, internal = 0, external = 0, ancestor = 0;
  int kind = 0, op = 0, phase = 0;
  unsigned char payload[32] = {};
  bool has_payload = false;
  std::string message;  // copied from payload @8 for message-carrying operations
  uint64_t* user_data = nullptr;
  uint64_t user_data_at_entry = 0;
  void* cb_data = nullptr;
};

std::mutex g_seen_mutex;
std::vector<Seen> g_seen;
int g_cb_data_tag = 0;
int g_raw_tag = 0;  // cb_data of the CODE_OBJECT subscription, which gets raw records only

bool CarriesMessage(int kind, int op) {
  return (kind == kMarkerCore && (op == 0 || op == 1 || op == 3)) || kind == kMarkerName ||
         (kind == kMarkerRange && op <= 2);
}

void Observe(Seen s, void* payload, bool deref_payload) {
  if (deref_payload && payload != nullptr) {
    std::memcpy(s.payload, payload, sizeof(s.payload));
    s.has_payload = true;
    if (CarriesMessage(s.kind, s.op)) {
      const char* msg = nullptr;
      std::memcpy(&msg, s.payload + 8, sizeof(msg));
      s.message = msg ? msg : "<null>";
    }
  }
  if (s.user_data != nullptr) {
    s.user_data_at_entry = *s.user_data;
    // ENTER leaves a mark that the matching EXIT must see again.
    if (s.phase == kEnter) *s.user_data = 0x5EED000000000000ull | s.internal;
  }
  std::lock_guard<std::mutex> lock(g_seen_mutex);
  g_seen.push_back(s);
}

void Cb6(Rec6 r, uint64_t* user_data, void* cb_data) {
  Seen s;
  s.context_id = r.context_id, s.thread_id = r.thread_id, s.internal = r.internal;
  s.external = r.external, s.kind = r.kind, s.op = r.operation, s.phase = r.phase;
  s.user_data = user_data, s.cb_data = cb_data;
  Observe(s, r.payload, cb_data != &g_raw_tag);
}

void Cb7(Rec7 r, uint64_t* user_data, void* cb_data) {
  Seen s;
  s.context_id = r.context_id, s.thread_id = r.thread_id, s.internal = r.internal;
  s.external = r.external, s.ancestor = r.ancestor, s.kind = r.kind, s.op = r.operation;
  s.phase = r.phase, s.user_data = user_data, s.cb_data = cb_data;
  Observe(s, r.payload, cb_data != &g_raw_tag);
}

void* Callback() { return Is7() ? reinterpret_cast<void*>(&Cb7) : reinterpret_cast<void*>(&Cb6); }

std::vector<Seen> TakeSeen() {
  std::lock_guard<std::mutex> lock(g_seen_mutex);
  std::vector<Seen> out;
  out.swap(g_seen);
  return out;
}

template <typename T>
T At(const unsigned char* p, size_t off) {
  T v;
  std::memcpy(&v, p + off, sizeof(v));
  return v;
}

// ---- kernel tracing: the spec's buffer and code-object layouts (5.2-5.4, 5.6), declared
// independently of the fake ----

struct Hdr {
  uint32_t category;
  uint32_t kind;
  void* payload;
};
static_assert(sizeof(Hdr) == 16 && offsetof(Hdr, kind) == 4 && offsetof(Hdr, payload) == 8,
              "record header");

constexpr size_t kKdRecordSize = 184;  // rocprofiler_buffer_tracing_kernel_dispatch_record_t
// Field offsets of the kernel dispatch buffer record (5.4), dispatch_info (5.3) at 56.
constexpr size_t kKdSize = 0, kKdKind = 8, kKdOp = 12, kKdInternal = 16, kKdExternal = 24,
                 kKdThread = 32, kKdStart = 40, kKdEnd = 48, kKdInfo = 56, kKdInfoSize = 56,
                 kKdAgent = 64, kKdQueue = 72, kKdKernel = 80, kKdDispatchId = 88,
                 kKdPrivSeg = 96, kKdGroupSeg = 100, kKdWorkgroup = 104, kKdGrid = 116,
                 kKdPadding = 128;
static_assert(kKdPadding + 56 == kKdRecordSize, "184 = 56 + 128-byte dispatch_info");
static_assert(kKdInfo + 8 == kKdAgent && kKdInfo + 24 == kKdKernel && kKdInfo + 60 == kKdGrid,
              "dispatch_info offsets");

constexpr int kBufKernelDispatch = 11, kOpComplete = 2, kCategoryTracing = 1;
constexpr int kPolicyNone = 0, kPolicyDiscard = 1, kPolicyLossless = 2;
constexpr int kCoLoad = 1, kCoKernelSymbol = 2, kPhaseLoad = 1, kPhaseUnload = 2;
constexpr unsigned char kPoison = 0xA5;

// rocprofiler_buffer_tracing_hip_api_record_t (HIP_RUNTIME_API, buffer kind 5): its
// correlation_id is the full rocprofiler_correlation_id_t (5.1), so 7.0's ancestor field moves
// start/end/thread_id back by 8 bytes.
constexpr int kBufHipRuntimeApi = 5;
constexpr size_t kHipSize = 0, kHipKind = 8, kHipOp = 12, kHipInternal = 16, kHipExternal = 24,
                 kHipAncestor7 = 32;
size_t HipRecordSize() { return EnvVersion() >= 10000 ? 64 : 56; }
size_t HipStart() { return EnvVersion() >= 10000 ? 40 : 32; }
size_t HipEnd() { return HipStart() + 8; }
size_t HipThread() { return HipStart() + 16; }
static_assert(kHipAncestor7 + 8 == 40, "7.x: start right after the 24-byte correlation id");

// The fake's HIP runtime operations in its table order, and its documented numbering
// (fake_sdk_hooks.h): 6.x 10 + 3*i; 7.x 100 + 7*(19 - i), then 300 + 7*(i - 20). The last
// exists in 7.x only.
const char* const kHipNames[] = {
    "hipGetDevice",          "hipSetDevice",          "hipMalloc",
    "hipFree",               "hipMemcpy",             "hipMemcpyAsync",
    "hipMemsetAsync",        "hipStreamSynchronize",  "hipDeviceSynchronize",
    "hipEventRecord",        "hipGetLastError",       "hipLaunchKernel",
    "hipModuleLaunchKernel", "hipExtModuleLaunchKernel", "hipExtLaunchKernel",
    "hipLaunchCooperativeKernel", "hipGraphLaunch",   "hipLaunchKernel_spt",
    "hipGraphLaunch_spt",    "hipHccModuleLaunchKernel", "hipStreamWriteValue32",
    "hipStreamWriteValue64", "hipStreamWaitValue32",  "hipStreamWaitValue64",
    "hipStreamBatchMemOp",
};
constexpr int kHipTableSize = sizeof(kHipNames) / sizeof(kHipNames[0]);
int32_t HipId6(int i) { return 10 + 3 * i; }
int32_t HipId7(int i) { return i < 20 ? 100 + 7 * (19 - i) : 300 + 7 * (i - 20); }
int32_t ExpectedHipId(int i) { return EnvVersion() >= 10000 ? HipId7(i) : HipId6(i); }
// How many of kHipNames this version has (hipStreamBatchMemOp is 7.x's only).
int HipNameCount() { return EnvVersion() >= 10000 ? kHipTableSize : kHipTableSize - 1; }

// rocprofiler_buffer_tracing_memory_copy_record_t (MEMORY_COPY, buffer kind 10): the 16-byte
// async correlation id in every version; 7.0 appends dst_address and src_address.
constexpr int kBufMemoryCopy = 10;
constexpr size_t kMcSize = 0, kMcKind = 8, kMcOp = 12, kMcInternal = 16, kMcExternal = 24,
                 kMcThread = 32, kMcStart = 40, kMcEnd = 48, kMcDstAgent = 56, kMcSrcAgent = 64,
                 kMcBytes = 72, kMcDstAddress7 = 80, kMcSrcAddress7 = 88;
size_t McRecordSize() { return EnvVersion() >= 10000 ? 96 : 80; }
static_assert(kMcBytes + 8 == 80 && kMcSrcAddress7 + 8 == 96, "80 bytes in 6.x, 96 in 7.x");
// rocprofiler_memory_copy_operation_t
constexpr int kCopyNone = 0, kCopyHostToHost = 1, kCopyHostToDevice = 2, kCopyDeviceToHost = 3,
              kCopyDeviceToDevice = 4;

uint64_t BoottimeNow() {
  struct timespec t;
  clock_gettime(CLOCK_BOOTTIME, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_nsec);
}

int BufferNotFound() { return 3; }
int BufferBusy() { return EnvVersion() < 500 ? 13 : 14; }
// ROCPROFILER_BUFFER_TRACING_LAST (4.2): 15 in 6.2, 19 in ~6.3, 20 in ~6.4, 33 in 7.0.
int BufferKindLast() {
  const uint32_t v = EnvVersion();
  return v >= 10000 ? 33 : v >= 600 ? 20 : v >= 500 ? 19 : 15;
}

// What one buffer callback saw (copied inside the callback) and the pointers it was lent.
struct RecCopy {
  uint32_t category = 0, kind = 0;
  uint64_t hash = 0;                 // the header's union view at offset 0
  std::vector<unsigned char> bytes;  // the payload, as many bytes as its size field says (<=512)
  const unsigned char* ptr = nullptr;
};
struct Batch {
  uint64_t ctx = 0, buf = 0, drop = 0, tid = 0;
  size_t n = 0;
  std::vector<RecCopy> recs;
  const void* headers = nullptr;
  const void* first_header = nullptr;
  int flush_in_callback = -99;  // status of a flush made from inside the callback, if asked
};

std::mutex g_batch_mutex;
std::vector<Batch> g_batches;
int g_buffer_tag = 0;
int (*g_flush_fn)(uint64_t) = nullptr;
std::atomic<uint64_t> g_flush_inside{0};  // non-zero: the next callback flushes this buffer

void BufferCb(uint64_t ctx, uint64_t buf, Hdr** headers, size_t n, void* cb_data, uint64_t drop) {
  Batch b;
  b.ctx = ctx, b.buf = buf, b.n = n, b.drop = drop, b.tid = Gettid();
  b.headers = headers;
  b.first_header = n ? headers[0] : nullptr;
  for (size_t i = 0; i < n; ++i) {
    RecCopy r;
    r.category = headers[i]->category;
    r.kind = headers[i]->kind;
    std::memcpy(&r.hash, headers[i], sizeof(r.hash));
    r.ptr = static_cast<const unsigned char*>(headers[i]->payload);
    uint64_t size = 0;
    std::memcpy(&size, r.ptr, sizeof(size));
    r.bytes.assign(r.ptr, r.ptr + std::min<uint64_t>(size, 512));
    b.recs.push_back(std::move(r));
  }
  if (const uint64_t target = g_flush_inside.exchange(0)) {
    b.flush_in_callback = g_flush_fn(target);
  }
  if (cb_data != &g_buffer_tag) b.n = 9999;  // cb_data must come back unchanged
  std::lock_guard<std::mutex> lock(g_batch_mutex);
  g_batches.push_back(std::move(b));
}

std::vector<Batch> TakeBatches() {
  std::lock_guard<std::mutex> lock(g_batch_mutex);
  std::vector<Batch> out;
  out.swap(g_batches);
  return out;
}

// Waits (up to 5 s) until at least `records` records have been delivered in total.
std::vector<Batch> WaitRecords(size_t records) {
  for (int i = 0; i < 500; ++i) {
    {
      std::lock_guard<std::mutex> lock(g_batch_mutex);
      size_t total = 0;
      for (const auto& b : g_batches) total += b.n;
      if (total >= records) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return TakeBatches();
}

// What one CODE_OBJECT callback on the kernel context saw.
struct CoSeen {
  uint64_t context_id = 0, thread_id = 0, external = 0;
  int kind = 0, op = 0, phase = 0;
  unsigned char payload[88] = {};
  const char* name_ptr = nullptr;
  std::string name;
  uint64_t* user_data = nullptr;
  uint64_t user_data_at_entry = 0;
};
std::mutex g_co_mutex;
std::vector<CoSeen> g_co;
int g_co_tag = 0;

void ObserveCo(CoSeen s, const void* payload) {
  std::memcpy(s.payload, payload, sizeof(s.payload));
  if (s.op == kCoKernelSymbol) {
    std::memcpy(&s.name_ptr, s.payload + 24, sizeof(s.name_ptr));
    s.name = s.name_ptr ? s.name_ptr : "<null>";
  }
  s.user_data_at_entry = *s.user_data;
  if (s.phase == kPhaseLoad) *s.user_data = 0xC0DE000000000000ull | static_cast<uint64_t>(s.op);
  std::lock_guard<std::mutex> lock(g_co_mutex);
  g_co.push_back(s);
}
void CoCb6(Rec6 r, uint64_t* user_data, void*) {
  CoSeen s;
  s.context_id = r.context_id, s.thread_id = r.thread_id, s.external = r.external;
  s.kind = r.kind, s.op = r.operation, s.phase = r.phase, s.user_data = user_data;
  ObserveCo(s, r.payload);
}
void CoCb7(Rec7 r, uint64_t* user_data, void*) {
  CoSeen s;
  s.context_id = r.context_id, s.thread_id = r.thread_id, s.external = r.external;
  s.kind = r.kind, s.op = r.operation, s.phase = r.phase, s.user_data = user_data;
  ObserveCo(s, r.payload);
}
void* CoCallback() {
  return Is7() ? reinterpret_cast<void*>(&CoCb7) : reinterpret_cast<void*>(&CoCb6);
}
std::vector<CoSeen> TakeCo() {
  std::lock_guard<std::mutex> lock(g_co_mutex);
  std::vector<CoSeen> out;
  out.swap(g_co);
  return out;
}

// ---- the fake SDK's entry points ----

struct Api {
  int (*get_version)(uint32_t*, uint32_t*, uint32_t*) = nullptr;
  int (*get_version_triplet)(uint32_t*) = nullptr;
  int (*is_initialized)(int*) = nullptr;
  int (*is_finalized)(int*) = nullptr;
  int (*force_configure)(ToolResult* (*)(uint32_t, const char*, uint32_t, void*)) = nullptr;
  int (*create_context)(uint64_t*) = nullptr;
  int (*configure_callback)(uint64_t, int, const int32_t*, size_t, void*, void*) = nullptr;
  int (*start_context)(uint64_t) = nullptr;
  int (*stop_context)(uint64_t) = nullptr;
  int (*context_is_active)(uint64_t, int*) = nullptr;
  int (*context_is_valid)(uint64_t, int*) = nullptr;
  int (*get_timestamp)(uint64_t*) = nullptr;
  int (*get_thread_id)(uint64_t*) = nullptr;
  const char* (*status_name)(int) = nullptr;
  const char* (*status_string)(int) = nullptr;
  void* configure_symbol = nullptr;  // must stay null: rocprofiler_configure is not exported
  // probes
  int (*marker)(int, int, int, const char*, uint64_t, int64_t) = nullptr;
  int (*marker_raw)(int, const void*, size_t) = nullptr;
  int (*context_active)() = nullptr;
  int (*configured_kinds)(int*, int) = nullptr;
  int (*client_id_corrupted)() = nullptr;
  int (*configure_calls)() = nullptr;
  int (*initialize_calls)() = nullptr;
  int (*tool_finalize_calls)() = nullptr;
  int (*client_finalize_calls)() = nullptr;
  void (*client_name)(char*, size_t) = nullptr;
  void (*finalize)() = nullptr;
  // kernel tracing (rocprofiler_abi.md 3.6, 3.8) and its hooks (fake_sdk_hooks.h)
  int (*create_buffer)(uint64_t, size_t, size_t, int, void*, void*, uint64_t*) = nullptr;
  int (*configure_buffer)(uint64_t, int, const int32_t*, size_t, uint64_t) = nullptr;
  int (*flush_buffer)(uint64_t) = nullptr;
  int (*destroy_buffer)(uint64_t) = nullptr;
  int (*push_ext)(uint64_t, uint64_t, uint64_t) = nullptr;
  int (*pop_ext)(uint64_t, uint64_t, uint64_t*) = nullptr;
  int (*load_kernel_symbol)(uint64_t, const char*, uint64_t) = nullptr;
  int (*unload_code_object)(uint64_t) = nullptr;
  void (*set_strict_names)(int) = nullptr;
  int (*dispatch_kernel)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t) = nullptr;
  int (*dispatch_raw)(const void*, size_t) = nullptr;
  void (*set_delivery_order)(int) = nullptr;
  uint64_t (*buffer_flushes)() = nullptr;
  uint64_t (*records_delivered)() = nullptr;
  uint64_t (*records_discarded)() = nullptr;
  int (*ext_stack_depth)(uint64_t, uint64_t) = nullptr;
  uint64_t (*ext_stack_top)(uint64_t, uint64_t) = nullptr;
  void (*set_next_drop_count)(uint64_t) = nullptr;
  uint64_t (*delivery_thread_id)() = nullptr;
  // HIP_RUNTIME_API buffer tracing: the SDK's operation lookup and the fake's launch hooks
  int (*iterate_ops)(int, int (*)(int, int32_t, void*), void*) = nullptr;
  int (*query_op_name)(int, int32_t, const char**, uint64_t*) = nullptr;
  int (*dispatch_kernel_ex)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, int) = nullptr;
  uint64_t (*hip_api_call)(const char*, uint64_t, uint64_t, uint64_t) = nullptr;
  uint64_t (*hip_api_records)() = nullptr;
  // MEMORY_COPY buffer tracing and HIP graph launches (fake_sdk_hooks.h)
  int (*memory_copy)(int, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, int) = nullptr;
  int (*graph_launch)(const uint64_t*, const uint64_t*, const uint64_t*, int, uint64_t,
                      uint64_t) = nullptr;
};

struct Roctx {
  int (*RangePushA)(const char*) = nullptr;
  int (*RangePop)() = nullptr;
  void (*MarkA)(const char*) = nullptr;
  uint64_t (*RangeStartA)(const char*) = nullptr;
  void (*RangeStop)(uint64_t) = nullptr;
  int (*GetThreadId)(uint64_t*) = nullptr;
  int (*ProfilerPause)(uint64_t) = nullptr;
  int (*ProfilerResume)(uint64_t) = nullptr;
  int (*NameHipDevice)(const char*, int) = nullptr;
  int (*NameHipStream)(const char*, const void*) = nullptr;
  int (*sdk_state)() = nullptr;
};

template <typename T>
void Bind(void* handle, const char* name, T* out) {
  *out = reinterpret_cast<T>(dlsym(handle, name));
}

// Everything the one configure sequence produced, recorded as it happened.
struct World {
  bool loaded = false;
  std::string error;
  Api api;
  Roctx roctx, legacy;
  int early_roctx_state = -99;

  int pre_is_init = -99;
  int pre_create_status = -99;
  uint64_t pre_create_handle = 0;
  int pre_configure_status = -99;

  int configure_seen = 0;
  uint32_t configure_version = 0;
  std::string runtime_version;
  uint32_t priority = 99;
  unsigned char client_id_at_entry[24] = {};

  int initialize_seen = 0;
  void (*fini)() = nullptr;
  void* tool_data_at_init = nullptr;
  int init_is_init = -99;
  int create_status = -99;
  uint64_t ctx = 0;
  int cfg_core = -99, cfg_control = -99, cfg_name = -99, cfg_code_object = -99;
  int cfg_core_again = -99, cfg_range = -99, cfg_none = -99, cfg_kind99 = -99;
  int cfg_bad_ctx = -99, cfg_bad_op = -99;
  int create_nonzero_status = -99;
  uint64_t create_nonzero_out = 0;
  int nested_force = -99;
  int start_status = -99;

  int force_status = -99;
  int post_is_init = -99;
  int post_create_status = -99;
  int post_configure_status = -99;
  int second_force = -99;

  // kernel tracing setup, inside initialize (contexts created but not started)
  uint64_t kctx = 0, dctx = 0, nctx = 0, lctx = 0, yctx = 0;  // kernel/discard/none/lossless/destroy
  uint64_t kbuf = 0, dbuf = 0, nbuf = 0, lbuf = 0, ybuf = 0;
  int kernel_setup = -99;  // first failing status of the setup sequence, 0 if all succeeded
  int buf_bad_ctx = -99, buf_null_out = -99, buf_null_cb = -99, buf_bad_policy = -99;
  int cfgbuf_unknown_buffer = -99, cfgbuf_again = -99, cfgbuf_kind0 = -99, cfgbuf_kind_last = -99;
  int cfgbuf_bad_ctx = -99, cfgbuf_bad_op = -99, cfgbuf_other_kind = -99;
  // HIP_RUNTIME_API setup: hctx traces KERNEL_DISPATCH and HIP_RUNTIME_API into one buffer;
  // fctx dispatches into fkbuf and only hipModuleLaunchKernel/hipMalloc API calls into fhbuf
  // (looked up by name, as a consumer must); actx traces HIP_RUNTIME_API only.
  uint64_t hctx = 0, fctx = 0, actx = 0, hbuf = 0, fkbuf = 0, fhbuf = 0, abuf = 0;
  int hip_setup = -99;  // first failing status, 0 if all succeeded
  int32_t module_launch_id = -1, malloc_id = -1;
  // MEMORY_COPY setup: mctx traces MEMORY_COPY and HIP_RUNTIME_API (no filters) into mbuf;
  // mfctx traces only HOST_TO_DEVICE and DEVICE_TO_DEVICE copies into mfbuf.
  uint64_t mctx = 0, mfctx = 0, mbuf = 0, mfbuf = 0;
  int mem_setup = -99;  // first failing status, 0 if all succeeded
  int pre_create_buffer = -99, pre_configure_buffer = -99;
  int post_create_buffer = -99, post_configure_buffer = -99;
};

World g_world;
int g_tool_data = 0;

// Every (operation, name) of a buffer tracing kind, through the SDK's iterate + query, as a
// consumer must map names to ids.
std::vector<std::pair<int32_t, std::string>> KindOperations(const Api& a, int kind,
                                                            int* status = nullptr) {
  std::vector<int32_t> ops;
  const int st = a.iterate_ops(
      kind,
      [](int, int32_t op, void* data) {
        static_cast<std::vector<int32_t>*>(data)->push_back(op);
        return 0;
      },
      &ops);
  if (status != nullptr) *status = st;
  std::vector<std::pair<int32_t, std::string>> out;
  for (int32_t op : ops) {
    const char* name = nullptr;
    uint64_t len = 0;
    const int q = a.query_op_name(kind, op, &name, &len);
    out.emplace_back(op, q == 0 && name != nullptr ? std::string(name, len)
                                                   : "<query " + std::to_string(q) + ">");
  }
  return out;
}

int32_t OpByName(const Api& a, int kind, const std::string& name) {
  for (const auto& [op, n] : KindOperations(a, kind)) {
    if (n == name) return op;
  }
  return -1;
}
int g_tool_finalize_seen = 0;
void* g_tool_finalize_data = nullptr;

int ToolInitialize(void (*fini)(), void* tool_data) {
  World& w = g_world;
  const Api& a = w.api;
  ++w.initialize_seen;
  w.fini = fini;
  w.tool_data_at_init = tool_data;
  a.is_initialized(&w.init_is_init);

  uint64_t ctx = 0;
  w.create_status = a.create_context(&ctx);
  w.ctx = ctx;
  void* cb = Callback();
  const int32_t resume_only[] = {1};
  w.cfg_core = a.configure_callback(ctx, kMarkerCore, nullptr, 0, cb, &g_cb_data_tag);
  w.cfg_control = a.configure_callback(ctx, kMarkerControl, resume_only, 1, cb, &g_cb_data_tag);
  w.cfg_name = a.configure_callback(ctx, kMarkerName, nullptr, 0, cb, &g_cb_data_tag);
  w.cfg_code_object = a.configure_callback(ctx, kCodeObject, nullptr, 0, cb, &g_raw_tag);
  w.cfg_range = a.configure_callback(ctx, kMarkerRange, nullptr, 0, cb, &g_cb_data_tag);
  w.cfg_core_again = a.configure_callback(ctx, kMarkerCore, nullptr, 0, cb, &g_cb_data_tag);
  w.cfg_none = a.configure_callback(ctx, 0, nullptr, 0, cb, &g_cb_data_tag);
  w.cfg_kind99 = a.configure_callback(ctx, 99, nullptr, 0, cb, &g_cb_data_tag);
  w.cfg_bad_ctx = a.configure_callback(ctx + 777, 11, nullptr, 0, cb, &g_cb_data_tag);
  const int32_t bad_op[] = {600};
  w.cfg_bad_op = a.configure_callback(ctx, 11, bad_op, 1, cb, &g_cb_data_tag);

  w.create_nonzero_out = 42;
  w.create_nonzero_status = a.create_context(&w.create_nonzero_out);

  w.nested_force = a.force_configure(nullptr);

  // Kernel tracing: one context per buffer policy (each kind once per context).
  const size_t kWatermark4 = 4 * kKdRecordSize, kBig = 1 << 20, kSize3 = 3 * kKdRecordSize;
  struct {
    uint64_t* ctx;
    uint64_t* buf;
    size_t size, watermark;
    int policy;
  } setups[] = {
      {&w.kctx, &w.kbuf, kBig, kWatermark4, kPolicyLossless},
      {&w.dctx, &w.dbuf, kSize3, kBig, kPolicyDiscard},
      {&w.nctx, &w.nbuf, kSize3, kBig, kPolicyNone},
      {&w.lctx, &w.lbuf, 2 * kKdRecordSize, kBig, kPolicyLossless},
      {&w.yctx, &w.ybuf, kBig, kBig, kPolicyLossless},
  };
  w.kernel_setup = 0;
  for (auto& su : setups) {
    int st = a.create_context(su.ctx);
    if (st == 0) {
      st = a.create_buffer(*su.ctx, su.size, su.watermark, su.policy,
                           reinterpret_cast<void*>(&BufferCb), &g_buffer_tag, su.buf);
    }
    if (st == 0) st = a.configure_buffer(*su.ctx, kBufKernelDispatch, nullptr, 0, *su.buf);
    if (st != 0 && w.kernel_setup == 0) w.kernel_setup = st;
  }
  const int st = a.configure_callback(w.kctx, kCodeObject, nullptr, 0, CoCallback(), &g_co_tag);
  if (st != 0 && w.kernel_setup == 0) w.kernel_setup = st;
  uint64_t scratch = 0;
  void* bcb = reinterpret_cast<void*>(&BufferCb);
  w.buf_bad_ctx = a.create_buffer(ctx + 777, kBig, kBig, kPolicyLossless, bcb, nullptr, &scratch);
  w.buf_null_out = a.create_buffer(ctx, kBig, kBig, kPolicyLossless, bcb, nullptr, nullptr);
  w.buf_null_cb = a.create_buffer(ctx, kBig, kBig, kPolicyLossless, nullptr, nullptr, &scratch);
  w.buf_bad_policy = a.create_buffer(ctx, kBig, kBig, 3, bcb, nullptr, &scratch);
  w.cfgbuf_unknown_buffer = a.configure_buffer(w.kctx, 7, nullptr, 0, w.kbuf + 999);
  w.cfgbuf_again = a.configure_buffer(w.kctx, kBufKernelDispatch, nullptr, 0, w.kbuf);
  w.cfgbuf_kind0 = a.configure_buffer(w.kctx, 0, nullptr, 0, w.kbuf);
  w.cfgbuf_kind_last = a.configure_buffer(w.kctx, BufferKindLast(), nullptr, 0, w.kbuf);
  w.cfgbuf_bad_ctx = a.configure_buffer(ctx + 777, kBufKernelDispatch, nullptr, 0, w.kbuf);
  const int32_t bad_buf_op[] = {-3};
  w.cfgbuf_bad_op = a.configure_buffer(w.yctx, 7, bad_buf_op, 1, w.ybuf);
  w.cfgbuf_other_kind = a.configure_buffer(w.yctx, 10 /* MEMORY_COPY */, nullptr, 0, w.ybuf);
  // HIP_RUNTIME_API (kind 5) next to KERNEL_DISPATCH.
  w.module_launch_id = OpByName(a, kBufHipRuntimeApi, "hipModuleLaunchKernel");
  w.malloc_id = OpByName(a, kBufHipRuntimeApi, "hipMalloc");
  const int32_t hip_filter[] = {w.module_launch_id, w.malloc_id};
  void* hcb = reinterpret_cast<void*>(&BufferCb);
  int hs = (w.module_launch_id < 0 || w.malloc_id < 0) ? -1 : 0;
  auto step = [&hs](int st) {
    if (hs == 0 && st != 0) hs = st;
    return hs == 0;
  };
  step(a.create_context(&w.hctx)) &&
      step(a.create_buffer(w.hctx, kBig, kBig, kPolicyLossless, hcb, &g_buffer_tag, &w.hbuf)) &&
      step(a.configure_buffer(w.hctx, kBufKernelDispatch, nullptr, 0, w.hbuf)) &&
      step(a.configure_buffer(w.hctx, kBufHipRuntimeApi, nullptr, 0, w.hbuf));
  step(a.create_context(&w.fctx)) &&
      step(a.create_buffer(w.fctx, kBig, kBig, kPolicyLossless, hcb, &g_buffer_tag, &w.fkbuf)) &&
      step(a.create_buffer(w.fctx, kBig, kBig, kPolicyLossless, hcb, &g_buffer_tag, &w.fhbuf)) &&
      step(a.configure_buffer(w.fctx, kBufKernelDispatch, nullptr, 0, w.fkbuf)) &&
      step(a.configure_buffer(w.fctx, kBufHipRuntimeApi, hip_filter, 2, w.fhbuf));
  step(a.create_context(&w.actx)) &&
      step(a.create_buffer(w.actx, kBig, kBig, kPolicyLossless, hcb, &g_buffer_tag, &w.abuf)) &&
      step(a.configure_buffer(w.actx, kBufHipRuntimeApi, nullptr, 0, w.abuf));
  w.hip_setup = hs;
  // MEMORY_COPY (kind 10) with and without an operation filter.
  int ms = 0;
  auto mstep = [&ms](int st) {
    if (ms == 0 && st != 0) ms = st;
    return ms == 0;
  };
  const int32_t copy_filter[] = {kCopyHostToDevice, kCopyDeviceToDevice};
  mstep(a.create_context(&w.mctx)) &&
      mstep(a.create_buffer(w.mctx, kBig, kBig, kPolicyLossless, hcb, &g_buffer_tag, &w.mbuf)) &&
      mstep(a.configure_buffer(w.mctx, kBufMemoryCopy, nullptr, 0, w.mbuf)) &&
      mstep(a.configure_buffer(w.mctx, kBufHipRuntimeApi, nullptr, 0, w.mbuf));
  mstep(a.create_context(&w.mfctx)) &&
      mstep(a.create_buffer(w.mfctx, kBig, kBig, kPolicyLossless, hcb, &g_buffer_tag, &w.mfbuf)) &&
      mstep(a.configure_buffer(w.mfctx, kBufMemoryCopy, copy_filter, 2, w.mfbuf));
  w.mem_setup = ms;
  w.start_status = a.start_context(ctx);
  return 0;
}

void ToolFinalize(void* tool_data) {
  ++g_tool_finalize_seen;
  g_tool_finalize_data = tool_data;
}

ToolResult g_result = {sizeof(ToolResult), &ToolInitialize, &ToolFinalize, &g_tool_data};

ToolResult* ToolConfigure(uint32_t version, const char* runtime_version, uint32_t priority,
                          void* client_id) {
  World& w = g_world;
  ++w.configure_seen;
  w.configure_version = version;
  w.runtime_version = runtime_version ? runtime_version : "<null>";
  w.priority = priority;
  std::memcpy(w.client_id_at_entry, client_id, version >= 10000 ? 24 : 16);
  // Name the client at the offset of the version's layout (rocprofiler_abi.md 3.3), or, in
  // wrong_client_id mode, like a tool built against the other version's header.
  const bool seven = (version >= 10000) != (Mode() == "wrong_client_id");
  if (seven) {
    static_cast<ClientId7*>(client_id)->name = "fake-sdk-test";
  } else {
    static_cast<ClientId6*>(client_id)->name = "fake-sdk-test";
  }
  return &g_result;
}

bool BindRoctx(const std::string& path, bool legacy, Roctx* r, std::string* error) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    *error = std::string("dlopen ") + path + ": " + dlerror();
    return false;
  }
  Bind(h, "roctxRangePushA", &r->RangePushA);
  Bind(h, "roctxRangePop", &r->RangePop);
  Bind(h, "roctxMarkA", &r->MarkA);
  Bind(h, "roctxRangeStartA", &r->RangeStartA);
  Bind(h, "roctxRangeStop", &r->RangeStop);
  Bind(h, "fake_roctx_sdk_state", &r->sdk_state);
  if (!legacy) {
    Bind(h, "roctxGetThreadId", &r->GetThreadId);
    Bind(h, "roctxProfilerPause", &r->ProfilerPause);
    Bind(h, "roctxProfilerResume", &r->ProfilerResume);
    Bind(h, "roctxNameHipDevice", &r->NameHipDevice);
    Bind(h, "roctxNameHipStream", &r->NameHipStream);
  }
  if (!r->RangePushA || !r->RangePop || !r->MarkA || !r->sdk_state) {
    *error = "missing roctx symbols in " + path;
    return false;
  }
  return true;
}

const World& W() {
  static const bool once = [] {
    World& w = g_world;
    Api& a = w.api;
    const std::string path = Env("FAKE_SDK_PATH");
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (h == nullptr) {
      w.error = std::string("dlopen ") + path + ": " + dlerror();
      return false;
    }
    Bind(h, "rocprofiler_get_version", &a.get_version);
    Bind(h, "rocprofiler_get_version_triplet", &a.get_version_triplet);
    Bind(h, "rocprofiler_is_initialized", &a.is_initialized);
    Bind(h, "rocprofiler_is_finalized", &a.is_finalized);
    Bind(h, "rocprofiler_force_configure", &a.force_configure);
    Bind(h, "rocprofiler_create_context", &a.create_context);
    Bind(h, "rocprofiler_configure_callback_tracing_service", &a.configure_callback);
    Bind(h, "rocprofiler_start_context", &a.start_context);
    Bind(h, "rocprofiler_stop_context", &a.stop_context);
    Bind(h, "rocprofiler_context_is_active", &a.context_is_active);
    Bind(h, "rocprofiler_context_is_valid", &a.context_is_valid);
    Bind(h, "rocprofiler_get_timestamp", &a.get_timestamp);
    Bind(h, "rocprofiler_get_thread_id", &a.get_thread_id);
    Bind(h, "rocprofiler_get_status_name", &a.status_name);
    Bind(h, "rocprofiler_get_status_string", &a.status_string);
    a.configure_symbol = dlsym(h, "rocprofiler_configure");
    Bind(h, "fake_sdk_marker", &a.marker);
    Bind(h, "fake_sdk_marker_raw", &a.marker_raw);
    Bind(h, "fake_sdk_context_active", &a.context_active);
    Bind(h, "fake_sdk_configured_kinds", &a.configured_kinds);
    Bind(h, "fake_sdk_client_id_corrupted", &a.client_id_corrupted);
    Bind(h, "fake_sdk_configure_calls", &a.configure_calls);
    Bind(h, "fake_sdk_initialize_calls", &a.initialize_calls);
    Bind(h, "fake_sdk_tool_finalize_calls", &a.tool_finalize_calls);
    Bind(h, "fake_sdk_client_finalize_calls", &a.client_finalize_calls);
    Bind(h, "fake_sdk_client_name", &a.client_name);
    Bind(h, "fake_sdk_finalize", &a.finalize);
    Bind(h, "rocprofiler_create_buffer", &a.create_buffer);
    Bind(h, "rocprofiler_configure_buffer_tracing_service", &a.configure_buffer);
    Bind(h, "rocprofiler_flush_buffer", &a.flush_buffer);
    Bind(h, "rocprofiler_destroy_buffer", &a.destroy_buffer);
    Bind(h, "rocprofiler_push_external_correlation_id", &a.push_ext);
    Bind(h, "rocprofiler_pop_external_correlation_id", &a.pop_ext);
    Bind(h, "fake_sdk_load_kernel_symbol", &a.load_kernel_symbol);
    Bind(h, "fake_sdk_unload_code_object", &a.unload_code_object);
    Bind(h, "fake_sdk_set_strict_symbol_names", &a.set_strict_names);
    Bind(h, "fake_sdk_dispatch_kernel", &a.dispatch_kernel);
    Bind(h, "fake_sdk_dispatch_raw", &a.dispatch_raw);
    Bind(h, "fake_sdk_set_delivery_order", &a.set_delivery_order);
    Bind(h, "fake_sdk_buffer_flushes", &a.buffer_flushes);
    Bind(h, "fake_sdk_records_delivered", &a.records_delivered);
    Bind(h, "fake_sdk_records_discarded", &a.records_discarded);
    Bind(h, "fake_sdk_ext_stack_depth", &a.ext_stack_depth);
    Bind(h, "fake_sdk_ext_stack_top", &a.ext_stack_top);
    Bind(h, "fake_sdk_set_next_drop_count", &a.set_next_drop_count);
    Bind(h, "fake_sdk_delivery_thread_id", &a.delivery_thread_id);
    Bind(h, "rocprofiler_iterate_buffer_tracing_kind_operations", &a.iterate_ops);
    Bind(h, "rocprofiler_query_buffer_tracing_kind_operation_name", &a.query_op_name);
    Bind(h, "fake_sdk_dispatch_kernel_ex", &a.dispatch_kernel_ex);
    Bind(h, "fake_sdk_hip_api_call", &a.hip_api_call);
    Bind(h, "fake_sdk_hip_api_records", &a.hip_api_records);
    Bind(h, "fake_sdk_memory_copy", &a.memory_copy);
    Bind(h, "fake_sdk_graph_launch", &a.graph_launch);
    if (a.memory_copy == nullptr || a.graph_launch == nullptr) {
      w.error = "fake_sdk_memory_copy or fake_sdk_graph_launch is missing";
      return false;
    }
    for (void* p : {(void*)a.iterate_ops, (void*)a.query_op_name, (void*)a.dispatch_kernel_ex,
                    (void*)a.hip_api_call, (void*)a.hip_api_records}) {
      if (p == nullptr) {
        w.error = "a HIP_RUNTIME_API symbol of the fake SDK is missing";
        return false;
      }
    }
    g_flush_fn = a.flush_buffer;
    for (void* p : {(void*)a.create_buffer, (void*)a.configure_buffer, (void*)a.flush_buffer,
                    (void*)a.destroy_buffer, (void*)a.push_ext, (void*)a.pop_ext,
                    (void*)a.load_kernel_symbol, (void*)a.unload_code_object,
                    (void*)a.set_strict_names, (void*)a.dispatch_kernel, (void*)a.dispatch_raw,
                    (void*)a.set_delivery_order, (void*)a.buffer_flushes,
                    (void*)a.records_delivered, (void*)a.records_discarded,
                    (void*)a.ext_stack_depth, (void*)a.ext_stack_top,
                    (void*)a.set_next_drop_count, (void*)a.delivery_thread_id}) {
      if (p == nullptr) {
        w.error = "a kernel-tracing symbol of the fake SDK is missing";
        return false;
      }
    }
    for (void* p :
         {(void*)a.get_version, (void*)a.get_version_triplet, (void*)a.is_initialized,
          (void*)a.is_finalized, (void*)a.force_configure, (void*)a.create_context,
          (void*)a.configure_callback, (void*)a.start_context, (void*)a.stop_context,
          (void*)a.context_is_active, (void*)a.context_is_valid, (void*)a.get_timestamp,
          (void*)a.get_thread_id, (void*)a.status_name, (void*)a.status_string, (void*)a.marker,
          (void*)a.marker_raw, (void*)a.context_active, (void*)a.configured_kinds,
          (void*)a.client_id_corrupted, (void*)a.configure_calls, (void*)a.initialize_calls,
          (void*)a.tool_finalize_calls, (void*)a.client_finalize_calls, (void*)a.client_name,
          (void*)a.finalize}) {
      if (p == nullptr) {
        w.error = "a fake SDK symbol is missing";
        return false;
      }
    }

    if (Mode() == "early_roctx") {  // a roctx call before the tool is configured
      if (!BindRoctx(Env("FAKE_ROCTX_PATH"), false, &w.roctx, &w.error)) return false;
      w.roctx.MarkA("too early");
      w.early_roctx_state = w.roctx.sdk_state();
    }

    // Before configuring: setup calls are locked.
    uint64_t late0 = 0;
    a.is_initialized(&w.pre_is_init);
    w.pre_create_handle = 0;
    w.pre_create_status = a.create_context(&w.pre_create_handle);
    w.pre_configure_status =
        a.configure_callback(1000, kMarkerCore, nullptr, 0, Callback(), nullptr);

    w.pre_create_buffer = a.create_buffer(1000, 1 << 20, 1 << 20, kPolicyLossless,
                                          reinterpret_cast<void*>(&BufferCb), nullptr, &late0);
    w.pre_configure_buffer = a.configure_buffer(1000, kBufKernelDispatch, nullptr, 0, 5000);
    w.force_status = a.force_configure(&ToolConfigure);
    w.post_create_buffer = a.create_buffer(w.ctx, 1 << 20, 1 << 20, kPolicyLossless,
                                           reinterpret_cast<void*>(&BufferCb), nullptr, &late0);
    w.post_configure_buffer = a.configure_buffer(w.kctx, 7, nullptr, 0, w.kbuf);

    a.is_initialized(&w.post_is_init);
    uint64_t late = 0;
    w.post_create_status = a.create_context(&late);
    w.post_configure_status =
        a.configure_callback(w.ctx, kMarkerName + 2, nullptr, 0, Callback(), nullptr);
    w.second_force = a.force_configure(&ToolConfigure);

    if (Mode() != "early_roctx") {
      if (!BindRoctx(Env("FAKE_ROCTX_PATH"), false, &w.roctx, &w.error)) return false;
    }
    if (!BindRoctx(Env("FAKE_ROCTX_LEGACY_PATH"), true, &w.legacy, &w.error)) return false;
    TakeSeen();  // nothing replayed yet; start clean
    return true;
  }();
  g_world.loaded = once;
  return g_world;
}

#define REQUIRE_WORLD()                    \
  const World& w = W();                    \
  ASSERT_TRUE(w.loaded) << w.error;        \
  const Api& a = w.api;                    \
  (void)a

#define REQUIRE_CONFIGURED()                                                     \
  REQUIRE_WORLD();                                                               \
  if (Mode() == "locked") GTEST_SKIP() << "the SDK is owned by someone else";    \
  ASSERT_EQ(w.force_status, 0)

// ---------------------------------------------------------------------------------------------

TEST(FakeSdk, ExportsTheApiButNotRocprofilerConfigure) {
  REQUIRE_WORLD();
  EXPECT_EQ(a.configure_symbol, nullptr);
  EXPECT_EQ(dlsym(RTLD_DEFAULT, "rocprofiler_configure"), nullptr);
}

TEST(FakeSdk, VersionFromEnvironment) {
  REQUIRE_WORLD();
  const uint32_t v = EnvVersion();
  uint32_t major = 99, minor = 99, patch = 99;
  EXPECT_EQ(a.get_version(&major, &minor, &patch), 0);
  EXPECT_EQ(major, v / 10000);
  EXPECT_EQ(minor, (v / 100) % 100);
  EXPECT_EQ(patch, v % 100);
  uint32_t triplet[3] = {99, 99, 99};
  if (Is7()) {
    EXPECT_EQ(a.get_version_triplet(triplet), 0);
    EXPECT_EQ(triplet[0], major);
    EXPECT_EQ(triplet[1], minor);
    EXPECT_EQ(triplet[2], patch);
  } else {
    EXPECT_NE(a.get_version_triplet(triplet), 0) << "no triplet before 7.0";
  }
}

TEST(FakeSdk, LockedByAnotherOwner) {
  REQUIRE_WORLD();
  if (Mode() != "locked") GTEST_SKIP() << "only with FAKE_ROCPROFILER_LOCKED=1";
  EXPECT_EQ(w.pre_is_init, 1);
  EXPECT_EQ(w.force_status, Locked());
  EXPECT_EQ(w.configure_seen, 0);
  EXPECT_EQ(a.configure_calls(), 0);
  EXPECT_EQ(a.initialize_calls(), 0);
  EXPECT_EQ(w.post_create_status, Locked());
  EXPECT_EQ(a.context_active(), 0);
}

TEST(FakeSdk, ConfigureArgumentsAndClientIdLayout) {
  REQUIRE_CONFIGURED();
  EXPECT_EQ(w.configure_seen, 1);
  EXPECT_EQ(a.configure_calls(), 1);
  EXPECT_EQ(w.configure_version, EnvVersion());
  EXPECT_EQ(w.runtime_version, "fake-rocprofiler-sdk");
  EXPECT_EQ(w.priority, 0u);
  const unsigned char* id = w.client_id_at_entry;
  if (Is7()) {
    EXPECT_EQ(At<uint64_t>(id, 0), 24u) << "7.x client_id.size";
    EXPECT_EQ(At<uint64_t>(id, 8), 0u) << "7.x client_id.name";
    EXPECT_EQ(At<uint32_t>(id, 16), 0u) << "7.x client_id.handle";
  } else {
    EXPECT_EQ(At<uint64_t>(id, 0), 0u) << "6.x client_id.name";
    EXPECT_EQ(At<uint32_t>(id, 8), 0u) << "6.x client_id.handle";
  }
  char name[64] = {};
  a.client_name(name, sizeof(name));
  if (Mode() == "wrong_client_id") {
    EXPECT_EQ(a.client_id_corrupted(), 1) << "name written at the other layout's offset";
    EXPECT_STREQ(name, "");
  } else {
    EXPECT_EQ(a.client_id_corrupted(), 0);
    EXPECT_STREQ(name, "fake-sdk-test");
  }
}

TEST(FakeSdk, InitializeRunsSynchronouslyWithInitStatusMinusOne) {
  REQUIRE_CONFIGURED();
  EXPECT_EQ(w.pre_is_init, 0);
  EXPECT_EQ(w.initialize_seen, 1);
  EXPECT_EQ(a.initialize_calls(), 1);
  EXPECT_EQ(w.init_is_init, -1);
  EXPECT_EQ(w.post_is_init, 1);
  EXPECT_EQ(w.tool_data_at_init, &g_tool_data);
  EXPECT_NE(w.fini, nullptr);
  EXPECT_EQ(w.create_status, 0);
  EXPECT_EQ(w.ctx, 1000u);
  EXPECT_EQ(w.start_status, 0);
  EXPECT_STREQ(getenv("ROCPROFILER_REGISTER_FORCE_LOAD"), "1");
}

TEST(FakeSdk, ConfigurationLockedCodePerVersion) {
  REQUIRE_CONFIGURED();
  EXPECT_EQ(w.second_force, Locked());
  EXPECT_EQ(w.nested_force, Locked()) << "force_configure from inside initialize";
  EXPECT_STREQ(a.status_name(Locked()), "ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED");
}

TEST(FakeSdk, SetupCallsOutsideInitializeAreRejected) {
  REQUIRE_CONFIGURED();
  EXPECT_EQ(w.pre_create_status, Locked());
  EXPECT_EQ(w.pre_create_handle, NoneHandle()) << "create_context writes NONE first";
  EXPECT_EQ(w.pre_configure_status, Locked());
  EXPECT_EQ(w.post_create_status, Locked());
  EXPECT_EQ(w.post_configure_status, Locked());
}

TEST(FakeSdk, ServiceStatusCodes) {
  REQUIRE_CONFIGURED();
  EXPECT_EQ(w.cfg_core, 0);
  EXPECT_EQ(w.cfg_control, 0);
  EXPECT_EQ(w.cfg_name, 0);
  EXPECT_EQ(w.cfg_code_object, 0);
  EXPECT_EQ(w.cfg_core_again, AlreadyConfigured());
  EXPECT_STREQ(a.status_name(AlreadyConfigured()),
               "ROCPROFILER_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED");
  EXPECT_EQ(w.cfg_none, 4) << "kind NONE";
  EXPECT_EQ(w.cfg_kind99, 4);
  EXPECT_EQ(w.cfg_bad_ctx, 2);
  EXPECT_EQ(w.cfg_bad_op, 5);
}

TEST(FakeSdk, ContextIdNotZeroOnlyFrom63) {
  REQUIRE_CONFIGURED();
  if (EnvVersion() >= 500) {
    EXPECT_EQ(w.create_nonzero_status, 13);
    EXPECT_EQ(w.create_nonzero_out, 42u) << "rejected before touching the id";
    EXPECT_STREQ(a.status_name(13), "ROCPROFILER_STATUS_ERROR_CONTEXT_ID_NOT_ZERO");
  } else {
    EXPECT_EQ(w.create_nonzero_status, 0) << "6.2 has no CONTEXT_ID_NOT_ZERO";
    EXPECT_EQ(w.create_nonzero_out, 1001u);
    EXPECT_STREQ(a.status_name(13), "ROCPROFILER_STATUS_ERROR_BUFFER_BUSY");
  }
}

TEST(FakeSdk, MarkerCoreRangeKindOnlyOn70) {
  REQUIRE_CONFIGURED();
  int kinds[8] = {};
  const int n = a.configured_kinds(kinds, 8);
  if (Is7()) {
    EXPECT_EQ(w.cfg_range, 0);
    ASSERT_EQ(n, 5);
    EXPECT_EQ(kinds[4], kMarkerRange);
  } else {
    EXPECT_EQ(w.cfg_range, 4);
    ASSERT_EQ(n, 4);
  }
  EXPECT_EQ(kinds[0], kMarkerCore);
  EXPECT_EQ(kinds[1], kMarkerControl);
  EXPECT_EQ(kinds[2], kMarkerName);
  EXPECT_EQ(kinds[3], kCodeObject);
}

TEST(FakeSdk, StatusNamesAndStrings) {
  REQUIRE_WORLD();
  EXPECT_STREQ(a.status_name(0), "ROCPROFILER_STATUS_SUCCESS");
  EXPECT_STREQ(a.status_name(2), "ROCPROFILER_STATUS_ERROR_CONTEXT_NOT_FOUND");
  EXPECT_STREQ(a.status_name(4), "ROCPROFILER_STATUS_ERROR_KIND_NOT_FOUND");
  EXPECT_STREQ(a.status_name(InvalidArgument()), "ROCPROFILER_STATUS_ERROR_INVALID_ARGUMENT");
  EXPECT_STREQ(a.status_string(0), "Success");
  EXPECT_NE(a.status_string(Locked()), nullptr);
  EXPECT_EQ(a.status_name(-1), nullptr);
  EXPECT_EQ(a.status_name(999), nullptr);
  EXPECT_EQ(a.status_string(999), nullptr);
  if (EnvVersion() < 500) {
    EXPECT_STREQ(a.status_name(37), "ROCPROFILER_STATUS_ERROR_EXCEEDS_HW_LIMIT");
    EXPECT_EQ(a.status_name(38), nullptr);
  } else {
    EXPECT_STREQ(a.status_name(40), "ROCPROFILER_STATUS_ERROR_PERMISSION_DENIED");
  }
}

TEST(FakeSdk, RecordLayoutAndPayloadOffsets) {
  REQUIRE_CONFIGURED();
  TakeSeen();
  const char* msg = "push-msg";
  EXPECT_EQ(a.marker(kMarkerCore, 1, kEnter, msg, 0, 0), 1);
  EXPECT_EQ(a.marker(kMarkerCore, 1, kExit, msg, 0, 3), 1);
  const auto seen = TakeSeen();
  ASSERT_EQ(seen.size(), 2u);
  for (const Seen& s : seen) {
    EXPECT_EQ(s.context_id, w.ctx);
    EXPECT_EQ(s.thread_id, Gettid());
    EXPECT_EQ(s.external, 0u);
    EXPECT_EQ(s.ancestor, 0u);
    EXPECT_EQ(s.kind, kMarkerCore);
    EXPECT_EQ(s.op, 1);
    EXPECT_EQ(s.cb_data, &g_cb_data_tag);
    ASSERT_TRUE(s.has_payload);
    EXPECT_EQ(At<uint64_t>(s.payload, 0), 32u) << "payload size";
    EXPECT_EQ(At<const char*>(s.payload, 8), msg) << "message @8 is the caller's pointer";
    EXPECT_EQ(s.message, "push-msg");
  }
  EXPECT_EQ(seen[0].phase, kEnter);
  EXPECT_EQ(seen[1].phase, kExit);
  EXPECT_EQ(At<int32_t>(seen[0].payload, 24), 0) << "retval zero at ENTER";
  EXPECT_EQ(At<int32_t>(seen[1].payload, 24), 3) << "int32 retval @24 at EXIT";
}

TEST(FakeSdk, PayloadPerOperation) {
  REQUIRE_CONFIGURED();
  TakeSeen();
  int stream_obj = 0;
  a.marker(kMarkerCore, 3, kExit, "start", 0, int64_t{1} << 40);  // RangeStartA -> u64 id
  a.marker(kMarkerCore, 4, kExit, nullptr, 77, 0);                 // RangeStop(id)
  a.marker(kMarkerCore, 2, kExit, nullptr, 0, -1);                 // RangePop underflow
  a.marker(kMarkerCore, 0, kExit, "mark", 0, 5);                   // MarkA: void
  a.marker(kMarkerName, 2, kExit, "gpu0", 3, 0);                   // NameHipDevice
  a.marker(kMarkerName, 3, kExit, "s", reinterpret_cast<uintptr_t>(&stream_obj), 0);
  EXPECT_EQ(a.marker(kMarkerControl, 0, kExit, nullptr, 9, 0), 0) << "Pause filtered out";
  EXPECT_EQ(a.marker(kMarkerControl, 1, kExit, nullptr, 9, 0), 1) << "Resume subscribed";
  const auto s = TakeSeen();
  ASSERT_EQ(s.size(), 7u);
  EXPECT_EQ(s[0].message, "start");
  EXPECT_EQ(At<uint64_t>(s[0].payload, 24), uint64_t{1} << 40);
  EXPECT_EQ(At<uint64_t>(s[1].payload, 8), 77u);
  EXPECT_EQ(At<uint64_t>(s[1].payload, 24), 0u);
  EXPECT_EQ(At<uint64_t>(s[2].payload, 24), 0x00000000FFFFFFFFull) << "int32 -1 in a u64 union";
  EXPECT_EQ(s[3].message, "mark");
  EXPECT_EQ(At<uint64_t>(s[3].payload, 24), 0u) << "void retval zeroed";
  EXPECT_EQ(s[4].message, "gpu0");
  EXPECT_EQ(At<int32_t>(s[4].payload, 16), 3);
  EXPECT_EQ(s[5].message, "s");
  EXPECT_EQ(At<const void*>(s[5].payload, 16), &stream_obj);
  EXPECT_EQ(s[6].kind, kMarkerControl);
  EXPECT_EQ(s[6].op, 1);
  EXPECT_EQ(At<uint64_t>(s[6].payload, 8), 9u);
}

TEST(FakeSdk, EnterExitShareCorrelationAndUserData) {
  REQUIRE_CONFIGURED();
  TakeSeen();
  a.marker(kMarkerCore, 1, kEnter, "outer", 0, 0);
  a.marker(kMarkerCore, 0, kEnter, "inner", 0, 0);
  a.marker(kMarkerCore, 0, kExit, "inner", 0, 0);
  a.marker(kMarkerCore, 1, kExit, "outer", 0, 0);
  a.marker(kMarkerCore, 1, kEnter, "next", 0, 0);
  a.marker(kMarkerCore, 1, kExit, "next", 0, 0);
  const auto s = TakeSeen();
  ASSERT_EQ(s.size(), 6u);
  EXPECT_EQ(s[0].internal, s[3].internal);
  EXPECT_EQ(s[1].internal, s[2].internal);
  EXPECT_EQ(s[4].internal, s[5].internal);
  EXPECT_NE(s[0].internal, s[1].internal);
  EXPECT_NE(s[0].internal, s[4].internal);
  EXPECT_NE(s[0].internal, 0u);
  for (int enter : {0, 1, 4}) {
    const int exit = enter == 0 ? 3 : enter == 1 ? 2 : 5;
    EXPECT_EQ(s[enter].user_data_at_entry, 0u) << "fresh slot at ENTER";
    EXPECT_EQ(s[exit].user_data, s[enter].user_data) << "same slot at EXIT";
    EXPECT_EQ(s[exit].user_data_at_entry, 0x5EED000000000000ull | s[enter].internal);
  }
}

TEST(FakeSdk, CorrelationIsPerThread) {
  REQUIRE_CONFIGURED();
  TakeSeen();
  uint64_t other_tid = 0;
  a.marker(kMarkerCore, 1, kEnter, "main", 0, 0);
  std::thread t([&] {
    other_tid = Gettid();
    a.marker(kMarkerCore, 1, kEnter, "worker", 0, 0);
    a.marker(kMarkerCore, 1, kExit, "worker", 0, 0);
  });
  t.join();
  a.marker(kMarkerCore, 1, kExit, "main", 0, 0);
  const auto s = TakeSeen();
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[1].thread_id, other_tid);
  EXPECT_EQ(s[1].internal, s[2].internal);
  EXPECT_EQ(s[0].internal, s[3].internal) << "the worker's pair does not disturb main's";
  EXPECT_NE(s[0].internal, s[1].internal);
  EXPECT_EQ(s[3].thread_id, Gettid());
  uint64_t tid = 0;
  EXPECT_EQ(a.get_thread_id(&tid), 0);
  EXPECT_EQ(tid, Gettid());
}

TEST(FakeSdk, StartStopGatesDelivery) {
  REQUIRE_CONFIGURED();
  TakeSeen();
  int active = -1, valid = -1;
  EXPECT_EQ(a.context_is_active(w.ctx, &active), 0);
  EXPECT_EQ(active, 1);
  EXPECT_EQ(a.context_is_valid(w.ctx, &valid), 0);
  EXPECT_EQ(valid, 1);
  EXPECT_EQ(a.context_is_active(w.ctx + 777, &active), 2);
  EXPECT_EQ(active, 0);

  EXPECT_EQ(a.stop_context(w.ctx), 0);
  EXPECT_EQ(a.context_is_active(w.ctx, &active), 0);
  EXPECT_EQ(active, 0);
  EXPECT_EQ(a.context_active(), 0);
  EXPECT_EQ(a.marker(kMarkerCore, 0, kEnter, "stopped", 0, 0), 0);
  EXPECT_EQ(a.marker(kMarkerCore, 0, kExit, "stopped", 0, 0), 0);
  EXPECT_TRUE(TakeSeen().empty());

  EXPECT_EQ(a.start_context(w.ctx), 0);
  EXPECT_EQ(a.context_active(), 1);
  EXPECT_EQ(a.marker(kMarkerCore, 0, kEnter, "started", 0, 0), 1);
  EXPECT_EQ(a.marker(kMarkerCore, 0, kExit, "started", 0, 0), 1);
  EXPECT_EQ(TakeSeen().size(), 2u);
  EXPECT_EQ(a.start_context(w.ctx + 777), 2);
  EXPECT_EQ(a.marker(5 /* HIP_RUNTIME_API, not subscribed */, 0, 0, nullptr, 0, 0), 0);
}

TEST(FakeSdk, RawRecordsPassThroughByValue) {
  REQUIRE_CONFIGURED();
  TakeSeen();
  unsigned char bytes[64];
  for (size_t i = 0; i < sizeof(bytes); ++i) bytes[i] = static_cast<unsigned char>(0xC0 + i);
  const size_t size = Is7() ? 64 : 56;
  const size_t kind_off = Is7() ? 40 : 32;
  const int32_t kind = 12345, op = -7, phase = 3;
  std::memcpy(bytes + kind_off, &kind, 4);
  std::memcpy(bytes + kind_off + 4, &op, 4);
  std::memcpy(bytes + kind_off + 8, &phase, 4);
  EXPECT_EQ(a.marker_raw(kCodeObject, bytes, size + 8), 0) << "wrong size: dropped";
  EXPECT_EQ(a.marker_raw(kCodeObject, bytes, Is7() ? 56 : 64), 0) << "other layout: dropped";
  EXPECT_EQ(a.marker_raw(kCodeObject, bytes, size), 1);
  const auto s = TakeSeen();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].context_id, At<uint64_t>(bytes, 0));
  EXPECT_EQ(s[0].thread_id, At<uint64_t>(bytes, 8));
  EXPECT_EQ(s[0].internal, At<uint64_t>(bytes, 16));
  EXPECT_EQ(s[0].external, At<uint64_t>(bytes, 24));
  if (Is7()) {
    EXPECT_EQ(s[0].ancestor, At<uint64_t>(bytes, 32));
  }
  EXPECT_EQ(s[0].kind, kind);
  EXPECT_EQ(s[0].op, op);
  EXPECT_EQ(s[0].phase, phase);
  EXPECT_EQ(s[0].user_data_at_entry, 0u);
  EXPECT_EQ(s[0].cb_data, &g_raw_tag);
}

TEST(FakeSdk, RoctxForwardsThroughTheSdk) {
  REQUIRE_CONFIGURED();
  const Roctx& r = w.roctx;
  ASSERT_NE(r.RangePushA, nullptr);
  TakeSeen();
  if (Mode() == "early_roctx") {
    // The first roctx call came before force_configure: no tool was indicated then, and roctx
    // never re-registers, so nothing reaches the tool afterwards either.
    EXPECT_EQ(w.early_roctx_state, 0);
    EXPECT_EQ(r.sdk_state(), 0);
    r.RangePushA("late");
    r.RangePop();
    EXPECT_TRUE(TakeSeen().empty());
    return;
  }
  EXPECT_EQ(r.sdk_state(), -1) << "no roctx call yet";
  const int level = r.RangePushA("fwd");
  EXPECT_EQ(r.sdk_state(), 1);
  EXPECT_EQ(r.RangePop(), level);
  const uint64_t id = r.RangeStartA("range");
  r.RangeStop(id);
  uint64_t tid = 0;
  EXPECT_EQ(r.GetThreadId(&tid), 0);
  EXPECT_EQ(r.NameHipDevice("dev", 2), 0);
  EXPECT_EQ(r.ProfilerPause(0), 0);   // filtered: kind 8 subscribed for Resume only
  EXPECT_EQ(r.ProfilerResume(0), 0);
  const auto s = TakeSeen();
  ASSERT_EQ(s.size(), 14u);
  struct Want {
    int kind, op;
  } want[] = {{7, 1}, {7, 2}, {7, 3}, {7, 4}, {7, 5}, {9, 2}, {8, 1}};
  for (size_t i = 0; i < 7; ++i) {
    const Seen& enter = s[2 * i];
    const Seen& exit = s[2 * i + 1];
    EXPECT_EQ(enter.kind, want[i].kind) << i;
    EXPECT_EQ(enter.op, want[i].op) << i;
    EXPECT_EQ(enter.phase, kEnter) << i;
    EXPECT_EQ(exit.kind, want[i].kind) << i;
    EXPECT_EQ(exit.op, want[i].op) << i;
    EXPECT_EQ(exit.phase, kExit) << i;
    EXPECT_EQ(enter.internal, exit.internal) << i;
    EXPECT_EQ(enter.thread_id, Gettid()) << i;
  }
  EXPECT_EQ(s[0].message, "fwd");
  EXPECT_EQ(At<int32_t>(s[1].payload, 24), level);
  EXPECT_EQ(At<int32_t>(s[3].payload, 24), level) << "Pop's retval";
  EXPECT_EQ(s[4].message, "range");
  EXPECT_EQ(At<uint64_t>(s[5].payload, 24), id);
  EXPECT_EQ(At<uint64_t>(s[6].payload, 8), id) << "RangeStop's id";
  EXPECT_EQ(At<uint64_t*>(s[8].payload, 8), &tid) << "GetThreadId's u64* tid";
  EXPECT_EQ(s[10].message, "dev");
  EXPECT_EQ(At<int32_t>(s[11].payload, 16), 2);
}

TEST(FakeSdk, LegacyRoctxNeverForwards) {
  REQUIRE_CONFIGURED();
  const Roctx& l = w.legacy;
  TakeSeen();
  l.RangePushA("legacy");
  l.RangePop();
  l.MarkA("legacy");
  EXPECT_TRUE(TakeSeen().empty());
  EXPECT_EQ(l.sdk_state(), -1);
}

TEST(FakeSdk, TimestampsAreClockBoottime) {
  REQUIRE_WORLD();
  struct timespec t0, t1;
  clock_gettime(CLOCK_BOOTTIME, &t0);
  uint64_t ts = 0;
  EXPECT_EQ(a.get_timestamp(&ts), 0);
  clock_gettime(CLOCK_BOOTTIME, &t1);
  const uint64_t lo = t0.tv_sec * 1000000000ull + t0.tv_nsec;
  const uint64_t hi = t1.tv_sec * 1000000000ull + t1.tv_nsec;
  EXPECT_GE(ts, lo);
  EXPECT_LE(ts, hi);
}

// ---- kernel tracing: buffers, dispatch records, code objects, external correlation ----

// Starts a context for one test and stops it again however the test ends.
struct Started {
  const Api& a;
  uint64_t ctx;
  Started(const Api& api, uint64_t c) : a(api), ctx(c) { EXPECT_EQ(a.start_context(ctx), 0); }
  ~Started() { a.stop_context(ctx); }
};

#define REQUIRE_KERNEL_SETUP()  \
  REQUIRE_CONFIGURED();         \
  ASSERT_EQ(w.kernel_setup, 0); \
  TakeBatches();                \
  TakeCo()

uint64_t U64(const RecCopy& r, size_t off) { return At<uint64_t>(r.bytes.data(), off); }

TEST(FakeSdkKernels, BufferSetupStatusCodes) {
  REQUIRE_CONFIGURED();
  EXPECT_EQ(w.kernel_setup, 0);
  for (uint64_t b : {w.kbuf, w.dbuf, w.nbuf, w.lbuf, w.ybuf}) EXPECT_NE(b, 0u);
  EXPECT_NE(w.kbuf, w.dbuf);
  EXPECT_EQ(w.buf_bad_ctx, 2) << "CONTEXT_NOT_FOUND";
  EXPECT_EQ(w.buf_null_out, InvalidArgument());
  EXPECT_EQ(w.buf_null_cb, InvalidArgument());
  EXPECT_EQ(w.buf_bad_policy, InvalidArgument());
  EXPECT_EQ(w.cfgbuf_unknown_buffer, BufferNotFound());
  EXPECT_STREQ(a.status_name(BufferNotFound()), "ROCPROFILER_STATUS_ERROR_BUFFER_NOT_FOUND");
  EXPECT_EQ(w.cfgbuf_again, AlreadyConfigured());
  EXPECT_EQ(w.cfgbuf_kind0, 4);
  EXPECT_EQ(w.cfgbuf_kind_last, 4) << "LAST is not a kind";
  EXPECT_EQ(w.cfgbuf_bad_ctx, 2);
  EXPECT_EQ(w.cfgbuf_bad_op, 5);
  EXPECT_EQ(w.cfgbuf_other_kind, 0) << "other buffer kinds configure (and stay silent)";
  EXPECT_EQ(w.pre_create_buffer, Locked());
  EXPECT_EQ(w.pre_configure_buffer, Locked());
  EXPECT_EQ(w.post_create_buffer, Locked());
  EXPECT_EQ(w.post_configure_buffer, Locked());
  int active = -1;
  EXPECT_EQ(a.context_is_active(w.kctx, &active), 0);
  EXPECT_EQ(active, 0) << "kernel contexts are started per test";
}

TEST(FakeSdkKernels, DispatchRecordLayout) {
  REQUIRE_KERNEL_SETUP();
  Started k(a, w.kctx);
  EXPECT_EQ(a.dispatch_kernel(77, 1000, 2500, 3, 4), 1);
  EXPECT_EQ(a.dispatch_kernel(78, 3000, 3100, 3, 4), 1);
  ASSERT_EQ(a.flush_buffer(w.kbuf), 0);
  const auto batches = TakeBatches();
  ASSERT_EQ(batches.size(), 1u);
  const Batch& b = batches[0];
  EXPECT_EQ(b.ctx, w.kctx);
  EXPECT_EQ(b.buf, w.kbuf);
  EXPECT_EQ(b.drop, 0u);
  ASSERT_EQ(b.n, 2u);
  for (const RecCopy& r : b.recs) {
    EXPECT_EQ(r.category, 1u) << "TRACING";
    EXPECT_EQ(r.kind, 11u) << "KERNEL_DISPATCH";
    ASSERT_EQ(r.bytes.size(), kKdRecordSize);
    EXPECT_EQ(U64(r, kKdSize), 184u);
    EXPECT_EQ(At<int32_t>(r.bytes.data(), kKdKind), kBufKernelDispatch);
    EXPECT_EQ(At<int32_t>(r.bytes.data(), kKdOp), kOpComplete);
    EXPECT_NE(U64(r, kKdInternal), 0u);
    EXPECT_EQ(U64(r, kKdExternal), 0u) << "nothing pushed";
    EXPECT_EQ(U64(r, kKdThread), Gettid());
    EXPECT_EQ(U64(r, kKdInfoSize), 72u) << "dispatch_info.size = offset of reserved_padding";
    EXPECT_EQ(U64(r, kKdAgent), 3u);
    EXPECT_EQ(U64(r, kKdQueue), 4u);
    EXPECT_EQ(At<uint32_t>(r.bytes.data(), kKdPrivSeg), 0u);
    EXPECT_EQ(At<uint32_t>(r.bytes.data(), kKdGroupSeg), 0u);
    EXPECT_EQ(At<uint32_t>(r.bytes.data(), kKdWorkgroup), 256u);
    EXPECT_EQ(At<uint32_t>(r.bytes.data(), kKdWorkgroup + 4), 1u);
    EXPECT_EQ(At<uint32_t>(r.bytes.data(), kKdGrid), 65536u);
    EXPECT_EQ(At<uint32_t>(r.bytes.data(), kKdGrid + 8), 1u);
    for (size_t i = kKdPadding; i < kKdRecordSize; ++i) EXPECT_EQ(r.bytes[i], 0) << i;
  }
  EXPECT_EQ(U64(b.recs[0], kKdKernel), 77u);
  EXPECT_EQ(U64(b.recs[0], kKdStart), 1000u);
  EXPECT_EQ(U64(b.recs[0], kKdEnd), 2500u);
  EXPECT_EQ(U64(b.recs[1], kKdKernel), 78u);
  EXPECT_EQ(U64(b.recs[1], kKdDispatchId), U64(b.recs[0], kKdDispatchId) + 1);
  EXPECT_NE(U64(b.recs[1], kKdInternal), U64(b.recs[0], kKdInternal));
  EXPECT_EQ(b.recs[0].hash, 1u | (uint64_t{11} << 32)) << "hash = category | kind << 32";
}

TEST(FakeSdkKernels, FlushIsSynchronousOnTheSdkThread) {
  REQUIRE_KERNEL_SETUP();
  Started k(a, w.kctx);
  const uint64_t flushes = a.buffer_flushes(), delivered = a.records_delivered();
  EXPECT_EQ(a.dispatch_kernel(1, 10, 20, 1, 1), 1);
  EXPECT_EQ(a.dispatch_kernel(2, 30, 40, 1, 1), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(TakeBatches().empty()) << "below the watermark: nothing without a flush";
  ASSERT_EQ(a.flush_buffer(w.kbuf), 0);
  const auto batches = TakeBatches();  // no waiting: the callback already returned
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0].n, 2u);
  EXPECT_NE(batches[0].tid, Gettid()) << "buffer callbacks run on an SDK-internal thread";
  EXPECT_EQ(batches[0].tid, a.delivery_thread_id());
  EXPECT_EQ(a.buffer_flushes(), flushes + 1);
  EXPECT_EQ(a.records_delivered(), delivered + 2);
  ASSERT_EQ(a.flush_buffer(w.kbuf), 0);
  EXPECT_TRUE(TakeBatches().empty()) << "an empty flush makes no callback";
  EXPECT_EQ(a.flush_buffer(w.kbuf + 999), BufferNotFound());
}

TEST(FakeSdkKernels, WatermarkBatchesOnTheSdkThread) {
  REQUIRE_KERNEL_SETUP();
  Started k(a, w.kctx);
  uint64_t worker_tid = 0;
  std::thread t([&] {
    worker_tid = Gettid();
    for (int i = 0; i < 4; ++i) a.dispatch_kernel(100 + i, 10, 20, 1, 1);  // 4 x 184 = watermark
  });
  t.join();
  const auto batches = WaitRecords(4);
  ASSERT_EQ(batches.size(), 1u) << "the watermark delivers without a flush";
  EXPECT_EQ(batches[0].n, 4u);
  EXPECT_NE(batches[0].tid, Gettid());
  EXPECT_NE(batches[0].tid, worker_tid);
  EXPECT_EQ(U64(batches[0].recs[0], kKdThread), worker_tid) << "thread_id = the enqueuing thread";
  for (int i = 0; i < 3; ++i) a.dispatch_kernel(200 + i, 10, 20, 1, 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(TakeBatches().empty()) << "3 records stay below the watermark";
  ASSERT_EQ(a.flush_buffer(w.kbuf), 0);
  const auto rest = TakeBatches();
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].n, 3u);
}

TEST(FakeSdkKernels, RecordMemoryIsPoisonedAfterTheCallback) {
  REQUIRE_KERNEL_SETUP();
  Started k(a, w.kctx);
  a.dispatch_kernel(5, 10, 20, 1, 1);
  ASSERT_EQ(a.flush_buffer(w.kbuf), 0);
  const auto batches = TakeBatches();
  ASSERT_EQ(batches.size(), 1u);
  ASSERT_EQ(batches[0].recs.size(), 1u);
  EXPECT_EQ(U64(batches[0].recs[0], kKdKernel), 5u) << "intact inside the callback";
  // The fake keeps delivered blocks mapped (quarantine) precisely so this read is defined.
  const unsigned char* payload = batches[0].recs[0].ptr;
  const unsigned char* header = static_cast<const unsigned char*>(batches[0].first_header);
  const unsigned char* array = static_cast<const unsigned char*>(batches[0].headers);
  for (size_t i = 0; i < kKdRecordSize; ++i) ASSERT_EQ(payload[i], kPoison) << i;
  for (size_t i = 0; i < sizeof(Hdr); ++i) ASSERT_EQ(header[i], kPoison) << i;
  for (size_t i = 0; i < sizeof(void*); ++i) ASSERT_EQ(array[i], kPoison) << i;
}

TEST(FakeSdkKernels, ReversedDeliveryOrder) {
  REQUIRE_KERNEL_SETUP();
  Started k(a, w.kctx);
  a.set_delivery_order(1);
  for (uint64_t i = 0; i < 3; ++i) a.dispatch_kernel(300 + i, 1000 * (i + 1), 1000 * (i + 1) + 5, 1, 1);
  ASSERT_EQ(a.flush_buffer(w.kbuf), 0);
  a.set_delivery_order(0);
  auto batches = TakeBatches();
  ASSERT_EQ(batches.size(), 1u);
  ASSERT_EQ(batches[0].n, 3u);
  EXPECT_EQ(U64(batches[0].recs[0], kKdKernel), 302u);
  EXPECT_EQ(U64(batches[0].recs[1], kKdKernel), 301u);
  EXPECT_EQ(U64(batches[0].recs[2], kKdKernel), 300u);
  EXPECT_GT(U64(batches[0].recs[0], kKdStart), U64(batches[0].recs[2], kKdStart));
  for (uint64_t i = 0; i < 2; ++i) a.dispatch_kernel(400 + i, 10, 20, 1, 1);
  ASSERT_EQ(a.flush_buffer(w.kbuf), 0);
  batches = TakeBatches();
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(U64(batches[0].recs[0], kKdKernel), 400u) << "order restored";
}

TEST(FakeSdkKernels, StoppedContextGetsNothingButKeepsPendingRecords) {
  REQUIRE_KERNEL_SETUP();
  EXPECT_EQ(a.dispatch_kernel(1, 10, 20, 1, 1), 0) << "no kernel context started";
  {
    Started k(a, w.kctx);
    Started d(a, w.dctx);
    EXPECT_EQ(a.dispatch_kernel(600, 10, 20, 1, 1), 2) << "two started contexts, two buffers";
    EXPECT_EQ(a.stop_context(w.dctx), 0);
    EXPECT_EQ(a.dispatch_kernel(601, 10, 20, 1, 1), 1) << "the stopped one gets nothing";
    EXPECT_EQ(a.stop_context(w.kctx), 0);
    EXPECT_EQ(a.dispatch_kernel(602, 10, 20, 1, 1), 0);
  }
  ASSERT_EQ(a.flush_buffer(w.kbuf), 0);
  ASSERT_EQ(a.flush_buffer(w.dbuf), 0);
  const auto batches = TakeBatches();
  ASSERT_EQ(batches.size(), 2u) << "pending records are delivered after the context stopped";
  EXPECT_EQ(batches[0].buf, w.kbuf);
  ASSERT_EQ(batches[0].n, 2u);
  EXPECT_EQ(U64(batches[0].recs[0], kKdKernel), 600u);
  EXPECT_EQ(U64(batches[0].recs[1], kKdKernel), 601u);
  EXPECT_EQ(batches[1].buf, w.dbuf);
  EXPECT_EQ(batches[1].ctx, w.dctx);
  ASSERT_EQ(batches[1].n, 1u);
  EXPECT_EQ(U64(batches[1].recs[0], kKdKernel), 600u);
  EXPECT_EQ(U64(batches[1].recs[0], kKdInternal), U64(batches[0].recs[0], kKdInternal))
      << "one enqueue, one correlation id in every context";
}

TEST(FakeSdkKernels, DiscardAndNoneDropOverSizeLosslessNever) {
  REQUIRE_KERNEL_SETUP();
  for (uint64_t ctx : {w.dctx, w.nctx}) {
    const uint64_t buf = ctx == w.dctx ? w.dbuf : w.nbuf;
    Started s(a, ctx);
    int went = 0;
    for (int i = 0; i < 5; ++i) went += a.dispatch_kernel(700 + i, 10, 20, 1, 1);
    EXPECT_EQ(went, 3) << "size_bytes holds 3 records; the rest are dropped";
    ASSERT_EQ(a.flush_buffer(buf), 0);
    auto batches = TakeBatches();
    ASSERT_EQ(batches.size(), 1u);
    EXPECT_EQ(batches[0].n, 3u);
    EXPECT_EQ(batches[0].drop, 2u);
    EXPECT_EQ(U64(batches[0].recs[2], kKdKernel), 702u) << "the newest are the ones dropped";
    a.dispatch_kernel(710, 10, 20, 1, 1);
    ASSERT_EQ(a.flush_buffer(buf), 0);
    batches = TakeBatches();
    ASSERT_EQ(batches.size(), 1u);
    EXPECT_EQ(batches[0].drop, 0u) << "drop_count is per batch";
  }
  Started l(a, w.lctx);
  int went = 0;
  for (int i = 0; i < 5; ++i) went += a.dispatch_kernel(800 + i, 10, 20, 1, 1);
  EXPECT_EQ(went, 5);
  ASSERT_EQ(a.flush_buffer(w.lbuf), 0);
  const auto batches = TakeBatches();
  size_t total = 0;
  std::vector<uint64_t> kernels;
  for (const auto& b : batches) {
    total += b.n;
    EXPECT_EQ(b.drop, 0u);
    EXPECT_LE(b.n, 2u) << "a half holds 2 records";
    for (const auto& r : b.recs) kernels.push_back(U64(r, kKdKernel));
  }
  EXPECT_EQ(total, 5u) << "LOSSLESS never drops";
  EXPECT_GE(batches.size(), 3u);
  EXPECT_EQ(kernels, (std::vector<uint64_t>{800, 801, 802, 803, 804}));
}

TEST(FakeSdkKernels, NextDropCountIsReportedOnce) {
  REQUIRE_KERNEL_SETUP();
  a.set_next_drop_count(7);
  ASSERT_EQ(a.flush_buffer(w.kbuf), 0);
  auto batches = TakeBatches();
  ASSERT_EQ(batches.size(), 1u) << "drops alone make a callback";
  EXPECT_EQ(batches[0].n, 0u);
  EXPECT_EQ(batches[0].drop, 7u);
  ASSERT_EQ(a.flush_buffer(w.kbuf), 0);
  EXPECT_TRUE(TakeBatches().empty());
}

TEST(FakeSdkKernels, FlushInsideTheCallbackIsBusy) {
  REQUIRE_KERNEL_SETUP();
  Started k(a, w.kctx);
  a.dispatch_kernel(9, 10, 20, 1, 1);
  g_flush_inside.store(w.kbuf);
  ASSERT_EQ(a.flush_buffer(w.kbuf), 0);
  const auto batches = TakeBatches();
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0].flush_in_callback, BufferBusy());
}

TEST(FakeSdkKernels, RawRecordsOfAnySize) {
  REQUIRE_KERNEL_SETUP();
  Started k(a, w.kctx);
  unsigned char small[100], large[256];
  for (size_t i = 0; i < sizeof(small); ++i) small[i] = static_cast<unsigned char>(i);
  for (size_t i = 0; i < sizeof(large); ++i) large[i] = static_cast<unsigned char>(255 - i);
  uint64_t sz = sizeof(small);
  std::memcpy(small, &sz, 8);
  sz = sizeof(large);
  std::memcpy(large, &sz, 8);
  EXPECT_EQ(a.dispatch_raw(nullptr, 100), 0);
  EXPECT_EQ(a.dispatch_raw(small, 0), 0);
  EXPECT_EQ(a.dispatch_raw(small, sizeof(small)), 1);
  EXPECT_EQ(a.dispatch_raw(large, sizeof(large)), 1);
  ASSERT_EQ(a.flush_buffer(w.kbuf), 0);
  const auto batches = TakeBatches();
  ASSERT_EQ(batches.size(), 1u);
  ASSERT_EQ(batches[0].n, 2u);
  EXPECT_EQ(batches[0].recs[0].kind, 11u);
  EXPECT_EQ(batches[0].recs[0].bytes, std::vector<unsigned char>(small, small + sizeof(small)));
  EXPECT_EQ(batches[0].recs[1].bytes, std::vector<unsigned char>(large, large + sizeof(large)));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(batches[0].recs[1].ptr) % 8, 0u) << "payloads aligned";
}

TEST(FakeSdkKernels, DestroyDiscardsPendingAndForgetsTheId) {
  REQUIRE_KERNEL_SETUP();
  Started y(a, w.yctx);
  const uint64_t discarded = a.records_discarded();
  EXPECT_EQ(a.dispatch_kernel(1, 10, 20, 1, 1), 1);
  EXPECT_EQ(a.dispatch_kernel(2, 10, 20, 1, 1), 1);
  EXPECT_EQ(a.destroy_buffer(w.ybuf), 0);
  EXPECT_EQ(a.records_discarded(), discarded + 2);
  EXPECT_EQ(a.flush_buffer(w.ybuf), BufferNotFound());
  EXPECT_EQ(a.destroy_buffer(w.ybuf), BufferNotFound());
  EXPECT_EQ(a.dispatch_kernel(3, 10, 20, 1, 1), 0) << "the service's buffer is gone";
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(TakeBatches().empty());
}

TEST(FakeSdkKernels, ExternalCorrelationStacks) {
  REQUIRE_KERNEL_SETUP();
  const uint64_t me = Gettid();
  EXPECT_EQ(a.ext_stack_depth(w.kctx, me), 0);
  EXPECT_EQ(a.push_ext(w.kctx, me, 11), 0);
  EXPECT_EQ(a.push_ext(w.kctx, me, 22), 0);
  EXPECT_EQ(a.ext_stack_depth(w.kctx, me), 2);
  EXPECT_EQ(a.ext_stack_top(w.kctx, me), 22u);
  EXPECT_EQ(a.ext_stack_depth(w.dctx, me), 0) << "one stack per context";
  uint64_t other_tid = 0;
  std::thread t([&] {
    other_tid = Gettid();
    EXPECT_EQ(a.push_ext(w.kctx, other_tid, 33), 0);
  });
  t.join();
  EXPECT_EQ(a.ext_stack_depth(w.kctx, other_tid), 1) << "one stack per thread";
  EXPECT_EQ(a.ext_stack_depth(w.kctx, me), 2);
  uint64_t out = 0;
  EXPECT_EQ(a.pop_ext(w.kctx, me, &out), 0);
  EXPECT_EQ(out, 22u) << "LIFO";
  EXPECT_EQ(a.pop_ext(w.kctx, me, nullptr), 0) << "out is nullable";
  EXPECT_EQ(a.ext_stack_depth(w.kctx, me), 0);
  out = 99;
  EXPECT_EQ(a.pop_ext(w.kctx, me, &out), 1) << "empty stack: ERROR";
  EXPECT_EQ(out, 99u);
  EXPECT_EQ(a.pop_ext(w.nctx, me, &out), 1) << "never pushed: ERROR";
  EXPECT_EQ(a.pop_ext(w.kctx, other_tid, &out), 0);
  EXPECT_EQ(out, 33u);
  const uint64_t pid = static_cast<uint64_t>(getpid());
  EXPECT_EQ(a.push_ext(w.kctx, pid - 1, 1), InvalidArgument()) << "tid < getpid()";
  EXPECT_EQ(a.push_ext(w.kctx, 0, 1), InvalidArgument());
  EXPECT_EQ(a.pop_ext(w.kctx, 0, &out), InvalidArgument());
  EXPECT_EQ(a.push_ext(w.kctx + 777, me, 1), 2) << "CONTEXT_NOT_FOUND";
  EXPECT_EQ(a.pop_ext(w.kctx + 777, me, &out), 2);
  EXPECT_EQ(a.ext_stack_depth(w.kctx + 777, me), -1);
  EXPECT_EQ(pid, me) << "this test runs on the main thread, whose tid is the pid";
}

TEST(FakeSdkKernels, DispatchTakesTheStackTopAtEnqueue) {
  REQUIRE_KERNEL_SETUP();
  Started k(a, w.kctx);
  const uint64_t me = Gettid();
  a.dispatch_kernel(1, 10, 20, 1, 1);
  ASSERT_EQ(a.push_ext(w.kctx, me, 0xA), 0);
  a.dispatch_kernel(2, 10, 20, 1, 1);
  ASSERT_EQ(a.push_ext(w.kctx, me, 0xB), 0);
  a.dispatch_kernel(3, 10, 20, 1, 1);
  ASSERT_EQ(a.pop_ext(w.kctx, me, nullptr), 0);
  a.dispatch_kernel(4, 10, 20, 1, 1);
  ASSERT_EQ(a.pop_ext(w.kctx, me, nullptr), 0);
  a.dispatch_kernel(5, 10, 20, 1, 1);
  ASSERT_EQ(a.flush_buffer(w.kbuf), 0);
  std::vector<uint64_t> ext;
  for (const auto& b : WaitRecords(5)) {
    for (const auto& r : b.recs) ext.push_back(U64(r, kKdExternal));
  }
  EXPECT_EQ(ext, (std::vector<uint64_t>{0, 0xA, 0xB, 0xA, 0}));
}

TEST(FakeSdkKernels, ThreadsWithoutAStackInheritTheDefaultThread) {
  REQUIRE_KERNEL_SETUP();
  Started k(a, w.kctx);
  // The default thread is the one that called force_configure: this (main) thread, in W().
  const uint64_t me = Gettid();
  ASSERT_EQ(a.push_ext(w.kctx, me, 500), 0);
  uint64_t fresh_tid = 0, emptied_tid = 0, own_tid = 0;
  uint64_t fresh_top = 1, emptied_top = 1, other_ctx_top = 1;
  std::thread fresh([&] {
    fresh_tid = Gettid();
    fresh_top = a.ext_stack_top(w.kctx, fresh_tid);
    other_ctx_top = a.ext_stack_top(w.dctx, fresh_tid);
    a.dispatch_kernel(1, 10, 20, 1, 1);
  });
  fresh.join();
  std::thread emptied([&] {
    emptied_tid = Gettid();
    a.push_ext(w.kctx, emptied_tid, 600);
    a.pop_ext(w.kctx, emptied_tid, nullptr);
    emptied_top = a.ext_stack_top(w.kctx, emptied_tid);
    a.dispatch_kernel(2, 10, 20, 1, 1);
  });
  emptied.join();
  std::thread own([&] {
    own_tid = Gettid();
    a.push_ext(w.kctx, own_tid, 700);
    a.dispatch_kernel(3, 10, 20, 1, 1);
    a.pop_ext(w.kctx, own_tid, nullptr);
  });
  own.join();
  a.dispatch_kernel(4, 10, 20, 1, 1);
  ASSERT_EQ(a.pop_ext(w.kctx, me, nullptr), 0);
  ASSERT_EQ(a.flush_buffer(w.kbuf), 0);
  EXPECT_EQ(fresh_top, 500u);
  // external_correlation.cpp: the default data is one value for the SDK, whatever the context,
  // and an empty stack reads it too.
  EXPECT_EQ(other_ctx_top, 500u) << "the default thread's latest value, from any context";
  EXPECT_EQ(emptied_top, 500u) << "an emptied stack reads the default thread's value too";
  EXPECT_EQ(a.ext_stack_depth(w.kctx, fresh_tid), 0);
  std::vector<std::pair<uint64_t, uint64_t>> got;  // (thread, external)
  for (const auto& b : WaitRecords(4)) {
    for (const auto& r : b.recs) got.emplace_back(U64(r, kKdThread), U64(r, kKdExternal));
  }
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0], std::make_pair(fresh_tid, uint64_t{500}));
  EXPECT_EQ(got[1], std::make_pair(emptied_tid, uint64_t{500}));
  EXPECT_EQ(got[2], std::make_pair(own_tid, uint64_t{700}));
  EXPECT_EQ(got[3], std::make_pair(me, uint64_t{500}));
  uint64_t after_pop = 1;
  std::thread late([&] { after_pop = a.ext_stack_top(w.kctx, Gettid()); });
  late.join();
  EXPECT_EQ(after_pop, 0u) << "the default thread popped its last value";
}

TEST(FakeSdkKernels, CallbackRecordsCarryTheExternalId) {
  REQUIRE_CONFIGURED();
  TakeSeen();
  ASSERT_EQ(a.push_ext(w.ctx, Gettid(), 0xE7), 0);
  EXPECT_EQ(a.marker(kMarkerCore, 0, 0, "ext", 0, 0), 1);
  ASSERT_EQ(a.pop_ext(w.ctx, Gettid(), nullptr), 0);
  EXPECT_EQ(a.marker(kMarkerCore, 0, 0, "ext", 0, 0), 1);
  const auto s = TakeSeen();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].external, 0xE7u);
  EXPECT_EQ(s[1].external, 0u);
}

TEST(FakeSdkKernels, CodeObjectLoadSymbolsAndUnload) {
  REQUIRE_KERNEL_SETUP();
  Started k(a, w.kctx);
  const uint64_t sym_size = EnvVersion() >= 600 ? 88 : 72;
  // w.ctx (started, CODE_OBJECT subscribed with raw records) counts too: 2 contexts.
  EXPECT_EQ(a.load_kernel_symbol(900, "_Z4axpyPfS_", 42), 2);
  EXPECT_EQ(a.load_kernel_symbol(901, "_Z5scalePf", 42), 2);
  auto co = TakeCo();
  ASSERT_EQ(co.size(), 3u) << "code object LOAD once, then one record per symbol";
  EXPECT_EQ(co[0].kind, kCodeObject);
  EXPECT_EQ(co[0].op, kCoLoad);
  EXPECT_EQ(co[0].phase, kPhaseLoad);
  EXPECT_EQ(co[0].context_id, w.kctx);
  EXPECT_EQ(co[0].thread_id, Gettid());
  EXPECT_EQ(At<uint64_t>(co[0].payload, 0), 88u) << "load data size";
  EXPECT_EQ(At<uint64_t>(co[0].payload, 8), 42u) << "code_object_id @8";
  EXPECT_NE(At<const char*>(co[0].payload, 32), nullptr) << "uri @32";
  for (int i : {1, 2}) {
    EXPECT_EQ(co[i].kind, kCodeObject);
    EXPECT_EQ(co[i].op, kCoKernelSymbol);
    EXPECT_EQ(co[i].phase, kPhaseLoad);
    EXPECT_EQ(At<uint64_t>(co[i].payload, 0), sym_size) << "symbol payload size by version";
    EXPECT_EQ(At<uint64_t>(co[i].payload, 16), 42u) << "code_object_id @16";
    EXPECT_EQ(co[i].user_data_at_entry, 0u);
    if (sym_size == 72) {
      for (size_t b = 72; b < 88; ++b) EXPECT_EQ(co[i].payload[b], kPoison) << "past size";
    } else {
      EXPECT_EQ(At<int64_t>(co[i].payload, 72), 256) << "kernel_code_entry_byte_offset @72";
      EXPECT_EQ(At<uint64_t>(co[i].payload, 80), At<uint64_t>(co[i].payload, 32) + 256);
    }
  }
  EXPECT_EQ(At<uint64_t>(co[1].payload, 8), 900u) << "kernel_id @8";
  EXPECT_EQ(co[1].name, "_Z4axpyPfS_");
  EXPECT_EQ(At<uint64_t>(co[2].payload, 8), 901u);
  EXPECT_EQ(co[2].name, "_Z5scalePf");
  const char* kept = co[1].name_ptr;
  EXPECT_EQ(std::string(kept), "_Z4axpyPfS_") << "valid until unload";

  EXPECT_EQ(a.unload_code_object(42), 2);
  EXPECT_EQ(a.unload_code_object(42), -1) << "already unloaded";
  const auto un = TakeCo();
  ASSERT_EQ(un.size(), 3u);
  EXPECT_EQ(un[0].op, kCoKernelSymbol);
  EXPECT_EQ(un[0].phase, kPhaseUnload);
  EXPECT_EQ(un[0].name, "_Z4axpyPfS_");
  EXPECT_EQ(un[0].user_data, co[1].user_data) << "the LOAD's user_data slot";
  EXPECT_EQ(un[0].user_data_at_entry, 0xC0DE000000000000ull | kCoKernelSymbol);
  EXPECT_EQ(un[1].name, "_Z5scalePf");
  EXPECT_EQ(un[2].op, kCoLoad);
  EXPECT_EQ(un[2].phase, kPhaseUnload);
  EXPECT_EQ(un[2].user_data_at_entry, 0xC0DE000000000000ull | kCoLoad);
  // Freed (poisoned; the fake keeps it mapped) once the UNLOAD callbacks returned.
  for (size_t i = 0; i < std::strlen("_Z4axpyPfS_"); ++i) {
    EXPECT_EQ(static_cast<unsigned char>(kept[i]), kPoison) << i;
  }
  TakeSeen();  // w.ctx's raw-tagged copies
}

TEST(FakeSdkKernels, StrictNamesArePoisonedRightAfterLoad) {
  REQUIRE_KERNEL_SETUP();
  Started k(a, w.kctx);
  a.set_strict_names(1);
  EXPECT_EQ(a.load_kernel_symbol(950, "_Z6strictv", 43), 2);
  a.set_strict_names(0);
  auto co = TakeCo();
  ASSERT_EQ(co.size(), 2u);
  EXPECT_EQ(co[1].name, "_Z6strictv") << "valid during the callback";
  EXPECT_EQ(static_cast<unsigned char>(co[1].name_ptr[0]), kPoison) << "gone right after";
  EXPECT_EQ(a.unload_code_object(43), 2);
  co = TakeCo();
  ASSERT_EQ(co.size(), 2u);
  EXPECT_EQ(co[0].name, "_Z6strictv") << "UNLOAD gets a fresh copy";
  TakeSeen();
}

TEST(FakeSdkKernels, CodeObjectRecordsOnlyToStartedSubscribers) {
  REQUIRE_KERNEL_SETUP();
  EXPECT_EQ(a.load_kernel_symbol(960, "_Z1fv", 44), 1) << "kctx stopped: only w.ctx";
  EXPECT_TRUE(TakeCo().empty());
  EXPECT_EQ(a.unload_code_object(44), 1);
  TakeSeen();
}

TEST(FakeSdkKernels, FaultInjectionOnEveryNewFunction) {
  REQUIRE_KERNEL_SETUP();
  const uint64_t me = Gettid();
  struct Case {
    const char* fn;
    int status;
    std::function<int()> call;
  };
  uint64_t out_buf = 0;
  const Case cases[] = {
      {"rocprofiler_create_buffer", 9,
       [&] {
         return a.create_buffer(w.kctx, 1, 1, 0, reinterpret_cast<void*>(&BufferCb), nullptr,
                                &out_buf);
       }},
      {"rocprofiler_configure_buffer_tracing_service", 12,
       [&] { return a.configure_buffer(w.kctx, 7, nullptr, 0, w.kbuf); }},
      {"rocprofiler_flush_buffer", BufferBusy(), [&] { return a.flush_buffer(w.kbuf); }},
      {"rocprofiler_destroy_buffer", 1, [&] { return a.destroy_buffer(w.kbuf); }},
      {"rocprofiler_push_external_correlation_id", InvalidArgument(),
       [&] { return a.push_ext(w.kctx, me, 5); }},
      {"rocprofiler_pop_external_correlation_id", 2,
       [&] { return a.pop_ext(w.kctx, me, nullptr); }},
  };
  const uint64_t flushes = a.buffer_flushes();
  for (const Case& c : cases) {
    const std::string spec = std::string(c.fn) + "=" + std::to_string(c.status);
    setenv("FAKE_ROCPROFILER_FAIL", spec.c_str(), 1);
    EXPECT_EQ(c.call(), c.status) << c.fn;
    unsetenv("FAKE_ROCPROFILER_FAIL");
  }
  EXPECT_EQ(out_buf, 0u) << "create_buffer did nothing";
  EXPECT_EQ(a.buffer_flushes(), flushes) << "flush did nothing";
  EXPECT_EQ(a.ext_stack_depth(w.kctx, me), 0) << "push did nothing";
  EXPECT_EQ(a.flush_buffer(w.kbuf), 0) << "destroy did nothing: the buffer still exists";
  ASSERT_EQ(a.push_ext(w.kctx, me, 5), 0);
  setenv("FAKE_ROCPROFILER_FAIL", "rocprofiler_pop_external_correlation_id=2", 1);
  EXPECT_EQ(a.pop_ext(w.kctx, me, nullptr), 2);
  unsetenv("FAKE_ROCPROFILER_FAIL");
  EXPECT_EQ(a.ext_stack_depth(w.kctx, me), 1) << "pop did nothing";
  EXPECT_EQ(a.pop_ext(w.kctx, me, nullptr), 0);
}

// ---- HIP_RUNTIME_API buffer tracing: the launching API call of every kernel ----

#define REQUIRE_HIP_SETUP()  \
  REQUIRE_KERNEL_SETUP();    \
  ASSERT_EQ(w.hip_setup, 0); \
  TakeBatches()

// Every record of the batches, in delivery order.
std::vector<RecCopy> Flat(const std::vector<Batch>& batches) {
  std::vector<RecCopy> out;
  for (const auto& b : batches) out.insert(out.end(), b.recs.begin(), b.recs.end());
  return out;
}

int32_t HipLaunchId() { return ExpectedHipId(11); }  // kHipNames[11] = hipLaunchKernel

TEST(FakeSdkHip, OperationsAreIteratedAscendingAndNamed) {
  REQUIRE_WORLD();
  int status = -99;
  const auto ops = KindOperations(a, kBufHipRuntimeApi, &status);
  EXPECT_EQ(status, 0);
  ASSERT_EQ(ops.size(), static_cast<size_t>(HipNameCount()));
  for (size_t i = 1; i < ops.size(); ++i) EXPECT_LT(ops[i - 1].first, ops[i].first) << "ascending";
  for (int i = 0; i < HipNameCount(); ++i) {
    const int32_t id = ExpectedHipId(i);
    EXPECT_EQ(OpByName(a, kBufHipRuntimeApi, kHipNames[i]), id) << kHipNames[i];
    const char* name = nullptr;
    uint64_t len = 0;
    ASSERT_EQ(a.query_op_name(kBufHipRuntimeApi, id, &name, &len), 0) << id;
    EXPECT_STREQ(name, kHipNames[i]);
    EXPECT_EQ(len, std::strlen(kHipNames[i])) << "length without the NUL";
    const char* again = nullptr;
    EXPECT_EQ(a.query_op_name(kBufHipRuntimeApi, id, &again, nullptr), 0) << "len is nullable";
    EXPECT_EQ(again, name) << "a static string";
  }
  // Early stop: a non-zero return ends the iteration.
  int calls = 0;
  EXPECT_EQ(a.iterate_ops(
                kBufHipRuntimeApi,
                [](int kind, int32_t, void* data) {
                  EXPECT_EQ(kind, kBufHipRuntimeApi);
                  return ++*static_cast<int*>(data) == 3 ? 1 : 0;
                },
                &calls),
            0);
  EXPECT_EQ(calls, 3);
  // KERNEL_DISPATCH: ENQUEUE 1, COMPLETE 2 (COMPLETE is what its buffer records carry).
  const auto kd = KindOperations(a, kBufKernelDispatch, &status);
  EXPECT_EQ(status, 0);
  ASSERT_EQ(kd.size(), 2u);
  EXPECT_EQ(kd[0], std::make_pair(int32_t{1}, std::string("KERNEL_DISPATCH_ENQUEUE")));
  EXPECT_EQ(kd[1], std::make_pair(int32_t{kOpComplete}, std::string("KERNEL_DISPATCH_COMPLETE")));
  // A kind that exists but has no table in the fake iterates nothing.
  EXPECT_TRUE(KindOperations(a, 7 /* MARKER_CORE_API */, &status).empty());
  EXPECT_EQ(status, 0);
}

TEST(FakeSdkHip, UnknownKindsAndOperations) {
  REQUIRE_WORLD();
  auto never = [](int, int32_t, void*) -> int {
    ADD_FAILURE() << "called for an unknown kind";
    return 1;
  };
  for (int kind : {0, BufferKindLast(), 99, -1}) {
    EXPECT_EQ(a.iterate_ops(kind, never, nullptr), 4) << "KIND_NOT_FOUND, kind " << kind;
    const char* name = "untouched";
    EXPECT_EQ(a.query_op_name(kind, HipLaunchId(), &name, nullptr), 4) << kind;
    EXPECT_STREQ(name, "untouched");
  }
  EXPECT_EQ(a.iterate_ops(kBufHipRuntimeApi, nullptr, nullptr), InvalidArgument());
  const char* name = "untouched";
  uint64_t len = 77;
  for (int32_t op : {-1, 0, 9, 600, HipLaunchId() + 1}) {
    EXPECT_EQ(a.query_op_name(kBufHipRuntimeApi, op, &name, &len), 5)
        << "OPERATION_NOT_FOUND " << op;
  }
  EXPECT_STREQ(name, "untouched");
  EXPECT_EQ(len, 77u);
  EXPECT_EQ(a.query_op_name(kBufKernelDispatch, 0, &name, &len), 5) << "NONE is not listed";
  EXPECT_EQ(a.query_op_name(kBufHipRuntimeApi, HipLaunchId(), nullptr, nullptr), 0)
      << "both out-pointers are nullable";
}

// The numbering is the version's: a consumer that hard-coded the other layout's ids would
// filter and name the wrong calls (or none).
TEST(FakeSdkHip, NumberingDiffersBetweenLayouts) {
  REQUIRE_WORLD();
  for (int i = 0; i < HipNameCount(); ++i) {
    ASSERT_NE(HipId6(i), HipId7(i)) << kHipNames[i];
    const int32_t other = Is7() ? HipId6(i) : HipId7(i);
    const char* name = nullptr;
    const int st = a.query_op_name(kBufHipRuntimeApi, other, &name, nullptr);
    EXPECT_TRUE(st == 5 || (st == 0 && std::string(name) != kHipNames[i]))
        << kHipNames[i] << ": the other layout's id " << other << " names it here too";
  }
  EXPECT_EQ(OpByName(a, kBufHipRuntimeApi, "hipLaunchKernel"), Is7() ? 156 : 43);
  EXPECT_EQ(OpByName(a, kBufHipRuntimeApi, "hipModuleLaunchKernel"), Is7() ? 149 : 46);
  const auto ops = KindOperations(a, kBufHipRuntimeApi);
  ASSERT_FALSE(ops.empty());
  EXPECT_EQ(ops.front().second, Is7() ? "hipHccModuleLaunchKernel" : "hipGetDevice")
      << "7.x numbers the table in reverse";
}

TEST(FakeSdkHip, LaunchRecordLayoutAndJoinToItsDispatch) {
  REQUIRE_HIP_SETUP();
  Started h(a, w.hctx);
  const uint64_t me = Gettid();
  ASSERT_EQ(a.push_ext(w.hctx, me, 0x77), 0);
  const uint64_t api_records = a.hip_api_records();
  const uint64_t before = BoottimeNow();
  EXPECT_EQ(a.dispatch_kernel(91, 5000, 9000, 3, 4), 1) << "counts the dispatch record only";
  const uint64_t after = BoottimeNow();
  ASSERT_EQ(a.pop_ext(w.hctx, me, nullptr), 0);
  EXPECT_EQ(a.hip_api_records(), api_records + 1);
  ASSERT_EQ(a.flush_buffer(w.hbuf), 0);
  const auto batches = TakeBatches();
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0].ctx, w.hctx);
  EXPECT_EQ(batches[0].buf, w.hbuf);
  ASSERT_EQ(batches[0].n, 2u);
  const RecCopy& kd = batches[0].recs[0];
  const RecCopy& api = batches[0].recs[1];
  EXPECT_EQ(kd.kind, 11u) << "the dispatch record first: the API record is written at exit";
  EXPECT_EQ(U64(kd, kKdKernel), 91u);
  EXPECT_EQ(api.category, 1u) << "TRACING";
  EXPECT_EQ(api.kind, 5u) << "HIP_RUNTIME_API";
  EXPECT_EQ(api.hash, 1u | (uint64_t{5} << 32));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(api.ptr) % 8, 0u);
  ASSERT_EQ(api.bytes.size(), HipRecordSize()) << "56 bytes in 6.x, 64 in 7.x";
  EXPECT_EQ(U64(api, kHipSize), HipRecordSize());
  EXPECT_EQ(At<int32_t>(api.bytes.data(), kHipKind), kBufHipRuntimeApi);
  EXPECT_EQ(At<int32_t>(api.bytes.data(), kHipOp), HipLaunchId());
  EXPECT_NE(U64(api, kHipInternal), 0u);
  EXPECT_EQ(U64(api, kHipInternal), U64(kd, kKdInternal)) << "the join key";
  EXPECT_EQ(U64(api, kHipExternal), 0x77u);
  EXPECT_EQ(U64(kd, kKdExternal), 0x77u);
  if (Is7()) {
    EXPECT_EQ(U64(api, kHipAncestor7), 0u) << "a top-level call";
  }
  const uint64_t start = U64(api, HipStart()), end = U64(api, HipEnd());
  EXPECT_GE(start, before) << "CLOCK_BOOTTIME at the call's entry";
  EXPECT_LE(end, after);
  EXPECT_LT(start, end);
  EXPECT_EQ(U64(api, HipThread()), me);
  EXPECT_EQ(U64(kd, kKdThread), me);
  EXPECT_EQ(U64(kd, kKdStart), 5000u) << "the device times are the dispatch record's";
}

TEST(FakeSdkHip, EachLaunchIsItsOwnCallOnItsOwnThread) {
  REQUIRE_HIP_SETUP();
  Started h(a, w.hctx);
  uint64_t worker = 0;
  std::thread t([&] {
    worker = Gettid();
    ASSERT_EQ(a.push_ext(w.hctx, worker, 0x99), 0);
    a.dispatch_kernel(1, 10, 20, 1, 1);
    ASSERT_EQ(a.pop_ext(w.hctx, worker, nullptr), 0);
  });
  t.join();
  a.dispatch_kernel(2, 30, 40, 1, 1);
  ASSERT_EQ(a.flush_buffer(w.hbuf), 0);
  const auto recs = Flat(TakeBatches());
  ASSERT_EQ(recs.size(), 4u);
  // (dispatch, api) twice; pair them by correlation id, not by position.
  std::vector<uint64_t> api_ids, kd_ids;
  for (const auto& r : recs) {
    if (r.kind == 5) {
      api_ids.push_back(U64(r, kHipInternal));
      const bool from_worker = U64(r, HipThread()) == worker;
      EXPECT_EQ(U64(r, kHipExternal), from_worker ? 0x99u : 0u);
    } else {
      kd_ids.push_back(U64(r, kKdInternal));
    }
  }
  EXPECT_EQ(api_ids, kd_ids);
  ASSERT_EQ(api_ids.size(), 2u);
  EXPECT_NE(api_ids[0], api_ids[1]) << "one fresh id per call";
  EXPECT_EQ(U64(recs[1], HipThread()), worker);
  EXPECT_EQ(U64(recs[3], HipThread()), Gettid());
  EXPECT_LE(U64(recs[1], HipEnd()), U64(recs[3], HipStart())) << "the calls were sequential";
}

TEST(FakeSdkHip, DispatchExFlags) {
  REQUIRE_HIP_SETUP();
  Started h(a, w.hctx);
  const uint64_t api_records = a.hip_api_records();

  // 1: no API record; the dispatch's id is fresh and matches nothing.
  EXPECT_EQ(a.dispatch_kernel_ex(10, 10, 20, 1, 1, 1), 1);
  EXPECT_EQ(a.hip_api_records(), api_records);
  EXPECT_EQ(a.dispatch_kernel_ex(11, 10, 20, 1, 1, 1 | 4), 1) << "4 without a second half: no seal";
  ASSERT_EQ(a.flush_buffer(w.hbuf), 0);
  auto batches = TakeBatches();
  ASSERT_EQ(batches.size(), 1u);
  ASSERT_EQ(batches[0].n, 2u);
  EXPECT_EQ(batches[0].recs[0].kind, 11u);
  EXPECT_EQ(batches[0].recs[1].kind, 11u);
  EXPECT_NE(U64(batches[0].recs[0], kKdInternal), U64(batches[0].recs[1], kKdInternal));

  // 2: the API record first, same batch.
  EXPECT_EQ(a.dispatch_kernel_ex(12, 10, 20, 1, 1, 2), 1);
  ASSERT_EQ(a.flush_buffer(w.hbuf), 0);
  batches = TakeBatches();
  ASSERT_EQ(batches.size(), 1u);
  ASSERT_EQ(batches[0].n, 2u);
  EXPECT_EQ(batches[0].recs[0].kind, 5u);
  EXPECT_EQ(batches[0].recs[1].kind, 11u);
  EXPECT_EQ(U64(batches[0].recs[0], kHipInternal), U64(batches[0].recs[1], kKdInternal));

  // 4: the dispatch record's batch is delivered by itself (no flush), the API record stays.
  EXPECT_EQ(a.dispatch_kernel_ex(13, 10, 20, 1, 1, 4), 1);
  batches = WaitRecords(1);
  ASSERT_EQ(batches.size(), 1u) << "sealed as a watermark would";
  ASSERT_EQ(batches[0].n, 1u);
  EXPECT_EQ(batches[0].recs[0].kind, 11u);
  const uint64_t id13 = U64(batches[0].recs[0], kKdInternal);
  ASSERT_EQ(a.flush_buffer(w.hbuf), 0);
  batches = TakeBatches();
  ASSERT_EQ(batches.size(), 1u);
  ASSERT_EQ(batches[0].n, 1u);
  EXPECT_EQ(batches[0].recs[0].kind, 5u);
  EXPECT_EQ(U64(batches[0].recs[0], kHipInternal), id13) << "joined across callbacks";

  // 2 | 4: the API record alone first.
  EXPECT_EQ(a.dispatch_kernel_ex(14, 10, 20, 1, 1, 2 | 4), 1);
  batches = WaitRecords(1);
  ASSERT_EQ(batches.size(), 1u);
  ASSERT_EQ(batches[0].n, 1u);
  EXPECT_EQ(batches[0].recs[0].kind, 5u);
  ASSERT_EQ(a.flush_buffer(w.hbuf), 0);
  batches = TakeBatches();
  ASSERT_EQ(batches.size(), 1u);
  ASSERT_EQ(batches[0].n, 1u);
  EXPECT_EQ(batches[0].recs[0].kind, 11u);
  EXPECT_EQ(U64(batches[0].recs[0], kKdKernel), 14u);

  // 8: hipModuleLaunchKernel.
  EXPECT_EQ(a.dispatch_kernel_ex(15, 10, 20, 1, 1, 8), 1);
  ASSERT_EQ(a.flush_buffer(w.hbuf), 0);
  const auto recs = Flat(TakeBatches());
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[1].kind, 5u);
  EXPECT_EQ(At<int32_t>(recs[1].bytes.data(), kHipOp), w.module_launch_id);
  EXPECT_EQ(a.hip_api_records(), api_records + 4) << "flags 2, 4, 2|4, 8";

  // 0 is fake_sdk_dispatch_kernel.
  EXPECT_EQ(a.dispatch_kernel_ex(16, 10, 20, 1, 1, 0), 1);
  ASSERT_EQ(a.flush_buffer(w.hbuf), 0);
  const auto plain = Flat(TakeBatches());
  ASSERT_EQ(plain.size(), 2u);
  EXPECT_EQ(plain[0].kind, 11u);
  EXPECT_EQ(At<int32_t>(plain[1].bytes.data(), kHipOp), HipLaunchId());
}

// fctx: dispatches into fkbuf, API records filtered to {hipModuleLaunchKernel, hipMalloc} into
// fhbuf.
TEST(FakeSdkHip, OperationFilterAndSeparateBuffers) {
  REQUIRE_HIP_SETUP();
  Started f(a, w.fctx);
  const uint64_t api_records = a.hip_api_records();
  EXPECT_EQ(a.dispatch_kernel(20, 10, 20, 1, 1), 1);
  EXPECT_EQ(a.hip_api_records(), api_records) << "hipLaunchKernel is filtered out";
  ASSERT_EQ(a.flush_buffer(w.fhbuf), 0);
  EXPECT_TRUE(TakeBatches().empty());
  ASSERT_EQ(a.flush_buffer(w.fkbuf), 0);
  auto batches = TakeBatches();
  ASSERT_EQ(batches.size(), 1u);
  ASSERT_EQ(batches[0].n, 1u);
  EXPECT_EQ(batches[0].recs[0].kind, 11u) << "the dispatch is recorded regardless";

  EXPECT_EQ(a.dispatch_kernel_ex(21, 10, 20, 1, 1, 8), 1);
  ASSERT_EQ(a.flush_buffer(w.fkbuf), 0);
  ASSERT_EQ(a.flush_buffer(w.fhbuf), 0);
  batches = TakeBatches();
  ASSERT_EQ(batches.size(), 2u) << "one callback per buffer";
  EXPECT_EQ(batches[0].buf, w.fkbuf);
  EXPECT_EQ(batches[1].buf, w.fhbuf);
  ASSERT_EQ(batches[0].n, 1u);
  ASSERT_EQ(batches[1].n, 1u);
  EXPECT_EQ(At<int32_t>(batches[1].recs[0].bytes.data(), kHipOp), w.module_launch_id);
  EXPECT_EQ(U64(batches[1].recs[0], kHipInternal), U64(batches[0].recs[0], kKdInternal));

  // An API call with no kernel: by name, filtered, with the given interval and thread.
  const uint64_t me = Gettid();
  const uint64_t id = a.hip_api_call("hipMalloc", 100, 250, 0);
  EXPECT_NE(id, 0u);
  EXPECT_NE(id, UINT64_MAX);
  EXPECT_EQ(a.hip_api_call("hipFree", 100, 250, 0), 0u) << "filtered out: no buffer took it";
  EXPECT_EQ(a.hip_api_call("hipNoSuchFunction", 100, 250, 0), UINT64_MAX);
  EXPECT_EQ(a.hip_api_call(nullptr, 100, 250, 0), UINT64_MAX);
  ASSERT_EQ(a.flush_buffer(w.fhbuf), 0);
  batches = TakeBatches();
  ASSERT_EQ(batches.size(), 1u);
  ASSERT_EQ(batches[0].n, 1u);
  const RecCopy& r = batches[0].recs[0];
  EXPECT_EQ(At<int32_t>(r.bytes.data(), kHipOp), w.malloc_id);
  EXPECT_EQ(U64(r, kHipInternal), id);
  EXPECT_EQ(U64(r, HipStart()), 100u);
  EXPECT_EQ(U64(r, HipEnd()), 250u);
  EXPECT_EQ(U64(r, HipThread()), me) << "thread_id 0 = the calling thread";
  EXPECT_EQ(a.hip_api_records(), api_records + 2);
}

TEST(FakeSdkHip, ApiCallsWithoutKernelDispatchTracingOrOnAnotherThread) {
  REQUIRE_HIP_SETUP();
  EXPECT_EQ(a.hip_api_call("hipMalloc", 1, 2, 0), 0u) << "no context started";
  const uint64_t api_records = a.hip_api_records();
  EXPECT_EQ(a.dispatch_kernel(30, 10, 20, 1, 1), 0);
  EXPECT_EQ(a.hip_api_records(), api_records) << "stopped contexts get nothing";
  Started ac(a, w.actx);
  EXPECT_EQ(a.dispatch_kernel(31, 10, 20, 1, 1), 0) << "no KERNEL_DISPATCH tracing started";
  EXPECT_EQ(a.hip_api_records(), api_records + 1) << "but the launch call is traced";
  const uint64_t other = Gettid() + 1000000;
  ASSERT_EQ(a.push_ext(w.actx, other, 0x42), 0);
  const uint64_t id = a.hip_api_call("hipStreamSynchronize", 500, 900, other);
  ASSERT_EQ(a.pop_ext(w.actx, other, nullptr), 0);
  ASSERT_EQ(a.flush_buffer(w.abuf), 0);
  const auto recs = Flat(TakeBatches());
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(At<int32_t>(recs[0].bytes.data(), kHipOp), HipLaunchId());
  EXPECT_EQ(U64(recs[0], HipThread()), Gettid());
  EXPECT_EQ(At<int32_t>(recs[1].bytes.data(), kHipOp),
            OpByName(a, kBufHipRuntimeApi, "hipStreamSynchronize"));
  EXPECT_EQ(U64(recs[1], kHipInternal), id);
  EXPECT_NE(id, U64(recs[0], kHipInternal));
  EXPECT_EQ(U64(recs[1], HipThread()), other);
  EXPECT_EQ(U64(recs[1], kHipExternal), 0x42u) << "the given thread's stack top";
}

TEST(FakeSdkHip, BothKindsInTwoContextsShareTheCallsId) {
  REQUIRE_HIP_SETUP();
  Started h(a, w.hctx);
  Started ac(a, w.actx);
  EXPECT_EQ(a.dispatch_kernel(40, 10, 20, 1, 1), 1);
  ASSERT_EQ(a.flush_buffer(w.hbuf), 0);
  ASSERT_EQ(a.flush_buffer(w.abuf), 0);
  const auto recs = Flat(TakeBatches());
  ASSERT_EQ(recs.size(), 3u);  // hbuf: dispatch, api; abuf: api
  EXPECT_EQ(U64(recs[1], kHipInternal), U64(recs[0], kKdInternal));
  EXPECT_EQ(U64(recs[2], kHipInternal), U64(recs[0], kKdInternal));
  EXPECT_EQ(U64(recs[2], HipStart()), U64(recs[1], HipStart())) << "one call, one interval";
  EXPECT_EQ(U64(recs[2], HipEnd()), U64(recs[1], HipEnd()));
}

TEST(FakeSdkHip, FaultInjection) {
  REQUIRE_WORLD();
  setenv("FAKE_ROCPROFILER_FAIL", "rocprofiler_iterate_buffer_tracing_kind_operations=17", 1);
  int calls = 0;
  EXPECT_EQ(a.iterate_ops(
                kBufHipRuntimeApi, [](int, int32_t, void* d) { return ++*static_cast<int*>(d), 0; },
                &calls),
            17);
  EXPECT_EQ(calls, 0);
  setenv("FAKE_ROCPROFILER_FAIL", "rocprofiler_query_buffer_tracing_kind_operation_name=17", 1);
  EXPECT_EQ(a.query_op_name(kBufHipRuntimeApi, HipLaunchId(), nullptr, nullptr), 17);
  unsetenv("FAKE_ROCPROFILER_FAIL");
  EXPECT_EQ(a.query_op_name(kBufHipRuntimeApi, HipLaunchId(), nullptr, nullptr), 0);
}

// ---- MEMORY_COPY buffer tracing and HIP graph launches ----

#define REQUIRE_MEM_SETUP()  \
  REQUIRE_HIP_SETUP();       \
  ASSERT_EQ(w.mem_setup, 0); \
  TakeBatches()

int32_t HipMemcpyAsyncId() { return ExpectedHipId(5); }  // kHipNames[5]
int32_t HipGraphLaunchId() { return ExpectedHipId(16); }  // kHipNames[16]

TEST(FakeSdkMemcpy, OperationsAreTheDirectionsInEveryVersion) {
  REQUIRE_WORLD();
  int status = -99;
  const auto ops = KindOperations(a, kBufMemoryCopy, &status);
  EXPECT_EQ(status, 0);
  const std::vector<std::pair<int32_t, std::string>> expected = {
      {kCopyNone, "MEMORY_COPY_NONE"},
      {kCopyHostToHost, "MEMORY_COPY_HOST_TO_HOST"},
      {kCopyHostToDevice, "MEMORY_COPY_HOST_TO_DEVICE"},
      {kCopyDeviceToHost, "MEMORY_COPY_DEVICE_TO_HOST"},
      {kCopyDeviceToDevice, "MEMORY_COPY_DEVICE_TO_DEVICE"},
  };
  EXPECT_EQ(ops, expected) << "NONE included, the same numbering in 6.x and 7.x";
  const char* name = "untouched";
  uint64_t len = 77;
  for (int32_t op : {-1, 5, 11, 600}) {
    EXPECT_EQ(a.query_op_name(kBufMemoryCopy, op, &name, &len), 5) << "OPERATION_NOT_FOUND " << op;
  }
  EXPECT_STREQ(name, "untouched");
  EXPECT_EQ(len, 77u);
  EXPECT_EQ(a.query_op_name(kBufMemoryCopy, kCopyDeviceToHost, &name, &len), 0);
  EXPECT_STREQ(name, "MEMORY_COPY_DEVICE_TO_HOST");
  EXPECT_EQ(len, std::strlen("MEMORY_COPY_DEVICE_TO_HOST"));
  // The HIP calls the new hooks make, numbered per layout like every other HIP operation.
  EXPECT_EQ(OpByName(a, kBufHipRuntimeApi, "hipMemcpyAsync"), Is7() ? 198 : 25);
  EXPECT_EQ(OpByName(a, kBufHipRuntimeApi, "hipMemsetAsync"), Is7() ? 191 : 28);
  EXPECT_EQ(OpByName(a, kBufHipRuntimeApi, "hipGraphLaunch"), Is7() ? 121 : 58);
  EXPECT_EQ(OpByName(a, kBufHipRuntimeApi, "hipMemcpyAsync"), HipMemcpyAsyncId());
  EXPECT_EQ(OpByName(a, kBufHipRuntimeApi, "hipGraphLaunch"), HipGraphLaunchId());
}

TEST(FakeSdkMemcpy, CopyRecordLayoutAndItsApiRecord) {
  REQUIRE_MEM_SETUP();
  Started m(a, w.mctx);
  const uint64_t me = Gettid();
  ASSERT_EQ(a.push_ext(w.mctx, me, 0x55), 0);
  const uint64_t api_records = a.hip_api_records();
  const uint64_t before = BoottimeNow();
  EXPECT_EQ(a.memory_copy(kCopyHostToDevice, 4096, 1000, 3000, 7, 8, 0), 1)
      << "counts the copy record only";
  const uint64_t after = BoottimeNow();
  ASSERT_EQ(a.pop_ext(w.mctx, me, nullptr), 0);
  EXPECT_EQ(a.hip_api_records(), api_records + 1);
  ASSERT_EQ(a.flush_buffer(w.mbuf), 0);
  const auto batches = TakeBatches();
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0].ctx, w.mctx);
  EXPECT_EQ(batches[0].buf, w.mbuf);
  ASSERT_EQ(batches[0].n, 2u);
  const RecCopy& mc = batches[0].recs[0];
  const RecCopy& api = batches[0].recs[1];
  EXPECT_EQ(mc.category, 1u) << "TRACING";
  EXPECT_EQ(mc.kind, 10u) << "MEMORY_COPY, the copy record first";
  EXPECT_EQ(mc.hash, 1u | (uint64_t{10} << 32));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(mc.ptr) % 8, 0u);
  ASSERT_EQ(mc.bytes.size(), McRecordSize()) << "80 bytes in 6.x, 96 in 7.x";
  EXPECT_EQ(U64(mc, kMcSize), McRecordSize());
  EXPECT_EQ(At<int32_t>(mc.bytes.data(), kMcKind), kBufMemoryCopy);
  EXPECT_EQ(At<int32_t>(mc.bytes.data(), kMcOp), kCopyHostToDevice);
  const uint64_t id = U64(mc, kMcInternal);
  EXPECT_NE(id, 0u);
  EXPECT_EQ(U64(mc, kMcExternal), 0x55u);
  EXPECT_EQ(U64(mc, kMcThread), me);
  EXPECT_EQ(U64(mc, kMcStart), 1000u);
  EXPECT_EQ(U64(mc, kMcEnd), 3000u);
  EXPECT_EQ(U64(mc, kMcDstAgent), 7u);
  EXPECT_EQ(U64(mc, kMcSrcAgent), 8u);
  EXPECT_EQ(U64(mc, kMcBytes), 4096u);
  if (Is7()) {
    EXPECT_EQ(U64(mc, kMcDstAddress7), 0x7f0000000000ull + (id << 12));
    EXPECT_EQ(U64(mc, kMcSrcAddress7), 0x7e0000000000ull + (id << 12));
  }
  EXPECT_EQ(api.kind, 5u) << "HIP_RUNTIME_API after the copy";
  ASSERT_EQ(api.bytes.size(), HipRecordSize());
  EXPECT_EQ(At<int32_t>(api.bytes.data(), kHipOp), HipMemcpyAsyncId());
  EXPECT_EQ(U64(api, kHipInternal), id) << "the join key";
  EXPECT_EQ(U64(api, kHipExternal), 0x55u);
  if (Is7()) {
    EXPECT_EQ(U64(api, kHipAncestor7), 0u);
  }
  const uint64_t start = U64(api, HipStart()), end = U64(api, HipEnd());
  EXPECT_GE(start, before) << "CLOCK_BOOTTIME at the call's entry";
  EXPECT_LE(end, after);
  EXPECT_LT(start, end);
  EXPECT_EQ(U64(api, HipThread()), me);

  // The next copy is its own call.
  EXPECT_EQ(a.memory_copy(kCopyDeviceToHost, 16, 4000, 4100, 8, 7, 0), 1);
  ASSERT_EQ(a.flush_buffer(w.mbuf), 0);
  const auto recs = Flat(TakeBatches());
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(At<int32_t>(recs[0].bytes.data(), kMcOp), kCopyDeviceToHost);
  EXPECT_NE(U64(recs[0], kMcInternal), id) << "a fresh id per call";
  EXPECT_EQ(U64(recs[0], kMcExternal), 0u) << "popped";
  EXPECT_EQ(U64(recs[1], kHipInternal), U64(recs[0], kMcInternal));
}

TEST(FakeSdkMemcpy, OperationFilter) {
  REQUIRE_MEM_SETUP();
  {
    Started mf(a, w.mfctx);  // HOST_TO_DEVICE and DEVICE_TO_DEVICE only, no API tracing
    EXPECT_EQ(a.memory_copy(kCopyDeviceToHost, 1, 10, 20, 1, 2, 0), 0) << "filtered out";
    EXPECT_EQ(a.memory_copy(kCopyHostToHost, 1, 10, 20, 1, 2, 0), 0);
    EXPECT_EQ(a.memory_copy(kCopyHostToDevice, 2, 10, 20, 1, 2, 0), 1);
    EXPECT_EQ(a.memory_copy(kCopyDeviceToDevice, 3, 10, 20, 1, 2, 0), 1);
    Started m(a, w.mctx);  // no filter
    EXPECT_EQ(a.memory_copy(kCopyDeviceToHost, 4, 10, 20, 1, 2, 1), 1) << "mctx only";
    EXPECT_EQ(a.memory_copy(kCopyHostToDevice, 5, 10, 20, 1, 2, 1), 2) << "both contexts";
  }
  EXPECT_EQ(a.memory_copy(kCopyHostToDevice, 6, 10, 20, 1, 2, 0), 0) << "stopped contexts";
  ASSERT_EQ(a.flush_buffer(w.mfbuf), 0);
  auto recs = Flat(TakeBatches());
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(At<int32_t>(recs[0].bytes.data(), kMcOp), kCopyHostToDevice);
  EXPECT_EQ(U64(recs[0], kMcBytes), 2u);
  EXPECT_EQ(At<int32_t>(recs[1].bytes.data(), kMcOp), kCopyDeviceToDevice);
  EXPECT_EQ(U64(recs[1], kMcBytes), 3u);
  EXPECT_EQ(U64(recs[2], kMcBytes), 5u);
  const uint64_t shared = U64(recs[2], kMcInternal);
  ASSERT_EQ(a.flush_buffer(w.mbuf), 0);
  recs = Flat(TakeBatches());
  ASSERT_EQ(recs.size(), 2u) << "flag NO_HIP_API: copy records only";
  EXPECT_EQ(U64(recs[0], kMcBytes), 4u);
  EXPECT_EQ(U64(recs[1], kMcBytes), 5u);
  EXPECT_EQ(U64(recs[1], kMcInternal), shared) << "one copy, one id in every context";
}

TEST(FakeSdkMemcpy, Flags) {
  REQUIRE_MEM_SETUP();
  Started m(a, w.mctx);
  const uint64_t api_records = a.hip_api_records();
  // 2: the API record first.
  EXPECT_EQ(a.memory_copy(kCopyHostToDevice, 64, 10, 20, 1, 2, 2), 1);
  ASSERT_EQ(a.flush_buffer(w.mbuf), 0);
  auto batches = TakeBatches();
  ASSERT_EQ(batches.size(), 1u);
  ASSERT_EQ(batches[0].n, 2u);
  EXPECT_EQ(batches[0].recs[0].kind, 5u);
  EXPECT_EQ(batches[0].recs[1].kind, 10u);
  EXPECT_EQ(U64(batches[0].recs[0], kHipInternal), U64(batches[0].recs[1], kMcInternal));
  // 1: no API record.
  EXPECT_EQ(a.memory_copy(kCopyHostToDevice, 64, 10, 20, 1, 2, 1), 1);
  EXPECT_EQ(a.hip_api_records(), api_records + 1);
  // 4: the copy record delivered by itself, then the API record.
  EXPECT_EQ(a.memory_copy(kCopyDeviceToDevice, 65, 10, 20, 1, 2, 4), 1);
  batches = WaitRecords(2);
  ASSERT_EQ(batches.size(), 1u) << "sealed as a watermark would";
  ASSERT_EQ(batches[0].n, 2u);
  EXPECT_EQ(U64(batches[0].recs[0], kMcBytes), 64u);
  EXPECT_EQ(U64(batches[0].recs[1], kMcBytes), 65u);
  const uint64_t id = U64(batches[0].recs[1], kMcInternal);
  ASSERT_EQ(a.flush_buffer(w.mbuf), 0);
  batches = TakeBatches();
  ASSERT_EQ(batches.size(), 1u);
  ASSERT_EQ(batches[0].n, 1u);
  EXPECT_EQ(batches[0].recs[0].kind, 5u);
  EXPECT_EQ(U64(batches[0].recs[0], kHipInternal), id) << "joined across callbacks";
  EXPECT_EQ(a.hip_api_records(), api_records + 2);
}

TEST(FakeSdkMemcpy, ApiRecordWithoutMemoryCopyTracing) {
  REQUIRE_MEM_SETUP();
  Started ac(a, w.actx);  // HIP_RUNTIME_API only
  const uint64_t api_records = a.hip_api_records();
  EXPECT_EQ(a.memory_copy(kCopyHostToDevice, 64, 10, 20, 1, 2, 0), 0) << "no copy record";
  EXPECT_EQ(a.hip_api_records(), api_records + 1) << "but the call is traced";
  EXPECT_EQ(a.memory_copy(kCopyHostToDevice, 64, 10, 20, 1, 2, 1), 0);
  EXPECT_EQ(a.hip_api_records(), api_records + 1);
  ASSERT_EQ(a.flush_buffer(w.abuf), 0);
  const auto recs = Flat(TakeBatches());
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].kind, 5u);
  EXPECT_EQ(At<int32_t>(recs[0].bytes.data(), kHipOp), HipMemcpyAsyncId());
  EXPECT_EQ(U64(recs[0], HipThread()), Gettid());
}

TEST(FakeSdkGraph, AllKernelsShareTheLaunchCallsId) {
  REQUIRE_MEM_SETUP();
  Started h(a, w.hctx);
  const uint64_t me = Gettid();
  ASSERT_EQ(a.push_ext(w.hctx, me, 0x66), 0);
  const uint64_t kernels[] = {501, 502, 503};
  const uint64_t starts[] = {1000, 2000, 3000};
  const uint64_t ends[] = {1500, 2500, 3500};
  const uint64_t api_records = a.hip_api_records();
  const uint64_t before = BoottimeNow();
  EXPECT_EQ(a.graph_launch(kernels, starts, ends, 3, 9, 10), 1);
  const uint64_t after = BoottimeNow();
  ASSERT_EQ(a.pop_ext(w.hctx, me, nullptr), 0);
  EXPECT_EQ(a.hip_api_records(), api_records + 1) << "one API record for the whole graph";
  EXPECT_EQ(a.dispatch_kernel(504, 4000, 4500, 9, 10), 1);
  ASSERT_EQ(a.flush_buffer(w.hbuf), 0);
  const auto recs = Flat(TakeBatches());
  ASSERT_EQ(recs.size(), 6u);  // 3 dispatches, the graph's API record, a dispatch, its API record
  const uint64_t id = U64(recs[0], kKdInternal);
  EXPECT_NE(id, 0u);
  for (int i = 0; i < 3; ++i) {
    const RecCopy& kd = recs[i];
    EXPECT_EQ(kd.kind, 11u) << i;
    ASSERT_EQ(kd.bytes.size(), kKdRecordSize);
    EXPECT_EQ(U64(kd, kKdInternal), id) << "one call, one id: " << i;
    EXPECT_EQ(U64(kd, kKdExternal), 0x66u);
    EXPECT_EQ(U64(kd, kKdThread), me);
    EXPECT_EQ(U64(kd, kKdKernel), kernels[i]);
    EXPECT_EQ(U64(kd, kKdStart), starts[i]);
    EXPECT_EQ(U64(kd, kKdEnd), ends[i]);
    EXPECT_EQ(U64(kd, kKdAgent), 9u);
    EXPECT_EQ(U64(kd, kKdQueue), 10u);
    EXPECT_EQ(U64(kd, kKdDispatchId), U64(recs[0], kKdDispatchId) + i) << "counting up";
  }
  const RecCopy& api = recs[3];
  EXPECT_EQ(api.kind, 5u) << "after all the dispatches";
  EXPECT_EQ(At<int32_t>(api.bytes.data(), kHipOp), HipGraphLaunchId());
  EXPECT_EQ(U64(api, kHipInternal), id);
  EXPECT_EQ(U64(api, kHipExternal), 0x66u);
  EXPECT_EQ(U64(api, HipThread()), me);
  EXPECT_GE(U64(api, HipStart()), before);
  EXPECT_LE(U64(api, HipEnd()), after);
  EXPECT_LT(U64(api, HipStart()), U64(api, HipEnd()));
  EXPECT_EQ(recs[4].kind, 11u);
  EXPECT_NE(U64(recs[4], kKdInternal), id) << "the next launch is its own call";
  EXPECT_EQ(U64(recs[4], kKdDispatchId), U64(recs[2], kKdDispatchId) + 1);
  EXPECT_EQ(At<int32_t>(recs[5].bytes.data(), kHipOp), HipLaunchId());
}

TEST(FakeSdkGraph, EmptyGraphsBadArgumentsAndFilters) {
  REQUIRE_MEM_SETUP();
  const uint64_t one[] = {1};
  EXPECT_EQ(a.graph_launch(one, one, one, 1, 1, 1), 0) << "no context started";
  {
    Started h(a, w.hctx);
    const uint64_t api_records = a.hip_api_records();
    EXPECT_EQ(a.graph_launch(nullptr, nullptr, nullptr, 0, 1, 1), 0) << "an empty graph";
    EXPECT_EQ(a.hip_api_records(), api_records + 1) << "is still a traced call";
    EXPECT_EQ(a.graph_launch(one, one, one, -1, 1, 1), -1);
    EXPECT_EQ(a.graph_launch(nullptr, one, one, 1, 1, 1), -1);
    EXPECT_EQ(a.graph_launch(one, nullptr, one, 1, 1, 1), -1);
    EXPECT_EQ(a.graph_launch(one, one, nullptr, 1, 1, 1), -1);
    EXPECT_EQ(a.hip_api_records(), api_records + 1) << "nothing made for bad arguments";
    ASSERT_EQ(a.flush_buffer(w.hbuf), 0);
    const auto recs = Flat(TakeBatches());
    ASSERT_EQ(recs.size(), 1u);
    EXPECT_EQ(At<int32_t>(recs[0].bytes.data(), kHipOp), HipGraphLaunchId());
  }
  // fctx: hipGraphLaunch is filtered out of its HIP buffer; the dispatches still go in.
  Started f(a, w.fctx);
  const uint64_t kernels[] = {601, 602};
  const uint64_t api_records = a.hip_api_records();
  EXPECT_EQ(a.graph_launch(kernels, kernels, kernels, 2, 1, 1), 1);
  EXPECT_EQ(a.hip_api_records(), api_records);
  ASSERT_EQ(a.flush_buffer(w.fhbuf), 0);
  EXPECT_TRUE(TakeBatches().empty());
  ASSERT_EQ(a.flush_buffer(w.fkbuf), 0);
  const auto recs = Flat(TakeBatches());
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(U64(recs[0], kKdKernel), 601u);
  EXPECT_EQ(U64(recs[1], kKdKernel), 602u);
  EXPECT_EQ(U64(recs[0], kKdInternal), U64(recs[1], kKdInternal));
}

// Records left pending (not flushed) when the SDK finalizes are lost: it does not flush by itself.
uint64_t g_delivered_before_finalize = 0;
TEST(FakeSdkZ, A_RecordsPendingBeforeFinalize) {
  REQUIRE_KERNEL_SETUP();
  Started k(a, w.kctx);
  EXPECT_EQ(a.dispatch_kernel(1, 10, 20, 1, 1), 1);
  EXPECT_EQ(a.dispatch_kernel(2, 10, 20, 1, 1), 1);
  g_delivered_before_finalize = a.records_delivered();
}

// Last: finalization ends the configured state for the rest of the process.
TEST(FakeSdkZ, ClientFinalizeRunsToolFinalizeOnce) {
  REQUIRE_CONFIGURED();
  ASSERT_NE(w.fini, nullptr);
  if (Is7()) {
    ClientId7 id{sizeof(ClientId7), "fake-sdk-test", 0};
    reinterpret_cast<void (*)(ClientId7)>(w.fini)(id);
  } else {
    ClientId6 id{"fake-sdk-test", 0};
    reinterpret_cast<void (*)(ClientId6)>(w.fini)(id);
  }
  EXPECT_EQ(a.client_finalize_calls(), 1);
  EXPECT_EQ(a.client_id_corrupted(), Mode() == "wrong_client_id" ? 1 : 0)
      << "the by-value client_id arrived intact";
  EXPECT_EQ(g_tool_finalize_seen, 1);
  EXPECT_EQ(g_tool_finalize_data, &g_tool_data);
  EXPECT_EQ(a.tool_finalize_calls(), 1);
  int fini = -1;
  EXPECT_EQ(a.is_finalized(&fini), 0);
  EXPECT_EQ(fini, 1);
  EXPECT_EQ(a.context_active(), 0);
  EXPECT_EQ(a.start_context(w.ctx), Locked()) << "no start after finalization";
  EXPECT_EQ(a.stop_context(w.ctx), 0);
  TakeSeen();
  EXPECT_EQ(a.marker(kMarkerCore, 0, 0, "after", 0, 0), 0);
  a.finalize();
  EXPECT_EQ(g_tool_finalize_seen, 1) << "finalize runs once";
}

TEST(FakeSdkZ, PendingRecordsAreLostAtFinalize) {
  REQUIRE_KERNEL_SETUP();
  int fini = -1;
  a.is_finalized(&fini);
  ASSERT_EQ(fini, 1);
  EXPECT_GE(a.records_discarded(), 2u);
  EXPECT_EQ(a.flush_buffer(w.kbuf), 0) << "flush after finalization: SUCCESS, nothing to deliver";
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(TakeBatches().empty());
  EXPECT_EQ(a.records_delivered(), g_delivered_before_finalize);
  EXPECT_EQ(a.start_context(w.kctx), Locked());
  EXPECT_EQ(a.dispatch_kernel(3, 10, 20, 1, 1), 0);
  EXPECT_EQ(a.memory_copy(kCopyHostToDevice, 1, 10, 20, 1, 2, 0), 0);
  const uint64_t one[] = {1};
  EXPECT_EQ(a.graph_launch(one, one, one, 1, 1, 1), 0);
}

}  // namespace
