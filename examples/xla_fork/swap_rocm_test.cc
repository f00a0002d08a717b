// With --config=rocm the fork's nvtx_utils_impl is roctx_utils: every range reaches the fork's
// own AnnotationStack (not roctx_utils' bundled copy) and roctx (here a stand-in library with
// roctx's ABI, chosen by ROCTX_UTILS_ROCTX_LIBRARY). The fork's callers use the fork's header.
#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "check.h"
#include "header_probe.h"
#include "roctx_utils/roctx_utils.h"
#include "xla/tsl/profiler/backends/cpu/annotation_stack.h"
#include "tsl/profiler/lib/nvtx_utils.h"

tsl::profiler::ProfilerDomainHandle PushRegisteredFromOurHeader(const std::string& title);

namespace {

// This translation unit sees both headers' directories and, as every XLA caller, compiles
// against the fork's.
static_assert(!SeesTitleTextOverload<tsl::profiler::ProfilerDomainHandle>::value,
              "swap_rocm_test.cc must compile against the fork's nvtx_utils.h");

template <typename T>
T Sym(void* lib, const char* name) {
  return lib != nullptr ? reinterpret_cast<T>(dlsym(lib, name)) : nullptr;
}

}  // namespace

int main() {
  using tsl::profiler::AnnotationStack;
  namespace prof = tsl::profiler;

  auto* domain = prof::DefaultProfilerDomain();
  CHECK(domain != nullptr);  // XLA_ROCM_ENABLE_ROCTX=1
  AnnotationStack::Enable(true);
  const int64_t stack_pushes = AnnotationStack::PushCount();

  prof::RangePush(domain, "fork_outer");
  prof::RangePush(domain, std::string("fork_inner"));
  CHECK(AnnotationStack::Get() == "fork_outer::fork_inner");
  CHECK(AnnotationStack::PushCount() - stack_pushes == 2);

  // roctx: the library roctx_utils bound is our stand-in, and it saw the same two pushes.
  CHECK(roctx_utils_roctx_state_get() == ROCTX_UTILS_ROCTX_SDK);
  const char* bound = roctx_utils_roctx_library();
  void* lib = bound != nullptr ? dlopen(bound, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  auto pushes = Sym<uint64_t (*)()>(lib, "fork_fake_roctx_pushes");
  auto pops = Sym<uint64_t (*)()>(lib, "fork_fake_roctx_pops");
  auto last = Sym<const char* (*)()>(lib, "fork_fake_roctx_last");
  CHECK(pushes != nullptr && pops != nullptr && last != nullptr);
  if (pushes == nullptr || pops == nullptr || last == nullptr) return 1;
  CHECK(pushes() == 2);
  CHECK(std::strcmp(last(), "fork_inner") == 0);

  prof::RangePop(domain);
  prof::RangePop(domain);
  CHECK(AnnotationStack::Get().empty());
  CHECK(pops() == 2);

  // The other header, in another translation unit: same backend, same stacks.
  CHECK(PushRegisteredFromOurHeader("fork_registered") == domain);
  CHECK(AnnotationStack::Get() == "fork_registered");
  CHECK(std::strcmp(last(), "fork_registered") == 0);
  prof::RangePop(domain);
  CHECK(pushes() == 3 && pops() == 3);

  std::printf("swap_rocm_test: backend roctx_utils, roctx %s, %d failure(s)\n", bound, Failures());
  return Failures() == 0 ? 0 : 1;
}
