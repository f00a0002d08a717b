/* Opaque handle types of the tsl::profiler range-annotation interface.
 *
 * This header declares types only, never functions: the cxx bridge includes it, and cxx marks
 * every function it generates noexcept, which would clash with the declarations in
 * nvtx_utils.h if both were visible in one translation unit. Itanium mangling ignores
 * noexcept, so callers compiled against nvtx_utils.h link to the bridge's definitions. */
#ifndef ROCTX_UTILS_TSL_PROFILER_LIB_ROCTX_TYPES_H_
#define ROCTX_UTILS_TSL_PROFILER_LIB_ROCTX_TYPES_H_

namespace tsl::profiler {

/* Incomplete on purpose: a handle is meaningful only to the backend that issued it. */
struct String;
struct ProfilerDomain;
struct Stream;

using StringHandle = String*;
using ProfilerDomainHandle = ProfilerDomain*;
using StreamHandle = Stream*;

}  // namespace tsl::profiler

#endif  // ROCTX_UTILS_TSL_PROFILER_LIB_ROCTX_TYPES_H_
