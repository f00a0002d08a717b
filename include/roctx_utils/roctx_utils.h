/* roctx_utils' own small, stable C surface (C and C++), beside the drop-in nvtx_utils.h.
 *
 *   roctx_utils_annotation_*   an annotation object for hosts that cannot use a C++ scope
 *                              (Python via ctypes, llama.cpp, JAX's TraceAnnotation pattern):
 *                              create pushes, stop pops exactly once, destroy stops first.
 *   roctx_utils_mark / roctx_utils_range_push/pop / roctx_utils_range_start/stop
 *                              instants, explicit per-thread ranges, and ranges that may end
 *                              on another thread.
 *   roctx_utils_session_*      capture sessions: ROCTX ranges and marks collected through
 *   roctx_utils_snapshot_*     rocprofiler-sdk (tool mode), the host's own tracer (host-fed) or
 *   roctx_utils_listener_feed  in-process, into bounded per-thread buffers; a snapshot per session.
 *   roctx_utils_roctx_*        which roctx library was loaded, for diagnostics and tests.
 *   roctx_utils_counters       what the library counted instead of failing (never aborts).
 *
 * Every function is safe with no ROCm present and never throws or unwinds.
 *
 * Structs the library fills (counters, event, capture_stats, buffer) and the one it reads
 * (session_options) start with `uint64_t struct_size`: zero-initialize, set it to
 * sizeof(the struct), then pass it. The library reads or writes only that many bytes, so code
 * compiled against this header keeps working when later versions append fields. Each struct's
 * size and offsets (LP64) are checked below with static asserts. */
#ifndef ROCTX_UTILS_ROCTX_UTILS_H_
#define ROCTX_UTILS_ROCTX_UTILS_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define ROCTX_UTILS_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define ROCTX_UTILS_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif
/* Checks `offsetof(type, field) == offset`. */
#define ROCTX_UTILS_ASSERT_OFFSET(type, field, offset) \
  ROCTX_UTILS_STATIC_ASSERT(offsetof(type, field) == (offset), #type "." #field " moved")
/* Checks `sizeof(type) == size`. */
#define ROCTX_UTILS_ASSERT_SIZE(type, size) \
  ROCTX_UTILS_STATIC_ASSERT(sizeof(type) == (size), #type " changed size")

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
  uint64_t struct_size;        /* sizeof(roctx_utils_counters), set by the caller */
  uint64_t strings_interned;   /* distinct RegisterString entries */
  uint64_t string_pool_bytes;  /* bytes held by the pool, NULs included */
  uint64_t strings_truncated;  /* RegisterString inputs cut to 4096 bytes */
  uint64_t strings_rejected;   /* RegisterString calls answered with the pool-exhausted sentinel */
  uint64_t null_streams;       /* NameStream calls with a null stream (not passed on) */
  uint64_t panics_caught;      /* internal errors contained at the FFI boundary */
} roctx_utils_counters;

/* Fills `out` (struct_size set by the caller). ROCTX_UTILS_INVALID_ARGUMENT when `out` is NULL
 * or its struct_size covers no counter. */
int roctx_utils_counters_get(roctx_utils_counters* out);

/* ---- instants, per-thread ranges and cross-thread ranges ---- */

/* roctxMarkA(name), also recorded by an in-process session. NULL means "" (not recorded). */
void roctx_utils_mark(const char* name);

/* roctxRangePushA(name): opens a range on the calling thread's stack, whatever
 * XLA_ROCM_ENABLE_ROCTX says: an explicit annotation, as roctx_utils_mark is (Python's
 * roctx_utils.annotate, torch.cuda.nvtx.range_push's twin). Also recorded by an in-process
 * session, and pushed on AnnotationStack when that is enabled. NULL means "" (not recorded).
 * Close it with roctx_utils_range_pop on the same thread. */
void roctx_utils_range_push(const char* name);

/* roctxRangePop(): closes the calling thread's innermost range (a pop with none open is counted
 * by a session, never fatal). */
void roctx_utils_range_pop(void);

/* roctxRangeStartA(name): a range that may be stopped on any thread. Returns its id (roctx's
 * when a library is bound, else our own counter; never 0 unless an internal error occurred). */
uint64_t roctx_utils_range_start(const char* name);

/* roctxRangeStop(id), from any thread. */
void roctx_utils_range_stop(uint64_t id);

/* ---- capture sessions ---- */

typedef enum roctx_utils_status {
  ROCTX_UTILS_OK = 0,
  ROCTX_UTILS_ALREADY_RUNNING = 1,
  ROCTX_UTILS_NOT_RUNNING = 2,
  ROCTX_UTILS_INVALID_ARGUMENT = 3,
  ROCTX_UTILS_IO_ERROR = 4,
  ROCTX_UTILS_PENDING = 5, /* asked for and not done yet: roctx_utils_flush's wait ran out */
  ROCTX_UTILS_INTERNAL_ERROR = -1,
} roctx_utils_status;

/* How a session captures. DEFAULT follows env ROCTX_UTILS_CAPTURE (auto|sdk|self|host|off;
 * unset = auto). AUTO uses rocprofiler-sdk when we can own it and the bound roctx reports to
 * it, else in-process. SDK falls back to in-process with a warning when the SDK is missing,
 * locked by another tool (rocprofv3) or of an unknown version. */
typedef enum roctx_utils_capture_mode {
  ROCTX_UTILS_CAPTURE_DEFAULT = 0,
  ROCTX_UTILS_CAPTURE_AUTO = 1,
  ROCTX_UTILS_CAPTURE_SDK = 2,
  ROCTX_UTILS_CAPTURE_IN_PROCESS = 3,
  ROCTX_UTILS_CAPTURE_HOST = 4,
  ROCTX_UTILS_CAPTURE_OFF = 5,
} roctx_utils_capture_mode;

/* Zero-initialize, set struct_size = sizeof(roctx_utils_session_options), then the fields you
 * need; 0 keeps a default. */
typedef struct roctx_utils_session_options {
  uint64_t struct_size;
  uint32_t mode;                        /* roctx_utils_capture_mode */
  uint32_t reserved;
  uint64_t max_events_per_thread;       /* default 1 Mi; more are dropped and counted */
  uint64_t max_label_bytes_per_thread;  /* default 16 MiB; labels are stored once per thread */
} roctx_utils_session_options;

/* Starts a session (NULL options = defaults). Threads join lazily, at their next event. */
int roctx_utils_session_start(const roctx_utils_session_options* options);

/* The mode the running (or last) session actually uses: 0 off, 1 SDK, 2 host-fed, 3 in-process. */
uint32_t roctx_utils_capture_mode_get(void);

typedef struct roctx_utils_snapshot roctx_utils_snapshot;

/* Stops the session; *out receives its snapshot (free with roctx_utils_snapshot_free). Push/pop
 * ranges still open now are dropped and counted (open_at_stop), not closed at the stop time. */
int roctx_utils_session_stop(roctx_utils_snapshot** out);

/* Writes what was captured so far to the configured outputs now, as SIGUSR1 does: the running
 * automatic session's XSpace (ROCTX_UTILS_XSPACE_OUT; one file per session, replaced whole by each
 * snapshot and by the final write) and the roofline report (its path, replaced whole), each
 * marked as a snapshot. The library's own thread writes; this call asks it and waits, at most
 * 10 s. OK when something was written; NOT_RUNNING when there is nothing to write (no output
 * set, the library not started yet, a fork() child, the process exiting); PENDING when the wait
 * ran out (the write happens when it can). Async-signal-safe: a signal handler may call it (it
 * never starts the library, takes no lock and allocates nothing; from a handler that interrupted
 * a thread holding a lock the write needs, it returns PENDING after the wait). */
int roctx_utils_flush(void);

/* Capture windows (ROCTX_UTILS_CAPTURE_RANGE=profiler-api; `roctx record --capture-range=profiler-api`,
 * docs/record.md): the automatic session records only between a start and the next stop, each
 * window written as a session of its own. cudaProfilerStart/Stop, hipProfilerStart/Stop (where the
 * library is preloaded, as roctx record does) and roctxProfilerResume/Pause(0) (rocprofiler-sdk)
 * do the same. start: OK when a window opened; ALREADY_RUNNING when one is open; NOT_RUNNING when
 * the profiler API's windows are not configured (no output, another capture range, the delay not
 * over, or no more windows allowed by ROCTX_UTILS_CAPTURE_RANGE_END). stop: OK when a window
 * closed (its ranges still open end here, with a mark); NOT_RUNNING when none was open. */
int roctx_utils_capture_start(void);
int roctx_utils_capture_stop(void);

/* What the running session captured so far, without stopping it. */
roctx_utils_snapshot* roctx_utils_session_snapshot(void);

void roctx_utils_snapshot_free(roctx_utils_snapshot* snapshot);

/* Events are sorted by (tid, start_ns, longest first). */
size_t roctx_utils_snapshot_event_count(const roctx_utils_snapshot* snapshot);

typedef enum roctx_utils_event_kind {
  ROCTX_UTILS_EVENT_RANGE = 0,          /* push/pop on one thread */
  ROCTX_UTILS_EVENT_MARK = 1,           /* start_ns == end_ns */
  ROCTX_UTILS_EVENT_PROCESS_RANGE = 2,  /* start/stop; end_tid may differ from tid */
} roctx_utils_event_kind;

typedef struct roctx_utils_event {
  uint64_t struct_size; /* sizeof(roctx_utils_event), set by the caller */
  uint32_t kind;       /* roctx_utils_event_kind */
  uint32_t depth;      /* nesting depth at push (0 = outermost) */
  uint64_t tid;        /* OS thread id that opened it */
  uint64_t end_tid;    /* OS thread id that closed it */
  uint64_t start_ns;   /* CLOCK_BOOTTIME, the clock of rocprofiler-sdk's records */
  uint64_t end_ns;
  const char* label;   /* NOT NUL-terminated: use label_len; valid until the snapshot is freed */
  size_t label_len;
} roctx_utils_event;

/* Fills `out` (struct_size set by the caller, the whole struct) with event `index`.
 * ROCTX_UTILS_INVALID_ARGUMENT for a NULL argument, an index past the end or a short struct. */
int roctx_utils_snapshot_event(const roctx_utils_snapshot* snapshot, size_t index, roctx_utils_event* out);

/* Every event seen but not recorded is counted in exactly one of these (truncated_labels counts
 * recorded events). The counters are
 * roctx_collector's `Stats`, in its declaration order (a test checks this header against it). */
typedef struct roctx_utils_capture_stats {
  uint64_t struct_size;             /* sizeof(roctx_utils_capture_stats), set by the caller */
  uint64_t recorded;
  uint64_t dropped_event_cap;       /* over max_events_per_thread */
  uint64_t dropped_label_cap;       /* over max_label_bytes_per_thread */
  uint64_t dropped_too_deep;        /* nested deeper than 256 (nesting stays balanced) */
  uint64_t dropped_empty_label;     /* NULL or "" label */
  uint64_t unmatched_pops;          /* pop with nothing open */
  uint64_t unmatched_stops;         /* range_stop of an unknown id */
  uint64_t begun_outside_session;   /* pushed before the session started, or unseen */
  uint64_t paused;                  /* suppressed by roctxProfilerPause */
  uint64_t open_at_stop;            /* push/pop ranges still open at stop */
  uint64_t process_ranges_open_at_stop;
  uint64_t open_at_thread_exit;     /* ranges open when their thread exited */
  uint64_t rejected_records;        /* malformed or unsupported SDK/host records */
  /* Appended later: a caller built against an older header gets what its struct_size covers. */
  uint64_t dropped_open_range_cap;  /* start/stop ranges over 65536 open at once */
  uint64_t after_thread_exit;       /* emitted in thread teardown, after the thread's buffer */
  uint64_t truncated_labels;        /* events kept with their label cut to 4096 bytes */
} roctx_utils_capture_stats;

/* Fills `out` (struct_size set by the caller). ROCTX_UTILS_INVALID_ARGUMENT for a NULL argument
 * or a struct_size that covers no counter. */
int roctx_utils_snapshot_stats(const roctx_utils_snapshot* snapshot, roctx_utils_capture_stats* out);

/* Copies thread `tid`'s name (from roctxNameOsThread / NameCurrentThread) into buf
 * (NUL-terminated, truncated to cap) and returns its full length; 0 if unnamed. */
size_t roctx_utils_snapshot_thread_name(const roctx_utils_snapshot* snapshot, uint64_t tid, char* buf, size_t cap);

/* Copies the label of the innermost range open on the calling thread in the running session
 * (what a kernel launched now is attributed to) into buf, NUL-terminated and truncated to cap;
 * returns its full length, 0 when none is open. */
size_t roctx_utils_current_label(char* buf, size_t cap);

/* Host-fed mode: call from your own rocprofiler-sdk MARKER_CORE_API (or CONTROL/NAME, or 7.x
 * CORE_RANGE) callback with the record you received (&record, sizeof(record)) and the SDK
 * version your rocprofiler_configure was given. Recorded only while a session runs in HOST
 * mode. Returns 0 accepted, 1 not capturing, -1 rejected (unknown version, wrong size,
 * malformed payload; counted in rejected_records). */
int roctx_utils_listener_feed(const void* record, size_t record_size, uint32_t sdk_version);

/* ---- export (XSpace for TensorBoard/XProf, Chrome JSON) ----
 * Env ROCTX_UTILS_XSPACE_OUT=<logdir> does all of this with no code: a session starts with the
 * first range and is written to <logdir>/plugins/profile/<run>/<host>_rank<n>.xplane.pb (the
 * launcher's rank; <host>_pid<pid> without one) at stop or exit, <run> being ROCTX_UTILS_RUN_NAME,
 * else the launcher's job id, else the UTC time (README, Multi-GPU and multi-node jobs). Each
 * stopped session is a new file: an existing one is never replaced. */

/* Bytes owned by roctx_utils; release with roctx_utils_buffer_free. Set struct_size before
 * passing one to be filled (the whole struct: a short one is INVALID_ARGUMENT). */
typedef struct roctx_utils_buffer {
  uint64_t struct_size; /* sizeof(roctx_utils_buffer), set by the caller */
  uint8_t* data;
  size_t len;
} roctx_utils_buffer;

void roctx_utils_buffer_free(roctx_utils_buffer* buffer);

/* The snapshot as a serialized XPlane named "/host:ROCTX" (one line "Host Threads/<tid>/ROCTX"
 * per thread, nvtx_range stats), for a host that assembles its own XSpace and merges it with
 * its post-processing. Timestamps are wall-clock ns, like XLA's host planes. */
int roctx_utils_snapshot_roctx_plane(const roctx_utils_snapshot* snapshot, roctx_utils_buffer* out);

/* Merges the snapshot into a serialized XSpace (len 0 = an empty one): the ROCTX plane is merged
 * into /host:CPU as XLA's post-processing does, and rows are numbered so XProf draws every ROCTX
 * line in its own row right below its thread. Drops and caps are added to XSpace.warnings.
 * INVALID_ARGUMENT if the input is not an XSpace. */
int roctx_utils_merge_into_xspace(const uint8_t* xspace, size_t xspace_len,
                                  const roctx_utils_snapshot* snapshot, roctx_utils_buffer* out);

/* Writes <logdir>/plugins/profile/<run>/<host>.xplane.pb, or <host>-2.xplane.pb, ... when the name
 * is taken: never replaces a file (run NULL = current UTC time,
 * YYYY_MM_DD_hh_mm_ss) and copies the file's path into path_out (may be NULL). run follows the
 * rules of ROCTX_UTILS_RUN_NAME: one directory name, anything but [A-Za-z0-9._+=@-] replaced and
 * a hash of the original appended ("a/b" -> "a_b-<8 hex>"); "", "." and ".." are
 * INVALID_ARGUMENT. */
int roctx_utils_snapshot_write_logdir(const roctx_utils_snapshot* snapshot, const char* logdir,
                                      const char* run, char* path_out, size_t cap);

/* Writes Chrome trace-event JSON (chrome://tracing, Perfetto) to path. */
int roctx_utils_snapshot_write_chrome(const roctx_utils_snapshot* snapshot, const char* path);

/* ---- layouts (LP64): what the Rust mirrors in rust/roctx_utils/src/abi/c_api.rs assume ---- */

ROCTX_UTILS_ASSERT_SIZE(roctx_utils_counters, 56);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_counters, struct_size, 0);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_counters, strings_interned, 8);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_counters, string_pool_bytes, 16);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_counters, strings_truncated, 24);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_counters, strings_rejected, 32);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_counters, null_streams, 40);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_counters, panics_caught, 48);

ROCTX_UTILS_ASSERT_SIZE(roctx_utils_session_options, 32);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_session_options, struct_size, 0);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_session_options, mode, 8);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_session_options, reserved, 12);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_session_options, max_events_per_thread, 16);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_session_options, max_label_bytes_per_thread, 24);

ROCTX_UTILS_ASSERT_SIZE(roctx_utils_event, 64);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_event, struct_size, 0);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_event, kind, 8);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_event, depth, 12);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_event, tid, 16);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_event, end_tid, 24);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_event, start_ns, 32);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_event, end_ns, 40);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_event, label, 48);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_event, label_len, 56);

ROCTX_UTILS_ASSERT_SIZE(roctx_utils_capture_stats, 136);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_capture_stats, struct_size, 0);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_capture_stats, recorded, 8);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_capture_stats, dropped_event_cap, 16);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_capture_stats, dropped_label_cap, 24);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_capture_stats, dropped_too_deep, 32);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_capture_stats, dropped_empty_label, 40);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_capture_stats, unmatched_pops, 48);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_capture_stats, unmatched_stops, 56);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_capture_stats, begun_outside_session, 64);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_capture_stats, paused, 72);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_capture_stats, open_at_stop, 80);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_capture_stats, process_ranges_open_at_stop, 88);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_capture_stats, open_at_thread_exit, 96);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_capture_stats, rejected_records, 104);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_capture_stats, dropped_open_range_cap, 112);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_capture_stats, after_thread_exit, 120);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_capture_stats, truncated_labels, 128);

ROCTX_UTILS_ASSERT_SIZE(roctx_utils_buffer, 24);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_buffer, struct_size, 0);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_buffer, data, 8);
ROCTX_UTILS_ASSERT_OFFSET(roctx_utils_buffer, len, 16);

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
