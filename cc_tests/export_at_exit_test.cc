// ROCTX_UTILS_XSPACE_OUT, the no-code path: with the variable set, the first range starts a
// capture session and process exit writes it. Its own binary, because the session starts with
// the process's first use of the library: the parent never touches it, the forked child does.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "cc_tests/capture_test_util.h"
#include "gtest/gtest.h"
#include "roctx_utils/roctx_utils.h"
#include "tsl/profiler/lib/nvtx_utils.h"

namespace {

using capture_test::Contains;
using capture_test::ReadFile;
using capture_test::TmpDir;
// The no-code path: env set, ranges happen, the process exits; the trace is on disk.
TEST(ExportAtExit, XspaceOutWritesTheSessionWhenTheProcessExits) {
  const std::string dir = TmpDir("at_exit_logs");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    setenv("ROCTX_UTILS_XSPACE_OUT", dir.c_str(), 1);
    tsl::profiler::RangePush(nullptr, "exit_outer");  // first range: session starts here
    tsl::profiler::RangePush(nullptr, "exit_inner");
    tsl::profiler::RangePop(nullptr);
    tsl::profiler::RangePop(nullptr);
    std::exit(0);  // runs the atexit writer
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  const std::string listing = dir + "/plugins/profile";
  struct stat st;
  ASSERT_EQ(stat(listing.c_str(), &st), 0) << "nothing written under " << dir;
  // One run directory with one host file containing our ranges.
  std::string found;
  FILE* p = popen(("find " + listing + " -name '*.xplane.pb'").c_str(), "r");
  char line[1024];
  while (p && fgets(line, sizeof(line), p)) found += line;
  if (p) pclose(p);
  ASSERT_FALSE(found.empty());
  found.erase(found.find('\n'));
  const std::string bytes = ReadFile(found);
  EXPECT_TRUE(Contains(bytes, "exit_outer"));
  EXPECT_TRUE(Contains(bytes, "exit_inner"));
}

// ROCTX_UTILS_MAX_EVENTS_PER_THREAD caps the automatic session, which the drop warning tells a
// user of roctx record or ROCTX_UTILS_XSPACE_OUT to raise (issue 40: that hint named only the
// C API's session option, which neither can set).
TEST(ExportAtExit, TheAutomaticSessionsEventCapComesFromTheEnvironment) {
  const std::string dir = TmpDir("at_exit_cap");
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    setenv("ROCTX_UTILS_XSPACE_OUT", dir.c_str(), 1);
    setenv("ROCTX_UTILS_CAPTURE", "self", 1);
    setenv("ROCTX_UTILS_MAX_EVENTS_PER_THREAD", "10", 1);
    for (int i = 0; i < 25; ++i) {
      tsl::profiler::RangePush(nullptr, "capped");
      tsl::profiler::RangePop(nullptr);
    }
    roctx_utils_snapshot* snapshot = roctx_utils_session_snapshot();
    roctx_utils_capture_stats stats{};
    stats.struct_size = sizeof stats;
    const bool ok = snapshot != nullptr && roctx_utils_snapshot_stats(snapshot, &stats) == ROCTX_UTILS_OK;
    const uint64_t counts[2] = {ok ? stats.recorded : 0, ok ? stats.dropped_event_cap : 0};
    if (write(fds[1], counts, sizeof counts) != static_cast<ssize_t>(sizeof counts)) _exit(3);
    roctx_utils_snapshot_free(snapshot);
    std::exit(0);
  }
  close(fds[1]);
  uint64_t counts[2] = {0, 0};
  ASSERT_EQ(read(fds[0], counts, sizeof counts), static_cast<ssize_t>(sizeof counts));
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(counts[0], 10u);
  EXPECT_EQ(counts[1], 15u);
}

}  // namespace
