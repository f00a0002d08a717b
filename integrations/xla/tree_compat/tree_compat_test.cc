// An XLA tree's own profiler headers against roctx_utils (integrations/xla/check.sh --compat):
// the tree's nvtx_utils.h and scoped_annotation.h, compiled as they are, call into
// //:roctx_utils_impl, which pushes into the tree's own AnnotationStack (annotation_stack.h and
// .cc compiled as they are; --//:annotation_stack=@xla_tree//:annotation_stack) and into roctx
// (the fake, with roctx's ABI). Every function the tree's header declares is called, so a
// changed signature fails the link; check.sh also fails on a declared name the library does not
// define. XLA_ROCM_ENABLE_ROCTX=1, so DefaultProfilerDomain() is non-null, as in a fork's run.
#include <cstdint>
#include <string>
#include <type_traits>

#include "cc_tests/fake_roctx_client.h"
#include "gtest/gtest.h"
#include "tsl/profiler/lib/nvtx_utils.h"
#include "tsl/profiler/lib/scoped_annotation.h"
#include "xla/tsl/profiler/backends/cpu/annotation_stack.h"

// roctx_utils' copy of nvtx_utils.h includes its roctx_types.h; the tree's does not. Both are on
// the include path, as in a fork's build; the tree's must win, as it does for XLA's own code.
#ifdef ROCTX_UTILS_TSL_PROFILER_LIB_ROCTX_TYPES_H_
#error "compiled against roctx_utils' nvtx_utils.h, not the XLA tree's"
#endif

namespace {

namespace prof = tsl::profiler;
using prof::AnnotationStack;
using prof::ScopedAnnotation;

// A payload type as XLA's annotations have them (xla/backends/gpu/runtime/annotation.h).
struct Payload {
  static uint64_t NvtxSchemaId() { return 0; }
  int64_t op_id = 7;
};

class TreeCompat : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(roctx_test::Fake().ok) << "the backend bound no roctx: " << roctx_test::Fake().path;
    ASSERT_NE(prof::DefaultProfilerDomain(), nullptr) << "XLA_ROCM_ENABLE_ROCTX=1 is set";
    AnnotationStack::Enable(true);
    ASSERT_TRUE(AnnotationStack::Get().empty());
  }
  void TearDown() override { AnnotationStack::Enable(false); }
};

TEST_F(TreeCompat, ScopedAnnotationPushesTheTreesStackAndRoctx) {
  const auto& fake = roctx_test::Fake();
  const uint64_t pushes = fake.push_count(), pops = fake.pop_count();
  {
    ScopedAnnotation outer("XlaModule:#hlo_module=jit_step#");
    {
      ScopedAnnotation inner([] { return std::string("Thunk:#hlo_op=fusion.1#"); });
      EXPECT_EQ(AnnotationStack::Get(), "XlaModule:#hlo_module=jit_step#::Thunk:#hlo_op=fusion.1#");
      EXPECT_EQ(fake.depth(), 2);
      EXPECT_STREQ(fake.last_push(), "Thunk:#hlo_op=fusion.1#");
      // The tree's AnnotationStack gave each level a range id of its own.
      const auto ids = AnnotationStack::GetScopeRangeIds();
      ASSERT_EQ(ids.size(), 2u);
      EXPECT_NE(ids[0], 0);
      EXPECT_NE(ids[1], 0);
      EXPECT_NE(ids[0], ids[1]);
    }
    EXPECT_EQ(AnnotationStack::Get(), "XlaModule:#hlo_module=jit_step#");
    EXPECT_EQ(fake.depth(), 1);
  }
  EXPECT_TRUE(AnnotationStack::Get().empty());
  EXPECT_EQ(fake.depth(), 0);
  EXPECT_EQ(fake.push_count() - pushes, 2u);
  EXPECT_EQ(fake.pop_count() - pops, 2u);
}

// Newer trees (openxla/xla main, rocm-jaxlib-v0.11.1) give ScopedAnnotation a second generator:
// one string for the AnnotationStack, one object for the range. With a non-null domain the
// tree's PushAnnotation calls RangePush with the range generator only and never the other one,
// so the backend's dual push puts the range's title in the stack too (docs/xla.md).
// A template, so that a tree without the form never compiles the call (a discarded statement is
// checked unless it depends on a template parameter).
template <typename Annotation, typename Range>
bool PushBothGenerators(Annotation annotation, Range range) {
  if constexpr (std::is_constructible_v<ScopedAnnotation, Annotation, Range>) {
    const auto& fake = roctx_test::Fake();
    {
      ScopedAnnotation both(annotation, range);
      EXPECT_STREQ(fake.last_push(), "Thunk:#hlo_op=fusion.2#");
      EXPECT_EQ(AnnotationStack::Get(), "Thunk:#hlo_op=fusion.2#");
      EXPECT_EQ(fake.depth(), 1);
    }
    EXPECT_TRUE(AnnotationStack::Get().empty());
    EXPECT_EQ(fake.depth(), 0);
    return true;
  } else {
    return false;
  }
}

TEST_F(TreeCompat, TwoGeneratorScopedAnnotationWhereTheTreeHasIt) {
  if (!PushBothGenerators([] { return std::string("Thunk:#hlo_op=fusion.2,shape=f32[8]#"); },
                          [] { return std::string("Thunk:#hlo_op=fusion.2#"); })) {
    GTEST_SKIP() << "this tree's ScopedAnnotation takes one generator";
  }
}

TEST_F(TreeCompat, RegisteredTitleWithAPayload) {
  const auto& fake = roctx_test::Fake();
  auto* domain = prof::DefaultProfilerDomain();
  prof::StringHandle title = prof::RegisterString(domain, "Thunk:#hlo_op=custom-call.3#");
  ASSERT_NE(title, nullptr);
  EXPECT_EQ(prof::RegisterString(domain, "Thunk:#hlo_op=custom-call.3#"), title);
  prof::RangePush(domain, title, Payload{});
  EXPECT_EQ(AnnotationStack::Get(), "Thunk:#hlo_op=custom-call.3#");
  EXPECT_STREQ(fake.last_push(), "Thunk:#hlo_op=custom-call.3#");
  prof::RangePop(domain);
  EXPECT_TRUE(AnnotationStack::Get().empty());
  EXPECT_EQ(fake.depth(), 0);
}

// Every other function the tree's header declares, called as XLA calls it: each must link
// against the library with the tree's signature, and none may disturb the ranges.
TEST_F(TreeCompat, EveryDeclaredFunctionLinks) {
  auto* domain = prof::DefaultProfilerDomain();
  prof::NameCurrentThread("xla-tree-compat");
  prof::NameDevice(0, "gpu0");
  int stream_object = 0;
  prof::NameStream(reinterpret_cast<prof::StreamHandle>(&stream_object), "compute");
  EXPECT_EQ(prof::RegisterSchema(domain, nullptr), 0u);
  char buffer[16] = {};
  prof::MarkMemoryInitialized(buffer, sizeof buffer, nullptr);
  prof::RangePush(domain, std::string("by string"));
  prof::RangePush(domain, "by pointer");
  prof::detail::RangePush(domain, prof::RegisterString(domain, "by handle"), 0, nullptr, 0);
  EXPECT_EQ(AnnotationStack::Get(), "by string::by pointer::by handle");
  prof::RangePop(domain);
  prof::RangePop(domain);
  prof::RangePop(domain);
  EXPECT_TRUE(AnnotationStack::Get().empty());
  EXPECT_EQ(roctx_test::Fake().depth(), 0);
}

}  // namespace
