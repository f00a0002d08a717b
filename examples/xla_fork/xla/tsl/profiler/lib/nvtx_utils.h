// The fork's own copy of XLA's range-annotation header (xla/tsl/profiler/lib/nvtx_utils.h), as
// upstream declares it: the fork keeps its header and its callers, and only the library behind
// it changes. roctx_utils' own copy (tsl/profiler/lib/nvtx_utils.h) declares the same functions
// and uses the same include guard, so a translation unit that sees both keeps the first and the
// two never conflict; both compile to the same mangled names.
#ifndef TENSORFLOW_TSL_PROFILER_LIB_NVTX_UTILS_H_
#define TENSORFLOW_TSL_PROFILER_LIB_NVTX_UTILS_H_

#include <stddef.h>

#include <cstdint>
#include <string>

namespace tsl::profiler {

struct String;
struct ProfilerDomain;
struct Stream;
using StringHandle = String*;
using ProfilerDomainHandle = ProfilerDomain*;
using StreamHandle = Stream*;

ProfilerDomainHandle DefaultProfilerDomain();
void NameCurrentThread(const std::string& name);
void NameDevice(int device_id, const std::string& device_name);
void NameStream(StreamHandle stream, const std::string& stream_name);
StringHandle RegisterString(ProfilerDomainHandle domain, const std::string& str);
void RangePop(ProfilerDomainHandle domain);
void RangePush(ProfilerDomainHandle domain, const char* ascii);
inline void RangePush(ProfilerDomainHandle domain, const std::string& str) {
  RangePush(domain, str.c_str());
}

namespace detail {
void RangePush(ProfilerDomainHandle domain, StringHandle title, uint64_t schema_id,
               const void* payload, size_t payload_size);
}  // namespace detail

template <typename Annotation>
void RangePush(ProfilerDomainHandle domain, StringHandle title, const Annotation& annotation) {
  return detail::RangePush(domain, title, annotation.NvtxSchemaId(), &annotation,
                           sizeof(Annotation));
}

uint64_t RegisterSchema(ProfilerDomainHandle domain, const void* schemaAttr);
void MarkMemoryInitialized(const void* address, size_t size, StreamHandle stream);

}  // namespace tsl::profiler

#endif  // TENSORFLOW_TSL_PROFILER_LIB_NVTX_UTILS_H_
