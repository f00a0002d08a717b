"""Compares our XSpace of a JAX run under the NVTX injection with XProf's own reference run of the
same steps (jax.profiler.trace, no injection). Both XSpaces are first converted to Chrome JSON by
`roctx convert --format chrome` (stats become args, planes become processes).

Usage: compare_jax.py OURS.json REFERENCE.json MODULE WARMUP STEPS

Prints a table (check, reference, ours, verdict) and `validate jax: N passed, M failed`.
"""
import collections
import json
import re
import sys

HLO_OP = re.compile(r"hlo_op=([^,#]+)")


def load(path):
    """(process name by pid, [complete events])."""
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
               if e.get("ph") == "M" and e.get("name") == "thread_name"}
    spans = [e for e in events if e.get("ph") == "X"]
    for e in spans:
        e["_process"] = names.get(e["pid"], "")
        e["_thread"] = threads.get((e["pid"], e["tid"]), "")
    return spans


def our_executions(path, module):
    """[[hlo_op of each Thunk inside it]] per execution of MODULE, in time order, any thread."""
    events = [e for e in load(path) if e["_process"] == "/host:CPU" and "/ROCTX" in e["_thread"]]
    by_row = collections.defaultdict(list)
    for e in events:
        by_row[(e["pid"], e["tid"])].append(e)
    runs = []
    for row in by_row.values():
        for m in row:
            if not (m["name"].startswith("XlaModule:") and ("hlo_module=%s," % module) in m["name"]):
                continue
            start, end = m["ts"], m["ts"] + m.get("dur", 0)
            thunks = [HLO_OP.search(e["name"]).group(1) for e in row
                      if e["name"].startswith("Thunk:") and HLO_OP.search(e["name"])
                      and start <= e["ts"] and e["ts"] + e.get("dur", 0) <= end + 0.01]
            runs.append((start, thunks))
    return [t for _, t in sorted(runs)]


def reference_ops(path, module):
    """hlo_op -> kernel/memcpy events on the GPU planes, for MODULE."""
    ops = collections.Counter()
    for e in load(path):
        args = e.get("args", {})
        if e["_process"].startswith("/device:GPU:") and args.get("hlo_module") == module and args.get("hlo_op"):
            ops[args["hlo_op"]] += 1
    return ops


def is_kernel(e):
    """A kernel event (not a memcpy/memset), by XLA's or our kernel stats."""
    args = e.get("args", {})
    return "kernel_details" in args and not e["name"].startswith("Memcpy") and not e["name"].startswith("Memset")


def our_kernels(path, module, skip=0):
    """Our GPU kernel events launched inside a Thunk range, from execution `skip` of MODULE on
    (0: the first)."""
    events = load(path)
    starts = sorted(e["ts"] for e in events if e["name"].startswith("XlaModule:") and ("hlo_module=%s," % module) in e["name"])
    first = starts[skip] if len(starts) > skip else float("inf")
    return [e for e in events if e["_process"].startswith("/device:GPU:") and is_kernel(e)
            and str(e.get("args", {}).get("nvtx_range", "")).startswith("Thunk:") and e["ts"] >= first]


def reference_kernels(path, module):
    return [e for e in load(path) if e["_process"].startswith("/device:GPU:") and is_kernel(e)
            and e.get("args", {}).get("hlo_module") == module]


def median(values):
    values = sorted(values)
    return values[len(values) // 2] if values else 0.0


def main():
    ours_path, ref_path, module, warmup, steps = sys.argv[1:6]
    warmup, steps = int(warmup), int(steps)
    ours = our_executions(ours_path, module)
    ref = reference_ops(ref_path, module)
    rows, passed, failed = [], 0, 0

    def check(name, reference, measured, ok):
        nonlocal passed, failed
        rows.append((name, str(reference), str(measured), "PASS" if ok else "FAIL"))
        if ok:
            passed += 1
        else:
            failed += 1

    check("executions of %s (XlaModule ranges)" % module, warmup + steps, len(ours), len(ours) == warmup + steps)
    sets = {tuple(sorted(set(t))) for t in ours}
    check("same Thunk ops in every execution", 1, len(sets), len(sets) == 1)
    our_ops = set(ours[-1]) if ours else set()
    ref_ops = set(ref)
    check("HLO ops with GPU work (reference) all have a Thunk range", len(ref_ops), len(ref_ops & our_ops),
          bool(ref_ops) and ref_ops <= our_ops)
    extra = sorted(our_ops - ref_ops)
    check("Thunk ranges without GPU work in the reference", 0, len(extra), True)
    # Kernels (CUPTI): the same kernels per step, and their device durations within 10 %.
    # Ours from the first measured execution on (warm-up executions run slower).
    ours_k = our_kernels(ours_path, module, warmup)
    ref_k = reference_kernels(ref_path, module)
    ours_per_step = len(ours_k) / steps if steps else 0
    ref_per_step = len(ref_k) / steps if steps else 0
    check("kernels per step", "%.1f" % ref_per_step, "%.1f" % ours_per_step, ref_k and abs(ours_per_step - ref_per_step) < 1e-9)
    ours_names, ref_names = collections.Counter(e["name"] for e in ours_k), collections.Counter(e["name"] for e in ref_k)
    check("distinct kernel names", len(ref_names), len(ours_names), bool(ref_names) and set(ours_names) == set(ref_names))
    worst, within = 0.0, 0
    for name in set(ours_names) & set(ref_names):
        o = median([e.get("dur", 0) for e in ours_k if e["name"] == name])
        r = median([e.get("dur", 0) for e in ref_k if e["name"] == name])
        diff = abs(o - r) / r if r else 0.0
        worst = max(worst, diff)
        within += diff <= 0.10
    shared = len(set(ours_names) & set(ref_names))
    check("kernels whose median duration is within 10 %", shared, within, shared > 0 and within == shared)
    rows.append(("  (largest median-duration difference)", "", "%.1f %%" % (100 * worst), ""))
    ours_total = sum(e.get("dur", 0) for e in ours_k) / steps if steps else 0
    ref_total = sum(e.get("dur", 0) for e in ref_k) / steps if steps else 0
    check("GPU kernel time per step (us), within 10 %", "%.1f" % ref_total, "%.1f" % ours_total,
          ref_total > 0 and abs(ours_total - ref_total) <= 0.10 * ref_total)
    with_range = sum(1 for e in ours_k if str(e.get("args", {}).get("nvtx_range", "")).startswith("Thunk:"))
    check("our kernels whose nvtx_range is their Thunk", len(ours_k), with_range, bool(ours_k) and with_range == len(ours_k))
    width = max(len(r[0]) for r in rows)
    print("%-*s  %12s  %12s  %s" % (width, "check", "reference", "ours", "verdict"))
    for name, reference, measured, verdict in rows:
        print("%-*s  %12s  %12s  %s" % (width, name, reference, measured, verdict))
    if extra:
        print("  (Thunk ranges with no kernel in the reference: %s)" % ", ".join(extra[:12]))
    if not ref_ops:
        gpu = [e for e in load(ref_path) if e["_process"].startswith("/device:GPU:")]
        print("  (reference: %d GPU events, none with hlo_module=%s; e.g. %s)"
              % (len(gpu), module, [(e["name"][:40], sorted(e.get("args", {}))) for e in gpu[:3]]))
    for name in sorted(set(ours_names) & set(ref_names)):
        o = median([e.get("dur", 0) for e in ours_k if e["name"] == name])
        r = median([e.get("dur", 0) for e in ref_k if e["name"] == name])
        if r and abs(o - r) / r > 0.10:
            print("  (%s: median %.3f us here, %.3f us in the reference)" % (name, o, r))
    only_ref, only_ours = sorted(set(ref_names) - set(ours_names)), sorted(set(ours_names) - set(ref_names))
    if only_ref or only_ours:
        print("  (kernels only in the reference: %s; only in ours: %s)" % (only_ref[:8], only_ours[:8]))
    missing = sorted(ref_ops - our_ops)
    if missing:
        print("  (reference ops with no Thunk range: %s)" % ", ".join(missing[:12]))
    print("validate jax: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
