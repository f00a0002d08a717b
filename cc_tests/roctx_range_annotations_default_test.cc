// Suite RoctxRangeAnnotationsDefault: no XLA_ROCM_ENABLE_ROCTX at all (12.3).
#include <cstdlib>

#include "gtest/gtest.h"
#include "tsl/profiler/lib/nvtx_utils.h"

namespace tsl::profiler {
namespace {

TEST(RoctxRangeAnnotationsDefault, DomainIsNullWhenEnvVarIsAbsent) {
  ASSERT_EQ(std::getenv("XLA_ROCM_ENABLE_ROCTX"), nullptr);
  EXPECT_EQ(DefaultProfilerDomain(), nullptr);
}

}  // namespace
}  // namespace tsl::profiler
