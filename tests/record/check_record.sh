#!/bin/bash
# `roctx record` from an unpacked release tarball, against stock hosts that know nothing of
# roctx_utils: cc_tests/stock_hip_host.c on the fake rocprofiler-sdk (every supported record
# layout, the SDK found through ROCM_PATH as on a ROCm machine) and cc_tests/stock_cuda_host.cc
# on the fake CUPTI. XProf (tests/xprof/check_xprof.py) reads what was written. Then the
# failures `roctx record` must catch before the command starts, the exit status, signals, and a
# plain python3 annotating through the tarball's start-up hook.
#
# Then CPU-only recording (no GPU stack: `auto` says so and records, `--platform none`) and the
# binary wheel (issue 43): installed into a fresh venv, `roctx` on PATH, `import roctx_utils`,
# its glibc tag against auditwheel's, and a CPU-only recording of a Python script through it.
#
# Usage: tests/record/check_record.sh PREFIX BAZEL_BIN PYTHON WORKDIR [WHEEL]
#   PREFIX     the unpacked tarball (bin/roctx, lib/, python/)
#   WHEEL      the binary wheel scripts/release.sh built beside it
#   BAZEL_BIN  bazel-bin of a --config=rocm build holding //cc_tests's hosts and fakes
#   PYTHON     a python with xprof (the test command's venv)
# Prints PASS/FAIL lines and "record: N passed, M failed"; exits 1 on any failure.
set -uo pipefail

PREFIX=$1 BIN=$2 PY=$3 WORK=$4 WHEEL=${5:-}
HERE=$(cd "$(dirname "$0")" && pwd)
CHECK=$HERE/../xprof/check_xprof.py
ROCTX=$PREFIX/bin/roctx
HIP_HOST=$BIN/cc_tests/stock_hip_host
CUDA_HOST=$BIN/cc_tests/stock_cuda_host
FAKE_ROCM=$BIN/cc_tests/fake_sdk7  # lib/librocprofiler-sdk.so.1
OTHER_TOOL=$BIN/cc_tests/libfake_other_tool.so
FAKE_CUPTI=$BIN/cc_tests/libfake_cupti.so
passed=0 failed=0
mkdir -p "$WORK"

pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }

# Nothing of ours, and no GPU stack, may leak in from whoever runs the tests.
CLEAN=(env -u ROCP_TOOL_LIBRARIES -u ROCPROFILER_REGISTER_LIBRARY -u NVTX_INJECTION64_PATH
  -u ROCTX_UTILS_XSPACE_OUT -u ROCTX_UTILS_RUN_NAME -u ROCTX_UTILS_CAPTURE -u ROCTX_UTILS_KERNELS
  -u ROCTX_UTILS_ROOFLINE_OUT -u GGML_ROOFLINE_OUT -u ROCTX_UTILS_PYTHON_HOOKS -u PYTHONPATH
  -u ROCM_PATH -u ROCTX_UTILS_ROCPROFILER_LIBRARY -u ROCTX_UTILS_LIBRARY -u RANK)

# The rows of the hosts' work as XProf must draw them: each kernel and copy under the innermost
# range of the thread that launched it, kernels demangled.
ROWS=(--gpu-rows 2 --nest 'step 0>forward 0' --nest 'step 1>backward 1' --nest 'step 2>forward 2'
  --count 'step 0=2' --count 'forward 1=2' --mark 'done 0' --mark 'done 2'
  --kernel 'void gemm<0>(float const*, float*, int)=forward 0'
  --kernel 'void gemm<1>(float const*, float*, int)=forward 1'
  --kernel 'void reduce<2>(float*)=backward 2'
  --kernel 'MemcpyH2D=backward 0' --kernel 'MemcpyD2H=backward 1' --kernel 'MemcpyD2D=backward 2')

# xprof_check NAME LOGDIR CHECK_XPROF_ARGS...
xprof_check() {
  local name=$1 logdir=$2 log
  shift 2
  log=$WORK/$name.check.log
  if "$PY" "$CHECK" "$logdir" "$@" >"$log" 2>&1; then
    pass "$name: XProf draws every row"
  else
    sed 's/^/    /' "$log"
    fail "$name" "check_xprof.py: $(grep -c '^FAIL' "$log") failed checks"
  fi
}

# summary_says NAME LOG REGEX: roctx record's summary says what the traces hold.
summary_says() {
  local name=$1 log=$2 want=$3
  if grep -qE -e "$want" "$log"; then pass "$name: summary"; else sed 's/^/    /' "$log"; fail "$name: summary" "no /$want/"; fi
}

# ---- the tarball's layout and the tool library's exports ----
missing=()
for f in bin/roctx lib/libroctx_utils_tool.so lib/libroctx_utils_nvtx.so include/roctx_utils/roctx_utils.h \
  include/roctx_utils/roofline.h include/tsl/profiler/lib/nvtx_utils.h python/pyproject.toml \
  python/src/roctx_utils/__init__.py python/bootstrap/sitecustomize.py README.md; do
  [ -e "$PREFIX/$f" ] || missing+=("$f")
done
if [ ${#missing[@]} -eq 0 ]; then pass "tarball layout"; else fail "tarball layout" "missing ${missing[*]}"; fi
syms=$(nm -D --defined-only "$PREFIX/lib/libroctx_utils_tool.so" | awk '$2 ~ /^[TDBVWiu]$/ {print $3}' | sort -u)
extra=$(grep -vE '^(rocprofiler_configure|roctx_utils_[a-z0-9_]+|(cuda|hip)Profiler(Start|Stop))$' <<<"$syms" | tr '\n' ' ')
if grep -qx rocprofiler_configure <<<"$syms" && grep -qx roctx_utils_range_push <<<"$syms" && [ -z "$extra" ] &&
  ! grep -q '^ggml_cuda_roofline' <<<"$syms"; then
  pass "tool library exports rocprofiler_configure, the C API and the profiler API's start/stop only"
else
  fail "tool library exports" "unexpected: ${extra:-none}; rocprofiler_configure $(grep -cx rocprofiler_configure <<<"$syms")"
fi

# ---- ROCm: every record layout, SDK found by ROCM_PATH (auto-detection) ----
for version in 400 500 600 10000 10100; do
  name=rocm-v$version
  arg="" rows=3
  if [ "$version" = 600 ] || [ "$version" = 10100 ]; then
    arg=roctx-first rows=4  # roctx's first call (a mark on the main thread) starts discovery
  fi
  log=$WORK/$name.log
  "${CLEAN[@]}" ROCM_PATH="$FAKE_ROCM" FAKE_ROCPROFILER_VERSION=$version \
    "$ROCTX" record -o "$WORK/$name" --roofline "$WORK/$name.roofline.json" -- "$HIP_HOST" $arg >"$log" 2>&1
  rc=$?
  if [ $rc -ne 0 ] || ! grep -q '^stock_hip_host: ok' "$log" || ! grep -q 'roctx record: ROCm' "$log"; then
    sed 's/^/    /' "$log"
    fail "$name" "roctx record exited $rc (or the host or the platform was wrong)"
    continue
  fi
  pass "$name: ran on ROCm"
  summary_says "$name" "$log" '1 process, 18 ranges, [34] marks, 12 kernels, 6 memory copies'
  if [ -s "$WORK/$name.roofline.json" ]; then pass "$name: roofline report"; else fail "$name: roofline report" "not written"; fi
  xprof_check "$name" "$WORK/$name" --roctx-rows $rows "${ROWS[@]}"
done

# ---- ROCm: another tool listed already (rocprofv3's place), its list not ended by ':' ----
name=rocm-with-other-tool
log=$WORK/$name.log
"${CLEAN[@]}" ROCM_PATH="$FAKE_ROCM" FAKE_ROCPROFILER_VERSION=10000 ROCP_TOOL_LIBRARIES="$OTHER_TOOL" \
  OTHER_TOOL_OUT="$WORK/$name.other" "$ROCTX" record -o "$WORK/$name" -- "$HIP_HOST" >"$log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -qE '^priority=0 markers=[1-9]' "$WORK/$name.other" 2>/dev/null; then
  pass "$name: the other tool ran first and saw the markers"
else
  sed 's/^/    /' "$log"
  fail "$name" "exit $rc; other tool wrote: $(cat "$WORK/$name.other" 2>/dev/null)"
fi
xprof_check "$name" "$WORK/$name" --roctx-rows 3 "${ROWS[@]}"

# ---- NVIDIA: the NVTX injection and the fake CUPTI ----
name=nvidia
log=$WORK/$name.log
"${CLEAN[@]}" ROCTX_UTILS_CUPTI_LIBRARY="$FAKE_CUPTI" \
  "$ROCTX" record --platform nvidia -o "$WORK/$name" -- "$CUDA_HOST" >"$log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q '^stock_cuda_host: ok' "$log"; then
  pass "$name: ran"
  summary_says "$name" "$log" '1 process, 18 ranges, 4 marks, 12 kernels, 6 memory copies'
  xprof_check "$name" "$WORK/$name" --roctx-rows 4 "${ROWS[@]}"
else
  sed 's/^/    /' "$log"
  fail "$name" "roctx record exited $rc"
fi

# ---- Python with nothing installed: the tarball's start-up hook imports its roctx_utils ----
name=python
log=$WORK/$name.log
cat >"$WORK/annotate.py" <<'PYEOF'
import roctx_utils
for i in range(3):
    with roctx_utils.annotate("py_step"):
        roctx_utils.mark("inside")
print("annotate.py: ok", roctx_utils.__file__)
PYEOF
"${CLEAN[@]}" "$ROCTX" record --platform nvidia --no-kernels -o "$WORK/$name" -- /usr/bin/python3 "$WORK/annotate.py" >"$log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q "annotate.py: ok $PREFIX/python/src/roctx_utils" "$log"; then
  pass "$name: roctx_utils imported from the tarball"
  xprof_check "$name" "$WORK/$name" --count 'py_step=3' --mark inside
else
  sed 's/^/    /' "$log"
  fail "$name" "exit $rc"
fi

# ---- Python on ROCm: annotations are roctx calls; the first one starts the SDK's discovery ----
name=python-rocm
log=$WORK/$name.log
mkdir -p "$WORK/rocm/lib"
ln -sf "$FAKE_ROCM/lib/librocprofiler-sdk.so.1" "$WORK/rocm/lib/librocprofiler-sdk.so.1"
ln -sf "$BIN/cc_tests/libfake_roctx.so" "$WORK/rocm/lib/librocprofiler-sdk-roctx.so.1"
"${CLEAN[@]}" ROCM_PATH="$WORK/rocm" "$ROCTX" record -o "$WORK/$name" -- /usr/bin/python3 "$WORK/annotate.py" >"$log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q 'roctx record: ROCm' "$log" && grep -q "annotate.py: ok" "$log"; then
  pass "$name: ran on ROCm"
  xprof_check "$name" "$WORK/$name" --count 'py_step=3' --mark inside
else
  sed 's/^/    /' "$log"
  fail "$name" "exit $rc"
fi

# ---- Python stopped with Ctrl-C (issue 29): the write comes first, then Python's own handler
# (KeyboardInterrupt, its traceback), and Python ends by SIGINT without C exit hooks. A job this
# script starts with & ignores SIGINT (POSIX), and roctx keeps an ignored signal ignored (issue
# 40): env --default-signal gives it SIGINT's default, as a terminal's foreground job has it ----
name=python-sigint
log=$WORK/$name.log
cat >"$WORK/forever.py" <<'PYEOF'
import itertools, sys, time
import roctx_utils
for i in itertools.count():
    with roctx_utils.annotate("py_step"):
        time.sleep(0.001)
    if i == 20:
        print("forever.py: looping", flush=True)
PYEOF
"${CLEAN[@]}" ROCM_PATH="$WORK/rocm" setsid env --default-signal=INT "$ROCTX" record -o "$WORK/$name" -- /usr/bin/python3 "$WORK/forever.py" >"$log" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q 'forever.py: looping' "$log" 2>/dev/null && break; sleep 0.1; done
kill -INT "$pid"
wait "$pid"
rc=$?
if [ $rc -eq 130 ] && grep -q 'KeyboardInterrupt' "$log" && grep -q 'roctx record: cut short by SIGINT' "$log"; then
  pass "$name: written at the signal, then Python's KeyboardInterrupt, ended by SIGINT"
  xprof_check "$name" "$WORK/$name"
else
  sed 's/^/    /' "$log"
  fail "$name" "exit $rc (expected 130), KeyboardInterrupt $(grep -c KeyboardInterrupt "$log")"
fi

# ---- failures caught before the command starts: exit 2, the command never runs ----
# expect_refusal NAME REGEX ROCTX_ARGS... (the command creates $WORK/ran)
expect_refusal() {
  local name=$1 want=$2 rc
  shift 2
  rm -f "$WORK/ran"
  "${CLEAN[@]}" "$@" -- /bin/sh -c "touch '$WORK/ran'" >"$WORK/$name.log" 2>&1
  rc=$?
  if [ $rc -eq 2 ] && [ ! -e "$WORK/ran" ] && grep -qE -e "$want" "$WORK/$name.log"; then
    pass "refused before the command: $name"
  else
    sed 's/^/    /' "$WORK/$name.log"
    fail "refused before the command: $name" "exit $rc, ran: $([ -e "$WORK/ran" ] && echo yes || echo no)"
  fi
}
expect_refusal rocm-without-sdk '--platform rocm, but rocprofiler-sdk was not found' "$ROCTX" record -o "$WORK/x" --platform rocm
expect_refusal missing-library 'libroctx_utils_tool.so does not exist' env ROCM_PATH="$FAKE_ROCM" "$ROCTX" record --lib-dir "$WORK/nolib" -o "$WORK/x"
expect_refusal unwritable-logdir 'cannot write in|creating' env ROCM_PATH="$FAKE_ROCM" "$ROCTX" record -o /proc/roctx_logs
expect_refusal logdir-is-a-file 'not a directory' env ROCM_PATH="$FAKE_ROCM" "$ROCTX" record -o "$PREFIX/README.md"
expect_refusal other-nvtx-injection 'NVTX_INJECTION64_PATH is already set' env NVTX_INJECTION64_PATH=/opt/nsys/libToolsInjection64.so "$ROCTX" record --platform nvidia -o "$WORK/x"

# ---- the exit status and signals ----
"${CLEAN[@]}" "$ROCTX" record --platform nvidia -o "$WORK/codes" -- /bin/sh -c 'exit 7' >/dev/null 2>&1
rc=$?
if [ $rc -eq 7 ]; then pass "the command's exit code passes through"; else fail "exit code" "got $rc, expected 7"; fi

"${CLEAN[@]}" "$ROCTX" record --platform nvidia -o "$WORK/codes" -- /bin/sh -c 'kill -KILL $$' >"$WORK/killed.log" 2>&1
rc=$?
if [ $rc -eq 137 ] && grep -q 'SIGKILL gives a process no chance' "$WORK/killed.log"; then
  pass "a command killed by SIGKILL: roctx dies of it too and says what was lost"
else
  sed 's/^/    /' "$WORK/killed.log"
  fail "killed command" "exit $rc"
fi

# SIGTERM sent to roctx alone (as `timeout` or a scheduler sends it) reaches the command, whose
# handler runs; roctx then exits with the command's code.
"${CLEAN[@]}" setsid "$ROCTX" record --platform nvidia -o "$WORK/codes" -- /bin/sh -c \
  "trap 'echo got TERM > \"$WORK/term\"; exit 42' TERM; echo ready > \"$WORK/ready\"; while :; do sleep 0.1; done" \
  >"$WORK/term.log" 2>&1 &
pid=$!
for _ in $(seq 100); do [ -e "$WORK/ready" ] && break; sleep 0.1; done
kill -TERM "$pid"
wait "$pid"
rc=$?
if [ $rc -eq 42 ] && grep -q 'got TERM' "$WORK/term" 2>/dev/null && grep -q 'passed on to it' "$WORK/term.log"; then
  pass "SIGTERM to roctx is forwarded to the command"
else
  sed 's/^/    /' "$WORK/term.log"
  fail "SIGTERM forwarding" "exit $rc, handler ran: $([ -e "$WORK/term" ] && echo yes || echo no)"
fi

# A captured run cut short (issue 29): SIGTERM to roctx reaches the command, which writes what it
# captured (marked as cut short) before it ends by the signal; the summary counts it and says so.
name=rocm-sigterm
log=$WORK/$name.log
"${CLEAN[@]}" ROCM_PATH="$FAKE_ROCM" FAKE_ROCPROFILER_VERSION=10000 setsid "$ROCTX" record -o "$WORK/$name" \
  --roofline "$WORK/$name.roofline.json" -- "$HIP_HOST" loop >"$log" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q 'stock_hip_host: looping' "$log" 2>/dev/null && break; sleep 0.1; done
kill -TERM "$pid"
wait "$pid"
rc=$?
if [ $rc -eq 143 ] && grep -q 'the command was killed by SIGTERM' "$log" && grep -q 'roctx record: cut short by SIGTERM' "$log" &&
  grep -q '"cut_short": "cut short by SIGTERM' "$WORK/$name.roofline.json" 2>/dev/null; then
  pass "$name: the command wrote what it captured, marked, and ended by the signal"
  summary_says "$name" "$log" '1 process, [0-9]+ ranges, [34] marks, 12 kernels, 6 memory copies'
  xprof_check "$name" "$WORK/$name" --roctx-rows 4 "${ROWS[@]}"
else
  sed 's/^/    /' "$log"
  fail "$name" "exit $rc (expected 143), or no cut-short file"
fi

# ---- issue 40: hang-ups, report paths, run directories, background workers ----
# `nohup roctx record -- job &`: a signal ignored when roctx starts stays ignored, for roctx and
# the command (exit 129 before: roctx replaced nohup's SIG_IGN with its forwarding handler).
name=nohup
log=$WORK/$name.log
"${CLEAN[@]}" /bin/sh -c 'trap "" HUP; exec "$@"' sh "$ROCTX" record --platform nvidia --no-kernels -o "$WORK/$name" -- \
  /bin/sh -c 'kill -HUP $PPID; kill -HUP $$; sleep 0.3; echo "nohup: survived"' >"$log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q 'nohup: survived' "$log" && ! grep -q 'passed on to it' "$log"; then
  pass "$name: a hang-up ignored when roctx starts stays ignored, for it and the command"
else
  sed 's/^/    /' "$log"
  fail "$name" "exit $rc (expected 0)"
fi

# --roofline F: a FIFO or a symbolic link is refused before the command, as the library refuses
# it at the write; an F from an earlier run is never named as this run's report.
mkfifo "$WORK/report.fifo" 2>/dev/null
ln -sf "$WORK/elsewhere.json" "$WORK/report.link"
expect_refusal roofline-fifo 'report.fifo: is a FIFO; only a regular file is ever replaced' "$ROCTX" record --platform nvidia -o "$WORK/x" --roofline "$WORK/report.fifo"
expect_refusal roofline-symlink 'report.link: is a symbolic link' "$ROCTX" record --platform nvidia -o "$WORK/x" --roofline "$WORK/report.link"
name=stale-report
log=$WORK/$name.log
echo '{"from": "an earlier run"}' >"$WORK/$name.json"
"${CLEAN[@]}" "$ROCTX" record --platform nvidia -o "$WORK/$name" --roofline "$WORK/$name.json" -- /bin/true >"$log" 2>&1
if grep -q 'no roofline report was written by this run' "$log" && ! grep -q 'roctx record: roofline report' "$log" &&
  grep -q 'an earlier run' "$WORK/$name.json"; then
  pass "$name: an older report is not presented as this run's, and is left as it was"
else
  sed 's/^/    /' "$log"
  fail "$name" "the old report was named, or changed"
fi

# Two runs started together with the same -o: a run directory each, a process each.
name=same-second
rm -rf "$WORK/$name"
for i in 1 2; do
  "${CLEAN[@]}" "$ROCTX" record --platform nvidia --no-kernels -o "$WORK/$name" -- /usr/bin/python3 "$WORK/annotate.py" >"$WORK/$name.$i.log" 2>&1 &
done
wait
runs=$(find "$WORK/$name/plugins/profile" -mindepth 1 -maxdepth 1 -type d | wc -l)
if [ "$runs" -eq 2 ] && grep -q '1 process,' "$WORK/$name.1.log" && grep -q '1 process,' "$WORK/$name.2.log" &&
  [ "$(grep -ho 'writing .*' "$WORK/$name.1.log")" != "$(grep -ho 'writing .*' "$WORK/$name.2.log")" ]; then
  pass "$name: two runs, two run directories, one process each"
else
  sed 's/^/    /' "$WORK/$name.1.log" "$WORK/$name.2.log"
  fail "$name" "$runs run directories"
fi

# A command that leaves a background worker: said, and --wait all waits for it (nsys --wait=all).
name=background
cat >"$WORK/spawn_worker.sh" <<SHEOF
(sleep 1; /usr/bin/python3 "$WORK/annotate.py") >/dev/null 2>&1 &
echo "spawn_worker: started"
SHEOF
log=$WORK/$name.log
"${CLEAN[@]}" "$ROCTX" record --platform nvidia --no-kernels -o "$WORK/$name" -- /bin/sh "$WORK/spawn_worker.sh" >"$log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q 'processes the command started are still running' "$log" && grep -q 'no trace in .* yet' "$log"; then
  pass "$name: a worker still running is said, not 'nothing was captured'"
else
  sed 's/^/    /' "$log"
  fail "$name" "exit $rc"
fi
log=$WORK/$name-wait.log
"${CLEAN[@]}" "$ROCTX" record --platform nvidia --no-kernels --wait all -o "$WORK/$name-wait" -- /bin/sh "$WORK/spawn_worker.sh" >"$log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q 'waiting for the processes it started' "$log" && grep -q '1 process, 3 ranges, 3 marks' "$log" &&
  ! grep -q 'still running' "$log"; then
  pass "$name: --wait all waits for the worker and counts its trace"
else
  sed 's/^/    /' "$log"
  fail "$name --wait all" "exit $rc"
fi
sleep 1.5  # the first run's worker, before WORK is removed

# ---- CPU-only (issue 43): no GPU stack found, `auto` says so and records the NVTX ranges,
# without kernels (the host's CUDA work is the fake CUPTI's, which nothing traces now) ----
name=cpu-only-auto
log=$WORK/$name.log
"${CLEAN[@]}" "$ROCTX" record -o "$WORK/$name" -- "$CUDA_HOST" >"$log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q 'no GPU profiling stack found' "$log" && grep -q 'recording CPU-only' "$log" &&
  grep -q 'roctx record: CPU-only' "$log" && grep -q '^stock_cuda_host: ok' "$log"; then
  pass "$name: said, and ran"
  summary_says "$name" "$log" '1 process, 18 ranges, 4 marks, 0 kernels'
  xprof_check "$name" "$WORK/$name" --roctx-rows 4 --gpu-rows 0 --nest 'step 0>forward 0' --nest 'step 1>backward 1' \
    --count 'step 0=2' --count 'forward 1=2' --mark 'done 0' --mark 'done 2'
else
  sed 's/^/    /' "$log"
  fail "$name" "exit $rc"
fi
# --platform none where rocprofiler-sdk is installed: CPU-only all the same, Python annotations.
name=cpu-only-none
log=$WORK/$name.log
"${CLEAN[@]}" ROCM_PATH="$FAKE_ROCM" "$ROCTX" record --platform none -o "$WORK/$name" -- /usr/bin/python3 "$WORK/annotate.py" >"$log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q 'roctx record: CPU-only' "$log" && ! grep -q 'no GPU profiling stack' "$log" && grep -q "annotate.py: ok" "$log"; then
  pass "$name: CPU-only although ROCm is installed"
  xprof_check "$name" "$WORK/$name" --count 'py_step=3' --mark inside --gpu-rows 0
else
  sed 's/^/    /' "$log"
  fail "$name" "exit $rc"
fi

# ---- capture windows (issue 43): only what a window bounds is recorded, each window a run of
# its own (<run>-window<N>), checked by the ranges XProf reads in each ----
# window_check NAME N CHECK_XPROF_ARGS...: window N's file of run "win" under $WORK/NAME.
window_check() {
  local name=$1 n=$2
  shift 2
  local files=("$WORK/$name"/plugins/profile/win-window"$n"/*.xplane.pb)
  if [ -f "${files[0]}" ]; then
    xprof_check "$name-window$n" "${files[0]}" "$@"
  else
    fail "$name-window$n" "no trace in $WORK/$name/plugins/profile/win-window$n: $(ls "$WORK/$name/plugins/profile" 2>&1 | tr '\n' ' ')"
  fi
}
no_window() { # no_window NAME N: no window N was written
  if [ -e "$WORK/$1/plugins/profile/win-window$2" ]; then fail "$1: window $2" "written, but no window $2 was allowed"; else pass "$1: no window $2"; fi
}
# --delay and --duration: from 1 s after start-up for 2 s.
cat >"$WORK/window_delay.py" <<'PYEOF'
import time
import roctx_utils
with roctx_utils.annotate("early"):  # t = 0: the library's start-up, which the delay counts from
    pass
time.sleep(2.0)
with roctx_utils.annotate("inside"):
    time.sleep(0.01)
time.sleep(3.0)
with roctx_utils.annotate("late"):
    pass
print("window_delay.py: ok")
PYEOF
name=window-delay
log=$WORK/$name.log
"${CLEAN[@]}" "$ROCTX" record --platform none --run-name win --delay 1 --duration 2 -o "$WORK/$name" -- /usr/bin/python3 "$WORK/window_delay.py" >"$log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q "window_delay.py: ok" "$log" && grep -q 'roctx record: 1 capture window,' "$log"; then
  pass "$name: ran, one window"
  window_check "$name" 1 --count inside=1 --count early=0 --count late=0
  no_window "$name" 2
else
  sed 's/^/    /' "$log"
  fail "$name" "exit $rc"
fi
# --capture-range=range:NAME, repeat:2: each of the first two `step` ranges is a window; a range
# open across a window's start (`train`) is not invented, one open at its end (`held`, on another
# thread) ends there with a mark.
cat >"$WORK/window_range.py" <<'PYEOF'
import threading
import roctx_utils
held, release = threading.Event(), threading.Event()
def hold():
    with roctx_utils.annotate("held"):
        held.set()
        release.wait()
with roctx_utils.annotate("train"):
    for i in range(4):
        with roctx_utils.annotate("step"):
            with roctx_utils.annotate("work %d" % i):
                pass
            if i == 0:
                t = threading.Thread(target=hold)
                t.start()
                held.wait()
release.set()
t.join()
print("window_range.py: ok")
PYEOF
name=window-range
log=$WORK/$name.log
"${CLEAN[@]}" "$ROCTX" record --platform none --run-name win --capture-range=range:step --capture-range-end=repeat:2 -o "$WORK/$name" -- /usr/bin/python3 "$WORK/window_range.py" >"$log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q "window_range.py: ok" "$log" && grep -q 'roctx record: 2 capture windows,' "$log"; then
  pass "$name: ran, two windows"
  window_check "$name" 1 --nest 'step>work 0' --count step=1 --count 'work 1=0' --count train=0 --count held=1 \
    --mark 'capture window ended: 1 open range closed here'
  window_check "$name" 2 --nest 'step>work 1' --count step=1 --count 'work 0=0' --count 'work 2=0' --count held=0 --count train=0
  no_window "$name" 3
else
  sed 's/^/    /' "$log"
  fail "$name" "exit $rc"
fi
# --capture-range=profiler-api from Python: start()/stop() and the capture() context manager.
cat >"$WORK/window_api.py" <<'PYEOF'
import roctx_utils
with roctx_utils.annotate("a"):
    pass
assert roctx_utils.start(), "a window opens"
assert not roctx_utils.start(), "one is open already"
with roctx_utils.annotate("b"):
    pass
assert roctx_utils.stop()
assert not roctx_utils.stop()
with roctx_utils.annotate("c"):
    pass
with roctx_utils.capture():
    with roctx_utils.annotate("d"):
        pass
print("window_api.py: ok")
PYEOF
name=window-api
log=$WORK/$name.log
"${CLEAN[@]}" "$ROCTX" record --platform none --run-name win --capture-range=profiler-api --capture-range-end=repeat -o "$WORK/$name" -- /usr/bin/python3 "$WORK/window_api.py" >"$log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q "window_api.py: ok" "$log" && grep -q 'roctx record: 2 capture windows,' "$log"; then
  pass "$name: ran, two windows"
  window_check "$name" 1 --count b=1 --count a=0 --count c=0 --count d=0
  window_check "$name" 2 --count d=1 --count b=0 --count c=0
else
  sed 's/^/    /' "$log"
  fail "$name" "exit $rc"
fi
# --capture-range=profiler-api from C: a program's cudaProfilerStart/Stop reach the preloaded
# library, which opens and closes the window and then calls the runtime's own (a stand-in
# libcudart that counts them).
cat >"$WORK/fake_cudart.c" <<'CEOF'
static int calls;
int cudaProfilerStart(void) { return calls++, 0; }
int cudaProfilerStop(void) { return calls++, 0; }
int fake_cudart_calls(void) { return calls; }
CEOF
cat >"$WORK/profiler_api_host.c" <<'CEOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
int cudaProfilerStart(void);
int cudaProfilerStop(void);
int fake_cudart_calls(void);
int main(void) {
  void (*push)(const char*) = (void (*)(const char*))dlsym(RTLD_DEFAULT, "roctx_utils_range_push");
  void (*pop)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "roctx_utils_range_pop");
  if (!push || !pop) { puts("profiler_api_host: roctx_utils is not preloaded"); return 1; }
  push("outside"); pop();
  if (cudaProfilerStart() != 0) return 2;
  push("profiled"); pop();
  if (cudaProfilerStop() != 0) return 3;
  push("after"); pop();
  printf("profiler_api_host: ok, the runtime saw %d calls\n", fake_cudart_calls());
  return 0;
}
CEOF
name=window-cuda-api
log=$WORK/$name.log
if gcc -shared -fPIC -o "$WORK/libcudart.so" "$WORK/fake_cudart.c" &&
  gcc -o "$WORK/profiler_api_host" "$WORK/profiler_api_host.c" -L"$WORK" -lcudart -Wl,-rpath,"$WORK" -ldl; then
  "${CLEAN[@]}" "$ROCTX" record --platform none --run-name win --capture-range=profiler-api -o "$WORK/$name" -- "$WORK/profiler_api_host" >"$log" 2>&1
  rc=$?
  if [ $rc -eq 0 ] && grep -q "profiler_api_host: ok, the runtime saw 2 calls" "$log" && grep -q 'roctx record: 1 capture window,' "$log"; then
    pass "$name: cudaProfilerStart/Stop opened and closed a window and reached the runtime"
    window_check "$name" 1 --count profiled=1 --count outside=0 --count after=0
  else
    sed 's/^/    /' "$log"
    fail "$name" "exit $rc"
  fi
else
  fail "$name" "the stand-in runtime or the host did not build"
fi
# Kernels only inside the window: the stock CUDA host on the fake CUPTI, a window on thread 1's
# first `step 1` (its three threads run at once, so other threads' work may fall inside it too;
# thread 1's second step never does: fewer than the run's 12 kernels).
name=window-kernels
log=$WORK/$name.log
"${CLEAN[@]}" ROCTX_UTILS_CUPTI_LIBRARY="$FAKE_CUPTI" "$ROCTX" record --platform nvidia --run-name win --capture-range='range:step 1' \
  -o "$WORK/$name" -- "$CUDA_HOST" >"$log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q '^stock_cuda_host: ok' "$log" && grep -q 'roctx record: 1 capture window,' "$log" && ! grep -q 'LOST' "$log"; then
  pass "$name: ran, one window, nothing lost"
  summary_says "$name" "$log" ' ([1-9]|1[01]) kernels'
  window_check "$name" 1 --count 'step 1=1' --nest 'step 1>forward 1' --kernel 'void gemm<1>(float const*, float*, int)=forward 1'
else
  sed 's/^/    /' "$log"
  fail "$name" "exit $rc"
fi
# The same window on ROCm: the tool library in a stock HIP host on the fake rocprofiler-sdk, the
# trigger seen through the SDK's marker callbacks (the marker context runs between windows).
name=window-rocm
log=$WORK/$name.log
"${CLEAN[@]}" ROCM_PATH="$FAKE_ROCM" "$ROCTX" record --run-name win --capture-range='range:step 1' -o "$WORK/$name" -- "$HIP_HOST" >"$log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q 'roctx record: ROCm' "$log" && grep -q 'roctx record: 1 capture window,' "$log" && ! grep -q 'LOST' "$log"; then
  pass "$name: ran, one window, nothing lost"
  window_check "$name" 1 --count 'step 1=1' --nest 'step 1>forward 1'
else
  sed 's/^/    /' "$log"
  fail "$name" "exit $rc"
fi
# roctxProfilerResume(0)/Pause(0) open and close profiler-api windows on ROCm: a plain C program
# on roctx (the fake roctx, which hands its calls to the fake SDK's MARKER_CONTROL_API).
cat >"$WORK/roctx_control_host.c" <<'CEOF'
#include <stdint.h>
#include <stdio.h>
int roctxRangePushA(const char* message);
int roctxRangePop(void);
int roctxProfilerPause(uint64_t tid);
int roctxProfilerResume(uint64_t tid);
int main(void) {
  roctxRangePushA("outside"); roctxRangePop();
  roctxProfilerResume(0);
  roctxRangePushA("profiled"); roctxRangePop();
  roctxProfilerPause(0);
  roctxRangePushA("after"); roctxRangePop();
  puts("roctx_control_host: ok");
  return 0;
}
CEOF
name=window-roctx-control
log=$WORK/$name.log
if gcc -o "$WORK/roctx_control_host" "$WORK/roctx_control_host.c" "$BIN/cc_tests/libfake_roctx.so" -Wl,-rpath,"$BIN/cc_tests"; then
  "${CLEAN[@]}" ROCM_PATH="$FAKE_ROCM" "$ROCTX" record --run-name win --capture-range=profiler-api -o "$WORK/$name" -- "$WORK/roctx_control_host" >"$log" 2>&1
  rc=$?
  if [ $rc -eq 0 ] && grep -q 'roctx_control_host: ok' "$log" && grep -q 'roctx record: ROCm' "$log" && grep -q 'roctx record: 1 capture window,' "$log"; then
    pass "$name: roctxProfilerResume/Pause(0) through rocprofiler-sdk opened and closed a window"
    window_check "$name" 1 --count profiled=1 --count outside=0 --count after=0
  else
    sed 's/^/    /' "$log"
    fail "$name" "exit $rc"
  fi
else
  fail "$name" "the host did not build"
fi
# Bad window flags: refused before the command starts (exit 2), saying which.
name=window-bad-flags
bad=0
for flags in "--capture-range=step" "--capture-range-end=repeat:0" "--delay=-1" "--duration=0"; do
  "${CLEAN[@]}" "$ROCTX" record --platform none -o "$WORK/$name" $flags -- /bin/true >"$WORK/$name.log" 2>&1
  rc=$?
  if [ $rc -ne 2 ] || ! grep -qF -e "${flags%%=*}" "$WORK/$name.log"; then bad=$((bad + 1)); sed 's/^/    /' "$WORK/$name.log"; fi
done
if [ $bad -eq 0 ]; then pass "$name: each refused with exit 2, naming its flag"; else fail "$name" "$bad of 4 not refused"; fi

# ---- the progress line (issue 43): every second, what the processes captured so far ----
cat >"$WORK/slow.py" <<'PYEOF'
import time
import roctx_utils
end = time.time() + 2.5
while time.time() < end:
    with roctx_utils.annotate("tick"):
        time.sleep(0.01)
print("slow.py: ok")
PYEOF
before=$(ls -d "${TMPDIR:-/tmp}"/roctx-progress-* 2>/dev/null | wc -l)
name=progress-always
log=$WORK/$name.log
"${CLEAN[@]}" "$ROCTX" record --platform none --progress always -o "$WORK/$name" -- /usr/bin/python3 "$WORK/slow.py" >"$log" 2>&1
rc=$?
after=$(ls -d "${TMPDIR:-/tmp}"/roctx-progress-* 2>/dev/null | wc -l)
if [ $rc -eq 0 ] && grep -qE '^roctx record: 0:00:0[1-9], 1 process, [1-9][0-9]* ranges and marks, 0 GPU activities, 0 trace files$' "$log" &&
  [ "$before" = "$after" ]; then
  pass "$name: a line a second with the process's ranges so far, its directory removed"
else
  sed 's/^/    /' "$log"
  fail "$name" "exit $rc; progress directories $before before, $after after"
fi
name=progress-auto-not-a-terminal
log=$WORK/$name.log
"${CLEAN[@]}" "$ROCTX" record --platform none -o "$WORK/$name" -- /usr/bin/python3 "$WORK/slow.py" >"$log" 2>&1
if [ $? -eq 0 ] && ! grep -q 'ranges and marks' "$log"; then
  pass "$name: no progress line when stderr is a file"
else
  sed 's/^/    /' "$log"
  fail "$name" "a progress line in a log file"
fi
name=progress-terminal
log=$WORK/$name.log
if command -v script >/dev/null; then
  "${CLEAN[@]}" script -qec "'$ROCTX' record --platform none -o '$WORK/$name' -- /usr/bin/python3 '$WORK/slow.py'" /dev/null >"$log" 2>&1
  if grep -q $'\r\e\[Kroctx record: 0:00:0[1-9], 1 process' "$log" && grep -q 'roctx record: 1 process, [1-9][0-9]* ranges' "$log"; then
    pass "$name: rewritten in place on a terminal, cleared before the summary"
  else
    sed 's/^/    /' "$log" | cat -v | head -n 20
    fail "$name" "no line drawn in place"
  fi
else
  echo "SKIP $name: no script(1) for a pseudo-terminal"
fi

# ---- the binary wheel, as a pip user gets it (issue 43) ----
if [ -n "$WHEEL" ] && [ -f "$WHEEL" ]; then
  venv=$WORK/wheel-venv
  rm -rf "$venv"
  log=$WORK/wheel-install.log
  if /usr/bin/python3 -m venv "$venv" >"$log" 2>&1 && "$venv/bin/pip" install -q --no-index --no-deps "$WHEEL" >>"$log" 2>&1; then
    pass "wheel: pip install $(basename "$WHEEL") into a fresh venv"
  else
    sed 's/^/    /' "$log"
    fail "wheel: pip install" "$(basename "$WHEEL")"
  fi
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null)
  found=$(cd "$WORK" && env -i PATH="$venv/bin:/usr/bin:/bin" sh -c 'command -v roctx')
  if [ "$found" = "$venv/bin/roctx" ] && env -i PATH="$venv/bin:/usr/bin:/bin" roctx --version >"$WORK/wheel-version.log" 2>&1 &&
    grep -q '^roctx ' "$WORK/wheel-version.log"; then
    pass "wheel: roctx on PATH ($(cat "$WORK/wheel-version.log"))"
  else
    fail "wheel: roctx on PATH" "found '$found': $(cat "$WORK/wheel-version.log" 2>/dev/null)"
  fi
  if out=$("$venv/bin/python" -c 'import roctx_utils, roctx_utils._lib as l; print(roctx_utils.__file__); print(l._bundled())' 2>&1) &&
    [ "$(echo "$out" | sed -n 1p)" = "$site/roctx_utils/__init__.py" ] && [ "$(echo "$out" | sed -n 2p)" = "$site/roctx_utils/_native/lib/libroctx_utils_nvtx.so" ]; then
    pass "wheel: import roctx_utils, its library inside the package"
  else
    fail "wheel: import roctx_utils" "$out"
  fi
  # Annotations take the compiled fast path the wheel carries (issue 44).
  if out=$(cd "$WORK" && "$venv/bin/python" -c 'import roctx_utils; print(roctx_utils.implementation(), roctx_utils._fast.__file__)' 2>&1) &&
    [ "$out" = "compiled $site/roctx_utils/_fast.abi3.so" ]; then
    pass "wheel: annotate takes the compiled path (roctx_utils/_fast.abi3.so)"
  else
    fail "wheel: the compiled path" "$out"
  fi
  # The tag: the one auditwheel (PyPI) reads from the ELF files' symbol versions.
  tag=$(basename "$WHEEL" .whl | sed -E 's/.*-cp[0-9]+-abi3-//')
  if "$venv/bin/pip" install -q auditwheel >"$WORK/auditwheel.log" 2>&1; then
    "$venv/bin/auditwheel" show "$WHEEL" >"$WORK/auditwheel.log" 2>&1
    if tr '\n' ' ' <"$WORK/auditwheel.log" | grep -qE "platform tag:? +\"$tag\""; then
      pass "wheel: auditwheel show agrees on $tag"
    else
      sed 's/^/    /' "$WORK/auditwheel.log"
      fail "wheel: auditwheel show" "not $tag"
    fi
  else
    echo "SKIP wheel: auditwheel could not be installed from PyPI (offline): tag $tag unchecked"
  fi
  # A CPU-only recording of a plain Python script, through the installed roctx and its libraries.
  name=wheel-record
  log=$WORK/$name.log
  (cd "$WORK" && "${CLEAN[@]}" PATH="$venv/bin:/usr/bin:/bin" roctx record -o "$WORK/$name" -- python "$WORK/annotate.py") >"$log" 2>&1
  rc=$?
  if [ $rc -eq 0 ] && grep -q "roctx record: CPU-only.*$site/roctx_utils/_native/lib/libroctx_utils_nvtx.so attached" "$log" &&
    grep -q "annotate.py: ok $site/roctx_utils/__init__.py" "$log"; then
    pass "$name: the wheel's roctx and libraries recorded the venv's Python"
    xprof_check "$name" "$WORK/$name" --count 'py_step=3' --mark inside --gpu-rows 0
  else
    sed 's/^/    /' "$log"
    fail "$name" "exit $rc"
  fi
else
  fail "wheel" "no wheel given (scripts/release.sh builds it beside the tarball)"
fi

echo "record: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
