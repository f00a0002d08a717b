// //:nvtx_utils_impl, whichever backend the configuration selects: the contract every backend
// shares, plus the one visible difference (the stub registers nothing).
#include <string>

#include "gtest/gtest.h"
#include "tsl/profiler/lib/nvtx_utils.h"

namespace tsl::profiler {
namespace {

TEST(NvtxUtilsImpl, SharedContract) {
  EXPECT_EQ(DefaultProfilerDomain(), nullptr);  // no XLA_ROCM_ENABLE_ROCTX here
  EXPECT_EQ(DefaultProfilerDomain(), DefaultProfilerDomain());
  EXPECT_EQ(RegisterSchema(DefaultProfilerDomain(), nullptr), 0u);
  RangePush(DefaultProfilerDomain(), "balanced");
  RangePop(DefaultProfilerDomain());
}

TEST(NvtxUtilsImpl, SelectedBackendRegistersStringsAsDocumented) {
  StringHandle h = RegisterString(nullptr, "which_backend");
#ifdef EXPECT_ROCM_IMPL
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(h)), "which_backend");
#else
  EXPECT_EQ(h, nullptr);
#endif
}

}  // namespace
}  // namespace tsl::profiler
