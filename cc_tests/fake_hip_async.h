// The HIP runtime's stream-ordered calls as the non-blocking MoE read-back uses them (issue 28:
// listener/moe.rs), for programs that play a HIP host: pinned host memory, events, a side
// stream, asynchronous copies. Defined here with default visibility, so a binary includes this
// header in one file only and links with -rdynamic (the library finds them in the process).
//
// The model: device memory is host memory, and work runs when it is enqueued (a copy copies at
// once, an event completes when recorded), except while held (fake_hip::Hold(true)): an event
// recorded on a side stream (one made by hipStreamCreateWithFlags) stays not ready
// (hipEventQuery: hipErrorNotReady, 600) until hipEventSynchronize on it or Hold(false). Every
// call is logged with its stream and event (fake_hip::Calls()), fake_hip::Fail(name) makes the
// next calls of that function return 1, and fake_hip::OnCopy(f) runs f after each copy.
//
// With FAKE_ASYNC_CUDA defined, the same calls are CUDA's instead: the runtime's, and the
// driver's (cuEventRecord, cuStreamWaitEvent, cuMemcpyDtoHAsync_v2, cuCtxGetDevice) that the
// read-back prefers for the calls it makes every op.
#ifndef ROCTX_UTILS_CC_TESTS_FAKE_HIP_ASYNC_H_
#define ROCTX_UTILS_CC_TESTS_FAKE_HIP_ASYNC_H_

#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace fake_hip {

struct Call {
  std::string name;
  void* stream;
  void* event;
  std::thread::id thread;  // the read-back's polls are the library's own thread's
};

struct State {
  std::mutex mutex;
  std::vector<Call> calls;
  std::set<void*> side_streams, held_events;
  std::string failing;
  bool hold = false;
  bool quiet = false;             // no log (a benchmark's millions of calls)
  std::function<void()> on_copy;  // what a copy also does (a test's blit through the fake SDK)
};

inline State& Get() {
  static State* s = new State;  // never destroyed: the library may call in at exit
  return *s;
}

// Logs `name` and says whether it is to fail.
inline bool Log(const char* name, void* stream, void* event) {
  State& s = Get();
  if (!s.quiet) s.calls.push_back({name, stream, event, std::this_thread::get_id()});
  return !s.failing.empty() && s.failing == name;
}

inline void Quiet(bool quiet) {
  std::lock_guard<std::mutex> lock(Get().mutex);
  Get().quiet = quiet;
}

inline std::vector<Call> Calls() {
  std::lock_guard<std::mutex> lock(Get().mutex);
  return Get().calls;
}

// The calls logged so far, without the lock: for a fork() child, whose copy of the lock may be
// held by a thread it does not have (the library's worker, polling an event at the fork).
inline size_t CallCountInForkChild() { return Get().calls.size(); }

inline void Hold(bool hold) {
  std::lock_guard<std::mutex> lock(Get().mutex);
  Get().hold = hold;
  if (!hold) Get().held_events.clear();
}

inline void OnCopy(std::function<void()> f) {
  std::lock_guard<std::mutex> lock(Get().mutex);
  Get().on_copy = std::move(f);
}

inline void Fail(const char* name) {
  std::lock_guard<std::mutex> lock(Get().mutex);
  Get().failing = name;
}

}  // namespace fake_hip

namespace fake_hip {

inline int HostMalloc(const char* name, void** p, size_t bytes) {
  std::lock_guard<std::mutex> lock(Get().mutex);
  if (Log(name, nullptr, nullptr)) return 1;
  *p = std::calloc(1, bytes);
  return *p == nullptr ? 2 : 0;  // hipErrorOutOfMemory / cudaErrorMemoryAllocation
}
inline int EventCreate(const char* name, void** event) {
  std::lock_guard<std::mutex> lock(Get().mutex);
  if (Log(name, nullptr, nullptr)) return 1;
  *event = new int(0);
  return 0;
}
inline int StreamCreate(const char* name, void** stream) {
  std::lock_guard<std::mutex> lock(Get().mutex);
  if (Log(name, nullptr, nullptr)) return 1;
  *stream = new int(0);
  Get().side_streams.insert(*stream);
  return 0;
}
inline int EventRecord(const char* name, void* event, void* stream) {
  std::lock_guard<std::mutex> lock(Get().mutex);
  State& s = Get();
  if (Log(name, stream, event)) return 1;
  if (s.hold && s.side_streams.count(stream)) {
    s.held_events.insert(event);
  } else {
    s.held_events.erase(event);
  }
  return 0;
}
inline int EventQuery(const char* name, void* event) {
  std::lock_guard<std::mutex> lock(Get().mutex);
  if (Log(name, nullptr, event)) return 1;
  return Get().held_events.count(event) ? 600 : 0;
}
inline int EventSynchronize(const char* name, void* event) {
  std::lock_guard<std::mutex> lock(Get().mutex);
  if (Log(name, nullptr, event)) return 1;
  Get().held_events.erase(event);  // the device gets there
  return 0;
}
inline int StreamWaitEvent(const char* name, void* stream, void* event) {
  std::lock_guard<std::mutex> lock(Get().mutex);
  return Log(name, stream, event) ? 1 : 0;
}
inline int CopyToHost(const char* name, void* dst, const void* src, size_t bytes, void* stream) {
  std::function<void()> also;
  {
    std::lock_guard<std::mutex> lock(Get().mutex);
    if (Log(name, stream, nullptr)) return 1;
    std::memcpy(dst, src, bytes);
    also = Get().on_copy;
  }
  if (also) also();
  return 0;
}

}  // namespace fake_hip

#define FAKE_HIP_EXPORT extern "C" __attribute__((visibility("default")))

#ifndef FAKE_ASYNC_CUDA
FAKE_HIP_EXPORT int hipGetDevice(int* device) {
  *device = 0;
  return 0;
}
FAKE_HIP_EXPORT int hipHostMalloc(void** p, size_t bytes, unsigned int) { return fake_hip::HostMalloc("hipHostMalloc", p, bytes); }
FAKE_HIP_EXPORT int hipHostFree(void* p) {
  std::free(p);
  return 0;
}
FAKE_HIP_EXPORT int hipEventCreateWithFlags(void** event, unsigned int) { return fake_hip::EventCreate("hipEventCreateWithFlags", event); }
FAKE_HIP_EXPORT int hipStreamCreateWithFlags(void** stream, unsigned int) { return fake_hip::StreamCreate("hipStreamCreateWithFlags", stream); }
FAKE_HIP_EXPORT int hipEventRecord(void* event, void* stream) { return fake_hip::EventRecord("hipEventRecord", event, stream); }
FAKE_HIP_EXPORT int hipEventQuery(void* event) { return fake_hip::EventQuery("hipEventQuery", event); }
FAKE_HIP_EXPORT int hipEventSynchronize(void* event) { return fake_hip::EventSynchronize("hipEventSynchronize", event); }
FAKE_HIP_EXPORT int hipStreamWaitEvent(void* stream, void* event, unsigned int) { return fake_hip::StreamWaitEvent("hipStreamWaitEvent", stream, event); }
FAKE_HIP_EXPORT int hipMemcpyAsync(void* dst, const void* src, size_t bytes, int kind, void* stream) {
  if (kind != 2) return 21;  // hipErrorInvalidMemcpyDirection: only device-to-host is asked
  return fake_hip::CopyToHost("hipMemcpyAsync", dst, src, bytes, stream);
}
#else
// The CUDA runtime, and the driver calls the read-back makes for every op where the process
// has them (CUDA's `cudaStream_t` and `cudaEvent_t` are the driver's handles).
FAKE_HIP_EXPORT int cudaGetDevice(int* device) {
  *device = 0;
  return 0;
}
FAKE_HIP_EXPORT int cudaMallocHost(void** p, size_t bytes) { return fake_hip::HostMalloc("cudaMallocHost", p, bytes); }
FAKE_HIP_EXPORT int cudaEventCreateWithFlags(void** event, unsigned int) { return fake_hip::EventCreate("cudaEventCreateWithFlags", event); }
FAKE_HIP_EXPORT int cudaStreamCreateWithFlags(void** stream, unsigned int) { return fake_hip::StreamCreate("cudaStreamCreateWithFlags", stream); }
FAKE_HIP_EXPORT int cudaEventRecord(void* event, void* stream) { return fake_hip::EventRecord("cudaEventRecord", event, stream); }
FAKE_HIP_EXPORT int cudaEventQuery(void* event) { return fake_hip::EventQuery("cudaEventQuery", event); }
FAKE_HIP_EXPORT int cudaEventSynchronize(void* event) { return fake_hip::EventSynchronize("cudaEventSynchronize", event); }
FAKE_HIP_EXPORT int cudaStreamWaitEvent(void* stream, void* event, unsigned int) { return fake_hip::StreamWaitEvent("cudaStreamWaitEvent", stream, event); }
FAKE_HIP_EXPORT int cudaMemcpyAsync(void* dst, const void* src, size_t bytes, int kind, void* stream) {
  if (kind != 2) return 21;  // cudaErrorInvalidMemcpyDirection
  return fake_hip::CopyToHost("cudaMemcpyAsync", dst, src, bytes, stream);
}
FAKE_HIP_EXPORT int cuCtxGetDevice(int* device) {
  *device = 0;
  return 0;
}
FAKE_HIP_EXPORT int cuEventRecord(void* event, void* stream) { return fake_hip::EventRecord("cuEventRecord", event, stream); }
FAKE_HIP_EXPORT int cuStreamWaitEvent(void* stream, void* event, unsigned int) { return fake_hip::StreamWaitEvent("cuStreamWaitEvent", stream, event); }
FAKE_HIP_EXPORT int cuMemcpyDtoHAsync_v2(void* dst, const void* src, size_t bytes, void* stream) {
  return fake_hip::CopyToHost("cuMemcpyDtoHAsync_v2", dst, src, bytes, stream);
}
#endif

#undef FAKE_HIP_EXPORT

#endif  // ROCTX_UTILS_CC_TESTS_FAKE_HIP_ASYNC_H_
