#!/bin/bash
# In-process capture cost per range, 1..16 threads (see bench/capture_benchmark.cc).
# Usage: scripts/bench_capture.sh [--prebuilt] [extra google-benchmark flags]
#   --prebuilt: use bazel-bin/bench/capture_benchmark as is (e.g. on a machine without Bazel).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --prebuilt ]; then shift; else
  bazel-4 build -c opt //bench:capture_benchmark --config=bazel4 --config=rocm >&2
fi
XLA_ROCM_ENABLE_ROCTX=1 ROCTX_UTILS_CAPTURE=self ROCTX_UTILS_LOG=off \
  ROCTX_UTILS_ROCTX_LIBRARY=/nonexistent/none.so ROCM_PATH=/nonexistent \
  bazel-bin/bench/capture_benchmark --benchmark_min_time=0.2 --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true "$@" 2>&1 | grep -E '_median|warning|ERROR|Run on|CPU'
