// Tests for the bundled AnnotationStack (//compat:annotation_stack).
//
// Enable state and the thread-id allocator are process-global, so every test sets the state
// it needs itself, and tests that depend on fresh per-thread state run on new threads.
#include "xla/tsl/profiler/backends/cpu/annotation_stack.h"

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace tsl::profiler {
namespace {

constexpr uint64_t kCounterMask = (uint64_t{1} << 48) - 1;

uint64_t Bits(int64_t id) { return static_cast<uint64_t>(id); }
uint64_t ThreadIdOf(int64_t id) { return (Bits(id) >> 48) & 0x7fff; }
uint64_t CounterOf(int64_t id) { return Bits(id) & kCounterMask; }
uint64_t TopBitsOf(int64_t id) { return Bits(id) >> 62; }

std::vector<int64_t> Ids() {
  ScopeRangeIdSpan ids = AnnotationStack::GetScopeRangeIds();
  return std::vector<int64_t>(ids.begin(), ids.end());
}

// Enabled, with the calling thread's stack empty (a false->true toggle wipes it).
void ResetEnabled() {
  AnnotationStack::Enable(false);
  AnnotationStack::Enable(true);
  ASSERT_TRUE(AnnotationStack::IsEnabled());
  ASSERT_EQ(AnnotationStack::Get(), "");
  ASSERT_TRUE(AnnotationStack::GetScopeRangeIds().empty());
}

// Runs `fn` on a new thread (fresh thread-local state) and joins it.
template <typename Fn>
void OnNewThread(Fn fn) {
  std::thread thread(fn);
  thread.join();
}

TEST(AnnotationStackTest, JoinsNestedNamesAndUnwinds) {
  ResetEnabled();
  AnnotationStack::PushAnnotation("outer");
  EXPECT_EQ(AnnotationStack::Get(), "outer");
  AnnotationStack::PushAnnotation("inner");
  EXPECT_EQ(AnnotationStack::Get(), "outer::inner");
  AnnotationStack::PushAnnotation("leaf");
  EXPECT_EQ(AnnotationStack::Get(), "outer::inner::leaf");
  AnnotationStack::PopAnnotation();
  EXPECT_EQ(AnnotationStack::Get(), "outer::inner");
  AnnotationStack::PopAnnotation();
  EXPECT_EQ(AnnotationStack::Get(), "outer");
  AnnotationStack::PopAnnotation();
  EXPECT_EQ(AnnotationStack::Get(), "");
  EXPECT_TRUE(AnnotationStack::GetScopeRangeIds().empty());
}

TEST(AnnotationStackTest, EmptyNameStillOccupiesALevel) {
  ResetEnabled();
  AnnotationStack::PushAnnotation("a");
  AnnotationStack::PushAnnotation("");
  EXPECT_EQ(AnnotationStack::Get(), "a::");
  EXPECT_EQ(AnnotationStack::GetScopeRangeIds().size(), 2u);
  AnnotationStack::PopAnnotation();
  EXPECT_EQ(AnnotationStack::Get(), "a");
  AnnotationStack::PopAnnotation();
  EXPECT_EQ(AnnotationStack::Get(), "");
}

TEST(AnnotationStackTest, PopOnEmptyStackIsHarmless) {
  ResetEnabled();
  AnnotationStack::PopAnnotation();
  AnnotationStack::PopAnnotation();
  EXPECT_EQ(AnnotationStack::Get(), "");
  EXPECT_TRUE(AnnotationStack::GetScopeRangeIds().empty());
  // The stack still works normally afterwards.
  AnnotationStack::PushAnnotation("a");
  AnnotationStack::PushAnnotation("b");
  EXPECT_EQ(AnnotationStack::Get(), "a::b");
  EXPECT_EQ(AnnotationStack::GetScopeRangeIds().size(), 2u);
  AnnotationStack::PopAnnotation();
  AnnotationStack::PopAnnotation();
  AnnotationStack::PopAnnotation();  // one too many
  EXPECT_EQ(AnnotationStack::Get(), "");
  EXPECT_TRUE(AnnotationStack::GetScopeRangeIds().empty());
}

TEST(AnnotationStackTest, PushAndPopDoNotCheckIsEnabled) {
  AnnotationStack::Enable(false);
  ASSERT_FALSE(AnnotationStack::IsEnabled());
  AnnotationStack::PushAnnotation("x");
  AnnotationStack::PushAnnotation("y");
  EXPECT_EQ(AnnotationStack::Get(), "x::y");
  AnnotationStack::PopAnnotation();
  EXPECT_EQ(AnnotationStack::Get(), "x");
  AnnotationStack::PopAnnotation();
  EXPECT_EQ(AnnotationStack::Get(), "");
}

TEST(AnnotationStackTest, EnableReportsState) {
  AnnotationStack::Enable(true);
  EXPECT_TRUE(AnnotationStack::IsEnabled());
  AnnotationStack::Enable(true);
  EXPECT_TRUE(AnnotationStack::IsEnabled());
  AnnotationStack::Enable(false);
  EXPECT_FALSE(AnnotationStack::IsEnabled());
  AnnotationStack::Enable(false);
  EXPECT_FALSE(AnnotationStack::IsEnabled());
  AnnotationStack::Enable(true);
  EXPECT_TRUE(AnnotationStack::IsEnabled());
}

// The generation only moves on a state change: a redundant Enable() must not wipe stacks,
// a real change must.
TEST(AnnotationStackTest, GenerationMovesOnlyOnStateChange) {
  ResetEnabled();
  AnnotationStack::PushAnnotation("kept");
  AnnotationStack::Enable(true);  // already enabled: no change
  EXPECT_TRUE(AnnotationStack::IsEnabled());
  EXPECT_EQ(AnnotationStack::Get(), "kept");
  EXPECT_EQ(AnnotationStack::GetScopeRangeIds().size(), 1u);

  AnnotationStack::Enable(false);  // change: wiped
  EXPECT_FALSE(AnnotationStack::IsEnabled());
  EXPECT_EQ(AnnotationStack::Get(), "");
  EXPECT_TRUE(AnnotationStack::GetScopeRangeIds().empty());

  AnnotationStack::PushAnnotation("while_disabled");
  AnnotationStack::Enable(false);  // already disabled: no change
  EXPECT_EQ(AnnotationStack::Get(), "while_disabled");

  AnnotationStack::Enable(true);  // change: wiped
  EXPECT_EQ(AnnotationStack::Get(), "");
  EXPECT_TRUE(AnnotationStack::GetScopeRangeIds().empty());
}

TEST(AnnotationStackTest, ToggleWipesStackAndUnmatchedPopIsHarmless) {
  ResetEnabled();
  AnnotationStack::PushAnnotation("outer");
  AnnotationStack::PushAnnotation("inner");
  ASSERT_EQ(AnnotationStack::Get(), "outer::inner");

  AnnotationStack::Enable(false);
  AnnotationStack::Enable(true);
  EXPECT_EQ(AnnotationStack::Get(), "");
  EXPECT_TRUE(AnnotationStack::GetScopeRangeIds().empty());

  // A new annotation after the toggle, then the stale pops of "inner" and "outer".
  AnnotationStack::PushAnnotation("fresh");
  EXPECT_EQ(AnnotationStack::Get(), "fresh");
  AnnotationStack::PopAnnotation();  // pops "fresh"
  AnnotationStack::PopAnnotation();  // stale: harmless
  AnnotationStack::PopAnnotation();  // stale: harmless
  EXPECT_EQ(AnnotationStack::Get(), "");
  EXPECT_TRUE(AnnotationStack::GetScopeRangeIds().empty());
  AnnotationStack::PushAnnotation("again");
  EXPECT_EQ(AnnotationStack::Get(), "again");
  AnnotationStack::PopAnnotation();
}

// A toggle made by one thread wipes another thread's stack (lazily, on its next access).
TEST(AnnotationStackTest, ToggleFromAnotherThreadWipesThisThread) {
  ResetEnabled();
  AnnotationStack::PushAnnotation("mine");
  OnNewThread([] {
    AnnotationStack::Enable(false);
    AnnotationStack::Enable(true);
  });
  EXPECT_TRUE(AnnotationStack::IsEnabled());
  EXPECT_EQ(AnnotationStack::Get(), "");
  EXPECT_TRUE(AnnotationStack::GetScopeRangeIds().empty());
}

TEST(AnnotationStackTest, StacksAreThreadLocal) {
  ResetEnabled();
  AnnotationStack::PushAnnotation("main");

  std::atomic<int> pushed{0};
  auto wait_for_both = [&pushed] {
    pushed.fetch_add(1);
    while (pushed.load() < 2) std::this_thread::yield();
  };
  std::string seen1, seen2, after1, after2;
  std::vector<int64_t> ids1, ids2;
  std::thread t1([&] {
    seen1 = AnnotationStack::Get();  // a new thread starts empty
    AnnotationStack::PushAnnotation("t1a");
    AnnotationStack::PushAnnotation("t1b");
    wait_for_both();  // both threads hold their stacks at the same time
    after1 = AnnotationStack::Get();
    ids1 = Ids();
  });
  std::thread t2([&] {
    seen2 = AnnotationStack::Get();
    AnnotationStack::PushAnnotation("t2");
    wait_for_both();
    after2 = AnnotationStack::Get();
    ids2 = Ids();
  });
  t1.join();
  t2.join();

  EXPECT_EQ(seen1, "");
  EXPECT_EQ(seen2, "");
  EXPECT_EQ(after1, "t1a::t1b");
  EXPECT_EQ(after2, "t2");
  EXPECT_EQ(ids1.size(), 2u);
  EXPECT_EQ(ids2.size(), 1u);
  EXPECT_EQ(AnnotationStack::Get(), "main");
  EXPECT_EQ(AnnotationStack::GetScopeRangeIds().size(), 1u);
  AnnotationStack::PopAnnotation();
  EXPECT_EQ(AnnotationStack::Get(), "");
}

TEST(AnnotationStackTest, ScopeRangeIdLayout) {
  ResetEnabled();
  std::vector<int64_t> ids;
  OnNewThread([&ids] {
    for (const char* name : {"a", "b", "c"}) {
      AnnotationStack::PushAnnotation(name);
      ids.push_back(AnnotationStack::GetScopeRangeIds().back());
      AnnotationStack::PopAnnotation();
    }
  });
  ASSERT_EQ(ids.size(), 3u);
  for (int64_t id : ids) {
    EXPECT_EQ(Bits(id) >> 63, 0u) << "normal ids have bit 63 clear";
    EXPECT_GE(ThreadIdOf(id), 1u) << "thread ids start at 1";
    EXPECT_EQ(ThreadIdOf(id), ThreadIdOf(ids[0])) << "one thread id per thread";
  }
  EXPECT_EQ(CounterOf(ids[0]), 1u);
  EXPECT_EQ(CounterOf(ids[1]), 2u);
  EXPECT_EQ(CounterOf(ids[2]), 3u);
  EXPECT_EQ(Bits(ids[0]), (ThreadIdOf(ids[0]) << 48) | 1u);
}

TEST(AnnotationStackTest, NestedIdsArePushedAndPoppedInOrder) {
  ResetEnabled();
  std::vector<int64_t> at_depth1, at_depth2, at_depth3, after_pop, after_repush;
  OnNewThread([&] {
    AnnotationStack::PushAnnotation("l1");
    at_depth1 = Ids();
    AnnotationStack::PushAnnotation("l2");
    at_depth2 = Ids();
    AnnotationStack::PushAnnotation("l3");
    at_depth3 = Ids();
    AnnotationStack::PopAnnotation();
    after_pop = Ids();
    AnnotationStack::PushAnnotation("l3b");
    after_repush = Ids();
  });
  ASSERT_EQ(at_depth1.size(), 1u);
  ASSERT_EQ(at_depth2.size(), 2u);
  ASSERT_EQ(at_depth3.size(), 3u);
  ASSERT_EQ(after_pop.size(), 2u);
  ASSERT_EQ(after_repush.size(), 3u);
  // Outer ids stay in place while inner ones come and go.
  EXPECT_EQ(at_depth2[0], at_depth1[0]);
  EXPECT_EQ(at_depth3[0], at_depth1[0]);
  EXPECT_EQ(at_depth3[1], at_depth2[1]);
  EXPECT_EQ(after_pop, at_depth2);
  EXPECT_EQ(after_repush[0], at_depth1[0]);
  EXPECT_EQ(after_repush[1], at_depth2[1]);
  // Fresh thread: counters 1, 2, 3, and a re-push takes the next value, not a reused one.
  EXPECT_EQ(CounterOf(at_depth3[0]), 1u);
  EXPECT_EQ(CounterOf(at_depth3[1]), 2u);
  EXPECT_EQ(CounterOf(at_depth3[2]), 3u);
  EXPECT_EQ(CounterOf(after_repush[2]), 4u);
}

TEST(AnnotationStackTest, ThreadsGetDistinctThreadIds) {
  ResetEnabled();
  int64_t id1 = 0, id2 = 0, main_id = 0;
  OnNewThread([&id1] {
    AnnotationStack::PushAnnotation("x");
    id1 = AnnotationStack::GetScopeRangeIds()[0];
  });
  OnNewThread([&id2] {
    AnnotationStack::PushAnnotation("x");
    id2 = AnnotationStack::GetScopeRangeIds()[0];
  });
  AnnotationStack::PushAnnotation("x");
  main_id = AnnotationStack::GetScopeRangeIds()[0];
  AnnotationStack::PopAnnotation();

  EXPECT_GE(ThreadIdOf(id1), 1u);
  EXPECT_GE(ThreadIdOf(id2), 1u);
  EXPECT_NE(ThreadIdOf(id1), ThreadIdOf(id2));
  EXPECT_NE(ThreadIdOf(main_id), ThreadIdOf(id1));
  EXPECT_NE(ThreadIdOf(main_id), ThreadIdOf(id2));
  // Both threads started their own counters at 1.
  EXPECT_EQ(CounterOf(id1), 1u);
  EXPECT_EQ(CounterOf(id2), 1u);
  EXPECT_NE(id1, id2);
}

TEST(AnnotationStackTest, RangeCounterSurvivesGenerationWipe) {
  ResetEnabled();
  std::vector<int64_t> before, after;
  size_t depth_after_toggle = 99;
  OnNewThread([&] {
    AnnotationStack::PushAnnotation("a");
    AnnotationStack::PushAnnotation("b");
    before = Ids();
    AnnotationStack::Enable(false);
    AnnotationStack::Enable(true);
    depth_after_toggle = AnnotationStack::GetScopeRangeIds().size();
    AnnotationStack::PushAnnotation("c");
    after = Ids();
  });
  ASSERT_EQ(before.size(), 2u);
  EXPECT_EQ(depth_after_toggle, 0u);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(ThreadIdOf(after[0]), ThreadIdOf(before[0]));
  EXPECT_EQ(CounterOf(before[1]), 2u);
  EXPECT_EQ(CounterOf(after[0]), 3u);  // continues, does not restart at 1
  EXPECT_GT(after[0], before[1]);
}

TEST(AnnotationStackTest, ExhaustedThreadIdsFallBackToSharedCounter) {
  static int runs = 0;  // the warning is once per process; --gtest_repeat sees it only once
  const bool first_run = runs++ == 0;
  ResetEnabled();

  using annotation_stack_internal::SetNextThreadIdForTest;
  const int saved = SetNextThreadIdForTest((1 << 15) - 1);  // one normal id left

  int64_t last_normal = 0;
  std::vector<int64_t> shared1, shared2;
  testing::internal::CaptureStderr();
  OnNewThread([&] {
    AnnotationStack::PushAnnotation("x");
    last_normal = AnnotationStack::GetScopeRangeIds()[0];
  });
  OnNewThread([&] {
    AnnotationStack::PushAnnotation("x");
    AnnotationStack::PushAnnotation("y");
    shared1 = Ids();
  });
  OnNewThread([&] {
    AnnotationStack::PushAnnotation("z");
    shared2 = Ids();
  });
  const std::string warnings = testing::internal::GetCapturedStderr();
  const int exhausted_next = SetNextThreadIdForTest(saved);  // restore for later tests

  EXPECT_EQ(exhausted_next, 1 << 15);
  // The last 15-bit id is still a normal one.
  EXPECT_EQ(Bits(last_normal) >> 63, 0u);
  EXPECT_EQ(ThreadIdOf(last_normal), uint64_t{(1 << 15) - 1});
  EXPECT_EQ(CounterOf(last_normal), 1u);
  // Later threads: top bits 0b10, one counter shared across them.
  ASSERT_EQ(shared1.size(), 2u);
  ASSERT_EQ(shared2.size(), 1u);
  for (int64_t id : {shared1[0], shared1[1], shared2[0]}) {
    EXPECT_EQ(TopBitsOf(id), 2u) << std::hex << Bits(id);
  }
  const uint64_t low62 = (uint64_t{1} << 62) - 1;
  EXPECT_EQ(Bits(shared1[1]) & low62, (Bits(shared1[0]) & low62) + 1);
  EXPECT_EQ(Bits(shared2[0]) & low62, (Bits(shared1[1]) & low62) + 1);
  // One warning for the whole process, not one per thread.
  size_t count = 0;
  for (size_t pos = warnings.find("AnnotationStack:"); pos != std::string::npos;
       pos = warnings.find("AnnotationStack:", pos + 1)) {
    ++count;
  }
  EXPECT_EQ(count, first_run ? 1u : 0u) << warnings;

  // After restoring the allocator, new threads get normal ids again.
  int64_t normal_again = 0;
  OnNewThread([&] {
    AnnotationStack::PushAnnotation("x");
    normal_again = AnnotationStack::GetScopeRangeIds()[0];
  });
  EXPECT_EQ(TopBitsOf(normal_again) >> 1, 0u);
  EXPECT_GE(ThreadIdOf(normal_again), 1u);
  EXPECT_LT(ThreadIdOf(normal_again), uint64_t{(1 << 15) - 1});
}

TEST(AnnotationStackTest, ScopeRangeIdSpanBehavesLikeAConstSpan) {
  ResetEnabled();
  AnnotationStack::PushAnnotation("a");
  AnnotationStack::PushAnnotation("b");
  AnnotationStack::ScopeRangeIdSpan span = AnnotationStack::GetScopeRangeIds();
  ASSERT_EQ(span.size(), 2u);
  EXPECT_FALSE(span.empty());
  EXPECT_EQ(span.data(), &span[0]);
  EXPECT_EQ(span.end() - span.begin(), 2);
  EXPECT_EQ(span.front(), span[0]);
  EXPECT_EQ(span.back(), span[1]);
  EXPECT_EQ(CounterOf(span[1]), CounterOf(span[0]) + 1);
  std::vector<int64_t> copy(span.begin(), span.end());
  EXPECT_TRUE(span == ScopeRangeIdSpan(copy.data(), copy.size()));
  int64_t sum = 0;
  for (int64_t id : span) sum += id;  // range-for, as with absl::Span
  EXPECT_EQ(sum, span[0] + span[1]);
  AnnotationStack::PopAnnotation();
  AnnotationStack::PopAnnotation();
  EXPECT_TRUE(AnnotationStack::GetScopeRangeIds().empty());
  EXPECT_TRUE(ScopeRangeIdSpan().empty());
}

}  // namespace
}  // namespace tsl::profiler
