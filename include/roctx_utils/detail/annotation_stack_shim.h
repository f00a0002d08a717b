// Internal: the Rust emitter's view of the host's AnnotationStack (whichever //:annotation_stack
// selects). Kept to plain types so the cxx bridge can call it; never include from host code.
#ifndef ROCTX_UTILS_DETAIL_ANNOTATION_STACK_SHIM_H_
#define ROCTX_UTILS_DETAIL_ANNOTATION_STACK_SHIM_H_

#include <cstddef>

namespace roctx_utils::host {

bool annotation_stack_is_enabled() noexcept;
void annotation_stack_push(const char* name, std::size_t len) noexcept;
void annotation_stack_pop() noexcept;

}  // namespace roctx_utils::host

#endif  // ROCTX_UTILS_DETAIL_ANNOTATION_STACK_SHIM_H_
