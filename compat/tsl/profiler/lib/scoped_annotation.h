// Bundled host compatibility layer: TSL's `tsl/profiler/lib/scoped_annotation.h`.
//
// What: ScopedAnnotation names a region of host code ("my kernels") for as long as the object
// lives; PushAnnotation/PopAnnotation are the unscoped equivalents. Work launched inside the
// region (kernels, copies) is attributed to that name by whichever profiler is listening.
//
// Routing, decided separately at push and at pop (the domain is stable for the process, so
// both sides always agree):
//   1. DefaultProfilerDomain() != nullptr: range emission is on, so the name goes to the
//      nvtx_utils backend via RangePush/RangePop. That backend is responsible for mirroring
//      the range into AnnotationStack itself (the ROCm backend does), so we must not push it
//      here as well or it would appear twice.
//   2. Otherwise, if AnnotationStack::IsEnabled() (a host CPU profiler is collecting), the
//      name goes straight into AnnotationStack.
//   3. Otherwise nothing happens. Generators (callables returning the name) are only invoked
//      on paths 1 and 2, so building an expensive name costs nothing when nobody listens.
//
// Why a bundled copy: hosts that do not build XLA/TSL still need this front end (and the
// AnnotationStack it feeds) to drive the range-annotation backend; hosts that do build XLA
// use their own copy instead, and both follow the same contract.
#ifndef TENSORFLOW_TSL_PROFILER_LIB_SCOPED_ANNOTATION_H_
#define TENSORFLOW_TSL_PROFILER_LIB_SCOPED_ANNOTATION_H_

#include <atomic>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "tsl/profiler/lib/nvtx_utils.h"
#include "xla/tsl/profiler/backends/cpu/annotation_stack.h"

#if defined(__GNUC__)
#define ROCTX_UTILS_ALWAYS_INLINE __attribute__((always_inline))
#define ROCTX_UTILS_NOINLINE __attribute__((noinline))
#define ROCTX_UTILS_LIKELY(x) __builtin_expect(!!(x), 1)
#else
#define ROCTX_UTILS_ALWAYS_INLINE
#define ROCTX_UTILS_NOINLINE
#define ROCTX_UTILS_LIKELY(x) (x)
#endif

namespace tsl::profiler {
namespace scoped_annotation_internal {

// Adapts a generator's result to one of RangePush's overloads (const char* or
// const std::string&). std::string_view has no implicit conversion to either, so it is copied
// into a std::string (NUL-terminated), which lives until the end of the RangePush call.
inline const char* AsRangeName(const char* name) { return name; }
inline const std::string& AsRangeName(const std::string& name) { return name; }
inline std::string AsRangeName(std::string_view name) { return std::string(name); }

// Adapts a generator's result to AnnotationStack::PushAnnotation's std::string_view. A null
// C string becomes "" (as RangePush treats it) instead of undefined behaviour.
template <typename S>
std::string_view AsStackName(const S& name) {
  if constexpr (std::is_convertible_v<const S&, const char*>) {
    const char* text = name;
    return text != nullptr ? std::string_view(text) : std::string_view();
  } else {
    return static_cast<std::string_view>(name);
  }
}

}  // namespace scoped_annotation_internal

namespace scoped_annotation_internal {

// PushAnnotation once someone listens: `domain` as DefaultProfilerDomain() returned it, and
// AnnotationStack found enabled if it is null. Out of line, so that the check before it is
// all a call site inlines.
template <typename T>
ROCTX_UTILS_NOINLINE void PushListened(ProfilerDomainHandle domain, const T& generator) {
  if (domain != nullptr) {
    RangePush(domain, AsRangeName(generator()));
  } else {
    AnnotationStack::PushAnnotation(AsStackName(generator()));
  }
}

// RangePush of a range generator's result: a name as above, or an object with a RangePush
// overload of its own, found by argument-dependent lookup (as XLA's InstructionAnnotation).
template <typename R>
void PushRange(ProfilerDomainHandle domain, const R& range) {
  if constexpr (std::is_convertible_v<const R&, std::string_view> ||
                std::is_convertible_v<const R&, const char*>) {
    RangePush(domain, AsRangeName(range));
  } else {
    RangePush(domain, range);
  }
}

}  // namespace scoped_annotation_internal

// Adds an annotation, produced by `generator()`, to the calling thread until the matching
// PopAnnotation(). `generator` is called at most once, and only when someone is listening.
// Constrained to callables so that plain strings pick the overloads below. When nobody
// listens this is one DefaultProfilerDomain() call and one load, inlined into the caller
// (measured: 3.6 -> 2.8 ns per emission-off ScopedAnnotation, BENCHMARKS.md); compilers left
// the whole template out of line before.
template <typename T, std::enable_if_t<std::is_invocable_v<const T&>, int> = 0>
ROCTX_UTILS_ALWAYS_INLINE inline void PushAnnotation(const T& generator) {
  auto domain = DefaultProfilerDomain();
  if (ROCTX_UTILS_LIKELY(domain == nullptr && !AnnotationStack::IsEnabled())) return;
  scoped_annotation_internal::PushListened(domain, generator);
}

// Today's upstream form (openxla/xla main): `annotation_generator()` names the AnnotationStack
// entry, `range_generator()` the profiler range, e.g. a compact registered title with a
// payload. With a domain only the range is pushed, as upstream does (the ROCm backend mirrors
// it into AnnotationStack); without one, only the annotation. Each is called at most once.
template <typename A, typename R,
          std::enable_if_t<std::is_invocable_v<const A&> && std::is_invocable_v<const R&>, int> = 0>
ROCTX_UTILS_ALWAYS_INLINE inline void PushAnnotation(const A& annotation_generator,
                                                     const R& range_generator) {
  auto domain = DefaultProfilerDomain();
  if (ROCTX_UTILS_LIKELY(domain == nullptr && !AnnotationStack::IsEnabled())) return;
  if (domain != nullptr) {
    scoped_annotation_internal::PushRange(domain, range_generator());
  } else {
    AnnotationStack::PushAnnotation(scoped_annotation_internal::AsStackName(annotation_generator()));
  }
}

inline void PushAnnotation(const char* name) {
  PushAnnotation([&] { return name; });
}
inline void PushAnnotation(const std::string& name) {
  PushAnnotation([&]() -> const std::string& { return name; });
}
inline void PushAnnotation(std::string_view name) {
  PushAnnotation([&] { return name; });
}

// Ends the calling thread's innermost annotation started by PushAnnotation.
inline void PopAnnotation() {
  // Kept from upstream: orders the reads below after everything the annotated region did.
  std::atomic_thread_fence(std::memory_order_acquire);

  if (auto domain = DefaultProfilerDomain(); domain != nullptr) {
    RangePop(domain);
    return;
  }
  if (AnnotationStack::IsEnabled()) {
    AnnotationStack::PopAnnotation();
  }
}

// Annotates the calling thread for the lifetime of the object.
//
//   {
//     tsl::profiler::ScopedAnnotation annotation("my kernels");
//     LaunchKernel1();
//     LaunchKernel2();  // both attributed to "my kernels"
//   }
//
// Accepts const char*, std::string, std::string_view, or a callable returning one of them
// (called only when annotations are being collected):
//   ScopedAnnotation a([&] { return "step " + std::to_string(step); });
class ScopedAnnotation {
 public:
  template <typename T, std::enable_if_t<!std::is_same_v<std::decay_t<T>, ScopedAnnotation>,
                                         int> = 0>
  explicit ScopedAnnotation(T&& annotation) {
    PushAnnotation(std::forward<T>(annotation));
  }

  // Today's upstream form: one generator for the AnnotationStack, one for the range (see the
  // two-generator PushAnnotation).
  template <typename A, typename R>
  explicit ScopedAnnotation(A&& annotation_generator, R&& range_generator) {
    PushAnnotation(std::forward<A>(annotation_generator), std::forward<R>(range_generator));
  }

  // Pops the annotation pushed by the constructor.
  ~ScopedAnnotation() { PopAnnotation(); }

  ScopedAnnotation(const ScopedAnnotation&) = delete;
  ScopedAnnotation& operator=(const ScopedAnnotation&) = delete;
  ScopedAnnotation(ScopedAnnotation&&) = delete;
  ScopedAnnotation& operator=(ScopedAnnotation&&) = delete;

  static bool IsEnabled() { return AnnotationStack::IsEnabled(); }
};

}  // namespace tsl::profiler

#endif  // TENSORFLOW_TSL_PROFILER_LIB_SCOPED_ANNOTATION_H_
