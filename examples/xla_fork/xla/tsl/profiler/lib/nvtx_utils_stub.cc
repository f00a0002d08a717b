// The fork's no-op backend (XLA's nvtx_utils_stub.cc), linked when --config=rocm is off.
#include "xla/tsl/profiler/lib/nvtx_utils.h"

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
