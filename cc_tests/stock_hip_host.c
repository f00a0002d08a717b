/* A stock HIP program: it knows HIP and roctx, and nothing of any profiler. It is what a tool
 * loaded through ROCP_TOOL_LIBRARIES (or `roctx record --`) must profile without a rebuild.
 *
 * Three threads, each: roctxRangePushA("step <t>") { "forward <t>" { kernel gemm<t> }
 * "backward <t>" { kernel reduce<t>, one memory copy: thread 0 host-to-device, 1 device-to-host,
 * 2 device-to-device } }, then a mark "done <t>". The main thread calls hipInit first (a
 * runtime registration starts the SDK's tool discovery), or with `roctx-first` makes a roctx
 * call first (the first roctx call starts it). Exit status 0 when every HIP call succeeded. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int hipInit(unsigned flags);
int hipModuleLoadData(uint64_t* module, const char* image);
int hipModuleGetFunction(uint64_t* function, uint64_t module, const char* name);
int hipModuleLaunchKernel(uint64_t function, uint64_t duration_ns);
int hipMemcpyAsync(uint64_t bytes, int kind);

int roctxRangePushA(const char* message);
int roctxRangePop(void);
void roctxMarkA(const char* message);

/* void gemm<N>(float const*, float*, int) and void reduce<N>(float*), N = 0, 1, 2 */
static const char kImage[] =
    "_Z4gemmILi0EEvPKfPfi\n_Z4gemmILi1EEvPKfPfi\n_Z4gemmILi2EEvPKfPfi\n"
    "_Z6reduceILi0EEvPf\n_Z6reduceILi1EEvPf\n_Z6reduceILi2EEvPf\n";

static uint64_t g_module;
static int g_failed;

static void check(int status, const char* what) {
  if (status != 0) {
    fprintf(stderr, "stock_hip_host: %s failed: %d\n", what, status);
    __atomic_store_n(&g_failed, 1, __ATOMIC_SEQ_CST);
  }
}

static void* worker(void* arg) {
  const int t = (int)(intptr_t)arg;
  char name[64];
  uint64_t gemm = 0, reduce = 0;
  snprintf(name, sizeof name, "_Z4gemmILi%dEEvPKfPfi", t);
  check(hipModuleGetFunction(&gemm, g_module, name), "hipModuleGetFunction(gemm)");
  snprintf(name, sizeof name, "_Z6reduceILi%dEEvPf", t);
  check(hipModuleGetFunction(&reduce, g_module, name), "hipModuleGetFunction(reduce)");
  for (int step = 0; step < 2; ++step) {
    snprintf(name, sizeof name, "step %d", t);
    roctxRangePushA(name);
    snprintf(name, sizeof name, "forward %d", t);
    roctxRangePushA(name);
    check(hipModuleLaunchKernel(gemm, 20000), "hipModuleLaunchKernel(gemm)");
    roctxRangePop();
    snprintf(name, sizeof name, "backward %d", t);
    roctxRangePushA(name);
    check(hipModuleLaunchKernel(reduce, 5000), "hipModuleLaunchKernel(reduce)");
    check(hipMemcpyAsync(1u << 20, t + 1), "hipMemcpyAsync");
    roctxRangePop();
    roctxRangePop();
  }
  snprintf(name, sizeof name, "done %d", t);
  roctxMarkA(name);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "roctx-first") == 0) roctxMarkA("start");
  check(hipInit(0), "hipInit");
  check(hipModuleLoadData(&g_module, kImage), "hipModuleLoadData");
  pthread_t threads[3];
  for (int t = 0; t < 3; ++t) pthread_create(&threads[t], NULL, worker, (void*)(intptr_t)t);
  for (int t = 0; t < 3; ++t) pthread_join(threads[t], NULL);
  printf("stock_hip_host: %s\n", g_failed ? "FAILED" : "ok");
  if (argc > 1 && strcmp(argv[1], "loop") == 0) {
    /* A long run cut short (issue 29): after the work, idle ranges until a signal ends it. */
    printf("stock_hip_host: looping\n");
    fflush(stdout);
    for (;;) {
      roctxRangePushA("idle");
      usleep(1000);
      roctxRangePop();
    }
  }
  return g_failed ? 1 : 0;
}
