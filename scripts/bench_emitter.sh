#!/bin/bash
# Runs the emitter benchmark in the three emission configurations (the latch is per process)
# and prints one table. Usage: scripts/bench_emitter.sh [extra google-benchmark flags]
set -euo pipefail
cd "$(dirname "$0")/.."
bazel-4 build -c opt //bench:emitter_benchmark //cc_tests:libfake_roctx.so --config=bazel4 --config=rocm >&2
BIN=bazel-bin/bench/emitter_benchmark
FAKE=$PWD/bazel-bin/cc_tests/libfake_roctx.so
run() {
  local label=$1; shift
  echo "== $label"
  env "$@" ROCTX_UTILS_LOG=off "$BIN" --benchmark_min_time=0.2 --benchmark_repetitions=5 \
    --benchmark_report_aggregates_only=true "${EXTRA[@]}" 2>&1 | grep -E '_median|_mean|ERROR' || true
}
EXTRA=("$@")
run "emission disabled (XLA_ROCM_ENABLE_ROCTX=0), fake roctx bound" XLA_ROCM_ENABLE_ROCTX=0 ROCTX_UTILS_ROCTX_LIBRARY="$FAKE"
run "emission enabled, no roctx library" XLA_ROCM_ENABLE_ROCTX=1 ROCTX_UTILS_ROCTX_LIBRARY=/nonexistent/libroctx.so ROCM_PATH=/nonexistent
run "emission enabled, fake roctx" XLA_ROCM_ENABLE_ROCTX=1 ROCTX_UTILS_ROCTX_LIBRARY="$FAKE"
