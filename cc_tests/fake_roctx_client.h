// Test-side view of the fake roctx the backend bound: dlopen(RTLD_NOLOAD) of the very library
// the backend reports, so the counters the test reads are the ones the backend's calls moved.
// Also gives the tests roctx's own entry points, as upstream's tests call roctx directly.
#ifndef ROCTX_UTILS_CC_TESTS_FAKE_ROCTX_CLIENT_H_
#define ROCTX_UTILS_CC_TESTS_FAKE_ROCTX_CLIENT_H_

#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "roctx_utils/roctx_utils.h"

namespace roctx_test {

struct FakeRoctx {
  bool ok = false;
  std::string path;
  int (*RangePushA)(const char*) = nullptr;
  int (*RangePop)() = nullptr;
  void (*MarkA)(const char*) = nullptr;
  uint64_t (*push_count)() = nullptr;
  uint64_t (*pop_count)() = nullptr;
  uint64_t (*underflow_count)() = nullptr;
  int (*depth)() = nullptr;
  const char* (*last_push)() = nullptr;
  uint64_t (*name_calls)() = nullptr;
  void (*names)(char*, char*, int*, char*, const void**, size_t) = nullptr;

  // roctx's depth on this thread as upstream's tests probe it: the level a push would get.
  int ProbeDepth() const {
    int level = RangePushA("probe");
    RangePop();
    return level;
  }
};

template <typename T>
void Bind(void* handle, const char* name, T* out) {
  *out = reinterpret_cast<T>(dlsym(handle, name));
}

// Binds once; `ok` is false (and the test should fail) if the backend bound no library.
inline const FakeRoctx& Fake() {
  static const FakeRoctx fake = [] {
    FakeRoctx f;
    const char* path = roctx_utils_roctx_library();
    if (path == nullptr) return f;
    void* handle = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (handle == nullptr) return f;
    f.path = path;
    Bind(handle, "roctxRangePushA", &f.RangePushA);
    Bind(handle, "roctxRangePop", &f.RangePop);
    Bind(handle, "roctxMarkA", &f.MarkA);
    Bind(handle, "fake_roctx_push_count", &f.push_count);
    Bind(handle, "fake_roctx_pop_count", &f.pop_count);
    Bind(handle, "fake_roctx_underflow_count", &f.underflow_count);
    Bind(handle, "fake_roctx_depth", &f.depth);
    Bind(handle, "fake_roctx_last_push", &f.last_push);
    Bind(handle, "fake_roctx_name_calls", &f.name_calls);
    Bind(handle, "fake_roctx_names", &f.names);
    f.ok = f.RangePushA && f.RangePop && f.push_count && f.pop_count && f.depth && f.last_push;
    return f;
  }();
  return fake;
}

}  // namespace roctx_test

#endif  // ROCTX_UTILS_CC_TESTS_FAKE_ROCTX_CLIENT_H_
