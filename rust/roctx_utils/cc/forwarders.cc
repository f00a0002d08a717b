// The drop-in functions whose signatures cxx cannot express (it has no `const void*`): each
// defines the exact public signature and forwards to the Rust bridge. This file must not
// include nvtx_utils.h: cxx declares the bridged functions noexcept and the public header
// does not, so the two must never meet in one translation unit (mangling ignores noexcept).
#include <cstddef>
#include <cstdint>

#include "roctx_utils/src/abi/bridge.rs.h"
#include "tsl/profiler/lib/roctx_types.h"

namespace tsl::profiler {
namespace detail {

void RangePush(ProfilerDomainHandle domain, StringHandle title, uint64_t /*schema_id*/,
               const void* /*payload*/, size_t /*payload_size*/) {
  ::roctx_utils::bridge::range_push_title(domain, title);
}

void RangePush(ProfilerDomainHandle domain, StringHandle title, const char* title_text,
               uint64_t /*schema_id*/, const void* /*payload*/, size_t /*payload_size*/) {
  ::roctx_utils::bridge::range_push_title_text(domain, title, title_text);
}

}  // namespace detail

uint64_t RegisterSchema(ProfilerDomainHandle domain, const void* /*schemaAttr*/) {
  return ::roctx_utils::bridge::register_schema(domain);
}

void MarkMemoryInitialized(const void* /*address*/, size_t size, StreamHandle stream) {
  ::roctx_utils::bridge::mark_memory_initialized(size, stream);
}

}  // namespace tsl::profiler
