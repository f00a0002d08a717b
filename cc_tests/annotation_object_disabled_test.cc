// The annotation object with emission off (XLA_ROCM_ENABLE_ROCTX=0): routed like
// ScopedAnnotation, so it reaches AnnotationStack when that is enabled and never roctx.
#include <string>
#include <vector>

#include "cc_tests/capture_test_util.h"
#include "cc_tests/fake_roctx_client.h"
#include "gtest/gtest.h"
#include "roctx_utils/roctx_utils.h"
#include "tsl/profiler/lib/nvtx_utils.h"
#include "xla/tsl/profiler/backends/cpu/annotation_stack.h"

namespace {

using tsl::profiler::AnnotationStack;

TEST(AnnotationObjectDisabled, GoesToAnnotationStackOnlyAndPopsOnce) {
  ASSERT_EQ(tsl::profiler::DefaultProfilerDomain(), nullptr);
  ASSERT_TRUE(roctx_test::Fake().ok);
  const uint64_t pushes = roctx_test::Fake().push_count();
  AnnotationStack::Enable(true);
  roctx_utils_annotation* a = roctx_utils_annotation_create("stack_only");
  EXPECT_EQ(AnnotationStack::Get(), "stack_only");
  roctx_utils_annotation_stop(a);
  roctx_utils_annotation_stop(a);
  EXPECT_EQ(AnnotationStack::Get(), "");
  roctx_utils_annotation_destroy(a);
  EXPECT_EQ(roctx_test::Fake().push_count(), pushes);  // roctx never saw it
  AnnotationStack::Enable(false);
}

TEST(AnnotationObjectDisabled, NothingListeningMeansNothingPushed) {
  AnnotationStack::Enable(false);
  const uint64_t pushes = roctx_test::Fake().push_count();
  {
    roctx_utils::Annotation a("nobody");
    EXPECT_EQ(AnnotationStack::Get(), "");
  }
  // Enabling the stack between create and stop must not produce an unmatched pop either.
  roctx_utils::Annotation b("late");
  AnnotationStack::Enable(true);
  AnnotationStack::PushAnnotation("host_owned");
  b.Stop();
  EXPECT_EQ(AnnotationStack::Get(), "host_owned");
  AnnotationStack::PopAnnotation();
  EXPECT_EQ(roctx_test::Fake().push_count(), pushes);
  AnnotationStack::Enable(false);
}

// roctx_utils_range_push/pop are explicit annotations (Python's roctx_utils.annotate), like
// roctx_utils_mark: emission off does not silence them, in roctx or in an in-process session.
TEST(AnnotationObjectDisabled, ExplicitRangesIgnoreTheEmissionSwitch) {
  ASSERT_TRUE(roctx_test::Fake().ok);
  ASSERT_EQ(capture_test::Start(ROCTX_UTILS_CAPTURE_IN_PROCESS), ROCTX_UTILS_OK);
  const uint64_t pushes = roctx_test::Fake().push_count();
  const uint64_t pops = roctx_test::Fake().pop_count();
  roctx_utils_range_push("user_step_0");
  roctx_utils_range_push(nullptr);  // "": reaches roctx, a session does not keep empty labels
  roctx_utils_range_pop();
  roctx_utils_range_push("inner");
  EXPECT_STREQ(roctx_test::Fake().last_push(), "inner");
  roctx_utils_range_pop();
  roctx_utils_range_pop();
  roctx_utils_range_pop();  // one too many: counted, never fatal
  EXPECT_EQ(roctx_test::Fake().push_count(), pushes + 3);
  EXPECT_EQ(roctx_test::Fake().pop_count(), pops + 4);
  capture_test::Result r;
  capture_test::Stop(&r);
  ASSERT_EQ(r.status, ROCTX_UTILS_OK);
  ASSERT_EQ(r.Labels(), (std::vector<std::string>{"user_step_0", "inner"}));
  EXPECT_EQ(r.events[0].depth, 0u);
  EXPECT_EQ(r.events[1].depth, 1u);
  EXPECT_LE(r.events[0].start_ns, r.events[1].start_ns);
  EXPECT_LE(r.events[1].end_ns, r.events[0].end_ns);
  EXPECT_EQ(r.stats.unmatched_pops, 1u);
}

}  // namespace
