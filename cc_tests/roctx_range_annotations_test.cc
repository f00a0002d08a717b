// Suite RoctxRangeAnnotations: the ROCm backend with emission pinned off
// (XLA_ROCM_ENABLE_ROCTX=0) and the fake roctx bound through ROCTX_UTILS_ROCTX_LIBRARY.
// Tests 1-17 are upstream's checklist (nvtx_utils_contract.md 12.1); the rest cover the
// title_text form, naming and null inputs.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cc_tests/fake_roctx_client.h"
#include "gtest/gtest.h"
#include "roctx_utils/roctx_utils.h"
#include "tsl/profiler/lib/nvtx_utils.h"
#include "tsl/profiler/lib/scoped_annotation.h"
#include "xla/tsl/profiler/backends/cpu/annotation_stack.h"

namespace tsl::profiler {
namespace {

using roctx_test::Fake;

class RoctxRangeAnnotations : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(Fake().ok) << "the backend did not bind the fake roctx";
    AnnotationStack::Enable(true);
  }
  void TearDown() override { AnnotationStack::Enable(false); }
};

TEST_F(RoctxRangeAnnotations, DefaultProfilerDomainDefaultsToNullAndIsStable) {
  EXPECT_EQ(DefaultProfilerDomain(), nullptr);
  EXPECT_EQ(DefaultProfilerDomain(), DefaultProfilerDomain());
}

TEST_F(RoctxRangeAnnotations, DomainIsLatchedAgainstLaterEnvChanges) {
  EXPECT_EQ(DefaultProfilerDomain(), nullptr);
  setenv("XLA_ROCM_ENABLE_ROCTX", "1", 1);
  EXPECT_EQ(DefaultProfilerDomain(), nullptr);
  setenv("XLA_ROCM_ENABLE_ROCTX", "0", 1);
}

TEST_F(RoctxRangeAnnotations, RangePushPopulatesAnnotationStack) {
  RangePush(DefaultProfilerDomain(), "test_op");
  EXPECT_EQ(AnnotationStack::Get(), "test_op");
  RangePop(DefaultProfilerDomain());
  EXPECT_EQ(AnnotationStack::Get(), "");
}

TEST_F(RoctxRangeAnnotations, NestedPushPopMaintainsAnnotationStack) {
  auto* d = DefaultProfilerDomain();
  RangePush(d, "outer");
  EXPECT_EQ(AnnotationStack::Get(), "outer");
  RangePush(d, std::string("inner"));
  EXPECT_EQ(AnnotationStack::Get(), "outer::inner");
  RangePop(d);
  EXPECT_EQ(AnnotationStack::Get(), "outer");
  RangePop(d);
  EXPECT_EQ(AnnotationStack::Get(), "");
}

TEST_F(RoctxRangeAnnotations, PushPopWithAnnotationStackDisabled) {
  AnnotationStack::Enable(false);
  const int depth = Fake().depth();
  RangePush(DefaultProfilerDomain(), "invisible");
  EXPECT_EQ(AnnotationStack::Get(), "");
  EXPECT_EQ(Fake().depth(), depth + 1);  // roctx still gets the range
  RangePop(DefaultProfilerDomain());
  EXPECT_EQ(AnnotationStack::Get(), "");
  EXPECT_EQ(Fake().depth(), depth);
}

TEST_F(RoctxRangeAnnotations, ScopedAnnotationIntegration) {
  {
    ScopedAnnotation outer("my_kernel");
    EXPECT_EQ(AnnotationStack::Get(), "my_kernel");
    {
      ScopedAnnotation inner([] { return std::string("inner_kernel"); });
      EXPECT_EQ(AnnotationStack::Get(), "my_kernel::inner_kernel");
    }
    EXPECT_EQ(AnnotationStack::Get(), "my_kernel");
  }
  EXPECT_EQ(AnnotationStack::Get(), "");
}

// Today's upstream two-generator form with no domain: the AnnotationStack gets the annotation
// generator's text, roctx nothing, and the range generator is never called.
TEST_F(RoctxRangeAnnotations, TwoGeneratorScopedAnnotationWithoutADomain) {
  const int depth = Fake().depth();
  int range_calls = 0;
  {
    ScopedAnnotation a([] { return std::string("op#detail=1#"); },
                       [&] { ++range_calls; return std::string("op"); });
    EXPECT_EQ(AnnotationStack::Get(), "op#detail=1#");
    EXPECT_EQ(Fake().depth(), depth);
  }
  EXPECT_EQ(AnnotationStack::Get(), "");
  EXPECT_EQ(range_calls, 0);
  AnnotationStack::Enable(false);
  {
    ScopedAnnotation b([] { return "unheard"; }, [&] { ++range_calls; return "unheard"; });
    EXPECT_EQ(AnnotationStack::Get(), "");
  }
  EXPECT_EQ(range_calls, 0);
}

TEST_F(RoctxRangeAnnotations, ScopedAnnotationDisabledStackDoesNotCrash) {
  AnnotationStack::Enable(false);
  {
    ScopedAnnotation a("nothing_listens");
    EXPECT_EQ(AnnotationStack::Get(), "");
  }
  EXPECT_EQ(AnnotationStack::Get(), "");
}

TEST_F(RoctxRangeAnnotations, DirectRoctxCallsDoNotCrash) {
  const int depth = Fake().RangePushA("direct");
  EXPECT_GE(depth, 0);
  EXPECT_EQ(Fake().RangePop(), depth);
  ASSERT_NE(Fake().MarkA, nullptr);
  Fake().MarkA("direct_mark");
}

TEST_F(RoctxRangeAnnotations, DirectRoctxNestedRanges) {
  const int d0 = Fake().RangePushA("a");
  EXPECT_EQ(Fake().RangePushA("b"), d0 + 1);
  EXPECT_EQ(Fake().RangePushA("c"), d0 + 2);
  EXPECT_EQ(Fake().RangePop(), d0 + 2);
  EXPECT_EQ(Fake().RangePop(), d0 + 1);
  EXPECT_EQ(Fake().RangePop(), d0);
}

TEST_F(RoctxRangeAnnotations, DetailRangePushPushesRegisteredTitle) {
  auto* d = DefaultProfilerDomain();
  StringHandle title = RegisterString(d, "registered_op");
  ASSERT_NE(title, nullptr);
  detail::RangePush(d, title, 0, nullptr, 0);
  EXPECT_EQ(AnnotationStack::Get(), "registered_op");
  EXPECT_STREQ(Fake().last_push(), "registered_op");
  RangePop(d);
  EXPECT_EQ(AnnotationStack::Get(), "");
}

TEST_F(RoctxRangeAnnotations, DetailRangePushWithNullTitleStaysBalanced) {
  auto* d = DefaultProfilerDomain();
  const int depth = Fake().depth();
  RangePush(d, "outer");
  detail::RangePush(d, nullptr, 0, nullptr, 0);
  EXPECT_EQ(Fake().depth(), depth + 2);  // the null title still opened a range
  EXPECT_STREQ(Fake().last_push(), "");
  RangePop(d);
  EXPECT_EQ(AnnotationStack::Get(), "outer");
  RangePop(d);
  EXPECT_EQ(AnnotationStack::Get(), "");
  EXPECT_EQ(Fake().depth(), depth);
}

struct FakePayload {
  uint64_t NvtxSchemaId() const { return 0x1234; }
  int bytes[4] = {1, 2, 3, 4};
};

TEST_F(RoctxRangeAnnotations, DetailRangePushDropsSchemaAndPayload) {
  auto* d = DefaultProfilerDomain();
  StringHandle title = RegisterString(d, "with_payload");
  FakePayload payload;
  RangePush(d, title, payload);  // the template: schema 0x1234 and the struct's bytes
  EXPECT_EQ(AnnotationStack::Get(), "with_payload");
  EXPECT_STREQ(Fake().last_push(), "with_payload");
  RangePop(d);
  EXPECT_EQ(AnnotationStack::Get(), "");
}

TEST_F(RoctxRangeAnnotations, RegisterStringInternsAndOutlivesCaller) {
  StringHandle a, b;
  {
    std::string first(64, 'a');
    std::string second(64, 'b');
    a = RegisterString(nullptr, first);
    b = RegisterString(nullptr, second);
  }  // the caller's strings are gone
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  EXPECT_STREQ(reinterpret_cast<const char*>(a), std::string(64, 'a').c_str());
  EXPECT_STREQ(reinterpret_cast<const char*>(b), std::string(64, 'b').c_str());
  EXPECT_EQ(RegisterString(nullptr, std::string(64, 'a')), a);
  EXPECT_EQ(RegisterString(DefaultProfilerDomain(), std::string(64, 'a')), a);
}

TEST_F(RoctxRangeAnnotations, NamingAndMarkMemoryLinkAndDoNotCrash) {
  NameCurrentThread("test_thread");
  NameDevice(0, "gpu0");
  char buf[8] = {};
  MarkMemoryInitialized(buf, sizeof(buf), nullptr);
  EXPECT_EQ(buf[0], 0);
}

TEST_F(RoctxRangeAnnotations, RegisterStringIsSafeUnderConcurrentCallers) {
  constexpr int kThreads = 8, kLabels = 32;
  std::vector<std::vector<StringHandle>> seen(kThreads, std::vector<StringHandle>(kLabels));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &seen] {
      for (int i = 0; i < kLabels; ++i) {
        int label = (i + t * 5) % kLabels;  // different orders per thread
        seen[t][label] = RegisterString(nullptr, "concurrent_label_" + std::to_string(label));
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int label = 0; label < kLabels; ++label) {
    for (int t = 1; t < kThreads; ++t) EXPECT_EQ(seen[t][label], seen[0][label]) << label;
    EXPECT_STREQ(reinterpret_cast<const char*>(seen[0][label]),
                 ("concurrent_label_" + std::to_string(label)).c_str());
  }
}

TEST_F(RoctxRangeAnnotations, RegisterSchemaReturnsZero) {
  int schema = 42;
  EXPECT_EQ(RegisterSchema(DefaultProfilerDomain(), &schema), 0u);
  EXPECT_EQ(RegisterSchema(nullptr, nullptr), 0u);
}

TEST_F(RoctxRangeAnnotations, DualPushBothPipelinesSimultaneously) {
  const int base = Fake().ProbeDepth();
  RangePush(DefaultProfilerDomain(), "dual_push_test");
  EXPECT_EQ(AnnotationStack::Get(), "dual_push_test");
  EXPECT_EQ(Fake().ProbeDepth(), base + 1);
  RangePop(DefaultProfilerDomain());
  EXPECT_EQ(AnnotationStack::Get(), "");
  EXPECT_EQ(Fake().ProbeDepth(), base);
}

// ---- beyond upstream's checklist ----

TEST_F(RoctxRangeAnnotations, TitleTextFormPushesTitleText) {
  auto* d = DefaultProfilerDomain();
  StringHandle title = RegisterString(d, "registered_name");
  detail::RangePush(d, title, "title_text_name", 7, nullptr, 0);
  EXPECT_EQ(AnnotationStack::Get(), "title_text_name");
  EXPECT_STREQ(Fake().last_push(), "title_text_name");
  RangePop(d);
  EXPECT_EQ(AnnotationStack::Get(), "");
}

TEST_F(RoctxRangeAnnotations, TitleTextFormFallsBackToTheHandleThenEmpty) {
  auto* d = DefaultProfilerDomain();
  const int depth = Fake().depth();
  detail::RangePush(d, RegisterString(d, "from_handle"), nullptr, 0, nullptr, 0);
  EXPECT_EQ(AnnotationStack::Get(), "from_handle");
  detail::RangePush(d, nullptr, nullptr, 0, nullptr, 0);
  EXPECT_EQ(Fake().depth(), depth + 2);
  EXPECT_STREQ(Fake().last_push(), "");
  RangePop(d);
  RangePop(d);
  EXPECT_EQ(AnnotationStack::Get(), "");
  EXPECT_EQ(Fake().depth(), depth);
}

TEST_F(RoctxRangeAnnotations, TitleTextTemplateForwardsTitleText) {
  auto* d = DefaultProfilerDomain();
  FakePayload payload;
  RangePush(d, RegisterString(d, "handle_text"), "template_title_text", payload);
  EXPECT_EQ(AnnotationStack::Get(), "template_title_text");
  RangePop(d);
}

TEST_F(RoctxRangeAnnotations, NullAsciiPushesEmptyAndStaysBalanced) {
  const int depth = Fake().depth();
  RangePush(nullptr, static_cast<const char*>(nullptr));
  EXPECT_EQ(Fake().depth(), depth + 1);
  EXPECT_STREQ(Fake().last_push(), "");
  RangePop(nullptr);
  EXPECT_EQ(Fake().depth(), depth);
}

TEST_F(RoctxRangeAnnotations, RangeTextReachesRoctxUnchanged) {
  const uint64_t pushes = Fake().push_count();
  RangePush(nullptr, "Thunk:#name=fusion.3,hlo_op=fusion.3#");
  EXPECT_STREQ(Fake().last_push(), "Thunk:#name=fusion.3,hlo_op=fusion.3#");
  EXPECT_EQ(Fake().push_count(), pushes + 1);
  RangePop(nullptr);
}

TEST_F(RoctxRangeAnnotations, UnmatchedPopIsHarmless) {
  AnnotationStack::Enable(false);
  AnnotationStack::Enable(true);  // wipes this thread's stack
  const uint64_t underflows = Fake().underflow_count();
  RangePop(nullptr);
  EXPECT_EQ(AnnotationStack::Get(), "");
  EXPECT_EQ(Fake().underflow_count(), underflows + 1);  // roctx answered -1, nothing broke
}

TEST_F(RoctxRangeAnnotations, NamingReachesRoctxNameFirst) {
  ASSERT_NE(Fake().names, nullptr);
  int stream_object = 0;
  NameCurrentThread("worker_7");
  NameDevice(3, "MI300X:3");
  NameStream(reinterpret_cast<StreamHandle>(&stream_object), "compute_stream");
  char thread_name[64], device_name[64], stream_name[64];
  int device_id = -1;
  const void* stream = nullptr;
  Fake().names(thread_name, device_name, &device_id, stream_name, &stream, sizeof(thread_name));
  EXPECT_STREQ(thread_name, "worker_7");
  EXPECT_STREQ(device_name, "MI300X:3");
  EXPECT_EQ(device_id, 3);
  EXPECT_STREQ(stream_name, "compute_stream");
  EXPECT_EQ(stream, &stream_object);
}

TEST_F(RoctxRangeAnnotations, NullStreamIsCountedAndNotPassedOn) {
  ASSERT_NE(Fake().name_calls, nullptr);
  roctx_utils_counters before{sizeof(roctx_utils_counters)}, after{sizeof(roctx_utils_counters)};
  roctx_utils_counters_get(&before);
  const uint64_t calls = Fake().name_calls();
  ::testing::internal::CaptureStderr();
  NameStream(nullptr, "lost_stream");
  NameStream(nullptr, "lost_again");
  const std::string err = ::testing::internal::GetCapturedStderr();
  roctx_utils_counters_get(&after);
  EXPECT_EQ(Fake().name_calls(), calls);
  EXPECT_EQ(after.null_streams, before.null_streams + 2);
  EXPECT_NE(err.find("null stream"), std::string::npos) << err;
  EXPECT_EQ(err.find("lost_again"), std::string::npos) << "warned twice: " << err;
}

TEST_F(RoctxRangeAnnotations, BoundTheLibraryNamedInTheEnvironment) {
  EXPECT_EQ(roctx_utils_roctx_state_get(), ROCTX_UTILS_ROCTX_SDK);
  EXPECT_STREQ(roctx_utils_roctx_library(), std::getenv("ROCTX_UTILS_ROCTX_LIBRARY"));
}

}  // namespace
}  // namespace tsl::profiler
