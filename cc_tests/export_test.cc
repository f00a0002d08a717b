// Export from the C API: the ROCTX plane bytes, merge into an existing XSpace, the log
// directory and Chrome JSON; and ROCTX_UTILS_XSPACE_OUT writing a trace at process exit.
// (XSpace content itself is checked in Rust (roctx_export) and by XProf in tests/xprof.)
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "cc_tests/capture_test_util.h"
#include "gtest/gtest.h"
#include "roctx_utils/roctx_utils.h"
#include "tsl/profiler/lib/nvtx_utils.h"
#include "tsl/profiler/lib/scoped_annotation.h"

namespace {

using capture_test::Contains;
using capture_test::ReadFile;
using capture_test::TmpDir;
using capture_test::Result;
using capture_test::Start;
using capture_test::Stop;
using capture_test::Tid;

class Export : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(Start(ROCTX_UTILS_CAPTURE_IN_PROCESS), ROCTX_UTILS_OK);
    tsl::profiler::NameCurrentThread("export_main");
    {
      tsl::profiler::ScopedAnnotation outer("export_outer");
      tsl::profiler::ScopedAnnotation inner("export_inner");
    }
    roctx_utils_mark("export_mark");
    Stop(&result_);
    ASSERT_EQ(result_.status, ROCTX_UTILS_OK);
    ASSERT_EQ(result_.events.size(), 3u);
  }
  Result result_;
};

TEST_F(Export, RoctxPlaneBytesCarryLinesAndLabels) {
  roctx_utils_buffer plane{sizeof(roctx_utils_buffer)};
  ASSERT_EQ(roctx_utils_snapshot_roctx_plane(result_.snapshot, &plane), ROCTX_UTILS_OK);
  const std::string bytes(reinterpret_cast<const char*>(plane.data), plane.len);
  EXPECT_TRUE(Contains(bytes, "/host:ROCTX"));
  EXPECT_TRUE(Contains(bytes, "Host Threads/" + std::to_string(Tid()) + "/ROCTX"));
  EXPECT_TRUE(Contains(bytes, "export_inner"));
  EXPECT_TRUE(Contains(bytes, "nvtx_range"));
  roctx_utils_buffer_free(&plane);
  EXPECT_EQ(plane.data, nullptr);
  roctx_utils_buffer_free(&plane);  // idempotent
}

TEST_F(Export, MergeIntoAnXSpaceAndRejectGarbage) {
  roctx_utils_buffer merged{sizeof(roctx_utils_buffer)};
  ASSERT_EQ(roctx_utils_merge_into_xspace(nullptr, 0, result_.snapshot, &merged), ROCTX_UTILS_OK);
  const std::string bytes(reinterpret_cast<const char*>(merged.data), merged.len);
  EXPECT_TRUE(Contains(bytes, "/host:CPU"));
  EXPECT_FALSE(Contains(bytes, "/host:ROCTX"));  // the transient plane is gone after the merge
  // Merging again into our own output keeps one host plane (idempotent structure).
  roctx_utils_buffer twice{sizeof(roctx_utils_buffer)};
  ASSERT_EQ(roctx_utils_merge_into_xspace(merged.data, merged.len, result_.snapshot, &twice), ROCTX_UTILS_OK);
  roctx_utils_buffer_free(&twice);
  const uint8_t garbage[] = {0xff, 0xff, 0xff, 0x01};
  roctx_utils_buffer bad{sizeof(roctx_utils_buffer)};
  EXPECT_EQ(roctx_utils_merge_into_xspace(garbage, sizeof(garbage), result_.snapshot, &bad), ROCTX_UTILS_INVALID_ARGUMENT);
  EXPECT_EQ(bad.data, nullptr);
  roctx_utils_buffer_free(&merged);
}

// Output structs carry the caller's struct_size: a missing one is refused (nothing written, no
// buffer leaked), an older, shorter struct gets only its own fields.
TEST_F(Export, OutputStructsHonourTheCallersStructSize) {
  roctx_utils_buffer unsized{};
  EXPECT_EQ(roctx_utils_snapshot_roctx_plane(result_.snapshot, &unsized), ROCTX_UTILS_INVALID_ARGUMENT);
  EXPECT_EQ(unsized.data, nullptr);
  roctx_utils_event event{};
  EXPECT_EQ(roctx_utils_snapshot_event(result_.snapshot, 0, &event), ROCTX_UTILS_INVALID_ARGUMENT);
  EXPECT_EQ(event.tid, 0u);
  roctx_utils_capture_stats stats{};
  EXPECT_EQ(roctx_utils_snapshot_stats(result_.snapshot, &stats), ROCTX_UTILS_INVALID_ARGUMENT);
  // A caller built when the stats had only `recorded`: the word after it stays untouched.
  uint64_t old_stats[3] = {2 * sizeof(uint64_t), 0, 0xfeed};
  ASSERT_EQ(roctx_utils_snapshot_stats(result_.snapshot, reinterpret_cast<roctx_utils_capture_stats*>(old_stats)),
            ROCTX_UTILS_OK);
  EXPECT_EQ(old_stats[0], 2 * sizeof(uint64_t));
  EXPECT_EQ(old_stats[1], 3u);  // recorded
  EXPECT_EQ(old_stats[2], 0xfeedu);
  roctx_utils_counters counters{};
  EXPECT_EQ(roctx_utils_counters_get(&counters), ROCTX_UTILS_INVALID_ARGUMENT);
  counters.struct_size = sizeof(counters);
  EXPECT_EQ(roctx_utils_counters_get(&counters), ROCTX_UTILS_OK);
  EXPECT_EQ(roctx_utils_counters_get(nullptr), ROCTX_UTILS_INVALID_ARGUMENT);
}

TEST_F(Export, LogDirectoryLayoutIsWhatTensorBoardReads) {
  const std::string dir = TmpDir("logdir");
  char path[1024] = {};
  ASSERT_EQ(roctx_utils_snapshot_write_logdir(result_.snapshot, dir.c_str(), "run_a", path, sizeof(path)), ROCTX_UTILS_OK);
  const std::string p(path);
  EXPECT_EQ(p.rfind(dir + "/plugins/profile/run_a/", 0), 0u) << p;
  EXPECT_EQ(p.substr(p.size() - 10), ".xplane.pb") << p;
  EXPECT_TRUE(Contains(ReadFile(p), "export_outer"));
  EXPECT_EQ(roctx_utils_snapshot_write_logdir(result_.snapshot, nullptr, nullptr, nullptr, 0), ROCTX_UTILS_INVALID_ARGUMENT);
  EXPECT_EQ(roctx_utils_snapshot_write_logdir(result_.snapshot, "/proc/forbidden_dir", nullptr, nullptr, 0), ROCTX_UTILS_IO_ERROR);
}

TEST_F(Export, ARunNameStaysOneDirectoryInsideTheLogDirectory) {
  // Issue 25, item 5: "../../../x" and absolute runs wrote outside the log directory, "a/b" made
  // a nested run no reader lists; all returned OK.
  const std::string dir = TmpDir("logdir_runs");
  char path[1024] = {};
  for (const char* run : {"../../../escaped", "/tmp/escaped_abs", "a/b"}) {
    ASSERT_EQ(roctx_utils_snapshot_write_logdir(result_.snapshot, dir.c_str(), run, path, sizeof(path)), ROCTX_UTILS_OK) << run;
    const std::string p(path);
    EXPECT_EQ(p.rfind(dir + "/plugins/profile/", 0), 0u) << run << " -> " << p;
    const std::string rest = p.substr(dir.size() + std::string("/plugins/profile/").size());
    EXPECT_EQ(rest.find('/'), rest.rfind('/')) << "one directory level: " << p;
    EXPECT_EQ(p.find("/../"), std::string::npos) << p;
  }
  for (const char* run : {"", ".", ".."}) {
    EXPECT_EQ(roctx_utils_snapshot_write_logdir(result_.snapshot, dir.c_str(), run, path, sizeof(path)), ROCTX_UTILS_INVALID_ARGUMENT) << run;
  }
}

TEST_F(Export, ChromeJsonHasRowsEventsAndArgs) {
  const std::string path = TmpDir("chrome") + "/trace.json";
  ASSERT_EQ(roctx_utils_snapshot_write_chrome(result_.snapshot, path.c_str()), ROCTX_UTILS_OK);
  const std::string json = ReadFile(path);
  EXPECT_TRUE(Contains(json, "Host Threads/" + std::to_string(Tid()) + "/ROCTX (export_main)")) << json;
  EXPECT_TRUE(Contains(json, "\"nvtx_range\":\"export_inner\"")) << json;
  EXPECT_TRUE(Contains(json, "\"ph\":\"i\"")) << json;  // the mark
}

}  // namespace
