"""Checks the roofline report of upstream ggml's `test-backend-ops perf` on CUDA (our llama.cpp
hook + CUPTI) against Nsight Compute's measurement of the same cases in separate runs, and
`roctx roofline --json`'s placement of each case against the H200's ridge.

Usage: compare_llama.py OPS.txt REPORT.json ANALYSIS.json NCU_DIR LOG [REPORT_PDL.json LOG_PDL]
  OPS.txt    the test cases (test-backend-ops --test-file format), one per line
  LOG        test-backend-ops' output of the REPORT run (its `N runs - T us/run` lines)
  REPORT_PDL, LOG_PDL  the same run with GGML_CUDA_PDL=1 (programmatic dependent launch kept
             on): shown for comparison, not checked
  NCU_DIR    case_<line>.csv: ncu --csv of that case alone (gpu__time_duration.sum, and
             gpc__cycles_elapsed.max/.avg.per_second when present)
Prints a table and `validate llama: N passed, M failed`.
"""
import csv
import json
import os
import re
import sys

OPS = {2: "ADD", 25: "RMS_NORM", 29: "MUL_MAT", 46: "SOFT_MAX"}
TYPES = {0: "f32", 1: "f16", 8: "q8_0", 12: "q4_K"}


def median(values):
    values = sorted(values)
    return values[len(values) // 2] if values else 0.0


def base(name):
    """A kernel's function name without return type, template arguments, parameters or our
    label suffix: ncu and cpp_demangle print templates differently, the function is the same."""
    name = name.strip()
    if name.startswith("void "):
        name = name[5:]
    return re.split(r"[<( ]", name, maxsplit=1)[0]


def dims(ne):
    ne = list(ne)
    while len(ne) > 1 and ne[-1] == 1:
        ne.pop()
    return ",".join(str(d) for d in ne)


def parse_case(line):
    f = [int(x) for x in line.split()[:-1]]
    op, typ, ne = f[0], f[1], f[2:6]
    n_params = f[6]
    i = 7 + n_params
    n_src = f[i]
    i += 1
    srcs = []
    for _ in range(n_src):
        srcs.append((TYPES[f[i]], f[i + 1:i + 5]))
        i += 9
    return {"op": OPS[op], "type": TYPES[typ], "ne": ne, "srcs": srcs}


RATE = {"cycle/second": 1.0, "cycle/msecond": 1e3, "cycle/usecond": 1e6, "cycle/nsecond": 1e9,
        "hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9}
TIME = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6}


def ncu_kernels(path):
    """[(kernel base name, gpu__time_duration us, SM-side elapsed us or None)] in launch order.
    The second time is gpc__cycles_elapsed.max over the GPC clock: how long the GPCs ran the
    kernel, without the front end's part of the launch that gpu__time_duration includes."""
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]  # ncu prints its own log lines too
    kernels = {}
    for row in csv.DictReader(lines):
        k = kernels.setdefault(int(row["ID"]), {"name": base(row["Kernel Name"])})
        try:
            k[row["Metric Name"]] = (float(row["Metric Value"].replace(",", "")), row.get("Metric Unit", ""))
        except ValueError:
            pass
    out = []
    for _, k in sorted(kernels.items()):
        if "gpu__time_duration.sum" not in k:
            continue
        value, unit = k["gpu__time_duration.sum"]
        elapsed = None
        if "gpc__cycles_elapsed.max" in k and "gpc__cycles_elapsed.avg.per_second" in k:
            cycles = k["gpc__cycles_elapsed.max"][0]
            rate, runit = k["gpc__cycles_elapsed.avg.per_second"]
            hz = rate * RATE.get(runit.lower(), 1.0)
            elapsed = cycles / hz * 1e6 if hz > 0 else None
        out.append((k["name"], value * TIME.get(unit, 1e-3), elapsed))
    return out


def per_position(ncu, seq, column):
    """Median of `column` for each kernel of the op's sequence: ncu's launches are aligned on
    the first place where the op's whole kernel sequence starts (the launch window begins
    anywhere in an invocation), then cut into invocations."""
    names = [k[0] for k in ncu]
    n = len(seq)
    start = next((i for i in range(len(names) - n + 1) if names[i:i + n] == seq), None)
    if start is None:
        return [0.0] * n
    runs = [ncu[i:i + n] for i in range(start, len(ncu) - n + 1, n) if names[i:i + n] == seq]
    return [median([r[j][column] for r in runs if r[j][column] is not None]) for j in range(n)]


def wall_per_case(path):
    """[(runs, us per run)] per case, in order, from test-backend-ops perf's output."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", open(path, errors="replace").read())
    return [(int(n), float(t)) for n, t in re.findall(r"(\d+) runs -\s+([\d.]+) us/run", text)]


def case_rows(report, case):
    src_types = [t for t, _ in case["srcs"]]
    src_ne = [ne for _, ne in case["srcs"]]
    return [r for r in report.get("rows", [])
            if r.get("ggml_op") == case["op"] and r.get("src_types") == src_types
            and list(r.get("ne", [])) == case["ne"] and [list(x) for x in r.get("src_ne", [])] == src_ne]


def op_time(row):
    return sum(k["gpu_time_us"] for k in row["kernels"])


def expected_bound(case):
    if case["op"] == "MUL_MAT":
        return "compute" if case["ne"][1] >= 512 else "memory"
    return "memory"


def main():
    cases = [parse_case(l) for l in open(sys.argv[1]) if l.strip()]
    report = json.load(open(sys.argv[2]))
    analysis = json.load(open(sys.argv[3]))
    ncu_dir = sys.argv[4]
    walls = wall_per_case(sys.argv[5])
    pdl = json.load(open(sys.argv[6])) if len(sys.argv) > 7 else None
    pdl_walls = wall_per_case(sys.argv[7]) if len(sys.argv) > 7 else []
    rows_out, passed, failed = [], 0, 0

    def check(name, reference, measured, ok, note=""):
        nonlocal passed, failed
        rows_out.append((name, str(reference), str(measured), "PASS" if ok else "FAIL", note))
        passed, failed = passed + bool(ok), failed + (not ok)

    check("report schema_version, device", "1 sm_90", "%s %s" % (report.get("schema_version"), report.get("device")),
          report.get("schema_version") == 1 and report.get("device") == "sm_90")
    for idx, case in enumerate(cases, start=1):
        src_types = [t for t, _ in case["srcs"]]
        tag = "%s %s -> [%s]" % (case["op"], "/".join(src_types), dims(case["ne"]))
        rows = case_rows(report, case)
        check("%s: invocations" % tag, ">= 100", len(rows), len(rows) >= 100)
        if not rows:
            continue
        # One stream, kernels that do not overlap: the op's device time summed over the loop
        # cannot exceed the loop's wall time (the +1 % covers the untimed warm-up invocation).
        if idx <= len(walls):
            runs, us = walls[idx - 1]
            ratio = sum(op_time(r) for r in rows) / (runs * us)
            check("%s: device time / wall time of the loop" % tag, "<= 1.01", "%.3f" % ratio, ratio <= 1.01,
                  "%d runs, %.2f us/run wall" % (runs, us))
        names = [k["name"] for k in rows[-1]["kernels"]]
        readable = all(n and not n.startswith("_Z") for r in rows for n in (k["name"] for k in r["kernels"]))
        check("%s: kernel names demangled" % tag, "no _Z", "; ".join(n[:60] for n in names), readable)
        # Per kernel (by launch position in the op), the median over invocations, ours and ncu's.
        seq = [base(n) for n in names]
        same_shape = [r for r in rows if [base(k["name"]) for k in r["kernels"]] == seq]
        ours = [median([r["kernels"][j]["gpu_time_us"] for r in same_shape]) for j in range(len(seq))]
        ncu = ncu_kernels(os.path.join(ncu_dir, "case_%d.csv" % idx))
        theirs = per_position(ncu, seq, 1)
        sm_side = per_position(ncu, seq, 2)
        total_ours, total_ncu, total_sm = sum(ours), sum(theirs), sum(sm_side)
        found = all(t > 0 for t in theirs)
        note = ", ".join("%s %.1f/%.1f" % (b, o, t) for b, o, t in zip(seq, ours, theirs))
        if total_sm > 0:
            note += "; ncu SM-side elapsed %.1f us (ours %+.1f %%)" % (total_sm, 100 * (total_ours - total_sm) / total_sm)
        ok = found and total_ncu > 0 and abs(total_ours - total_ncu) <= 0.10 * total_ncu
        check("%s: device time per op, us (ncu, within 10 %%)" % tag, "%.1f" % total_ncu,
              "%.1f (%+.1f %%)" % (total_ours, 100 * (total_ours - total_ncu) / total_ncu if total_ncu else 0), ok, note)
        if pdl is not None:
            prow = case_rows(pdl, case)
            if prow and idx <= len(pdl_walls):
                runs, us = pdl_walls[idx - 1]
                rows_out.append(("%s: with PDL on (not checked)" % tag, "", "%.1f us/op" % median([op_time(r) for r in prow]), "info",
                                 "device/wall %.3f; wall %.2f us/run" % (sum(op_time(r) for r in prow) / (runs * us), us)))
        want_shapes = " ".join("%s[%s]" % (t, dims(ne)) for t, ne in case["srcs"]) + " -> %s[%s]" % (case["type"], dims(case["ne"]))
        groups = [g for g in analysis.get("groups", []) if g.get("op") == case["op"] and g.get("shapes") == want_shapes]
        roof = groups[0].get("roof") if groups else None
        placed = roof["bound"] if roof else "none"
        detail = ("AI %.1f FLOP/B, ridge %.0f, %.0f %% of roofline" % (groups[0]["arithmetic_intensity"], roof["ridge"], roof["pct_of_roofline"])
                  if roof else "no group %r" % want_shapes)
        check("%s: side of the ridge" % tag, expected_bound(case), placed, placed == expected_bound(case), detail)
    width = max(len(r[0]) for r in rows_out)
    print("%-*s  %10s  %-24s  %s" % (width, "check", "reference", "ours", "verdict"))
    for name, ref, ours, verdict, note in rows_out:
        print("%-*s  %10s  %-24s  %s%s" % (width, name, ref, ours[:60] if "names" not in name else ours, verdict, "  (" + note + ")" if note else ""))
    print("validate llama: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
