// Suite RoctxRangeAnnotationsBadEnv: XLA_ROCM_ENABLE_ROCTX=yes (12.4), plus the warning text.
#include <cstdlib>
#include <string>

#include "gtest/gtest.h"
#include "tsl/profiler/lib/nvtx_utils.h"

namespace tsl::profiler {
namespace {

TEST(RoctxRangeAnnotationsBadEnv, UnrecognisedValueLeavesRoctxDisabled) {
  ASSERT_STREQ(std::getenv("XLA_ROCM_ENABLE_ROCTX"), "yes");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(DefaultProfilerDomain(), nullptr);
  EXPECT_EQ(DefaultProfilerDomain(), nullptr);
  const std::string err = ::testing::internal::GetCapturedStderr();
  // One warning naming the variable, the value and the accepted spellings.
  EXPECT_NE(err.find("XLA_ROCM_ENABLE_ROCTX is set to an unrecognised value"), std::string::npos) << err;
  EXPECT_NE(err.find("\"yes\""), std::string::npos) << err;
  EXPECT_NE(err.find("0/false/1/true"), std::string::npos) << err;
  EXPECT_EQ(err.find("unrecognised", err.find("unrecognised") + 1), std::string::npos) << "warned twice";
}

}  // namespace
}  // namespace tsl::profiler
