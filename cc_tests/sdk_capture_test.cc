// Tool mode against the fake rocprofiler-sdk (cc_tests/fake_rocprofiler_sdk.cc), once per SDK
// ABI generation (FAKE_ROCPROFILER_VERSION = 400, 600, 10000): our listener configures the
// SDK before the first roctx call, subscribes the marker kinds, and turns callbacks into
// events. Two paths are exercised: replayed callbacks (fake_sdk_marker, upstream's
// MarkerCallback tests) and the real chain emitter -> roctx -> SDK -> listener.
#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "cc_tests/capture_test_util.h"
#include "gtest/gtest.h"
#include "roctx_utils/roctx_utils.h"
#include "tsl/profiler/lib/nvtx_utils.h"
#include "tsl/profiler/lib/scoped_annotation.h"

namespace {

using capture_test::Result;
using capture_test::Start;
using capture_test::Stop;
using capture_test::Tid;

enum { kCore = 7, kControl = 8, kName = 9, kEnter = 1, kExit = 2 };
enum { kMark = 0, kPush = 1, kPop = 2 };

struct FakeSdk {
  int (*marker)(int, int, int, const char*, uint64_t, int64_t) = nullptr;
  int (*context_active)() = nullptr;
  int (*configured_kinds)(int*, int) = nullptr;
  int (*client_id_corrupted)() = nullptr;
  uint32_t (*version)() = nullptr;
};

// roctx's own control functions, from the library the backend bound (it binds lazily, so this
// is resolved on use, not with the SDK probes).
template <typename Fn>
Fn Roctx(const char* name) {
  void* r = dlopen(roctx_utils_roctx_library(), RTLD_NOW | RTLD_NOLOAD);
  return r ? reinterpret_cast<Fn>(dlsym(r, name)) : nullptr;
}

const FakeSdk& Sdk() {
  static const FakeSdk sdk = [] {
    FakeSdk s;
    void* h = dlopen(std::getenv("ROCTX_UTILS_ROCPROFILER_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
    if (h) {
      s.marker = reinterpret_cast<decltype(s.marker)>(dlsym(h, "fake_sdk_marker"));
      s.context_active = reinterpret_cast<decltype(s.context_active)>(dlsym(h, "fake_sdk_context_active"));
      s.configured_kinds = reinterpret_cast<decltype(s.configured_kinds)>(dlsym(h, "fake_sdk_configured_kinds"));
      s.client_id_corrupted = reinterpret_cast<decltype(s.client_id_corrupted)>(dlsym(h, "fake_sdk_client_id_corrupted"));
      s.version = reinterpret_cast<decltype(s.version)>(dlsym(h, "fake_sdk_version"));
    }
    return s;
  }();
  return sdk;
}

class SdkCapture : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(Start(), ROCTX_UTILS_OK);
    ASSERT_EQ(roctx_utils_capture_mode_get(), 1u) << "tool mode did not come up";
    ASSERT_NE(Sdk().marker, nullptr) << "fake SDK not loaded by the listener";
  }
  // A failed assertion must not leave the session running for the next test.
  void TearDown() override {
    roctx_utils_snapshot* s = nullptr;
    if (roctx_utils_session_stop(&s) == ROCTX_UTILS_OK) roctx_utils_snapshot_free(s);
  }
  void Finish(Result* r) { Stop(r); }
};

TEST_F(SdkCapture, ConfiguredTheMarkerKindsWithoutCorruptingTheClientId) {
  EXPECT_EQ(Sdk().version(), static_cast<uint32_t>(std::atoi(std::getenv("FAKE_ROCPROFILER_VERSION"))));
  int kinds[8] = {};
  const int n = Sdk().configured_kinds(kinds, 8);
  EXPECT_EQ(std::vector<int>(kinds, kinds + n), (std::vector<int>{kCore, kControl, kName}));
  EXPECT_EQ(Sdk().client_id_corrupted(), 0);
  EXPECT_EQ(Sdk().context_active(), 1);
  Result r;
  Finish(&r);
  EXPECT_EQ(Sdk().context_active(), 0);  // sessions start and stop the context
}

TEST_F(SdkCapture, MarkerCallbackPushPopEmitsRoctxRange) {
  Sdk().marker(kCore, kPush, kEnter, "replayed_range", 0, 0);
  Sdk().marker(kCore, kPush, kExit, "replayed_range", 0, 0);
  Sdk().marker(kCore, kPop, kEnter, nullptr, 0, 0);
  Sdk().marker(kCore, kPop, kExit, nullptr, 0, 0);
  Result r;
  Finish(&r);
  ASSERT_EQ(r.Labels(), std::vector<std::string>{"replayed_range"});
  EXPECT_EQ(r.events[0].tid, Tid());
  EXPECT_GE(r.events[0].end_ns, r.events[0].start_ns);
}

TEST_F(SdkCapture, MarkerCallbackMarkEmitsInstantaneousEvent) {
  Sdk().marker(kCore, kMark, kEnter, "replayed_mark", 0, 0);
  Result r;
  Finish(&r);
  ASSERT_EQ(r.events.size(), 1u);
  EXPECT_EQ(r.events[0].kind, ROCTX_UTILS_EVENT_MARK);
  EXPECT_EQ(r.events[0].start_ns, r.events[0].end_ns);
}

TEST_F(SdkCapture, MarkerCallbackUnmatchedPopIsIgnored) {
  Sdk().marker(kCore, kPop, kExit, nullptr, 0, -1);
  Result r;
  Finish(&r);
  EXPECT_TRUE(r.events.empty());
  EXPECT_EQ(r.stats.unmatched_pops, 1u);
}

TEST_F(SdkCapture, MarkerCallbackNullLabelRangeIsDroppedNotEmitted) {
  Sdk().marker(kCore, kPush, kEnter, nullptr, 0, 0);
  Sdk().marker(kCore, kPop, kExit, nullptr, 0, 0);
  Result r;
  Finish(&r);
  EXPECT_TRUE(r.events.empty());
  EXPECT_EQ(r.stats.dropped_empty_label, 1u);
}

TEST_F(SdkCapture, MarkerCallbackNullLabelRangeKeepsStackBalanced) {
  Sdk().marker(kCore, kPush, kEnter, "outer", 0, 0);
  Sdk().marker(kCore, kPush, kEnter, nullptr, 0, 0);
  Sdk().marker(kCore, kPop, kExit, nullptr, 0, 0);
  Sdk().marker(kCore, kPop, kExit, nullptr, 0, 0);
  Result r;
  Finish(&r);
  EXPECT_EQ(r.Labels(), std::vector<std::string>{"outer"});
}

// The real chain: ScopedAnnotation -> RangePush -> roctx -> (SDK table rewrite) -> our callback.
TEST_F(SdkCapture, EmitterRangesArriveThroughTheSdkExactlyOnce) {
  {
    tsl::profiler::ScopedAnnotation outer("jit_step");
    tsl::profiler::ScopedAnnotation inner("Thunk:#hlo_op=fusion.1#");
  }
  roctx_utils_mark("after_step");
  Result r;
  Finish(&r);
  ASSERT_EQ(r.events.size(), 3u) << "recorded twice (in-process and SDK) or lost";
  EXPECT_EQ(r.events[0].label, "jit_step");
  EXPECT_EQ(r.events[1].label, "Thunk:#hlo_op=fusion.1#");
  EXPECT_EQ(r.events[1].depth, 1u);
  EXPECT_EQ(r.events[2].label, "after_step");
  EXPECT_EQ(r.events[2].kind, ROCTX_UTILS_EVENT_MARK);
}

TEST_F(SdkCapture, ThreadNamesArriveThroughMarkerNameApi) {
  uint64_t tid = 0;
  std::thread t([&] {
    tid = Tid();
    tsl::profiler::NameCurrentThread("sdk_named_thread");
  });
  t.join();
  Result r;
  Finish(&r);
  EXPECT_EQ(r.ThreadName(tid), "sdk_named_thread");
}

TEST_F(SdkCapture, PauseAndResumeFromMarkerControlApi) {
  auto pause = Roctx<int (*)(uint64_t)>("roctxProfilerPause");
  auto resume = Roctx<int (*)(uint64_t)>("roctxProfilerResume");
  ASSERT_NE(pause, nullptr);
  ASSERT_NE(resume, nullptr);
  pause(0);
  roctx_utils_mark("while_paused");
  resume(0);
  roctx_utils_mark("after_resume");
  Result r;
  Finish(&r);
  EXPECT_EQ(r.Labels(), std::vector<std::string>{"after_resume"});
  EXPECT_EQ(r.stats.paused, 1u);
}

TEST_F(SdkCapture, StartStopRangesCrossThreads) {
  const auto [tid_a, tid_b] = capture_test::RangeAcrossThreads("prefetch");
  Result r;
  Finish(&r);
  ASSERT_EQ(r.events.size(), 1u);
  EXPECT_EQ(r.events[0].kind, ROCTX_UTILS_EVENT_PROCESS_RANGE);
  EXPECT_EQ(r.events[0].label, "prefetch");
  EXPECT_EQ(r.events[0].tid, tid_a);
  EXPECT_EQ(r.events[0].end_tid, tid_b);
}

TEST_F(SdkCapture, NothingIsDeliveredBetweenSessions) {
  Result first;
  Finish(&first);
  tsl::profiler::RangePush(nullptr, "between_sessions");
  tsl::profiler::RangePop(nullptr);
  EXPECT_EQ(Sdk().context_active(), 0);
  ASSERT_EQ(Start(), ROCTX_UTILS_OK);
  Result second;
  Finish(&second);
  EXPECT_TRUE(second.events.empty());
}

std::string CurrentLabel() {
  char buf[256];
  roctx_utils_current_label(buf, sizeof(buf));
  return buf;
}

TEST_F(SdkCapture, GetCurrentRoctxLabelReturnsTopOfStack) {
  tsl::profiler::RangePush(nullptr, "outer_label");
  tsl::profiler::RangePush(nullptr, "inner_label");
  EXPECT_EQ(CurrentLabel(), "inner_label");
  tsl::profiler::RangePop(nullptr);
  EXPECT_EQ(CurrentLabel(), "outer_label");
  tsl::profiler::RangePop(nullptr);
  Result r;
  Finish(&r);
}

TEST_F(SdkCapture, GetCurrentRoctxLabelEmptyAfterPop) {
  tsl::profiler::RangePush(nullptr, "short_lived");
  tsl::profiler::RangePop(nullptr);
  EXPECT_EQ(CurrentLabel(), "");
  EXPECT_EQ(roctx_utils_current_label(nullptr, 0), 0u);
  Result r;
  Finish(&r);
}

TEST_F(SdkCapture, GetCurrentRoctxLabelCopyStaysValidAfterLaterRoctxCalls) {
  tsl::profiler::RangePush(nullptr, "kept_label");
  const std::string copy = CurrentLabel();
  tsl::profiler::RangePush(nullptr, "next");
  tsl::profiler::RangePop(nullptr);
  tsl::profiler::RangePop(nullptr);
  EXPECT_EQ(copy, "kept_label");
  Result r;
  Finish(&r);
}

TEST(SdkCaptureCap, CapOf8Keeps8Of25AndCounts17) {
  ASSERT_EQ(Start(ROCTX_UTILS_CAPTURE_DEFAULT, 8), ROCTX_UTILS_OK);
  for (int i = 0; i < 25; ++i) Sdk().marker(kCore, kMark, kEnter, ("m" + std::to_string(i)).c_str(), 0, 0);
  Result r;
  Stop(&r);
  EXPECT_EQ(r.events.size(), 8u);
  EXPECT_EQ(r.stats.dropped_event_cap, 17u);
}

TEST(SdkCaptureStress, EightThreadsThroughTheSdkAccountForEveryEvent) {
  constexpr int kThreads = 8, kPairs = 2000;
  ASSERT_EQ(Start(), ROCTX_UTILS_OK);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      const std::string label = "sdk_worker_" + std::to_string(t);
      for (int i = 0; i < kPairs; ++i) {
        tsl::profiler::RangePush(nullptr, label.c_str());
        roctx_utils_mark("m");
        tsl::profiler::RangePop(nullptr);
      }
    });
  }
  for (auto& th : threads) th.join();
  Result r;
  Stop(&r);
  EXPECT_EQ(r.events.size(), static_cast<size_t>(kThreads * kPairs * 2));
  EXPECT_EQ(r.stats.recorded, static_cast<uint64_t>(kThreads * kPairs * 2));
  EXPECT_EQ(r.stats.unmatched_pops + r.stats.dropped_event_cap + r.stats.rejected_records, 0u);
}

}  // namespace
