"""Stand-in for XLA's xla/tsl/platform/default/cuda_build_defs.bzl: this example has no CUDA."""

def if_cuda_is_configured(if_true, if_false = []):  # buildifier: disable=unused-variable
    return if_false
