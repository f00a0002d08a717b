#!/bin/bash
# Issue 42's whole device measurement in one call: the model-shaped layers (moe_layer.sh) and the
# per-op cases (llama_overhead.sh), each phase under what is left of LIMIT seconds (default 560,
# under the device's 10-minute call), so that a slow lease loses the last phase, not the call.
# Each phase's output goes to $OUT/<phase>.txt (and the terminal); a phase cut short still
# leaves every run's line there. Build the kit first with scripts/nvidia/overhead_kit.sh.
#
#   bash scripts/nvidia/overhead_run.sh [BIN]        # BIN: the kit (default .devbin)
#
#   PHASES    (default "moe1 ops moe8_512")
#     moe1      moe_layer.sh at 1 token: CFGS1 (default none cupti hook hook_exact), ROUNDS1 (3),
#               REPEATS1 (2: MOE_LAYER_REPEATS, the fastest of 2 runs a round)
#     ops       llama_overhead.sh: CFGSOPS (default cupti hook), ROUNDS (3)
#     moe8_512  moe_layer.sh at 8 and 512 tokens: CFGS (default none cupti hook hook_exact),
#               ROUNDS (3), REPEATS (1)
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=$(cd "${1:-$ROOT/.devbin}" && pwd)
OUTDIR=${OUT:-$PWD/overhead_out}
mkdir -p "$OUTDIR"
. "$ROOT/scripts/nvidia/overhead_env.sh" # unpacks the kit's ggml/
if [ ! -x "$BIN/ggml/test-backend-ops" ] || [ ! -x "$BIN/moe_layer" ]; then
  echo "overhead_run.sh: $BIN has no ggml/test-backend-ops or moe_layer (scripts/nvidia/overhead_kit.sh builds them)" >&2
  exit 2
fi
LIMIT=${LIMIT:-560}
case $LIMIT in '' | *[!0-9]*) echo "overhead_run.sh: LIMIT must be seconds, not '$LIMIT'" >&2; exit 2 ;; esac
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
echo "$(nproc) CPUs, $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1)"
cat "$BIN/build_info.txt" 2>/dev/null || true
PHASES=${PHASES:-moe1 ops moe8_512}
for phase in $PHASES; do
  case $phase in moe1 | ops | moe8_512) ;; *) echo "overhead_run.sh: unknown phase '$phase' (moe1, ops, moe8_512)" >&2; exit 2 ;; esac
done
end=$(($(date +%s) + LIMIT))
for phase in $PHASES; do
  left=$((end - $(date +%s)))
  if [ "$left" -le 20 ]; then echo "== $phase: skipped, no time left"; continue; fi
  echo "== $phase ($left s left, $(date -u +%T) UTC)"
  case $phase in
    moe1) MOE_LAYER_TOKENS=1 MOE_LAYER_CONFIGS="${CFGS1:-none cupti hook hook_exact}" MOE_LAYER_REPEATS=${REPEATS1:-2} \
            timeout "$left" bash "$ROOT/scripts/nvidia/moe_layer.sh" "$BIN" "${ROUNDS1:-3}" ;;
    moe8_512) MOE_LAYER_TOKENS="8 512" MOE_LAYER_CONFIGS="${CFGS:-none cupti hook hook_exact}" MOE_LAYER_REPEATS=${REPEATS:-1} \
            timeout "$left" bash "$ROOT/scripts/nvidia/moe_layer.sh" "$BIN" "${ROUNDS:-3}" ;;
    ops) LLAMA_OVERHEAD_CONFIGS="${CFGSOPS:-cupti hook}" timeout "$left" bash "$ROOT/scripts/nvidia/llama_overhead.sh" "$BIN" "${ROUNDS:-3}" ;;
  esac 2>&1 | tee "$OUTDIR/$phase.txt"
done
