#!/usr/bin/env python3
"""Writes a real XLA capture with its modules: a jit function on jax[cpu] under
jax.profiler.trace(LOGDIR). XLA puts each module's HloProto into the XSpace's /host:metadata
plane; check_op_scopes.py --merged-with checks they survive a merge with ours byte for byte.

Usage: jax_cpu_capture.py LOGDIR
"""
import sys

import jax
import jax.numpy as jnp


def main(logdir):
    step = jax.jit(lambda x: jnp.tanh(x @ x.T).sum())
    x = jnp.ones((64, 64))
    step(x).block_until_ready()  # compiled before the capture, as a training step would be
    with jax.profiler.trace(logdir):
        for _ in range(3):
            step(x).block_until_ready()


if __name__ == "__main__":
    main(sys.argv[1])
