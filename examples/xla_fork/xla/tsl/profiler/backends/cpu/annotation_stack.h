// The example fork's AnnotationStack: XLA's interface (xla/tsl/profiler/backends/cpu/
// annotation_stack.h), a minimal body, and one addition of the fork's own (PushCount) that lets
// the test prove roctx_utils pushed into this stack and not into its bundled copy.
#ifndef XLA_TSL_PROFILER_BACKENDS_CPU_ANNOTATION_STACK_H_
#define XLA_TSL_PROFILER_BACKENDS_CPU_ANNOTATION_STACK_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace tsl::profiler {

class AnnotationStack {
 public:
  static void PushAnnotation(std::string_view name);
  static void PopAnnotation();
  static const std::string& Get();
  static void Enable(bool enable);
  static bool IsEnabled();

  // The fork's own: pushes since the process started, all threads.
  static int64_t PushCount();
};

}  // namespace tsl::profiler

#endif  // XLA_TSL_PROFILER_BACKENDS_CPU_ANNOTATION_STACK_H_
