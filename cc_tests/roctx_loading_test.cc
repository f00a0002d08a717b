// Where the backend finds roctx. One source, several cc_tests: each target sets a different
// environment (search path, explicit override, tool variables) and states what must happen in
// EXPECT_STATE (missing|sdk|legacy), EXPECT_LIBRARY (the bound path, if any) and
// EXPECT_WARNING (|-separated substrings of the one warning, if any).
#include <sys/stat.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "roctx_utils/roctx_utils.h"
#include "tsl/profiler/lib/nvtx_utils.h"
#include "tsl/profiler/lib/scoped_annotation.h"
#include "xla/tsl/profiler/backends/cpu/annotation_stack.h"

namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, '|');) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

bool RealRocmInstalled() {
  struct stat st;
  for (const char* p : {"/opt/rocm/lib/librocprofiler-sdk-roctx.so.1",
                        "/opt/rocm/lib/librocprofiler-sdk-roctx.so.0", "/opt/rocm/lib/libroctx64.so.4"}) {
    if (stat(p, &st) == 0) return true;
  }
  return false;
}

TEST(RoctxLoading, BindsWhatTheEnvironmentSays) {
  const std::string state = Env("EXPECT_STATE");
  if (state == "missing" && RealRocmInstalled()) GTEST_SKIP() << "a real ROCm is installed";
  ::testing::internal::CaptureStderr();
  const roctx_utils_roctx_state got = roctx_utils_roctx_state_get();
  roctx_utils_roctx_state_get();  // latched: no second search, no second warning
  const std::string err = ::testing::internal::GetCapturedStderr();

  const roctx_utils_roctx_state want = state == "sdk"      ? ROCTX_UTILS_ROCTX_SDK
                                       : state == "legacy" ? ROCTX_UTILS_ROCTX_LEGACY
                                                           : ROCTX_UTILS_ROCTX_MISSING;
  EXPECT_EQ(got, want) << err;
  if (want == ROCTX_UTILS_ROCTX_MISSING) {
    EXPECT_EQ(roctx_utils_roctx_library(), nullptr);
  } else {
    ASSERT_NE(roctx_utils_roctx_library(), nullptr);
    EXPECT_EQ(std::string(roctx_utils_roctx_library()), Env("EXPECT_LIBRARY"));
  }
  const std::vector<std::string> needles = Split(Env("EXPECT_WARNING"));
  if (needles.empty()) {
    EXPECT_EQ(err.find("warning"), std::string::npos) << err;
  }
  for (const std::string& needle : needles) {
    EXPECT_NE(err.find(needle), std::string::npos) << "missing '" << needle << "' in: " << err;
  }
  EXPECT_EQ(err.find("warning", err.find("warning") + 1), std::string::npos) << "more than one warning: " << err;
}

// Whatever was (not) found, the rest of the interface keeps working.
TEST(RoctxLoading, EverythingElseKeepsWorking) {
  tsl::profiler::AnnotationStack::Enable(true);
  {
    tsl::profiler::ScopedAnnotation outer("outer");
    tsl::profiler::RangePush(tsl::profiler::DefaultProfilerDomain(), "inner");
    EXPECT_EQ(tsl::profiler::AnnotationStack::Get(), "outer::inner");
    tsl::profiler::RangePop(tsl::profiler::DefaultProfilerDomain());
  }
  EXPECT_EQ(tsl::profiler::AnnotationStack::Get(), "");
  tsl::profiler::NameCurrentThread("still_fine");  // a no-op without naming functions
  tsl::profiler::NameDevice(0, "dev");
  int stream = 0;
  tsl::profiler::NameStream(reinterpret_cast<tsl::profiler::StreamHandle>(&stream), "s");
  roctx_utils::Annotation a("object");
  a.Stop();
  EXPECT_NE(tsl::profiler::RegisterString(nullptr, "label"), nullptr);
  tsl::profiler::AnnotationStack::Enable(false);
}

}  // namespace
