#!/bin/bash
# Cost of an NVTX range through libroctx_utils_nvtx.so (bench/nvtx_benchmark.cc), in five
# configurations: no session, an in-process session, a session with kernels traced through
# the fake libcupti, and outside a capture window (issue 43: a range trigger waiting, and the
# profiler API's windows armed). Usage: scripts/bench_nvtx.sh [extra google-benchmark flags]
set -euo pipefail
cd "$(dirname "$0")/.."
bazel-4 build -c opt //bench:nvtx_benchmark //nvtx:libroctx_utils_nvtx.so //cc_tests:libfake_cupti.so \
  --config=bazel4 --config=rocm >&2
run() {
  echo "== $1"
  shift
  env NVTX_INJECTION64_PATH="$PWD/bazel-bin/nvtx/libroctx_utils_nvtx.so" ROCTX_UTILS_LOG=off \
    ROCTX_UTILS_ROCTX_LIBRARY=/nonexistent/none.so ROCM_PATH=/nonexistent "$@" \
    bazel-bin/bench/nvtx_benchmark --benchmark_min_time=0.2 --benchmark_repetitions=5 \
    --benchmark_report_aggregates_only=true ${EXTRA:-} 2>&1 | grep -E '_median|ERROR|not loaded|did not'
}
EXTRA="$*"
run "no session, kernels off" ROCTX_UTILS_KERNELS=0
run "in-process session, kernels off" BENCH_SESSION=1 ROCTX_UTILS_KERNELS=0
run "in-process session, kernels traced (fake libcupti)" BENCH_SESSION=1 \
  ROCTX_UTILS_CUPTI_LIBRARY="$PWD/bazel-bin/cc_tests/libfake_cupti.so"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
run "outside a capture window: range:NAME waiting (a label compare per push)" ROCTX_UTILS_KERNELS=0 \
  ROCTX_UTILS_XSPACE_OUT="$out" ROCTX_UTILS_CAPTURE_RANGE=range:never_pushed
run "outside a capture window: profiler-api armed" ROCTX_UTILS_KERNELS=0 \
  ROCTX_UTILS_XSPACE_OUT="$out" ROCTX_UTILS_CAPTURE_RANGE=profiler-api
