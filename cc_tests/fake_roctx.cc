// A test double of librocprofiler-sdk-roctx with the real C ABI and the return values of the
// shipped default implementation with no tool attached (rocprofiler_abi.md 1.3): push returns
// the 0-based level of the new range per thread, pop the level closed or -1 with none open,
// RangeStartA ids start at 1. It also exports `fake_roctx_*` probes so tests can see what the
// backend did. Built three times: as the SDK library (.so, .so.0 layouts) and, with
// FAKE_ROCTX_LEGACY, as roctracer's libroctx64 (core functions only, versioned symbols).
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>

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

}  // namespace

FAKE_EXPORT int roctxRangePushA(const char* message) {
  g_push_count.fetch_add(1, std::memory_order_relaxed);
  tls_last_push = message ? message : "<null>";
  return tls_depth++;
}

FAKE_EXPORT int roctxRangePop() {
  g_pop_count.fetch_add(1, std::memory_order_relaxed);
  if (tls_depth == 0) {
    g_underflow_count.fetch_add(1, std::memory_order_relaxed);
    return -1;
  }
  return --tls_depth;
}

FAKE_EXPORT void roctxMarkA(const char* message) {
  g_mark_count.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(g_names_mutex);
  g_last_mark = message ? message : "<null>";
}

FAKE_EXPORT uint64_t roctxRangeStartA(const char*) { return g_next_range_id.fetch_add(1); }
FAKE_EXPORT void roctxRangeStop(uint64_t) {}

#ifndef FAKE_ROCTX_LEGACY
FAKE_EXPORT int roctxGetThreadId(uint64_t* tid) {
  if (tid) *tid = static_cast<uint64_t>(syscall(SYS_gettid));
  return 0;
}
FAKE_EXPORT int roctxProfilerPause(uint64_t) { return 0; }
FAKE_EXPORT int roctxProfilerResume(uint64_t) { return 0; }

FAKE_EXPORT int roctxNameOsThread(const char* name) {
  std::lock_guard<std::mutex> lock(g_names_mutex);
  g_thread_name = name ? name : "<null>";
  ++g_name_calls;
  return 0;
}
FAKE_EXPORT int roctxNameHsaAgent(const char*, const void*) { return 0; }
FAKE_EXPORT int roctxNameHipDevice(const char* name, int device_id) {
  std::lock_guard<std::mutex> lock(g_names_mutex);
  g_device_name = name ? name : "<null>";
  g_device_id = device_id;
  ++g_name_calls;
  return 0;
}
FAKE_EXPORT int roctxNameHipStream(const char* name, const void* stream) {
  std::lock_guard<std::mutex> lock(g_names_mutex);
  g_stream_name = name ? name : "<null>";
  g_stream = stream;
  ++g_name_calls;
  return 0;
}
// The real SDK roctx exports this for rocprofiler-register; its presence marks the SDK flavor.
FAKE_EXPORT uint32_t rocprofiler_register_import_roctx() { return 10000; }
#else
FAKE_EXPORT uint32_t roctx_version_major() { return 4; }
FAKE_EXPORT uint32_t roctx_version_minor() { return 1; }
#endif

// ---- probes for tests (not part of roctx) ----
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
