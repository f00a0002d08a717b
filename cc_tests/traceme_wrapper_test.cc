// The RFC's TraceMeWrapper change for XLA forks (integrations/xla/traceme_wrapper.patch), checked
// in isolation: the class the patch produces, cut out of the patched pinned profiler.cc by
// //integrations/xla:patched_traceme_wrapper, compiled here against stand-ins for the little of
// nanobind and TraceMe it uses, and against our backend: scoped_annotation.h's PushAnnotation /
// PopAnnotation -> RangePush / RangePop -> roctx (the fake) and an in-process session.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "cc_tests/capture_test_util.h"
#include "cc_tests/fake_roctx_client.h"
#include "gtest/gtest.h"
#include "roctx_utils/roctx_utils.h"
#include "tsl/profiler/lib/scoped_annotation.h"

// ---- stand-ins: exactly the surface the wrapper uses ----

#define TF_PREDICT_FALSE(x) (x)

namespace absl {
template <typename... Parts>
void StrAppend(std::string* out, const Parts&... parts) {
  (out->append(std::string_view(parts)), ...);
}
}  // namespace absl

namespace nanobind {
struct bool_ {};
// A Python object: a str, a bool or an int.
struct handle {
  std::variant<std::string, bool, int64_t> v;
};
struct str {
  std::string s;
  str(const char* text) : s(text) {}  // NOLINT: as nb::str converts from Python str
  explicit str(handle h) {            // str(obj)
    if (auto* t = std::get_if<std::string>(&h.v)) s = *t;
    else if (auto* b = std::get_if<bool>(&h.v)) s = *b ? "True" : "False";
    else s = std::to_string(std::get<int64_t>(h.v));
  }
};
struct kwargs {
  std::vector<std::pair<handle, handle>> items;
  size_t size() const { return items.size(); }
  auto begin() const { return items.begin(); }
  auto end() const { return items.end(); }
};
template <typename T>
T cast(const str& s);
template <>
inline std::string cast<std::string>(const str& s) { return s.s; }
template <typename T>
T cast(const handle& h);
template <>
inline std::string_view cast<std::string_view>(const handle& h) { return std::get<std::string>(h.v); }
template <>
inline bool cast<bool>(const handle& h) { return std::get<bool>(h.v); }
template <typename T>
bool isinstance(const handle& h);
template <>
inline bool isinstance<bool_>(const handle& h) { return std::holds_alternative<bool>(h.v); }
}  // namespace nanobind

namespace tsl::profiler {
// TraceMe, recording what it was started with and how often it stopped.
struct TraceMeLog {
  std::vector<std::string> started;
  int stops = 0;
};
inline TraceMeLog& Log() {
  static TraceMeLog log;
  return log;
}
class TraceMe {
 public:
  template <typename NameGenerator>
  TraceMe(NameGenerator name, int /*level*/) : open_(true) {
    Log().started.push_back(name());
  }
  ~TraceMe() { Stop(); }
  template <typename MetadataGenerator>
  void AppendMetadata(MetadataGenerator) {}
  void Stop() {
    if (open_) {
      open_ = false;
      ++Log().stops;
    }
  }
  static bool Active() { return true; }

 private:
  bool open_;
};
}  // namespace tsl::profiler

namespace xla {
namespace nb = nanobind;
namespace {
#include "integrations/xla/traceme_wrapper_patched.inc"
}  // namespace
}  // namespace xla

namespace {

using xla::TraceMeWrapper;

nanobind::kwargs Kwargs(std::initializer_list<std::pair<const char*, nanobind::handle>> kv) {
  nanobind::kwargs out;
  for (const auto& [k, v] : kv) out.items.push_back({nanobind::handle{std::string(k)}, v});
  return out;
}
nanobind::handle Int(int64_t i) { return {i}; }
nanobind::handle Bool(bool b) { return {b}; }

struct Counts {
  uint64_t pushes = roctx_test::Fake().push_count();
  uint64_t pops = roctx_test::Fake().pop_count();
  uint64_t Pushed() const { return roctx_test::Fake().push_count() - pushes; }
  uint64_t Popped() const { return roctx_test::Fake().pop_count() - pops; }
};

TEST(TraceMeWrapperPatch, ConstructorPushesExitPopsOnceNeverTwice) {
  ASSERT_TRUE(roctx_test::Fake().ok);
  ASSERT_NE(tsl::profiler::DefaultProfilerDomain(), nullptr);
  Counts c;
  auto* w = new TraceMeWrapper("user", Kwargs({}));  // TraceAnnotation("user")
  EXPECT_EQ(c.Pushed(), 1u);
  EXPECT_STREQ(roctx_test::Fake().last_push(), "user");
  w->Stop();  // __exit__
  EXPECT_EQ(c.Popped(), 1u);
  w->Stop();  // a second __exit__
  delete w;   // garbage collection
  EXPECT_EQ(c.Popped(), 1u);
  EXPECT_EQ(c.Pushed(), 1u);
}

TEST(TraceMeWrapperPatch, NeverEnteredPopsAtDestruction) {
  Counts c;
  { TraceMeWrapper w("no_with", Kwargs({})); }  // created, never used with `with`
  EXPECT_EQ(c.Pushed(), 1u);
  EXPECT_EQ(c.Popped(), 1u);
  EXPECT_EQ(roctx_test::Fake().ProbeDepth(), 0);  // nothing left open on this thread
}

TEST(TraceMeWrapperPatch, StepIsLabelledAsXProfLabelsSteps) {
  Counts c;
  const size_t traced = tsl::profiler::Log().started.size();
  {
    // StepTraceAnnotation("train", step_num=3) calls TraceMe("train", _r=1, step_num=3).
    TraceMeWrapper w("train", Kwargs({{"_r", Int(1)}, {"step_num", Int(3)}}));
    EXPECT_STREQ(roctx_test::Fake().last_push(), "train 3");
    w.Stop();
  }
  // TraceMe itself is unchanged: XProf's own step event keeps its metadata.
  ASSERT_EQ(tsl::profiler::Log().started.size(), traced + 1);
  EXPECT_EQ(tsl::profiler::Log().started.back(), "train#_r=1,step_num=3#");
  EXPECT_EQ(c.Popped(), 1u);
}

TEST(TraceMeWrapperPatch, OtherMetadataKeepsTraceMesName) {
  TraceMeWrapper w("tagged", Kwargs({{"batch", Int(4)}, {"flag", Bool(true)}}));
  EXPECT_STREQ(roctx_test::Fake().last_push(), "tagged#batch=4,flag=1#");
}

TEST(TraceMeWrapperPatch, RangesNestAsWrittenInASession) {
  ASSERT_EQ(capture_test::Start(), ROCTX_UTILS_OK);
  {
    TraceMeWrapper step("train", Kwargs({{"_r", Int(1)}, {"step_num", Int(0)}}));
    {
      TraceMeWrapper fn("forward", Kwargs({}));  // annotate_function
      fn.Stop();
    }
    TraceMeWrapper loose("no_with", Kwargs({}));  // destroyed before `step` (reverse order)
    step.Stop();  // __exit__ of the step: `loose` is still open inside it, as roctx nests
  }
  capture_test::Result r;
  capture_test::Stop(&r);
  ASSERT_EQ(r.status, ROCTX_UTILS_OK);
  ASSERT_EQ(r.Labels(), (std::vector<std::string>{"train 0", "forward", "no_with"}));
  EXPECT_EQ(r.events[0].depth, 0u);
  EXPECT_EQ(r.events[1].depth, 1u);
  EXPECT_EQ(r.stats.unmatched_pops, 0u);
}

TEST(TraceMeWrapperPatch, CollectedOnAnotherThreadDoesNotPopThatThread) {
  auto* w = new TraceMeWrapper("moved", Kwargs({}));
  std::thread([&] {
    const uint64_t pops = roctx_test::Fake().pop_count();
    delete w;  // the last reference dropped on another thread
    EXPECT_EQ(roctx_test::Fake().pop_count(), pops);
  }).join();
  EXPECT_EQ(roctx_test::Fake().ProbeDepth(), 1);  // still open on its own thread
  roctx_utils_range_pop();  // close it for the next test
}

}  // namespace
