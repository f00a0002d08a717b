// A test double of librocprofiler-sdk-roctx with the real C ABI and the return values of the
// shipped default implementation with no tool attached (rocprofiler_abi.md 1.3): push returns
// the 0-based level of the new range per thread, pop the level closed or -1 with none open,
// RangeStartA ids start at 1. It also exports `fake_roctx_*` probes so tests can see what the
// backend did. Built three times: as the SDK library (.so, .so.0 layouts) and, with
// FAKE_ROCTX_LEGACY, as roctracer's libroctx64 (core functions only, versioned symbols).
//
// Forwarding to a (fake) rocprofiler-sdk: the SDK flavor mimics rocprofiler-register plus the
// SDK's table rewrite (rocprofiler_abi.md 2.1). On the first roctx call in the process (once,
// never again) it checks whether a tool is indicated (ROCPROFILER_REGISTER_FORCE_LOAD true, which
// rocprofiler_force_configure sets; ROCP_TOOL_LIBRARIES or ROCPROFILER_REGISTER_LIBRARY set; or a
// global rocprofiler_configure symbol; ROCPROFILER_REGISTER_ENABLED=0 disables all) and resolves
// dlsym(RTLD_DEFAULT, "fake_sdk_dispatch_roctx"), found only if fake_rocprofiler_sdk is loaded
// RTLD_GLOBAL. If both hold, every roctx function reports ENTER (1) before its own work and
// EXIT (2) after it, with its marker kind/operation (rocprofiler_abi.md 4.4). So, as with the
// real libraries, a roctx call made before the tool is configured disables forwarding for good.
// Where the real register would abort (tool indicated, no SDK found) this fake just does not
// forward; fake_roctx_sdk_state() reports which case happened. Like register, it loads the SDK
// itself when none is loaded ($ROCPROFILER_REGISTER_LIBRARY, else librocprofiler-sdk.so, with
// RTLD_GLOBAL) and calls its rocprofiler_set_api_table("roctx", ...), which runs the SDK's tool
// discovery. The legacy library never forwards: it is invisible to the SDK.
#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "fake_register.h"

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

thread_local int tls_depth = 0;
thread_local std::string tls_last_push;
std::atomic<uint64_t> g_push_count{0}, g_pop_count{0}, g_mark_count{0}, g_underflow_count{0};
std::atomic<uint64_t> g_next_range_id{1};

std::mutex g_names_mutex;
std::string g_thread_name, g_device_name, g_stream_name, g_last_mark;
int g_device_id = -1;
const void* g_stream = nullptr;
uint64_t g_name_calls = 0;

// rocprofiler_abi.md 4.1 / 4.3 / 4.4
constexpr int kMarkerCore = 7, kMarkerControl = 8, kMarkerName = 9;
constexpr int kEnter = 1, kExit = 2;

// -1: no roctx call yet; 0: no tool indicated (stays a no-op); 1: forwarding to the fake SDK;
// 2: a tool is indicated but no fake_sdk_dispatch_roctx is visible (the real register aborts).
std::atomic<int> g_sdk_state{-1};

#ifndef FAKE_ROCTX_LEGACY
using SdkDispatch = int (*)(int op, int phase, const char* message, uint64_t arg_u64,
                            int64_t retval, int kind);

// Resolved once, at the first roctx call (like roctx's one registration with
// rocprofiler-register).
SdkDispatch Sdk() {
  static const SdkDispatch dispatch = []() -> SdkDispatch {
    if (!fake_register::ToolIndicated()) {
      g_sdk_state.store(0);
      return nullptr;
    }
    const fake_register::SetApiTable set = fake_register::FindSdk();
    auto fn = reinterpret_cast<SdkDispatch>(dlsym(RTLD_DEFAULT, "fake_sdk_dispatch_roctx"));
    g_sdk_state.store(fn ? 1 : 2);
    // roctx's one registration: the SDK runs its tool discovery now if nothing started it yet,
    // so this very call is already traced.
    if (fn != nullptr && set != nullptr) set("roctx", 10000, 0, nullptr, 0);
    return fn;
  }();
  return dispatch;
}

inline void Forward(int kind, int op, int phase, const char* message = nullptr,
                    uint64_t arg_u64 = 0, int64_t retval = 0) {
  if (SdkDispatch fn = Sdk()) fn(op, phase, message, arg_u64, retval, kind);
}
#else
inline void Forward(int, int, int, const char* = nullptr, uint64_t = 0, int64_t = 0) {}
#endif

}  // namespace

FAKE_EXPORT int roctxRangePushA(const char* message) {
  Forward(kMarkerCore, 1, kEnter, message);
  g_push_count.fetch_add(1, std::memory_order_relaxed);
  tls_last_push = message ? message : "<null>";
  const int level = tls_depth++;
  Forward(kMarkerCore, 1, kExit, message, 0, level);
  return level;
}

FAKE_EXPORT int roctxRangePop() {
  Forward(kMarkerCore, 2, kEnter);
  g_pop_count.fetch_add(1, std::memory_order_relaxed);
  int level;
  if (tls_depth == 0) {
    g_underflow_count.fetch_add(1, std::memory_order_relaxed);
    level = -1;
  } else {
    level = --tls_depth;
  }
  Forward(kMarkerCore, 2, kExit, nullptr, 0, level);
  return level;
}

FAKE_EXPORT void roctxMarkA(const char* message) {
  Forward(kMarkerCore, 0, kEnter, message);
  g_mark_count.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(g_names_mutex);
    g_last_mark = message ? message : "<null>";
  }
  Forward(kMarkerCore, 0, kExit, message);
}

FAKE_EXPORT uint64_t roctxRangeStartA(const char* message) {
  Forward(kMarkerCore, 3, kEnter, message);
  const uint64_t id = g_next_range_id.fetch_add(1);
  Forward(kMarkerCore, 3, kExit, message, 0, static_cast<int64_t>(id));
  return id;
}

FAKE_EXPORT void roctxRangeStop(uint64_t id) {
  Forward(kMarkerCore, 4, kEnter, nullptr, id);
  Forward(kMarkerCore, 4, kExit, nullptr, id);
}

#ifndef FAKE_ROCTX_LEGACY
FAKE_EXPORT int roctxGetThreadId(uint64_t* tid) {
  const auto tid_arg = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(tid));
  Forward(kMarkerCore, 5, kEnter, nullptr, tid_arg);
  if (tid) *tid = static_cast<uint64_t>(syscall(SYS_gettid));
  Forward(kMarkerCore, 5, kExit, nullptr, tid_arg, 0);
  return 0;
}
FAKE_EXPORT int roctxProfilerPause(uint64_t tid) {
  Forward(kMarkerControl, 0, kEnter, nullptr, tid);
  Forward(kMarkerControl, 0, kExit, nullptr, tid, 0);
  return 0;
}
FAKE_EXPORT int roctxProfilerResume(uint64_t tid) {
  Forward(kMarkerControl, 1, kEnter, nullptr, tid);
  Forward(kMarkerControl, 1, kExit, nullptr, tid, 0);
  return 0;
}

FAKE_EXPORT int roctxNameOsThread(const char* name) {
  Forward(kMarkerName, 0, kEnter, name);
  {
    std::lock_guard<std::mutex> lock(g_names_mutex);
    g_thread_name = name ? name : "<null>";
    ++g_name_calls;
  }
  Forward(kMarkerName, 0, kExit, name, 0, 0);
  return 0;
}
FAKE_EXPORT int roctxNameHsaAgent(const char* name, const void* agent) {
  const auto agent_arg = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(agent));
  Forward(kMarkerName, 1, kEnter, name, agent_arg);
  Forward(kMarkerName, 1, kExit, name, agent_arg, 0);
  return 0;
}
FAKE_EXPORT int roctxNameHipDevice(const char* name, int device_id) {
  const auto device_arg = static_cast<uint64_t>(static_cast<int64_t>(device_id));
  Forward(kMarkerName, 2, kEnter, name, device_arg);
  {
    std::lock_guard<std::mutex> lock(g_names_mutex);
    g_device_name = name ? name : "<null>";
    g_device_id = device_id;
    ++g_name_calls;
  }
  Forward(kMarkerName, 2, kExit, name, device_arg, 0);
  return 0;
}
FAKE_EXPORT int roctxNameHipStream(const char* name, const void* stream) {
  const auto stream_arg = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(stream));
  Forward(kMarkerName, 3, kEnter, name, stream_arg);
  {
    std::lock_guard<std::mutex> lock(g_names_mutex);
    g_stream_name = name ? name : "<null>";
    g_stream = stream;
    ++g_name_calls;
  }
  Forward(kMarkerName, 3, kExit, name, stream_arg, 0);
  return 0;
}
// The real SDK roctx exports this for rocprofiler-register; its presence marks the SDK flavor.
FAKE_EXPORT uint32_t rocprofiler_register_import_roctx() { return 10000; }
#else
FAKE_EXPORT uint32_t roctx_version_major() { return 4; }
FAKE_EXPORT uint32_t roctx_version_minor() { return 1; }
#endif

// ---- probes for tests (not part of roctx) ----
// How the first roctx call resolved forwarding: -1 no call yet, 0 no tool indicated,
// 1 forwarding to fake_sdk_dispatch_roctx, 2 tool indicated but no SDK visible (the real
// rocprofiler-register aborts there). Always -1 in the legacy build.
FAKE_EXPORT int fake_roctx_sdk_state() { return g_sdk_state.load(); }
FAKE_EXPORT uint64_t fake_roctx_push_count() { return g_push_count.load(); }
FAKE_EXPORT uint64_t fake_roctx_pop_count() { return g_pop_count.load(); }
FAKE_EXPORT uint64_t fake_roctx_mark_count() { return g_mark_count.load(); }
FAKE_EXPORT uint64_t fake_roctx_underflow_count() { return g_underflow_count.load(); }
FAKE_EXPORT int fake_roctx_depth() { return tls_depth; }
FAKE_EXPORT const char* fake_roctx_last_push() { return tls_last_push.c_str(); }
FAKE_EXPORT uint64_t fake_roctx_name_calls() {
  std::lock_guard<std::mutex> lock(g_names_mutex);
  return g_name_calls;
}
// Copies the recorded names into caller buffers (NUL-terminated, truncated to `cap`).
FAKE_EXPORT void fake_roctx_names(char* thread_name, char* device_name, int* device_id,
                                  char* stream_name, const void** stream, size_t cap) {
  std::lock_guard<std::mutex> lock(g_names_mutex);
  auto copy = [cap](char* dst, const std::string& src) {
    if (dst && cap) {
      std::strncpy(dst, src.c_str(), cap - 1);
      dst[cap - 1] = '\0';
    }
  };
  copy(thread_name, g_thread_name);
  copy(device_name, g_device_name);
  copy(stream_name, g_stream_name);
  if (device_id) *device_id = g_device_id;
  if (stream) *stream = g_stream;
}
