// Probe of CUPTI behaviour the NVIDIA source relies on (docs/kernels.md: graphs, copies, a second
// client doing XLA's sequence). Prints facts, asserts nothing. On the device:
//   nvcc -I$CUDA/include -o probe scripts/nvidia/cupti_probe.cu -L$CUDA/lib64 -l:libcupti.so.13 -lcuda
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <set>
#include <time.h>

#define CK(x) do { CUptiResult r_ = (x); if (r_ != CUPTI_SUCCESS) { const char* s; cuptiGetResultString(r_, &s); printf("  %s -> %d %s\n", #x, r_, s); } } while (0)

static const char* who = "A";
static std::set<void*> a_buffers;
static int a_req = 0, a_done = 0, b_req = 0, b_done = 0;
static uint32_t a_min_corr = UINT32_MAX, a_max_corr = 0;
static int a_kernels = 0, a_api = 0, a_memcpy = 0, a_memset = 0, b_kernels = 0, b_foreign_buffers = 0;
static bool verbose = true;

static uint64_t boot() { timespec t; clock_gettime(CLOCK_BOOTTIME, &t); return t.tv_sec * 1000000000ull + t.tv_nsec; }
static uint64_t CUPTIAPI ts() { return boot(); }

static void print_record(const char* client, CUpti_Activity* rec) {
  switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      auto* k = (CUpti_ActivityKernel10*)rec;
      if (verbose) printf("  [%s] KERNEL %s corr=%u graphId=%u graphNodeId=%llu stream=%u start=%llu\n", client, k->name, k->correlationId, k->graphId, (unsigned long long)k->graphNodeId, k->streamId, (unsigned long long)k->start);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      auto* m = (CUpti_ActivityMemcpy6*)rec;
      if (verbose) printf("  [%s] MEMCPY kind=%u src=%u dst=%u bytes=%llu corr=%u graphId=%u graphNodeId=%llu stream=%u\n", client, m->copyKind, m->srcKind, m->dstKind, (unsigned long long)m->bytes, m->correlationId, m->graphId, (unsigned long long)m->graphNodeId, m->streamId);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      auto* m = (CUpti_ActivityMemset4*)rec;
      if (verbose) printf("  [%s] MEMSET value=%u bytes=%llu corr=%u graphId=%u graphNodeId=%llu stream=%u memoryKind=%u\n", client, m->value, (unsigned long long)m->bytes, m->correlationId, m->graphId, (unsigned long long)m->graphNodeId, m->streamId, m->memoryKind);
      break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      auto* a = (CUpti_ActivityAPI*)rec;
      const char* name = "?";
      cuptiGetCallbackName(rec->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, a->cbid, &name);
      if (verbose && strcmp(name, "cuDeviceGetAttribute")) printf("  [%s] %s %s corr=%u thread=%u\n", client, rec->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? "RT" : "DRV", name, a->correlationId, a->threadId);
      break;
    }
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE: {
      auto* g = (CUpti_ActivityGraphTrace*)rec;
      printf("  [%s] GRAPH_TRACE graphId=%u corr=%u stream=%u start=%llu end=%llu\n", client, g->graphId, g->correlationId, g->streamId, (unsigned long long)g->start, (unsigned long long)g->end);
      break;
    }
    default:
      if (verbose) printf("  [%s] kind %d\n", client, rec->kind);
  }
}

static void CUPTIAPI a_request(uint8_t** buf, size_t* size, size_t* max) {
  *size = 1 << 20; *buf = (uint8_t*)aligned_alloc(8, *size); *max = 0; a_req++; a_buffers.insert(*buf);
}
static void CUPTIAPI a_complete(CUcontext, uint32_t, uint8_t* buf, size_t, size_t valid) {
  a_done++;
  CUpti_Activity* rec = nullptr;
  while (cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) a_kernels++;
    if (rec->kind == CUPTI_ACTIVITY_KIND_RUNTIME || rec->kind == CUPTI_ACTIVITY_KIND_DRIVER) { a_api++; uint32_t c = ((CUpti_ActivityAPI*)rec)->correlationId; if (c < a_min_corr) a_min_corr = c; if (c > a_max_corr) a_max_corr = c; }
    if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) a_memcpy++;
    if (rec->kind == CUPTI_ACTIVITY_KIND_MEMSET) a_memset++;
    print_record("A", rec);
  }
  a_buffers.erase(buf);
  free(buf);
}
static void CUPTIAPI b_request(uint8_t** buf, size_t* size, size_t* max) {
  *size = 1 << 20; *buf = (uint8_t*)aligned_alloc(8, *size); *max = 0; b_req++;
}
static void CUPTIAPI b_complete(CUcontext, uint32_t, uint8_t* buf, size_t, size_t valid) {
  b_done++;
  if (a_buffers.count(buf)) { b_foreign_buffers++; a_buffers.erase(buf); }
  CUpti_Activity* rec = nullptr;
  while (cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) b_kernels++;
  }
  free(buf);
}
static void CUPTIAPI b_api_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

__global__ void k_add(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 1.f; }
__global__ void k_mul(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.f; }

static void a_start() {
  CK(cuptiActivityRegisterTimestampCallback(ts));
  CK(cuptiActivityRegisterCallbacks(a_request, a_complete));
  for (auto k : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET}) CK(cuptiActivityEnable(k));
}

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IONBF, 0);
  const int n = 1 << 20;
  float *x, *y; float* h;
  printf("== E1 graphs\n");
  a_start();
  cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaMalloc(&x, n * 4); cudaMalloc(&y, n * 4); cudaMallocHost(&h, n * 4);
  cudaMemcpyAsync(x, h, n * 4, cudaMemcpyHostToDevice, s);
  cudaStreamSynchronize(s);
  CK(cuptiActivityFlushAll(1));
  printf("-- capture\n");
  cudaGraph_t g; cudaGraphExec_t ge;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  k_add<<<n / 256, 256, 0, s>>>(x, n);
  cudaMemcpyAsync(y, x, n * 4, cudaMemcpyDeviceToDevice, s);
  cudaMemsetAsync(x, 0, n * 4, s);
  k_mul<<<n / 256, 256, 0, s>>>(y, n);
  cudaStreamEndCapture(s, &g);
  size_t nn = 0; cudaGraphGetNodes(g, nullptr, &nn);
  std::vector<cudaGraphNode_t> nodes(nn); cudaGraphGetNodes(g, nodes.data(), &nn);
  uint32_t gid = 0; CK(cuptiGetGraphId(g, &gid));
  printf("  captured graph id %u, %zu nodes:", gid, nn);
  for (auto nd : nodes) { uint64_t id = 0; CK(cuptiGetGraphNodeId(nd, &id)); cudaGraphNodeType t; cudaGraphNodeGetType(nd, &t); printf(" %llu(type %d)", (unsigned long long)id, (int)t); }
  printf("\n");
  cudaGraphInstantiate(&ge, g, 0);
  uint32_t geid = 0; CK(cuptiGetGraphExecId(ge, &geid)); printf("  exec id %u\n", geid);
  CK(cuptiActivityFlushAll(1));
  printf("-- launch twice\n");
  cudaGraphLaunch(ge, s); cudaGraphLaunch(ge, s); cudaStreamSynchronize(s);
  CK(cuptiActivityFlushAll(1));
  printf("-- explicit graph\n");
  cudaGraph_t g2; cudaGraphCreate(&g2, 0);
  cudaKernelNodeParams p = {}; void* args[] = {&x, (void*)&n};
  p.func = (void*)k_add; p.gridDim = dim3(n / 256); p.blockDim = dim3(256); p.kernelParams = args;
  cudaGraphNode_t n1, n2; cudaGraphAddKernelNode(&n1, g2, nullptr, 0, &p);
  p.func = (void*)k_mul; cudaGraphAddKernelNode(&n2, g2, &n1, 1, &p);
  uint64_t id1 = 0, id2 = 0; CK(cuptiGetGraphNodeId(n1, &id1)); CK(cuptiGetGraphNodeId(n2, &id2));
  printf("  explicit nodes %llu %llu\n", (unsigned long long)id1, (unsigned long long)id2);
  cudaGraphExec_t ge2; cudaGraphInstantiate(&ge2, g2, 0); cudaGraphLaunch(ge2, s); cudaStreamSynchronize(s);
  CK(cuptiActivityFlushAll(1));

  printf("== E2 flush semantics and a second client\n");
  { uint64_t t0 = 0; cuptiGetTimestamp(&t0); printf("  A owns: cuptiGetTimestamp %llu boottime %llu\n", (unsigned long long)t0, (unsigned long long)boot()); }
  verbose = false;
  for (int i = 0; i < 100; i++) k_add<<<n / 256, 256, 0, s>>>(x, n);
  cudaStreamSynchronize(s);
  int before = a_kernels;
  CK(cuptiActivityFlushAll(0));
  printf("  FlushAll(0) after 100 completed kernels delivered %d kernels to A (A requested %d, completed %d)\n", a_kernels - before, a_req, a_done);
  for (int i = 0; i < 100; i++) k_add<<<n / 256, 256, 0, s>>>(x, n);
  cudaStreamSynchronize(s);
  printf("  100 more kernels, not flushed; A holds %zu buffers\n", a_buffers.size());
  // What XLA's tracer does.
  CUpti_SubscriberHandle sub;
  CK(cuptiSubscribe(&sub, (CUpti_CallbackFunc)b_api_callback, nullptr));
  CK(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API));
  CK(cuptiActivityRegisterCallbacks(b_request, b_complete));
  for (auto k : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET}) CK(cuptiActivityEnable(k));
  for (int i = 0; i < 50; i++) k_mul<<<n / 256, 256, 0, s>>>(x, n);
  cudaStreamSynchronize(s);
  before = a_kernels;
  { uint64_t t0 = 0; cuptiGetTimestamp(&t0); printf("  B active: cuptiGetTimestamp %llu boottime %llu\n", (unsigned long long)t0, (unsigned long long)boot()); }
  CUptiResult fr = cuptiActivityFlushAll(0);
  printf("  during B: A's FlushAll(0) -> %d; A got %d kernels, B got %d, B received %d of A's buffers\n", fr, a_kernels - before, b_kernels, b_foreign_buffers);
  for (auto k : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET}) CK(cuptiActivityDisable(k));
  CK(cuptiActivityFlushAll(1));
  CK(cuptiUnsubscribe(sub));
  printf("  after B's flush: A kernels %d, B kernels %d, B got %d of A's buffers, A still holds %zu\n", a_kernels, b_kernels, b_foreign_buffers, a_buffers.size());
  CK(cuptiFinalize());
  printf("  after B's finalize\n");
  for (int i = 0; i < 30; i++) k_add<<<n / 256, 256, 0, s>>>(x, n);
  cudaStreamSynchronize(s);
  before = a_kernels;
  fr = cuptiActivityFlushAll(0);
  printf("  A's FlushAll(0) after finalize -> %d; A got %d kernels\n", fr, a_kernels - before);
  uint64_t t = 0; CUptiResult tr = cuptiGetTimestamp(&t);
  printf("  cuptiGetTimestamp -> %d, %llu vs boottime %llu\n", tr, (unsigned long long)t, (unsigned long long)boot());
  size_t dropped = 0; CUptiResult dr = cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped);
  printf("  GetNumDroppedRecords -> %d, %zu\n", dr, dropped);
  printf("  A resumes; max correlation seen so far %u\n", a_max_corr);
  a_min_corr = UINT32_MAX;
  a_start();
  for (int i = 0; i < 30; i++) k_add<<<n / 256, 256, 0, s>>>(x, n);
  cudaStreamSynchronize(s);
  before = a_kernels;
  int api_before = a_api;
  CK(cuptiActivityFlushAll(1));
  printf("  after resume: A got %d kernels, %d API records, correlation ids %u..%u\n", a_kernels - before, a_api - api_before, a_min_corr, a_max_corr);
  { uint64_t t0 = 0; cuptiGetTimestamp(&t0); printf("  resumed: cuptiGetTimestamp %llu boottime %llu\n", (unsigned long long)t0, (unsigned long long)boot()); }
  printf("== E3 graph trace kind alone\n");
  verbose = true;
  for (auto k : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET}) CK(cuptiActivityDisable(k));
  CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE));
  cudaGraphLaunch(ge, s); cudaStreamSynchronize(s);
  CK(cuptiActivityFlushAll(1));
  printf("done\n");
  return 0;
}
