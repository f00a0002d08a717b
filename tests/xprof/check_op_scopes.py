#!/usr/bin/env python3
"""Holds what XProf shows of our op scopes against `roctx roofline` (issue 26).

Usage (with the python of the xprof venv):

    check_op_scopes.py --roctx ROCTX --report REPORT.json [--merged-with XLA.xplane.pb] PATH
    check_op_scopes.py --analysis ANALYSIS.json PATH     (`roctx roofline --json` made elsewhere)

PATH is an `.xplane.pb` file or a log directory (its newest run's single file). The report is
the roofline report the same process wrote; `ROCTX roofline REPORT --json --top 0` gives the
groups, their FLOP/byte, GB/s and bound, and the peaks. Each file is converted by XProf from a
fresh copy (XProf caches its results next to its input) with `roofline_model`,
`framework_op_stats` and `overview_page`.

Checks, each printed as `PASS name` or `FAIL name: why`:

  roofline-rows            XProf's Roofline Model lists exactly one row per op group, named by
                           the group's instruction name (the same sanitising as
                           roctx_export::hlo::instruction_name)
  group:NAME               for each group: occurrences = invocations; FLOP/byte, GB/s and FLOP/s
                           within 1 % of `roctx roofline`'s; bound by the same roof (memory: XProf's
                           "HBM"; compute: "Compute")
  peaks                    XProf's peak FLOP rate and HBM bandwidth are the table's (the FP16 matrix
                           peak, the memory bandwidth)
  counted-once             XProf's total op time equals the report's analysed kernel time
                           (within 1 %): nothing counted twice, nothing lost
  framework-op-stats       every group is a device op of framework_op_stats with the same FLOP
                           rate and memory bandwidth, and their time sums to the same total
  overview-page            the overview's top device ops are ours, with the same FLOP rates
  xla-modules-intact       (--merged-with) every module of the XLA file's /host:metadata is in
                           PATH's, byte for byte, beside ours
  plane-stat:NAME=VALUE    (--plane-stat) /device:GPU:0 has the device stat NAME with that
                           integer value (what the driver said of the GPU)

Ends with `op scopes: N passed, M failed`; exits 1 if anything failed, 2 on bad usage.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_xprof as cx  # noqa: E402  (the XSpace wire reader and input search)

TOLERANCE = 0.01
GIB = float(1 << 30)


def instruction_name(label):
    """roctx_export::hlo::instruction_name, for labels under its 200-byte cap."""
    parts = []
    for part in label.split(" "):
        if not part:
            continue
        if part == "->":
            parts.append("to")
            continue
        out = []
        for c in part:
            if c.isascii() and (c.isalnum() or c in "_-"):
                out.append(c)
            elif c == "[":
                out.append("_")
            elif c == ",":
                out.append("x")
            elif c == "+":
                out.append("-")
            elif c == "]":
                pass
            else:
                out.append("_")
        parts.append("".join(out))
    name = ".".join(parts)
    if not name or name[0].isdigit() or name[0] in "-.":
        name = "op_" + name
    return name


def close(a, b):
    return abs(a - b) <= TOLERANCE * max(abs(a), abs(b), 1e-12)


def tool_tables(path, tool):
    """XProf's DataTables for one tool, from a fresh copy of the file."""
    from xprof.convert import raw_to_tool_data  # the real consumer

    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, os.path.basename(path))
        shutil.copy(path, copy)
        data, _ = raw_to_tool_data.xspace_to_tool_data([copy], tool, {"use_saved_result": False})
    if isinstance(data, bytes):
        data = data.decode()
    doc = json.loads(data)
    return doc if isinstance(doc, list) else [doc]


def rows_of(table):
    cols = [c["id"] for c in table.get("cols", [])]
    return [{c: (cell or {}).get("v") for c, cell in zip(cols, row["c"])} for row in table.get("rows", [])]


def metadata_modules(path):
    """{program id: serialized HloProto} of the file's /host:metadata plane."""
    with open(path, "rb") as f:
        space = cx._fields(f.read())
    modules = {}
    for plane_bytes in space.get(1, []):
        plane = cx._fields(plane_bytes)
        if cx._string(plane, 2) != "/host:metadata":
            continue
        stat_names = {}
        for entry_bytes in plane.get(5, []):
            entry = cx._fields(entry_bytes)
            meta = cx._fields(entry[2][-1]) if entry.get(2) else {}
            stat_names[cx._int64(entry, 1)] = cx._string(meta, 2)
        for entry_bytes in plane.get(4, []):
            entry = cx._fields(entry_bytes)
            meta = cx._fields(entry[2][-1]) if entry.get(2) else {}
            for stat_bytes in meta.get(5, []):
                stat = cx._fields(stat_bytes)
                if stat_names.get(cx._int64(stat, 1)) == "Hlo Proto" and stat.get(6):
                    modules[cx._int64(entry, 1)] = stat[6][-1]
    return modules


def gpu_plane_stats(path, plane_name="/device:GPU:0"):
    """{stat name: integer or string value} of the plane's own stats."""
    with open(path, "rb") as f:
        space = cx._fields(f.read())
    for plane_bytes in space.get(1, []):
        plane = cx._fields(plane_bytes)
        if cx._string(plane, 2) != plane_name:
            continue
        names = {}
        for entry_bytes in plane.get(5, []):
            entry = cx._fields(entry_bytes)
            meta = cx._fields(entry[2][-1]) if entry.get(2) else {}
            names[cx._int64(entry, 1)] = cx._string(meta, 2)
        out = {}
        for stat_bytes in plane.get(6, []):
            stat = cx._fields(stat_bytes)
            name = names.get(cx._int64(stat, 1), "")
            if stat.get(3):
                out[name] = stat[3][-1]
            elif stat.get(4):
                out[name] = cx._int64(stat, 4)
            elif stat.get(5):
                out[name] = cx._string(stat, 5)
        return out
    return {}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("path")
    ap.add_argument("--roctx", help="the roctx CLI")
    ap.add_argument("--report", help="the roofline report of the same process")
    ap.add_argument("--analysis", help="instead of --roctx and --report: `roctx roofline --json` of the report, made elsewhere")
    ap.add_argument("--merged-with", help="an XLA .xplane.pb merged into PATH: its modules must be intact")
    ap.add_argument("--plane-stat", action="append", default=[], metavar="NAME=VALUE",
                    help="a device stat /device:GPU:0 must carry, with this integer value")
    args = ap.parse_args(argv)
    files = cx.find_xspaces(args.path)
    if len(files) != 1:
        print("usage: %s holds %d .xplane.pb files, expected 1" % (args.path, len(files)), file=sys.stderr)
        return 2
    path = files[0]
    results = cx.Results()
    check = results.check

    if args.analysis:
        with open(args.analysis) as f:
            analysis = json.load(f)
    elif args.roctx and args.report:
        analysis = json.loads(subprocess.run([args.roctx, "roofline", args.report, "--json", "--top", "0"],
                                             check=True, capture_output=True, text=True).stdout)
    else:
        print("usage: give --analysis, or --roctx and --report", file=sys.stderr)
        return 2
    groups = {instruction_name(g["label"]): g for g in analysis["groups"]}
    peaks = analysis["peaks"]

    tables = tool_tables(path, "roofline_model")
    roof_table = next((t for t in tables if "cols" in t and any(c["id"] == "bound_by" for c in t["cols"])), None)
    ours = {}
    for row in rows_of(roof_table or {}):
        if row.get("category") == "custom-call":
            ours.setdefault(row["operation"], row)  # one table per step; the first is "Total"
    check("roofline-rows", set(ours) == set(groups),
          "XProf lists %s, roctx roofline %s" % (sorted(ours), sorted(groups)))
    for name, g in sorted(groups.items()):
        row = ours.get(name)
        if row is None:
            check("group:" + name, False, "not in XProf's Roofline Model")
            continue
        why = []
        if int(row["occurrences"]) != g["count"]:
            why.append("occurrences %s != %d invocations" % (row["occurrences"], g["count"]))
        if not close(row["total_time"], g["total_time_us"]):
            why.append("time %.3f us != %.3f us" % (row["total_time"], g["total_time_us"]))
        if not close(row["operational_intensity"], g["arithmetic_intensity"]):
            why.append("FLOP/byte %.4f != %.4f" % (row["operational_intensity"], g["arithmetic_intensity"]))
        if not close(row["measured_memory_bw"] * GIB, g["bytes_per_s"]):
            why.append("bandwidth %.3f GB/s != %.3f GB/s" % (row["measured_memory_bw"] * GIB / 1e9, g["bytes_per_s"] / 1e9))
        if not close(row["measured_flop_rate"] * 1e9, g["flops_per_s"]):
            why.append("FLOP rate %.3f GFLOP/s != %.3f" % (row["measured_flop_rate"], g["flops_per_s"] / 1e9))
        bound = (g.get("roof") or {}).get("bound")
        expected = {"memory": "HBM", "compute": "Compute"}.get(bound)
        if expected and row["bound_by"] != expected:
            why.append("bound by %s, roctx roofline says %s" % (row["bound_by"], bound))
        check("group:" + name, not why, "; ".join(why))

    p = (roof_table or {}).get("p", {})
    fp16 = next((c["flops"] for c in (peaks or {}).get("ceilings", []) if c["ceiling"] == "fp16_matrix"), None)
    check("peaks", peaks is not None and fp16 is not None
          and close(float(p.get("peak_flop_rate", 0)) * 1e9, fp16)
          and close(float(p.get("peak_hbm_bw", 0)) * GIB, peaks["mem_bw"]),
          "XProf %s GFLOP/s, %s GiB/s; table fp16 matrix %s FLOP/s, %s B/s"
          % (p.get("peak_flop_rate"), p.get("peak_hbm_bw"), fp16, (peaks or {}).get("mem_bw")))
    total = sum(r["total_time"] for r in ours.values())
    check("counted-once", close(total, analysis["analysed_time_us"]),
          "XProf's ops %.3f us, the report's %.3f us" % (total, analysis["analysed_time_us"]))

    fw = [r for t in tool_tables(path, "framework_op_stats") for r in rows_of(t) if r.get("host_or_device") == "Device"]
    fw_ops = {}
    for r in fw:
        fw_ops.setdefault(r["operation"], r)
    why = []
    for g in groups.values():
        r = next((r for op, r in fw_ops.items() if (" " + g["label"] + ":") in (" " + op.split("/", 1)[-1])), None)
        if r is None:
            why.append("%s missing" % g["label"])
        elif not (close(r["measured_flop_rate"] * 1e9, g["flops_per_s"]) and close(r["measured_memory_bw"] * GIB, g["bytes_per_s"])):
            why.append("%s: %s GFLOP/s, %s GiB/s" % (g["label"], r["measured_flop_rate"], r["measured_memory_bw"]))
    fw_total = sum(r["total_time"] for op, r in fw_ops.items() if op != "IDLE")
    if not close(fw_total, analysis["analysed_time_us"]):
        why.append("device op time %.3f us != %.3f us" % (fw_total, analysis["analysed_time_us"]))
    check("framework-op-stats", not why, "; ".join(why))

    top = [r for t in tool_tables(path, "overview_page") for r in rows_of(t) if "flopRate" in r]
    why = []
    for r in top:
        g = next((g for g in groups.values() if (" " + g["label"] + ":") in (" " + r["operation"].split("/", 1)[-1])), None)
        if g is None:
            why.append("%s is not one of ours" % r["operation"])
        elif not close(r["flopRate"] * 1e9, g["flops_per_s"]):
            why.append("%s: %s GFLOP/s" % (g["label"], r["flopRate"]))
    check("overview-page", top and not why, "; ".join(why) or "no top ops")

    if args.merged_with:
        xla = metadata_modules(args.merged_with)
        merged = metadata_modules(path)
        broken = [pid for pid, proto in xla.items() if merged.get(pid) != proto]
        mine = [pid for pid in merged if pid not in xla]
        check("xla-modules-intact", xla and not broken and len(mine) == 1,
              "%d XLA modules, %d changed or missing; %d of ours" % (len(xla), len(broken), len(mine)))

    stats = gpu_plane_stats(path) if args.plane_stat else {}
    for want in args.plane_stat:
        name, _, value = want.partition("=")
        check("plane-stat:" + want, str(stats.get(name)) == value, "the plane has %s" % stats)

    print("op scopes: %d passed, %d failed" % (results.passed, results.failed))
    return 1 if results.failed else 0


if __name__ == "__main__":
    sys.exit(main())
