#!/bin/bash
# The benchmark command: builds and runs the side-by-side capture suite (bench/side_by_side.cc:
# NVTX3 with no tool, two BOOTTIME reads, the hardware floor, a model of upstream's
# MarkerCallback path, roctx_utils and Tracy's zone (scripts/bench_tracy.sh), on 1..16 threads), then the NVTX injection on 1..16
# threads (scripts/bench_nvtx_threads.sh: the floor, CUPTI's own NVTX capture where CUPTI is
# given, ours with kernels off and traced) and the Python annotations (python/bench/
# bench_annotate.py, where a Python 3 is found), keeps the raw outputs under bench/results/, and
# rewrites BENCHMARKS.md's tables for this machine from them: the side-by-side table and the
# summary of every path (issue 44).
#
#   bash scripts/bench.sh                     build here, run here, rewrite BENCHMARKS.md
#   BENCH_BIN=dir bash scripts/bench.sh       run a binary built earlier (dir holds side_by_side
#                                             and build_info.txt; the device machine has no Bazel)
#   bash scripts/bench.sh --build-only DIR    build, and put the binary and build_info.txt in DIR
#
# Env: BENCH_PAIRS (pairs per thread, default 2000000), BENCH_MAX_THREADS (default 16),
# BENCH_MACHINE (a name for this machine; default: the CPU model and core count), CUPTI (a real
# libcupti.so: CUPTI's NVTX capture and our kernels traced through it; default: the fake CUPTI,
# no CUPTI column), BENCH_PYTHON (the Python with jax for the Python rows; default python3;
# "none": no Python rows), BENCH_PY_ROUNDS (runs of bench_annotate.py, default 3: the table
# takes each row's median, and the hooked TraceAnnotation's median difference from stock).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

build() {
  local out=$1
  source scripts/setup_env.sh >/dev/null && ensure_packages >&2
  bazel-4 build -c opt //bench:side_by_side //bench:nvtx_threads //nvtx:libroctx_utils_nvtx.so \
    //cc_tests:libfake_cupti.so --config=bazel4 --config=rocm >&2
  mkdir -p "$out"
  install -m 0755 bazel-bin/bench/side_by_side bazel-bin/bench/nvtx_threads bazel-bin/nvtx/libroctx_utils_nvtx.so \
    bazel-bin/cc_tests/libfake_cupti.so "$out/"
  # Tracy's zone, the anchor (scripts/bench_tracy.sh; its source from crates.io).
  bash scripts/bench_tracy.sh "$out" || echo "warning: Tracy's client did not build: no Tracy rows" >&2
  # The Python package with its compiled fast path (abi3: any CPython 3.9+ of this platform).
  rm -rf "$out/python" && mkdir -p "$out/python" && cp -r python/src/roctx_utils "$out/python/"
  python3 python/build_fast.py "$out/python/roctx_utils" >&2 || echo "warning: no compiled fast path for the Python rows" >&2
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
# One session for the whole run (BENCH_ONE_SESSION=1, bench/capture_session.h), so the linked
# rows record into fresh memory as a program's one session does, like the injection's default
# row; BENCH_ONE_SESSION=0 gives each run its own session, reusing the pool's chunks (the tables
# before 2026-12-08). One session keeps every range of the run: about 9 GiB at 16 threads.
sessions=${BENCH_ONE_SESSION:-1}
case $sessions in 0 | 1) ;; *) echo "bench.sh: BENCH_ONE_SESSION must be 0 or 1, not '$sessions'" >&2; exit 2 ;; esac
# (Google Benchmark splits --benchmark_context values at commas.)
machine=${machine//,/;} cpu=${cpu//,/;}
env -u NVTX_INJECTION64_PATH XLA_ROCM_ENABLE_ROCTX=1 ROCTX_UTILS_CAPTURE=self ROCTX_UTILS_LOG=off \
  LD_LIBRARY_PATH="$BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  ROCTX_UTILS_ROCTX_LIBRARY=/nonexistent/none.so ROCM_PATH=/nonexistent \
  BENCH_TRACY_LIB="$([ -f "$BIN/libbench_tracy.so" ] && echo "$BIN/libbench_tracy.so")" BENCH_ONE_SESSION="$sessions" \
  "$BIN/side_by_side" --benchmark_format=json --benchmark_out_format=json --benchmark_out="$raw.tmp" \
  --benchmark_context=machine="$machine" --benchmark_context=machine_tag="$tag" \
  --benchmark_context=cpu="$cpu" --benchmark_context=compilers="$compilers" \
  --benchmark_context=commit="$commit" --benchmark_context=pairs="${BENCH_PAIRS:-2000000}" \
  --benchmark_context=sessions="$([ "$sessions" = 1 ] && echo one || echo per-run)" \
  --benchmark_context=command="scripts/bench.sh" >/dev/null
mv "$raw.tmp" "$raw"

# The NVTX injection, each configuration its own process (scripts/bench_nvtx_threads.sh).
nvtx=bench/results/${date}_nvtx_threads_${tag}.txt
if [ -x "$BIN/nvtx_threads" ]; then
  BENCH_BIN=$BIN bash scripts/bench_nvtx_threads.sh >"$nvtx.tmp" && mv "$nvtx.tmp" "$nvtx"
else
  echo "warning: no $BIN/nvtx_threads: no NVTX-injection rows" >&2
  nvtx=
fi

# Python: our annotations next to a do-nothing context manager and jax's TraceAnnotation, with
# capture on, as users run them.
py=bench/results/${date}_python_annotate_${tag}.txt
PY=${BENCH_PYTHON:-python3}
if [ "$PY" != none ] && [ -d "$BIN/python/roctx_utils" ] && "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 9))' 2>/dev/null; then
  trace=$(mktemp -d)
  env -u ROCTX_UTILS_CAPTURE -u NVTX_INJECTION64_PATH PYTHONPATH="$BIN/python" ROCTX_UTILS_LIBRARY="$BIN/libroctx_utils_nvtx.so" \
    ROCTX_UTILS_XSPACE_OUT="$trace" ROCTX_UTILS_LOG=warn bash -c 'for r in $(seq 1 "$1"); do echo "## run $r"; "$2" python/bench/bench_annotate.py --threads 16 || exit; done' \
    _ "${BENCH_PY_ROUNDS:-3}" "$PY" >"$py.tmp" 2>&1 &&
    mv "$py.tmp" "$py" || { echo "warning: bench_annotate.py failed:" >&2; tail -n 5 "$py.tmp" >&2; py=; }
  rm -rf "$trace"
else
  echo "warning: no Python 3.9+ ($PY) or no package in $BIN/python: no Python rows" >&2
  py=
fi

[ -n "${OUT:-}" ] && cp "$raw" ${nvtx:+"$nvtx"} ${py:+"$py"} "$OUT/"
summary=(--summary "$raw" "${nvtx:--}" "${py:--}")
python3 scripts/bench_tables.py "$raw" "${summary[@]}"
if [ -w BENCHMARKS.md ] && [ -z "${OUT:-}" ]; then
  python3 scripts/bench_tables.py "$raw" "${summary[@]}" --write BENCHMARKS.md
  echo "BENCHMARKS.md: tables for $tag rewritten from $raw${nvtx:+, $nvtx}${py:+, $py}"
fi
