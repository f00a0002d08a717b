// The drop-in functions whose signatures cxx cannot express (it has no `const void*`),
// DefaultProfilerDomain, answered here once latched, and the per-thunk RangePush/RangePop, which
// read AnnotationStack's switch here: each defines the exact public signature and forwards to
// the Rust bridge. This file must not
// include nvtx_utils.h: cxx declares the bridged functions noexcept and the public header
// does not, so the two must never meet in one translation unit (mangling ignores noexcept).
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "roctx_utils/src/abi/bridge.rs.h"
#include "tsl/profiler/lib/roctx_types.h"
#include "xla/tsl/profiler/backends/cpu/annotation_stack.h"

// rust/roctx_utils/src/abi/bridge.rs: plain C entries for the hottest calls (see RangePush).
extern "C" void roctx_utils_bridge_range_push(const char* ascii, bool stack) noexcept;
extern "C" void roctx_utils_bridge_range_push_title(const char* title, bool stack) noexcept;
extern "C" void roctx_utils_bridge_range_push_title_text(const char* title, const char* title_text, bool stack) noexcept;
extern "C" void roctx_utils_bridge_range_pop(bool stack) noexcept;

namespace tsl::profiler {
namespace {

// Stands for "not asked yet" (the domain itself may be null); never a real domain.
char unknown_domain;
std::atomic<ProfilerDomainHandle> latched_domain{reinterpret_cast<ProfilerDomainHandle>(&unknown_domain)};

}  // namespace

// The emission switch is read once and latched for the process, so after the first call the
// answer never changes: it is kept here and returned with one relaxed load, without crossing
// into Rust. An emission-off ScopedAnnotation asks twice (push and pop), and XLA wraps every
// thunk in one, so this is most of what annotations cost when nobody listens (BENCHMARKS.md).
// Two threads racing on the first call both ask Rust and store the same value.
ProfilerDomainHandle DefaultProfilerDomain() {
  ProfilerDomainHandle domain = latched_domain.load(std::memory_order_relaxed);
  if (__builtin_expect(domain != reinterpret_cast<ProfilerDomainHandle>(&unknown_domain), 1)) return domain;
  domain = ::roctx_utils::bridge::default_profiler_domain();
  latched_domain.store(domain, std::memory_order_relaxed);
  return domain;
}

// XLA's calls per thunk (these two and detail::RangePush below). AnnotationStack::IsEnabled()
// is read here, where XLA's header makes it one inline load, instead of by a call from Rust
// back into C++; and the Rust entries are plain C functions (each catches panics), without a
// cxx shim's frame. Together 19 instructions per pair fewer, with a runtime label or a
// registered title (callgrind; issue 44, BENCHMARKS.md).
void RangePush(ProfilerDomainHandle /*domain*/, const char* ascii) {
  roctx_utils_bridge_range_push(ascii, AnnotationStack::IsEnabled());
}

void RangePop(ProfilerDomainHandle /*domain*/) {
  roctx_utils_bridge_range_pop(AnnotationStack::IsEnabled());
}

namespace detail {

// A title is our RegisterString's handle: its address is its NUL-terminated text.
void RangePush(ProfilerDomainHandle /*domain*/, StringHandle title, uint64_t /*schema_id*/,
               const void* /*payload*/, size_t /*payload_size*/) {
  roctx_utils_bridge_range_push_title(reinterpret_cast<const char*>(title), AnnotationStack::IsEnabled());
}

void RangePush(ProfilerDomainHandle /*domain*/, StringHandle title, const char* title_text,
               uint64_t /*schema_id*/, const void* /*payload*/, size_t /*payload_size*/) {
  roctx_utils_bridge_range_push_title_text(reinterpret_cast<const char*>(title), title_text,
                                           AnnotationStack::IsEnabled());
}

}  // namespace detail

uint64_t RegisterSchema(ProfilerDomainHandle domain, const void* /*schemaAttr*/) {
  return ::roctx_utils::bridge::register_schema(domain);
}

void MarkMemoryInitialized(const void* /*address*/, size_t size, StreamHandle stream) {
  ::roctx_utils::bridge::mark_memory_initialized(size, stream);
}

}  // namespace tsl::profiler
