/* nvtx_utils.h under the name openxla/xla#46935 (open, not merged) proposes for it: the same
 * interface, so code written against either header compiles and links against the same
 * backend. Upstream's header is still nvtx_utils.h (docs/xla.md). */
#ifndef TENSORFLOW_TSL_PROFILER_LIB_RANGE_ANNOTATIONS_H_
#define TENSORFLOW_TSL_PROFILER_LIB_RANGE_ANNOTATIONS_H_

#include "tsl/profiler/lib/nvtx_utils.h"  // IWYU pragma: export

#endif  // TENSORFLOW_TSL_PROFILER_LIB_RANGE_ANNOTATIONS_H_
