"""A user's script, annotated every way the package supports; tests/test.sh runs it with the
native library and checks the log directory through XProf's reader (check_xprof.py).

Usage: annotated_script.py explicit|zero-code
  explicit   calls roctx_utils.jax.install() itself
  zero-code  relies on ROCTX_UTILS_PYTHON_HOOKS=1 (fails if jax was not hooked at import)
"""

import asyncio
import sys
import threading

import jax
import jax.numpy as jnp

import roctx_utils
import roctx_utils.jax

HOOK = "__roctx_utils_hooked__"

mode = sys.argv[1] if len(sys.argv) > 1 else "explicit"
if mode == "explicit":
    assert roctx_utils.jax.install() is True
    assert roctx_utils.jax.install() is True  # twice is harmless
elif not jax.profiler.TraceAnnotation.__dict__.get(HOOK):
    sys.exit("zero-code: jax.profiler.TraceAnnotation was not hooked at import")


@jax.jit
def step(x):
    return jnp.tanh(x @ x.T).sum()


x = jnp.ones((8, 8))
for i in range(2):
    with jax.profiler.TraceAnnotation(f"user_step_{i}"):
        with roctx_utils.annotate("inner"):
            step(x).block_until_ready()

with jax.profiler.StepTraceAnnotation("train", step_num=3):
    @jax.profiler.annotate_function
    def forward():
        return step(x).block_until_ready()
    forward()

with jax.profiler.TraceAnnotation("tagged", batch=4, flag=True):
    pass

# Created, never entered with `with`: popped when collected, before what follows.
t = jax.profiler.TraceAnnotation("no_with")
del t
with roctx_utils.annotate("after_no_with"):
    pass

try:
    with roctx_utils.annotate("raises"):
        raise ValueError("inside the block")
except ValueError:
    pass
with roctx_utils.annotate("after_error"):
    pass


@roctx_utils.annotate("gen_step")
def numbers():
    for i in range(3):
        yield i


assert list(numbers()) == [0, 1, 2]


@roctx_utils.annotate
async def fetch():
    await asyncio.sleep(0)
    return 5


async def both():
    # Two coroutines interleaved on one thread: each resumption is its own range.
    return await asyncio.gather(fetch(), fetch())


assert asyncio.run(both()) == [5, 5]


def worker(i):
    with roctx_utils.annotate(f"worker_{i}"):
        step(x + i).block_until_ready()


threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
for th in threads:
    th.start()
for th in threads:
    th.join()

roctx_utils.mark("done")
assert roctx_utils.stats() == {"wrong_thread_stops": 0, "errors": 0}, roctx_utils.stats()
print("annotated_script: ok (%s, library %s)" % (mode, roctx_utils.library()))
