// Stand-in for XLA's xla/tsl/platform/types.h: the fixed-width integers; the profiler headers
// need nothing else of it (the real one also brings bfloat16, ml_dtypes and tstring).
#ifndef ROCTX_UTILS_STAND_IN_XLA_TSL_PLATFORM_TYPES_H_
#define ROCTX_UTILS_STAND_IN_XLA_TSL_PLATFORM_TYPES_H_

#include <cstdint>
#include <string>

#endif  // ROCTX_UTILS_STAND_IN_XLA_TSL_PLATFORM_TYPES_H_
