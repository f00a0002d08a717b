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

}  // namespace
