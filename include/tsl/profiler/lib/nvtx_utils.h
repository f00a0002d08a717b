/* The tsl::profiler range-annotation interface, as XLA/TSL call it (`nvtx_utils.h`, as in
 * openxla/xla main and ROCm's jaxlib branches). Declarations and their contracts only.
 *
 * Exactly one backend defines these functions in a link:
 *   - //:roctx_utils_impl  ROCm: AnnotationStack + roctx (loaded at run time), this project;
 *   - //:nvtx_utils_stub   no-op.
 * Callers must not depend on which one is linked. Every function is safe to call from any
 * thread at any time, including before main() and with no ROCm installed; "neutral result"
 * below is what a call returns when no profiler or roctx library is present.
 *
 * ROCm backend summary (details in docs/emitter.md):
 *   - Emission is opt-in: XLA_ROCM_ENABLE_ROCTX=1|true (ASCII case-insensitive) makes
 *     DefaultProfilerDomain() non-null; 0|false or unset keeps it null; any other value logs
 *     one warning and keeps it null. Read once, latched for the process.
 *   - RangePush/RangePop push into the host's AnnotationStack (when it is enabled) and into
 *     roctx, whatever the domain value.
 *   - roctx is dlopen'ed, never linked: $ROCTX_UTILS_ROCTX_LIBRARY, then
 *     librocprofiler-sdk-roctx.so.1, .so.0, then legacy libroctx64.so.4 (each also under
 *     $ROCM_PATH/lib and /opt/rocm/lib). Without it, everything else keeps working. */
#ifndef TENSORFLOW_TSL_PROFILER_LIB_NVTX_UTILS_H_
#define TENSORFLOW_TSL_PROFILER_LIB_NVTX_UTILS_H_

#include <stddef.h>

#include <cstdint>
#include <string>

#include "tsl/profiler/lib/roctx_types.h"

namespace tsl::profiler {

/* Non-null iff range emission is enabled; stable for the whole process (callers read it
 * separately at push and at pop). Opaque: never dereference it. A non-null domain tells
 * ScopedAnnotation to call RangePush/RangePop instead of AnnotationStack directly; the ROCm
 * backend then pushes AnnotationStack itself. Neutral result: nullptr. */
ProfilerDomainHandle DefaultProfilerDomain();

/* Names the calling OS thread in the profiler (roctxNameOsThread). Neutral: no-op. */
void NameCurrentThread(const std::string& name);

/* Names a HIP device ordinal (roctxNameHipDevice). Neutral: no-op. */
void NameDevice(int device_id, const std::string& device_name);

/* Names a HIP stream (roctxNameHipStream); `stream` is a hipStream_t. A null stream is
 * reported once and ignored. Neutral: no-op. */
void NameStream(StreamHandle stream, const std::string& stream_name);

/* Interns `str` and returns a handle valid for the process lifetime; the caller's string need
 * not outlive the call. Works with a null domain. Equal strings get one handle. In the ROCm
 * backend the handle points at a NUL-terminated copy (at most 4096 bytes; longer strings end
 * in "...[truncated]"); once the pool cap is reached, new strings get a visible sentinel.
 * Neutral (stub): nullptr. */
StringHandle RegisterString(ProfilerDomainHandle domain, const std::string& str);

/* Ends the innermost range that RangePush opened on the calling thread. Neutral: no-op. */
void RangePop(ProfilerDomainHandle domain);

/* Opens a range named `ascii` on the calling thread; the text is copied (or consumed) before
 * return. A null `ascii` opens a range named "" so the matching pop stays balanced.
 * Neutral: no-op. */
void RangePush(ProfilerDomainHandle domain, const char* ascii);

inline void RangePush(ProfilerDomainHandle domain, const std::string& str) {
  RangePush(domain, str.c_str());
}

namespace detail {

/* Opens a range titled by a RegisterString handle. `title` may be null (an empty title), and
 * the range is still opened so the pop stays balanced. Backends without structured payloads
 * (ROCm) drop `schema_id` and `payload`. Neutral: no-op. */
void RangePush(ProfilerDomainHandle domain, StringHandle title, uint64_t schema_id,
               const void* payload, size_t payload_size);

/* The older (title_text) generation of the same call, exported so hosts built against either
 * upstream header link. The ROCm backend pushes `title_text`, else the handle's text, else "". */
void RangePush(ProfilerDomainHandle domain, StringHandle title, const char* title_text,
               uint64_t schema_id, const void* payload, size_t payload_size);

}  // namespace detail

/* `Annotation` provides NvtxSchemaId(); its bytes are offered as the range payload. */
template <typename Annotation>
void RangePush(ProfilerDomainHandle domain, StringHandle title, const Annotation& annotation) {
  return detail::RangePush(domain, title, annotation.NvtxSchemaId(), &annotation,
                           sizeof(Annotation));
}

template <typename Annotation>
void RangePush(ProfilerDomainHandle domain, StringHandle title, const char* title_text,
               const Annotation& annotation) {
  return detail::RangePush(domain, title, title_text, annotation.NvtxSchemaId(), &annotation,
                           sizeof(Annotation));
}

/* Registers a payload schema. Backends without payload support (ROCm, stub) return 0. */
uint64_t RegisterSchema(ProfilerDomainHandle domain, const void* schemaAttr);

/* CUDA compute-sanitizer initcheck workaround; a permanent no-op on ROCm and in the stub. */
void MarkMemoryInitialized(const void* address, size_t size, StreamHandle stream);

}  // namespace tsl::profiler

#endif  // TENSORFLOW_TSL_PROFILER_LIB_NVTX_UTILS_H_
