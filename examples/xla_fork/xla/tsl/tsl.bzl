"""Stand-in for the two macros of XLA's xla/tsl/tsl.bzl that the fork's TSL profiler BUILD uses."""

def nvtx_headers():
    return []  # NVTX's headers, only ever used when CUDA is configured

def if_not_android(a):
    return a
