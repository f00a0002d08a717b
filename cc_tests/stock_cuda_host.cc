// A stock CUDA program as the NVTX injection sees it: NVTX3 ranges (NVIDIA's header-only loader,
// which reads NVTX_INJECTION64_PATH at the first call) and CUDA work, here the fake CUPTI's
// launch and copy hooks standing for cudaLaunchKernel and cudaMemcpyAsync. It knows nothing of
// roctx_utils: `roctx record --platform nvidia -- stock_cuda_host` attaches it. The same shape as
// stock_hip_host.c: three threads, "step <t>" { "forward <t>" { gemm<t> } "backward <t>"
// { reduce<t>, a copy: 0 host-to-device, 1 device-to-host, 2 device-to-device } }, twice, then
// a mark "done <t>".
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "nvtx3/nvToolsExt.h"

extern "C" {
int cuptiGetTimestamp(uint64_t* ts);
uint32_t fake_cupti_launch(const char* name, uint64_t start, uint64_t end, uint32_t device,
                           uint32_t stream, int32_t grid_x, int32_t block_x);
uint32_t fake_cupti_copy(int copy_kind, int src_kind, int dst_kind, uint64_t bytes, uint64_t start,
                         uint64_t end, uint32_t device, uint32_t stream);
}

namespace {

// Kernel names live as long as their module (string literals), as CUPTI's name pointers do.
const char* const kGemm[] = {"_Z4gemmILi0EEvPKfPfi", "_Z4gemmILi1EEvPKfPfi", "_Z4gemmILi2EEvPKfPfi"};
const char* const kReduce[] = {"_Z6reduceILi0EEvPf", "_Z6reduceILi1EEvPf", "_Z6reduceILi2EEvPf"};
// CUPTI_ACTIVITY_MEMCPY_KIND HTOD 1, DTOH 2, DTOD 8; memory kinds PINNED 2, DEVICE 3.
const int kCopy[][3] = {{1, 2, 3}, {2, 3, 2}, {8, 3, 3}};

uint64_t Now() {
  uint64_t ts = 0;
  cuptiGetTimestamp(&ts);
  return ts;
}

void Worker(int t) {
  for (int step = 0; step < 2; ++step) {
    nvtxRangePushA(("step " + std::to_string(t)).c_str());
    nvtxRangePushA(("forward " + std::to_string(t)).c_str());
    uint64_t start = Now() + 2000;
    fake_cupti_launch(kGemm[t], start, start + 20000, 0, 7, 256, 128);
    nvtxRangePop();
    nvtxRangePushA(("backward " + std::to_string(t)).c_str());
    start = Now() + 2000;
    fake_cupti_launch(kReduce[t], start, start + 5000, 0, 7, 64, 128);
    start = Now() + 2000;
    fake_cupti_copy(kCopy[t][0], kCopy[t][1], kCopy[t][2], 1u << 20, start, start + 3000, 0, 8);
    nvtxRangePop();
    nvtxRangePop();
  }
  nvtxMarkA(("done " + std::to_string(t)).c_str());
}

}  // namespace

int main() {
  nvtxMarkA("start");  // the loader initialises here, as at a framework's first annotation
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) threads.emplace_back(Worker, t);
  for (auto& th : threads) th.join();
  std::printf("stock_cuda_host: ok\n");
  return 0;
}
