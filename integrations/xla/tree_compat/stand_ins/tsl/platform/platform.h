// Stand-in for TSL's tsl/platform/platform.h on Linux: a POSIX platform, not a mobile one (so
// scoped_annotation.h keeps its AnnotationStack path, as in every XLA GPU build).
#ifndef ROCTX_UTILS_STAND_IN_TSL_PLATFORM_PLATFORM_H_
#define ROCTX_UTILS_STAND_IN_TSL_PLATFORM_PLATFORM_H_

#define PLATFORM_POSIX

#endif  // ROCTX_UTILS_STAND_IN_TSL_PLATFORM_PLATFORM_H_
