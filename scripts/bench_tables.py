#!/usr/bin/env python3
"""Turns bench/side_by_side's Google Benchmark JSON into BENCHMARKS.md's side-by-side table.

Usage: bench_tables.py RESULT.json [RESULT.json ...] [--tag TAG] [--write BENCHMARKS.md]
       bench_tables.py RESULT.json --summary RESULT.json NVTX.txt|- PYTHON.txt|- [--write ...]

Each RESULT.json is one run of scripts/bench.sh (raw output, committed under bench/results/).
Its table goes between `<!-- side_by_side:TAG begin -->` and `<!-- side_by_side:TAG end -->`
in BENCHMARKS.md, TAG being the run's machine tag (bench.sh's BENCH_MACHINE); a tag seen for the
first time gets its block appended to the "Capture, side by side" section. --tag replaces the
machine tag (to keep an older run's table next to the current one's). Without --write the
tables are printed. Nothing in a table is typed by hand: machine, date, compiler and commit come
from the run's context.

--summary adds the machine's table of every path (issue 44), between `<!-- summary:TAG begin -->`
and `<!-- summary:TAG end -->` in the "Every path on one machine" section: the side-by-side run's
floor, Tracy's zone (where scripts/bench_tracy.sh built it), NVTX3 with no tool and ours linked; scripts/bench_nvtx_threads.sh's output (NVTX.txt:
CUPTI's own NVTX capture where it ran, ours injected with kernels off and traced, against that
binary's own floor); python/bench/bench_annotate.py's (PYTHON.txt). "-" for a part not run.
"""
import json
import re
import statistics
import sys

COLUMNS = [("nvtx3_no_tool", "NVTX3, no tool"), ("boottime_x2", "2 x BOOTTIME"),
           ("floor", "floor: TLS append + 2 TSC"), ("upstream_model", "upstream model"),
           ("roctx_utils", "roctx_utils"), ("roctx_utils_registered", "roctx_utils, registered title"),
           ("tracy_static", "Tracy zone, static label"),
           ("tracy_runtime", "Tracy zone, runtime label")]
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


SUMMARY_SECTION = "## Every path on one machine (issue 44)"
SUMMARY_THREADS = (1, 4, 16)


def load_nvtx(path):
    """{(configuration, threads): median ns per pair over the rounds} of bench_nvtx_threads.sh."""
    seen = {}
    for line in open(path):
        m = re.match(r"(\w+) threads=(\d+) ns_per_pair=([\d.]+)", line)
        if m:
            seen.setdefault((m.group(1), int(m.group(2))), []).append(float(m.group(3)))
    return {k: sorted(v)[len(v) // 2] for k, v in seen.items()}


def load_python(path):
    """{row label: [ns per pair, one per run]} of bench_annotate.py, in file order: bench.sh runs
    it BENCH_PY_ROUNDS times into one file, so a noisy host moves one run, not the row."""
    rows = {}
    for line in open(path):
        m = re.match(r"(\S.*?)\s+([\d.]+) ns per pair", line)
        if m:
            rows.setdefault(m.group(1), []).append(float(m.group(2)))
    return rows


def summary(side, nvtx, py, tag=None):
    ctx, med = load(side)
    per_thread = {k: v * k[1] for k, v in med.items()}
    inj = load_nvtx(nvtx) if nvtx and nvtx != "-" else {}
    rows_py = load_python(py) if py and py != "-" else {}
    threads = [t for t in SUMMARY_THREADS if any(k[1] == t for k in per_thread) or any(k[1] == t for k in inj)]
    lines = ["Machine: %s, %s. Commit %s. `scripts/bench.sh`; raw output: `%s`%s%s."
             % (ctx.get("machine", "?"), ctx.get("date", "?")[:10], ctx.get("commit", "?"), side,
                ", `%s`" % nvtx if inj else "", ", `%s`" % py if rows_py else ""), ""]
    lines.append("| ns per range (push + pop), per thread | " + " | ".join("%d thread%s" % (t, "s" * (t > 1)) for t in threads)
                 + " | x its floor at %s threads |" % " / ".join(map(str, threads)))
    lines.append("|---|" + "---:|" * (len(threads) + 1))

    def row(label, values, floor=None):
        cells = ["%.1f" % values[t] if values.get(t) else "" for t in threads]
        floor = floor or {}
        ratios = ["%.2fx" % (values[t] / floor[t]) if values.get(t) and floor.get(t) else "-" for t in threads]
        lines.append("| %s | %s | %s |" % (label, " | ".join(cells), " / ".join(ratios) if floor else ""))

    by = lambda src, key: {t: src.get((key, t)) for t in threads}
    floor = by(per_thread, "floor")
    row("floor: a 24-byte thread-local append and two TSC reads", floor)
    if any(k[0] == "tracy_static" for k in per_thread):
        version = ctx.get("tracy_version", "0.14")
        row("Tracy v%s zone, static label (`ZoneScopedN`; client only)" % version, by(per_thread, "tracy_static"), floor)
        row("Tracy v%s zone, runtime label (`ZoneTransientN`)" % version, by(per_thread, "tracy_runtime"), floor)
    else:
        lines.append("| Tracy v0.14 zone | %s |" % " | ".join(["not built (scripts/bench_tracy.sh)"] + [""] * len(threads)))
    row("NVTX3 with no tool attached", by(per_thread, "nvtx3_no_tool"))
    # bench.sh's context says how the linked rows' sessions ran (absent before 2026-12-08: a
    # session per run, on the pool's reused chunks).
    memory = {"one": "one session: fresh memory", "per-run": "a session per run: chunks reused"}.get(
        ctx.get("sessions", "per-run"), ctx.get("sessions"))
    row("ours, linked (`//:roctx_utils_impl` RangePush/RangePop; %s)" % memory, by(per_thread, "roctx_utils"), floor)
    if any(k[0] == "roctx_utils_registered" for k in per_thread):
        row("ours, linked, a RegisterString title (XLA's thunks; %s)" % memory, by(per_thread, "roctx_utils_registered"), floor)
    if inj:
        ifloor = by(inj, "floor")
        row("floor of the NVTX benchmark (no NVTX call)", ifloor)
        if any(k[0] == "cupti" for k in inj):
            row("NVTX into CUPTI's own NVTX capture (the vendor's tracer)", by(inj, "cupti"), ifloor)
        else:
            lines.append("| NVTX into CUPTI's own NVTX capture | %s |" % " | ".join(["no CUPTI here"] + [""] * len(threads)))
        row("ours, NVTX injection, kernels off (one session: fresh memory, as a program records)", by(inj, "ours_kernels_off"), ifloor)
        if any(k[0] == "ours_kernels_off_reused" for k in inj):
            # The like of side_by_side's linked rows with BENCH_ONE_SESSION=0 (a session per
            # run, which from the second run on records into the pool's chunks, faulted in).
            row("ours, NVTX injection, kernels off, a session per round (chunks reused)", by(inj, "ours_kernels_off_reused"), ifloor)
        traced = [k[0] for k in inj if k[0].startswith("ours_kernels_traced")]
        if traced:
            real = traced[0].endswith("real_cupti")
            row("ours, NVTX injection, kernels traced (the default; %s)" % ("real CUPTI" if real else "the fake CUPTI"), by(inj, traced[0]), ifloor)
    lines.append("")
    def over(a, b):
        return " / ".join("%.2fx" % (a[t] / b[t]) if a.get(t) and b.get(t) else "-" for t in threads)

    if any(by(per_thread, "tracy_static").values()):
        lines.append("Against Tracy in the same run, at %s threads: ours with a registered title over Tracy's "
                     "static-label zone %s; ours with a runtime label over Tracy's runtime-label zone %s; "
                     "ours with a runtime label over Tracy's static-label zone %s."
                     % (" / ".join(map(str, threads)), over(by(per_thread, "roctx_utils_registered"), by(per_thread, "tracy_static")),
                        over(by(per_thread, "roctx_utils"), by(per_thread, "tracy_runtime")),
                        over(by(per_thread, "roctx_utils"), by(per_thread, "tracy_static"))))
        lines.append("")
    if rows_py:
        runs = len(rows_py.get("do-nothing context manager", [0]))
        lines.append("| Python, per enter + exit, 1 thread (capture on; median of %d run%s) | ns | x the do-nothing context manager |" % (runs, "" if runs == 1 else "s"))
        lines.append("|---|---:|---:|")
        med = {label: statistics.median(v) for label, v in rows_py.items()}
        nothing = med.get("do-nothing context manager")
        for label, ns in med.items():
            x = "%.2fx" % (ns / nothing) if nothing and "TraceAnnotation" not in label and "threads" not in label else ""
            if label == "jax TraceAnnotation, hooked" and "jax TraceAnnotation, stock" in rows_py:
                # The median of each run's own difference: stock and hooked ran seconds apart.
                pairs = list(zip(rows_py[label], rows_py["jax TraceAnnotation, stock"]))
                x = "stock %+.0f ns" % statistics.median(h - st for h, st in pairs)
            if label == "roctx_utils.annotate, threads":
                label = "roctx_utils.annotate, 16 threads at once (wall time / pairs)"
            lines.append("| %s | %.0f | %s |" % (label, ns, x))
        lines.append("")
    lines.append("Each row is the median of its runs. NVTX rows run in their own process each.")
    return tag or ctx.get("machine_tag", "unknown"), "\n".join(lines)


def place(text, marker, tag, body, section, missing):
    """`text` with the `marker:tag` block set to `body`: replaced where it is, else appended to
    `section`, else `missing(text, block)` (where a section that is not there yet goes)."""
    begin, end = "<!-- %s:%s begin -->" % (marker, tag), "<!-- %s:%s end -->" % (marker, tag)
    block = "%s\n%s\n%s" % (begin, body, end)
    if begin in text and end in text:
        return re.sub(re.escape(begin) + r".*?" + re.escape(end), lambda _: block, text, flags=re.S)
    if section in text:
        at = text.index(section)
        nxt = text.find("\n## ", at + len(section))
        nxt = len(text) if nxt < 0 else nxt
        return text[:nxt].rstrip("\n") + "\n\n" + block + "\n" + text[nxt:]
    return missing(text, block)


def summary_section_after_side_by_side(text, block):
    """The summary section, new, right after the side-by-side section (or at the end)."""
    at = text.find(SECTION)
    nxt = text.find("\n## ", at + len(SECTION)) if at >= 0 else -1
    intro = ("%s\n\nOne table per machine, written by `scripts/bench.sh` from its raw outputs: what a "
             "range costs on each path a user can take, next to the hardware floor and the vendor's "
             "own tracer.\n\n%s\n" % (SUMMARY_SECTION, block))
    return text + "\n" + intro if nxt < 0 else text[:nxt].rstrip("\n") + "\n\n" + intro + text[nxt:]


def write(md_path, blocks, marker="side_by_side", section=SECTION, missing=None):
    missing = missing or (lambda text, block: text.rstrip("\n") + "\n\n" + section + "\n\n" + block + "\n")
    text = open(md_path).read()
    for tag, body in blocks:
        text = place(text, marker, tag, body, section, missing)
    open(md_path, "w").write(text)


def main(argv):
    parts = None
    if "--summary" in argv:
        at = argv.index("--summary")
        parts = argv[at + 1:at + 4]
        if len(parts) != 3:
            print("bench_tables.py: --summary takes RESULT.json NVTX.txt|- PYTHON.txt|-", file=sys.stderr)
            return 2
        argv = argv[:at] + argv[at + 4:]
    paths = [a for a in argv if not a.startswith("--")]
    out = argv[argv.index("--write") + 1] if "--write" in argv else None
    tag = argv[argv.index("--tag") + 1] if "--tag" in argv else None
    for value in (out, tag):
        if value:
            paths.remove(value)
    blocks = [table(p, tag) for p in paths]
    summaries = [summary(*parts, tag=tag)] if parts else []
    if out:
        write(out, blocks)
        if summaries:
            write(out, summaries, "summary", SUMMARY_SECTION, summary_section_after_side_by_side)
    else:
        for tag_, body in blocks + summaries:
            print("[%s]\n%s\n" % (tag_, body))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
