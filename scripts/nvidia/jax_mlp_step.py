"""A jitted MLP training step, run a few times: what scripts/validate_nvidia.sh traces under the
NVTX injection (XlaModule/Thunk ranges per execution). Run with
XLA_FLAGS=--xla_gpu_enable_command_buffer= so every execution emits per-thunk ranges."""
import sys

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


def main():
    """Usage: jax_mlp_step.py [STEPS] [--trace DIR]. Two warm-up steps (compilation, autotuning)
    come first; with --trace, the measured steps run inside jax.profiler.trace(DIR) (the XProf
    reference: run it without the NVTX injection)."""
    args = sys.argv[1:]
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
