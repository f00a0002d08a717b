// A translation unit of the fork that includes roctx_utils' copy of the interface header (as
// code that took it from @roctx_utils would) while swap_rocm_test.cc includes the fork's own:
// both link into one binary against one backend, with no duplicate or conflicting definition.
#include <string>

#include "header_probe.h"
#include "tsl/profiler/lib/nvtx_utils.h"

static_assert(SeesTitleTextOverload<tsl::profiler::ProfilerDomainHandle>::value,
              "ours_tu.cc must compile against roctx_utils' nvtx_utils.h");

namespace {
struct OpAnnotation {
  uint64_t NvtxSchemaId() const { return 0; }
};
}  // namespace

// Pushes a registered title through the templated RangePush and returns the domain it used.
tsl::profiler::ProfilerDomainHandle PushRegisteredFromOurHeader(const std::string& title) {
  auto* domain = tsl::profiler::DefaultProfilerDomain();
  tsl::profiler::StringHandle handle = tsl::profiler::RegisterString(domain, title);
  tsl::profiler::RangePush(domain, handle, OpAnnotation{});
  return domain;
}
