// A googletest-free CHECK for the example's tests: prints each check, counts failures.
#ifndef XLA_FORK_EXAMPLE_CHECK_H_
#define XLA_FORK_EXAMPLE_CHECK_H_

#include <cstdio>

inline int& Failures() {
  static int failures = 0;
  return failures;
}

#define CHECK(cond)                                                                        \
  do {                                                                                     \
    const bool ok_ = (cond);                                                               \
    std::printf("%s %s (%s:%d)\n", ok_ ? "PASS" : "FAIL", #cond, __FILE__, __LINE__);     \
    if (!ok_) ++Failures();                                                                \
  } while (0)

#endif  // XLA_FORK_EXAMPLE_CHECK_H_
