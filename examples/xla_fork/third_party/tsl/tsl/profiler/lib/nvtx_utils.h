// The fork's own range-annotation header (XLA: third_party/tsl/tsl/profiler/lib/nvtx_utils.h,
// included as "tsl/profiler/lib/nvtx_utils.h"), declaring what upstream's declares: the fork
// keeps its header and its callers, and only the library behind it changes. roctx_utils ships a
// header of the same name, include guard and declarations (plus one older overload); XLA's own
// translation units always find this one first (Bazel passes repository roots such as
// external/tsl as -iquote, before the -I of @roctx_utils' headers), and both compile to the
// same mangled names.
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
