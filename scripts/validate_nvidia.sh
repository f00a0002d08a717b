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
# Done so far: NVTX injection under JAX (our XlaModule/Thunk rows vs jax.profiler.trace's HLO ops)
# and PyTorch (levels and ranges). Kernel rows, ncu comparisons and llama.cpp need the CUPTI
# source, which does not exist yet.
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
python3 scripts/nvidia/jax_mlp_step.py "$STEPS" --trace "$WORK/ref" >"$OUTDIR/jax_ref.log" 2>&1 || tail "$OUTDIR/jax_ref.log"
echo "== JAX: ours (NVTX injection, ROCTX_UTILS_XSPACE_OUT) =="
NVTX_INJECTION64_PATH=$BIN/libroctx_utils_nvtx.so ROCTX_UTILS_XSPACE_OUT=$WORK/ours \
  python3 scripts/nvidia/jax_mlp_step.py "$STEPS" >"$OUTDIR/jax_ours.log" 2>&1 || tail "$OUTDIR/jax_ours.log"
ref=$(find "$WORK/ref" -name '*.xplane.pb' | head -n 1)
ours=$(find "$WORK/ours" -name '*.xplane.pb' | head -n 1)
"$BIN/roctx" convert --format chrome "$ref" -o "$OUTDIR/jax_ref.json" >/dev/null
"$BIN/roctx" convert --format chrome "$ours" -o "$OUTDIR/jax_ours.json" >/dev/null
"$BIN/roctx" inspect "$ours" | head -n 8
python3 scripts/nvidia/compare_jax.py "$OUTDIR/jax_ours.json" "$OUTDIR/jax_ref.json" jit_step "$WARMUP" "$STEPS" \
  | tee "$OUTDIR/compare_jax.txt"
tally "$OUTDIR/compare_jax.txt" "validate jax"

echo "== PyTorch: NVTX ranges, levels, emit_nvtx =="
NVTX_INJECTION64_PATH=$BIN/libroctx_utils_nvtx.so ROCTX_UTILS_XSPACE_OUT=$WORK/torch \
  python3 scripts/nvidia/torch_nvtx.py >"$OUTDIR/torch.log" 2>&1
"$BIN/roctx" convert --format chrome "$(find "$WORK/torch" -name '*.xplane.pb' | head -n 1)" -o "$OUTDIR/torch.json" >/dev/null
python3 - "$OUTDIR/torch.json" "$OUTDIR/torch.log" <<'PY' | tee "$OUTDIR/compare_torch.txt"
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
echo "validate: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
