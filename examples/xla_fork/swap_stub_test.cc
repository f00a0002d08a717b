// Without --config=rocm the fork's nvtx_utils_impl is its stub: no domain whatever the
// environment says, and ranges go nowhere. The fork builds without roctx_utils' Rust at all.
#include "check.h"
#include "xla/tsl/profiler/backends/cpu/annotation_stack.h"
#include "tsl/profiler/lib/nvtx_utils.h"

int main() {
  using tsl::profiler::AnnotationStack;
  namespace prof = tsl::profiler;
  CHECK(prof::DefaultProfilerDomain() == nullptr);  // even with XLA_ROCM_ENABLE_ROCTX=1
  AnnotationStack::Enable(true);
  prof::RangePush(nullptr, "stub_range");
  CHECK(AnnotationStack::PushCount() == 0);  // the stub pushes nowhere
  prof::RangePop(nullptr);
  std::printf("swap_stub_test: backend stub, %d failure(s)\n", Failures());
  return Failures() == 0 ? 0 : 1;
}
