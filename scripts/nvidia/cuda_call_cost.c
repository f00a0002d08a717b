/* What one CUDA driver call costs the calling thread, with and without CUPTI's tracing (issue 28):
 * the calls the MoE read-back makes per MUL_MAT_ID, and a kernel launch for scale. Run it plain,
 * then with scripts/nvidia/cupti_only.c preloaded (the kinds and API-record filter roctx_utils
 * uses), and compare: the difference is what CUPTI adds per call, which no client of CUPTI can
 * take back. No CUDA headers: the driver is dlopen'ed and its functions declared with the
 * signatures of cuda.h; the kernel is PTX, compiled by the driver.
 *
 *   gcc -O2 -o cuda_call_cost scripts/nvidia/cuda_call_cost.c -ldl
 *   ./cuda_call_cost                                             # no tracing
 *   LD_PRELOAD=libcupti_only.so CUPTI_ONLY_LIBRARY=.../libcupti.so.13 ./cuda_call_cost
 *
 * Prints one line per call shape: the median over batches of ns per call (each batch 256 calls,
 * the stream synchronized between batches and outside the timing).
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int CUresult;
typedef void* CUcontext;
typedef void* CUstream;
typedef void* CUevent;
typedef void* CUmodule;
typedef void* CUfunction;
typedef unsigned long long CUdeviceptr;

static CUresult (*cuInit)(unsigned);
static CUresult (*cuDeviceGet)(int*, int);
static CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, int);
static CUresult (*cuCtxSetCurrent)(CUcontext);
static CUresult (*cuCtxGetDevice)(int*);
static CUresult (*cuStreamCreate)(CUstream*, unsigned);
static CUresult (*cuStreamSynchronize)(CUstream);
static CUresult (*cuEventCreate)(CUevent*, unsigned);
static CUresult (*cuEventRecord)(CUevent, CUstream);
static CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned);
static CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
static CUresult (*cuMemHostAlloc)(void**, size_t, unsigned);
static CUresult (*cuMemcpyDtoHAsync)(void*, CUdeviceptr, size_t, CUstream);
static CUresult (*cuModuleLoadData)(CUmodule*, const void*);
static CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
static CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void**,
                                  void**);

static const char kPtx[] =
    ".version 7.0\n.target sm_50\n.address_size 64\n"
    ".visible .entry noop()\n{\n  ret;\n}\n";

static CUstream op, side;
static CUevent ready, done;
static CUdeviceptr ids;
static void* pinned;
static CUfunction noop;

static void check(CUresult r, const char* what) {
  if (r != 0) {
    fprintf(stderr, "cuda_call_cost: %s returned %d\n", what, r);
    exit(1);
  }
}

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The shapes, one call (or the read-back's sequence) per invocation. */
static void get_device(void) { int d; cuCtxGetDevice(&d); }
static void event_record(void) { cuEventRecord(ready, op); }
static void stream_wait(void) { cuStreamWaitEvent(side, ready, 0); }
static void copy_32(void) { cuMemcpyDtoHAsync(pinned, ids, 32, side); }
static void launch(void) { cuLaunchKernel(noop, 1, 1, 1, 32, 1, 1, 0, op, NULL, NULL); }
static void read_back(void) { /* what roctx_utils does per MUL_MAT_ID (1c2ce9d) */
  int d;
  cuCtxGetDevice(&d);
  cuEventRecord(ready, op);
  cuStreamWaitEvent(side, ready, 0);
  cuMemcpyDtoHAsync(pinned, ids, 32, side);
  cuEventRecord(done, side);
  cuStreamWaitEvent(op, done, 0);
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static void measure(const char* name, void (*call)(void)) {
  enum { kBatches = 64, kPerBatch = 256 };
  double ns[kBatches];
  for (int i = 0; i < 256; ++i) call(); /* warm */
  cuStreamSynchronize(op), cuStreamSynchronize(side);
  for (int b = 0; b < kBatches; ++b) {
    uint64_t t0 = now_ns();
    for (int i = 0; i < kPerBatch; ++i) call();
    ns[b] = (double)(now_ns() - t0) / kPerBatch;
    cuStreamSynchronize(op), cuStreamSynchronize(side);
  }
  qsort(ns, kBatches, sizeof(ns[0]), cmp);
  printf("%-44s %8.0f ns  (p10 %.0f, p90 %.0f)\n", name, ns[kBatches / 2], ns[kBatches / 10], ns[kBatches * 9 / 10]);
}

int main(void) {
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (cuda == NULL) {
    fprintf(stderr, "cuda_call_cost: %s\n", dlerror());
    return 1;
  }
#define GET(f, sym)                                                 \
  do {                                                              \
    *(void**)&f = dlsym(cuda, sym);                                 \
    if (f == NULL) return fprintf(stderr, "no %s\n", sym), 1;       \
  } while (0)
  GET(cuInit, "cuInit");
  GET(cuDeviceGet, "cuDeviceGet");
  GET(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  GET(cuCtxSetCurrent, "cuCtxSetCurrent");
  GET(cuCtxGetDevice, "cuCtxGetDevice");
  GET(cuStreamCreate, "cuStreamCreate");
  GET(cuStreamSynchronize, "cuStreamSynchronize");
  GET(cuEventCreate, "cuEventCreate");
  GET(cuEventRecord, "cuEventRecord");
  GET(cuStreamWaitEvent, "cuStreamWaitEvent");
  GET(cuMemAlloc, "cuMemAlloc_v2");
  GET(cuMemHostAlloc, "cuMemHostAlloc");
  GET(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  GET(cuModuleLoadData, "cuModuleLoadData");
  GET(cuModuleGetFunction, "cuModuleGetFunction");
  GET(cuLaunchKernel, "cuLaunchKernel");
  int dev;
  CUcontext ctx;
  CUmodule mod;
  check(cuInit(0), "cuInit");
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  check(cuStreamCreate(&op, 1), "cuStreamCreate"); /* CU_STREAM_NON_BLOCKING, as ggml's */
  check(cuStreamCreate(&side, 1), "cuStreamCreate");
  check(cuEventCreate(&ready, 2), "cuEventCreate"); /* CU_EVENT_DISABLE_TIMING, as ours */
  check(cuEventCreate(&done, 2), "cuEventCreate");
  check(cuMemAlloc(&ids, 4096), "cuMemAlloc");
  check(cuMemHostAlloc(&pinned, 4096, 0), "cuMemHostAlloc");
  check(cuModuleLoadData(&mod, kPtx), "cuModuleLoadData");
  check(cuModuleGetFunction(&noop, mod, "noop"), "cuModuleGetFunction");
  printf("%-44s %8s\n", "call (ns per call, median of 64 batches)", "");
  measure("cuCtxGetDevice", get_device);
  measure("cuEventRecord", event_record);
  measure("cuStreamWaitEvent", stream_wait);
  measure("cuMemcpyDtoHAsync_v2 (32 B, pinned)", copy_32);
  measure("cuLaunchKernel (empty kernel)", launch);
  measure("the MoE read-back's six calls", read_back);
  return 0;
}
