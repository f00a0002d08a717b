#!/bin/bash
# llama.cpp's hooks per op on the host, kernels traced (see bench/ggml_hooks_benchmark.cc):
# GGML_ROOFLINE_OUT set, the fake rocprofiler-sdk (ROCm 7.0 layout) as the SDK, -c opt.
# Usage: scripts/bench_ggml_hooks.sh [extra google-benchmark flags]
set -euo pipefail
cd "$(dirname "$0")/.."
bazel-4 build -c opt //bench:ggml_hooks_benchmark //cc_tests:fake_sdk7/lib/librocprofiler-sdk.so.1 //cc_tests:libfake_roctx.so --config=bazel4 --config=rocm >&2
OUT_DIR=$(mktemp -d)
trap 'rm -rf "$OUT_DIR"' EXIT
env -u ROCTX_UTILS_CAPTURE -u ROCTX_UTILS_ROOFLINE_OUT ROCTX_UTILS_LOG=off \
  GGML_ROOFLINE_OUT="$OUT_DIR/roofline.json" FAKE_ROCPROFILER_VERSION=10000 FAKE_ROCPROFILER_NO_ATEXIT=1 \
  ROCTX_UTILS_ROCTX_LIBRARY="$PWD/bazel-bin/cc_tests/libfake_roctx.so" \
  ROCTX_UTILS_ROCPROFILER_LIBRARY="$PWD/bazel-bin/cc_tests/fake_sdk7/lib/librocprofiler-sdk.so.1" \
  bazel-bin/bench/ggml_hooks_benchmark --benchmark_min_time=0.5 "$@"
