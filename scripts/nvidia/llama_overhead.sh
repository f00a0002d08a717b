#!/bin/bash
# What the llama.cpp hook costs (issue 28): upstream ggml's test-backend-ops perf on a fixed set
# of cases, the same binary with and without GGML_ROOFLINE_OUT, the configurations alternated in
# one session, ROUNDS rounds; prints us/run per case and configuration (median over the rounds)
# and what the hook adds, then checks the hook's MUL_MAT_ID rows kept their exact routing.
#
#   bash scripts/nvidia/llama_overhead.sh BIN [ROUNDS]      # BIN: .devbin (ggml/ and the library)
#   LLAMA_OVERHEAD_CONFIGS="none cupti hook" bash ...      # some configurations only
#
# Cases: a launch-bound ADD f32 [4096]; SOFT_MAX [8192,1]; MUL_MAT q4_K 4096x14336 at 1 token
# (decode) and 512 (prefill); MUL_MAT_ID q4_K, 128 experts, 8 used, at 1, 8 and 512 tokens.
# Configurations (defaults, none, cupti, hook, hook_all): scripts/nvidia/overhead_env.sh;
# `hook - none` is the hook's whole cost, `hook - cupti` what we add to CUPTI's own.
# On ROCm, BIN/ggml holds the HIP build and the hook traces through rocprofiler-sdk; the CUPTI
# library is then not needed (hook_all is the same as hook there).
set -u
BIN=$(cd "${1:?usage: $0 BIN [ROUNDS]}" && pwd)
ROUNDS=${2:-2}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
. "$(dirname "${BASH_SOURCE[0]}")/overhead_env.sh"
OPS="ADD,SOFT_MAX,MUL_MAT,MUL_MAT_ID"
PARAMS='^type=f32,ne=\[4096,1,1,1\],nr=\[1,1,1,1\],|^type=f32,ne=\[8192,1,1,1\],mask=0,|^type_a=q4_K,type_b=f32,m=4096,n=(1|512),k=14336,|^type_a=q4_K,type_b=f32,n_mats=128,n_used=8,b=0,m=768,n=(1|8|512),k=2048$'
CONFIGS=(defaults none hook hook_all)
if cupti_only_available; then CONFIGS=(defaults none cupti hook hook_all); fi
# LLAMA_OVERHEAD_CONFIGS="none cupti hook": a subset, where device time is short.
if [ -n "${LLAMA_OVERHEAD_CONFIGS:-}" ]; then read -r -a CONFIGS <<<"$LLAMA_OVERHEAD_CONFIGS"; fi

run() { # run CONFIG ROUND
  local cfg=$1 round=$2
  overhead_env "$cfg" "$WORK/$cfg.$round.json"
  env -u GGML_ROOFLINE_OUT -u ROCTX_UTILS_ROOFLINE_OUT "${ENV[@]}" "$BIN/ggml/test-backend-ops" perf -b CUDA0 -o "$OPS" -p "$PARAMS" \
    >"$WORK/$cfg.$round.txt" 2>"$WORK/$cfg.$round.err" || tail -n 5 "$WORK/$cfg.$round.err"
  # The report is kept only for the MoE check (one round), it can be hundreds of MB.
  if [ "$round" -gt 1 ]; then rm -f "$WORK/$cfg.$round.json"; fi
}

for round in $(seq 1 "$ROUNDS"); do
  for cfg in "${CONFIGS[@]}"; do
    echo "-- round $round: $cfg"
    run "$cfg" "$round"
  done
done
# stdout (the results) and stderr (our messages) apart: a file gets them interleaved mid-line.
grep -h "roctx_utils\|cupti_only" "$WORK"/hook.1.err "$WORK"/cupti.1.err 2>/dev/null | tail -n 4

python3 - "$WORK" "$ROUNDS" "${CONFIGS[@]}" <<'PY'
import json, os, re, statistics, sys
work, rounds, configs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
line = re.compile(r"^\s*(\w+)\((.*)\):\s+(\d+) runs -\s+([\d.]+) us/run")
times = {}  # case -> config -> [us]
for cfg in configs:
    for r in range(1, rounds + 1):
        path = os.path.join(work, "%s.%d.txt" % (cfg, r))
        for l in open(path, errors="replace"):
            m = line.match(l)
            if m:
                times.setdefault("%s(%s)" % (m.group(1), m.group(2)), {}).setdefault(cfg, []).append(float(m.group(4)))

def short(case):
    op, args = case.split("(", 1)
    kv = dict(a.split("=", 1) for a in re.findall(r"(\w+=\[[^\]]*\]|\w+=[^,)]*)", args))
    if op == "MUL_MAT_ID":
        return "MUL_MAT_ID q4_K 128/8 experts, %s tokens" % kv.get("n")
    if op == "MUL_MAT":
        return "MUL_MAT q4_K 4096x14336, %s tokens" % kv.get("n")
    return "%s %s" % (op, kv.get("ne", ""))

print("%-42s %9s %9s %9s %9s %9s %10s %10s %7s" % ("case (us/run, median of %d)" % rounds, "defaults", "none", "cupti", "hook", "hook_all",
      "hook-none", "hook-cupti", "ratio"))
passed = failed = 0
for case in sorted(times, key=lambda c: (c.split("(")[0], times[c].get("none", [0])[0])):
    med = {c: statistics.median(v) for c, v in times[case].items()}
    none, hook = med.get("none"), med.get("hook")
    if none is None or hook is None:
        print("%-42s incomplete: %s" % (short(case), sorted(med)))
        failed += 1
        continue
    nan = float("nan")
    print("%-42s %9.2f %9.2f %9.2f %9.2f %9.2f %+10.2f %+10.2f %7.3f" % (short(case), med.get("defaults", nan), none, med.get("cupti", nan), hook,
          med.get("hook_all", nan), hook - none, hook - med.get("cupti", nan), hook / none))
    passed += 1
# The MoE rows of the hook's first round: exact routing (tokens_per_expert) on every one.
report = os.path.join(work, "hook.1.json")
if os.path.exists(report):
    rows = [r for r in json.load(open(report))["rows"] if r.get("ggml_op") == "MUL_MAT_ID"]
    exact = [r for r in rows if r.get("experts_used", 0) > 0 and r.get("tokens_per_expert")]
    print("MUL_MAT_ID rows of the hook's report: %d, with exact tokens_per_expert: %d" % (len(rows), len(exact)))
    ok = rows and len(exact) == len(rows)
    passed, failed = passed + bool(ok), failed + (not ok)
print("overhead: %d passed, %d failed" % (passed, failed))
PY
