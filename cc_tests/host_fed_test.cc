// Host-fed mode: the host owns rocprofiler-sdk and passes each marker record it receives to
// roctx_utils_listener_feed, with its SDK version. Records here are built byte-exact to the
// spec's layouts (rocprofiler_abi.md 5.1, 5.5) for ROCm 6.x (56 B) and 7.x (64 B).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cc_tests/capture_test_util.h"
#include "gtest/gtest.h"
#include "roctx_utils/roctx_utils.h"

namespace {

using capture_test::Result;
using capture_test::Start;
using capture_test::Stop;
using capture_test::Tid;

struct RecordV6 {
  uint64_t context_id, thread_id, corr_internal, corr_external;
  int32_t kind, operation, phase;
  void* payload;
};
static_assert(sizeof(RecordV6) == 56 && offsetof(RecordV6, kind) == 32 && offsetof(RecordV6, payload) == 48);

struct RecordV7 {
  uint64_t context_id, thread_id, corr_internal, corr_external, corr_ancestor;
  int32_t kind, operation, phase;
  void* payload;
};
static_assert(sizeof(RecordV7) == 64 && offsetof(RecordV7, kind) == 40 && offsetof(RecordV7, payload) == 56);

struct Payload {
  uint64_t size = 32;
  uint64_t arg0 = 0, arg1 = 0, retval = 0;
};
static_assert(sizeof(Payload) == 32);

enum { kCore = 7, kControl = 8, kName = 9, kCoreRange = 21, kEnter = 1, kExit = 2 };
enum { kMark = 0, kPush = 1, kPop = 2, kStart = 3, kStop = 4 };

// Feeds one record in the layout of `version`, as a host callback would.
int Feed(uint32_t version, int kind, int op, int phase, const char* msg = nullptr, uint64_t arg0 = 0,
         uint64_t retval = 0, uint64_t corr = 0, Payload* custom = nullptr) {
  Payload p;
  p.arg0 = msg ? reinterpret_cast<uint64_t>(msg) : arg0;
  p.retval = retval;
  Payload* payload = custom ? custom : &p;
  if (version < 10000) {
    RecordV6 r{1000, Tid(), corr, 0, kind, op, phase, payload};
    return roctx_utils_listener_feed(&r, sizeof(r), version);
  }
  RecordV7 r{1000, Tid(), corr, 0, 0, kind, op, phase, payload};
  return roctx_utils_listener_feed(&r, sizeof(r), version);
}

class HostFed : public ::testing::TestWithParam<uint32_t> {
 protected:
  void SetUp() override { ASSERT_EQ(Start(ROCTX_UTILS_CAPTURE_HOST), ROCTX_UTILS_OK); }
  void TearDown() override {
    roctx_utils_snapshot* s = nullptr;
    roctx_utils_session_stop(&s);
    roctx_utils_snapshot_free(s);
  }
  uint32_t v() const { return GetParam(); }
};

TEST_P(HostFed, PushAtEnterPopAtExitEmitsOneRange) {
  EXPECT_EQ(Feed(v(), kCore, kPush, kEnter, "outer"), 0);
  EXPECT_EQ(Feed(v(), kCore, kPush, kExit, "outer"), 0);  // other phases are ignored
  EXPECT_EQ(Feed(v(), kCore, kPop, kEnter), 0);
  EXPECT_EQ(Feed(v(), kCore, kPop, kExit), 0);
  Result r;
  Stop(&r);
  ASSERT_EQ(r.Labels(), std::vector<std::string>{"outer"});
  EXPECT_EQ(r.events[0].tid, Tid());
  EXPECT_GE(r.events[0].end_ns, r.events[0].start_ns);
  EXPECT_EQ(roctx_utils_capture_mode_get(), 2u);
  ASSERT_EQ(Start(ROCTX_UTILS_CAPTURE_HOST), ROCTX_UTILS_OK);  // for TearDown
}

TEST_P(HostFed, MarkIsInstantaneous) {
  Feed(v(), kCore, kMark, kEnter, "step_boundary");
  Result r;
  Stop(&r);
  ASSERT_EQ(r.events.size(), 1u);
  EXPECT_EQ(r.events[0].kind, ROCTX_UTILS_EVENT_MARK);
  EXPECT_EQ(r.events[0].start_ns, r.events[0].end_ns);
  ASSERT_EQ(Start(ROCTX_UTILS_CAPTURE_HOST), ROCTX_UTILS_OK);
}

// roctxRangePop's int32 retval: the level closed, or -1 when nothing was open.
constexpr uint64_t kPopNothingOpen = 0xffffffffu;

TEST_P(HostFed, UnmatchedPopIsIgnored) {
  Feed(v(), kCore, kPop, kExit, nullptr, 0, kPopNothingOpen);
  Result r;
  Stop(&r);
  EXPECT_TRUE(r.events.empty());
  EXPECT_EQ(r.stats.unmatched_pops, 1u);
  EXPECT_EQ(r.stats.begun_outside_session, 0u);
  ASSERT_EQ(Start(ROCTX_UTILS_CAPTURE_HOST), ROCTX_UTILS_OK);
}

// A tracer that was not listening at the push (its context stopped between two sessions) sees
// only the pop; roctx's retval says a range was open, so it is not an error.
TEST_P(HostFed, PopOfARangePushedUnseenIsBegunOutsideTheSession) {
  Feed(v(), kCore, kPop, kExit, nullptr, 0, /*level=*/0);
  Result r;
  Stop(&r);
  EXPECT_TRUE(r.events.empty());
  EXPECT_EQ(r.stats.unmatched_pops, 0u);
  EXPECT_EQ(r.stats.begun_outside_session, 1u);
  ASSERT_EQ(Start(ROCTX_UTILS_CAPTURE_HOST), ROCTX_UTILS_OK);
}

TEST_P(HostFed, NullLabelRangeIsDroppedButKeepsTheStackBalanced) {
  Feed(v(), kCore, kPush, kEnter, "outer");
  Feed(v(), kCore, kPush, kEnter, nullptr);  // null message
  Feed(v(), kCore, kPop, kExit);
  Feed(v(), kCore, kPop, kExit);
  Result r;
  Stop(&r);
  EXPECT_EQ(r.Labels(), std::vector<std::string>{"outer"});
  EXPECT_EQ(r.stats.dropped_empty_label, 1u);
  ASSERT_EQ(Start(ROCTX_UTILS_CAPTURE_HOST), ROCTX_UTILS_OK);
}

TEST_P(HostFed, StartStopCrossThreadsByReturnedId) {
  uint64_t tid_a = 0, tid_b = 0;
  std::thread a([&] {
    tid_a = Tid();
    Feed(v(), kCore, kStart, kEnter, "process_range");
    Feed(v(), kCore, kStart, kExit, "process_range", 0, /*retval=id*/ 77);
  });
  a.join();
  std::thread b([&] {
    tid_b = Tid();
    Feed(v(), kCore, kStop, kEnter, nullptr, 77);
  });
  b.join();
  Result r;
  Stop(&r);
  ASSERT_EQ(r.events.size(), 1u);
  EXPECT_EQ(r.events[0].kind, ROCTX_UTILS_EVENT_PROCESS_RANGE);
  EXPECT_EQ(r.events[0].tid, tid_a);
  EXPECT_EQ(r.events[0].end_tid, tid_b);
  ASSERT_EQ(Start(ROCTX_UTILS_CAPTURE_HOST), ROCTX_UTILS_OK);
}

TEST_P(HostFed, NamesAndPauseResume) {
  Feed(v(), kName, 0, kEnter, "decode_thread");
  Feed(v(), kControl, 0, kEnter, nullptr, 0);  // pause(0): whole process
  Feed(v(), kCore, kMark, kEnter, "hidden");
  Feed(v(), kControl, 1, kEnter, nullptr, 0);  // resume(0)
  Feed(v(), kCore, kMark, kEnter, "visible");
  Result r;
  Stop(&r);
  EXPECT_EQ(r.Labels(), std::vector<std::string>{"visible"});
  EXPECT_EQ(r.stats.paused, 1u);
  EXPECT_EQ(r.ThreadName(Tid()), "decode_thread");
  ASSERT_EQ(Start(ROCTX_UTILS_CAPTURE_HOST), ROCTX_UTILS_OK);
}

TEST_P(HostFed, MalformedRecordsAreRejectedAndCounted) {
  Payload tiny;
  tiny.size = 8;  // claims no args
  EXPECT_EQ(Feed(v(), kCore, kPush, kEnter, nullptr, 0, 0, 0, &tiny), -1);
  RecordV7 wrong{};
  EXPECT_EQ(roctx_utils_listener_feed(&wrong, v() < 10000 ? sizeof(RecordV7) : sizeof(RecordV6), v()), -1);
  EXPECT_EQ(roctx_utils_listener_feed(nullptr, v() < 10000 ? 56 : 64, v()), -1);
  EXPECT_EQ(Feed(20000, kCore, kMark, kEnter, "future"), -1);  // unknown SDK generation
  EXPECT_EQ(Feed(v(), 99, 0, kEnter, "unknown_kind"), -1);
  Result r;
  Stop(&r);
  EXPECT_TRUE(r.events.empty());
  EXPECT_EQ(r.stats.rejected_records, 5u);
  ASSERT_EQ(Start(ROCTX_UTILS_CAPTURE_HOST), ROCTX_UTILS_OK);
}

INSTANTIATE_TEST_SUITE_P(SdkVersions, HostFed, ::testing::Values(400u, 600u, 10000u),
                         [](const auto& info) { return "v" + std::to_string(info.param); });

TEST(HostFedV7, CoreRangeKindThreadAndProcessRanges) {
  ASSERT_EQ(Start(ROCTX_UTILS_CAPTURE_HOST), ROCTX_UTILS_OK);
  Feed(10000, kCoreRange, 1, kEnter, "thread_range", 0, 0, /*corr=*/5);
  Feed(10000, kCoreRange, 1, kExit, "thread_range", 0, 0, 5);
  Feed(10000, kCoreRange, 2, kEnter, "process_range", 0, 0, 6);
  Feed(10000, kCoreRange, 2, kExit, "process_range", 0, 0, 6);
  Result r;
  Stop(&r);
  ASSERT_EQ(r.events.size(), 2u);
  EXPECT_EQ(r.stats.rejected_records, 0u);
}

TEST(HostFedOff, FeedingWithoutAHostSessionRecordsNothing) {
  EXPECT_EQ(Feed(10000, kCore, kMark, kEnter, "nobody_listening"), 1);
  ASSERT_EQ(Start(ROCTX_UTILS_CAPTURE_IN_PROCESS), ROCTX_UTILS_OK);
  EXPECT_EQ(Feed(10000, kCore, kMark, kEnter, "wrong_mode"), 1);
  Result r;
  Stop(&r);
  EXPECT_TRUE(r.events.empty());
}

}  // namespace
