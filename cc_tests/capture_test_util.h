// Helpers for capture tests: run a session and read its snapshot as plain C++ values.
#ifndef ROCTX_UTILS_CC_TESTS_CAPTURE_TEST_UTIL_H_
#define ROCTX_UTILS_CC_TESTS_CAPTURE_TEST_UTIL_H_

#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "roctx_utils/roctx_utils.h"

namespace capture_test {

struct Event {
  uint32_t kind;
  uint32_t depth;
  uint64_t tid, end_tid, start_ns, end_ns;
  std::string label;
};

struct Result {
  int status = -99;
  std::vector<Event> events;
  roctx_utils_capture_stats stats{sizeof(roctx_utils_capture_stats)};
  roctx_utils_snapshot* snapshot = nullptr;  // kept for thread-name lookups
  ~Result() { roctx_utils_snapshot_free(snapshot); }

  std::vector<std::string> Labels() const {
    std::vector<std::string> out;
    for (const Event& e : events) out.push_back(e.label);
    return out;
  }
  std::string ThreadName(uint64_t tid) const {
    char buf[128];
    return roctx_utils_snapshot_thread_name(snapshot, tid, buf, sizeof(buf)) ? std::string(buf) : "";
  }
};

// A directory under the test's private temp dir.
inline std::string TmpDir(const std::string& name) {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string dir = std::string(base ? base : "/tmp") + "/" + name;
  mkdir(dir.c_str(), 0755);
  return dir;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline bool Contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

inline uint64_t Tid() { return static_cast<uint64_t>(syscall(SYS_gettid)); }

// roctx_utils_range_start(label) on one thread, roctx_utils_range_stop on another; returns the
// two threads' OS ids (start, stop).
inline std::pair<uint64_t, uint64_t> RangeAcrossThreads(const char* label) {
  uint64_t id = 0, tid_start = 0, tid_stop = 0;
  std::thread a([&] {
    tid_start = Tid();
    id = roctx_utils_range_start(label);
  });
  a.join();
  std::thread b([&] {
    tid_stop = Tid();
    roctx_utils_range_stop(id);
  });
  b.join();
  return {tid_start, tid_stop};
}

inline int Start(uint32_t mode = ROCTX_UTILS_CAPTURE_DEFAULT, uint64_t max_events = 0) {
  roctx_utils_session_options o{};
  o.struct_size = sizeof(o);
  o.mode = mode;
  o.max_events_per_thread = max_events;
  return roctx_utils_session_start(&o);
}

inline void Read(roctx_utils_snapshot* s, Result* r) {
  r->snapshot = s;
  const size_t n = roctx_utils_snapshot_event_count(s);
  for (size_t i = 0; i < n; ++i) {
    roctx_utils_event e{sizeof(roctx_utils_event)};
    if (roctx_utils_snapshot_event(s, i, &e) != ROCTX_UTILS_OK) continue;
    r->events.push_back({e.kind, e.depth, e.tid, e.end_tid, e.start_ns, e.end_ns, std::string(e.label, e.label_len)});
  }
  roctx_utils_snapshot_stats(s, &r->stats);
}

inline void Stop(Result* r) {
  roctx_utils_snapshot* s = nullptr;
  r->status = roctx_utils_session_stop(&s);
  if (s) Read(s, r);
}

}  // namespace capture_test

#endif  // ROCTX_UTILS_CC_TESTS_CAPTURE_TEST_UTIL_H_
