// In-process capture (ROCTX_UTILS_CAPTURE=self): no SDK, the emitter records its own ranges.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "cc_tests/capture_test_util.h"
#include "gtest/gtest.h"
#include "roctx_utils/roctx_utils.h"
#include "tsl/profiler/lib/nvtx_utils.h"
#include "tsl/profiler/lib/scoped_annotation.h"
#include "xla/tsl/profiler/backends/cpu/annotation_stack.h"

namespace {

using capture_test::Result;
using capture_test::Start;
using capture_test::Stop;
using capture_test::Tid;

TEST(InProcessCapture, ScopedAnnotationsBecomeNestedRangesOnTheirThread) {
  ASSERT_NE(tsl::profiler::DefaultProfilerDomain(), nullptr);
  ASSERT_EQ(Start(), ROCTX_UTILS_OK);
  EXPECT_EQ(roctx_utils_capture_mode_get(), 3u);
  {
    tsl::profiler::ScopedAnnotation outer("jit_train_step");
    tsl::profiler::ScopedAnnotation inner("Thunk:#hlo_op=fusion.3#");
  }
  Result r;
  Stop(&r);
  ASSERT_EQ(r.status, ROCTX_UTILS_OK);
  ASSERT_EQ(r.Labels(), (std::vector<std::string>{"jit_train_step", "Thunk:#hlo_op=fusion.3#"}));
  const auto& o = r.events[0];
  const auto& i = r.events[1];
  EXPECT_EQ(o.kind, ROCTX_UTILS_EVENT_RANGE);
  EXPECT_EQ(o.tid, Tid());
  EXPECT_EQ(o.depth, 0u);
  EXPECT_EQ(i.depth, 1u);
  EXPECT_LE(o.start_ns, i.start_ns);
  EXPECT_LE(i.end_ns, o.end_ns);
  EXPECT_EQ(r.stats.recorded, 2u);
}

TEST(InProcessCapture, NothingIsRecordedOutsideASession) {
  tsl::profiler::RangePush(nullptr, "before");
  tsl::profiler::RangePop(nullptr);
  ASSERT_EQ(Start(), ROCTX_UTILS_OK);
  Result r;
  Stop(&r);
  EXPECT_TRUE(r.events.empty());
  roctx_utils_snapshot* s = nullptr;
  EXPECT_EQ(roctx_utils_session_stop(&s), ROCTX_UTILS_NOT_RUNNING);
  EXPECT_EQ(s, nullptr);
}

TEST(InProcessCapture, MarksAndRangesThatEndOnAnotherThread) {
  ASSERT_EQ(Start(), ROCTX_UTILS_OK);
  roctx_utils_mark("checkpoint");
  const auto [tid_a, tid_b] = capture_test::RangeAcrossThreads("load_weights");
  Result r;
  Stop(&r);
  ASSERT_EQ(r.events.size(), 2u);
  for (const auto& e : r.events) {
    if (e.label == "checkpoint") {
      EXPECT_EQ(e.kind, ROCTX_UTILS_EVENT_MARK);
      EXPECT_EQ(e.start_ns, e.end_ns);
    } else {
      EXPECT_EQ(e.label, "load_weights");
      EXPECT_EQ(e.kind, ROCTX_UTILS_EVENT_PROCESS_RANGE);
      EXPECT_EQ(e.tid, tid_a);
      EXPECT_EQ(e.end_tid, tid_b);
      EXPECT_GE(e.end_ns, e.start_ns);
    }
  }
}

TEST(InProcessCapture, ThreadNamesReachTheSnapshot) {
  ASSERT_EQ(Start(), ROCTX_UTILS_OK);
  uint64_t tid = 0;
  std::thread t([&] {
    tid = Tid();
    tsl::profiler::NameCurrentThread("xla_gpu_exec_0");
    tsl::profiler::RangePush(nullptr, "op");
    tsl::profiler::RangePop(nullptr);
  });
  t.join();
  Result r;
  Stop(&r);
  EXPECT_EQ(r.ThreadName(tid), "xla_gpu_exec_0");
}

TEST(InProcessCapture, CapOf8Keeps8Of25AndCounts17) {
  ASSERT_EQ(Start(ROCTX_UTILS_CAPTURE_DEFAULT, 8), ROCTX_UTILS_OK);
  for (int i = 0; i < 25; ++i) roctx_utils_mark(("m" + std::to_string(i)).c_str());
  Result r;
  Stop(&r);
  EXPECT_EQ(r.events.size(), 8u);
  EXPECT_EQ(r.stats.dropped_event_cap, 17u);
  EXPECT_EQ(r.events[0].label, "m0");
}

TEST(InProcessCapture, OpenRangesAreCountedAtStopAndNeverLeakIntoTheNextSession) {
  ASSERT_EQ(Start(), ROCTX_UTILS_OK);
  tsl::profiler::RangePush(nullptr, "spans_two_sessions");
  Result first;
  Stop(&first);
  EXPECT_TRUE(first.events.empty());
  EXPECT_EQ(first.stats.open_at_stop, 1u);
  ASSERT_EQ(Start(), ROCTX_UTILS_OK);
  tsl::profiler::RangePop(nullptr);
  tsl::profiler::RangePush(nullptr, "fresh");
  tsl::profiler::RangePop(nullptr);
  Result second;
  Stop(&second);
  EXPECT_EQ(second.Labels(), std::vector<std::string>{"fresh"});
  EXPECT_EQ(second.stats.begun_outside_session, 1u);
  EXPECT_EQ(second.stats.unmatched_pops, 0u);
}

TEST(InProcessCapture, OffModeRecordsNothing) {
  ASSERT_EQ(Start(ROCTX_UTILS_CAPTURE_OFF), ROCTX_UTILS_OK);
  EXPECT_EQ(roctx_utils_capture_mode_get(), 0u);
  tsl::profiler::RangePush(nullptr, "ignored");
  tsl::profiler::RangePop(nullptr);
  Result r;
  Stop(&r);
  EXPECT_TRUE(r.events.empty());
}

TEST(InProcessCapture, BadOptionsAreRejected) {
  roctx_utils_session_options o{};
  o.struct_size = 8;  // too small: an older or corrupted struct
  EXPECT_EQ(roctx_utils_session_start(&o), ROCTX_UTILS_INVALID_ARGUMENT);
  o.struct_size = sizeof(o);
  o.mode = 77;
  EXPECT_EQ(roctx_utils_session_start(&o), ROCTX_UTILS_INVALID_ARGUMENT);
  ASSERT_EQ(Start(), ROCTX_UTILS_OK);
  EXPECT_EQ(Start(), ROCTX_UTILS_ALREADY_RUNNING);
  Result r;
  Stop(&r);
}

// Every range and mark from 8 threads is accounted for exactly: none lost, none invented.
TEST(InProcessCapture, EightThreadsAccountForEveryEvent) {
  constexpr int kThreads = 8, kPairs = 4000;
  tsl::profiler::AnnotationStack::Enable(true);
  ASSERT_EQ(Start(), ROCTX_UTILS_OK);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &ready] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) {
      }
      const std::string label = "worker_" + std::to_string(t);
      for (int i = 0; i < kPairs; ++i) {
        tsl::profiler::ScopedAnnotation a(label);
        roctx_utils::Annotation inner("inner");
        if (i % 100 == 0) roctx_utils_mark("tick");
      }
    });
  }
  for (auto& th : threads) th.join();
  Result r;
  Stop(&r);
  tsl::profiler::AnnotationStack::Enable(false);
  const uint64_t expected = kThreads * (2 * kPairs + kPairs / 100);
  EXPECT_EQ(r.events.size(), expected);
  EXPECT_EQ(r.stats.recorded, expected);
  EXPECT_EQ(r.stats.dropped_event_cap + r.stats.dropped_label_cap + r.stats.dropped_too_deep, 0u);
  EXPECT_EQ(r.stats.unmatched_pops, 0u);
  std::vector<int> per_thread_inner(kThreads, 0);
  for (const auto& e : r.events) {
    if (e.label == "inner") {
      EXPECT_EQ(e.depth, 1u);
    } else if (e.label.rfind("worker_", 0) == 0) {
      EXPECT_EQ(e.depth, 0u);
      ++per_thread_inner[std::stoi(e.label.substr(7))];
    }
  }
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(per_thread_inner[t], kPairs) << t;
}

}  // namespace
