#!/bin/bash
# What the llama.cpp hook costs next to the vendor's own tracer (issues 28, 42): upstream ggml's
# test-backend-ops perf on a fixed set of cases, the same binary in every configuration, the
# configurations alternated in one session, ROUNDS rounds (default 3); prints us/run per case and
# configuration (medians over the rounds), `hook - cupti` first (what we add to CUPTI's own
# tracing: what nsys and rocprofv3 users pay anyway), then checks issue 42's targets and the
# MUL_MAT_ID rows of both MoE accountings.
#
#   bash scripts/nvidia/llama_overhead.sh BIN [ROUNDS]      # BIN: .devbin (ggml/ and the library)
#   LLAMA_OVERHEAD_CONFIGS="none cupti hook" bash ...      # some configurations only
#   LLAMA_OVERHEAD_OPS=ADD LLAMA_OVERHEAD_PARAMS=REGEX ...   # other cases (test-backend-ops -o, -p)
#
# Cases: a launch-bound ADD f32 [4096]; SOFT_MAX [8192,1]; MUL_MAT q4_K 4096x14336 at 1 token
# (decode) and 512 (prefill); MUL_MAT_ID q4_K, 128 experts, 8 used, at 1, 8 and 512 tokens.
# test-backend-ops has no RMS_NORM among its perf cases: a decode step's RMS_NORM f32 [2048] (the
# hidden size of moe_layer's layers) is run from a test file (--test-file, one generic op) in the
# same configuration right after; LLAMA_OVERHEAD_RMS_NORM_OP is GGML_OP_RMS_NORM's number in the
# ggml built (25 at d99724f2; "" skips it), and the result line must say RMS_NORM.
# Configurations (defaults, none, cupti, hook, hook_exact, hook_all): scripts/nvidia/overhead_env.sh.
# Targets (hook against cupti, medians): at most +0.5 us on the launch-bound ops (ADD, SOFT_MAX,
# the decode MUL_MAT), at most +1 % on ops of 100 us or more, MUL_MAT_ID with the default
# (analytic) accounting at most +2 % at every token count. Rows: the hook's MUL_MAT_ID rows all
# `analytic`, the exact mode's all `exact` with tokens_per_expert, and at 1 token both count the
# same experts.
# On ROCm, BIN/ggml holds the HIP build and the hook traces through rocprofiler-sdk; the CUPTI
# library is then not needed (hook_all is the same as hook there).
set -u
BIN=$(cd "${1:?usage: $0 BIN [ROUNDS]}" && pwd)
ROUNDS=${2:-3}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
. "$(dirname "${BASH_SOURCE[0]}")/overhead_env.sh"
OPS=${LLAMA_OVERHEAD_OPS:-ADD,SOFT_MAX,MUL_MAT,MUL_MAT_ID}
PARAMS=${LLAMA_OVERHEAD_PARAMS:-'^type=f32,ne=\[4096,1,1,1\],nr=\[1,1,1,1\],|^type=f32,ne=\[8192,1,1,1\],mask=0,|^type_a=q4_K,type_b=f32,m=4096,n=(1|512),k=14336,|^type_a=q4_K,type_b=f32,n_mats=128,n_used=8,b=0,m=768,n=(1|8|512),k=2048$'}
RMS_NORM_OP=${LLAMA_OVERHEAD_RMS_NORM_OP-25}
case $RMS_NORM_OP in *[!0-9]*) echo "llama_overhead.sh: LLAMA_OVERHEAD_RMS_NORM_OP must be a number or empty, not '$RMS_NORM_OP'" >&2; exit 2 ;; esac
# op, type f32, ne, 1 op param (eps 1e-5 as its float bits), 1 source f32 [2048] contiguous, a name.
[ -n "$RMS_NORM_OP" ] && echo "$RMS_NORM_OP 0 2048 1 1 1 1 925353388 1 0 2048 1 1 1 4 8192 8192 8192 decode" >"$WORK/rms_norm.txt"
CONFIGS=(none hook hook_exact)
if cupti_only_available; then CONFIGS=(none cupti hook hook_exact); fi
# LLAMA_OVERHEAD_CONFIGS="defaults none cupti cupti_ts cupti_ours hook hook_alt hook_exact hook_all":
# more (or fewer).
if [ -n "${LLAMA_OVERHEAD_CONFIGS:-}" ]; then read -r -a CONFIGS <<<"$LLAMA_OVERHEAD_CONFIGS"; fi

perf() { # perf CONFIG ROUND REPORT ARGS...: one test-backend-ops perf run, appended to the round's files
  local cfg=$1 round=$2 report=$3
  shift 3
  overhead_env "$cfg" "$report"
  env -u GGML_ROOFLINE_OUT -u ROCTX_UTILS_ROOFLINE_OUT "${ENV[@]}" "$BIN/ggml/test-backend-ops" perf -b CUDA0 "$@" \
    >>"$WORK/$cfg.$round.txt" 2>>"$WORK/$cfg.$round.err" || tail -n 5 "$WORK/$cfg.$round.err"
}

run() { # run CONFIG ROUND
  local cfg=$1 round=$2
  perf "$cfg" "$round" "$WORK/$cfg.$round.json" -o "$OPS" -p "$PARAMS"
  if [ -n "$RMS_NORM_OP" ]; then
    perf "$cfg" "$round" "$WORK/$cfg.$round.rms_norm.json" --test-file "$WORK/rms_norm.txt"
    rm -f "$WORK/$cfg.$round.rms_norm.json"
  fi
  # The report is kept only for the MoE check (one round), it can be hundreds of MB.
  if [ "$round" -gt 1 ]; then rm -f "$WORK/$cfg.$round.json"; fi
}

for round in $(seq 1 "$ROUNDS"); do
  for cfg in "${CONFIGS[@]}"; do
    echo "-- round $round: $cfg"
    run "$cfg" "$round"
    # Each run's times as they come: a run stopped at a device call's limit still says something.
    grep -E "us/run" "$WORK/$cfg.$round.txt" | sed 's/^ */   /'
  done
done
# stdout (the results) and stderr (our messages) apart: a file gets them interleaved mid-line.
grep -h "roctx_utils\|cupti_only" "$WORK"/hook.1.err "$WORK"/hook_exact.1.err "$WORK"/cupti.1.err 2>/dev/null | tail -n 6

python3 - "$WORK" "$ROUNDS" "$OPS" "${CONFIGS[@]}" <<'PY'
import json, os, re, statistics, sys
work, rounds, ops, configs = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(","), sys.argv[4:]
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
    if op == "RMS_NORM":
        return "RMS_NORM %s" % kv.get("ne", "")
    return "%s %s" % (op, kv.get("ne", ""))

nan = float("nan")
cols = [c for c in ("defaults", "none", "cupti", "cupti_ts", "cupti_tsc", "cupti_ours", "hook", "hook_alt", "hook_exact", "hook_all") if c in configs]
print("%-42s %10s %8s %10s %s" % ("case (us/run, median of %d)" % rounds, "hook-cupti", "%", "exact-cupti", " ".join("%9s" % c for c in cols)))
passed = failed = 0
def check(ok, what):
    global passed, failed
    passed, failed = passed + bool(ok), failed + (not ok)
    print("%s %s" % ("PASS" if ok else "FAIL", what))
results = []
for case in sorted(times, key=lambda c: (c.split("(")[0], times[c].get("none", [0])[0])):
    med = {c: statistics.median(v) for c, v in times[case].items()}
    hook, cupti = med.get("hook"), med.get("cupti")
    if hook is None:
        print("%-42s incomplete: %s" % (short(case), sorted(med)))
        failed += 1
        continue
    d = hook - cupti if cupti is not None else nan
    pct = 100.0 * d / cupti if cupti else nan
    de = med.get("hook_exact", nan) - cupti if cupti is not None else nan
    print("%-42s %+10.2f %+7.2f%% %+10.2f %s" % (short(case), d, pct, de, " ".join("%9.2f" % med.get(c, nan) for c in cols)))
    results.append((case, med, d, pct))
if "cupti" in configs:
    for case, med, d, pct in results:
        op, name = case.split("(")[0], short(case)
        if op in ("ADD", "SOFT_MAX", "RMS_NORM") or (op == "MUL_MAT" and ", 1 tokens" in name):
            check(d <= 0.5, "%s: hook - cupti %+.2f us (target <= +0.5 us)" % (name, d))
        elif op == "MUL_MAT_ID":
            check(pct <= 2.0, "%s: hook - cupti %+.2f %% (target <= +2 %%, default accounting)" % (name, pct))
        if med["cupti"] >= 100.0 and op != "MUL_MAT_ID":
            check(pct <= 1.0, "%s: hook - cupti %+.2f %% (target <= +1 %% at 100 us or more)" % (name, pct))
    measured = {case.split("(")[0] for case, _, _, _ in results}
    # The ops asked for (LLAMA_OVERHEAD_OPS), and RMS_NORM unless it was skipped.
    for op in ops + ["RMS_NORM"] * os.path.exists(os.path.join(work, "rms_norm.txt")):
        if op not in measured:
            check(False, "%s: no result in every configuration (test-backend-ops' output above)" % op)
# The MoE rows of each hook's first round.
def moe_rows(cfg):
    path = os.path.join(work, "%s.1.json" % cfg)
    if not os.path.exists(path):
        return None
    return [r for r in json.load(open(path))["rows"] if r.get("ggml_op") == "MUL_MAT_ID"]
analytic, exact = moe_rows("hook"), moe_rows("hook_exact")
if analytic is not None:
    good = [r for r in analytic if r.get("moe_accounting") == "analytic" and r.get("experts_used") == min(r["M"] * r["top_k"], r["n_experts"])]
    check(analytic and len(good) == len(analytic), "hook: %d MUL_MAT_ID rows, %d analytic with experts_used = min(M*top_k, n_experts)" % (len(analytic), len(good)))
if exact is not None:
    good = [r for r in exact if r.get("moe_accounting") == "exact" and r.get("experts_used", 0) > 0 and r.get("tokens_per_expert")]
    check(exact and len(good) == len(exact), "hook_exact: %d MUL_MAT_ID rows, %d exact with tokens_per_expert" % (len(exact), len(good)))
if analytic and exact:
    one = lambda rows: sorted({r["experts_used"] for r in rows if r["M"] == 1})
    check(one(analytic) and one(analytic) == one(exact), "1 token: experts_used analytic %s, exact %s (the same: top-k picks distinct experts)" % (one(analytic), one(exact)))
print("overhead: %d passed, %d failed" % (passed, failed))
PY
