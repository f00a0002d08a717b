// Stand-in for Abseil's absl/strings/str_cat.h: StrAppend and StrCat over string-like pieces
// (what annotation_stack.cc calls), with Abseil's meaning: every piece appended in order.
#ifndef ROCTX_UTILS_STAND_IN_ABSL_STRINGS_STR_CAT_H_
#define ROCTX_UTILS_STAND_IN_ABSL_STRINGS_STR_CAT_H_

#include <string>
#include <string_view>

namespace absl {

template <typename... Pieces>
void StrAppend(std::string* out, const Pieces&... pieces) {
  (out->append(std::string_view(pieces)), ...);
}

template <typename... Pieces>
std::string StrCat(const Pieces&... pieces) {
  std::string out;
  StrAppend(&out, pieces...);
  return out;
}

}  // namespace absl

#endif  // ROCTX_UTILS_STAND_IN_ABSL_STRINGS_STR_CAT_H_
