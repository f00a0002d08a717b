#!/bin/bash
# Instructions per RangePush+RangePop pair (ours), per raw roctx pair and per NVTX pair through
# the injection, from callgrind counts at
# two loop lengths (so start-up cancels out). Deterministic: use it to compare hot-path changes.
set -euo pipefail
cd "$(dirname "$0")/.."
bazel-4 build -c opt //bench:emitter_instructions //bench:nvtx_threads //nvtx:libroctx_utils_nvtx.so //cc_tests:libfake_roctx.so //cc_tests:libfake_cupti.so --config=bazel4 --config=rocm >&2
BIN=bazel-bin/bench/emitter_instructions
count() {  # count MODE N [env...]
  local mode=$1 n=$2; shift 2
  local out; out=$(mktemp)
  env "$@" ROCTX_UTILS_LOG=off valgrind --tool=callgrind --callgrind-out-file="$out" "$BIN" "$mode" "$n" >/dev/null 2>&1
  local total; total=$(grep -E '^(summary|totals):' "$out" | head -1 | awk '{print $2}')
  rm -f "$out"; echo "$total"
}
per_pair() {  # per_pair LABEL MODE env...
  local label=$1 mode=$2; shift 2
  local a b; a=$(count "$mode" 100000 "$@"); b=$(count "$mode" 200000 "$@")
  printf '%-58s %6.1f instructions/pair\n' "$label" "$(echo "($b - $a) / 100000" | bc -l)"
}
FAKE=$PWD/bazel-bin/cc_tests/libfake_roctx.so
per_pair "raw fake roctx pair (baseline)" raw XLA_ROCM_ENABLE_ROCTX=1 ROCTX_UTILS_ROCTX_LIBRARY="$FAKE"
per_pair "RangePush+RangePop, fake roctx, AnnotationStack off" ours XLA_ROCM_ENABLE_ROCTX=1 ROCTX_UTILS_ROCTX_LIBRARY="$FAKE"
per_pair "RangePush+RangePop, no roctx" ours XLA_ROCM_ENABLE_ROCTX=1 ROCTX_UTILS_ROCTX_LIBRARY=/nonexistent.so ROCM_PATH=/nonexistent
per_pair "RangePush+RangePop, in-process capture, no roctx" capture XLA_ROCM_ENABLE_ROCTX=1 ROCTX_UTILS_ROCTX_LIBRARY=/nonexistent.so ROCM_PATH=/nonexistent
per_pair "RangePush(RegisterString title)+RangePop, in-process capture" registered XLA_ROCM_ENABLE_ROCTX=1 ROCTX_UTILS_ROCTX_LIBRARY=/nonexistent.so ROCM_PATH=/nonexistent
per_pair "roctx_utils_mark, in-process capture, no roctx (per mark)" mark XLA_ROCM_ENABLE_ROCTX=1 ROCTX_UTILS_ROCTX_LIBRARY=/nonexistent.so ROCM_PATH=/nonexistent
# Capture windows (issue 43): armed, and no window open: the in-process sink installed, the
# collector's session stopped (a range trigger compares each label's length and tail; the profiler
# API's windows compare nothing).
WINDOW_OUT=$(mktemp -d)
trap 'rm -rf "$WINDOW_OUT"' EXIT
per_pair "RangePush+RangePop, outside a capture window (range:NAME waiting), no roctx" ours XLA_ROCM_ENABLE_ROCTX=1 ROCTX_UTILS_ROCTX_LIBRARY=/nonexistent.so ROCM_PATH=/nonexistent ROCTX_UTILS_XSPACE_OUT="$WINDOW_OUT" ROCTX_UTILS_CAPTURE_RANGE=range:never_pushed ROCTX_UTILS_KERNELS=0
per_pair "RangePush+RangePop, outside a capture window (profiler-api), no roctx" ours XLA_ROCM_ENABLE_ROCTX=1 ROCTX_UTILS_ROCTX_LIBRARY=/nonexistent.so ROCM_PATH=/nonexistent ROCTX_UTILS_XSPACE_OUT="$WINDOW_OUT" ROCTX_UTILS_CAPTURE_RANGE=profiler-api ROCTX_UTILS_KERNELS=0

# The NVTX injection (issue 44): nvtxRangePushA + nvtxRangePop through the dlopen'ed
# libroctx_utils_nvtx.so, in-process capture on one thread of bench/nvtx_threads. The harness's
# threads spin while they wait for each other (a count that varies with scheduling), so this
# counts only the injection's two entry points, inclusive of everything they call.
NVTX_SO=$PWD/bazel-bin/nvtx/libroctx_utils_nvtx.so
nvtx_inclusive() {  # nvtx_inclusive N env...
  local n=$1; shift
  local out; out=$(mktemp)
  env "$@" BENCH_MAX_THREADS=1 BENCH_ROUNDS=1 BENCH_PAIRS="$n" NVTX_INJECTION64_PATH="$NVTX_SO" ROCTX_UTILS_LOG=off \
    valgrind --tool=callgrind --callgrind-out-file="$out" bazel-bin/bench/nvtx_threads ours >/dev/null 2>&1
  callgrind_annotate --inclusive=yes "$out" 2>/dev/null |
    grep -E 'roctx_utils::abi::nvtx::(range_push_a|range_pop|domain_range_push_ex|domain_range_pop) \[' | awk '{gsub(",", "", $1); s += $1} END {print s}'
  rm -f "$out"
}
nvtx_per_pair() {  # nvtx_per_pair LABEL env...
  local label=$1; shift
  local a b; a=$(nvtx_inclusive 100000 "$@"); b=$(nvtx_inclusive 200000 "$@")
  printf '%-58s %6.1f instructions/pair\n' "$label" "$(echo "($b - $a) / 100000" | bc -l)"
}
nvtx_per_pair "nvtxRangePushA+nvtxRangePop, injection, capture, kernels off" ROCTX_UTILS_KERNELS=0
nvtx_per_pair "nvtxRangePushA+nvtxRangePop, injection, capture, kernels on (fake CUPTI)" ROCTX_UTILS_CUPTI_LIBRARY="$PWD/bazel-bin/cc_tests/libfake_cupti.so"
nvtx_per_pair "nvtxDomainRangePushEx(registered)+Pop, TSL domain, kernels off" ROCTX_UTILS_KERNELS=0 BENCH_REGISTERED=1
