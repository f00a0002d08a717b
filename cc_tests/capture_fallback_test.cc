// Tool mode cannot come up (SDK missing, locked by another tool, unknown version, missing
// symbol): one clear message, and the session captures in-process instead. Each cc_test sets
// the environment and states EXPECT_MODE (1 SDK, 3 in-process) and EXPECT_MESSAGE (|-separated
// substrings of what is logged, empty for none).
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "cc_tests/capture_test_util.h"
#include "gtest/gtest.h"
#include "roctx_utils/roctx_utils.h"
#include "tsl/profiler/lib/nvtx_utils.h"

namespace {

std::vector<std::string> Split(const char* s) {
  std::vector<std::string> out;
  std::stringstream in(s ? s : "");
  for (std::string part; std::getline(in, part, '|');) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

TEST(CaptureFallback, SessionUsesTheExpectedModeAndStillCaptures) {
  ::testing::internal::CaptureStderr();
  tsl::profiler::RangePush(nullptr, "first_call");  // binds roctx (tool mode decided here)
  tsl::profiler::RangePop(nullptr);
  ASSERT_EQ(capture_test::Start(), ROCTX_UTILS_OK);
  tsl::profiler::RangePush(nullptr, "captured");
  tsl::profiler::RangePop(nullptr);
  capture_test::Result r;
  capture_test::Stop(&r);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(roctx_utils_capture_mode_get(), static_cast<uint32_t>(std::atoi(std::getenv("EXPECT_MODE")))) << err;
  EXPECT_EQ(r.Labels(), std::vector<std::string>{"captured"}) << err;
  for (const std::string& needle : Split(std::getenv("EXPECT_MESSAGE"))) {
    EXPECT_NE(err.find(needle), std::string::npos) << "missing '" << needle << "' in: " << err;
  }
}

}  // namespace
