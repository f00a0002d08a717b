/* The vendor's own kernel tracing, nothing of ours (scripts/nvidia/llama_overhead.sh's `cupti`
 * configuration): LD_PRELOAD'ed, it turns on CUPTI's activity API with the kinds and API-record
 * filter roctx_utils uses (CONCURRENT_KERNEL, MEMCPY, MEMCPY2, MEMSET, RUNTIME and DRIVER records
 * for the functions that enqueue GPU work only) and drops the records, so `hook - cupti` is what
 * roctx_utils adds on top of CUPTI's own cost. CUPTI is dlopen'ed from $CUPTI_ONLY_LIBRARY;
 * its functions are declared here with CUPTI's signatures (cupti_activity.h, cupti_callbacks.h).
 * CUPTI_ONLY_HWTRACE=1 first asks for kernel timestamps from the Hardware Event System
 * (cuptiActivityEnableHWTrace, CUPTI 12.8+; Blackwell and later) and says whether it was granted.
 * Three knobs add, one at a time, what roctx_utils' own CUPTI client does besides (issue 42: which
 * of them costs a launching thread what):
 *   CUPTI_ONLY_TIMESTAMP=1  a timestamp callback returning CLOCK_BOOTTIME, as ours registers
 *                           (=2: the TSC scaled to ns, a callback without a clock_gettime)
 *   CUPTI_ONLY_READ=1       every record of a completed buffer read (cuptiActivityGetNextRecord)
 *   CUPTI_ONLY_FLUSH_MS=N   a thread calling cuptiActivityFlushAll(0) every N ms, as our watch
 *                           thread does every 100 ms
 *
 *   gcc -O2 -shared -fPIC -o libcupti_only.so scripts/nvidia/cupti_only.c -ldl -lpthread
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int (*Register)(void (*)(uint8_t**, size_t*, size_t*), void (*)(void*, uint32_t, uint8_t*, size_t, size_t));
typedef int (*Kind)(int);
typedef int (*EnableApi)(uint32_t, uint8_t);
typedef int (*Name)(uint32_t, uint32_t, const char**);
typedef int (*FlushAll)(uint32_t);

typedef int (*NextRecord)(uint8_t*, size_t, void**);
typedef uint64_t (*Timestamp)(void);
typedef int (*RegisterTimestamp)(Timestamp);

static FlushAll g_flush_all;
static NextRecord g_next_record;
static unsigned long long g_read;

static uint64_t boottime(void) {
  struct timespec ts;
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CUPTI_ONLY_TIMESTAMP=2: the TSC scaled to ns (calibrated at start-up against CLOCK_BOOTTIME):
 * what a cheap callback costs next to a clock_gettime one. */
static double g_ns_per_tick;
static uint64_t g_tsc0, g_boot0;

static uint64_t tsc_ns(void) {
  return g_boot0 + (uint64_t)((double)(__builtin_ia32_rdtsc() - g_tsc0) * g_ns_per_tick);
}

static void calibrate(void) {
  g_tsc0 = __builtin_ia32_rdtsc(), g_boot0 = boottime();
  struct timespec ts = {0, 20000000};
  nanosleep(&ts, NULL);
  g_ns_per_tick = (double)(boottime() - g_boot0) / (double)(__builtin_ia32_rdtsc() - g_tsc0);
}

static void* flusher(void* arg) {
  const long ms = (long)(intptr_t)arg;
  for (;;) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    g_flush_all(0);
  }
  return NULL;
}

static void requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 64 << 10; /* as roctx_utils' */
  *buffer = aligned_alloc(8, *size);
  *max_records = 0;
}

static void completed(void* context, uint32_t stream, uint8_t* buffer, size_t size, size_t valid) {
  (void)context, (void)stream, (void)size;
  if (g_next_record != NULL) {
    void* record = NULL;
    while (g_next_record(buffer, valid, &record) == 0 && record != NULL) ++g_read;
  }
  free(buffer);
}

static int enqueues_gpu_work(const char* name) {
  static const char* prefixes[] = {"cudaLaunch", "cudaGraphLaunch", "cudaMemcpy", "cudaMemset",
                                   "cuLaunch", "cuGraphLaunch", "cuMemcpy", "cuMemset"};
  for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); ++i) {
    if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0) return 1;
  }
  return 0;
}

__attribute__((constructor)) static void start(void) {
  const char* path = getenv("CUPTI_ONLY_LIBRARY");
  void* lib = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (lib == NULL) {
    fprintf(stderr, "cupti_only: no CUPTI (%s)\n", path ? dlerror() : "CUPTI_ONLY_LIBRARY unset");
    return;
  }
  Register reg = (Register)dlsym(lib, "cuptiActivityRegisterCallbacks");
  Kind enable = (Kind)dlsym(lib, "cuptiActivityEnable");
  EnableApi runtime = (EnableApi)dlsym(lib, "cuptiActivityEnableRuntimeApi");
  EnableApi driver = (EnableApi)dlsym(lib, "cuptiActivityEnableDriverApi");
  Name name = (Name)dlsym(lib, "cuptiGetCallbackName");
  g_flush_all = (FlushAll)dlsym(lib, "cuptiActivityFlushAll");
  if (!reg || !enable || !runtime || !driver || !name || !g_flush_all) {
    fprintf(stderr, "cupti_only: CUPTI lacks a function\n");
    return;
  }
  const char* hw = getenv("CUPTI_ONLY_HWTRACE");
  if (hw != NULL && hw[0] == '1') {
    typedef int (*Enable8)(uint8_t);
    Enable8 hw_trace = (Enable8)dlsym(lib, "cuptiActivityEnableHWTrace");
    int r = hw_trace ? hw_trace(1) : -1;
    const char* why = "";
    typedef int (*ResultString)(int, const char**);
    ResultString text = (ResultString)dlsym(lib, "cuptiGetResultString");
    if (r > 0 && text != NULL) text(r, &why);
    fprintf(stderr, "cupti_only: cuptiActivityEnableHWTrace(1) %s %d %s\n", hw_trace ? "returned" : "is absent:", r, why);
  }
  const char* knob = getenv("CUPTI_ONLY_TIMESTAMP");
  if (knob != NULL && (knob[0] == '1' || knob[0] == '2')) {
    RegisterTimestamp ts = (RegisterTimestamp)dlsym(lib, "cuptiActivityRegisterTimestampCallback");
    if (knob[0] == '2') calibrate();
    fprintf(stderr, "cupti_only: %s timestamp callback %s\n", knob[0] == '2' ? "TSC" : "CLOCK_BOOTTIME",
            ts && ts(knob[0] == '2' ? tsc_ns : boottime) == 0 ? "registered" : "refused");
  }
  knob = getenv("CUPTI_ONLY_READ");
  if (knob != NULL && knob[0] == '1') g_next_record = (NextRecord)dlsym(lib, "cuptiActivityGetNextRecord");
  reg(requested, completed);
  const int kinds[] = {10, 5, 4, 1, 22, 2}; /* CONCURRENT_KERNEL RUNTIME DRIVER MEMCPY MEMCPY2 MEMSET */
  for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); ++i) enable(kinds[i]);
  unsigned kept = 0, off = 0;
  for (uint32_t domain = 1; domain <= 2; ++domain) { /* DRIVER_API 1, RUNTIME_API 2 */
    EnableApi set = domain == 1 ? driver : runtime;
    for (uint32_t cbid = 1, misses = 0; cbid < 4096 && misses <= 64; ++cbid) {
      const char* n = NULL;
      if (name(domain, cbid, &n) != 0 || n == NULL) {
        ++misses;
        continue;
      }
      misses = 0;
      if (enqueues_gpu_work(n)) {
        ++kept;
      } else if (set(cbid, 0) == 0) {
        ++off;
      }
    }
  }
  fprintf(stderr, "cupti_only: tracing; API records kept for %u functions, off for %u\n", kept, off);
  knob = getenv("CUPTI_ONLY_FLUSH_MS");
  long ms = knob ? strtol(knob, NULL, 10) : 0;
  pthread_t t;
  if (ms > 0 && pthread_create(&t, NULL, flusher, (void*)(intptr_t)ms) == 0) {
    pthread_detach(t);
    fprintf(stderr, "cupti_only: flushing every %ld ms\n", ms);
  }
}

__attribute__((destructor)) static void stop(void) {
  if (g_flush_all) g_flush_all(1);
  if (g_next_record) fprintf(stderr, "cupti_only: %llu records read\n", g_read);
}
