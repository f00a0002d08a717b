// Stand-in for Abseil's absl/types/span.h: a read-only view of contiguous elements and
// MakeConstSpan, the part AnnotationStack::GetScopeRangeIds() uses.
#ifndef ROCTX_UTILS_STAND_IN_ABSL_TYPES_SPAN_H_
#define ROCTX_UTILS_STAND_IN_ABSL_TYPES_SPAN_H_

#include <cstddef>

namespace absl {

template <typename T>
class Span {
 public:
  constexpr Span() noexcept = default;
  constexpr Span(T* data, std::size_t size) noexcept : data_(data), size_(size) {}
  template <typename Container>
  Span(const Container& c) noexcept : data_(c.data()), size_(c.size()) {}  // NOLINT: as Abseil's

  constexpr T* data() const noexcept { return data_; }
  constexpr std::size_t size() const noexcept { return size_; }
  constexpr bool empty() const noexcept { return size_ == 0; }
  constexpr T& operator[](std::size_t i) const noexcept { return data_[i]; }
  constexpr T* begin() const noexcept { return data_; }
  constexpr T* end() const noexcept { return data_ + size_; }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

template <typename Container>
auto MakeConstSpan(const Container& c) noexcept {
  return Span<const typename Container::value_type>(c.data(), c.size());
}

}  // namespace absl

#endif  // ROCTX_UTILS_STAND_IN_ABSL_TYPES_SPAN_H_
