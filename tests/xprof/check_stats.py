#!/usr/bin/env python3
"""Holds `roctx stats --report kernels` against XProf's own kernel_stats tool (issue 27).

Usage (with the python of the xprof venv):

    check_stats.py --roctx ROCTX [--kernels N] [--copies N] [--all-in-ranges] PATH [PATH ...]

Each PATH is an `.xplane.pb` file or a log directory (its newest run's single file). XProf
converts a fresh copy of it (it caches results next to its input) with `kernel_stats`; its
rows, summed per kernel name (XProf keeps one row per name, launch shape and op), must list
the same kernels as `roctx stats --report kernels --format json --top 0 PATH`, with equal
counts and total times within 0.1 %. XProf keeps at most 1000 rows: past that only the names
it lists are compared.

Checks, each printed as `PASS name` or `FAIL name: why`:

  kernels:FILE             the same kernel names on both sides (and at least one kernel)
  kernel:FILE:NAME         count equal, total time within 0.1 %
  counts:FILE              (--kernels, --copies) `roctx stats` counts N kernels and N copies
                           and sets in all
  in-ranges:FILE           (--all-in-ranges) every kernel and copy is some range's GPU work
                           (gpu_ops_without_range 0, and the range_gpu rows' exclusive time
                           adds up to the kernels' and copies' time)

Ends with `stats: N passed, M failed`; exits 1 if anything failed, 2 on bad usage.
"""

import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_op_scopes as cos  # noqa: E402  (XProf's tool tables from a fresh copy)
import check_xprof as cx  # noqa: E402  (the input search)

TOLERANCE = 0.001
XPROF_MAX_ROWS = 1000


def xprof_kernels(path):
    """{name: (occurrences, total ns)} of XProf's kernel_stats."""
    out = {}
    rows = [r for t in cos.tool_tables(path, "kernel_stats") for r in cos.rows_of(t)]
    for r in rows:
        n, total = out.get(r["kernel_name"], (0, 0.0))
        out[r["kernel_name"]] = (n + int(r["occurrences"]), total + float(r["total_duration_us"]) * 1000.0)
    return out, len(rows)


def our_stats(roctx, path):
    return json.loads(subprocess.run([roctx, "stats", "--format", "json", "--top", "0", path],
                                     check=True, capture_output=True, text=True).stdout)["processes"][0]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--roctx", required=True)
    ap.add_argument("--kernels", type=int)
    ap.add_argument("--copies", type=int)
    ap.add_argument("--all-in-ranges", action="store_true")
    ap.add_argument("paths", nargs="+")
    args = ap.parse_args(argv)
    results = []

    def check(name, ok, why=""):
        results.append(ok)
        print(("PASS %s" % name) if ok else ("FAIL %s: %s" % (name, why)))

    for given in args.paths:
        files = cx.find_xspaces(given)
        if len(files) != 1:
            print("usage: %s holds %d .xplane.pb files, expected 1" % (given, len(files)), file=sys.stderr)
            return 2
        path = files[0]
        label = os.path.basename(given.rstrip("/"))
        doc = our_stats(args.roctx, path)
        ours = {r["kernel"]: (r["count"], float(r["total_ns"])) for r in doc["kernels"]}
        theirs, rows = xprof_kernels(path)
        names = set(theirs) if rows >= XPROF_MAX_ROWS else set(ours) | set(theirs)
        check("kernels:%s" % label, bool(ours) and (rows >= XPROF_MAX_ROWS or set(ours) == set(theirs)),
              "roctx stats %d kernels, XProf %d; only ours: %s; only XProf's: %s"
              % (len(ours), len(theirs), sorted(set(ours) - set(theirs))[:5], sorted(set(theirs) - set(ours))[:5]))
        for name in sorted(names):
            (n1, t1), (n2, t2) = ours.get(name, (0, 0.0)), theirs.get(name, (0, 0.0))
            ok = n1 == n2 and abs(t1 - t2) <= TOLERANCE * max(t1, t2, 1e-12)
            check("kernel:%s:%s" % (label, name[:80]), ok, "roctx stats %d in %.0f ns, XProf %d in %.0f ns" % (n1, t1, n2, t2))
        if args.kernels is not None or args.copies is not None:
            kernels, copies = sum(r["count"] for r in doc["kernels"]), sum(r["count"] for r in doc["copies"])
            check("counts:%s" % label, (args.kernels in (None, kernels)) and (args.copies in (None, copies)),
                  "%d kernels and %d copies" % (kernels, copies))
        if args.all_in_ranges:
            gpu = sum(r["total_ns"] for r in doc["kernels"] + doc["copies"])
            exclusive = sum(r["gpu_exclusive_ns"] for r in doc["range_gpu"])
            check("in-ranges:%s" % label, doc["gpu_ops_without_range"] == 0 and gpu == exclusive and gpu > 0,
                  "%d without a range; exclusive %d ns of %d" % (doc["gpu_ops_without_range"], exclusive, gpu))
    passed = sum(results)
    print("stats: %d passed, %d failed" % (passed, len(results) - passed))
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
