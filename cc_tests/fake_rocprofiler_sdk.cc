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
// Also: buffers with KERNEL_DISPATCH, MEMORY_COPY and HIP_RUNTIME_API buffer tracing delivered
// on one SDK-internal thread (rocprofiler_abi.md 3.6, 5.2-5.4), every kernel dispatch modelled as
// a hipLaunchKernel call whose API record shares the dispatch's correlation id (the host interval
// and thread a consumer joins kernels to ranges by), memory copies as hipMemcpyAsync calls the
// same way, hipGraphLaunch calls whose kernels all share the call's id, the buffer kinds'
// operation iteration and names (HIP ids numbered differently per layout), CODE_OBJECT callback
// tracing (5.6), external correlation id stacks (3.8). Their test hooks are declared in
// fake_sdk_hooks.h.
// Tool discovery as registration.cpp does it (rocprofiler_tools_and_xprof_roofline.md A): when a
// runtime registers (rocprofiler_set_api_table: the fake roctx's first call, the fake HIP's
// hipInit) or a tool forces configuration, every tool is found in priority order (forced,
// ROCP_TOOL_LIBRARIES with its parsing quirk and per-version failure handling, a global
// rocprofiler_configure), configured, initialized, and finalized at exit in that order.
// What it does not: other buffer kinds' records, HIP API callback tracing, HSA/HIP tables, the
// 7.0 range kind synthesis (tests replay kind 21 with fake_sdk_marker).
//
// Test-only entry points are prefixed fake_sdk_ (see "replay and probes" below). The fake roctx
// (fake_roctx.cc) finds fake_sdk_dispatch_roctx through dlsym(RTLD_DEFAULT), which stands in for
// the real SDK rewriting roctx's dispatch tables, so load this library RTLD_GLOBAL.
#include <dlfcn.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
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
  kBufferNotFound = 3,
  kKindNotFound = 4,
  kOperationNotFound = 5,
  kContextInvalid = 10,
  kContextIdNotZero = 13,
  kBufferBusy = 14,
  kServiceAlreadyConfigured = 15,
  kConfigurationLocked = 16,
  kNotImplemented = 17,
  kIncompatibleAbi = 18,
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

// rocprofiler_record_header_t (rocprofiler_abi.md 5.2, 16 bytes, all versions). The union's
// u64 hash = category | (kind << 32) overlays category/kind.
struct RecordHeader {
  uint32_t category;  // rocprofiler_buffer_category_t
  uint32_t kind;      // rocprofiler_buffer_tracing_kind_t for category TRACING
  void* payload;
};
static_assert(sizeof(RecordHeader) == 16, "record header");
static_assert(offsetof(RecordHeader, category) == 0 && offsetof(RecordHeader, kind) == 4 &&
                  offsetof(RecordHeader, payload) == 8,
              "record header offsets");

// rocprofiler_dim3_t (12 bytes, alignment 4)
struct Dim3 {
  uint32_t x, y, z;
};
static_assert(sizeof(Dim3) == 12 && alignof(Dim3) == 4, "dim3");

// rocprofiler_kernel_dispatch_info_t (5.3, 128 bytes, all versions; size field = 72)
struct KernelDispatchInfo {
  uint64_t size;
  uint64_t agent_id;
  uint64_t queue_id;
  uint64_t kernel_id;
  uint64_t dispatch_id;
  uint32_t private_segment_size;
  uint32_t group_segment_size;
  Dim3 workgroup_size;
  Dim3 grid_size;
  uint8_t reserved_padding[56];
};
static_assert(sizeof(KernelDispatchInfo) == 128, "kernel_dispatch_info");
static_assert(offsetof(KernelDispatchInfo, size) == 0 &&
                  offsetof(KernelDispatchInfo, agent_id) == 8 &&
                  offsetof(KernelDispatchInfo, queue_id) == 16 &&
                  offsetof(KernelDispatchInfo, kernel_id) == 24 &&
                  offsetof(KernelDispatchInfo, dispatch_id) == 32 &&
                  offsetof(KernelDispatchInfo, private_segment_size) == 40 &&
                  offsetof(KernelDispatchInfo, group_segment_size) == 44 &&
                  offsetof(KernelDispatchInfo, workgroup_size) == 48 &&
                  offsetof(KernelDispatchInfo, grid_size) == 60 &&
                  offsetof(KernelDispatchInfo, reserved_padding) == 72,
              "kernel_dispatch_info offsets");
constexpr uint64_t kDispatchInfoSizeField = offsetof(KernelDispatchInfo, reserved_padding);  // 72

// rocprofiler_buffer_tracing_kernel_dispatch_record_t (5.4, 184 bytes, all versions: 6.x's
// 16-byte correlation_id_t and 7.0's async_correlation_id_t have the same layout).
struct KernelDispatchRecord {
  uint64_t size;
  int32_t kind;
  int32_t operation;
  uint64_t correlation_internal;
  uint64_t correlation_external;  // rocprofiler_user_data_t
  uint64_t thread_id;
  uint64_t start_timestamp;
  uint64_t end_timestamp;
  KernelDispatchInfo dispatch_info;
};
static_assert(sizeof(KernelDispatchRecord) == 184, "kernel dispatch buffer record");
static_assert(offsetof(KernelDispatchRecord, size) == 0 &&
                  offsetof(KernelDispatchRecord, kind) == 8 &&
                  offsetof(KernelDispatchRecord, operation) == 12 &&
                  offsetof(KernelDispatchRecord, correlation_internal) == 16 &&
                  offsetof(KernelDispatchRecord, correlation_external) == 24 &&
                  offsetof(KernelDispatchRecord, thread_id) == 32 &&
                  offsetof(KernelDispatchRecord, start_timestamp) == 40 &&
                  offsetof(KernelDispatchRecord, end_timestamp) == 48 &&
                  offsetof(KernelDispatchRecord, dispatch_info) == 56,
              "kernel dispatch buffer record offsets");
static_assert(offsetof(KernelDispatchRecord, dispatch_info) +
                          offsetof(KernelDispatchInfo, agent_id) == 64 &&
                  offsetof(KernelDispatchRecord, dispatch_info) +
                          offsetof(KernelDispatchInfo, queue_id) == 72 &&
                  offsetof(KernelDispatchRecord, dispatch_info) +
                          offsetof(KernelDispatchInfo, kernel_id) == 80 &&
                  offsetof(KernelDispatchRecord, dispatch_info) +
                          offsetof(KernelDispatchInfo, grid_size) == 116,
              "kernel dispatch record: agent @64, queue @72, kernel_id @80, grid @116");

// rocprofiler_buffer_tracing_hip_api_record_t (HIP_RUNTIME_API, buffer kind 5). Unlike the
// kernel dispatch record (async correlation id, 16 bytes in every version), it carries the full
// rocprofiler_correlation_id_t, so 7.0's `ancestor` (5.1) moves the timestamps and the thread id
// back by 8 bytes: 56 bytes below version 10000, 64 from it on. A consumer must pick the layout
// by version, as for the callback record, or read `size`.
struct HipApiRecord6 {  // 6.2-6.4
  uint64_t size;
  int32_t kind;
  int32_t operation;
  uint64_t correlation_internal;
  uint64_t correlation_external;  // rocprofiler_user_data_t
  uint64_t start_timestamp;       // ns, CLOCK_BOOTTIME: the API call's entry
  uint64_t end_timestamp;         // ns, CLOCK_BOOTTIME: its exit
  uint64_t thread_id;             // TID of the calling thread
};
static_assert(sizeof(HipApiRecord6) == 56, "6.x hip api buffer record");
static_assert(offsetof(HipApiRecord6, size) == 0 && offsetof(HipApiRecord6, kind) == 8 &&
                  offsetof(HipApiRecord6, operation) == 12 &&
                  offsetof(HipApiRecord6, correlation_internal) == 16 &&
                  offsetof(HipApiRecord6, correlation_external) == 24 &&
                  offsetof(HipApiRecord6, start_timestamp) == 32 &&
                  offsetof(HipApiRecord6, end_timestamp) == 40 &&
                  offsetof(HipApiRecord6, thread_id) == 48,
              "6.x hip api buffer record offsets");

struct HipApiRecord7 {  // 7.0
  uint64_t size;
  int32_t kind;
  int32_t operation;
  uint64_t correlation_internal;
  uint64_t correlation_external;
  uint64_t correlation_ancestor;
  uint64_t start_timestamp;
  uint64_t end_timestamp;
  uint64_t thread_id;
};
static_assert(sizeof(HipApiRecord7) == 64, "7.x hip api buffer record");
static_assert(offsetof(HipApiRecord7, size) == 0 && offsetof(HipApiRecord7, kind) == 8 &&
                  offsetof(HipApiRecord7, operation) == 12 &&
                  offsetof(HipApiRecord7, correlation_internal) == 16 &&
                  offsetof(HipApiRecord7, correlation_external) == 24 &&
                  offsetof(HipApiRecord7, correlation_ancestor) == 32 &&
                  offsetof(HipApiRecord7, start_timestamp) == 40 &&
                  offsetof(HipApiRecord7, end_timestamp) == 48 &&
                  offsetof(HipApiRecord7, thread_id) == 56,
              "7.x hip api buffer record offsets");

// rocprofiler_buffer_tracing_memory_copy_record_t (MEMORY_COPY, buffer kind 10): like the kernel
// dispatch record it carries the 16-byte async correlation id in every version; 7.0 appends the
// copy's destination and source addresses (rocprofiler_address_t, 8 bytes each) behind `bytes`:
// 80 bytes below version 10000, 96 from it on. The first 80 bytes never move.
struct MemoryCopyRecord6 {  // 6.2-6.4
  uint64_t size;
  int32_t kind;
  int32_t operation;  // rocprofiler_memory_copy_operation_t: the direction
  uint64_t correlation_internal;
  uint64_t correlation_external;  // rocprofiler_user_data_t
  uint64_t thread_id;             // TID of the thread that issued the copy
  uint64_t start_timestamp;       // ns: the copy on the device
  uint64_t end_timestamp;
  uint64_t dst_agent_id;  // rocprofiler_agent_id_t
  uint64_t src_agent_id;
  uint64_t bytes;
};
static_assert(sizeof(MemoryCopyRecord6) == 80, "6.x memory copy buffer record");
static_assert(offsetof(MemoryCopyRecord6, size) == 0 && offsetof(MemoryCopyRecord6, kind) == 8 &&
                  offsetof(MemoryCopyRecord6, operation) == 12 &&
                  offsetof(MemoryCopyRecord6, correlation_internal) == 16 &&
                  offsetof(MemoryCopyRecord6, correlation_external) == 24 &&
                  offsetof(MemoryCopyRecord6, thread_id) == 32 &&
                  offsetof(MemoryCopyRecord6, start_timestamp) == 40 &&
                  offsetof(MemoryCopyRecord6, end_timestamp) == 48 &&
                  offsetof(MemoryCopyRecord6, dst_agent_id) == 56 &&
                  offsetof(MemoryCopyRecord6, src_agent_id) == 64 &&
                  offsetof(MemoryCopyRecord6, bytes) == 72,
              "6.x memory copy buffer record offsets");

struct MemoryCopyRecord7 {  // 7.0
  uint64_t size;
  int32_t kind;
  int32_t operation;
  uint64_t correlation_internal;  // rocprofiler_async_correlation_id_t: still 16 bytes
  uint64_t correlation_external;
  uint64_t thread_id;
  uint64_t start_timestamp;
  uint64_t end_timestamp;
  uint64_t dst_agent_id;
  uint64_t src_agent_id;
  uint64_t bytes;
  uint64_t dst_address;  // rocprofiler_address_t
  uint64_t src_address;
};
static_assert(sizeof(MemoryCopyRecord7) == 96, "7.x memory copy buffer record");
static_assert(offsetof(MemoryCopyRecord7, size) == 0 && offsetof(MemoryCopyRecord7, kind) == 8 &&
                  offsetof(MemoryCopyRecord7, operation) == 12 &&
                  offsetof(MemoryCopyRecord7, correlation_internal) == 16 &&
                  offsetof(MemoryCopyRecord7, correlation_external) == 24 &&
                  offsetof(MemoryCopyRecord7, thread_id) == 32 &&
                  offsetof(MemoryCopyRecord7, start_timestamp) == 40 &&
                  offsetof(MemoryCopyRecord7, end_timestamp) == 48 &&
                  offsetof(MemoryCopyRecord7, dst_agent_id) == 56 &&
                  offsetof(MemoryCopyRecord7, src_agent_id) == 64 &&
                  offsetof(MemoryCopyRecord7, bytes) == 72 &&
                  offsetof(MemoryCopyRecord7, dst_address) == 80 &&
                  offsetof(MemoryCopyRecord7, src_address) == 88,
              "7.x memory copy buffer record offsets");

// rocprofiler_buffer_tracing_cb_t: context and buffer ids are {u64 handle} by value (INTEGER
// class, one register each, same as a u64).
using BufferCallback = void (*)(uint64_t context_id, uint64_t buffer_id, RecordHeader** headers,
                                size_t num_headers, void* cb_data, uint64_t drop_count);

// rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t (5.6). sizeof is 72
// before 6.4 (the struct ends after accum_vgpr_count + padding) and 88 from ~6.4 (M060, version
// 600) on; the base fields never move.
struct KernelSymbolData {
  uint64_t size;
  uint64_t kernel_id;
  uint64_t code_object_id;
  const char* kernel_name;
  uint64_t kernel_object;
  uint32_t kernarg_segment_size;
  uint32_t kernarg_segment_alignment;
  uint32_t group_segment_size;
  uint32_t private_segment_size;
  uint32_t sgpr_count;
  uint32_t arch_vgpr_count;
  uint32_t accum_vgpr_count;
  int64_t kernel_code_entry_byte_offset;  // ~6.4+ only
  uint64_t kernel_address;                // ~6.4+ only
};
static_assert(sizeof(KernelSymbolData) == 88, "kernel symbol register data (6.4+)");
static_assert(offsetof(KernelSymbolData, size) == 0 &&
                  offsetof(KernelSymbolData, kernel_id) == 8 &&
                  offsetof(KernelSymbolData, code_object_id) == 16 &&
                  offsetof(KernelSymbolData, kernel_name) == 24 &&
                  offsetof(KernelSymbolData, kernel_object) == 32 &&
                  offsetof(KernelSymbolData, kernarg_segment_size) == 40 &&
                  offsetof(KernelSymbolData, kernarg_segment_alignment) == 44 &&
                  offsetof(KernelSymbolData, group_segment_size) == 48 &&
                  offsetof(KernelSymbolData, private_segment_size) == 52 &&
                  offsetof(KernelSymbolData, sgpr_count) == 56 &&
                  offsetof(KernelSymbolData, arch_vgpr_count) == 60 &&
                  offsetof(KernelSymbolData, accum_vgpr_count) == 64 &&
                  offsetof(KernelSymbolData, kernel_code_entry_byte_offset) == 72 &&
                  offsetof(KernelSymbolData, kernel_address) == 80,
              "kernel symbol register data offsets");
constexpr uint64_t kKernelSymbolSizeOld = offsetof(KernelSymbolData, kernel_code_entry_byte_offset);
static_assert(kKernelSymbolSizeOld == 72, "kernel symbol register data before 6.4");

// rocprofiler_callback_tracing_code_object_load_data_t (5.6, 88 bytes, all versions)
struct CodeObjectLoadData {
  uint64_t size;
  uint64_t code_object_id;
  uint64_t agent_id;  // rocp_agent in 6.2/6.3
  uint64_t hsa_agent;
  const char* uri;
  uint64_t load_base;
  uint64_t load_size;
  int64_t load_delta;
  int32_t storage_type;  // NONE 0, FILE 1, MEMORY 2
  union {
    int storage_file;
    struct {
      uint64_t memory_base;
      uint64_t memory_size;
    } memory;
  } storage;
};
static_assert(sizeof(CodeObjectLoadData) == 88, "code object load data");
static_assert(offsetof(CodeObjectLoadData, code_object_id) == 8 &&
                  offsetof(CodeObjectLoadData, agent_id) == 16 &&
                  offsetof(CodeObjectLoadData, hsa_agent) == 24 &&
                  offsetof(CodeObjectLoadData, uri) == 32 &&
                  offsetof(CodeObjectLoadData, load_base) == 40 &&
                  offsetof(CodeObjectLoadData, load_size) == 48 &&
                  offsetof(CodeObjectLoadData, load_delta) == 56 &&
                  offsetof(CodeObjectLoadData, storage_type) == 64 &&
                  offsetof(CodeObjectLoadData, storage) == 72,
              "code object load data offsets");

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

// Buffer tracing kinds (rocprofiler_abi.md 4.2): 0-11 are the same everywhere; only
// KERNEL_DISPATCH, MEMORY_COPY and HIP_RUNTIME_API produce records in this fake, the other kinds
// can be configured but stay silent.
constexpr int kBufferKindHipRuntimeApi = 5;
constexpr int kBufferKindMemoryCopy = 10;
constexpr int kBufferKindKernelDispatch = 11;
int BufferKindLast() {
  const uint32_t v = Version();
  if (v >= 10000) return 33;  // 7.0: ... MARKER_CORE_RANGE_API 32
  if (v >= 600) return 20;    // ~6.4 (M060): ROCDECODE_API 19 [inferred]
  if (v >= 500) return 19;    // ~6.3 (M050): RUNTIME_INITIALIZATION 18 [inferred]
  return 15;                  // 6.2: CORRELATION_ID_RETIREMENT 14
}
bool BufferKindExists(int kind) { return kind > 0 && kind < BufferKindLast(); }

// HIP runtime API operations (rocprofiler_hip_runtime_api_id_t). The real enum has hundreds of
// entries and its values are not stable across releases; this fake models ~25 names and
// deliberately numbers them differently per layout, so a consumer that hard-codes an id (instead
// of asking rocprofiler_iterate_buffer_tracing_kind_operations / _query_..._operation_name) fails
// on one of the two:
//   6.x (version < 10000):  id = 10 + 3 * i                 (table order, 10 .. 82)
//   7.x (version >= 10000): id = 100 + 7 * (19 - i) for the first 20 (reversed, 233 .. 100),
//                           300 + 7 * (i - 20) for the stream memory operations after them
// The gaps are there so that "ids are 0..N-1" is wrong too. The set differs too: the last name
// exists only in the 7.x layout (HIP 7's stream batch memory operations), as the real sets grow
// by release. Besides launches and copies, the stream memory operations enqueue GPU work (clr
// runs them as blit kernels): a consumer that picks the calls to trace by a list of launch names
// loses their kernels' launch calls.
const char* const kHipRuntimeApiNames[] = {
    "hipGetDevice",           "hipSetDevice",          "hipMalloc",
    "hipFree",                "hipMemcpy",             "hipMemcpyAsync",
    "hipMemsetAsync",         "hipStreamSynchronize",  "hipDeviceSynchronize",
    "hipEventRecord",         "hipGetLastError",       "hipLaunchKernel",
    "hipModuleLaunchKernel",  "hipExtModuleLaunchKernel", "hipExtLaunchKernel",
    "hipLaunchCooperativeKernel", "hipGraphLaunch",    "hipLaunchKernel_spt",
    "hipGraphLaunch_spt",     "hipHccModuleLaunchKernel", "hipStreamWriteValue32",
    "hipStreamWriteValue64",  "hipStreamWaitValue32",  "hipStreamWaitValue64",
    "hipStreamBatchMemOp",
};
constexpr int kHipOpCount = sizeof(kHipRuntimeApiNames) / sizeof(kHipRuntimeApiNames[0]);
static_assert(10 + 3 * (kHipOpCount - 1) < kMaxOperation &&
                  300 + 7 * (kHipOpCount - 21) < kMaxOperation,
              "every HIP operation id passes the configure filter check");
static_assert(10 + 3 * (kHipOpCount - 1) < 100, "6.x ids never name a 7.x operation");

// Whether this version has the function at `index` (the last is 7.x's only).
bool HipOpExists(int index) { return index < kHipOpCount - 1 || Layout7(); }

int32_t HipOpId(int index) {
  if (!Layout7()) return 10 + 3 * index;
  return index < 20 ? 100 + 7 * (19 - index) : 300 + 7 * (index - 20);
}

// This version's id of a HIP runtime function, or -1 (also for NULL, and for one this version
// does not have).
int32_t HipOpByName(const char* name) {
  if (name == nullptr) return -1;
  for (int i = 0; i < kHipOpCount; ++i) {
    if (HipOpExists(i) && std::strcmp(kHipRuntimeApiNames[i], name) == 0) return HipOpId(i);
  }
  return -1;
}

// rocprofiler_kernel_dispatch_operation_t: NONE 0, ENQUEUE 1, COMPLETE 2 (buffer records carry
// COMPLETE). Iteration lists ENQUEUE and COMPLETE, not NONE [inferred: the SDK's id lists skip
// NONE and LAST]; the names are the SDK's enum names without the ROCPROFILER_ prefix [inferred].
struct OpName {
  int32_t op;
  const char* name;
};
const OpName kKernelDispatchOps[] = {{1, "KERNEL_DISPATCH_ENQUEUE"},
                                     {2, "KERNEL_DISPATCH_COMPLETE"}};

// rocprofiler_memory_copy_operation_t: the copy's direction, the same numbering in 6.x and 7.x.
// Unlike KERNEL_DISPATCH, iteration lists NONE too.
const OpName kMemoryCopyOps[] = {{0, "MEMORY_COPY_NONE"},
                                 {1, "MEMORY_COPY_HOST_TO_HOST"},
                                 {2, "MEMORY_COPY_HOST_TO_DEVICE"},
                                 {3, "MEMORY_COPY_DEVICE_TO_HOST"},
                                 {4, "MEMORY_COPY_DEVICE_TO_DEVICE"}};

// The operations of a buffer tracing kind, ascending by id (as the SDK iterates them). Empty for
// a kind this fake does not model (it exists, it just has no operation table here).
std::vector<OpName> BufferKindOperations(int kind) {
  std::vector<OpName> out;
  if (kind == kBufferKindHipRuntimeApi) {
    for (int i = 0; i < kHipOpCount; ++i) {
      if (HipOpExists(i)) out.push_back({HipOpId(i), kHipRuntimeApiNames[i]});
    }
  } else if (kind == kBufferKindKernelDispatch) {
    out.assign(std::begin(kKernelDispatchOps), std::end(kKernelDispatchOps));
  } else if (kind == kBufferKindMemoryCopy) {
    out.assign(std::begin(kMemoryCopyOps), std::end(kMemoryCopyOps));
  }
  std::sort(out.begin(), out.end(), [](const OpName& x, const OpName& y) { return x.op < y.op; });
  return out;
}

constexpr int kKindCodeObject = 10;          // callback tracing kind
constexpr int kCodeObjectOpLoad = 1;         // rocprofiler_code_object_operation_t
constexpr int kCodeObjectOpKernelSymbol = 2;  // DEVICE_KERNEL_SYMBOL_REGISTER
constexpr int kPhaseLoad = 1, kPhaseUnload = 2;
constexpr int kKernelDispatchComplete = 2;  // buffer records carry operation COMPLETE
constexpr uint32_t kCategoryTracing = 1;
constexpr int kPolicyNone = 0, kPolicyDiscard = 1, kPolicyLossless = 2;

// Memory handed to a consumer for the duration of one callback is poisoned with this byte
// afterwards and kept mapped for a while (see Quarantine), so a consumer that kept a pointer
// reads 0xA5 garbage instead of plausible data.
constexpr unsigned char kPoison = 0xA5;

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

struct BufferService {
  int kind = 0;
  std::vector<int32_t> ops;  // empty = all operations
  uint64_t buffer = 0;
};

struct Context {
  uint64_t handle = 0;
  std::atomic<bool> active{false};
  std::vector<Service> services;               // callback tracing
  std::vector<BufferService> buffer_services;  // buffer tracing
};

std::mutex g_mutex;
std::deque<Context> g_contexts;  // stable addresses
int g_service_count = 0;
uint64_t g_next_context_handle = 1000;

std::atomic<int> g_init_status{0};  // 0 not yet, -1 initializing, 1 done
std::atomic<int> g_fini_status{0};  // 0 not yet, -1 finalizing, 1 done
std::atomic<bool> g_forced{false};

// One tool the SDK found, in priority order (index = priority = client handle): the forced
// configure first, then ROCP_TOOL_LIBRARIES in list order, then a global rocprofiler_configure.
struct Client {
  std::string origin;  // "(forced)", the listed path, or "(RTLD_DEFAULT)"
  ConfigureFn configure = nullptr;
  ToolConfigureResult result{};  // what configure returned (copied, as the SDK does)
  bool have_result = false;
  bool initialized = false;
  bool finalized = false;
  std::string name;  // what configure wrote into client_id->name
};
std::vector<Client> g_clients;  // guarded by g_registration (and stable after initialization)
std::recursive_mutex g_registration;
std::atomic<int> g_configure_calls{0};
std::atomic<int> g_initialize_calls{0};
std::atomic<int> g_tool_finalize_calls{0};
std::atomic<int> g_client_finalize_calls{0};
std::atomic<int> g_client_id_corrupted{0};
std::atomic<int> g_result_rejected{0};
std::atomic<uint64_t> g_delivered{0};

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

// ---------------------------------------------------------------------------------------------
// External correlation ids (rocprofiler_abi.md 3.8): one LIFO stack per (context, thread).
// ---------------------------------------------------------------------------------------------

std::mutex g_ext_mutex;
std::map<std::pair<uint64_t, uint64_t>, std::vector<uint64_t>> g_ext;  // (ctx, tid) -> stack
// The "default" thread whose latest value a thread without a stack inherits: the real SDK uses
// the thread that loaded it; here the thread that first started the SDK's initialization.
std::atomic<uint64_t> g_default_tid{0};
// external_correlation.cpp's default data: one value for the whole SDK, not per context, set
// by every push on the default thread (to the value) and every pop there (to the new top, or 0),
// in whichever context.
uint64_t g_default_value = 0;  // guarded by g_ext_mutex

// The external correlation value a record produced now on `tid` for `ctx` carries, as
// external_correlation.cpp's get(): the top of that thread's stack in that context; a thread
// that never pushed there (no stack), or whose stack is empty again, gets the default data.
uint64_t ExternalTopLocked(uint64_t ctx, uint64_t tid) {
  auto it = g_ext.find({ctx, tid});
  if (it != g_ext.end() && !it->second.empty()) return it->second.back();
  return g_default_value;
}

uint64_t ExternalTop(uint64_t ctx, uint64_t tid) {
  std::lock_guard<std::mutex> lock(g_ext_mutex);
  return ExternalTopLocked(ctx, tid);
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

// One callback-tracing record, in the version's layout, to one service.
void DeliverOne(const Target& t, int kind, int op, int phase, uint64_t correlation, void* payload,
                uint64_t* user_data) {
  const uint64_t tid = ThreadId();
  if (Layout7()) {
    Record7 r{};
    r.context_id = t.context;
    r.thread_id = tid;
    r.correlation_internal = correlation;
    r.correlation_external = ExternalTop(t.context, tid);
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
    r.correlation_external = ExternalTop(t.context, tid);
    r.kind = kind;
    r.operation = op;
    r.phase = phase;
    r.payload = payload;
    reinterpret_cast<Callback6>(t.callback)(r, user_data, t.cb_data);
  }
  g_delivered.fetch_add(1, std::memory_order_relaxed);
}

int Deliver(const Target* targets, int n, int kind, int op, int phase, uint64_t correlation,
            void* payload, CallFrame& frame) {
  for (int i = 0; i < n; ++i) {
    DeliverOne(targets[i], kind, op, phase, correlation, payload,
               &frame.user_data[targets[i].slot]);
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
// Poisoned memory: what a consumer got for one callback and must not keep
// ---------------------------------------------------------------------------------------------

// After a callback returns, the memory it was lent (buffer records, kernel names) is overwritten
// with kPoison and kept mapped here for the next kQuarantine blocks, so a consumer that kept a
// pointer reads 0xA5 garbage (deterministically, not whatever the allocator reused the memory
// for), and a test can check that the poison happened. Leaked on purpose: the delivery thread may
// still run during static destruction.
constexpr size_t kQuarantine = 64;
struct QuarantineState {
  std::mutex m;
  std::deque<std::unique_ptr<unsigned char[]>> blocks;
};
QuarantineState& Q() {
  static QuarantineState* q = new QuarantineState;
  return *q;
}

void PoisonAndQuarantine(std::unique_ptr<unsigned char[]> block, size_t len) {
  if (!block) return;
  std::memset(block.get(), kPoison, len);
  QuarantineState& q = Q();
  std::lock_guard<std::mutex> lock(q.m);
  q.blocks.push_back(std::move(block));
  while (q.blocks.size() > kQuarantine) q.blocks.pop_front();
}

// ---------------------------------------------------------------------------------------------
// Buffers (rocprofiler_abi.md 3.6) and their delivery thread
// ---------------------------------------------------------------------------------------------

struct PendingRecord {
  uint32_t category = 0;
  uint32_t kind = 0;
  std::vector<unsigned char> bytes;  // the payload the header points at
};

struct Buffer {
  uint64_t handle = 0;
  uint64_t context = 0;  // the context it was created in: the callback's first argument
  size_t size = 0;
  size_t watermark = 0;
  int policy = 0;
  BufferCallback callback = nullptr;
  void* cb_data = nullptr;
  std::vector<PendingRecord> pending;  // not yet handed to the delivery thread
  size_t pending_bytes = 0;            // payload bytes of `pending`
  uint64_t drops = 0;                  // dropped since the last batch was sealed
  uint64_t sealed = 0;                 // batches handed to the delivery thread
  uint64_t delivered = 0;              // batches whose callback has returned
  bool destroyed = false;
};

struct Batch {
  Buffer* buffer = nullptr;
  std::vector<PendingRecord> records;
  uint64_t drops = 0;
  uint64_t seq = 0;
};

// Leaked on purpose (see Q()).
struct BufferState {
  std::mutex m;
  std::condition_variable cv;  // queue changes and deliveries, for the thread and for waiters
  std::deque<Buffer> buffers;  // stable addresses; destroyed ones stay, marked
  uint64_t next_handle = 5000;
  std::deque<Batch> queue;
  bool thread_started = false;
  bool closed = false;       // finalized: nothing is sealed any more
  uint64_t extra_drops = 0;  // fake_sdk_set_next_drop_count
};
BufferState& B() {
  static BufferState* s = new BufferState;
  return *s;
}

std::atomic<uint64_t> g_delivery_tid{0};
std::atomic<bool> g_reversed{false};
std::atomic<uint64_t> g_buffer_flushes{0};
std::atomic<uint64_t> g_records_delivered{0};
std::atomic<uint64_t> g_records_discarded{0};
std::atomic<uint64_t> g_next_dispatch_id{1};

bool OnDeliveryThread() { return ThreadId() == g_delivery_tid.load(); }

Buffer* FindBufferLocked(uint64_t handle) {
  for (auto& b : B().buffers) {
    if (b.handle == handle && !b.destroyed) return &b;
  }
  return nullptr;
}

// Builds the array of header pointers, the headers and the payloads in one block, calls the
// consumer, then poisons the block.
void DeliverBatch(uint64_t context, uint64_t buffer, BufferCallback cb, void* cb_data,
                  std::vector<PendingRecord>& records, uint64_t drops) {
  const size_t n = records.size();
  if (g_reversed.load()) std::reverse(records.begin(), records.end());
  size_t total = n * (sizeof(RecordHeader*) + sizeof(RecordHeader));
  for (const auto& r : records) total += (r.bytes.size() + 7) & ~size_t{7};
  if (total == 0) total = 16;  // a valid (empty) array even when only drops are reported
  std::unique_ptr<unsigned char[]> block(new unsigned char[total]);
  auto** ptrs = reinterpret_cast<RecordHeader**>(block.get());
  auto* headers = reinterpret_cast<RecordHeader*>(block.get() + n * sizeof(RecordHeader*));
  unsigned char* payload = block.get() + n * (sizeof(RecordHeader*) + sizeof(RecordHeader));
  for (size_t i = 0; i < n; ++i) {
    std::memcpy(payload, records[i].bytes.data(), records[i].bytes.size());
    headers[i].category = records[i].category;
    headers[i].kind = records[i].kind;
    headers[i].payload = payload;
    ptrs[i] = &headers[i];
    payload += (records[i].bytes.size() + 7) & ~size_t{7};
  }
  cb(context, buffer, ptrs, n, cb_data, drops);
  g_records_delivered.fetch_add(n);
  PoisonAndQuarantine(std::move(block), total);
}

// The SDK-internal thread (one per process, started with the first sealed batch): delivers
// batches in the order they were sealed.
void DeliveryLoop() {
  BufferState& st = B();
  g_delivery_tid.store(ThreadId());
  std::unique_lock<std::mutex> lock(st.m);
  for (;;) {
    st.cv.wait(lock, [&] { return !st.queue.empty(); });
    Batch batch = std::move(st.queue.front());
    st.queue.pop_front();
    Buffer* b = batch.buffer;
    const uint64_t context = b->context, handle = b->handle;
    const BufferCallback cb = b->callback;
    void* const cb_data = b->cb_data;
    lock.unlock();
    if (cb != nullptr) DeliverBatch(context, handle, cb, cb_data, batch.records, batch.drops);
    lock.lock();
    b->delivered = batch.seq;
    st.cv.notify_all();
  }
}

// Hands the buffer's pending records (and drop count) to the delivery thread as one batch.
// Returns false if there is nothing to hand over.
bool SealLocked(Buffer& b) {
  BufferState& st = B();
  if (st.closed) return false;
  if (b.pending.empty() && b.drops == 0 && st.extra_drops == 0) return false;
  Batch batch;
  batch.buffer = &b;
  batch.records.swap(b.pending);
  batch.drops = b.drops + st.extra_drops;
  batch.seq = ++b.sealed;
  b.pending_bytes = 0;
  b.drops = 0;
  st.extra_drops = 0;
  st.queue.push_back(std::move(batch));
  if (!st.thread_started) {
    st.thread_started = true;
    std::thread(&DeliveryLoop).detach();
  }
  st.cv.notify_all();
  return true;
}

// Appends one record. LOSSLESS never drops: a record that does not fit seals the current half
// and starts the other (the real SDK double-buffers and blocks the producer when both halves
// are full; this fake queues without bound and never blocks [simplification]). DISCARD and NONE
// drop a record that does not fit in size_bytes and count it for the next batch's drop_count
// [inferred: the SDK gives NONE the same drop behaviour as DISCARD]. Reaching the watermark
// seals (watermark 0: every record). Returns whether the record went in.
bool AppendLocked(Buffer& b, uint32_t category, uint32_t kind, const void* bytes, size_t len) {
  if (b.destroyed || B().closed) return false;
  if (b.pending_bytes + len > b.size) {
    if (b.policy != kPolicyLossless) {
      ++b.drops;
      return false;
    }
    SealLocked(b);
  }
  PendingRecord r;
  r.category = category;
  r.kind = kind;
  r.bytes.assign(static_cast<const unsigned char*>(bytes),
                 static_cast<const unsigned char*>(bytes) + len);
  b.pending.push_back(std::move(r));
  b.pending_bytes += len;
  if (b.pending_bytes >= b.watermark) SealLocked(b);
  return true;
}

// (context, buffer) of every started context with buffer tracing of `kind` whose operation
// filter is empty or contains `op`.
std::vector<std::pair<uint64_t, uint64_t>> BufferTargets(int kind, int32_t op) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  std::lock_guard<std::mutex> lock(g_mutex);
  for (auto& c : g_contexts) {
    if (!c.active.load(std::memory_order_acquire)) continue;
    for (const auto& s : c.buffer_services) {
      if (s.kind != kind) continue;
      if (!s.ops.empty() && std::find(s.ops.begin(), s.ops.end(), op) == s.ops.end()) continue;
      out.emplace_back(c.handle, s.buffer);
    }
  }
  return out;
}

// KERNEL_DISPATCH buffer records carry operation COMPLETE.
std::vector<std::pair<uint64_t, uint64_t>> KernelDispatchTargets() {
  return BufferTargets(kBufferKindKernelDispatch, kKernelDispatchComplete);
}

uint64_t BoottimeNs() {
  struct timespec t;
  clock_gettime(CLOCK_BOOTTIME, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_nsec);
}

// One HIP_RUNTIME_API buffer record in this version's layout (56 or 64 bytes).
std::vector<unsigned char> HipApiRecordBytes(int32_t op, uint64_t internal, uint64_t external,
                                             uint64_t start_ns, uint64_t end_ns, uint64_t tid) {
  std::vector<unsigned char> bytes;
  if (Layout7()) {
    HipApiRecord7 r{};
    r.size = sizeof(r);
    r.kind = kBufferKindHipRuntimeApi;
    r.operation = op;
    r.correlation_internal = internal;
    r.correlation_external = external;
    r.correlation_ancestor = 0;  // a top-level call: no enclosing traced API call
    r.start_timestamp = start_ns;
    r.end_timestamp = end_ns;
    r.thread_id = tid;
    bytes.resize(sizeof(r));
    std::memcpy(bytes.data(), &r, sizeof(r));
  } else {
    HipApiRecord6 r{};
    r.size = sizeof(r);
    r.kind = kBufferKindHipRuntimeApi;
    r.operation = op;
    r.correlation_internal = internal;
    r.correlation_external = external;
    r.start_timestamp = start_ns;
    r.end_timestamp = end_ns;
    r.thread_id = tid;
    bytes.resize(sizeof(r));
    std::memcpy(bytes.data(), &r, sizeof(r));
  }
  return bytes;
}

std::atomic<uint64_t> g_hip_api_records{0};

// fake_sdk_dispatch_kernel_ex flags (fake_sdk_hooks.h).
constexpr int kNoHipApi = 1, kHipApiFirst = 2, kSealBetween = 4, kModuleLaunch = 8;

// One traced HIP runtime call on the calling thread that enqueued `count` pieces of device work
// (kernel dispatches, a memory copy), rocprofiler_abi.md 5.4: every activity record (buffer kind
// `kind`, operation `op` for the filters) and the call's API record (`api_op`; none with
// kNoHipApi) carry ONE fresh correlation internal id, so a consumer can join the device work to
// the call's host interval and thread; each record carries the thread's external-correlation
// stack top for its context at the call. The real SDK writes the API record at the call's exit
// while the activity records wait for the device, so either may reach the buffer first and they
// may land in different batches; the flags choose which.
//
// `prepare(activity_traced)` runs once, after the id was taken and before any record is built
// (the dispatch-id counter advances there, and only when a context traces `kind`);
// `build(j, correlation, external, tid)` returns the bytes of activity record j for one target
// context. Activity records are appended in order j = 0 .. count-1, each to every target, the API
// record after all of them (before them with kHipApiFirst; with kSealBetween every target buffer
// delivers what it holds between the two halves). Returns the number of buffers activity record 0
// went into (0 when count is 0; API records never count).
template <typename Prepare, typename Build>
int TracedHipCall(int32_t api_op, int flags, int kind, int32_t op, size_t count,
                  Prepare&& prepare, Build&& build) {
  const uint64_t t0 = BoottimeNs();  // the API call's entry
  std::vector<std::pair<uint64_t, uint64_t>> targets;
  if (count > 0) targets = BufferTargets(kind, op);
  const bool with_api = (flags & kNoHipApi) == 0 && api_op >= 0;
  std::vector<std::pair<uint64_t, uint64_t>> api_targets;
  if (with_api) api_targets = BufferTargets(kBufferKindHipRuntimeApi, api_op);
  if (targets.empty() && api_targets.empty()) return 0;
  const uint64_t tid = ThreadId();
  // One call: one correlation id (shared by its API record and all the work it enqueued),
  // whichever contexts record it. Without a traced API call the id is still fresh (hsa/queue.cpp).
  const uint64_t correlation = g_next_correlation.fetch_add(1, std::memory_order_relaxed);
  prepare(!targets.empty());
  std::vector<std::vector<std::vector<unsigned char>>> records(count);  // [j][target]
  std::vector<uint64_t> api_external(api_targets.size());
  {
    std::lock_guard<std::mutex> lock(g_ext_mutex);
    std::vector<uint64_t> external(targets.size());
    for (size_t i = 0; i < targets.size(); ++i) {
      external[i] = ExternalTopLocked(targets[i].first, tid);  // at enqueue time
    }
    for (size_t j = 0; j < count && !targets.empty(); ++j) {
      for (size_t i = 0; i < targets.size(); ++i) {
        records[j].push_back(build(j, correlation, external[i], tid));
      }
    }
    // Same rule as the activity: the thread's stack top when the call was made.
    for (size_t i = 0; i < api_targets.size(); ++i) {
      api_external[i] = ExternalTopLocked(api_targets[i].first, tid);
    }
  }
  uint64_t t1 = BoottimeNs();  // the API call's exit: after the enqueue
  if (t1 <= t0) t1 = t0 + 1;   // a call takes time; consumers may rely on start < end
  std::vector<std::vector<unsigned char>> api_records;
  for (size_t i = 0; i < api_targets.size(); ++i) {
    api_records.push_back(HipApiRecordBytes(api_op, correlation, api_external[i], t0, t1, tid));
  }

  int n = 0;
  uint64_t api_appended = 0;
  std::lock_guard<std::mutex> lock(B().m);
  auto append_activity = [&] {
    for (size_t j = 0; j < records.size(); ++j) {
      for (size_t i = 0; i < records[j].size(); ++i) {
        Buffer* b = FindBufferLocked(targets[i].second);
        if (b != nullptr && AppendLocked(*b, kCategoryTracing, static_cast<uint32_t>(kind),
                                         records[j][i].data(), records[j][i].size()) &&
            j == 0) {
          ++n;
        }
      }
    }
  };
  auto append_api = [&] {
    for (size_t i = 0; i < api_targets.size(); ++i) {
      Buffer* b = FindBufferLocked(api_targets[i].second);
      if (b != nullptr && AppendLocked(*b, kCategoryTracing, kBufferKindHipRuntimeApi,
                                       api_records[i].data(), api_records[i].size())) {
        ++api_appended;
      }
    }
  };
  // As a watermark would: what is pending in each target buffer goes out as its own batch.
  auto seal_targets = [&] {
    for (const auto& t : targets) {
      if (Buffer* b = FindBufferLocked(t.second)) SealLocked(*b);
    }
    for (const auto& t : api_targets) {
      if (Buffer* b = FindBufferLocked(t.second)) SealLocked(*b);
    }
  };
  const bool seal = (flags & kSealBetween) != 0 && !api_targets.empty();
  if ((flags & kHipApiFirst) != 0) {
    append_api();
    if (seal) seal_targets();
    append_activity();
  } else {
    append_activity();
    if (seal) seal_targets();
    append_api();
  }
  g_hip_api_records.fetch_add(api_appended);
  return n;
}

// One KERNEL_DISPATCH buffer record (184 bytes, every version).
std::vector<unsigned char> KernelDispatchRecordBytes(uint64_t kernel_id, uint64_t start_ns,
                                                     uint64_t end_ns, uint64_t agent_id,
                                                     uint64_t queue_id, uint64_t dispatch_id,
                                                     uint64_t correlation, uint64_t external,
                                                     uint64_t tid) {
  KernelDispatchRecord r;
  std::memset(&r, 0, sizeof(r));
  r.size = sizeof(KernelDispatchRecord);
  r.kind = kBufferKindKernelDispatch;
  r.operation = kKernelDispatchComplete;
  r.correlation_internal = correlation;
  r.correlation_external = external;
  r.thread_id = tid;
  r.start_timestamp = start_ns;
  r.end_timestamp = end_ns;
  KernelDispatchInfo& d = r.dispatch_info;
  d.size = kDispatchInfoSizeField;
  d.agent_id = agent_id;
  d.queue_id = queue_id;
  d.kernel_id = kernel_id;
  d.dispatch_id = dispatch_id;
  d.private_segment_size = 0;
  d.group_segment_size = 0;
  d.workgroup_size = Dim3{256, 1, 1};
  d.grid_size = Dim3{65536, 1, 1};
  std::vector<unsigned char> bytes(sizeof(r));
  std::memcpy(bytes.data(), &r, sizeof(r));
  return bytes;
}

// A kernel enqueued by a HIP launch call (hipLaunchKernel, or hipModuleLaunchKernel with
// kModuleLaunch) on the calling thread.
int DispatchKernel(uint64_t kernel_id, uint64_t start_ns, uint64_t end_ns, uint64_t agent_id,
                   uint64_t queue_id, int flags) {
  const int32_t api_op = HipOpByName((flags & kModuleLaunch) ? "hipModuleLaunchKernel"
                                                             : "hipLaunchKernel");
  uint64_t dispatch_id = 0;
  return TracedHipCall(
      api_op, flags, kBufferKindKernelDispatch, kKernelDispatchComplete, 1,
      [&](bool traced) {
        if (traced) dispatch_id = g_next_dispatch_id.fetch_add(1, std::memory_order_relaxed);
      },
      [&](size_t, uint64_t correlation, uint64_t external, uint64_t tid) {
        return KernelDispatchRecordBytes(kernel_id, start_ns, end_ns, agent_id, queue_id,
                                         dispatch_id, correlation, external, tid);
      });
}

// A kernel enqueued by the HIP call `call` (a blit kernel of hipStreamWriteValue32, say) on the
// calling thread; -1 for a call this version does not have.
int DispatchKernelBy(const char* call, uint64_t kernel_id, uint64_t start_ns, uint64_t end_ns,
                     uint64_t agent_id, uint64_t queue_id) {
  const int32_t api_op = HipOpByName(call);
  if (api_op < 0) return -1;
  uint64_t dispatch_id = 0;
  return TracedHipCall(
      api_op, 0, kBufferKindKernelDispatch, kKernelDispatchComplete, 1,
      [&](bool traced) {
        if (traced) dispatch_id = g_next_dispatch_id.fetch_add(1, std::memory_order_relaxed);
      },
      [&](size_t, uint64_t correlation, uint64_t external, uint64_t tid) {
        return KernelDispatchRecordBytes(kernel_id, start_ns, end_ns, agent_id, queue_id,
                                         dispatch_id, correlation, external, tid);
      });
}

// A hipGraphLaunch on the calling thread: the graph's n kernels are enqueued inside the call, so
// all n dispatch records carry the call's correlation id; its one API record follows them.
int GraphLaunch(const uint64_t* kernel_ids, const uint64_t* starts, const uint64_t* ends, int n,
                uint64_t agent_id, uint64_t queue_id) {
  if (n < 0 || (n > 0 && (kernel_ids == nullptr || starts == nullptr || ends == nullptr))) {
    return -1;
  }
  uint64_t first_dispatch_id = 0;
  return TracedHipCall(
      HipOpByName("hipGraphLaunch"), 0, kBufferKindKernelDispatch, kKernelDispatchComplete,
      static_cast<size_t>(n),
      [&](bool traced) {
        if (traced) {
          first_dispatch_id = g_next_dispatch_id.fetch_add(static_cast<uint64_t>(n),
                                                           std::memory_order_relaxed);
        }
      },
      [&](size_t j, uint64_t correlation, uint64_t external, uint64_t tid) {
        return KernelDispatchRecordBytes(kernel_ids[j], starts[j], ends[j], agent_id, queue_id,
                                         first_dispatch_id + j, correlation, external, tid);
      });
}

// The made-up addresses of a 7.x memory copy record: derived from the call's correlation id, so
// a test can predict them.
constexpr uint64_t kCopyDstAddressBase = 0x7f0000000000ull;
constexpr uint64_t kCopySrcAddressBase = 0x7e0000000000ull;

// A hipMemcpyAsync on the calling thread: one MEMORY_COPY record (filtered on `operation`, the
// direction) in this version's layout (80 or 96 bytes) and the call's API record.
int MemoryCopy(int operation, uint64_t bytes, uint64_t start_ns, uint64_t end_ns,
               uint64_t dst_agent, uint64_t src_agent, int flags) {
  return TracedHipCall(
      HipOpByName("hipMemcpyAsync"), flags & (kNoHipApi | kHipApiFirst | kSealBetween),
      kBufferKindMemoryCopy, operation, 1, [](bool) {},
      [&](size_t, uint64_t correlation, uint64_t external, uint64_t tid) {
        MemoryCopyRecord7 r;  // the 6.x record is its first 80 bytes
        std::memset(&r, 0, sizeof(r));
        r.size = Layout7() ? sizeof(MemoryCopyRecord7) : sizeof(MemoryCopyRecord6);
        r.kind = kBufferKindMemoryCopy;
        r.operation = operation;
        r.correlation_internal = correlation;
        r.correlation_external = external;
        r.thread_id = tid;
        r.start_timestamp = start_ns;
        r.end_timestamp = end_ns;
        r.dst_agent_id = dst_agent;
        r.src_agent_id = src_agent;
        r.bytes = bytes;
        r.dst_address = kCopyDstAddressBase + (correlation << 12);
        r.src_address = kCopySrcAddressBase + (correlation << 12);
        std::vector<unsigned char> out(r.size);
        std::memcpy(out.data(), &r, r.size);
        return out;
      });
}

// One HIP API call with no kernel (fake_sdk_hip_api_call).
uint64_t HipApiCall(const char* op_name, uint64_t start_ns, uint64_t end_ns, uint64_t thread_id) {
  const int32_t op = HipOpByName(op_name);
  if (op < 0) return UINT64_MAX;
  const uint64_t tid = thread_id != 0 ? thread_id : ThreadId();
  const auto targets = BufferTargets(kBufferKindHipRuntimeApi, op);
  if (targets.empty()) return 0;
  const uint64_t correlation = g_next_correlation.fetch_add(1, std::memory_order_relaxed);
  std::vector<std::vector<unsigned char>> records;
  {
    std::lock_guard<std::mutex> lock(g_ext_mutex);
    for (const auto& t : targets) {
      records.push_back(HipApiRecordBytes(op, correlation, ExternalTopLocked(t.first, tid),
                                          start_ns, end_ns, tid));
    }
  }
  uint64_t appended = 0;
  std::lock_guard<std::mutex> lock(B().m);
  for (size_t i = 0; i < targets.size(); ++i) {
    Buffer* b = FindBufferLocked(targets[i].second);
    if (b != nullptr && AppendLocked(*b, kCategoryTracing, kBufferKindHipRuntimeApi,
                                     records[i].data(), records[i].size())) {
      ++appended;
    }
  }
  g_hip_api_records.fetch_add(appended);
  return appended != 0 ? correlation : 0;
}

// ---------------------------------------------------------------------------------------------
// Code objects (CODE_OBJECT callback tracing, rocprofiler_abi.md 4.5, 5.6)
// ---------------------------------------------------------------------------------------------

struct Symbol {
  uint64_t kernel_id = 0;
  std::string name;                     // the caller's string, copied
  std::unique_ptr<unsigned char[]> live;  // the kernel_name lent to consumers until UNLOAD
  uint64_t user_data[kMaxServices] = {};  // LOAD -> UNLOAD, per service [inferred]
};

struct CodeObject {
  uint64_t id = 0;
  std::string uri;
  std::deque<Symbol> symbols;
  uint64_t user_data[kMaxServices] = {};
};

std::mutex g_co_mutex;
std::map<uint64_t, std::unique_ptr<CodeObject>> g_code_objects;
std::atomic<int> g_strict_names{-1};  // -1: not yet read from FAKE_ROCPROFILER_STRICT_NAMES

bool StrictNames() {
  int v = g_strict_names.load();
  if (v < 0) {
    v = EnvTrue("FAKE_ROCPROFILER_STRICT_NAMES") ? 1 : 0;
    g_strict_names.store(v);
  }
  return v != 0;
}

std::unique_ptr<unsigned char[]> CopyName(const std::string& name) {
  std::unique_ptr<unsigned char[]> p(new unsigned char[name.size() + 1]);
  std::memcpy(p.get(), name.c_str(), name.size() + 1);
  return p;
}

// Poisons a lent name but keeps a NUL at the end, so a consumer that reads it late gets a
// string of 0xA5 bytes rather than running off the block.
void RetireName(std::unique_ptr<unsigned char[]> p, size_t len) {
  if (p) PoisonAndQuarantine(std::move(p), len);  // byte len is the NUL and stays
}

void FillLoadData(CodeObjectLoadData* d, const CodeObject& co) {
  std::memset(d, 0, sizeof(*d));
  d->size = sizeof(CodeObjectLoadData);
  d->code_object_id = co.id;
  d->agent_id = 1;
  d->hsa_agent = 0;
  d->uri = co.uri.c_str();
  d->load_base = 0x7f0000000000ull + (co.id << 24);
  d->load_size = 1 << 20;
  d->load_delta = 0;
  d->storage_type = 1;  // FILE
  d->storage.storage_file = -1;
}

// The payload in a KernelSymbolData-sized block; for versions < 600 only the first 72 bytes are
// the struct (size = 72) and the 16 bytes behind it are poison, so a consumer that reads the
// 6.4+ fields without checking size reads 0xA5 garbage.
void FillSymbolData(KernelSymbolData* d, uint64_t co_id, uint64_t kernel_id, const char* name) {
  std::memset(d, 0, sizeof(*d));
  d->size = Version() >= 600 ? sizeof(KernelSymbolData) : kKernelSymbolSizeOld;
  d->kernel_id = kernel_id;
  d->code_object_id = co_id;
  d->kernel_name = name;
  d->kernel_object = 0x7e0000000000ull + kernel_id * 0x100;
  d->kernarg_segment_size = 64;
  d->kernarg_segment_alignment = 16;
  d->group_segment_size = 0;
  d->private_segment_size = 0;
  d->sgpr_count = 16;
  d->arch_vgpr_count = 32;
  d->accum_vgpr_count = 0;
  if (Version() >= 600) {
    d->kernel_code_entry_byte_offset = 256;
    d->kernel_address = d->kernel_object + 256;
  } else {
    std::memset(reinterpret_cast<unsigned char*>(d) + kKernelSymbolSizeOld, kPoison,
                sizeof(*d) - kKernelSymbolSizeOld);
  }
}

// The first symbol of a code object first delivers the code object's LOAD (operation LOAD, the
// load-data payload), as the real SDK reports a code object before its symbols. Code-object
// records carry internal correlation id 0 [inferred]. Contexts started later do not get a replay
// of what was loaded before [simplification].
int LoadKernelSymbol(uint64_t kernel_id, const char* mangled_name, uint64_t code_object_id) {
  CodeObject* co = nullptr;
  Symbol* sym = nullptr;
  bool fresh = false;
  {
    std::lock_guard<std::mutex> lock(g_co_mutex);
    auto& slot = g_code_objects[code_object_id];
    if (!slot) {
      fresh = true;
      slot.reset(new CodeObject);
      slot->id = code_object_id;
      slot->uri = "file:///fake/code_object_" + std::to_string(code_object_id) + ".hsaco";
    }
    co = slot.get();
    co->symbols.emplace_back();
    sym = &co->symbols.back();
    sym->kernel_id = kernel_id;
    sym->name = mangled_name ? mangled_name : "";
    sym->live = CopyName(sym->name);
  }
  Target targets[kMaxServices];
  if (fresh) {
    const int n = CollectTargets(kKindCodeObject, kCodeObjectOpLoad, targets, kMaxServices);
    CodeObjectLoadData d;
    FillLoadData(&d, *co);
    for (int i = 0; i < n; ++i) {
      DeliverOne(targets[i], kKindCodeObject, kCodeObjectOpLoad, kPhaseLoad, 0, &d,
                 &co->user_data[targets[i].slot]);
    }
  }
  const int n = CollectTargets(kKindCodeObject, kCodeObjectOpKernelSymbol, targets, kMaxServices);
  KernelSymbolData d;
  FillSymbolData(&d, code_object_id, kernel_id, reinterpret_cast<const char*>(sym->live.get()));
  for (int i = 0; i < n; ++i) {
    DeliverOne(targets[i], kKindCodeObject, kCodeObjectOpKernelSymbol, kPhaseLoad, 0, &d,
               &sym->user_data[targets[i].slot]);
  }
  if (StrictNames()) RetireName(std::move(sym->live), sym->name.size());
  return n;
}

// UNLOAD: every symbol's DEVICE_KERNEL_SYMBOL_REGISTER with phase UNLOAD, then the code object's
// LOAD operation with phase UNLOAD (the reverse of loading) [inferred]. The kernel names are
// poisoned once all of those callbacks returned.
int UnloadCodeObject(uint64_t code_object_id) {
  std::unique_ptr<CodeObject> co;
  {
    std::lock_guard<std::mutex> lock(g_co_mutex);
    auto it = g_code_objects.find(code_object_id);
    if (it == g_code_objects.end()) return -1;
    co = std::move(it->second);
    g_code_objects.erase(it);
  }
  Target targets[kMaxServices];
  int n = CollectTargets(kKindCodeObject, kCodeObjectOpKernelSymbol, targets, kMaxServices);
  for (auto& sym : co->symbols) {
    if (!sym.live) sym.live = CopyName(sym.name);  // strict mode retired the LOAD copy
    KernelSymbolData d;
    FillSymbolData(&d, co->id, sym.kernel_id, reinterpret_cast<const char*>(sym.live.get()));
    for (int i = 0; i < n; ++i) {
      DeliverOne(targets[i], kKindCodeObject, kCodeObjectOpKernelSymbol, kPhaseUnload, 0, &d,
                 &sym.user_data[targets[i].slot]);
    }
  }
  n = CollectTargets(kKindCodeObject, kCodeObjectOpLoad, targets, kMaxServices);
  CodeObjectLoadData d;
  FillLoadData(&d, *co);
  for (int i = 0; i < n; ++i) {
    DeliverOne(targets[i], kKindCodeObject, kCodeObjectOpLoad, kPhaseUnload, 0, &d,
               &co->user_data[targets[i].slot]);
  }
  for (auto& sym : co->symbols) RetireName(std::move(sym.live), sym.name.size());
  return n;
}

// ---------------------------------------------------------------------------------------------
// Configure / finalize
// ---------------------------------------------------------------------------------------------

// FAKE_ROCPROFILER_TRACE_TOOLS=1: one stderr line per configure, initialize and finalize call, so
// a test can check their order: "fake rocprofiler-sdk: <step> <priority> <origin> [<detail>]".
void TraceTool(const char* step, size_t priority, const Client& c, const std::string& detail = "") {
  static const bool on = EnvTrue("FAKE_ROCPROFILER_TRACE_TOOLS");
  if (!on) return;
  std::fprintf(stderr, "fake rocprofiler-sdk: %s %zu %s%s%s\n", step, priority, c.origin.c_str(),
               detail.empty() ? "" : " ", detail.c_str());
}

void FinalizeClient(Client& c) {
  if (!c.initialized || c.finalized) return;
  c.finalized = true;
  TraceTool("finalize", static_cast<size_t>(&c - g_clients.data()), c);
  if (c.result.finalize != nullptr) {
    g_tool_finalize_calls.fetch_add(1);
    c.result.finalize(c.result.tool_data);
  }
}

void Finalize() {
  int expected = 0;
  if (!g_fini_status.compare_exchange_strong(expected, -1)) return;
  {
    // Each tool's finalize, in priority order (registration.cpp invoke_client_finalizers).
    std::lock_guard<std::recursive_mutex> reg(g_registration);
    for (auto& c : g_clients) FinalizeClient(c);
  }
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (auto& c : g_contexts) c.active.store(false, std::memory_order_release);
  }
  // The SDK does not flush buffers by itself: what the tool did not flush (in its finalize at
  // the latest) is lost. Batches already handed to the delivery thread are still delivered, and
  // finalize waits for them, so no buffer callback runs after it returns (unless it runs on the
  // delivery thread itself) [inferred].
  {
    BufferState& st = B();
    std::unique_lock<std::mutex> lock(st.m);
    for (auto& b : st.buffers) {
      g_records_discarded.fetch_add(b.pending.size());
      b.pending.clear();
      b.pending_bytes = 0;
      b.drops = 0;
    }
    st.extra_drops = 0;
    st.closed = true;
    if (!OnDeliveryThread()) {
      st.cv.wait(lock, [&] {
        for (const auto& b : st.buffers) {
          if (b.delivered < b.sealed) return false;
        }
        return true;
      });
    }
  }
  g_fini_status.store(1);
}

// The finalize function handed to a tool's initialize: with one tool it finalizes the whole SDK
// (7.0); with several it finalizes that tool only, matched by handle.
void ClientFinalizeCommon(uint32_t handle) {
  g_client_finalize_calls.fetch_add(1);
  std::lock_guard<std::recursive_mutex> reg(g_registration);
  if (handle >= g_clients.size()) {
    g_client_id_corrupted.fetch_add(1);
    return;
  }
  if (g_clients.size() == 1) {
    Finalize();
  } else {
    FinalizeClient(g_clients[handle]);
  }
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

bool ClientIdIntact(const ClientIdBuffer& buf, size_t id_size, size_t name_off, size_t handle_off,
                    uint32_t expected_handle) {
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
  if (handle != expected_handle) return false;
  for (size_t i = handle_off + 4; i < id_size; ++i) {  // tail padding
    if (buf.bytes[i] != 0) return false;
  }
  uintptr_t name = 0;
  std::memcpy(&name, buf.bytes + name_off, sizeof(name));
  if (name != 0 && name < 4096) return false;  // a size or handle written over the name
  return true;
}

// configure(version, runtime_version, priority, client_id) for client `index`, with the version's
// client_id (handle = priority = index).
void ConfigureClient(size_t index) {
  Client& c = g_clients[index];
  const uint32_t handle = static_cast<uint32_t>(index);
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
  std::memcpy(buf.bytes + handle_off, &handle, sizeof(handle));
  g_configure_calls.fetch_add(1);
  ToolConfigureResult* result = c.configure(Version(), "fake-rocprofiler-sdk", handle, buf.bytes);
  if (!ClientIdIntact(buf, id_size, name_off, handle_off, handle)) {
    g_client_id_corrupted.fetch_add(1);
  } else {
    const char* name = nullptr;
    std::memcpy(&name, buf.bytes + name_off, sizeof(name));
    c.name = name ? std::string(name, strnlen(name, 256)) : std::string();
  }
  TraceTool("configure", index, c, result == nullptr ? "declined" : "name=" + c.name);
  if (result == nullptr) return;  // declined
  if (result->size < sizeof(ToolConfigureResult)) {
    g_result_rejected.fetch_add(1);
    return;
  }
  c.result = *result;  // the SDK copies the struct immediately
  c.have_result = true;
}

bool UniqueConfigure(ConfigureFn fn) {
  for (const auto& c : g_clients) {
    if (c.configure == fn) return false;
  }
  return true;
}

// ROCP_TOOL_LIBRARIES as registration.cpp (6.2 and 7.0) splits it: a value without ':' is one
// path; with a ':', only pieces that a ':' ENDS are kept ("a.so:b.so" loads only a.so, "a.so:b.so:"
// both), empty pieces dropped.
std::vector<std::string> ToolLibraries() {
  const char* env = std::getenv("ROCP_TOOL_LIBRARIES");
  std::vector<std::string> out;
  if (env == nullptr || *env == '\0') return out;
  std::string val(env);
  if (val.find(':') == std::string::npos) {
    out.push_back(val);
    return out;
  }
  size_t pos;
  while ((pos = val.find(':')) != std::string::npos) {
    std::string token = val.substr(0, pos);
    if (!token.empty()) out.push_back(token);
    val.erase(0, pos + 1);
  }
  return out;
}

[[noreturn]] void Fatal(const std::string& what) {
  std::fprintf(stderr, "fake rocprofiler-sdk: FATAL: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

// registration.cpp find_clients(): the forced configure, then the listed libraries (dlopen
// RTLD_NOLOAD probe, then RTLD_LOCAL | RTLD_LAZY; a library that does not load aborts in 7.0 and
// is skipped in 6.2; one without rocprofiler_configure is skipped with a warning in 7.0 and
// aborts in 6.2), then a globally visible rocprofiler_configure. Duplicates are dropped.
void FindClients(ConfigureFn forced) {
  if (forced != nullptr) g_clients.push_back(Client{"(forced)", forced});
  for (const std::string& path : ToolLibraries()) {
    void* handle = dlopen(path.c_str(), RTLD_NOLOAD | RTLD_LAZY);
    if (handle == nullptr) handle = dlopen(path.c_str(), RTLD_LOCAL | RTLD_LAZY);
    if (handle == nullptr) {
      const char* err = dlerror();
      if (Layout7()) Fatal("[ROCP_TOOL_LIBRARIES] error dlopening '" + path + "': " + (err ? err : ""));
      std::fprintf(stderr, "fake rocprofiler-sdk: warning: [ROCP_TOOL_LIBRARIES] '%s' did not load: %s\n",
                   path.c_str(), err ? err : "");
      continue;
    }
    auto fn = reinterpret_cast<ConfigureFn>(dlsym(handle, "rocprofiler_configure"));
    if (fn == nullptr) {
      if (!Layout7()) Fatal("[ROCP_TOOL_LIBRARIES] '" + path + "' has no rocprofiler_configure");
      std::fprintf(stderr,
                   "fake rocprofiler-sdk: warning: [ROCP_TOOL_LIBRARIES] rocprofiler-sdk tool library "
                   "'%s' did not contain rocprofiler_configure symbol\n",
                   path.c_str());
      continue;
    }
    if (UniqueConfigure(fn)) g_clients.push_back(Client{path, fn});
  }
  auto global = reinterpret_cast<ConfigureFn>(dlsym(RTLD_DEFAULT, "rocprofiler_configure"));
  if (global != nullptr && UniqueConfigure(global)) g_clients.push_back(Client{"(RTLD_DEFAULT)", global});
}

// registration.cpp initialize(): once, with the status -1 throughout (the only window for setup
// calls); the atexit finalizer is registered first, so tools' own exit hooks (registered inside
// their initialize) run before it. Every configure, then every initialize, in priority order.
void InitializeSdk(ConfigureFn forced) {
  std::lock_guard<std::recursive_mutex> reg(g_registration);
  if (g_init_status.load() != 0) return;
  uint64_t no_default = 0;
  g_default_tid.compare_exchange_strong(no_default, ThreadId());  // see ExternalTopLocked
  g_init_status.store(-1);
  if (!EnvTrue("FAKE_ROCPROFILER_NO_ATEXIT")) std::atexit(&AtExit);
  FindClients(forced);
  for (size_t i = 0; i < g_clients.size(); ++i) ConfigureClient(i);
  for (auto& c : g_clients) {
    if (!c.have_result) continue;
    if (c.result.initialize != nullptr) {
      TraceTool("initialize", static_cast<size_t>(&c - g_clients.data()), c);
      g_initialize_calls.fetch_add(1);
      AnyFunction fini = Layout7() ? reinterpret_cast<AnyFunction>(&ClientFinalize7Impl)
                                   : reinterpret_cast<AnyFunction>(&ClientFinalize6Impl);
      c.result.initialize(fini, c.result.tool_data);  // return value ignored, as in the SDK
    }
    c.initialized = true;
  }
  g_init_status.store(1);
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
  uint64_t no_default = 0;
  g_default_tid.compare_exchange_strong(no_default, ThreadId());  // see ExternalTopLocked
  if (LockedByOther() || g_init_status.load() != 0) return Code(kConfigurationLocked);
  if (configure_fn == nullptr) return Code(kInvalidArgument);
  if (g_forced.exchange(true)) return Code(kConfigurationLocked);
  setenv("ROCPROFILER_REGISTER_FORCE_LOAD", "1", 1);
  InitializeSdk(configure_fn);  // the forced tool first, then any listed ones
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

// rocprofiler_create_buffer (rocprofiler_abi.md 3.6). Setup call: only inside initialize. A null
// callback or out pointer, or a policy outside NONE/DISCARD/LOSSLESS, is INVALID_ARGUMENT
// [inferred]; a non-zero *buffer_id is accepted (the spec only says to zero it) [inferred]; a
// watermark above size_bytes is accepted as given (then DISCARD/NONE drop before it is reached).
FAKE_EXPORT int rocprofiler_create_buffer(uint64_t context_id, size_t size_bytes,
                                          size_t watermark_bytes, int policy,
                                          BufferCallback callback, void* callback_data,
                                          uint64_t* buffer_id) {
  FAKE_FAULT(rocprofiler_create_buffer);
  if (g_init_status.load() > -1) return Code(kConfigurationLocked);
  std::lock_guard<std::mutex> lock(g_mutex);
  if (FindContextLocked(context_id) == nullptr) return Code(kContextNotFound);
  if (buffer_id == nullptr || callback == nullptr) return Code(kInvalidArgument);
  if (policy < kPolicyNone || policy > kPolicyLossless) return Code(kInvalidArgument);
  BufferState& st = B();
  std::lock_guard<std::mutex> block(st.m);
  st.buffers.emplace_back();
  Buffer& b = st.buffers.back();
  b.handle = st.next_handle++;
  b.context = context_id;
  b.size = size_bytes;
  b.watermark = watermark_bytes;
  b.policy = policy;
  b.callback = callback;
  b.cb_data = callback_data;
  *buffer_id = b.handle;
  return kSuccess;
}

// rocprofiler_configure_buffer_tracing_service. Checks in this order: configuration locked,
// context, buffer (BUFFER_NOT_FOUND), kind already configured in this context for buffer tracing
// (SERVICE_ALREADY_CONFIGURED; callback and buffer tracing of a kind are separate services),
// kind, operations. Like the callback service, it does not look at whether the context is
// started. A buffer created in another context is accepted; its callback then reports the
// creating context [inferred].
FAKE_EXPORT int rocprofiler_configure_buffer_tracing_service(uint64_t context_id, int kind,
                                                              const int32_t* operations,
                                                              size_t operations_count,
                                                              uint64_t buffer_id) {
  FAKE_FAULT(rocprofiler_configure_buffer_tracing_service);
  // FAKE_ROCPROFILER_REFUSE_HIP_API: an SDK that will not trace HIP API calls into buffers (the
  // consumer's fallback, attribution through external correlation, is then under test).
  if (kind == kBufferKindHipRuntimeApi && std::getenv("FAKE_ROCPROFILER_REFUSE_HIP_API") != nullptr) {
    return Code(kKindNotFound);
  }
  if (g_init_status.load() > -1) return Code(kConfigurationLocked);
  std::lock_guard<std::mutex> lock(g_mutex);
  Context* ctx = FindContextLocked(context_id);
  if (ctx == nullptr) return Code(kContextNotFound);
  {
    std::lock_guard<std::mutex> block(B().m);
    if (FindBufferLocked(buffer_id) == nullptr) return Code(kBufferNotFound);
  }
  for (const auto& s : ctx->buffer_services) {
    if (s.kind == kind) return Code(kServiceAlreadyConfigured);
  }
  if (!BufferKindExists(kind)) return Code(kKindNotFound);
  BufferService svc;
  svc.kind = kind;
  svc.buffer = buffer_id;
  if (operations != nullptr) {
    for (size_t i = 0; i < operations_count; ++i) {
      if (operations[i] < 0 || operations[i] >= kMaxOperation) return Code(kOperationNotFound);
      svc.ops.push_back(operations[i]);
    }
  }
  ctx->buffer_services.push_back(std::move(svc));
  return kSuccess;
}

// rocprofiler_iterate_buffer_tracing_kind_operations (3.5, 3.6): calls cb(kind, op, data) for
// each operation of `kind`, ascending by id, until cb returns non-zero (0 = continue). A kind
// this version lacks is KIND_NOT_FOUND; a kind that exists but that this fake does not model
// iterates nothing (SUCCESS) [simplification]. Callable at any time, like the SDK's query
// functions (they need no configuration window).
FAKE_EXPORT int rocprofiler_iterate_buffer_tracing_kind_operations(
    int kind, int (*callback)(int kind, int32_t operation, void* data), void* data) {
  FAKE_FAULT(rocprofiler_iterate_buffer_tracing_kind_operations);
  if (!BufferKindExists(kind)) return Code(kKindNotFound);
  if (callback == nullptr) return Code(kInvalidArgument);
  for (const OpName& o : BufferKindOperations(kind)) {
    if (callback(kind, o.op, data) != 0) break;
  }
  return kSuccess;
}

// rocprofiler_query_buffer_tracing_kind_operation_name: a static string (never freed, never
// poisoned) and its length without the NUL; both out-pointers are nullable. Unknown kind:
// KIND_NOT_FOUND; an id that is not an operation of the kind in this version's numbering:
// OPERATION_NOT_FOUND (out-pointers untouched).
FAKE_EXPORT int rocprofiler_query_buffer_tracing_kind_operation_name(int kind, int32_t operation,
                                                                     const char** name,
                                                                     uint64_t* len) {
  FAKE_FAULT(rocprofiler_query_buffer_tracing_kind_operation_name);
  if (!BufferKindExists(kind)) return Code(kKindNotFound);
  for (const OpName& o : BufferKindOperations(kind)) {
    if (o.op != operation) continue;
    if (name != nullptr) *name = o.name;
    if (len != nullptr) *len = std::strlen(o.name);
    return kSuccess;
  }
  return Code(kOperationNotFound);
}

// rocprofiler_flush_buffer: hands what is pending to the delivery thread and waits until every
// batch of this buffer sealed so far has been delivered (synchronous; the callback still runs on
// the SDK thread). Called from inside a buffer callback (on the delivery thread) it would wait
// for itself: BUFFER_BUSY, for any buffer [inferred]. After finalization it delivers nothing
// and returns SUCCESS [inferred].
FAKE_EXPORT int rocprofiler_flush_buffer(uint64_t buffer_id) {
  FAKE_FAULT(rocprofiler_flush_buffer);
  BufferState& st = B();
  std::unique_lock<std::mutex> lock(st.m);
  Buffer* b = FindBufferLocked(buffer_id);
  if (b == nullptr) return Code(kBufferNotFound);
  if (OnDeliveryThread()) return Code(kBufferBusy);
  SealLocked(*b);
  const uint64_t target = b->sealed;
  st.cv.wait(lock, [&] { return b->delivered >= target; });
  g_buffer_flushes.fetch_add(1);
  return kSuccess;
}

// rocprofiler_destroy_buffer: discards what is pending (it does not flush; flush first),
// waits for batches already handed to the delivery thread, then forgets the id (later calls:
// BUFFER_NOT_FOUND; services configured with it record nothing). From inside a buffer callback:
// BUFFER_BUSY [inferred].
FAKE_EXPORT int rocprofiler_destroy_buffer(uint64_t buffer_id) {
  FAKE_FAULT(rocprofiler_destroy_buffer);
  BufferState& st = B();
  std::unique_lock<std::mutex> lock(st.m);
  Buffer* b = FindBufferLocked(buffer_id);
  if (b == nullptr) return Code(kBufferNotFound);
  if (OnDeliveryThread()) return Code(kBufferBusy);
  b->destroyed = true;  // no more appends
  g_records_discarded.fetch_add(b->pending.size());
  b->pending.clear();
  b->pending_bytes = 0;
  b->drops = 0;
  st.cv.wait(lock, [&] { return b->delivered >= b->sealed; });
  return kSuccess;
}

// rocprofiler_push_external_correlation_id (rocprofiler_abi.md 3.8): value is the 8-byte
// rocprofiler_user_data_t by value. tid < getpid() is INVALID_ARGUMENT (checked before the
// context, as in the SDK [inferred order]); an unknown context is CONTEXT_NOT_FOUND.
FAKE_EXPORT int rocprofiler_push_external_correlation_id(uint64_t context_id, uint64_t tid,
                                                         uint64_t value) {
  FAKE_FAULT(rocprofiler_push_external_correlation_id);
  if (tid < static_cast<uint64_t>(getpid())) return Code(kInvalidArgument);
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (FindContextLocked(context_id) == nullptr) return Code(kContextNotFound);
  }
  std::lock_guard<std::mutex> lock(g_ext_mutex);
  g_ext[{context_id, tid}].push_back(value);
  if (tid == g_default_tid.load()) g_default_value = value;
  return kSuccess;
}

// rocprofiler_pop_external_correlation_id: `out` (nullable) receives the popped value. Popping
// an empty (or never pushed) stack returns ERROR (1) and leaves *out alone: the spec names no
// dedicated code, ERROR is 1 in every version (unaffected by the renumbering after 12), and a
// consumer can only tell a failure by "not 0" anyway [choice; the real SDK may instead return
// SUCCESS with a zero value, so a consumer must not pop what it did not push].
FAKE_EXPORT int rocprofiler_pop_external_correlation_id(uint64_t context_id, uint64_t tid,
                                                        uint64_t* out) {
  FAKE_FAULT(rocprofiler_pop_external_correlation_id);
  if (tid < static_cast<uint64_t>(getpid())) return Code(kInvalidArgument);
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (FindContextLocked(context_id) == nullptr) return Code(kContextNotFound);
  }
  std::lock_guard<std::mutex> lock(g_ext_mutex);
  auto it = g_ext.find({context_id, tid});
  if (it == g_ext.end() || it->second.empty()) return kError;
  if (out != nullptr) *out = it->second.back();
  it->second.pop_back();
  if (tid == g_default_tid.load()) g_default_value = it->second.empty() ? 0 : it->second.back();
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
  *ts = BoottimeNs();
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
  // A runtime (roctx at its first call, HIP at hipInit: fake_roctx.cc, fake_hip.cc) registered
  // through rocprofiler-register, which calls this only when a tool is indicated: the SDK's
  // tool discovery runs now, once.
  if (g_fini_status.load() != 0 || LockedByOther()) return 0;
  InitializeSdk(nullptr);
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

// 1 if the first context created (a tool's marker context; the one fake_sdk_configured_kinds
// describes) is started. A tool may keep other contexts running for the whole process (ours
// keeps its kernel-dispatch context), so "any context" would not say whether sessions stop theirs.
FAKE_EXPORT int fake_sdk_context_active() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return !g_contexts.empty() && g_contexts.front().active.load() ? 1 : 0;
}

// 1 if any context is started.
FAKE_EXPORT int fake_sdk_any_context_active() {
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
  std::lock_guard<std::recursive_mutex> reg(g_registration);
  const std::string name = g_clients.empty() ? std::string() : g_clients.front().name;
  std::strncpy(buf, name.c_str(), cap - 1);
  buf[cap - 1] = '\0';
}

// The tools found, in priority order, as "origin=name" lines (name: what configure wrote;
// "declined" when configure returned null), into buf; returns their number.
FAKE_EXPORT int fake_sdk_clients(char* buf, size_t cap) {
  std::lock_guard<std::recursive_mutex> reg(g_registration);
  std::string all;
  for (const auto& c : g_clients) {
    all += c.origin + "=" + (c.have_result ? c.name : std::string("declined")) + "\n";
  }
  if (buf != nullptr && cap > 0) {
    std::strncpy(buf, all.c_str(), cap - 1);
    buf[cap - 1] = '\0';
  }
  return static_cast<int>(g_clients.size());
}

// Runs the SDK's finalization now (tool finalize(tool_data) once, all contexts stopped), as the
// SDK's atexit handler would.
FAKE_EXPORT void fake_sdk_finalize() { Finalize(); }

// ---- kernel tracing hooks (declared, with their contracts, in fake_sdk_hooks.h) ----

FAKE_EXPORT int fake_sdk_load_kernel_symbol(uint64_t kernel_id, const char* mangled_name,
                                            uint64_t code_object_id) {
  return LoadKernelSymbol(kernel_id, mangled_name, code_object_id);
}

FAKE_EXPORT int fake_sdk_unload_code_object(uint64_t code_object_id) {
  return UnloadCodeObject(code_object_id);
}

FAKE_EXPORT void fake_sdk_set_strict_symbol_names(int strict) {
  g_strict_names.store(strict ? 1 : 0);
}

FAKE_EXPORT int fake_sdk_dispatch_kernel(uint64_t kernel_id, uint64_t start_ns, uint64_t end_ns,
                                         uint64_t agent_id, uint64_t queue_id) {
  return DispatchKernel(kernel_id, start_ns, end_ns, agent_id, queue_id, 0);
}

FAKE_EXPORT int fake_sdk_dispatch_kernel_ex(uint64_t kernel_id, uint64_t start_ns, uint64_t end_ns,
                                            uint64_t agent_id, uint64_t queue_id, int flags) {
  return DispatchKernel(kernel_id, start_ns, end_ns, agent_id, queue_id, flags);
}

FAKE_EXPORT int fake_sdk_memory_copy(int operation, uint64_t bytes, uint64_t start_ns,
                                     uint64_t end_ns, uint64_t dst_agent, uint64_t src_agent,
                                     int flags) {
  return MemoryCopy(operation, bytes, start_ns, end_ns, dst_agent, src_agent, flags);
}

FAKE_EXPORT int fake_sdk_graph_launch(const uint64_t* kernel_ids, const uint64_t* starts,
                                      const uint64_t* ends, int n, uint64_t agent_id,
                                      uint64_t queue_id) {
  return GraphLaunch(kernel_ids, starts, ends, n, agent_id, queue_id);
}

FAKE_EXPORT uint64_t fake_sdk_hip_api_call(const char* op_name, uint64_t start_ns, uint64_t end_ns,
                                           uint64_t thread_id) {
  return HipApiCall(op_name, start_ns, end_ns, thread_id);
}

FAKE_EXPORT uint64_t fake_sdk_hip_api_records() { return g_hip_api_records.load(); }

FAKE_EXPORT int fake_sdk_dispatch_kernel_by(const char* hip_call, uint64_t kernel_id, uint64_t start_ns,
                                            uint64_t end_ns, uint64_t agent_id, uint64_t queue_id) {
  return DispatchKernelBy(hip_call, kernel_id, start_ns, end_ns, agent_id, queue_id);
}

// The names of the HIP runtime functions some context's buffer service for HIP_RUNTIME_API
// traces, sorted and joined with ',' into buf (NUL-terminated, cut to cap): "*" for a service
// with no filter (every operation). Returns the full length.
FAKE_EXPORT size_t fake_sdk_traced_hip_calls(char* buf, size_t cap) {
  std::vector<std::string> names;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (const auto& c : g_contexts) {
      for (const auto& svc : c.buffer_services) {
        if (svc.kind != kBufferKindHipRuntimeApi) continue;
        if (svc.ops.empty()) names.push_back("*");
        for (int32_t op : svc.ops) {
          for (int i = 0; i < kHipOpCount; ++i) {
            if (HipOpExists(i) && HipOpId(i) == op) names.push_back(kHipRuntimeApiNames[i]);
          }
        }
      }
    }
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  std::string joined;
  for (const auto& n : names) joined += (joined.empty() ? "" : ",") + n;
  if (buf != nullptr && cap > 0) {
    const size_t n = std::min(cap - 1, joined.size());
    std::memcpy(buf, joined.data(), n);
    buf[n] = '\0';
  }
  return joined.size();
}

FAKE_EXPORT int fake_sdk_dispatch_raw(const void* record, size_t len) {
  if (record == nullptr || len == 0) return 0;
  const auto targets = KernelDispatchTargets();
  int n = 0;
  std::lock_guard<std::mutex> lock(B().m);
  for (const auto& t : targets) {
    Buffer* b = FindBufferLocked(t.second);
    if (b != nullptr && AppendLocked(*b, kCategoryTracing, kBufferKindKernelDispatch, record, len)) {
      ++n;
    }
  }
  return n;
}

FAKE_EXPORT void fake_sdk_set_delivery_order(int reversed) { g_reversed.store(reversed != 0); }

FAKE_EXPORT uint64_t fake_sdk_buffer_flushes() { return g_buffer_flushes.load(); }
FAKE_EXPORT uint64_t fake_sdk_records_delivered() { return g_records_delivered.load(); }
FAKE_EXPORT uint64_t fake_sdk_records_discarded() { return g_records_discarded.load(); }

FAKE_EXPORT int fake_sdk_ext_stack_depth(uint64_t context_id, uint64_t tid) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (FindContextLocked(context_id) == nullptr) return -1;
  }
  std::lock_guard<std::mutex> lock(g_ext_mutex);
  auto it = g_ext.find({context_id, tid});
  return it == g_ext.end() ? 0 : static_cast<int>(it->second.size());
}

FAKE_EXPORT uint64_t fake_sdk_ext_stack_top(uint64_t context_id, uint64_t tid) {
  return ExternalTop(context_id, tid);
}

FAKE_EXPORT void fake_sdk_set_next_drop_count(uint64_t n) {
  std::lock_guard<std::mutex> lock(B().m);
  B().extra_drops += n;
}

FAKE_EXPORT uint64_t fake_sdk_delivery_thread_id() { return g_delivery_tid.load(); }

// ---------------------------------------------------------------------------------------------
// Agents (agent.h: rocprofiler_agent_v0_t's first 292
// bytes are laid out the same from ROCm 6.2 to 7.1; 6.2/6.3 (versions below 600) are 296 bytes,
// 6.4 and 7.0 add runtime_visibility and an 8-byte uuid (304), 7.1 a 16-byte uuid (312)). Two
// agents: a CPU, and one GPU, an MI300X (gfx942, 304 CUs, 2100 MHz, 192 GiB of HBM in one
// frame-buffer bank), whose handle is 1: the agent id the tests' dispatches name.
// ---------------------------------------------------------------------------------------------
namespace {

struct FakeMemBank {
  uint32_t heap_type, flags, width, mem_clk_max;
  uint64_t size_in_bytes;
};
static_assert(sizeof(FakeMemBank) == 24, "rocprofiler_agent_mem_bank_t");

struct FakeAgentPrefix {
  uint64_t size, id;
  uint32_t type, cpu_cores_count, simd_count, mem_banks_count;
  uint32_t counts_to_wave_front[9];
  uint32_t num_xcc, cu_count;
  uint32_t array_to_max_slots[6];
  uint32_t gfx_target_version;
  uint32_t pci_to_clk_ccompute[9];
  uint32_t max_engine_clk_fcompute;
  uint32_t fw_to_grid[8];
  uint64_t local_mem_size, hive_id, gpu_id;
  uint32_t dims[6];
  const FakeMemBank* mem_banks;
  const void* caches;
  const void* io_links;
  const char* name;
  const char* vendor_name;
  const char* product_name;
  const char* model_name;
  uint32_t node_id;
  int32_t logical_node_id, logical_node_type_id;
};
static_assert(offsetof(FakeAgentPrefix, cu_count) == 72, "agent.h");
static_assert(offsetof(FakeAgentPrefix, gfx_target_version) == 100, "agent.h");
static_assert(offsetof(FakeAgentPrefix, max_engine_clk_fcompute) == 140, "agent.h");
static_assert(offsetof(FakeAgentPrefix, mem_banks) == 224, "agent.h");
static_assert(offsetof(FakeAgentPrefix, name) == 248, "agent.h");
static_assert(offsetof(FakeAgentPrefix, logical_node_type_id) == 288, "agent.h");

size_t AgentSize() {
  const uint32_t v = Version();
  return v < 600 ? 296 : v < 10100 ? 304 : 312;
}

const std::vector<std::vector<uint8_t>>& Agents() {
  static const FakeMemBank* bank = new FakeMemBank{1, 0, 8192, 1300, 192ull << 30};
  static const std::vector<std::vector<uint8_t>>* agents = [] {
    auto* out = new std::vector<std::vector<uint8_t>>;
    FakeAgentPrefix cpu{};
    cpu.size = AgentSize();
    cpu.id = 0x100;
    cpu.type = 1;
    cpu.cu_count = 64;
    cpu.name = "AMD EPYC 9654";
    cpu.logical_node_id = 0;
    FakeAgentPrefix gpu{};
    gpu.size = AgentSize();
    gpu.id = 1;
    gpu.type = 2;
    gpu.simd_count = 1216;
    gpu.mem_banks_count = 1;
    gpu.num_xcc = 8;
    gpu.cu_count = 304;
    gpu.gfx_target_version = 90402;
    gpu.max_engine_clk_fcompute = 2100;
    gpu.mem_banks = bank;
    gpu.name = "gfx942";
    gpu.vendor_name = "AMD";
    gpu.product_name = "AMD Instinct MI300X";
    gpu.node_id = 2;
    gpu.logical_node_id = 1;
    gpu.logical_node_type_id = 0;
    for (const FakeAgentPrefix& a : {cpu, gpu}) {
      std::vector<uint8_t> bytes(a.size, 0);
      std::memcpy(bytes.data(), &a, sizeof(a));  // the version's tail (visibility, uuid) stays 0
      out->push_back(std::move(bytes));
    }
    return out;
  }();
  return *agents;
}

}  // namespace

// rocprofiler_query_available_agents: version 1 only (else INVALID_ARGUMENT), agent_size at
// most the version's struct size (else INCOMPATIBLE_ABI), then the callback, synchronously,
// with pointers to the SDK's own structs; its return value is the call's.
FAKE_EXPORT int rocprofiler_query_available_agents(uint32_t version,
                                                   int (*callback)(uint32_t, const void**, size_t, void*),
                                                   size_t agent_size, void* user_data) {
  FAKE_FAULT(rocprofiler_query_available_agents);
  if (version != 1 || callback == nullptr) return Code(kInvalidArgument);
  if (agent_size > AgentSize()) return Code(kIncompatibleAbi);
  std::vector<const void*> pointers;
  for (const auto& a : Agents()) pointers.push_back(a.data());
  return callback(version, pointers.data(), pointers.size(), user_data);
}
