"""Test macros: tests that need the Rust implementation are incompatible (SKIPPED under //...)
without --config=rocm, instead of silently testing the stub."""

load("@rules_cc//cc:defs.bzl", "cc_test")

ROCM_ONLY = select({
    "//:rocm_linux_x86_64": [],
    "//conditions:default": ["//:incompatible"],
})

def roctx_test(name, srcs, env = {}, data = [], deps = [], **kwargs):
    """A googletest cc_test against //:roctx_utils_impl with the fake roctx in its runfiles."""
    cc_test(
        name = name,
        size = kwargs.pop("size", "small"),
        srcs = srcs + ["fake_roctx_client.h"],
        env = env,
        data = data + [":libfake_roctx.so"],
        linkopts = ["-ldl"] + kwargs.pop("linkopts", []),
        target_compatible_with = ROCM_ONLY,
        deps = deps + [
            "//cc_tests:tsan_suppressions",  # Rust's mutexes are invisible to TSan (tsan.supp)
            "//:roctx_utils_headers",
            "//:roctx_utils_impl",
            "//compat:tsl_profiler",
            "@googletest//:gtest_main",
        ],
        **kwargs
    )
