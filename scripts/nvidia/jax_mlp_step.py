"""A jitted MLP training step, run a few times: what scripts/validate_nvidia.sh traces under the
NVTX injection (XlaModule/Thunk ranges per execution). Run with
XLA_FLAGS=--xla_gpu_enable_command_buffer= so every execution emits per-thunk ranges."""
import sys
import time

import jax
import jax.numpy as jnp


def init(key, sizes):
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        key, k = jax.random.split(key)
        params.append((jax.random.normal(k, (n_in, n_out), jnp.float32) / n_in**0.5, jnp.zeros(n_out)))
    return params


def loss(params, x, y):
    for w, b in params[:-1]:
        x = jnp.tanh(x @ w + b)
    w, b = params[-1]
    return jnp.mean((x @ w + b - y) ** 2)


@jax.jit
def step(params, x, y):
    g = jax.grad(loss)(params, x, y)
    return [(w - 1e-3 * gw, b - 1e-3 * gb) for (w, b), (gw, gb) in zip(params, g)]


def time_steps(params, x, y, steps, rounds=7):
    """The step's cost as a training loop sees it: `steps` steps dispatched back to back, then
    waited for; the median over `rounds` rounds, per step."""
    per_step = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(steps):
            params = step(params, x, y)
        jax.block_until_ready(params)
        per_step.append((time.perf_counter() - t0) / steps)
    per_step.sort()
    print("jax: step time %.2f us (median of %d rounds of %d steps; min %.2f)" % (per_step[rounds // 2] * 1e6, rounds, steps, per_step[0] * 1e6))


def main():
    """Usage: jax_mlp_step.py [STEPS] [--trace DIR] [--time]. Two warm-up steps (compilation,
    autotuning) come first; with --trace, the measured steps run inside jax.profiler.trace(DIR)
    (the XProf reference: run it without the NVTX injection); with --time, rounds of STEPS steps
    are timed instead (scripts/validate_nvidia.sh's overhead check)."""
    args = sys.argv[1:]
    timed = "--time" in args
    if timed:
        args.remove("--time")
    trace = None
    if "--trace" in args:
        trace = args[args.index("--trace") + 1]
        del args[args.index("--trace"):args.index("--trace") + 2]
    steps = int(args[0]) if args else 5
    key = jax.random.PRNGKey(0)
    params = init(key, [1024, 4096, 4096, 1024])
    x = jax.random.normal(key, (512, 1024))
    y = jax.random.normal(key, (512, 1024))
    for _ in range(2):
        params = step(params, x, y)
    jax.block_until_ready(params)
    if timed:
        time_steps(params, x, y, steps)
        return
    if trace:
        jax.profiler.start_trace(trace)
    for _ in range(steps):
        params = step(params, x, y)
    jax.block_until_ready(params)
    if trace:
        jax.profiler.stop_trace()
    print("jax: %d measured steps on %s" % (steps, jax.devices()[0]))


if __name__ == "__main__":
    main()
