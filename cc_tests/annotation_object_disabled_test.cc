// The annotation object with emission off (XLA_ROCM_ENABLE_ROCTX=0): routed like
// ScopedAnnotation, so it reaches AnnotationStack when that is enabled and never roctx.
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

}  // namespace
