/* roctx_utils' op scopes: per-op GPU kernel attribution and the per-op roofline report.
 *
 * Kernel dispatches are traced with device timestamps through rocprofiler-sdk (tool mode; see
 * docs/kernels.md). Each kernel is attributed to
 *   - the innermost ROCTX range open on the launching thread (no code change needed), and
 *   - the op scope open on that thread, if any: an op scope begun here with
 *     roctx_utils_op_begin() tags every kernel the thread launches until roctx_utils_op_end()
 *     or the next roctx_utils_op_begin().
 *
 * The report (one row per op invocation with its kernels in device-start order, in the schema
 * of llama.cpp's GGML_HIP_ROOFLINE profiler plus "schema_version") is written at exit to
 * $ROCTX_UTILS_ROOFLINE_OUT, else $GGML_ROOFLINE_OUT, or by roctx_utils_roofline_write().
 * `roctx roofline report.json` groups the ops and computes intensity and % of peak.
 *
 * When neither variable is set and kernel tracing is not running, every function here is a
 * no-op that returns its neutral value. Nothing here throws, unwinds or aborts.
 *
 * llama.cpp hosts use the ggml_cuda_roofline_* entry points instead (integrations/llama.cpp);
 * they feed the same machinery. */
#ifndef ROCTX_UTILS_ROOFLINE_H_
#define ROCTX_UTILS_ROOFLINE_H_

#include <stddef.h>
#include <stdint.h>

#include "roctx_utils/roctx_utils.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One source operand of an op. */
typedef struct roctx_utils_op_source {
  const char* type; /* type name (e.g. "q4_K"); NULL or "" for a null slot */
  int64_t ne[4];    /* shape */
  uint64_t bytes;   /* bytes read */
} roctx_utils_op_source;

/* What an op is, as the report shows it. Zero-initialize, set struct_size to
 * sizeof(roctx_utils_op_desc); fields past a caller's struct_size read as zero. Strings are
 * copied; the pointers need only live for the call. */
typedef struct roctx_utils_op_desc {
  uint64_t struct_size;
  const char* op;    /* op name, e.g. "MUL_MAT" (required; NULL or "" refuses the op) */
  const char* name;  /* node name, may be NULL */
  const char* dtype; /* destination type name */
  const char* quant; /* src[0]'s type name (weights of a matmul), may be NULL */
  int64_t ne[4];     /* destination shape */
  const roctx_utils_op_source* src; /* n_src sources (at most 16 kept) */
  uint32_t n_src;
  uint32_t n_op_params;             /* at most 16 kept */
  const int32_t* op_params;
  uint64_t bytes;     /* HBM traffic: destination + sources (a fused group: its external traffic) */
  uint64_t dst_bytes; /* destination bytes */
  uint64_t m, n, k;   /* matmul dimensions, 0 otherwise */
  uint64_t n_experts; /* MUL_MAT_ID: experts */
  uint64_t top_k;     /* MUL_MAT_ID: experts per token */
  const struct roctx_utils_op_desc* fused; /* a fused group's nodes, in graph order (or NULL) */
  uint32_t n_fused;                        /* at most 64 kept; 0 or >= 2 */
  uint32_t reserved;                       /* zero */
} roctx_utils_op_desc;

/* Begins an op scope on the calling thread (ending the one open there, if any). Returns the
 * invocation id (from 1), or 0 when nothing is traced or the descriptor is refused (counted). */
uint64_t roctx_utils_op_begin(const roctx_utils_op_desc* op);

/* Ends the calling thread's op scope; later kernels belong to no op (invocation 0). */
void roctx_utils_op_end(void);

/* MUL_MAT_ID: the distinct experts an invocation actually routed (0 = unknown). */
void roctx_utils_op_set_experts_used(uint64_t invocation, uint64_t experts);

/* Re-points the calling thread's current invocation at the fused group `group` (its `fused`
 * nodes, at least two). Returns 1 if it did, 0 otherwise. */
int roctx_utils_op_fuse(const roctx_utils_op_desc* group);

/* The GPU architecture the report names (e.g. "gfx942"). */
void roctx_utils_roofline_set_device(const char* arch);

/* Discards everything captured so far (after warm-up), after flushing the SDK's buffer; keeps
 * kernel names and the invocation counter. */
void roctx_utils_roofline_reset(void);

/* Flushes and writes the report to `path` (NULL: the configured path). Returns
 * ROCTX_UTILS_OK, ROCTX_UTILS_INVALID_ARGUMENT (no path), or ROCTX_UTILS_IO_ERROR (a message
 * on stderr names the path and the reason). */
int roctx_utils_roofline_write(const char* path);

/* The kernel stage's counters since the last reset; every loss has one. Zero-initialize and
 * set struct_size; the library writes no byte past it. */
typedef struct roctx_utils_kernel_stats {
  uint64_t struct_size;
  uint64_t dispatches;            /* GPU activities kept: kernels, memory copies and sets */
  uint64_t dropped_cap;           /* over the 2^21 kept between resets (lost) */
  uint64_t rejected_records;      /* not well-formed dispatch or symbol records (lost) */
  uint64_t sdk_dropped;           /* records rocprofiler-sdk says it dropped itself (lost) */
  uint64_t before_reset;          /* of ops begun before the last reset (warm-up, discarded) */
  uint64_t geometries_over_cap;   /* op scopes past the 2^16 distinct shapes (counted as no op) */
  uint64_t cut_descriptors;       /* op descriptors cut to the documented limits */
  uint64_t invocations_exhausted; /* op scopes past the 32-bit invocation space (no op) */
  uint64_t names_over_cap;        /* kernel symbols past the 2^20 names kept */
  uint64_t unjoined;              /* kernels not matched to their launch call (kept, no op/range) */
  uint64_t not_seen;              /* launch calls made while another profiler held CUPTI (lost) */
  uint64_t names_too_long;        /* kernel names kept mangled: demangled, over 64 KiB */
  uint64_t invocations_over_cap;  /* op scopes past the 2^21 kept between resets (no op) */
} roctx_utils_kernel_stats;

/* Flushes the SDK's buffer, then copies the counters into *out. Returns ROCTX_UTILS_OK or
 * ROCTX_UTILS_INVALID_ARGUMENT (out NULL or struct_size < 16). */
int roctx_utils_kernel_stats_get(roctx_utils_kernel_stats* out);

/* Sharing CUPTI's activity API (one per process) with another profiler in this process, which
 * the host starts and stops (XLA's tracer under jax.profiler, Kineto under torch.profiler; the
 * Python package calls these around both). rocprofiler-sdk gives every tool its own context, so
 * on ROCm both return ROCTX_UTILS_NOT_RUNNING and nothing is needed.
 *
 * handover, before the other profiler starts: every record CUPTI holds for us is delivered
 * now, our activity kinds are turned off, and we leave CUPTI alone until reclaim (without it,
 * only a cuptiFinalize of the other profiler, seen within 5 ms, gives CUPTI back).
 * Returns ROCTX_UTILS_OK, or ROCTX_UTILS_NOT_RUNNING when kernels are not traced through CUPTI.
 *
 * reclaim, after it stopped: CUPTI is ours again as soon as nobody traces, i.e. CUPTI accepts
 * our clock (no activity kind enabled): now, or later when the other profiler finalizes.
 * Returns ROCTX_UTILS_OK when traced by us again now, else ROCTX_UTILS_NOT_RUNNING. */
int roctx_utils_kernels_handover(void);
int roctx_utils_kernels_reclaim(void);

ROCTX_UTILS_ASSERT_SIZE(roctx_utils_kernel_stats, 112);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_kernel_stats, dispatches, 8);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_kernel_stats, names_over_cap, 72);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_kernel_stats, unjoined, 80);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_kernel_stats, not_seen, 88);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_kernel_stats, names_too_long, 96);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_kernel_stats, invocations_over_cap, 104);
ROCTX_UTILS_ASSERT_SIZE(roctx_utils_op_source, 48);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_op_source, ne, 8);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_op_source, bytes, 40);
ROCTX_UTILS_ASSERT_SIZE(roctx_utils_op_desc, 168);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_op_desc, op, 8);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_op_desc, quant, 32);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_op_desc, ne, 40);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_op_desc, src, 72);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_op_desc, n_src, 80);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_op_desc, n_op_params, 84);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_op_desc, op_params, 88);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_op_desc, bytes, 96);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_op_desc, m, 112);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_op_desc, top_k, 144);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_op_desc, fused, 152);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_op_desc, n_fused, 160);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ROCTX_UTILS_ROOFLINE_H_
