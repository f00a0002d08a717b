// Setup/Teardown for benchmarks that record in-process: a session before each run (big enough
// that nothing is dropped) and its stop after it, warning if anything was dropped after all.
#ifndef ROCTX_UTILS_BENCH_CAPTURE_SESSION_H_
#define ROCTX_UTILS_BENCH_CAPTURE_SESSION_H_

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "benchmark/benchmark.h"
#include "roctx_utils/roctx_utils.h"

namespace roctx_utils_bench {

// BENCH_ONE_SESSION=1: one session for the whole process, never stopped, so that every run
// records into fresh memory as a program's one session does (`roctx record`). By default each
// benchmark run has its own session, and from the second run on it records into the chunks
// that the stopped sessions left in the collector's pool (up to 256 MiB), already faulted in
// (issue 44: BENCHMARKS.md, "Fresh memory against reused chunks").
inline bool OneSession() {
  const char* v = std::getenv("BENCH_ONE_SESSION");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

inline void StartSession(const benchmark::State&) {
  static bool started = false;
  if (OneSession() && started) return;
  started = true;
  roctx_utils_session_options o{};
  o.struct_size = sizeof(o);
  // Larger than any run, so nothing is dropped; with one session, larger than every run's
  // together (Google Benchmark's main thread takes part in every run).
  o.max_events_per_thread = OneSession() ? 1u << 28 : 1u << 24;
  if (roctx_utils_session_start(&o) != ROCTX_UTILS_OK) std::fprintf(stderr, "roctx_utils: session did not start\n");
}

inline void StopSession(const benchmark::State&) {
  if (OneSession()) return;
  roctx_utils_snapshot* s = nullptr;
  if (roctx_utils_session_stop(&s) != ROCTX_UTILS_OK) return;
  roctx_utils_capture_stats st{sizeof(roctx_utils_capture_stats)};
  roctx_utils_snapshot_stats(s, &st);
  if (st.dropped_event_cap + st.dropped_label_cap != 0) {
    std::fprintf(stderr, "warning: %llu events dropped; the figure is optimistic\n",
                 static_cast<unsigned long long>(st.dropped_event_cap + st.dropped_label_cap));
  }
  roctx_utils_snapshot_free(s);
}

}  // namespace roctx_utils_bench

#endif  // ROCTX_UTILS_BENCH_CAPTURE_SESSION_H_
