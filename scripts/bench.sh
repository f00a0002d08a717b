#!/bin/bash
# The benchmark command: builds and runs the side-by-side capture suite (bench/side_by_side.cc:
# NVTX3 with no tool, two BOOTTIME reads, the hardware floor, a model of upstream's
# MarkerCallback path and roctx_utils, on 1..16 threads), keeps its raw output under
# bench/results/, and rewrites BENCHMARKS.md's table for this machine from it.
#
#   bash scripts/bench.sh                     build here, run here, rewrite BENCHMARKS.md
#   BENCH_BIN=dir bash scripts/bench.sh       run a binary built earlier (dir holds side_by_side
#                                             and build_info.txt; the device machine has no Bazel)
#   bash scripts/bench.sh --build-only DIR    build, and put the binary and build_info.txt in DIR
#
# Env: BENCH_PAIRS (pairs per thread, default 2000000), BENCH_MAX_THREADS (default 16),
# BENCH_MACHINE (a name for this machine; default: the CPU model and core count).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

build() {
  local out=$1
  source scripts/setup_env.sh >/dev/null && ensure_packages >&2
  bazel-4 build -c opt //bench:side_by_side --config=bazel4 --config=rocm >&2
  mkdir -p "$out"
  install -m 0755 bazel-bin/bench/side_by_side "$out/"
  # Debian's Google Benchmark, for machines without it (the device machine).
  cp -L "$(ldd bazel-bin/bench/side_by_side | awk '/libbenchmark/ {print $3}')" "$out/"
  local compilers commit
  compilers="$(gcc --version | head -n 1 | sed 's/^gcc (Debian \(.*\)) .*/gcc \1/') + $(rustc --version | cut -d' ' -f1-2)"
  commit="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- rust include compat bench BUILD.bazel || echo '+changes')"
  printf 'compilers=%q\ncommit=%q\n' "$compilers" "$commit" >"$out/build_info.txt"
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
compilers="?" commit="?"
source "$BIN/build_info.txt" 2>/dev/null || true
cpu=$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)
cores=$(nproc)
machine=${BENCH_MACHINE:-"$cores-core $cpu"}
tag="${cores}core"
date=$(date -u +%F)
raw=bench/results/${date}_side_by_side_${tag}.json
mkdir -p bench/results "${OUT:-bench/results}"

# In-process capture with no roctx library: the figure is the capture alone. No NVTX tool.
# (Google Benchmark splits --benchmark_context values at commas.)
machine=${machine//,/;} cpu=${cpu//,/;}
env -u NVTX_INJECTION64_PATH XLA_ROCM_ENABLE_ROCTX=1 ROCTX_UTILS_CAPTURE=self ROCTX_UTILS_LOG=off \
  LD_LIBRARY_PATH="$BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  ROCTX_UTILS_ROCTX_LIBRARY=/nonexistent/none.so ROCM_PATH=/nonexistent \
  "$BIN/side_by_side" --benchmark_format=json --benchmark_out_format=json --benchmark_out="$raw.tmp" \
  --benchmark_context=machine="$machine" --benchmark_context=machine_tag="$tag" \
  --benchmark_context=cpu="$cpu" --benchmark_context=compilers="$compilers" \
  --benchmark_context=commit="$commit" --benchmark_context=pairs="${BENCH_PAIRS:-2000000}" \
  --benchmark_context=command="scripts/bench.sh" >/dev/null
mv "$raw.tmp" "$raw"
[ -n "${OUT:-}" ] && cp "$raw" "$OUT/"
python3 scripts/bench_tables.py "$raw"
if [ -w BENCHMARKS.md ] && [ -z "${OUT:-}" ]; then
  python3 scripts/bench_tables.py "$raw" --write BENCHMARKS.md
  echo "BENCHMARKS.md: table for $tag rewritten from $raw"
fi
