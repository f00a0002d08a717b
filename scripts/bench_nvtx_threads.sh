#!/bin/bash
# Issue 21's benchmark: an NVTX range (nvtxRangePushA + nvtxRangePop) on 1..16 threads through
# NVIDIA's own NVTX3 loader (bench/nvtx_threads.cc), in one run, each configuration its own
# process: the floor (no NVTX), CUPTI's own NVTX capture (NVTX_INJECTION64_PATH = libcupti,
# MARKER activity on), ours with kernels off (one session: fresh memory; and a session per round,
# reusing the chunks, as side_by_side's linked rows do), ours with kernels traced (the default).
#
#   bash scripts/bench_nvtx_threads.sh --build-only DIR   build here; DIR gets the binaries
#   BENCH_BIN=DIR CUPTI=/path/libcupti.so.13 bash scripts/bench_nvtx_threads.sh
#                                                         run (CUPTI unset: the fake libcupti,
#                                                         and no CUPTI-capture column)
# Env: BENCH_PAIRS (default 1000000), BENCH_ROUNDS (3), BENCH_MAX_THREADS (16).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
build() {
  local out=$1
  source scripts/setup_env.sh >/dev/null && ensure_packages >&2
  bazel-4 build -c opt //bench:nvtx_threads //nvtx:libroctx_utils_nvtx.so //cc_tests:libfake_cupti.so \
    --config=bazel4 --config=rocm >&2
  mkdir -p "$out"
  install -m 0755 bazel-bin/bench/nvtx_threads bazel-bin/nvtx/libroctx_utils_nvtx.so bazel-bin/cc_tests/libfake_cupti.so "$out/"
  echo "commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- rust bench nvtx || echo '+changes')" >"$out/build_info.txt"
}
if [ "${1:-}" = "--build-only" ]; then
  build "${2:?--build-only DIR}"
  exit 0
fi
BIN=${BENCH_BIN:-}
if [ -z "$BIN" ]; then
  BIN=$(mktemp -d)
  build "$BIN"
fi
cat "$BIN/build_info.txt" 2>/dev/null || true
echo "machine: $(nproc)-core $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1); $(date -u +%F)"
ours=(env ROCTX_UTILS_LOG=off ROCTX_UTILS_ROCTX_LIBRARY=/nonexistent/none.so ROCM_PATH=/nonexistent
  NVTX_INJECTION64_PATH="$BIN/libroctx_utils_nvtx.so")
"$BIN/nvtx_threads" floor
if [ -n "${CUPTI:-}" ]; then
  env NVTX_INJECTION64_PATH="$CUPTI" BENCH_CUPTI="$CUPTI" "$BIN/nvtx_threads" cupti
fi
"${ours[@]}" ROCTX_UTILS_KERNELS=0 "$BIN/nvtx_threads" ours | sed 's/^ours/ours_kernels_off/'
# The same with a session per round, whose chunks the next round reuses: how side_by_side's
# linked rows run (a session per benchmark run), so the two paths compare on the same memory.
"${ours[@]}" ROCTX_UTILS_KERNELS=0 BENCH_SESSION_PER_ROUND=1 "$BIN/nvtx_threads" ours | sed 's/^ours/ours_kernels_off_reused/'
"${ours[@]}" ROCTX_UTILS_CUPTI_LIBRARY="${CUPTI:-$BIN/libfake_cupti.so}" "$BIN/nvtx_threads" ours |
  sed "s/^ours/ours_kernels_traced${CUPTI:+_real_cupti}/"
