"""PyTorch's NVTX calls (nvidia_sources.md B.3) around a bandwidth-bound and a compute-bound
kernel, plus emit_nvtx: what scripts/validate_nvidia.sh traces under the NVTX injection."""
import torch


def main():
    a = torch.randn(1 << 28, device="cuda")  # 1 GiB
    m = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    print("push levels:", torch.cuda.nvtx.range_push("step"), torch.cuda.nvtx.range_push("add"))
    b = a + a
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_push("matmul")
    c = m @ m
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.mark("after matmul")
    rid = torch.cuda.nvtx.range_start("sync")
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_end(rid)
    print("pop level:", torch.cuda.nvtx.range_pop())
    with torch.autograd.profiler.emit_nvtx():
        (b.sum() + c.float().sum()).item()
    print("torch: done on", torch.cuda.get_device_name())


if __name__ == "__main__":
    main()
