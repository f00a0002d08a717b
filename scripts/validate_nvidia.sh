#!/bin/bash
# Real-hardware validation of the NVIDIA-side sources (docs/validation.md). Runs on the device
# machine (an H200 with JAX, PyTorch, ncu), never in CI. Build here, carry the binaries:
#
#   bazel-4 build //nvtx:libroctx_utils_nvtx.so --config=bazel4 --config=rocm
#   (cd rust && cargo build --release --locked -p roctx_cli)
#   mkdir -p .devbin && cp bazel-bin/nvtx/libroctx_utils_nvtx.so rust/target/release/roctx .devbin/
#   # then, on the device, with .devbin carried:  bash scripts/validate_nvidia.sh .devbin
#
# Prints a table per comparison (check, reference, ours, verdict) and ends with
# `validate: N passed, M failed`. Results (logs, XSpaces as Chrome JSON) go to $OUT or ./validate_out.
#
# Covered: JAX under the NVTX injection with CUPTI kernels vs a separate jax.profiler.trace run
# (HLO ops, kernels per step, names, durations, nvtx_range); PyTorch's NVTX calls; a PyTorch
# roofline report (op scopes + CUPTI) vs Nsight Compute and the ridge. Not yet: llama.cpp.
set -uo pipefail
BIN=$(cd "${1:-.devbin}" && pwd)
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
python3 -c 'import jax, torch; print("jax", jax.__version__, "torch", torch.__version__)'

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
python3 scripts/nvidia/compare_jax.py "$WORK/jax_ours.json" "$WORK/jax_ref.json" jit_step "$WARMUP" "$STEPS" \
  | tee "$OUTDIR/compare_jax.txt"
tally "$OUTDIR/compare_jax.txt" "validate jax"

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

echo "validate: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
