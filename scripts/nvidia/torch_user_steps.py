"""Issue 23 on the H200: PyTorch with roctx_utils.annotate next to torch.cuda.nvtx, under the
NVTX injection. The first annotation comes from our package, before PyTorch's first NVTX call:
the package loads the injection library itself, and it must still trace kernels (CUPTI).

  torch_user_steps.py STEPS
"""
import sys

import torch

import roctx_utils


def main():
    steps = int(sys.argv[1])
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True).cuda()
    x = torch.randn(8, 256, 512, device="cuda")
    for _ in range(3):  # warm up, not annotated
        layer(x).sum().backward()
    torch.cuda.synchronize()
    for i in range(steps):
        with roctx_utils.annotate("py_step_%d" % i):
            with torch.cuda.nvtx.range("fwd"):
                y = layer(x).sum()
            with torch.cuda.nvtx.range("bwd"):
                y.backward()
            torch.cuda.synchronize()
    print("torch_user_steps: library %s" % roctx_utils.library())


if __name__ == "__main__":
    main()
