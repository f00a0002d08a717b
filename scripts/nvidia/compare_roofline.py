"""Checks the PyTorch roofline report (scripts/nvidia/torch_roofline.py under the NVTX injection
with CUPTI) against Nsight Compute's measurement of the same kernels in a separate run, and
`roctx roofline --json`'s placement of each op against the H200's ridge.

Usage: compare_roofline.py REPORT.json NCU.csv ANALYSIS.json
Prints a table and `validate roofline: N passed, M failed`.
"""
import csv
import json
import re
import sys

# Which of ncu's kernels are an op's (ncu and cpp_demangle print template names differently, so
# names are matched by kind, and the op's measured repeats are the last launches of that kind).
KERNELS = {"ADD": re.compile(r"vectorized_elementwise|elementwise_kernel"),
           "MUL_MAT": re.compile(r"gemm|xmma|nvjet|cutlass|sm90_|sm100_")}


def median(values):
    values = sorted(values)
    return values[len(values) // 2] if values else 0.0


def ncu_durations(path):
    """[(kernel name, gpu__time_duration in us)] in launch order."""
    out = []
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]  # ncu prints its own log lines too
    for row in csv.DictReader(lines):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(row["Metric Value"].replace(",", ""))
        unit = row.get("Metric Unit", "nsecond")
        scale = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6}.get(unit, 1e-3)
        out.append((row["Kernel Name"], value * scale))
    return out


def main():
    report = json.load(open(sys.argv[1]))
    ncu = ncu_durations(sys.argv[2])
    analysis = json.load(open(sys.argv[3]))
    rows, passed, failed = [], 0, 0

    def check(name, reference, measured, ok):
        nonlocal passed, failed
        rows.append((name, str(reference), str(measured), "PASS" if ok else "FAIL"))
        passed, failed = passed + bool(ok), failed + (not ok)

    for op, bound in (("ADD", "memory"), ("MUL_MAT", "compute")):
        invocations = [r for r in report.get("rows", []) if r.get("ggml_op") == op]
        check("%s: invocations in the report" % op, 3, len(invocations), len(invocations) == 3)
        if not invocations:
            continue
        names = sorted({k["name"] for r in invocations for k in r["kernels"]})
        ours = median([sum(k["gpu_time_us"] for k in r["kernels"]) for r in invocations])
        # The last 3 launches of the op's kind are the measured repeats (warm-ups come first).
        launches = [d for name, d in ncu if KERNELS[op].search(name)]
        theirs = median(launches[-3:])
        check("%s: device time per op, us (ncu, within 10 %%)" % op, "%.1f" % theirs, "%.1f" % ours,
              theirs > 0 and abs(ours - theirs) <= 0.10 * theirs)
        rows.append(("  %s kernels" % op, "", ", ".join(n[:48] for n in names), ""))
        groups = [g for g in analysis.get("groups", []) if g.get("op") == op]
        placed = groups[0]["roof"]["bound"] if groups and groups[0].get("roof") else "none"
        ai = groups[0].get("arithmetic_intensity", 0) if groups else 0
        ridge = groups[0]["roof"]["ridge"] if groups and groups[0].get("roof") else 0
        check("%s: side of the ridge (AI %.1f, ridge %.1f FLOP/B)" % (op, ai, ridge), bound, placed, placed == bound)
    width = max(len(r[0]) for r in rows)
    print("%-*s  %12s  %12s  %s" % (width, "check", "reference", "ours", "verdict"))
    for name, ref, ours, verdict in rows:
        print("%-*s  %12s  %12s  %s" % (width, name, ref, ours, verdict))
    print("validate roofline: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
