// Stand-in for Abseil's absl/strings/string_view.h, for compiling an XLA tree's profiler headers
// without Abseil: in C++17 Abseil makes absl::string_view std::string_view, as here.
#ifndef ROCTX_UTILS_STAND_IN_ABSL_STRINGS_STRING_VIEW_H_
#define ROCTX_UTILS_STAND_IN_ABSL_STRINGS_STRING_VIEW_H_

#include <string_view>

namespace absl {
using std::string_view;
}  // namespace absl

#endif  // ROCTX_UTILS_STAND_IN_ABSL_STRINGS_STRING_VIEW_H_
