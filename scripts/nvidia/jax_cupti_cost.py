"""What CUPTI's own activity tracing costs a JAX training step, without roctx_utils: the step time
of jax_mlp_step.py with CUPTI activity kinds enabled in-process through ctypes (buffers handed
out and dropped), to tell CUPTI's cost from ours (BENCHMARKS.md, issue 21).

Usage: jax_cupti_cost.py LIBCUPTI MODE, MODE one of
  none       no CUPTI
  kernels    CONCURRENT_KERNEL only (what XProf's GPU tracer enables for kernels)
  join       CONCURRENT_KERNEL + RUNTIME + DRIVER (what roctx_utils enables for the join)
Prints jax_mlp_step.py's step time line.
"""
import ctypes
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import jax_mlp_step  # noqa: E402

BUF = 8 << 20
_keep = []


def start(path, kinds):
    cupti = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    req_t = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t))
    done_t = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t)
    pool = [ctypes.create_string_buffer(BUF) for _ in range(64)]
    free = list(range(len(pool)))
    where = {ctypes.addressof(b): i for i, b in enumerate(pool)}

    def requested(buf, size, max_records):
        i = free.pop() if free else None
        buf[0] = ctypes.addressof(pool[i]) if i is not None else None
        size[0] = BUF if i is not None else 0
        max_records[0] = 0

    def completed(_ctx, _stream, buf, _size, _valid):
        if buf in where:
            free.append(where[buf])

    req, done = req_t(requested), done_t(completed)
    _keep.extend([cupti, req, done, pool])
    assert cupti.cuptiActivityRegisterCallbacks(req, done) == 0
    for k in kinds:
        assert cupti.cuptiActivityEnable(k) == 0, k


def main():
    path, mode = sys.argv[1], sys.argv[2]
    kinds = {"none": [], "kernels": [10], "join": [10, 5, 4]}[mode]
    if kinds:
        start(path, kinds)
    sys.argv = [sys.argv[0], "200", "--time"]
    jax_mlp_step.main()


if __name__ == "__main__":
    main()
