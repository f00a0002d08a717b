#!/bin/bash
# What the llama.cpp hook costs a MoE decode step (issue 28): scripts/nvidia/moe_layer.cpp (8 MoE
# FFN layers as llama.cpp builds them, q4_K experts 2048x768, 128 experts, 8 used) at 1 and 8
# tokens, with the three MUL_MAT_IDs of a layer reading one router's ids (`shared`, as in a
# model) or each its own copy (`separate`, as test-backend-ops' cases), without the hook
# (`none`), with CUPTI's own tracing only (`cupti`) and with the hook (`hook`), as
# scripts/nvidia/overhead_env.sh defines them, alternated, ROUNDS rounds. Prints us per layer
# (medians) and what the hook adds, then checks the hook's MUL_MAT_ID rows: as many as the steps
# ran, each with exact tokens_per_expert.
#
#   bash scripts/nvidia/moe_layer.sh BIN [ROUNDS]     # BIN: .devbin (ggml/, moe_layer, the library)
set -u
BIN=$(cd "${1:?usage: $0 BIN [ROUNDS]}" && pwd)
ROUNDS=${2:-2}
LAYERS=8 STEPS=1000
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
. "$(dirname "${BASH_SOURCE[0]}")/overhead_env.sh"
CONFIGS=(none cupti hook)
cupti_only_available || CONFIGS=(none hook)

for round in $(seq 1 "$ROUNDS"); do
  for tokens in 1 8; do
    for ids in shared separate; do
      for cfg in "${CONFIGS[@]}"; do
        overhead_env "$cfg" "$WORK/hook.$tokens.$ids.$round.json"
        out=$(env -u GGML_ROOFLINE_OUT -u ROCTX_UTILS_ROOFLINE_OUT "${ENV[@]}" "$BIN/moe_layer" "$LAYERS" "$tokens" "$STEPS" "$ids" 2>"$WORK/err")
        echo "$round $tokens $ids $cfg $out"
        echo "$round $tokens $ids $cfg $out" >>"$WORK/results"
        grep -i "warn\|error\|lost" "$WORK/err" | head -n 3
        [ "$round" -gt 1 ] && rm -f "$WORK/hook.$tokens.$ids.$round.json"
      done
    done
  done
done

python3 - "$WORK" "$LAYERS" "$STEPS" <<'PY'
import glob, json, os, re, statistics, sys
work, layers, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
us = {}
for line in open(os.path.join(work, "results")):
    m = re.match(r"(\d+) (\d+) (\w+) (\w+) .*?([\d.]+) us/layer", line)
    if m:
        us.setdefault((int(m.group(2)), m.group(3)), {}).setdefault(m.group(4), []).append(float(m.group(5)))
print("%-24s %9s %9s %9s %10s %10s" % ("us per layer (median)", "none", "cupti", "hook", "hook-none", "hook-cupti"))
passed = failed = 0
for (tokens, ids), by in sorted(us.items()):
    med = {c: statistics.median(v) for c, v in by.items()}
    nan = float("nan")
    none, cupti, hook = med.get("none", nan), med.get("cupti", nan), med.get("hook", nan)
    print("%-24s %9.2f %9.2f %9.2f %+10.2f %+10.2f" % ("%d token%s, ids %s" % (tokens, "s" * (tokens > 1), ids), none, cupti, hook,
          hook - none, hook - cupti))
    ok = hook == hook
    passed, failed = passed + ok, failed + (not ok)
# A step's MUL_MAT_ID rows: 3 per layer, or 2 where ggml-cuda fuses gate, up and SwiGLU
# (1 token, one ids tensor): a fused row carries the routing once.
ran = steps // 5 * 5 + 20
for path in sorted(glob.glob(os.path.join(work, "hook.*.1.json"))):
    rows = [r for r in json.load(open(path))["rows"] if r.get("ggml_op") == "MUL_MAT_ID"]
    exact = [r for r in rows if r.get("experts_used", 0) > 0 and r.get("tokens_per_expert")]
    fused = sum(1 for r in rows if r.get("fused_ops"))
    print("%s: %d MUL_MAT_ID rows (%.2f per layer and step, %d fused), %d with exact tokens_per_expert" % (
        os.path.basename(path), len(rows), len(rows) / (layers * ran), fused, len(exact)))
    ok = len(rows) in (2 * layers * ran, 3 * layers * ran) and len(exact) == len(rows)
    passed, failed = passed + ok, failed + (not ok)
print("moe_layer: %d passed, %d failed" % (passed, failed))
PY
