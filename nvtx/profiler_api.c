/* The CUDA and HIP profiler API, seen by the libraries a process loads by path (the NVTX
 * injection, the rocprofiler-sdk tool library) when `roctx record --capture-range=profiler-api`
 * preloads them (LD_PRELOAD): a program's cudaProfilerStart/Stop and hipProfilerStart/Stop reach
 * these first, open or close a capture window (roctx_utils_capture_start/stop), then call the
 * runtime's own function, so CUDA's and HIP's profilers still hear of it.
 *
 * Not in the staticlib hosts link (//:roctx_utils_impl): a host that links cudart statically
 * would get two definitions. Loaded without LD_PRELOAD (dlopen, RTLD_LOCAL), nothing binds to
 * these. A runtime found nowhere after this library (none loaded, or one whose symbols come
 * first and never reach here) leaves the call to us alone: 0, cudaSuccess/hipSuccess. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>

int roctx_utils_capture_start(void);
int roctx_utils_capture_stop(void);

typedef int (*profiler_fn)(void);

static int next_one(const char* name, profiler_fn self) {
  profiler_fn next = (profiler_fn)dlsym(RTLD_NEXT, name);
  if (next == NULL || next == self) return 0;
  return next();
}

int cudaProfilerStart(void) {
  roctx_utils_capture_start();
  return next_one("cudaProfilerStart", cudaProfilerStart);
}

int cudaProfilerStop(void) {
  int status = next_one("cudaProfilerStop", cudaProfilerStop);
  roctx_utils_capture_stop();
  return status;
}

int hipProfilerStart(void) {
  roctx_utils_capture_start();
  return next_one("hipProfilerStart", hipProfilerStart);
}

int hipProfilerStop(void) {
  int status = next_one("hipProfilerStop", hipProfilerStop);
  roctx_utils_capture_stop();
  return status;
}
