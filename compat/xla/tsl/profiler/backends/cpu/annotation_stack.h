// Bundled host compatibility layer: a dependency-free reimplementation of XLA's
// `xla/tsl/profiler/backends/cpu/annotation_stack.h` (namespace tsl::profiler).
//
// AnnotationStack is the per-thread "current annotation" that ScopedAnnotation maintains and
// that host-side profilers read. Each thread owns a stack of names joined with "::" (pushing
// "outer" then "inner" yields "outer::inner") plus a parallel stack of scope range ids.
//
// Enable/disable is a single global, lock-free generation counter: an odd value means
// enabled, and the value moves only when the enabled state actually changes. Every thread
// remembers the generation its stack was built under; when it sees a different one, it
// discards its names and ids (but keeps its id counter), so stale or unmatched pops across an
// Enable() toggle are harmless. Push/Pop do not consult IsEnabled(); callers do.
//
// This copy is used when the host project does not provide XLA's own target (see the
// //:annotation_stack label_flag). It has no absl dependency: std::string_view replaces
// absl::string_view, and GetScopeRangeIds() returns ScopeRangeIdSpan, a read-only view with
// the subset of absl::Span<const int64_t>'s interface that callers use.
#ifndef XLA_TSL_PROFILER_BACKENDS_CPU_ANNOTATION_STACK_H_
#define XLA_TSL_PROFILER_BACKENDS_CPU_ANNOTATION_STACK_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>

namespace tsl::profiler {

// A read-only, non-owning view of contiguous int64_t values (a stand-in for
// absl::Span<const int64_t>). Views returned by AnnotationStack::GetScopeRangeIds() are
// valid until the calling thread's next AnnotationStack call.
class ScopeRangeIdSpan {
 public:
  using element_type = const int64_t;
  using value_type = int64_t;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using pointer = const int64_t*;
  using const_pointer = const int64_t*;
  using reference = const int64_t&;
  using const_reference = const int64_t&;
  using iterator = const int64_t*;
  using const_iterator = const int64_t*;
  using reverse_iterator = std::reverse_iterator<const_iterator>;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;

  constexpr ScopeRangeIdSpan() noexcept = default;
  constexpr ScopeRangeIdSpan(const int64_t* data, size_type size) noexcept
      : data_(data), size_(size) {}

  constexpr const int64_t* data() const noexcept { return data_; }
  constexpr size_type size() const noexcept { return size_; }
  constexpr size_type length() const noexcept { return size_; }
  constexpr bool empty() const noexcept { return size_ == 0; }

  constexpr const int64_t& operator[](size_type i) const noexcept { return data_[i]; }
  constexpr const int64_t& front() const noexcept { return data_[0]; }
  constexpr const int64_t& back() const noexcept { return data_[size_ - 1]; }

  constexpr const_iterator begin() const noexcept { return data_; }
  constexpr const_iterator end() const noexcept { return data_ + size_; }
  constexpr const_iterator cbegin() const noexcept { return begin(); }
  constexpr const_iterator cend() const noexcept { return end(); }
  const_reverse_iterator rbegin() const noexcept { return const_reverse_iterator(end()); }
  const_reverse_iterator rend() const noexcept { return const_reverse_iterator(begin()); }

  // Element-wise comparison, as absl::Span does.
  friend bool operator==(ScopeRangeIdSpan a, ScopeRangeIdSpan b) noexcept {
    if (a.size_ != b.size_) return false;
    for (size_type i = 0; i < a.size_; ++i) {
      if (a.data_[i] != b.data_[i]) return false;
    }
    return true;
  }
  friend bool operator!=(ScopeRangeIdSpan a, ScopeRangeIdSpan b) noexcept { return !(a == b); }

 private:
  const int64_t* data_ = nullptr;
  size_type size_ = 0;
};

// Backend for ScopedAnnotation. All members are static; all state except the generation
// counter (and the thread-id allocator in the .cc) is thread_local, so no locks are taken.
class AnnotationStack {
 public:
  using ScopeRangeIdSpan = ::tsl::profiler::ScopeRangeIdSpan;

  // Appends `name` to the calling thread's annotation, separated by "::" (or makes it the
  // whole annotation when the stack is empty), and pushes a new scope range id.
  static void PushAnnotation(std::string_view name);

  // Undoes the calling thread's last PushAnnotation (name and id). On an empty stack it
  // clears the thread's state and returns.
  static void PopAnnotation();

  // The calling thread's joined annotation, e.g. "outer::inner"; "" when empty. The
  // reference stays valid for the thread's lifetime; its contents change with push/pop.
  static const std::string& Get();

  // The calling thread's scope range ids, outermost first (one per open push).
  //
  // Id layout (as uint64_t; the view holds the same bits as int64_t):
  //   bit 63 == 0: bits 48..62 hold the thread's 15-bit id (allocated from 1 upward on the
  //                thread's first push), bits 0..47 a per-thread counter (first id: 1);
  //   bits 63..62 == 0b10: the thread id space was exhausted; bits 0..61 come from one
  //                counter shared by all such threads.
  //   bits 63..62 == 0b11: never produced (marks an uninitialised id internally).
  static ScopeRangeIdSpan GetScopeRangeIds();

  // Enables or disables annotation collection. The global generation changes only when the
  // state changes (odd = enabled); each change wipes every thread's stack lazily.
  static void Enable(bool enable);

  // Whether annotation collection is enabled.
  static bool IsEnabled() { return generation_.load(std::memory_order_acquire) & 1; }

 private:
  AnnotationStack() = default;

  // Odd: enabled. Even: disabled. Advanced by Enable() on every state change.
  static std::atomic<int> generation_;
};

// Test-only hooks. Not part of the XLA API; do not call from production code.
namespace annotation_stack_internal {

// Sets the 15-bit thread id that the next thread to push for the first time will receive,
// and returns the previous value. Values are clamped to [1, 32768]; 32768 (= 2^15) means
// "exhausted": threads initialising afterwards fall back to the shared id counter. Threads
// that already have an id keep it. Lets tests reach the fallback without 32767 threads.
int SetNextThreadIdForTest(int next_thread_id);

}  // namespace annotation_stack_internal

}  // namespace tsl::profiler

#endif  // XLA_TSL_PROFILER_BACKENDS_CPU_ANNOTATION_STACK_H_
