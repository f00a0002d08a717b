"""The facade linked as a shared object that a process loads by path (the NVTX injection,
the rocprofiler-sdk tool library): roctx_utils' C API kept in the link, a version script
choosing the exports, -Bsymbolic so nothing of ours binds to the host's symbols."""

load("@rules_cc//cc:defs.bzl", "cc_binary")
load("//cc_tests:defs.bzl", "ROCM_ONLY")

def roctx_shared_library(name, exports, srcs = [], undefined = []):
    """`name` (a .so): the Rust implementation, the C API, `exports` as its version script.

    Args:
      name: the library's file name.
      exports: label of the version script.
      srcs: C sources of its own (an entry point that must not be in the staticlib).
      undefined: symbols of the staticlib that nothing in the link calls, to keep.
    """
    cc_binary(
        name = name,
        # The profiler API's start/stop, for capture windows when the library is preloaded.
        srcs = srcs + ["//nvtx:profiler_api.c"],
        additional_linker_inputs = [
            exports,
            "//nvtx:c_api_symbols",
        ],
        linkopts = ["-Wl,--undefined=" + s for s in undefined] + [
            # The C API lives in the Rust staticlib and nothing in this link calls it.
            "-Wl,@$(location //nvtx:c_api_symbols)",
            "-Wl,--version-script=$(location %s)" % exports,
            "-Wl,-Bsymbolic",
            "-ldl",
            "-lpthread",
        ],
        linkshared = True,
        target_compatible_with = ROCM_ONLY,
        visibility = ["//visibility:public"],
        deps = [
            "//:roctx_utils_impl",
            "//compat:tsl_profiler",
        ],
    )
