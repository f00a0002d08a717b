"""A bandwidth-bound op (f32 add of 2 x 1 GiB) and a compute-bound one (bf16 8192^3 matmul) under
torch.cuda.nvtx ranges and roctx_utils op scopes (roofline.h through ctypes, on the instance the
NVTX injection loaded), for scripts/validate_nvidia.sh: with ROCTX_UTILS_ROOFLINE_OUT set the
report is written at exit. Without NVTX_INJECTION64_PATH (the ncu reference run) the op scopes
are skipped and the same kernels run.
"""
import ctypes
import os

import torch

REPEATS = 3


class Source(ctypes.Structure):
    _fields_ = [("type", ctypes.c_char_p), ("ne", ctypes.c_int64 * 4), ("bytes", ctypes.c_uint64)]


class Desc(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint64), ("op", ctypes.c_char_p), ("name", ctypes.c_char_p),
        ("dtype", ctypes.c_char_p), ("quant", ctypes.c_char_p), ("ne", ctypes.c_int64 * 4),
        ("src", ctypes.POINTER(Source)), ("n_src", ctypes.c_uint32), ("n_op_params", ctypes.c_uint32),
        ("op_params", ctypes.POINTER(ctypes.c_int32)), ("bytes", ctypes.c_uint64), ("dst_bytes", ctypes.c_uint64),
        ("m", ctypes.c_uint64), ("n", ctypes.c_uint64), ("k", ctypes.c_uint64), ("n_experts", ctypes.c_uint64),
        ("top_k", ctypes.c_uint64), ("fused", ctypes.c_void_p), ("n_fused", ctypes.c_uint32), ("reserved", ctypes.c_uint32),
    ]


assert ctypes.sizeof(Source) == 48 and ctypes.sizeof(Desc) == 168


def desc(op, name, dtype, ne, sources, m=0, n=0, k=0):
    src = (Source * len(sources))(*[Source(t.encode(), (ctypes.c_int64 * 4)(*s), b) for t, s, b in sources])
    elem = {"f32": 4, "bf16": 2}[dtype]
    dst = elem * ne[0] * ne[1] * ne[2] * ne[3]
    d = Desc(ctypes.sizeof(Desc), op.encode(), name.encode(), dtype.encode(), sources[0][0].encode(),
             (ctypes.c_int64 * 4)(*ne), src, len(sources), 0, None, dst + sum(b for _, _, b in sources), dst, m, n, k)
    d._keep = src
    return d


def main():
    lib = None
    if os.environ.get("NVTX_INJECTION64_PATH"):
        torch.cuda.nvtx.range_push("load")  # NVTX's loader attaches the injection
        torch.cuda.nvtx.range_pop()
        lib = ctypes.CDLL(os.environ["NVTX_INJECTION64_PATH"])  # the same file: the same instance
        lib.roctx_utils_op_begin.restype = ctypes.c_uint64
        lib.roctx_utils_op_begin.argtypes = [ctypes.POINTER(Desc)]
        lib.roctx_utils_roofline_set_device(b"h200")
    n = 1 << 28
    a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    side = 8192
    x = torch.randn(side, side, device="cuda", dtype=torch.bfloat16)
    y = torch.randn(side, side, device="cuda", dtype=torch.bfloat16)
    add = desc("ADD", "add_1Gi", "f32", [n, 1, 1, 1], [("f32", [n, 1, 1, 1], 4 * n), ("f32", [n, 1, 1, 1], 4 * n)])
    mm = desc("MUL_MAT", "matmul_8192", "bf16", [side, side, 1, 1],
              [("bf16", [side, side, 1, 1], 2 * side * side), ("bf16", [side, side, 1, 1], 2 * side * side)],
              m=side, n=side, k=side)
    for _ in range(2):  # warm-up: cuBLAS heuristics, allocator
        (a + b, x @ y)
    torch.cuda.synchronize()
    if lib is not None:
        lib.roctx_utils_roofline_reset()
    for i in range(REPEATS):
        torch.cuda.nvtx.range_push("add %d" % i)
        if lib is not None:
            lib.roctx_utils_op_begin(ctypes.byref(add))
        c = a + b
        if lib is not None:
            lib.roctx_utils_op_end()
        torch.cuda.nvtx.range_pop()
        torch.cuda.nvtx.range_push("matmul %d" % i)
        if lib is not None:
            lib.roctx_utils_op_begin(ctypes.byref(mm))
        z = x @ y
        if lib is not None:
            lib.roctx_utils_op_end()
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    print("torch roofline: %d repeats, %.3f %.3f" % (REPEATS, c[0].item(), z[0, 0].float().item()))


if __name__ == "__main__":
    main()
