// The fork's no-op backend (XLA's nvtx_utils_stub.cc): what nvtx_utils_impl compiles when
// neither CUDA nor ROCm is configured.
#include "tsl/profiler/lib/nvtx_utils.h"

namespace tsl::profiler {

ProfilerDomainHandle DefaultProfilerDomain() { return nullptr; }
void NameCurrentThread(const std::string&) {}
void NameDevice(int, const std::string&) {}
void NameStream(StreamHandle, const std::string&) {}
StringHandle RegisterString(ProfilerDomainHandle, const std::string&) { return nullptr; }
void RangePop(ProfilerDomainHandle) {}
void RangePush(ProfilerDomainHandle, const char*) {}
namespace detail {
void RangePush(ProfilerDomainHandle, StringHandle, uint64_t, const void*, size_t) {}
}  // namespace detail
uint64_t RegisterSchema(ProfilerDomainHandle, const void*) { return 0; }
void MarkMemoryInitialized(const void*, size_t, StreamHandle) {}

}  // namespace tsl::profiler
