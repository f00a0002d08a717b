#!/bin/bash
# Kernel stage through the C ABI and the fake rocprofiler-sdk (see bench/kernels_benchmark.cc):
# op_begin + op_end per op, a ROCTX range pair with and without kernel attribution, and
# dispatch records/s through the fake SDK's buffer delivery into our decoder. Configuration is
# read once per process, so the binary runs once per configuration.
# Usage: scripts/bench_kernels.sh [--prebuilt] [extra google-benchmark flags]
#   --prebuilt: use bazel-bin/bench/kernels_benchmark as is (e.g. on a machine without Bazel).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --prebuilt ]; then shift; else
  bazel-4 build -c opt //bench:kernels_benchmark --config=bazel4 --config=rocm >&2
fi
BIN=bazel-bin/bench/kernels_benchmark
SDK=$PWD/bazel-bin/cc_tests/fake_sdk7/lib/librocprofiler-sdk.so.1
ROCTX=$PWD/bazel-bin/cc_tests/libfake_roctx.so
OUT_DIR=$(mktemp -d)
trap 'rm -rf "$OUT_DIR"' EXIT
EXTRA=("$@")
run() {
  local label=$1; shift
  echo "== $label"
  env "$@" ROCTX_UTILS_LOG=off "$BIN" --benchmark_min_time=0.2 --benchmark_repetitions=5 \
    --benchmark_report_aggregates_only=true "${EXTRA[@]}" 2>&1 | grep -E '_median|ERROR|error' | uniq || true
}
# Tool mode against the fake SDK (ROCm 7.0 layout), as cc_tests' roofline_v10000_test runs it.
TOOL=(XLA_ROCM_ENABLE_ROCTX=1 ROCTX_UTILS_CAPTURE=sdk ROCTX_UTILS_ROCTX_LIBRARY="$ROCTX"
  ROCTX_UTILS_ROCPROFILER_LIBRARY="$SDK" FAKE_ROCPROFILER_VERSION=10000 FAKE_ROCPROFILER_NO_ATEXIT=1)
run "off: nothing configured (op scopes dormant)" ROCTX_UTILS_ROCTX_LIBRARY=/nonexistent/none.so ROCM_PATH=/nonexistent
# Kernel tracing is on by default in tool mode (ROCTX_UTILS_KERNELS), with or without a report
# path; ROCTX_UTILS_KERNELS=0 is what turns op scopes off there.
run "untraced: tool mode, fake SDK, ROCTX_UTILS_KERNELS=0" "${TOOL[@]}" ROCTX_UTILS_KERNELS=0
run "traced: tool mode, fake SDK, ROCTX_UTILS_ROOFLINE_OUT set" "${TOOL[@]}" ROCTX_UTILS_ROOFLINE_OUT="$OUT_DIR/roofline.json"
