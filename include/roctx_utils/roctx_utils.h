/* roctx_utils' own small, stable C surface (C and C++), beside the drop-in nvtx_utils.h.
 *
 *   roctx_utils_annotation_*   an annotation object for hosts that cannot use a C++ scope
 *                              (Python via ctypes, llama.cpp, JAX's TraceAnnotation pattern):
 *                              create pushes, stop pops exactly once, destroy stops first.
 *   roctx_utils_roctx_*        which roctx library was loaded, for diagnostics and tests.
 *   roctx_utils_counters       what the library counted instead of failing (never aborts).
 *
 * Every function is safe with no ROCm present and never throws or unwinds. */
#ifndef ROCTX_UTILS_ROCTX_UTILS_H_
#define ROCTX_UTILS_ROCTX_UTILS_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An open annotation. Push/pop are per thread (as roctx ranges are): stop or destroy it on the
 * thread that created it. */
typedef struct roctx_utils_annotation roctx_utils_annotation;

/* Opens an annotation named `name` (NULL means ""), routed like ScopedAnnotation: with
 * emission enabled (non-null DefaultProfilerDomain) through RangePush, i.e. AnnotationStack +
 * roctx; otherwise into AnnotationStack only, if it is enabled; otherwise nowhere. Returns a
 * handle to pass to stop/destroy; NULL only if memory is exhausted (stop/destroy accept NULL). */
roctx_utils_annotation* roctx_utils_annotation_create(const char* name);

/* Closes the annotation; only the first call pops, later calls do nothing. */
void roctx_utils_annotation_stop(roctx_utils_annotation* annotation);

/* Stops the annotation if still open, then frees it. The handle is invalid afterwards. */
void roctx_utils_annotation_destroy(roctx_utils_annotation* annotation);

/* How the roctx library search ended. Loading happens on first use (or on this call). */
typedef enum roctx_utils_roctx_state {
  ROCTX_UTILS_ROCTX_MISSING = 0,    /* nothing loadable was found; ranges reach AnnotationStack only */
  ROCTX_UTILS_ROCTX_SDK = 1,        /* librocprofiler-sdk-roctx (or an explicit path): all functions */
  ROCTX_UTILS_ROCTX_LEGACY = 2,     /* roctracer's libroctx64: core functions only, no naming */
} roctx_utils_roctx_state;

/* Loads roctx if not yet attempted and reports the outcome. */
roctx_utils_roctx_state roctx_utils_roctx_state_get(void);

/* Path or soname of the loaded roctx library, or NULL when none; valid for the process. */
const char* roctx_utils_roctx_library(void);

/* Things counted instead of failing. Monotonic for the process. */
typedef struct roctx_utils_counters {
  uint64_t strings_interned;   /* distinct RegisterString entries */
  uint64_t string_pool_bytes;  /* bytes held by the pool, NULs included */
  uint64_t strings_truncated;  /* RegisterString inputs cut to 4096 bytes */
  uint64_t strings_rejected;   /* RegisterString calls answered with the pool-exhausted sentinel */
  uint64_t null_streams;       /* NameStream calls with a null stream (not passed on) */
  uint64_t panics_caught;      /* internal errors contained at the FFI boundary */
} roctx_utils_counters;

/* Fills `out` (ignored when NULL). */
void roctx_utils_counters_get(roctx_utils_counters* out);

#ifdef __cplusplus
}  /* extern "C" */

namespace roctx_utils {

/* RAII/explicit-stop wrapper over roctx_utils_annotation: the constructor pushes, Stop() pops
 * exactly once, the destructor calls Stop(). So an object used without a scope still pops, and
 * a scope exit plus destruction never double-pops. Movable, not copyable. */
class Annotation {
 public:
  explicit Annotation(const char* name) : handle_(roctx_utils_annotation_create(name)) {}
  Annotation(const Annotation&) = delete;
  Annotation& operator=(const Annotation&) = delete;
  Annotation(Annotation&& other) noexcept : handle_(other.handle_) { other.handle_ = nullptr; }
  Annotation& operator=(Annotation&& other) noexcept {
    if (this != &other) {
      roctx_utils_annotation_destroy(handle_);
      handle_ = other.handle_;
      other.handle_ = nullptr;
    }
    return *this;
  }
  ~Annotation() { roctx_utils_annotation_destroy(handle_); }

  /* Pops the annotation if it is still open; idempotent. */
  void Stop() { roctx_utils_annotation_stop(handle_); }

 private:
  roctx_utils_annotation* handle_;
};

}  // namespace roctx_utils
#endif  /* __cplusplus */

#endif  /* ROCTX_UTILS_ROCTX_UTILS_H_ */
