"""Issue 23 on the H200: a stock JAX script that annotates its own steps, run with the NVTX
injection and ROCTX_UTILS_PYTHON_HOOKS=1 (no roctx_utils import, no code change). The workload
is jax_transformer_scan.py's (lax.scan over 4 bf16 transformer layers), at XLA's default flags.

  jax_user_steps.py STEPS

Each measured step is `StepTraceAnnotation("train", step_num=i)` holding a
`TraceAnnotation("forward_backward")` around the step and a block_until_ready, so the step's
GPU work ends inside it. check_user_steps.py reads the result.
"""
import sys

import jax
import jax.numpy as jnp

from jax_transformer_scan import BATCH, D, SEQ, init, run, train_step


def main():
    steps = int(sys.argv[1])
    hooked = bool(jax.profiler.TraceAnnotation.__dict__.get("__roctx_utils_hooked__"))
    print("jax %s, TraceAnnotation hooked: %s" % (jax.__version__, hooked))
    params = init(jax.random.PRNGKey(0))
    x = jax.random.normal(jax.random.PRNGKey(1), (BATCH, SEQ, D)).astype(jnp.bfloat16)
    params = run(params, x, 3)  # compile, autotune, warm up: not annotated
    for i in range(steps):
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            with jax.profiler.TraceAnnotation("forward_backward"):
                params = train_step(params, x)
            jax.block_until_ready(params)
    print("jax_user_steps: done")


if __name__ == "__main__":
    main()
