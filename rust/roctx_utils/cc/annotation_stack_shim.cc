// The Rust emitter's only door into the host's AnnotationStack. Compiled against whichever
// //:annotation_stack provides xla/tsl/profiler/backends/cpu/annotation_stack.h (XLA's own, or
// the bundled compat copy), so the same Rust staticlib serves both.
#include "roctx_utils/detail/annotation_stack_shim.h"

#include "xla/tsl/profiler/backends/cpu/annotation_stack.h"

namespace roctx_utils::host {

bool annotation_stack_is_enabled() noexcept {
  return tsl::profiler::AnnotationStack::IsEnabled();
}

// The host's PushAnnotation may allocate; an exception must not cross into Rust, and a lost
// annotation is better than std::terminate in the host.
void annotation_stack_push(const char* name, std::size_t len) noexcept {
  try {
    tsl::profiler::AnnotationStack::PushAnnotation({name, len});
  } catch (...) {
  }
}

void annotation_stack_pop() noexcept {
  try {
    tsl::profiler::AnnotationStack::PopAnnotation();
  } catch (...) {
  }
}

}  // namespace roctx_utils::host
