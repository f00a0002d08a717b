#!/bin/bash
# Real-hardware validation of the NVIDIA-side sources (docs/validation.md). Runs on the device
# machine (an H200 with JAX, PyTorch, ncu), never in CI. Build here, carry the binaries:
#
#   bazel-4 build //nvtx:libroctx_utils_nvtx.so --config=bazel4 --config=rocm
#   (cd rust && cargo build --release --locked -p roctx_cli)
#   mkdir -p .devbin && cp bazel-bin/nvtx/libroctx_utils_nvtx.so rust/target/release/roctx .devbin/
#   python3 -m pip wheel --no-deps -w .devbin ./python         # the Python package, for `python`
#   bash scripts/release.sh .devbin                             # the release tarball, for `record`
#   bash scripts/nvidia/build_ggml_cuda.sh /path/to/ggml   # .devbin/ggml: llama.cpp's ggml-cuda, sm_90a
#   (or scripts/nvidia/overhead_kit.sh /path/to/ggml: the same plus issue 42's kit, ggml packed)
#   # then, on the device, with .devbin carried:  bash scripts/validate_nvidia.sh .devbin [jax torch llama]
#
# Prints a table per comparison (check, reference, ours, verdict) and ends with
# `validate: N passed, M failed`. Results (logs, XSpaces as Chrome JSON) go to $OUT or ./validate_out.
#
# Covered: JAX under the NVTX injection with CUPTI kernels vs a separate jax.profiler.trace run
# (HLO ops, kernels per step, names, durations, nvtx_range); PyTorch's NVTX calls; a PyTorch
# roofline report (op scopes + CUPTI) vs Nsight Compute and the ridge; upstream ggml's
# test-backend-ops perf with our llama.cpp hook (GGML_ROOFLINE_OUT + CUPTI) vs Nsight Compute;
# the Python package (python/, carried as a wheel in the binaries folder): a JAX script's own
# step annotations with no code change, PyTorch's roctx_utils.annotate, torch.profiler inside;
# `xprof`: the llama.cpp run's log directory for XProf's Roofline Model (checked here afterwards:
# tests/xprof/check_op_scopes.py --analysis llama_analysis.json llama.xplane.pb).
# The sections after the binaries folder pick which run (default: all of them).
set -uo pipefail
BIN=$(cd "${1:-.devbin}" && pwd)
shift || true
# scripts/nvidia/overhead_kit.sh carries ggml/ xz-packed: unpacked here.
. "$(dirname "${BASH_SOURCE[0]}")/nvidia/overhead_env.sh"
SECTIONS=" ${*:-jax defaults inside record python overhead names torch llama xprof} "
want() { [[ $SECTIONS == *" $1 "* ]]; }
OUTDIR=${OUT:-$PWD/validate_out}
WORK=$(mktemp -d)
mkdir -p "$OUTDIR"
export PYTHONUNBUFFERED=1 XLA_FLAGS=--xla_gpu_enable_command_buffer= TF_CPP_MIN_LOG_LEVEL=2
WARMUP=2 STEPS=5
passed=0 failed=0
tally() { # tally LOG PREFIX
  local p f
  read -r p f < <(sed -nE "s/^$2: ([0-9]+) passed, ([0-9]+) failed$/\1 \2/p" "$1" | tail -n 1)
  passed=$((passed + ${p:-0})); failed=$((failed + ${f:-1}))
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
# The Python package (python/), carried as a wheel built here (`pip wheel --no-deps -w BIN
# ./python`): the device is offline, and a wheel installs without its build backend.
if ls "$BIN"/roctx_utils-*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-deps --no-index --force-reinstall "$BIN"/roctx_utils-*.whl || echo "pip could not install the roctx_utils wheel"
fi
python3 -c 'import jax, torch; print("jax", jax.__version__, "torch", torch.__version__)'

if want jax; then
echo "== JAX: reference (jax.profiler.trace, no injection) =="
python3 scripts/nvidia/jax_mlp_step.py "$STEPS" --trace "$WORK/ref" >"$WORK/jax_ref.log" 2>&1 || tail "$WORK/jax_ref.log"
echo "== JAX: ours (NVTX injection, ROCTX_UTILS_XSPACE_OUT) =="
NVTX_INJECTION64_PATH=$BIN/libroctx_utils_nvtx.so ROCTX_UTILS_XSPACE_OUT=$WORK/ours \
  python3 scripts/nvidia/jax_mlp_step.py "$STEPS" >"$OUTDIR/jax_ours.log" 2>&1 || tail "$OUTDIR/jax_ours.log"
ref=$(find "$WORK/ref" -name '*.xplane.pb' | head -n 1)
ours=$(find "$WORK/ours" -name '*.xplane.pb' | head -n 1)
"$BIN/roctx" convert --format chrome "$ref" -o "$WORK/jax_ref.json" >/dev/null
"$BIN/roctx" convert --format chrome "$ours" -o "$WORK/jax_ours.json" >/dev/null
"$BIN/roctx" inspect "$ours" | head -n 4
grep -h "CUPTI" "$OUTDIR/jax_ours.log" | tail -n 1
# Issue 27: `roctx stats` of our trace; both files come back (gzip) for tests/xprof/check_stats.py
# here: XProf's kernel_stats of XLA's reference trace and of ours against `roctx stats`.
"$BIN/roctx" stats "$ours" --top 12 | tee "$OUTDIR/jax_stats.txt" | head -n 60
"$BIN/roctx" stats "$ref" --report kernels --top 0 >"$OUTDIR/jax_ref_stats.txt"
gzip -c "$ref" >"$OUTDIR/jax_ref.xplane.pb.gz"
gzip -c "$ours" >"$OUTDIR/jax_ours.xplane.pb.gz"
python3 scripts/nvidia/compare_jax.py "$WORK/jax_ours.json" "$WORK/jax_ref.json" jit_step "$WARMUP" "$STEPS" \
  | tee "$OUTDIR/compare_jax.txt"
tally "$OUTDIR/compare_jax.txt" "validate jax"
fi

if want defaults; then
# Issue 22: a workload not tuned here (lax.scan over 4 bf16 transformer layers with attention) at
# XLA's DEFAULT flags (command buffers on), against a separate jax.profiler.trace.
echo "== JAX defaults: ours vs jax.profiler.trace, command buffers on =="
XLA_FLAGS= python3 scripts/nvidia/jax_transformer_scan.py "$STEPS" --trace "$WORK/dref" >"$WORK/dref.log" 2>&1 || tail "$WORK/dref.log"
XLA_FLAGS= NVTX_INJECTION64_PATH=$BIN/libroctx_utils_nvtx.so ROCTX_UTILS_XSPACE_OUT=$WORK/dours ROCTX_UTILS_LOG=info \
  python3 scripts/nvidia/jax_transformer_scan.py "$STEPS" >"$OUTDIR/defaults_ours.log" 2>&1 || tail "$OUTDIR/defaults_ours.log"
"$BIN/roctx" convert --format chrome "$(find "$WORK/dref" -name '*.xplane.pb' | head -n 1)" -o "$WORK/dref.json" >/dev/null
"$BIN/roctx" convert --format chrome "$(find "$WORK/dours" -name '*.xplane.pb' | head -n 1)" -o "$WORK/dours.json" >/dev/null
grep -h "CUPTI" "$OUTDIR/defaults_ours.log" | tail -n 2
python3 scripts/nvidia/compare_defaults.py steps "$WORK/dours.json" "$WORK/dref.json" "$STEPS" | tee "$OUTDIR/compare_defaults.txt"
tally "$OUTDIR/compare_defaults.txt" "validate defaults"
fi

if want inside; then
# Issue 22: jax.profiler.trace in the middle of an injected run (XLA's tracer takes CUPTI over,
# then finalizes it): nothing of ours before or after it may be lost.
echo "== JAX: a jax.profiler.trace inside an injected run =="
[ -f "$WORK/dref.json" ] || { XLA_FLAGS= python3 scripts/nvidia/jax_transformer_scan.py "$STEPS" --trace "$WORK/dref" >"$WORK/dref.log" 2>&1
  "$BIN/roctx" convert --format chrome "$(find "$WORK/dref" -name '*.xplane.pb' | head -n 1)" -o "$WORK/dref.json" >/dev/null; }
# The steps after the trace right away, and after a 200 ms pause (when CUPTI comes back to us).
# With the Python package's hooks (issue 23), jax.profiler.start_trace first hands us what CUPTI
# still holds for us: before it, a trace started right after some steps took their records.
for pause in 0 200; do
  XLA_FLAGS= ROCTX_UTILS_PYTHON_HOOKS=1 NVTX_INJECTION64_PATH=$BIN/libroctx_utils_nvtx.so ROCTX_UTILS_XSPACE_OUT=$WORK/iours$pause ROCTX_UTILS_LOG=info \
    python3 scripts/nvidia/jax_transformer_scan.py "$STEPS" --trace-inside "$WORK/ixla$pause" --pause-ms $pause >"$OUTDIR/inside_ours$pause.log" 2>&1 || tail "$OUTDIR/inside_ours$pause.log"
  "$BIN/roctx" convert --format chrome "$(find "$WORK/iours$pause" -name '*.xplane.pb' | head -n 1)" -o "$WORK/iours.json" >/dev/null
  "$BIN/roctx" convert --format chrome "$(find "$WORK/ixla$pause" -name '*.xplane.pb' | head -n 1)" -o "$WORK/ixla.json" >/dev/null
  echo "-- pause after the trace: $pause ms"
  grep -h "CUPTI\|^phases" "$OUTDIR/inside_ours$pause.log" | tail -n 5
  python3 scripts/nvidia/compare_defaults.py inside "$WORK/iours.json" "$WORK/ixla.json" "$WORK/dref.json" "$STEPS" | tee "$OUTDIR/compare_inside$pause.txt"
  tally "$OUTDIR/compare_inside$pause.txt" "validate inside"
done
fi

if want record; then
# Issue 24: `roctx record` from the unpacked release tarball (carried in the binaries folder), with
# roctx_utils NOT installed in the environment (the tarball's start-up hook provides it), against
# the same JAX script with the injection set by hand, at XLA's default flags.
echo "== roctx record -- python3 jax_user_steps.py vs the injection by hand =="
TAR=$(ls "$BIN"/roctx_utils-*-linux-x86_64.tar.gz 2>/dev/null | head -n 1)
if [ -z "$TAR" ]; then
  echo "no release tarball in $BIN (bash scripts/release.sh $BIN)"; failed=$((failed + 1))
else
  tar -xzf "$TAR" -C "$WORK" && R=$WORK/$(basename "$TAR" .tar.gz)
  python3 -m pip uninstall -q -y roctx-utils >/dev/null 2>&1
  (cd scripts/nvidia && XLA_FLAGS= "$R/bin/roctx" record -o "$WORK/rec" --run-name rec -- python3 jax_user_steps.py "$STEPS") \
    >"$OUTDIR/record.log" 2>&1 || tail "$OUTDIR/record.log"
  grep -h "roctx record" "$OUTDIR/record.log"
  if ls "$BIN"/roctx_utils-*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-deps --no-index --force-reinstall "$BIN"/roctx_utils-*.whl
  fi
  (cd scripts/nvidia && XLA_FLAGS= ROCTX_UTILS_PYTHON_HOOKS=1 NVTX_INJECTION64_PATH=$R/lib/libroctx_utils_nvtx.so \
    ROCTX_UTILS_XSPACE_OUT=$WORK/hand python3 jax_user_steps.py "$STEPS") >"$OUTDIR/record_hand.log" 2>&1 || tail "$OUTDIR/record_hand.log"
  "$R/bin/roctx" convert --format chrome "$WORK/rec/plugins/profile/rec" -o "$WORK/rec.json" >/dev/null
  "$R/bin/roctx" convert --format chrome "$(find "$WORK/hand" -name '*.xplane.pb' | head -n 1)" -o "$WORK/hand.json" >/dev/null
  (cd scripts/nvidia && python3 compare_record.py "$WORK/rec.json" "$WORK/hand.json" "$STEPS") | tee "$OUTDIR/compare_record.txt"
  tally "$OUTDIR/compare_record.txt" "validate record"
fi
fi

if want python; then
# Issue 23: a stock JAX script's own step annotations as ROCTX ranges with no code change
# (ROCTX_UTILS_PYTHON_HOOKS=1), at XLA's default flags; PyTorch with roctx_utils.annotate next to
# torch.cuda.nvtx, our annotation first (the package loads the injection library itself).
echo "== Python: JAX StepTraceAnnotation / TraceAnnotation, zero code =="
[ -f "$WORK/dref.json" ] || { XLA_FLAGS= python3 scripts/nvidia/jax_transformer_scan.py "$STEPS" --trace "$WORK/dref" >"$WORK/dref.log" 2>&1
  "$BIN/roctx" convert --format chrome "$(find "$WORK/dref" -name '*.xplane.pb' | head -n 1)" -o "$WORK/dref.json" >/dev/null; }
(cd scripts/nvidia && XLA_FLAGS= ROCTX_UTILS_PYTHON_HOOKS=1 NVTX_INJECTION64_PATH=$BIN/libroctx_utils_nvtx.so \
  ROCTX_UTILS_XSPACE_OUT=$WORK/pyjax python3 jax_user_steps.py "$STEPS") >"$OUTDIR/python_jax.log" 2>&1 || tail "$OUTDIR/python_jax.log"
head -n 1 "$OUTDIR/python_jax.log"
"$BIN/roctx" convert --format chrome "$(find "$WORK/pyjax" -name '*.xplane.pb' | head -n 1)" -o "$WORK/pyjax.json" >/dev/null
(cd scripts/nvidia && python3 check_user_steps.py jax "$WORK/pyjax.json" "$STEPS" "$WORK/dref.json") | tee "$OUTDIR/compare_python_jax.txt"
tally "$OUTDIR/compare_python_jax.txt" "validate python"
echo "== Python: PyTorch, roctx_utils.annotate around torch.cuda.nvtx =="
(cd scripts/nvidia && NVTX_INJECTION64_PATH=$BIN/libroctx_utils_nvtx.so ROCTX_UTILS_XSPACE_OUT=$WORK/pytorch \
  python3 torch_user_steps.py "$STEPS") >"$OUTDIR/python_torch.log" 2>&1 || tail "$OUTDIR/python_torch.log"
grep -h "library\|CUPTI" "$OUTDIR/python_torch.log" | head -n 3
"$BIN/roctx" convert --format chrome "$(find "$WORK/pytorch" -name '*.xplane.pb' | head -n 1)" -o "$WORK/pytorch.json" >/dev/null
(cd scripts/nvidia && python3 check_user_steps.py torch "$WORK/pytorch.json" "$STEPS") | tee "$OUTDIR/compare_python_torch.txt"
tally "$OUTDIR/compare_python_torch.txt" "validate python"
# Issue 22 item 5 with Kineto: torch.profiler takes CUPTI and stops without finalizing; the hooks
# flush before it and take CUPTI back after it.
echo "== Python: torch.profiler inside an injected run, zero code =="
(cd scripts/nvidia && ROCTX_UTILS_PYTHON_HOOKS=1 NVTX_INJECTION64_PATH=$BIN/libroctx_utils_nvtx.so ROCTX_UTILS_XSPACE_OUT=$WORK/tinside \
  ROCTX_UTILS_LOG=info python3 torch_profiler_inside.py "$STEPS") >"$OUTDIR/torch_inside.log" 2>&1 || tail "$OUTDIR/torch_inside.log"
grep -h "kineto\|hooked\|CUPTI: another" "$OUTDIR/torch_inside.log" | cut -c1-300
"$BIN/roctx" convert --format chrome "$(find "$WORK/tinside" -name '*.xplane.pb' | head -n 1)" -o "$WORK/tinside.json" >/dev/null
(cd scripts/nvidia && python3 check_user_steps.py torch-inside "$WORK/tinside.json" "$OUTDIR/torch_inside.log") | tee "$OUTDIR/compare_torch_inside.txt"
tally "$OUTDIR/compare_torch_inside.txt" "validate python"
fi

if want overhead; then
# Issue 21: kernels traced (the default) must cost a training step at most 2 %, with XLA's
# default flags (command buffers on) and with per-thunk ranges (command buffers off).
echo "== JAX step time: no injection vs the NVTX injection with kernels traced =="
{
  # Copies and sets are traced by default (issue 22); ROCTX_UTILS_COPIES=0 shows what they cost.
  for run in ":1" "--xla_gpu_enable_command_buffer=:1" "--xla_gpu_enable_command_buffer=:0"; do
    flags=${run%:*} copies=${run##*:}
    base=$(XLA_FLAGS=$flags python3 scripts/nvidia/jax_mlp_step.py 200 --time 2>&1 | sed -nE 's/^jax: step time ([0-9.]+) us.*/\1/p')
    ours=$(XLA_FLAGS=$flags ROCTX_UTILS_COPIES=$copies NVTX_INJECTION64_PATH=$BIN/libroctx_utils_nvtx.so ROCTX_UTILS_XSPACE_OUT=$WORK/overhead \
      python3 scripts/nvidia/jax_mlp_step.py 200 --time 2>&1 | sed -nE 's/^jax: step time ([0-9.]+) us.*/\1/p')
    python3 - "${flags:-default XLA flags}, copies $( [ "$copies" = 1 ] && echo on || echo off)" "${base:-0}" "${ours:-0}" <<'PY'
import sys
what, base, ours = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
ok = base > 0 and ours > 0 and ours <= base * 1.02
print("step time (%s): %.2f us without, %.2f us with the injection and kernels traced: %+.2f %%  %s" % (
    what, base, ours, (ours / base - 1) * 100 if base else 0, "PASS" if ok else "FAIL"))
PY
  done
} | tee "$OUTDIR/overhead.txt"
echo "validate overhead: $(grep -c ' PASS$' "$OUTDIR/overhead.txt") passed, $(grep -c ' FAIL$' "$OUTDIR/overhead.txt") failed" | tee -a "$OUTDIR/overhead.txt"
tally "$OUTDIR/overhead.txt" "validate overhead"
fi

if want names; then
echo "== PyTorch kernel names: ours (c++filt's demangler) vs Kineto's =="
python3 scripts/nvidia/torch_names.py kineto "$WORK/kineto_names.txt" >"$WORK/kineto.log" 2>&1 || tail "$WORK/kineto.log"
NVTX_INJECTION64_PATH=$BIN/libroctx_utils_nvtx.so ROCTX_UTILS_XSPACE_OUT=$WORK/names \
  python3 scripts/nvidia/torch_names.py ours >"$WORK/names.log" 2>&1 || tail "$WORK/names.log"
"$BIN/roctx" convert --format chrome "$(find "$WORK/names" -name '*.xplane.pb' | head -n 1)" -o "$WORK/names.json" >/dev/null
python3 scripts/nvidia/torch_names.py compare "$WORK/names.json" "$WORK/kineto_names.txt" | tee "$OUTDIR/compare_names.txt"
tally "$OUTDIR/compare_names.txt" "validate names"
fi

if want torch; then
echo "== PyTorch: NVTX ranges, levels, emit_nvtx =="
NVTX_INJECTION64_PATH=$BIN/libroctx_utils_nvtx.so ROCTX_UTILS_XSPACE_OUT=$WORK/torch \
  python3 scripts/nvidia/torch_nvtx.py >"$WORK/torch.log" 2>&1
"$BIN/roctx" convert --format chrome "$(find "$WORK/torch" -name '*.xplane.pb' | head -n 1)" -o "$WORK/torch.json" >/dev/null
python3 - "$WORK/torch.json" "$WORK/torch.log" <<'PY' | tee "$OUTDIR/compare_torch.txt"
import json, sys
names = [e["name"] for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") in ("X", "i", "I")]
log = open(sys.argv[2]).read()
checks = [
    ("push levels returned to Python", "0 1", "push levels: 0 1" in log),
    ("pop level of the outer range", "0", "pop level: 0" in log),
    ("ranges, mark, start/end range", "step add matmul 'after matmul' sync",
     all(n in names for n in ["step", "add", "matmul", "after matmul", "sync"])),
    ("emit_nvtx aten ranges (libtorch_cuda's NVTX instance)", ">= 5", sum(n.startswith("aten::") for n in names) >= 5),
]
for name, ref, ok in checks:
    print("%-56s %-36s %s" % (name, ref, "PASS" if ok else "FAIL"))
print("validate torch: %d passed, %d failed" % (sum(c[2] for c in checks), sum(not c[2] for c in checks)))
PY
tally "$OUTDIR/compare_torch.txt" "validate torch"
echo "== PyTorch: roofline report (op scopes + CUPTI) vs Nsight Compute =="
NVTX_INJECTION64_PATH=$BIN/libroctx_utils_nvtx.so ROCTX_UTILS_ROOFLINE_OUT=$OUTDIR/torch_roofline.json \
  python3 scripts/nvidia/torch_roofline.py >"$WORK/torch_roofline.log" 2>&1 || tail "$WORK/torch_roofline.log"
ncu --clock-control none --target-processes all --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum --csv \
  python3 scripts/nvidia/torch_roofline.py >"$OUTDIR/ncu.csv" 2>"$WORK/ncu.err" || tail "$WORK/ncu.err"
"$BIN/roctx" roofline "$OUTDIR/torch_roofline.json" --device h200 | tee "$WORK/roofline.txt" | head -n 12
"$BIN/roctx" roofline "$OUTDIR/torch_roofline.json" --device h200 --json >"$WORK/roofline_analysis.json"
python3 scripts/nvidia/compare_roofline.py "$OUTDIR/torch_roofline.json" "$OUTDIR/ncu.csv" "$WORK/roofline_analysis.json" \
  | tee "$OUTDIR/compare_roofline.txt"
tally "$OUTDIR/compare_roofline.txt" "validate roofline"
fi

if want llama; then
echo "== llama.cpp: ggml-cuda test-backend-ops perf (GGML_ROOFLINE_OUT + CUPTI) vs Nsight Compute =="
# cuBLAS, the CUDA runtime and CUPTI come from the device's PyTorch wheels (not carried).
NVLIB=$(python3 -c 'import nvidia, os; print(os.path.join(nvidia.__path__[0], "cu13", "lib"))')
OPS=$PWD/scripts/nvidia/llama_ops.txt
TBO=(env LD_LIBRARY_PATH="$BIN/ggml:$BIN:$NVLIB" GGML_CUDA_DISABLE_GRAPHS=1 "$BIN/ggml/test-backend-ops" perf -b CUDA0)
# The report has one row per invocation (about 330k here): it stays in $WORK, and $OUTDIR gets
# its first rows per op group (llama_roofline_head.json) for docs/validation.md.
REPORT=$WORK/llama_roofline.json
GGML_ROOFLINE_OUT=$REPORT ROCTX_UTILS_CUPTI_LIBRARY=$NVLIB/libcupti.so.13 ROCTX_UTILS_LOG=info \
  "${TBO[@]}" --test-file "$OPS" >"$OUTDIR/llama_ours.log" 2>&1 || tail "$OUTDIR/llama_ours.log"
grep -E "roctx_utils" "$OUTDIR/llama_ours.log" | tail -n 6
# The same with programmatic dependent launch left on (the init turns it off, like graphs):
# consecutive kernels overlap, so per-op times are shown next to the others but not compared.
GGML_ROOFLINE_OUT=$WORK/llama_roofline_pdl.json GGML_CUDA_PDL=1 ROCTX_UTILS_CUPTI_LIBRARY=$NVLIB/libcupti.so.13 \
  "${TBO[@]}" --test-file "$OPS" >"$OUTDIR/llama_ours_pdl.log" 2>&1 || tail "$OUTDIR/llama_ours_pdl.log"
# One ncu run per case: skip the warm-up graph's first launches, time the next 40 (the same kernel
# sequence repeats, so every kernel of the op is measured several times). --cache-control none: the
# perf loop reruns one op on the same tensors, so ours are warm-cache times too.
mkdir -p "$WORK/ncu"
n=0
while IFS= read -r line; do
  n=$((n + 1))
  echo "$line" >"$WORK/ncu/case_$n.txt"
  GGML_CUDA_PDL=0 ncu --target-processes all --clock-control none --cache-control none --launch-skip 20 --launch-count 40 \
    --metrics gpu__time_duration.sum,gpc__cycles_elapsed.max,gpc__cycles_elapsed.avg.per_second --csv "${TBO[@]}" --test-file "$WORK/ncu/case_$n.txt" \
    >"$WORK/ncu/case_$n.csv" 2>"$WORK/ncu/case_$n.err" || tail -n 3 "$WORK/ncu/case_$n.err"
done <"$OPS"
tar -C "$WORK" -czf "$OUTDIR/llama_ncu.tar.gz" ncu
"$BIN/roctx" roofline "$REPORT" --device h200 --top 0 --svg "$OUTDIR/llama_roofline.svg" | tee "$OUTDIR/llama_roofline.txt" | head -n 16
"$BIN/roctx" roofline "$REPORT" --device h200 --json >"$WORK/llama_analysis.json"
python3 scripts/nvidia/compare_llama.py "$OPS" "$REPORT" "$WORK/llama_analysis.json" "$WORK/ncu" \
  "$OUTDIR/llama_ours.log" "$WORK/llama_roofline_pdl.json" "$OUTDIR/llama_ours_pdl.log" \
  | tee "$OUTDIR/compare_llama.txt"
tally "$OUTDIR/compare_llama.txt" "validate llama"
python3 - "$REPORT" "$OUTDIR/llama_roofline_head.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
seen, rows = {}, []
for row in sorted(r["rows"], key=lambda x: x.get("invocation", 0)):
    key = (row["ggml_op"], tuple(row["src_types"]), tuple(row["ne"]))
    if seen.setdefault(key, 0) < 2:
        seen[key] += 1
        rows.append(row)
r["rows"] = rows
json.dump(r, open(sys.argv[2], "w"), indent=1)
PY
fi

if want xprof; then
echo "== llama.cpp in XProf's Roofline Model: test-backend-ops perf with GGML_ROOFLINE_OUT + ROCTX_UTILS_XSPACE_OUT =="
# The same run as the llama section's, writing the log directory too (issue 26). XProf is not on
# the device: the XSpace comes back gzipped with `roctx roofline --device h200 --json` of the
# report, and tests/xprof/check_op_scopes.py --analysis holds one against the other here.
NVLIB=$(python3 -c 'import nvidia, os; print(os.path.join(nvidia.__path__[0], "cu13", "lib"))')
GGML_ROOFLINE_OUT=$WORK/xprof_roofline.json ROCTX_UTILS_XSPACE_OUT=$WORK/xprof_logs ROCTX_UTILS_CUPTI_LIBRARY=$NVLIB/libcupti.so.13 \
  ROCTX_UTILS_LOG=info env LD_LIBRARY_PATH="$BIN/ggml:$BIN:$NVLIB" GGML_CUDA_DISABLE_GRAPHS=1 "$BIN/ggml/test-backend-ops" perf -b CUDA0 \
  --test-file "$PWD/scripts/nvidia/llama_ops.txt" >"$OUTDIR/xprof_run.log" 2>&1 || tail "$OUTDIR/xprof_run.log"
grep -E "roctx_utils" "$OUTDIR/xprof_run.log" | tail -n 6
xplane=$(find "$WORK/xprof_logs" -name '*.xplane.pb' | head -n 1)
if [ -n "$xplane" ]; then
  gzip -c "$xplane" >"$OUTDIR/llama.xplane.pb.gz"
  "$BIN/roctx" roofline "$WORK/xprof_roofline.json" --device h200 --json >"$OUTDIR/llama_analysis.json"
  "$BIN/roctx" roofline "$WORK/xprof_roofline.json" --device h200 | head -n 14 | tee "$OUTDIR/llama_xprof_roofline.txt"
  ls -la "$OUTDIR/llama.xplane.pb.gz" "$OUTDIR/llama_analysis.json"
  passed=$((passed + 1))
else
  echo "FAIL no XSpace was written"; failed=$((failed + 1))
fi
# The PyTorch example's op scopes (scripts/nvidia/torch_roofline.py) the same way.
NVTX_INJECTION64_PATH=$BIN/libroctx_utils_nvtx.so ROCTX_UTILS_ROOFLINE_OUT=$WORK/torch_xprof.json \
  ROCTX_UTILS_XSPACE_OUT=$WORK/torch_logs python3 scripts/nvidia/torch_roofline.py >"$OUTDIR/torch_xprof.log" 2>&1 || tail "$OUTDIR/torch_xprof.log"
xplane=$(find "$WORK/torch_logs" -name '*.xplane.pb' | head -n 1)
if [ -n "$xplane" ]; then
  gzip -c "$xplane" >"$OUTDIR/torch.xplane.pb.gz"
  "$BIN/roctx" roofline "$WORK/torch_xprof.json" --device h200 --json >"$OUTDIR/torch_analysis.json"
  passed=$((passed + 1))
else
  echo "FAIL no PyTorch XSpace was written"; failed=$((failed + 1))
fi
fi

echo "validate: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
