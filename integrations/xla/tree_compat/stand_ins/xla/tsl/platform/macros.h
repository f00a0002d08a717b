// Stand-in for XLA's xla/tsl/platform/macros.h: the branch hints the profiler headers use.
#ifndef ROCTX_UTILS_STAND_IN_XLA_TSL_PLATFORM_MACROS_H_
#define ROCTX_UTILS_STAND_IN_XLA_TSL_PLATFORM_MACROS_H_

#define TF_PREDICT_FALSE(x) (__builtin_expect(false || (x), false))
#define TF_PREDICT_TRUE(x) (__builtin_expect(false || (x), true))

#endif  // ROCTX_UTILS_STAND_IN_XLA_TSL_PLATFORM_MACROS_H_
