// A test double of librocprofiler-sdk with the real C ABI of ROCm 6.x AND 7.x
// (rocprofiler_abi.md sections 2, 3, 4, 5.1, 5.5). One build serves every version: the version
// comes from env FAKE_ROCPROFILER_VERSION (10000*major + 100*minor + patch, read once; default
// 10000 = ROCm 7.0) and selects, at run time, the client_id layout, the callback record layout
// (56 vs 64 bytes, passed BY VALUE), the status-code numbering and the set of callback kinds.
//
// What it models: force_configure -> configure(version, ...) -> initialize(fini, tool_data)
// with the init status -1 during initialize (the only window for setup calls), contexts,
// callback tracing with operation filters and start/stop gating, CLOCK_BOOTTIME timestamps,
// gettid thread ids, status names, finalize (probe, client finalize function, atexit).
// What it does not: buffers, external correlation ids, HSA/HIP tables, the 7.0 range kind
// synthesis (tests replay kind 21 with fake_sdk_marker), rocprofiler_configure discovery.
//
// Test-only entry points are prefixed fake_sdk_ (see "replay and probes" below). The fake roctx
// (fake_roctx.cc) finds fake_sdk_dispatch_roctx through dlsym(RTLD_DEFAULT), which stands in for
// the real SDK rewriting roctx's dispatch tables, so load this library RTLD_GLOBAL.
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// ---------------------------------------------------------------------------------------------
// Version
// ---------------------------------------------------------------------------------------------

constexpr uint32_t kDefaultVersion = 10000;

uint32_t ParseVersion() {
  const char* env = std::getenv("FAKE_ROCPROFILER_VERSION");
  if (env == nullptr || *env == '\0') return kDefaultVersion;
  char* end = nullptr;
  unsigned long v = std::strtoul(env, &end, 10);
  if (end == env || *end != '\0' || v > 0xFFFFFFFFul) return kDefaultVersion;
  return static_cast<uint32_t>(v);
}

uint32_t Version() {
  static const uint32_t version = ParseVersion();
  return version;
}

bool Layout7() { return Version() >= 10000; }
bool HasContextIdNotZero() { return Version() >= 500; }  // 0.5.0 (6.3) inserted code 13

bool EnvTrue(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return false;
  for (const char* t : {"1", "true", "TRUE", "True", "yes", "YES", "on", "ON"}) {
    if (std::strcmp(v, t) == 0) return true;
  }
  return false;
}

bool LockedByOther() {
  static const bool locked = EnvTrue("FAKE_ROCPROFILER_LOCKED");
  return locked;
}

// ---------------------------------------------------------------------------------------------
// Status codes: kept in the R7 numbering internally, mapped to the version's numbering.
// ---------------------------------------------------------------------------------------------

enum R7Status : int {
  kSuccess = 0,
  kError = 1,
  kContextNotFound = 2,
  kKindNotFound = 4,
  kOperationNotFound = 5,
  kContextInvalid = 10,
  kContextIdNotZero = 13,
  kServiceAlreadyConfigured = 15,
  kConfigurationLocked = 16,
  kNotImplemented = 17,
  kInvalidArgument = 19,
  kOutOfResources = 29,
};

// R7 list (rocprofiler_abi.md 3.2), without the ROCPROFILER_STATUS_ prefix.
const char* const kR7StatusNames[] = {
    "SUCCESS",
    "ERROR",
    "ERROR_CONTEXT_NOT_FOUND",
    "ERROR_BUFFER_NOT_FOUND",
    "ERROR_KIND_NOT_FOUND",
    "ERROR_OPERATION_NOT_FOUND",
    "ERROR_THREAD_NOT_FOUND",
    "ERROR_AGENT_NOT_FOUND",
    "ERROR_COUNTER_NOT_FOUND",
    "ERROR_CONTEXT_ERROR",
    "ERROR_CONTEXT_INVALID",
    "ERROR_CONTEXT_NOT_STARTED",
    "ERROR_CONTEXT_CONFLICT",
    "ERROR_CONTEXT_ID_NOT_ZERO",
    "ERROR_BUFFER_BUSY",
    "ERROR_SERVICE_ALREADY_CONFIGURED",
    "ERROR_CONFIGURATION_LOCKED",
    "ERROR_NOT_IMPLEMENTED",
    "ERROR_INCOMPATIBLE_ABI",
    "ERROR_INVALID_ARGUMENT",
    "ERROR_METRIC_NOT_VALID_FOR_AGENT",
    "ERROR_FINALIZED",
    "ERROR_HSA_NOT_LOADED",
    "ERROR_DIM_NOT_FOUND",
    "ERROR_PROFILE_COUNTER_NOT_FOUND",
    "ERROR_AST_GENERATION_FAILED",
    "ERROR_AST_NOT_FOUND",
    "ERROR_AQL_NO_EVENT_COORD",
    "ERROR_INCOMPATIBLE_KERNEL",
    "ERROR_OUT_OF_RESOURCES",
    "ERROR_PROFILE_NOT_FOUND",
    "ERROR_AGENT_DISPATCH_CONFLICT",
    "ERROR_INTERNAL_NO_AGENT_CONTEXT",
    "ERROR_SAMPLE_RATE_EXCEEDED",
    "ERROR_NO_PROFILE_QUEUE",
    "ERROR_NO_HARDWARE_COUNTERS",
    "ERROR_AGENT_MISMATCH",
    "ERROR_NOT_AVAILABLE",
    "ERROR_EXCEEDS_HW_LIMIT",
    "ERROR_AGENT_ARCH_NOT_SUPPORTED",
    "ERROR_PERMISSION_DENIED",
};
constexpr int kR7StatusCount = sizeof(kR7StatusNames) / sizeof(kR7StatusNames[0]);  // 41
static_assert(kR7StatusCount == 41, "R7 status list");

// Short messages in the same order (rocprofiler_get_status_string).
const char* const kR7StatusStrings[] = {
    "Success",
    "General error",
    "Context id not found",
    "Buffer id not found",
    "Kind identifier is invalid",
    "Operation identifier is invalid for the domain",
    "No valid thread for the given thread id",
    "Agent identifier not found",
    "Counter identifier does not exist",
    "Generalized context error",
    "Context configuration is not valid",
    "Context was not started",
    "Context operation failed due to a conflict with another context",
    "Context id must be zero when creating a context",
    "Buffer operation failed because it is currently busy",
    "Service has already been configured in the context",
    "Function invoked after the tool configuration window closed",
    "Function is not implemented",
    "Data structure provided by the user is incompatible with the current library",
    "Invalid argument",
    "Metric is not valid for the agent",
    "Invalid request: rocprofiler has already been finalized",
    "HSA runtime is not loaded",
    "Dimension not found",
    "Profile counter not found",
    "AST generation failed",
    "AST not found",
    "AQL no event coordinate",
    "Incompatible kernel",
    "Out of resources",
    "Profile not found",
    "Agent dispatch conflict",
    "Internal: no agent context",
    "Sample rate exceeded",
    "No profile queue",
    "No hardware counters",
    "Agent mismatch",
    "Not available",
    "Exceeds hardware limit",
    "Agent architecture not supported",
    "Permission denied",
};
static_assert(sizeof(kR7StatusStrings) / sizeof(kR7StatusStrings[0]) == 41, "R7 status strings");

// R7 code -> this version's code. 6.2 (< 500) lacks CONTEXT_ID_NOT_ZERO = 13, so every later code
// is one lower there (CONFIGURATION_LOCKED 15, INVALID_ARGUMENT 18, ...).
// Fault injection (sdk_fault_test): FAKE_ROCPROFILER_FAIL="<function>=<status>" makes that API
// function return <status> instead of doing its work. Read on every call, not cached, so one
// process can inject different faults over time.
int Injected(const char* function) {
  const char* v = std::getenv("FAKE_ROCPROFILER_FAIL");
  if (v == nullptr) return 0;
  const char* eq = std::strchr(v, '=');
  if (eq == nullptr) return 0;
  const size_t n = static_cast<size_t>(eq - v);
  if (std::strlen(function) != n || std::strncmp(v, function, n) != 0) return 0;
  return std::atoi(eq + 1);
}

#define FAKE_FAULT(function)                                \
  do {                                                      \
    if (const int injected = Injected(#function)) return injected; \
  } while (0)

int Code(int r7) {
  if (!HasContextIdNotZero() && r7 > kContextIdNotZero) return r7 - 1;
  return r7;
}

// This version's code -> index into the R7 tables, or -1 if the version has no such code.
int R7Index(int code) {
  if (code < 0) return -1;
  if (HasContextIdNotZero()) return code < kR7StatusCount ? code : -1;
  // 6.2: 0..12 unchanged, 13..37 = R7 14..38, LAST = 38 (no AGENT_ARCH_NOT_SUPPORTED,
  // PERMISSION_DENIED).
  if (code <= 12) return code;
  if (code <= 37) return code + 1;
  return -1;
}

// ---------------------------------------------------------------------------------------------
// ABI structs (rocprofiler_abi.md 3.3, 5.1, 5.5)
// ---------------------------------------------------------------------------------------------

// rocprofiler_client_id_t
struct ClientId6 {  // 6.2-6.4
  const char* name;
  uint32_t handle;
};
static_assert(sizeof(ClientId6) == 16, "6.x client_id");
static_assert(offsetof(ClientId6, name) == 0 && offsetof(ClientId6, handle) == 8, "6.x client_id");

struct ClientId7 {  // 7.0
  size_t size;
  const char* name;
  uint32_t handle;
};
static_assert(sizeof(ClientId7) == 24, "7.x client_id");
static_assert(offsetof(ClientId7, size) == 0 && offsetof(ClientId7, name) == 8 &&
                  offsetof(ClientId7, handle) == 16,
              "7.x client_id");

using ClientFinalize6 = void (*)(ClientId6);
using ClientFinalize7 = void (*)(ClientId7);
using AnyFunction = void (*)();

// rocprofiler_tool_configure_result_t (32 bytes, all versions)
struct ToolConfigureResult {
  size_t size;
  int (*initialize)(AnyFunction fini, void* tool_data);  // fini: ClientFinalize6 or 7
  void (*finalize)(void* tool_data);
  void* tool_data;
};
static_assert(sizeof(ToolConfigureResult) == 32, "tool_configure_result");

using ConfigureFn = ToolConfigureResult* (*)(uint32_t version, const char* runtime_version,
                                             uint32_t priority, void* client_id);

// rocprofiler_callback_tracing_record_t
struct Record6 {  // 6.2-6.4: correlation id {internal, external} = 16 bytes
  uint64_t context_id;
  uint64_t thread_id;
  uint64_t correlation_internal;
  uint64_t correlation_external;
  int32_t kind;
  int32_t operation;
  int32_t phase;
  void* payload;
};
static_assert(sizeof(Record6) == 56, "6.x callback record");
static_assert(offsetof(Record6, context_id) == 0 && offsetof(Record6, thread_id) == 8 &&
                  offsetof(Record6, correlation_internal) == 16 &&
                  offsetof(Record6, correlation_external) == 24 && offsetof(Record6, kind) == 32 &&
                  offsetof(Record6, operation) == 36 && offsetof(Record6, phase) == 40 &&
                  offsetof(Record6, payload) == 48,
              "6.x callback record offsets");

struct Record7 {  // 7.0: correlation id {internal, external, ancestor} = 24 bytes
  uint64_t context_id;
  uint64_t thread_id;
  uint64_t correlation_internal;
  uint64_t correlation_external;
  uint64_t correlation_ancestor;
  int32_t kind;
  int32_t operation;
  int32_t phase;
  void* payload;
};
static_assert(sizeof(Record7) == 64, "7.x callback record");
static_assert(offsetof(Record7, context_id) == 0 && offsetof(Record7, thread_id) == 8 &&
                  offsetof(Record7, correlation_internal) == 16 &&
                  offsetof(Record7, correlation_external) == 24 &&
                  offsetof(Record7, correlation_ancestor) == 32 && offsetof(Record7, kind) == 40 &&
                  offsetof(Record7, operation) == 44 && offsetof(Record7, phase) == 48 &&
                  offsetof(Record7, payload) == 56,
              "7.x callback record offsets");

// rocprofiler_callback_tracing_cb_t, one per layout: the record goes BY VALUE (in memory on the
// stack, SysV MEMORY class), user_data in the first integer register, cb_data in the second.
using Callback6 = void (*)(Record6 record, uint64_t* user_data, void* cb_data);
using Callback7 = void (*)(Record7 record, uint64_t* user_data, void* cb_data);

// rocprofiler_callback_tracing_marker_api_data_t (32 bytes, all versions)
struct MarkerPayload {
  uint64_t size;            // @0 = 32
  unsigned char args[16];   // @8 union
  unsigned char retval[8];  // @24 union
};
static_assert(sizeof(MarkerPayload) == 32, "marker payload");
static_assert(offsetof(MarkerPayload, args) == 8 && offsetof(MarkerPayload, retval) == 24,
              "marker payload offsets");

// ---------------------------------------------------------------------------------------------
// Kinds and operations (rocprofiler_abi.md 4.1, 4.4)
// ---------------------------------------------------------------------------------------------

constexpr int kKindMarkerCore = 7;
constexpr int kKindMarkerControl = 8;
constexpr int kKindMarkerName = 9;
constexpr int kKindMarkerCoreRange = 21;

// ROCPROFILER_CALLBACK_TRACING_LAST for the version. NONE (0) is never configurable.
int CallbackKindLast() {
  const uint32_t v = Version();
  if (v >= 10000) return 22;  // 7.0: ... ROCJPEG 19, HIP_STREAM 20, MARKER_CORE_RANGE_API 21
  if (v >= 600) return 19;    // ~6.4 (M060): up to ROCDECODE_API 18
  if (v >= 500) return 18;    // ~6.3 (M050): up to RUNTIME_INITIALIZATION 17 [inferred]
  return 14;                  // 6.2: up to MEMORY_COPY 13
}

bool KindExists(int kind) { return kind > 0 && kind < CallbackKindLast(); }

// The real SDK only bounds operation ids by a per-domain bitset size ("padding"); 512 is this
// fake's stand-in for it [inferred].
constexpr int kMaxOperation = 512;

// ---------------------------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------------------------

constexpr int kMaxServices = 32;  // callback services over all contexts (user_data slots)

struct Service {
  int kind = 0;
  std::vector<int32_t> ops;  // empty = all operations
  void* callback = nullptr;  // Callback6 or Callback7
  void* cb_data = nullptr;
  int slot = 0;  // index of this service's user_data slot in a call frame
};

struct Context {
  uint64_t handle = 0;
  std::atomic<bool> active{false};
  std::vector<Service> services;
};

std::mutex g_mutex;
std::deque<Context> g_contexts;  // stable addresses
int g_service_count = 0;
uint64_t g_next_context_handle = 1000;

std::atomic<int> g_init_status{0};  // 0 not yet, -1 initializing, 1 done
std::atomic<int> g_fini_status{0};  // 0 not yet, -1 finalizing, 1 done
std::atomic<bool> g_forced{false};

// What configure returned (copied, as the SDK does).
ToolConfigureResult g_result{};
bool g_have_result = false;
bool g_tool_initialized = false;

constexpr uint32_t kClientHandle = 0;  // the first (only) client
std::atomic<int> g_configure_calls{0};
std::atomic<int> g_initialize_calls{0};
std::atomic<int> g_tool_finalize_calls{0};
std::atomic<int> g_client_finalize_calls{0};
std::atomic<int> g_client_id_corrupted{0};
std::atomic<int> g_result_rejected{0};
std::atomic<uint64_t> g_delivered{0};
std::string g_client_name;  // guarded by g_mutex

std::atomic<uint64_t> g_next_correlation{1};

uint64_t NoneHandle() {
  // ROCPROFILER_CONTEXT_NONE: UINT64_MAX in 6.2 through 7.0, 0 after 7.0 (DEV).
  return Version() > 10000 ? 0 : UINT64_MAX;
}

Context* FindContextLocked(uint64_t handle) {
  if (handle == NoneHandle()) return nullptr;
  for (auto& c : g_contexts) {
    if (c.handle == handle) return &c;
  }
  return nullptr;
}

uint64_t ThreadId() {
  static thread_local const uint64_t tid = static_cast<uint64_t>(syscall(SYS_gettid));
  return tid;
}

// One frame per traced call on this thread: ENTER pushes, EXIT pops, so both phases of a call
// share the correlation id and the per-service user_data slots. A deque keeps references valid
// while a callback makes nested traced calls.
struct CallFrame {
  uint64_t correlation = 0;
  uint64_t user_data[kMaxServices] = {};
};
thread_local std::deque<CallFrame> tls_frames;

struct Target {
  uint64_t context = 0;
  void* callback = nullptr;
  void* cb_data = nullptr;
  int slot = 0;
};

// Started contexts subscribing (kind, op); op < 0 skips the operation filter.
int CollectTargets(int kind, int op, Target* out, int max) {
  std::lock_guard<std::mutex> lock(g_mutex);
  int n = 0;
  for (auto& c : g_contexts) {
    if (!c.active.load(std::memory_order_acquire)) continue;
    for (const auto& s : c.services) {
      if (s.kind != kind || s.callback == nullptr) continue;
      if (op >= 0 && !s.ops.empty()) {
        bool hit = false;
        for (int32_t o : s.ops) hit = hit || o == op;
        if (!hit) continue;
      }
      if (n < max) out[n++] = Target{c.handle, s.callback, s.cb_data, s.slot};
    }
  }
  return n;
}

int Deliver(const Target* targets, int n, int kind, int op, int phase, uint64_t correlation,
            void* payload, CallFrame& frame) {
  const uint64_t tid = ThreadId();
  for (int i = 0; i < n; ++i) {
    const Target& t = targets[i];
    uint64_t* user_data = &frame.user_data[t.slot];
    if (Layout7()) {
      Record7 r{};
      r.context_id = t.context;
      r.thread_id = tid;
      r.correlation_internal = correlation;
      r.correlation_external = 0;
      r.correlation_ancestor = 0;
      r.kind = kind;
      r.operation = op;
      r.phase = phase;
      r.payload = payload;
      reinterpret_cast<Callback7>(t.callback)(r, user_data, t.cb_data);
    } else {
      Record6 r{};
      r.context_id = t.context;
      r.thread_id = tid;
      r.correlation_internal = correlation;
      r.correlation_external = 0;
      r.kind = kind;
      r.operation = op;
      r.phase = phase;
      r.payload = payload;
      reinterpret_cast<Callback6>(t.callback)(r, user_data, t.cb_data);
    }
    g_delivered.fetch_add(1, std::memory_order_relaxed);
  }
  return n;
}

void PutU64(unsigned char* dst, uint64_t v) { std::memcpy(dst, &v, 8); }
void PutI32(unsigned char* dst, int32_t v) { std::memcpy(dst, &v, 4); }
void PutPtr(unsigned char* dst, const void* p) { std::memcpy(dst, &p, sizeof(p)); }

// Fills the marker payload for (kind, op) per rocprofiler_abi.md 5.5. Unknown (kind, op) pairs
// get message @8 and an int32 retval.
void BuildPayload(MarkerPayload* p, int kind, int op, const char* message, uint64_t arg_u64,
                  int64_t retval) {
  std::memset(p, 0, sizeof(*p));
  p->size = sizeof(MarkerPayload);
  enum { kMsg, kU64, kNameAndPtr, kNameAndInt, kDummy } args = kMsg;
  enum { kRetI32, kRetU64, kRetVoid } ret = kRetI32;
  if (kind == kKindMarkerCore) {
    switch (op) {
      case 0: args = kMsg, ret = kRetVoid; break;    // roctxMarkA
      case 1: args = kMsg; break;                    // roctxRangePushA
      case 2: args = kDummy; break;                  // roctxRangePop
      case 3: args = kMsg, ret = kRetU64; break;     // roctxRangeStartA
      case 4: args = kU64, ret = kRetVoid; break;    // roctxRangeStop(id)
      case 5: args = kU64; break;                    // roctxGetThreadId(u64* tid)
      default: break;
    }
  } else if (kind == kKindMarkerControl) {
    args = kU64;  // roctxProfilerPause/Resume(tid)
  } else if (kind == kKindMarkerName) {
    switch (op) {
      case 0: args = kMsg; break;         // roctxNameOsThread(name)
      case 1: args = kNameAndPtr; break;  // roctxNameHsaAgent(name, agent*)
      case 2: args = kNameAndInt; break;  // roctxNameHipDevice(name, int)
      case 3: args = kNameAndPtr; break;  // roctxNameHipStream(name, stream)
      default: break;
    }
  } else if (kind == kKindMarkerCoreRange) {
    switch (op) {
      case 0: args = kMsg, ret = kRetVoid; break;  // roctxMarkA
      case 1: args = kMsg; break;                  // roctxThreadRangeA
      case 2: args = kMsg, ret = kRetU64; break;   // roctxProcessRangeA [uncertain retval]
      case 3: args = kU64; break;                  // roctxGetThreadId
      default: break;
    }
  }
  switch (args) {
    case kMsg: PutPtr(p->args, message); break;
    case kU64: PutU64(p->args, arg_u64); break;
    case kNameAndPtr:
      PutPtr(p->args, message);
      PutU64(p->args + 8, arg_u64);
      break;
    case kNameAndInt:
      PutPtr(p->args, message);
      PutI32(p->args + 8, static_cast<int32_t>(arg_u64));
      break;
    case kDummy: break;
  }
  switch (ret) {
    case kRetI32: PutI32(p->retval, static_cast<int32_t>(retval)); break;
    case kRetU64: PutU64(p->retval, static_cast<uint64_t>(retval)); break;
    case kRetVoid: break;
  }
}

int Marker(int kind, int op, int phase, const char* message, uint64_t arg_u64, int64_t retval) {
  Target targets[kMaxServices];
  const int n = CollectTargets(kind, op, targets, kMaxServices);
  MarkerPayload payload;
  BuildPayload(&payload, kind, op, message, arg_u64, retval);
  if (phase == 1) {  // ENTER: a fresh correlation id and fresh user_data slots for this call
    tls_frames.emplace_back();
    CallFrame& frame = tls_frames.back();
    frame.correlation = g_next_correlation.fetch_add(1, std::memory_order_relaxed);
    return Deliver(targets, n, kind, op, phase, frame.correlation, &payload, frame);
  }
  if (phase == 2 && !tls_frames.empty()) {  // EXIT: the matching ENTER's frame
    CallFrame& frame = tls_frames.back();
    const int delivered = Deliver(targets, n, kind, op, phase, frame.correlation, &payload, frame);
    tls_frames.pop_back();
    return delivered;
  }
  // NONE, or EXIT without ENTER: a one-off frame.
  CallFrame frame;
  frame.correlation = g_next_correlation.fetch_add(1, std::memory_order_relaxed);
  return Deliver(targets, n, kind, op, phase, frame.correlation, &payload, frame);
}

// ---------------------------------------------------------------------------------------------
// Configure / finalize
// ---------------------------------------------------------------------------------------------

void Finalize() {
  int expected = 0;
  if (!g_fini_status.compare_exchange_strong(expected, -1)) return;
  if (g_tool_initialized && g_result.finalize != nullptr) {
    g_tool_finalize_calls.fetch_add(1);
    g_result.finalize(g_result.tool_data);
  }
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (auto& c : g_contexts) c.active.store(false, std::memory_order_release);
  }
  g_fini_status.store(1);
}

void ClientFinalizeCommon(uint32_t handle) {
  g_client_finalize_calls.fetch_add(1);
  if (handle != kClientHandle) g_client_id_corrupted.fetch_add(1);
  Finalize();
}
void ClientFinalize6Impl(ClientId6 id) { ClientFinalizeCommon(id.handle); }
void ClientFinalize7Impl(ClientId7 id) {
  if (id.size != sizeof(ClientId7)) g_client_id_corrupted.fetch_add(1);
  ClientFinalizeCommon(id.handle);
}

void AtExit() {
  if (g_init_status.load() == 1) Finalize();
}

// A client_id in a zeroed buffer with a canary behind it, so writes at the other version's
// offsets (or past the end) are detected.
constexpr unsigned char kCanary = 0xA5;
struct alignas(16) ClientIdBuffer {
  unsigned char bytes[sizeof(ClientId7) + 16];
};

bool ClientIdIntact(const ClientIdBuffer& buf, size_t id_size, size_t name_off, size_t handle_off) {
  for (size_t i = id_size; i < sizeof(buf.bytes); ++i) {
    if (buf.bytes[i] != kCanary) return false;
  }
  if (Layout7()) {
    size_t size = 0;
    std::memcpy(&size, buf.bytes, sizeof(size));
    if (size != sizeof(ClientId7)) return false;
  }
  uint32_t handle = 0;
  std::memcpy(&handle, buf.bytes + handle_off, sizeof(handle));
  if (handle != kClientHandle) return false;
  for (size_t i = handle_off + 4; i < id_size; ++i) {  // tail padding
    if (buf.bytes[i] != 0) return false;
  }
  uintptr_t name = 0;
  std::memcpy(&name, buf.bytes + name_off, sizeof(name));
  if (name != 0 && name < 4096) return false;  // a size or handle written over the name
  return true;
}

}  // namespace

// =============================================================================================
// rocprofiler-sdk C API
// =============================================================================================

FAKE_EXPORT int rocprofiler_get_version(uint32_t* major, uint32_t* minor, uint32_t* patch) {
  FAKE_FAULT(rocprofiler_get_version);
  const uint32_t v = Version();
  if (major) *major = v / 10000;
  if (minor) *minor = (v / 100) % 100;
  if (patch) *patch = v % 100;
  return kSuccess;
}

// rocprofiler_version_triplet_t = {u32 major, minor, patch}. The real symbol exists only from
// 7.0 on; this single build always exports it and answers NOT_IMPLEMENTED below 7.0.
struct VersionTriplet {
  uint32_t major, minor, patch;
};
static_assert(sizeof(VersionTriplet) == 12, "version triplet");

FAKE_EXPORT int rocprofiler_get_version_triplet(VersionTriplet* info) {
  if (!Layout7()) return Code(kNotImplemented);
  if (info == nullptr) return Code(kInvalidArgument);
  rocprofiler_get_version(&info->major, &info->minor, &info->patch);
  return kSuccess;
}

FAKE_EXPORT int rocprofiler_is_initialized(int* status) {
  FAKE_FAULT(rocprofiler_is_initialized);
  if (status == nullptr) return Code(kInvalidArgument);
  *status = LockedByOther() ? 1 : g_init_status.load();
  return kSuccess;
}

FAKE_EXPORT int rocprofiler_is_finalized(int* status) {
  if (status == nullptr) return Code(kInvalidArgument);
  *status = g_fini_status.load();
  return kSuccess;
}

FAKE_EXPORT int rocprofiler_force_configure(ConfigureFn configure_fn) {
  FAKE_FAULT(rocprofiler_force_configure);
  if (LockedByOther() || g_init_status.load() != 0) return Code(kConfigurationLocked);
  if (configure_fn == nullptr) return Code(kInvalidArgument);
  if (g_forced.exchange(true)) return Code(kConfigurationLocked);

  setenv("ROCPROFILER_REGISTER_FORCE_LOAD", "1", 1);
  g_init_status.store(-1);

  // configure(version, runtime_version, priority, client_id) with the version's client_id.
  ClientIdBuffer buf;
  std::memset(buf.bytes, kCanary, sizeof(buf.bytes));
  size_t id_size, name_off, handle_off;
  // Field by field (not a struct copy), so the tail padding is zero and can be checked.
  if (Layout7()) {
    id_size = sizeof(ClientId7), name_off = offsetof(ClientId7, name);
    handle_off = offsetof(ClientId7, handle);
    std::memset(buf.bytes, 0, id_size);
    const size_t size = sizeof(ClientId7);
    std::memcpy(buf.bytes + offsetof(ClientId7, size), &size, sizeof(size));
  } else {
    id_size = sizeof(ClientId6), name_off = offsetof(ClientId6, name);
    handle_off = offsetof(ClientId6, handle);
    std::memset(buf.bytes, 0, id_size);
  }
  std::memcpy(buf.bytes + handle_off, &kClientHandle, sizeof(kClientHandle));
  g_configure_calls.fetch_add(1);
  ToolConfigureResult* result = configure_fn(Version(), "fake-rocprofiler-sdk", 0, buf.bytes);

  if (!ClientIdIntact(buf, id_size, name_off, handle_off)) {
    g_client_id_corrupted.fetch_add(1);
  } else {
    const char* name = nullptr;
    std::memcpy(&name, buf.bytes + name_off, sizeof(name));
    std::lock_guard<std::mutex> lock(g_mutex);
    g_client_name = name ? std::string(name, strnlen(name, 256)) : std::string();
  }

  if (result != nullptr) {
    if (result->size < sizeof(ToolConfigureResult)) {
      g_result_rejected.fetch_add(1);
    } else {
      g_result = *result;  // the SDK copies the struct immediately
      g_have_result = true;
      if (g_result.initialize != nullptr) {
        g_initialize_calls.fetch_add(1);
        AnyFunction fini = Layout7() ? reinterpret_cast<AnyFunction>(&ClientFinalize7Impl)
                                     : reinterpret_cast<AnyFunction>(&ClientFinalize6Impl);
        g_result.initialize(fini, g_result.tool_data);  // return value ignored, as in the SDK
      }
      g_tool_initialized = true;
    }
  }

  g_init_status.store(1);
  if (!EnvTrue("FAKE_ROCPROFILER_NO_ATEXIT")) std::atexit(&AtExit);
  return kSuccess;
}

FAKE_EXPORT int rocprofiler_create_context(uint64_t* context_id) {
  FAKE_FAULT(rocprofiler_create_context);
  if (context_id == nullptr) return Code(kInvalidArgument);
  if (HasContextIdNotZero() && *context_id != 0) return Code(kContextIdNotZero);
  *context_id = NoneHandle();  // always set to none first
  if (g_init_status.load() > -1) return Code(kConfigurationLocked);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_contexts.emplace_back();
  g_contexts.back().handle = g_next_context_handle++;
  *context_id = g_contexts.back().handle;
  return kSuccess;
}

FAKE_EXPORT int rocprofiler_configure_callback_tracing_service(uint64_t context_id, int kind,
                                                                const int32_t* operations,
                                                                size_t operations_count,
                                                                void* callback,
                                                                void* callback_args) {
  FAKE_FAULT(rocprofiler_configure_callback_tracing_service);
  if (g_init_status.load() > -1) return Code(kConfigurationLocked);
  std::lock_guard<std::mutex> lock(g_mutex);
  Context* ctx = FindContextLocked(context_id);
  if (ctx == nullptr) return Code(kContextNotFound);
  for (const auto& s : ctx->services) {
    if (s.kind == kind) return Code(kServiceAlreadyConfigured);
  }
  if (!KindExists(kind)) return Code(kKindNotFound);
  Service svc;
  svc.kind = kind;
  if (operations != nullptr) {
    for (size_t i = 0; i < operations_count; ++i) {
      if (operations[i] < 0 || operations[i] >= kMaxOperation) return Code(kOperationNotFound);
      svc.ops.push_back(operations[i]);
    }
  }
  if (g_service_count >= kMaxServices) return Code(kOutOfResources);
  svc.callback = callback;
  svc.cb_data = callback_args;
  svc.slot = g_service_count++;
  ctx->services.push_back(std::move(svc));
  return kSuccess;
}

FAKE_EXPORT int rocprofiler_start_context(uint64_t context_id) {
  FAKE_FAULT(rocprofiler_start_context);
  std::lock_guard<std::mutex> lock(g_mutex);
  Context* ctx = FindContextLocked(context_id);
  if (ctx == nullptr) return Code(kContextNotFound);
  if (g_fini_status.load() != 0) return Code(kConfigurationLocked);
  ctx->active.store(true, std::memory_order_release);
  return kSuccess;
}

FAKE_EXPORT int rocprofiler_stop_context(uint64_t context_id) {
  FAKE_FAULT(rocprofiler_stop_context);
  std::lock_guard<std::mutex> lock(g_mutex);
  Context* ctx = FindContextLocked(context_id);
  if (ctx == nullptr) return Code(kContextNotFound);
  ctx->active.store(false, std::memory_order_release);
  return kSuccess;
}

FAKE_EXPORT int rocprofiler_context_is_active(uint64_t context_id, int* status) {
  if (status == nullptr) return Code(kInvalidArgument);
  *status = 0;
  std::lock_guard<std::mutex> lock(g_mutex);
  Context* ctx = FindContextLocked(context_id);
  if (ctx == nullptr) return Code(kContextNotFound);
  *status = ctx->active.load() ? 1 : 0;
  return kSuccess;
}

FAKE_EXPORT int rocprofiler_context_is_valid(uint64_t context_id, int* status) {
  if (status == nullptr) return Code(kInvalidArgument);
  *status = 0;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (FindContextLocked(context_id) == nullptr) return Code(kContextNotFound);
  *status = 1;
  return kSuccess;
}

FAKE_EXPORT int rocprofiler_get_timestamp(uint64_t* ts) {
  if (ts == nullptr) return Code(kInvalidArgument);
  struct timespec t;
  clock_gettime(CLOCK_BOOTTIME, &t);
  *ts = static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_nsec);
  return kSuccess;
}

FAKE_EXPORT int rocprofiler_get_thread_id(uint64_t* tid) {
  if (tid == nullptr) return Code(kInvalidArgument);
  *tid = ThreadId();
  return kSuccess;
}

FAKE_EXPORT const char* rocprofiler_get_status_name(int status) {
  // "ROCPROFILER_STATUS_" + name, built once per code.
  static std::string names[kR7StatusCount];
  static std::once_flag once;
  std::call_once(once, [] {
    for (int i = 0; i < kR7StatusCount; ++i) {
      names[i] = std::string("ROCPROFILER_STATUS_") + kR7StatusNames[i];
    }
  });
  const int idx = R7Index(status);
  return idx < 0 ? nullptr : names[idx].c_str();
}

FAKE_EXPORT const char* rocprofiler_get_status_string(int status) {
  const int idx = R7Index(status);
  return idx < 0 ? nullptr : kR7StatusStrings[idx];
}

// rocprofiler-register's entry into the SDK (rocprofiler_abi.md 2.1 step 4). The real SDK exports
// it, and register aborts the process when a tool is indicated but this symbol cannot be found;
// roctx_utils checks for it before binding roctx. The fake accepts every table and does nothing
// with it: roctx forwarding is modelled by fake_sdk_dispatch_roctx instead.
FAKE_EXPORT int rocprofiler_set_api_table(const char* /*name*/, uint64_t /*lib_version*/,
                                          uint64_t /*lib_instance*/, void** /*tables*/,
                                          uint64_t /*num_tables*/) {
  return 0;
}

// =============================================================================================
// Replay and probes (test-only)
// =============================================================================================

// Emits one marker callback (ENTER = 1, EXIT = 2, NONE = 0) to every started context that
// subscribed `kind` and whose operation filter passes `op`. Returns the number of callbacks made
// (callers may declare it void).
FAKE_EXPORT int fake_sdk_marker(int kind, int op, int phase, const char* message, uint64_t arg_u64,
                                int64_t retval) {
  return Marker(kind, op, phase, message, arg_u64, retval);
}

// The entry the fake roctx calls around each of its functions (same as fake_sdk_marker).
FAKE_EXPORT int fake_sdk_dispatch_roctx(int op, int phase, const char* message, uint64_t arg_u64,
                                        int64_t retval, int kind) {
  return Marker(kind, op, phase, message, arg_u64, retval);
}

// Passes an arbitrary record (len must equal the version's record size: 56 or 64) to every started
// context subscribed to `kind`, without operation filtering, with a fresh zeroed user_data slot.
FAKE_EXPORT int fake_sdk_marker_raw(int kind, const void* record_bytes, size_t len) {
  if (record_bytes == nullptr) return 0;
  if (len != (Layout7() ? sizeof(Record7) : sizeof(Record6))) return 0;
  Target targets[kMaxServices];
  const int n = CollectTargets(kind, -1, targets, kMaxServices);
  for (int i = 0; i < n; ++i) {
    uint64_t user_data = 0;
    if (Layout7()) {
      Record7 r;
      std::memcpy(&r, record_bytes, sizeof(r));
      reinterpret_cast<Callback7>(targets[i].callback)(r, &user_data, targets[i].cb_data);
    } else {
      Record6 r;
      std::memcpy(&r, record_bytes, sizeof(r));
      reinterpret_cast<Callback6>(targets[i].callback)(r, &user_data, targets[i].cb_data);
    }
    g_delivered.fetch_add(1, std::memory_order_relaxed);
  }
  return n;
}

// 1 if any context is started.
FAKE_EXPORT int fake_sdk_context_active() {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (auto& c : g_contexts) {
    if (c.active.load()) return 1;
  }
  return 0;
}

// The kinds configured on the first context, in configuration order; returns how many there are
// (writes at most `max`).
FAKE_EXPORT int fake_sdk_configured_kinds(int* out, int max) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_contexts.empty()) return 0;
  const auto& services = g_contexts.front().services;
  for (int i = 0; i < static_cast<int>(services.size()) && i < max && out != nullptr; ++i) {
    out[i] = services[i].kind;
  }
  return static_cast<int>(services.size());
}

// Non-zero if the tool wrote outside the fields of the version's client_id layout (e.g. 7.x size
// overwritten, 6.x handle overwritten, canary behind the struct changed), or passed a bad client_id
// to the client finalize function.
FAKE_EXPORT int fake_sdk_client_id_corrupted() { return g_client_id_corrupted.load(); }

FAKE_EXPORT int fake_sdk_configure_calls() { return g_configure_calls.load(); }
FAKE_EXPORT int fake_sdk_initialize_calls() { return g_initialize_calls.load(); }
FAKE_EXPORT int fake_sdk_tool_finalize_calls() { return g_tool_finalize_calls.load(); }
FAKE_EXPORT int fake_sdk_client_finalize_calls() { return g_client_finalize_calls.load(); }
// Non-zero if configure returned a result with size < 32 (initialize then not called).
FAKE_EXPORT int fake_sdk_result_rejected() { return g_result_rejected.load(); }
FAKE_EXPORT uint64_t fake_sdk_delivered() { return g_delivered.load(); }
FAKE_EXPORT uint32_t fake_sdk_version() { return Version(); }

// The client_id name the tool set in configure (empty if none or if the layout was corrupted).
FAKE_EXPORT void fake_sdk_client_name(char* buf, size_t cap) {
  if (buf == nullptr || cap == 0) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  std::strncpy(buf, g_client_name.c_str(), cap - 1);
  buf[cap - 1] = '\0';
}

// Runs the SDK's finalization now (tool finalize(tool_data) once, all contexts stopped), as the
// SDK's atexit handler would.
FAKE_EXPORT void fake_sdk_finalize() { Finalize(); }
