// roctx's core functions (roctx.h signatures and return values: the push returns the 0-based
// level, the pop the level closed or -1), plus three counters the test reads with dlsym.
#include <atomic>
#include <cstdint>
#include <string>

namespace {
thread_local int depth = 0;
thread_local std::string last;
std::atomic<uint64_t> pushes{0}, pops{0};
}  // namespace

extern "C" {
__attribute__((visibility("default"))) int roctxRangePushA(const char* message) {
  last = message != nullptr ? message : "";
  pushes.fetch_add(1);
  return depth++;
}
__attribute__((visibility("default"))) int roctxRangePop() {
  if (depth == 0) return -1;
  pops.fetch_add(1);
  return --depth;
}
__attribute__((visibility("default"))) uint64_t fork_fake_roctx_pushes() { return pushes.load(); }
__attribute__((visibility("default"))) uint64_t fork_fake_roctx_pops() { return pops.load(); }
__attribute__((visibility("default"))) const char* fork_fake_roctx_last() { return last.c_str(); }
}
