"""Issue 23's checks on the H200, on our XSpace converted by `roctx convert --format chrome`.

  check_user_steps.py jax OURS.json STEPS [REF.json]
      each `train <i>` step (StepTraceAnnotation, no code change) is a ROCTX range holding its
      `forward_backward` range, the step's XLA ranges (XlaModule and thunks) and its GPU
      activities, each attributed to a range inside the step; with REF.json (a separate
      jax.profiler.trace of jax_transformer_scan.py), as many activities per step as XLA counts.
  check_user_steps.py torch OURS.json STEPS
      each `py_step_<i>` (roctx_utils.annotate) holds torch.cuda.nvtx's `fwd` and `bwd` in its
      own row, and the step's kernels, each attributed to a range inside the step.
  check_user_steps.py torch-inside OURS.json LOG
      torch_profiler_inside.py's phases: ours before and after torch.profiler as many as in the
      warm phase, and Kineto's own count (from LOG) of the profiled one.
Ends with `validate python: N passed, M failed`.
"""
import sys

from compare_defaults import load as load_gpu, load_all, summary


def inside(outer, inner, slack=0.01):
    return outer["ts"] - slack <= inner["ts"] and inner["ts"] + inner.get("dur", 0) <= outer["ts"] + outer["dur"] + slack


results = []


def row(check, expected, got, ok):
    results.append(bool(ok))
    print("%-66s %12s %12s  %s" % (check, expected, got, "PASS" if ok else "FAIL"))


def torch_inside(path, kineto_log):
    """Our GPU activities per phase: every phase but the profiled one must hold as many as the
    first (nothing of ours lost before or after torch.profiler), and Kineto saw the profiled one."""
    gpu, _, host = load_all(path)
    phases = {e["name"]: e for e in host if e["name"].startswith("phase_")}
    count = {n: sum(1 for g in gpu if p["ts"] <= g["ts"] and g["ts"] + g.get("dur", 0) <= p["ts"] + p["dur"])
             for n, p in phases.items()}
    kineto = []
    for line in open(kineto_log):
        if line.startswith("kineto: "):
            kineto = [int(w) for w in line.split()[1:] if w.isdigit()]
    warm = count.get("phase_warm", 0)
    print("%-66s %12s %12s  %s" % ("check (torch.profiler inside an injected run)", "expected", "ours", "verdict"))
    for phase in ("before", "between", "after"):
        got = count.get("phase_" + phase, 0)
        row("our GPU activities, phase %s (= the warm phase)" % phase, warm, got, warm > 0 and got == warm)
    row("Kineto's own GPU activities of its two sessions", "> 0, > 0", " ".join(map(str, kineto)),
        len(kineto) == 2 and min(kineto) > 0)
    print("  (ours during torch.profiler: %d and %d; their work is in Kineto's traces)" % (
        count.get("phase_profiled_1", 0), count.get("phase_profiled_2", 0)))
    print("validate python: %d passed, %d failed" % (sum(results), len(results) - sum(results)))


def main():
    if sys.argv[1] == "torch-inside":
        return torch_inside(sys.argv[2], sys.argv[3])
    mode, path, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    gpu, _, host = load_all(path)
    prefix, inner_names = ("train ", ["forward_backward"]) if mode == "jax" else ("py_step_", ["fwd", "bwd"])
    step_events = sorted((e for e in host if e["name"].startswith(prefix)), key=lambda e: e["ts"])
    names = [e["name"] for e in step_events]
    print("%-66s %12s %12s  %s" % ("check (%s, user annotations from Python)" % mode, "expected", "ours", "verdict"))
    row("user steps as ROCTX ranges, labelled %s<i>" % prefix, steps, len(step_events),
        names == ["%s%d" % (prefix, i) for i in range(steps)])
    per_step, attributed_ok, nested_ok, xla_ranges, unranged = [], True, True, [], 0
    for s in step_events:
        same_row = [e for e in host if e["tid"] == s["tid"] and e is not s and inside(s, e)]
        for n in inner_names:
            if not any(e["name"] == n for e in same_row):
                nested_ok = False
        within = [e for e in host if e is not s and inside(s, e)]
        xla_ranges.append(sum(1 for e in within if "XlaModule" in e["name"] or "hlo_op" in e["name"] or "Thunk" in e["name"]))
        acts = [g for g in gpu if s["ts"] <= g["ts"] and g["ts"] + g.get("dur", 0) <= s["ts"] + s["dur"]]
        per_step.append(len(acts))
        range_names = {e["name"] for e in within} | {s["name"]}
        ranged = [g for g in acts if g.get("args", {}).get("nvtx_range")]
        unranged += len(acts) - len(ranged)
        # PyTorch launches backward kernels from autograd's own thread, where no range is open:
        # those have none (as in nsys). JAX launches everything from ranges.
        if (mode == "jax" and len(ranged) != len(acts)) or not ranged or \
                any(g["args"]["nvtx_range"] not in range_names for g in ranged):
            attributed_ok = False
    row("each step holds %s in its own row" % " and ".join(inner_names), "yes", "yes" if nested_ok else "no", nested_ok and step_events)
    if mode == "jax":
        row("XLA ranges (XlaModule, thunks) inside each step (min..max)",
            "> 0", "%d..%d" % (min(xla_ranges or [0]), max(xla_ranges or [0])), xla_ranges and min(xla_ranges) > 0)
    row("GPU activities inside each step (min..max)", "> 0, equal",
        "%d..%d" % (min(per_step or [0]), max(per_step or [0])), per_step and min(per_step) > 0 and min(per_step) == max(per_step))
    row("each one attributed to a range inside its step" + (" (if launched under one)" if mode == "torch" else ""),
        "all", "all" if attributed_ok else "not all", attributed_ok and per_step)
    if mode == "torch":
        print("  (%d activities launched where no range was open: autograd's backward thread)" % unranged)
    if len(sys.argv) > 4:
        ref = summary(load_gpu(sys.argv[4])[0], steps)["activities"]
        row("GPU activities per step vs a separate jax.profiler.trace", "%g" % ref, "%g" % (per_step[0] if per_step else 0),
            per_step and all(n == round(ref) for n in per_step))
    print("validate python: %d passed, %d failed" % (sum(results), len(results) - sum(results)))


if __name__ == "__main__":
    main()
