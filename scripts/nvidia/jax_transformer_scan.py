"""A workload this repository was not tuned on (issue 22): a 4-layer bf16 transformer training
step whose layers run under `lax.scan`, with attention, at XLA's default flags (command buffers,
i.e. CUDA graphs, on). Modes:

  jax_transformer_scan.py STEPS                  # warm-up, then STEPS steps (run it injected)
  jax_transformer_scan.py STEPS --trace DIR      # the same, STEPS under jax.profiler.trace (the
                                                 # reference, a separate process, no injection)
  jax_transformer_scan.py STEPS --trace-inside DIR
                                                 # injected: STEPS steps, then STEPS under a
                                                 # jax.profiler.trace, then STEPS more

Prints `measured steps from <CLOCK_BOOTTIME ns>` where the measured steps begin (our XSpace's
clock), and `phases <t1> <t2> <t3> <t4>` (boottime ns) for --trace-inside; `--pause-ms N` waits
N ms after the trace before the last steps.
"""
import sys
import time

import jax
import jax.numpy as jnp

LAYERS, D, HEADS, SEQ, BATCH, FF = 4, 512, 8, 256, 8, 2048


def init(key):
    def layer(k):
        ks = jax.random.split(k, 4)
        s = D ** -0.5
        return {
            "qkv": (jax.random.normal(ks[0], (D, 3 * D)) * s).astype(jnp.bfloat16),
            "out": (jax.random.normal(ks[1], (D, D)) * s).astype(jnp.bfloat16),
            "ff1": (jax.random.normal(ks[2], (D, FF)) * s).astype(jnp.bfloat16),
            "ff2": (jax.random.normal(ks[3], (FF, D)) * FF ** -0.5).astype(jnp.bfloat16),
        }
    layers = [layer(k) for k in jax.random.split(key, LAYERS)]
    return jax.tree.map(lambda *xs: jnp.stack(xs), *layers)


def block(x, p):
    h = x
    qkv = (h @ p["qkv"]).reshape(BATCH, SEQ, 3, HEADS, D // HEADS)
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    att = jax.nn.softmax(jnp.einsum("bqhd,bkhd->bhqk", q, k).astype(jnp.float32) / (D // HEADS) ** 0.5, axis=-1)
    o = jnp.einsum("bhqk,bkhd->bqhd", att.astype(jnp.bfloat16), v).reshape(BATCH, SEQ, D)
    x = x + o @ p["out"]
    return x + jax.nn.gelu(x @ p["ff1"]) @ p["ff2"], None


def loss(params, x):
    y, _ = jax.lax.scan(block, x, params)
    return jnp.mean(y.astype(jnp.float32) ** 2)


@jax.jit
def train_step(params, x):
    g = jax.grad(loss)(params, x)
    return jax.tree.map(lambda w, gw: w - (1e-3 * gw).astype(w.dtype), params, g)


def boottime():
    return time.clock_gettime_ns(time.CLOCK_BOOTTIME)


def run(params, x, steps):
    for _ in range(steps):
        params = train_step(params, x)
    jax.block_until_ready(params)
    return params


def main():
    steps = int(sys.argv[1])
    params = init(jax.random.PRNGKey(0))
    x = jax.random.normal(jax.random.PRNGKey(1), (BATCH, SEQ, D)).astype(jnp.bfloat16)
    params = run(params, x, 3)  # compile, autotune, warm up
    if "--trace" in sys.argv:
        with jax.profiler.trace(sys.argv[sys.argv.index("--trace") + 1]):
            run(params, x, steps)
    elif "--trace-inside" in sys.argv:
        t1 = boottime()
        params = run(params, x, steps)
        t2 = boottime()
        jax.profiler.start_trace(sys.argv[sys.argv.index("--trace-inside") + 1])
        params = run(params, x, steps)
        jax.profiler.stop_trace()
        t3 = boottime()
        if "--pause-ms" in sys.argv:  # a pause after the trace: when does CUPTI come back to us?
            time.sleep(int(sys.argv[sys.argv.index("--pause-ms") + 1]) / 1000)
        run(params, x, steps)
        t4 = boottime()
        print("phases %d %d %d %d" % (t1, t2, t3, t4))
    else:
        print("measured steps from %d" % boottime())
        run(params, x, steps)
    print("jax_transformer_scan: done")


if __name__ == "__main__":
    main()
