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
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    key = jax.random.PRNGKey(0)
    params = init(key, [1024, 4096, 4096, 1024])
    x = jax.random.normal(key, (512, 1024))
    y = jax.random.normal(key, (512, 1024))
    for _ in range(steps):
        params = step(params, x, y)
    jax.block_until_ready(params)
    print("jax: %d steps on %s" % (steps, jax.devices()[0]))


if __name__ == "__main__":
    main()
