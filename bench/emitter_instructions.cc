// Deterministic companion of emitter_benchmark: runs N RangePush+RangePop pairs (or N raw roctx
// pairs) so that `valgrind --tool=callgrind` instruction counts at two N give instructions per
// pair, free of the timing noise of a shared VM. Usage: emitter_instructions <ours|raw|capture|
// registered|mark> <N> ("capture" runs the pairs inside an in-process capture session that is
// never stopped, so no export cost is counted; "registered" does the same with a RegisterString
// title, as XLA's thunks push theirs).
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "roctx_utils/roctx_utils.h"
#include "tsl/profiler/lib/nvtx_utils.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <ours|raw|capture|registered|mark> <pairs>\n", argv[0]);
    return 2;
  }
  const long n = std::atol(argv[2]);
  auto* domain = tsl::profiler::DefaultProfilerDomain();
  const bool mark = std::strcmp(argv[1], "mark") == 0;
  const bool registered = std::strcmp(argv[1], "registered") == 0;
  if (std::strcmp(argv[1], "capture") == 0 || mark || registered) {
    roctx_utils_session_options o{};
    o.struct_size = sizeof(o);
    o.mode = ROCTX_UTILS_CAPTURE_IN_PROCESS;
    o.max_events_per_thread = 1 << 22;
    if (roctx_utils_session_start(&o) != ROCTX_UTILS_OK) return 1;
  }
  tsl::profiler::RangePush(domain, "warm");  // binds roctx outside the measured difference
  tsl::profiler::RangePop(domain);
  if (std::strcmp(argv[1], "raw") == 0) {
    const char* path = roctx_utils_roctx_library();
    void* lib = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : nullptr;
    auto push = lib ? reinterpret_cast<int (*)(const char*)>(dlsym(lib, "roctxRangePushA")) : nullptr;
    auto pop = lib ? reinterpret_cast<int (*)()>(dlsym(lib, "roctxRangePop")) : nullptr;
    if (!push || !pop) return 1;
    for (long i = 0; i < n; ++i) {
      push("Thunk:#hlo_op=fusion.3#");
      pop();
    }
  } else if (mark) {
    for (long i = 0; i < n; ++i) roctx_utils_mark("step_marker");
  } else if (registered) {
    auto title = tsl::profiler::RegisterString(domain, "Thunk:#hlo_op=fusion.3#");
    for (long i = 0; i < n; ++i) {
      tsl::profiler::detail::RangePush(domain, title, 0, nullptr, 0);
      tsl::profiler::RangePop(domain);
    }
  } else {
    for (long i = 0; i < n; ++i) {
      tsl::profiler::RangePush(domain, "Thunk:#hlo_op=fusion.3#");
      tsl::profiler::RangePop(domain);
    }
  }
  return 0;
}
