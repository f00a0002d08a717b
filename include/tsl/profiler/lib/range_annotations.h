/* The newer upstream name of nvtx_utils.h: the same interface, so code written against either
 * header compiles and links against the same backend. */
#ifndef TENSORFLOW_TSL_PROFILER_LIB_RANGE_ANNOTATIONS_H_
#define TENSORFLOW_TSL_PROFILER_LIB_RANGE_ANNOTATIONS_H_

#include "tsl/profiler/lib/nvtx_utils.h"  // IWYU pragma: export

#endif  // TENSORFLOW_TSL_PROFILER_LIB_RANGE_ANNOTATIONS_H_
