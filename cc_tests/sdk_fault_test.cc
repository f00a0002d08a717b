// Fault injection through the fake rocprofiler-sdk (FAKE_ROCPROFILER_FAIL, fake_rocprofiler_sdk.cc):
// every non-success status from every SDK call our listener makes, callbacks racing session
// stop, and records from a future SDK with larger payloads. Each scenario runs in a forked child
// (the SDK is configured once per process), which must exit normally: a clear message, a safe
// fallback (in-process capture), every range still recorded or counted, no abort, no unwind.
//
// The parent never touches roctx_utils itself, so every child starts from a fresh library.
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cc_tests/capture_test_util.h"
#include "gtest/gtest.h"
#include "roctx_utils/roctx_utils.h"
#include "tsl/profiler/lib/nvtx_utils.h"

namespace {

using capture_test::Contains;
using capture_test::ReadFile;
using capture_test::Result;
using capture_test::Start;
using capture_test::Stop;

constexpr uint32_t kModeSdk = 1, kModeInProcess = 3;
constexpr int kStatusCount = 41;  // ROCm 7.x rocprofiler_status_t: SUCCESS .. LAST-1

struct Outcome {
  int exit_code = -1;  // -1: killed by a signal
  int signal = 0;
  std::string err;  // the child's stderr
};

// Runs `body` in a child with `fault` injected (empty: none); returns how the child ended.
template <typename Body>
Outcome InChild(const std::string& name, const std::string& fault, Body body) {
  const std::string err_path = capture_test::TmpDir("faults") + "/" + name + ".err";
  fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(60);  // a hang fails the scenario instead of the suite's timeout
    if (!freopen(err_path.c_str(), "w", stderr)) _exit(90);
    if (!fault.empty()) setenv("FAKE_ROCPROFILER_FAIL", fault.c_str(), 1);
    const int code = body();
    fflush(nullptr);
    _exit(code);
  }
  Outcome o;
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return o;
  if (WIFEXITED(status)) o.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) o.signal = WTERMSIG(status);
  o.err = ReadFile(err_path);
  return o;
}

// Three ranges through the real chain (emitter -> roctx -> SDK -> listener, or the in-process
// sink after a fallback); 0 when all three are in the snapshot and the mode is `want_mode`.
int ThreeRangesIn(uint32_t want_mode) {
  if (Start() != ROCTX_UTILS_OK) return 10;
  if (roctx_utils_capture_mode_get() != want_mode) return 11;
  for (const char* label : {"step", "fusion", "copy"}) {
    tsl::profiler::RangePush(nullptr, label);
    tsl::profiler::RangePop(nullptr);
  }
  Result r;
  Stop(&r);
  if (r.status != ROCTX_UTILS_OK) return 12;
  if (r.Labels() != std::vector<std::string>{"step", "fusion", "copy"}) return 13;
  if (r.stats.recorded != 3) return 14;
  return 0;
}

struct Call {
  const char* function;
  uint32_t mode;        // what the session must end up in
  const char* message;  // what stderr must say
};

// Every SDK call the listener makes, in the order it makes them.
const Call kCalls[] = {
    {"rocprofiler_get_version", kModeInProcess, "rocprofiler_get_version failed"},
    {"rocprofiler_is_initialized", kModeInProcess, "rocprofiler_is_initialized failed: "},
    {"rocprofiler_force_configure", kModeInProcess, "rocprofiler_force_configure returned "},
    {"rocprofiler_create_context", kModeInProcess, "rocprofiler_create_context returned "},
    {"rocprofiler_configure_callback_tracing_service", kModeInProcess, "subscribing MARKER_CORE_API failed: "},
    {"rocprofiler_start_context", kModeInProcess, "rocprofiler_start_context returned "},
    // A context that will not stop is logged; the session's ranges are still returned.
    {"rocprofiler_stop_context", kModeSdk, "rocprofiler_stop_context returned "},
};

TEST(SdkFaults, EveryStatusFromEveryCallGivesAMessageAndAFallbackNeverAnAbort) {
  int scenarios = 0;
  for (const Call& call : kCalls) {
    for (int status = 1; status < kStatusCount; ++status) {
      const std::string fault = std::string(call.function) + "=" + std::to_string(status);
      const Outcome o = InChild(std::string(call.function) + "_" + std::to_string(status), fault,
                                [&] { return ThreeRangesIn(call.mode); });
      ++scenarios;
      ASSERT_EQ(o.signal, 0) << fault << ": killed by signal " << o.signal << "\n" << o.err;
      ASSERT_EQ(o.exit_code, 0) << fault << "\n" << o.err;
      EXPECT_TRUE(Contains(o.err, call.message)) << fault << ":\n" << o.err;
      if (call.mode == kModeInProcess) {
        EXPECT_TRUE(Contains(o.err, "capturing in-process")) << fault << ":\n" << o.err;
      }
      // Statuses the SDK names are named in the message (not just a number).
      if (std::string(call.function) != "rocprofiler_get_version") {
        EXPECT_TRUE(Contains(o.err, "ROCPROFILER_STATUS_")) << fault << ":\n" << o.err;
      }
    }
  }
  EXPECT_EQ(scenarios, 7 * (kStatusCount - 1));
}

TEST(SdkFaults, NoFaultMeansToolMode) {
  const Outcome o = InChild("control", "", [] { return ThreeRangesIn(kModeSdk); });
  EXPECT_EQ(o.exit_code, 0) << o.err;
}

// Callbacks racing session stop and start: threads push and pop through the SDK while the main
// thread stops and restarts sessions. Every snapshot must be well formed and account for what
// it holds; nothing crashes, nothing hangs.
TEST(SdkFaults, CallbacksRacingSessionStopAreRecordedOrCounted) {
  const Outcome o = InChild("racing", "", [] {
    if (Start() != ROCTX_UTILS_OK || roctx_utils_capture_mode_get() != kModeSdk) return 20;
    std::atomic<bool> done{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        while (!done.load()) {
          tsl::profiler::RangePush(nullptr, "racing");
          roctx_utils_mark("tick");
          tsl::profiler::RangePop(nullptr);
        }
      });
    }
    int bad = 0;
    for (int i = 0; i < 200 && !bad; ++i) {
      Result r;
      Stop(&r);
      if (r.status != ROCTX_UTILS_OK) bad = 21;
      if (r.stats.recorded != r.events.size()) bad = 22;
      for (const auto& e : r.events) {
        if (e.end_ns < e.start_ns || (e.label != "racing" && e.label != "tick")) bad = 23;
      }
      if (r.stats.unmatched_pops != 0) bad = 24;  // a pop of a range begun earlier is not "unmatched"
      if (Start() != ROCTX_UTILS_OK) bad = 25;
    }
    done.store(true);
    for (auto& t : threads) t.join();
    Result last;
    Stop(&last);
    return bad ? bad : (last.status == ROCTX_UTILS_OK ? 0 : 26);
  });
  EXPECT_EQ(o.signal, 0) << o.err;
  EXPECT_EQ(o.exit_code, 0) << o.err;
}

// rocprofiler-sdk 7.x record layout (rocprofiler_abi.md), as the fake delivers it raw.
struct Record7 {
  uint64_t context_id, thread_id, correlation_internal, correlation_external, correlation_ancestor;
  int32_t kind, operation, phase;
  void* payload;
};
static_assert(sizeof(Record7) == 64, "7.x callback record");

// A newer SDK's payload: the known 32 bytes, then fields we do not know.
struct FuturePayload {
  uint64_t size;
  uint64_t arg0, arg1, retval;
  uint64_t future_field[4];
};

TEST(SdkFaults, LargerPayloadsFromANewerSdkAreReadAndShortOnesRejected) {
  const Outcome o = InChild("future_records", "", [] {
    if (Start() != ROCTX_UTILS_OK || roctx_utils_capture_mode_get() != kModeSdk) return 30;
    using RawFn = int (*)(int, const void*, size_t);
    void* sdk = dlopen(std::getenv("ROCTX_UTILS_ROCPROFILER_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
    auto raw = sdk ? reinterpret_cast<RawFn>(dlsym(sdk, "fake_sdk_marker_raw")) : nullptr;
    if (raw == nullptr) return 31;
    static const char kLabel[] = "from a newer sdk";
    FuturePayload big{sizeof(FuturePayload), reinterpret_cast<uint64_t>(kLabel), 0, 0, {1, 2, 3, 4}};
    FuturePayload pop_payload{sizeof(FuturePayload), 0, 0, 0, {}};
    FuturePayload short_payload{8, reinterpret_cast<uint64_t>(kLabel), 0, 0, {}};
    const uint64_t tid = capture_test::Tid();
    Record7 push{0, tid, 1, 0, 0, 7, 1, 1, &big};
    Record7 pop{0, tid, 1, 0, 0, 7, 2, 2, &pop_payload};
    Record7 bad{0, tid, 2, 0, 0, 7, 1, 1, &short_payload};
    if (raw(7, &push, sizeof push) < 1 || raw(7, &pop, sizeof pop) < 1 || raw(7, &bad, sizeof bad) < 1) return 32;
    Result r;
    Stop(&r);
    if (r.Labels() != std::vector<std::string>{"from a newer sdk"}) return 33;
    if (r.stats.rejected_records != 1) return 34;
    return 0;
  });
  EXPECT_EQ(o.signal, 0) << o.err;
  EXPECT_EQ(o.exit_code, 0) << o.err;
}

}  // namespace
