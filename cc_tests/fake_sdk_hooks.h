// Test hooks of the fake rocprofiler-sdk (fake_rocprofiler_sdk.cc) for kernel tracing: code-object
// symbol loads, kernel dispatches into KERNEL_DISPATCH buffers with their launching HIP API calls
// into HIP_RUNTIME_API buffers, memory copies into MEMORY_COPY buffers (with their hipMemcpyAsync
// calls), HIP graph launches, delivery and external-correlation probes. The fake exports them
// with C linkage and default visibility; a test either includes this header and links the fake,
// or (the usual way, since the fake is dlopen'ed RTLD_GLOBAL) looks them up with dlsym and casts
// to the FakeSdk*Fn pointer types below.
//
// What the fake models (rocprofiler_abi.md 3.5-3.8, 4.2-4.5, 5.1-5.6):
//  - rocprofiler_create_buffer / configure_buffer_tracing_service / flush_buffer /
//    destroy_buffer with KERNEL_DISPATCH (buffer kind 11) records: a 16-byte
//    rocprofiler_record_header_t {category TRACING = 1 @0, kind 11 @4, payload @8} pointing at
//    a 184-byte rocprofiler_buffer_tracing_kernel_dispatch_record_t (all versions).
//  - HIP_RUNTIME_API (buffer kind 5) records, header {TRACING, 5}: a
//    rocprofiler_buffer_tracing_hip_api_record_t whose layout depends on the version, because
//    its correlation_id is the full rocprofiler_correlation_id_t (5.1):
//                        size  kind  op  internal  external  ancestor  start  end  thread_id
//      < 10000 (6.x):    @0    @8    @12 @16       @24       -         @32    @40  @48   = 56 B
//      >= 10000 (7.x):   @0    @8    @12 @16       @24       @32 (=0)  @40    @48  @56   = 64 B
//    start/end are CLOCK_BOOTTIME ns (the call's entry and exit), thread_id the caller's TID.
//  - MEMORY_COPY (buffer kind 10, every version) records, header {TRACING, 10}: a
//    rocprofiler_buffer_tracing_memory_copy_record_t; its correlation_id is the 16-byte async
//    one in every version (as in the kernel dispatch record), and 7.x appends two addresses:
//      size @0, kind @8, op @12, internal @16, external @24, thread_id @32, start @40, end @48,
//      dst_agent_id @56, src_agent_id @64, bytes @72          = 80 B below 10000 (6.x, size 80);
//      7.x (>= 10000): the same 80, then dst_address @80, src_address @88 = 96 B (size 96).
//    operation is the direction (rocprofiler_memory_copy_operation_t, same numbering in 6.x and
//    7.x): NONE 0, HOST_TO_HOST 1, HOST_TO_DEVICE 2, DEVICE_TO_HOST 3, DEVICE_TO_DEVICE 4.
//  - Every kernel dispatch is the enqueue of a hipLaunchKernel call on the calling thread: its
//    dispatch record's correlation internal id is the API record's (a fresh id per call), and
//    the API record follows the dispatch record (the SDK writes it at the call's exit; a short
//    kernel can complete first). fake_sdk_dispatch_kernel_ex changes the order, splits the two
//    into different batches, uses hipModuleLaunchKernel, or makes no API record (an enqueue
//    outside any traced HIP call, e.g. HSA-direct: the dispatch's id is fresh and unmatched).
//    A memory copy (fake_sdk_memory_copy) is likewise the enqueue of a hipMemcpyAsync call. A
//    hipGraphLaunch (fake_sdk_graph_launch) enqueues all of the graph's kernels inside ONE call:
//    every one of its dispatch records carries that call's correlation internal id (one id, n
//    dispatches), and its one API record follows them.
//  - rocprofiler_iterate_buffer_tracing_kind_operations(kind, cb(kind, op, data) -> 0 to go on,
//    data) and rocprofiler_query_buffer_tracing_kind_operation_name(kind, op, &name, &len):
//    HIP_RUNTIME_API has 24 operations in 6.x and 25 in 7.x (hipGetDevice ... hipMemcpyAsync
//    (i = 5), hipMemsetAsync (6), ... hipLaunchKernel (11), hipModuleLaunchKernel (12), ...
//    hipGraphLaunch (16), ... hipHccModuleLaunchKernel (19), hipStreamWriteValue32/64 (20, 21),
//    hipStreamWaitValue32/64 (22, 23), and 7.x's hipStreamBatchMemOp (24)) numbered DIFFERENTLY
//    per layout, so ids must be looked up by name, never hard-coded: 6.x: 10 + 3*i in table
//    order; 7.x: 100 + 7*(19 - i) for i < 20, reversed, then 300 + 7*(i - 20) (the table is in
//    fake_rocprofiler_sdk.cc). KERNEL_DISPATCH iterates ENQUEUE 1, COMPLETE 2 (not
//    NONE); MEMORY_COPY iterates NONE 0 "MEMORY_COPY_NONE", 1 "MEMORY_COPY_HOST_TO_HOST",
//    2 "MEMORY_COPY_HOST_TO_DEVICE", 3 "MEMORY_COPY_DEVICE_TO_HOST", 4
//    "MEMORY_COPY_DEVICE_TO_DEVICE" (NONE included); other existing kinds iterate nothing; a kind
//    the version lacks is KIND_NOT_FOUND (4), an unknown operation OPERATION_NOT_FOUND (5).
//  - Delivery on ONE SDK-internal thread per process (started lazily): when a buffer's pending
//    payload bytes reach its watermark (0: every record), or on rocprofiler_flush_buffer, which
//    returns only after the callback has returned. Record memory (the header-pointer array, the
//    headers, the payloads) is valid only during the callback: afterwards it is overwritten with
//    0xA5 and kept mapped for the next 64 delivered blocks, so kept pointers read garbage.
//  - LOSSLESS never drops (a record that does not fit in size_bytes starts a new batch);
//    DISCARD and NONE drop records that do not fit and report them in the next batch's
//    drop_count.
//  - Records pending in a buffer are delivered at the next flush/watermark even if their context
//    was stopped meanwhile. Finalization does NOT flush: unflushed records are lost.
//  - CODE_OBJECT callback tracing (callback kind 10) in the version's callback record layout:
//    a code object's LOAD (operation 1, phase LOAD, 88-byte load-data payload) before its first
//    symbol's DEVICE_KERNEL_SYMBOL_REGISTER (operation 2, phase LOAD, payload size 72 below
//    version 600 and 88 from 600 on). kernel_name is freed (poisoned) after the UNLOAD
//    callbacks, or right after the LOAD callbacks in strict mode.
//  - External correlation stacks: one LIFO per (context, thread). Records made on a thread carry
//    its top (kernel dispatches: at enqueue time); a thread that never pushed for a context
//    inherits the top of the default thread (the first thread that called
//    rocprofiler_force_configure); a thread that pushed and popped back to empty carries 0.
//
// Not thread-safe against themselves for one code object (load and unload of the same code
// object from two threads at once); everything else may be called from any thread.
#ifndef ROCTX_UTILS_CC_TESTS_FAKE_SDK_HOOKS_H_
#define ROCTX_UTILS_CC_TESTS_FAKE_SDK_HOOKS_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Loads kernel symbol `kernel_id` named `mangled_name` (copied; NULL = "") of code object
// `code_object_id`. To every started context that configured callback tracing of CODE_OBJECT
// (operation filter applied) it delivers, on the calling thread: first, if this is the code
// object's first symbol, the code object's LOAD (operation LOAD = 1, phase LOAD = 1), then the
// symbol's DEVICE_KERNEL_SYMBOL_REGISTER (operation 2, phase LOAD). Returns the number of
// symbol-register callbacks made (one per subscribed started context).
int fake_sdk_load_kernel_symbol(uint64_t kernel_id, const char* mangled_name,
                                uint64_t code_object_id);

// Unloads a code object: a symbol-register UNLOAD (phase 2) per symbol, then the code object's
// LOAD operation with phase UNLOAD, to every started CODE_OBJECT subscriber; afterwards the
// kernel_name strings are poisoned (0xA5 bytes, NUL kept). Returns the number of code-object
// UNLOAD callbacks made, or -1 if the code object is not loaded.
int fake_sdk_unload_code_object(uint64_t code_object_id);

// Strict mode (non-zero): a kernel_name is poisoned right after its LOAD callbacks return (the
// UNLOAD callbacks get a fresh copy), so a consumer must copy it inside the callback. Default:
// env FAKE_ROCPROFILER_STRICT_NAMES (true/1/yes/on), else off.
void fake_sdk_set_strict_symbol_names(int strict);

// A kernel enqueue on the calling thread. For every STARTED context with KERNEL_DISPATCH buffer
// tracing (operation filter must pass COMPLETE = 2 or be empty) it appends one record to that
// context's buffer: size 184, kind 11, operation COMPLETE, correlation internal = a fresh id
// (one per call), external = the calling thread's stack top for that context (see above),
// thread_id = gettid(), the given timestamps, dispatch_info {size 72, agent_id, queue_id,
// kernel_id, dispatch_id = a process-wide counter from 1 (one per call), segment sizes 0,
// workgroup {256,1,1}, grid {65536,1,1}}. Stopped contexts get nothing.
//
// The enqueue is made by a hipLaunchKernel call on the calling thread: it also appends, to every
// STARTED context with HIP_RUNTIME_API buffer tracing whose operation filter is empty or holds
// this version's id of "hipLaunchKernel", one API record: operation = that id, correlation
// internal = the dispatch record's id, external = the thread's stack top for that context (same
// rule as the dispatch), thread_id = gettid(), start = CLOCK_BOOTTIME at entry, end =
// CLOCK_BOOTTIME after the records were built (> start), appended AFTER the dispatch record.
// This happens whether or not any context traces KERNEL_DISPATCH. The correlation id advances
// whenever any record is made, the dispatch_id counter only when a context traces
// KERNEL_DISPATCH. Returns the number of buffers the DISPATCH record went into (a record dropped
// by a DISCARD/NONE buffer does not count; API records never count).
int fake_sdk_dispatch_kernel(uint64_t kernel_id, uint64_t start_ns, uint64_t end_ns,
                             uint64_t agent_id, uint64_t queue_id);

// fake_sdk_dispatch_kernel_ex: the same, with `flags` (FAKE_SDK_DISPATCH_*, OR-able):
//   NO_HIP_API   (1) no API record at all: an enqueue outside any traced HIP call (HSA-direct);
//                    the dispatch's correlation id is still fresh, and matches no API record.
//   HIP_API_FIRST(2) the API record is appended BEFORE the dispatch record.
//   SEAL_BETWEEN (4) after the first of the two is appended, every target buffer (of either
//                    kind) delivers what it holds as its own batch, as a watermark would, so the
//                    two halves of the join arrive in different buffer callbacks. Nothing with 1.
//   MODULE_LAUNCH(8) the call is hipModuleLaunchKernel (filtered and numbered as such).
// Returns as fake_sdk_dispatch_kernel.
enum {
  FAKE_SDK_DISPATCH_NO_HIP_API = 1,
  FAKE_SDK_DISPATCH_HIP_API_FIRST = 2,
  FAKE_SDK_DISPATCH_SEAL_BETWEEN = 4,
  FAKE_SDK_DISPATCH_MODULE_LAUNCH = 8,
};
int fake_sdk_dispatch_kernel_ex(uint64_t kernel_id, uint64_t start_ns, uint64_t end_ns,
                                uint64_t agent_id, uint64_t queue_id, int flags);

// rocprofiler_memory_copy_operation_t (the same in 6.x and 7.x): fake_sdk_memory_copy's
// `operation`.
enum {
  FAKE_SDK_MEMORY_COPY_NONE = 0,
  FAKE_SDK_MEMORY_COPY_HOST_TO_HOST = 1,
  FAKE_SDK_MEMORY_COPY_HOST_TO_DEVICE = 2,
  FAKE_SDK_MEMORY_COPY_DEVICE_TO_HOST = 3,
  FAKE_SDK_MEMORY_COPY_DEVICE_TO_DEVICE = 4,
};

// A memory copy enqueued by a hipMemcpyAsync call on the calling thread. For every STARTED
// context with MEMORY_COPY buffer tracing whose operation filter is empty or holds `operation`,
// it appends one record in this version's layout (above): size 80 (6.x) or 96 (7.x), kind 10,
// operation = `operation` (written as given, unchecked), correlation internal = a fresh id (one
// per call), external = the calling thread's stack top for that context (same rule as
// dispatches), thread_id = gettid(), the given start/end (device times, unchecked), dst_agent_id,
// src_agent_id, bytes; 7.x only: dst_address = 0x7f0000000000 + (internal << 12), src_address =
// 0x7e0000000000 + (internal << 12) (made up, but predictable). Stopped contexts get nothing.
//
// Exactly like fake_sdk_dispatch_kernel's API record, it also appends, to every STARTED context
// with HIP_RUNTIME_API buffer tracing whose filter is empty or holds this version's id of
// "hipMemcpyAsync", one API record for that operation: correlation internal = the copy record's
// id, external = the thread's stack top, thread_id = gettid(), start/end = CLOCK_BOOTTIME at
// entry/exit (start < end), whether or not any context traces MEMORY_COPY. `flags` as
// fake_sdk_dispatch_kernel_ex's: NO_HIP_API (1) no API record, HIP_API_FIRST (2) the API record
// BEFORE the copy record (default: after), SEAL_BETWEEN (4) the two in different batches;
// MODULE_LAUNCH (8) is ignored. The correlation id advances whenever any record is made. Returns
// the number of buffers the COPY record went into (a record dropped by a DISCARD/NONE buffer does
// not count; API records never count).
int fake_sdk_memory_copy(int operation, uint64_t bytes, uint64_t start_ns, uint64_t end_ns,
                         uint64_t dst_agent, uint64_t src_agent, int flags);

// A hipGraphLaunch call on the calling thread whose graph holds `n` kernels: kernel_ids[i],
// starts[i], ends[i] for i < n. To the targets of fake_sdk_dispatch_kernel it appends n
// KERNEL_DISPATCH records in order i = 0 .. n-1 (each as fake_sdk_dispatch_kernel would make it,
// on agent_id/queue_id, with dispatch ids counting up by one per record from the process-wide
// counter), ALL with the call's one fresh correlation internal id (the SDK enqueues a graph's
// kernels inside the hipGraphLaunch call), then ONE HIP_RUNTIME_API record for this version's id
// of "hipGraphLaunch" with that id (same targets, filter, external, thread and interval rules as
// the launch call's record above), appended after all the dispatch records. n = 0 makes only the
// API record. Returns the number of buffers the FIRST dispatch record went into (0 for n = 0),
// -1 (nothing made) for n < 0 or a NULL array with n > 0.
int fake_sdk_graph_launch(const uint64_t* kernel_ids, const uint64_t* starts,
                          const uint64_t* ends, int n, uint64_t agent_id, uint64_t queue_id);

// One HIP runtime call with no kernel: appends one API record for `op_name` (this version's id
// of that name) to the same targets (started contexts with HIP_RUNTIME_API buffer tracing whose
// filter passes the id), with a fresh correlation id, the given start/end (as given, unchecked)
// and thread_id (0 = the calling thread's gettid()); the external id is that thread's stack top.
// Returns the correlation id used, 0 if no buffer took the record, UINT64_MAX if the name is
// not one of the fake's HIP operations.
uint64_t fake_sdk_hip_api_call(const char* op_name, uint64_t start_ns, uint64_t end_ns,
                               uint64_t thread_id);

// HIP API records appended to buffers so far (one per buffer; drops by a full DISCARD/NONE
// buffer are not counted).
uint64_t fake_sdk_hip_api_records(void);

// One kernel enqueued by the HIP call `hip_call` (one of the fake's HIP operation names: a
// stream memory operation's blit kernel, say), on the calling thread: its dispatch record and
// the call's API record, as fake_sdk_dispatch_kernel does for hipLaunchKernel. -1 for a name
// this version does not have (hipStreamBatchMemOp before 7.x).
int fake_sdk_dispatch_kernel_by(const char* hip_call, uint64_t kernel_id, uint64_t start_ns,
                                uint64_t end_ns, uint64_t agent_id, uint64_t queue_id);

// The HIP runtime functions a buffer service for HIP_RUNTIME_API traces, sorted and joined with
// ',' into buf (NUL-terminated, cut to cap); "*" for a service that traces all. Returns the
// full length.
size_t fake_sdk_traced_hip_calls(char* buf, size_t cap);

// Appends a caller-built payload of `len` bytes (copied as is: any size, any contents) behind a
// header {TRACING, KERNEL_DISPATCH} to the same buffers fake_sdk_dispatch_kernel would use, for
// malformed-record tests. Counts `len` bytes against size and watermark. Returns the number of
// buffers it went into (0 for record == NULL or len == 0).
int fake_sdk_dispatch_raw(const void* record, size_t len);

// Non-zero: every delivered batch is passed in reverse append order (consumers must order by
// device timestamps themselves). Zero (default): append order.
void fake_sdk_set_delivery_order(int reversed);

// rocprofiler_flush_buffer calls that returned SUCCESS.
uint64_t fake_sdk_buffer_flushes(void);

// Records passed to buffer callbacks so far (all buffers).
uint64_t fake_sdk_records_delivered(void);

// Records discarded unflushed by finalization or rocprofiler_destroy_buffer (drops by a full
// DISCARD/NONE buffer are not counted here; they go to drop_count).
uint64_t fake_sdk_records_discarded(void);

// Depth of the external-correlation stack of (context, tid) itself, without inheritance: 0 if
// that thread never pushed for the context; -1 if the context does not exist.
int fake_sdk_ext_stack_depth(uint64_t context_id, uint64_t tid);

// The external correlation value a record made now on `tid` for `context_id` would carry,
// inheritance from the default thread included; 0 if none.
uint64_t fake_sdk_ext_stack_top(uint64_t context_id, uint64_t tid);

// Adds `n` to the drop_count of the next batch sealed for any buffer (a flush of a buffer with
// nothing pending still makes a callback with 0 records to report it).
void fake_sdk_set_next_drop_count(uint64_t n);

// gettid() of the SDK-internal delivery thread; 0 before the first batch was sealed.
uint64_t fake_sdk_delivery_thread_id(void);

#ifdef __cplusplus
}  // extern "C"

// dlsym pointer types (C++ only).
using FakeSdkLoadKernelSymbolFn = int (*)(uint64_t, const char*, uint64_t);
using FakeSdkUnloadCodeObjectFn = int (*)(uint64_t);
using FakeSdkSetStrictSymbolNamesFn = void (*)(int);
using FakeSdkDispatchKernelFn = int (*)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);
using FakeSdkDispatchKernelExFn = int (*)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, int);
using FakeSdkHipApiCallFn = uint64_t (*)(const char*, uint64_t, uint64_t, uint64_t);
using FakeSdkDispatchKernelByFn = int (*)(const char*, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);
using FakeSdkTracedHipCallsFn = size_t (*)(char*, size_t);
using FakeSdkMemoryCopyFn = int (*)(int, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, int);
using FakeSdkGraphLaunchFn = int (*)(const uint64_t*, const uint64_t*, const uint64_t*, int,
                                     uint64_t, uint64_t);
using FakeSdkDispatchRawFn = int (*)(const void*, size_t);
using FakeSdkSetDeliveryOrderFn = void (*)(int);
using FakeSdkCounterFn = uint64_t (*)(void);  // also fake_sdk_hip_api_records
// The SDK's own functions (3.5, 3.6), for a test that dlsyms them next to the hooks.
using RocprofilerIterateBufferTracingKindOperationsFn = int (*)(int, int (*)(int, int32_t, void*),
                                                                void*);
using RocprofilerQueryBufferTracingKindOperationNameFn = int (*)(int, int32_t, const char**,
                                                                 uint64_t*);
using FakeSdkExtStackDepthFn = int (*)(uint64_t, uint64_t);
using FakeSdkExtStackTopFn = uint64_t (*)(uint64_t, uint64_t);
using FakeSdkSetNextDropCountFn = void (*)(uint64_t);
#endif

#endif  // ROCTX_UTILS_CC_TESTS_FAKE_SDK_HOOKS_H_
