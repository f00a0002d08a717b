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
#ifndef ROCTX_UTILS_CC_TESTS_FAKE_HIP_ASYNC_H_
#define ROCTX_UTILS_CC_TESTS_FAKE_HIP_ASYNC_H_

#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace fake_hip {

struct Call {
  std::string name;
  void* stream;
  void* event;
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
  if (!s.quiet) s.calls.push_back({name, stream, event});
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

#define FAKE_HIP_EXPORT extern "C" __attribute__((visibility("default")))

FAKE_HIP_EXPORT int hipGetDevice(int* device) {
  *device = 0;
  return 0;
}
FAKE_HIP_EXPORT int hipHostMalloc(void** p, size_t bytes, unsigned int) {
  std::lock_guard<std::mutex> lock(fake_hip::Get().mutex);
  if (fake_hip::Log("hipHostMalloc", nullptr, nullptr)) return 1;
  *p = std::calloc(1, bytes);
  return *p == nullptr ? 2 : 0;  // hipErrorOutOfMemory
}
FAKE_HIP_EXPORT int hipHostFree(void* p) {
  std::free(p);
  return 0;
}
FAKE_HIP_EXPORT int hipEventCreateWithFlags(void** event, unsigned int) {
  std::lock_guard<std::mutex> lock(fake_hip::Get().mutex);
  if (fake_hip::Log("hipEventCreateWithFlags", nullptr, nullptr)) return 1;
  *event = new int(0);
  return 0;
}
FAKE_HIP_EXPORT int hipStreamCreateWithFlags(void** stream, unsigned int) {
  std::lock_guard<std::mutex> lock(fake_hip::Get().mutex);
  if (fake_hip::Log("hipStreamCreateWithFlags", nullptr, nullptr)) return 1;
  *stream = new int(0);
  fake_hip::Get().side_streams.insert(*stream);
  return 0;
}
FAKE_HIP_EXPORT int hipEventRecord(void* event, void* stream) {
  std::lock_guard<std::mutex> lock(fake_hip::Get().mutex);
  fake_hip::State& s = fake_hip::Get();
  if (fake_hip::Log("hipEventRecord", stream, event)) return 1;
  if (s.hold && s.side_streams.count(stream)) {
    s.held_events.insert(event);
  } else {
    s.held_events.erase(event);
  }
  return 0;
}
FAKE_HIP_EXPORT int hipEventQuery(void* event) {
  std::lock_guard<std::mutex> lock(fake_hip::Get().mutex);
  if (fake_hip::Log("hipEventQuery", nullptr, event)) return 1;
  return fake_hip::Get().held_events.count(event) ? 600 : 0;
}
FAKE_HIP_EXPORT int hipEventSynchronize(void* event) {
  std::lock_guard<std::mutex> lock(fake_hip::Get().mutex);
  if (fake_hip::Log("hipEventSynchronize", nullptr, event)) return 1;
  fake_hip::Get().held_events.erase(event);  // the device gets there
  return 0;
}
FAKE_HIP_EXPORT int hipStreamWaitEvent(void* stream, void* event, unsigned int) {
  std::lock_guard<std::mutex> lock(fake_hip::Get().mutex);
  return fake_hip::Log("hipStreamWaitEvent", stream, event) ? 1 : 0;
}
FAKE_HIP_EXPORT int hipMemcpyAsync(void* dst, const void* src, size_t bytes, int kind, void* stream) {
  std::function<void()> also;
  {
    std::lock_guard<std::mutex> lock(fake_hip::Get().mutex);
    if (fake_hip::Log("hipMemcpyAsync", stream, nullptr)) return 1;
    if (kind != 2) return 21;  // hipErrorInvalidMemcpyDirection: only device-to-host is asked
    std::memcpy(dst, src, bytes);
    also = fake_hip::Get().on_copy;
  }
  if (also) also();
  return 0;
}

#undef FAKE_HIP_EXPORT

#endif  // ROCTX_UTILS_CC_TESTS_FAKE_HIP_ASYNC_H_
