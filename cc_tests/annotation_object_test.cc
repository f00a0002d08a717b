// The annotation object (roctx_utils_annotation_* and roctx_utils::Annotation) with emission on:
// creation pushes AnnotationStack + roctx, the first stop pops both, nothing else pops.
#include <string>
#include <utility>

#include "cc_tests/fake_roctx_client.h"
#include "gtest/gtest.h"
#include "roctx_utils/roctx_utils.h"
#include "tsl/profiler/lib/nvtx_utils.h"
#include "xla/tsl/profiler/backends/cpu/annotation_stack.h"

namespace {

using roctx_test::Fake;
using tsl::profiler::AnnotationStack;

class AnnotationObject : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(tsl::profiler::DefaultProfilerDomain(), nullptr) << "needs XLA_ROCM_ENABLE_ROCTX=1";
    ASSERT_TRUE(Fake().ok);
    AnnotationStack::Enable(true);
    depth_ = Fake().depth();
    pops_ = Fake().pop_count();
  }
  void TearDown() override { AnnotationStack::Enable(false); }
  uint64_t Pops() const { return Fake().pop_count() - pops_; }
  int depth_ = 0;
  uint64_t pops_ = 0;
};

TEST_F(AnnotationObject, CreatePushesBothStacks) {
  roctx_utils_annotation* a = roctx_utils_annotation_create("py_step");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(AnnotationStack::Get(), "py_step");
  EXPECT_STREQ(Fake().last_push(), "py_step");
  EXPECT_EQ(Fake().depth(), depth_ + 1);
  roctx_utils_annotation_destroy(a);
  EXPECT_EQ(AnnotationStack::Get(), "");
  EXPECT_EQ(Fake().depth(), depth_);
}

TEST_F(AnnotationObject, DoubleStopPopsOnce) {
  roctx_utils_annotation* outer = roctx_utils_annotation_create("outer");
  roctx_utils_annotation* a = roctx_utils_annotation_create("inner");
  roctx_utils_annotation_stop(a);
  roctx_utils_annotation_stop(a);
  EXPECT_EQ(Pops(), 1u);
  EXPECT_EQ(AnnotationStack::Get(), "outer");  // the second stop did not pop "outer"
  EXPECT_EQ(Fake().depth(), depth_ + 1);
  roctx_utils_annotation_destroy(a);
  roctx_utils_annotation_destroy(outer);
  EXPECT_EQ(Pops(), 2u);
}

TEST_F(AnnotationObject, StopThenDestroyPopsOnce) {
  roctx_utils_annotation* a = roctx_utils_annotation_create("stop_then_destroy");
  roctx_utils_annotation_stop(a);
  EXPECT_EQ(Pops(), 1u);
  roctx_utils_annotation_destroy(a);
  EXPECT_EQ(Pops(), 1u);
  EXPECT_EQ(Fake().depth(), depth_);
}

TEST_F(AnnotationObject, DestroyWithoutStopPops) {
  roctx_utils_annotation* a = roctx_utils_annotation_create("destroy_only");
  roctx_utils_annotation_destroy(a);
  EXPECT_EQ(Pops(), 1u);
  EXPECT_EQ(AnnotationStack::Get(), "");
  EXPECT_EQ(Fake().depth(), depth_);
}

TEST_F(AnnotationObject, NullNameAndNullHandleAreSafe) {
  roctx_utils_annotation* a = roctx_utils_annotation_create(nullptr);
  EXPECT_STREQ(Fake().last_push(), "");
  roctx_utils_annotation_destroy(a);
  roctx_utils_annotation_stop(nullptr);
  roctx_utils_annotation_destroy(nullptr);
  EXPECT_EQ(Pops(), 1u);
}

TEST_F(AnnotationObject, CxxObjectWithoutScopeStillPops) {
  auto* leaked_scope = new roctx_utils::Annotation("heap_object");  // as a Python wrapper holds it
  EXPECT_EQ(AnnotationStack::Get(), "heap_object");
  delete leaked_scope;  // never Stop()ped
  EXPECT_EQ(Pops(), 1u);
  EXPECT_EQ(AnnotationStack::Get(), "");
}

TEST_F(AnnotationObject, CxxStopThenScopeExitNeverDoublePops) {
  {
    roctx_utils::Annotation a("with_block");
    a.Stop();  // __exit__
    a.Stop();
    EXPECT_EQ(AnnotationStack::Get(), "");
  }  // destructor
  EXPECT_EQ(Pops(), 1u);
  EXPECT_EQ(Fake().depth(), depth_);
}

TEST_F(AnnotationObject, CxxMovedFromObjectDoesNotPop) {
  {
    roctx_utils::Annotation a("moved");
    roctx_utils::Annotation b(std::move(a));
    EXPECT_EQ(AnnotationStack::Get(), "moved");
  }
  EXPECT_EQ(Pops(), 1u);
}

}  // namespace
