// Suite RoctxRangeAnnotationsEnabled: XLA_ROCM_ENABLE_ROCTX=1, fake roctx bound
// (nvtx_utils_contract.md 12.2).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cc_tests/fake_roctx_client.h"
#include "gtest/gtest.h"
#include "tsl/profiler/lib/nvtx_utils.h"
#include "tsl/profiler/lib/scoped_annotation.h"
#include "xla/tsl/profiler/backends/cpu/annotation_stack.h"

namespace tsl::profiler {
namespace {

using roctx_test::Fake;

class RoctxRangeAnnotationsEnabled : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(Fake().ok) << "the backend did not bind the fake roctx"; }
  void TearDown() override { AnnotationStack::Enable(false); }
};

TEST_F(RoctxRangeAnnotationsEnabled, DomainIsNonNullWhenEnvVarIsSet) {
  EXPECT_NE(DefaultProfilerDomain(), nullptr);
}

TEST_F(RoctxRangeAnnotationsEnabled, DomainStaysLatchedAcrossCalls) {
  auto* d = DefaultProfilerDomain();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(DefaultProfilerDomain(), d);
}

TEST_F(RoctxRangeAnnotationsEnabled, DomainIsLatchedAgainstLaterEnvChanges) {
  auto* d = DefaultProfilerDomain();
  setenv("XLA_ROCM_ENABLE_ROCTX", "0", 1);
  EXPECT_EQ(DefaultProfilerDomain(), d);
  EXPECT_NE(DefaultProfilerDomain(), nullptr);
  setenv("XLA_ROCM_ENABLE_ROCTX", "1", 1);
}

TEST_F(RoctxRangeAnnotationsEnabled, ScopedAnnotationStillPopulatesAnnotationStack) {
  AnnotationStack::Enable(true);
  {
    ScopedAnnotation a("domain_path_op");
    EXPECT_EQ(AnnotationStack::Get(), "domain_path_op");
  }
  EXPECT_EQ(AnnotationStack::Get(), "");
}

TEST_F(RoctxRangeAnnotationsEnabled, NestedScopedAnnotationsStayBalanced) {
  AnnotationStack::Enable(true);
  const int depth = Fake().depth();
  {
    ScopedAnnotation outer("outer_op");
    {
      ScopedAnnotation inner("inner_op");
      EXPECT_EQ(AnnotationStack::Get(), "outer_op::inner_op");
      EXPECT_EQ(Fake().depth(), depth + 2);
    }
    EXPECT_EQ(AnnotationStack::Get(), "outer_op");
  }
  EXPECT_EQ(AnnotationStack::Get(), "");
  EXPECT_EQ(Fake().depth(), depth);
}

TEST_F(RoctxRangeAnnotationsEnabled, ScopedAnnotationEmitsARoctxRange) {
  AnnotationStack::Enable(false);
  const int base = Fake().ProbeDepth();
  {
    ScopedAnnotation a("roctx_only");
    EXPECT_STREQ(Fake().last_push(), "roctx_only");
    EXPECT_EQ(Fake().ProbeDepth(), base + 1);
    EXPECT_EQ(AnnotationStack::Get(), "");
  }
  EXPECT_EQ(Fake().ProbeDepth(), base);
}

}  // namespace
}  // namespace tsl::profiler

// An annotation object with a RangePush overload of its own, as XLA's InstructionAnnotation
// (xla/backends/gpu/runtime/annotation.h): a registered title and a payload.
namespace xla_like {
struct OpRange {
  tsl::profiler::StringHandle title;
  static uint64_t NvtxSchemaId() { return 0; }
};
inline int range_push_overload_calls = 0;
inline void RangePush(tsl::profiler::ProfilerDomainHandle domain, const OpRange& range) {
  ++range_push_overload_calls;
  tsl::profiler::RangePush(domain, range.title, range);
}
}  // namespace xla_like

namespace tsl::profiler {
namespace {

// Today's upstream two-generator form: with a domain, the range generator alone names both
// roctx's range and (through the backend's dual push) the AnnotationStack entry.
TEST_F(RoctxRangeAnnotationsEnabled, TwoGeneratorScopedAnnotationPushesTheRange) {
  AnnotationStack::Enable(true);
  const int base = Fake().ProbeDepth();
  int annotation_calls = 0;
  {
    ScopedAnnotation a([&] { ++annotation_calls; return std::string("op#detail=1#"); },
                       [] { return std::string("op"); });
    EXPECT_EQ(AnnotationStack::Get(), "op");
    EXPECT_STREQ(Fake().last_push(), "op");
    EXPECT_EQ(Fake().ProbeDepth(), base + 1);
  }
  EXPECT_EQ(annotation_calls, 0);
  EXPECT_EQ(AnnotationStack::Get(), "");
  EXPECT_EQ(Fake().ProbeDepth(), base);

  const xla_like::OpRange range{RegisterString(DefaultProfilerDomain(), "registered_op")};
  {
    ScopedAnnotation b([] { return "registered_op#detail=1#"; },
                       [&]() -> const xla_like::OpRange& { return range; });
    EXPECT_EQ(xla_like::range_push_overload_calls, 1);
    EXPECT_EQ(AnnotationStack::Get(), "registered_op");
    EXPECT_STREQ(Fake().last_push(), "registered_op");
  }
  EXPECT_EQ(AnnotationStack::Get(), "");
  EXPECT_EQ(Fake().ProbeDepth(), base);
}

TEST_F(RoctxRangeAnnotationsEnabled, DetailRangePushDualPushesRegisteredTitle) {
  AnnotationStack::Enable(true);
  auto* d = DefaultProfilerDomain();
  StringHandle title = RegisterString(d, "registered_dual");
  const int base = Fake().ProbeDepth();
  detail::RangePush(d, title, 0, nullptr, 0);
  EXPECT_EQ(AnnotationStack::Get(), "registered_dual");
  EXPECT_EQ(Fake().ProbeDepth(), base + 1);
  RangePop(d);
  EXPECT_EQ(AnnotationStack::Get(), "");
  EXPECT_EQ(Fake().ProbeDepth(), base);
}

TEST_F(RoctxRangeAnnotationsEnabled, RegisterStringInternsRealAnnotation) {
  const std::string text = "Thunk:#name=fusion.3,hlo_op=fusion.3#";
  StringHandle h = RegisterString(DefaultProfilerDomain(), text);
  ASSERT_NE(h, nullptr);
  EXPECT_STREQ(reinterpret_cast<const char*>(h), text.c_str());
  EXPECT_EQ(RegisterString(DefaultProfilerDomain(), text), h);
}

}  // namespace
}  // namespace tsl::profiler
