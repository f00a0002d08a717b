#!/usr/bin/env python3
"""Turns bench/side_by_side's Google Benchmark JSON into BENCHMARKS.md's side-by-side table.

Usage: bench_tables.py RESULT.json [RESULT.json ...] [--tag TAG] [--write BENCHMARKS.md]

Each RESULT.json is one run of scripts/bench.sh (raw output, committed under bench/results/).
Its table goes between `<!-- side_by_side:TAG begin -->` and `<!-- side_by_side:TAG end -->`
in BENCHMARKS.md, TAG being the run's machine tag (bench.sh's BENCH_MACHINE); a tag seen for the
first time gets its block appended to the "Capture, side by side" section. --tag replaces the
machine tag (to keep an older run's table next to the current one's). Without --write the
tables are printed. Nothing in a table is typed by hand: machine, date, compiler and commit come
from the run's context.
"""
import json
import re
import sys

COLUMNS = [("nvtx3_no_tool", "NVTX3, no tool"), ("boottime_x2", "2 x BOOTTIME"),
           ("floor", "floor: TLS append + 2 TSC"), ("upstream_model", "upstream model"),
           ("roctx_utils", "roctx_utils")]
SECTION = "## Capture, side by side"


def load(path):
    """(context, {(variant, threads): median real ns per iteration})"""
    doc = json.load(open(path))
    medians = {}
    for b in doc["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        m = re.match(r"([a-z0-9_]+)/.*threads:(\d+)", b["run_name"] if "run_name" in b else b["name"])
        if m:
            scale = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}[b.get("time_unit", "ns")]
            medians[(m.group(1), int(m.group(2)))] = b["real_time"] * scale
    return doc["context"], medians


def table(path, tag=None):
    ctx, med = load(path)
    threads = sorted({t for (_, t) in med})
    per_thread = {k: v * k[1] for k, v in med.items()}  # real time per op x threads
    lines = []
    lines.append("Machine: %s (%s, %s CPUs), %s. Compilers: %s. Commit %s. `%s`, %s pairs per thread, median of 3."
                 % (ctx.get("machine", "?"), ctx.get("cpu", "?"), ctx.get("num_cpus", "?"), ctx.get("date", "?")[:10],
                    ctx.get("compilers", "?"), ctx.get("commit", "?"), ctx.get("command", "scripts/bench.sh"),
                    ctx.get("pairs", "?")))
    lines.append("Raw output: `%s`." % path)
    lines.append("")
    head = "| threads | " + " | ".join(c[1] for c in COLUMNS) + " | roctx_utils / floor | upstream / roctx_utils | roctx_utils M ranges/s | scaling |"
    lines.append(head)
    lines.append("|---:|" + "---:|" * (len(COLUMNS) + 4))
    one = med.get(("roctx_utils", 1))
    for t in threads:
        cells = []
        for key, _ in COLUMNS:
            v = per_thread.get((key, t))
            cells.append("%.1f" % v if v is not None else "")
        ours, floor_, up = per_thread.get(("roctx_utils", t)), per_thread.get(("floor", t)), per_thread.get(("upstream_model", t))
        ratio = "%.2fx" % (ours / floor_) if ours and floor_ else ""
        vs_up = "%.1fx" % (up / ours) if ours and up else ""
        rate = "%.1f" % (t / ours * 1e3) if ours else ""
        scaling = "%.0f %%" % (100 * one / med[("roctx_utils", t)] / t) if one and ("roctx_utils", t) in med else ""
        lines.append("| %d | %s | %s | %s | %s | %s |" % (t, " | ".join(cells), ratio, vs_up, rate, scaling))
    lines.append("")
    lines.append("ns per push+pop pair per thread (wall time per pair x threads). Scaling: ranges/s at N threads over N x ranges/s at 1.")
    return tag or ctx.get("machine_tag", "unknown"), "\n".join(lines)


def write(md_path, blocks):
    text = open(md_path).read()
    for tag, body in blocks:
        begin, end = "<!-- side_by_side:%s begin -->" % tag, "<!-- side_by_side:%s end -->" % tag
        block = "%s\n%s\n%s" % (begin, body, end)
        if begin in text and end in text:
            text = re.sub(re.escape(begin) + r".*?" + re.escape(end), lambda _: block, text, flags=re.S)
        elif SECTION in text:
            at = text.index(SECTION)
            nxt = text.find("\n## ", at + len(SECTION))
            nxt = len(text) if nxt < 0 else nxt
            text = text[:nxt].rstrip("\n") + "\n\n" + block + "\n" + text[nxt:]
        else:
            text = text.rstrip("\n") + "\n\n" + SECTION + "\n\n" + block + "\n"
    open(md_path, "w").write(text)


def main(argv):
    paths = [a for a in argv if not a.startswith("--")]
    out = argv[argv.index("--write") + 1] if "--write" in argv else None
    tag = argv[argv.index("--tag") + 1] if "--tag" in argv else None
    for value in (out, tag):
        if value:
            paths.remove(value)
    blocks = [table(p, tag) for p in paths]
    if out:
        write(out, blocks)
    else:
        for tag, body in blocks:
            print("[%s]\n%s\n" % (tag, body))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
