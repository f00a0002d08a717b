"""What a Python annotation costs, next to the vendor's own Python path (BENCHMARKS.md).

  python bench_annotate.py [--threads N] [--torch]

Per enter+exit pair, best of 5 rounds of 20,000 (ns), single thread:
  jax TraceAnnotation, stock        jax.profiler.TraceAnnotation without our hooks (TraceMe only)
  jax TraceAnnotation, hooked       the same after roctx_utils.jax.install() (TraceMe + our range)
  do-nothing context manager        a class with __enter__ returning self and __exit__ (the
                                    floor a Python context manager costs; issue 44's target is
                                    roctx_utils.annotate within 2x of it)
  roctx_utils.annotate              our context manager, on the path the package took
                                    (roctx_utils.implementation(): "compiled", the C fast path,
                                    or "python")
  roctx_utils.annotate, pure Python the pure-Python path, the fallback, in the same run
  roctx_utils ranges, raw           the two ctypes calls alone (push, pop)
  torch.cuda.nvtx.range             PyTorch's NVTX context manager (--torch; under the NVTX
                                    injection this is the vendor path into the same library)
Then --threads N threads each open 20,000 nested pairs of roctx_utils.annotate at once: the
wall time per pair across all threads, and (with ROCTX_UTILS_XSPACE_OUT) the count recorded is
checked by the caller in the written trace.
Run it with the native library found (ROCTX_UTILS_LIBRARY or the NVTX injection) and, for the
configuration users get, ROCTX_UTILS_XSPACE_OUT set (capture on).
"""
import sys
import threading
import time

import roctx_utils

N = 20000


def best(fn, rounds=5):
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        fn()
        out.append((time.perf_counter_ns() - t0) / N)
    return min(out)


def pairs(make):
    def run():
        for _ in range(N):
            with make():
                pass
    return run


def main():
    rows = []
    try:
        import jax
        import roctx_utils.jax as rjax
        ta = jax.profiler.TraceAnnotation
        if not ta.__dict__.get("__roctx_utils_hooked__"):
            rows.append(("jax TraceAnnotation, stock", best(pairs(lambda: ta("step")))))
        rjax.install()
        rows.append(("jax TraceAnnotation, hooked", best(pairs(lambda: ta("step")))))
    except ImportError:
        pass
    class Nothing:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False
    nothing = Nothing()
    floor = best(pairs(lambda: nothing))
    rows.append(("do-nothing context manager", floor))
    a = roctx_utils.annotate("step")
    ours = best(pairs(lambda: a))
    rows.append(("roctx_utils.annotate (%s)" % roctx_utils.implementation(), ours))
    rows.append(("  ... times the do-nothing one", ours / floor))
    if roctx_utils.implementation() != "python":
        class Pure(roctx_utils._PureAnnotation):
            __slots__ = ()

            def __init__(self, label):
                self._label = label
        p = Pure(b"step")
        pure = best(pairs(lambda: p))
        rows.append(("roctx_utils.annotate, pure Python", pure))
        rows.append(("  ... times the do-nothing one", pure / floor))
    lib = roctx_utils._lib.get()
    if lib is not None:
        def raw():
            push, pop = lib.range_push, lib.range_pop
            for _ in range(N):
                push(b"step")
                pop()
        rows.append(("roctx_utils ranges, raw", best(raw)))
    if "--torch" in sys.argv:
        import torch
        rows.append(("torch.cuda.nvtx.range", best(pairs(lambda: torch.cuda.nvtx.range("step")))))
    for name, ns in rows:
        if name.startswith("  ..."):
            print("%-32s %8.1fx" % (name, ns))
        else:
            print("%-32s %8.0f ns per pair" % (name, ns))
    if "--threads" in sys.argv:
        n = int(sys.argv[sys.argv.index("--threads") + 1])
        barrier = threading.Barrier(n + 1)

        def worker():
            outer = roctx_utils.annotate("outer")
            inner = roctx_utils.annotate("inner")
            barrier.wait()
            for _ in range(N // 2):
                with outer:
                    with inner:
                        pass
        threads = [threading.Thread(target=worker) for _ in range(n)]
        for t in threads:
            t.start()
        barrier.wait()
        t0 = time.perf_counter_ns()
        for t in threads:
            t.join()
        wall = time.perf_counter_ns() - t0
        print("%-32s %8.0f ns per pair, %d threads x %d pairs (%d ranges)" % (
            "roctx_utils.annotate, threads", wall / (n * N), n, N, n * N))
    print("stats", roctx_utils.stats())


if __name__ == "__main__":
    main()
