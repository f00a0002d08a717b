"""Issue 22's checks at XLA's default flags (command buffers on), on jax_transformer_scan.py.
Every input is an XSpace converted to Chrome JSON by `roctx convert --format chrome`.

  compare_defaults.py steps OURS.json REF.json STEPS
      ours (injected) against a separate jax.profiler.trace of the same STEPS steps: GPU
      activities (kernels, copies, sets) per step equal, GPU busy time per step within 2 %,
      every activity attributed (nvtx_range), the same stream ids.
  compare_defaults.py inside OURS.json XLA.json REF.json STEPS
      a jax.profiler.trace inside an injected run: ours holds every activity of the steps before
      and after the trace, XLA's own trace of the steps inside is whole.

The steps are found by our XlaModule ranges of jit_train_step (one per execution; ranges never
depend on CUPTI): the window of a step starts at its XlaModule range.
"""
import collections
import json
import re
import sys

MODULE = "hlo_module=jit_train_step"
STREAM = re.compile(r"^Stream #(\d+)")


def load_all(path):
    """(GPU stream events, jit_train_step XlaModule starts, events of the host's thread rows),
    from one read of the file."""
    events = json.load(open(path))["traceEvents"]
    procs = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
    gpu, modules, host = [], [], []
    for e in events:
        if e.get("ph") != "X":
            continue
        proc = procs.get(e["pid"], "")
        if proc.startswith("/device:GPU:"):
            e["_stream"] = threads.get((e["pid"], e["tid"]), "")
            if e["_stream"].startswith("Stream #"):  # not XLA's derived rows
                gpu.append(e)
            continue
        if proc == "/host:CPU" and threads.get((e["pid"], e["tid"]), "").startswith("Host Threads/"):
            host.append(e)
        if e["name"].startswith("XlaModule:") and MODULE in e["name"]:
            modules.append(e["ts"])
    return gpu, sorted(modules), host


def load(path):
    gpu, modules, _ = load_all(path)
    return gpu, modules


def summary(events, steps):
    streams = {int(m.group(1)) for m in (STREAM.match(e["_stream"]) for e in events) if m}
    kinds = collections.Counter("copy" if e["name"].startswith("Memcpy") else "set" if e["name"].startswith("Memset") else "kernel" for e in events)
    return {
        "activities": len(events) / steps,
        "kernels": kinds["kernel"] / steps,
        "copies and sets": (kinds["copy"] + kinds["set"]) / steps,
        "busy_us": sum(e.get("dur", 0) for e in events) / steps,
        "attributed": sum(1 for e in events if e.get("args", {}).get("nvtx_range")),
        "streams": streams,
    }


def window(events, start, end=float("inf")):
    return [e for e in events if start <= e["ts"] < end]


def row(check, ref, ours, ok):
    print("%-62s %14s %14s  %s" % (check, ref, ours, "PASS" if ok else "FAIL"))
    return ok


def info(what, ref, ours):
    """A row that is read, not checked (no verdict, not counted)."""
    print("%-62s %14s %14s" % (what, ref, ours))


def steps_mode(ours_path, ref_path, steps):
    ours_all, modules = load(ours_path)
    ref_all, _ = load(ref_path)
    if len(modules) < steps:
        print("only %d executions of jit_train_step in our trace" % len(modules))
        print("validate defaults: 0 passed, 1 failed")
        return
    ours = summary(window(ours_all, modules[-steps]), steps)
    ref = summary(ref_all, steps)
    print("%-62s %14s %14s  %s" % ("check (per step, XLA's default flags)", "jax.profiler", "ours", "verdict"))
    # XProf counts a graph's copies as kernels (memcpy32_post, ...); CUPTI gives us MEMCPY
    # records for them: the split is shown, the total is checked.
    info("  of which kernels", "%.1f" % ref["kernels"], "%.1f" % ours["kernels"])
    info("  of which copies and sets", "%.1f" % ref["copies and sets"], "%.1f" % ours["copies and sets"])
    results = [
        row("GPU activities (kernels, copies, sets)", "%.1f" % ref["activities"], "%.1f" % ours["activities"], abs(ref["activities"] - ours["activities"]) < 0.01),
        row("GPU busy time, us (sum of activity durations), within 2 %", "%.1f" % ref["busy_us"], "%.1f" % ours["busy_us"],
            ref["busy_us"] > 0 and abs(ours["busy_us"] / ref["busy_us"] - 1) <= 0.02),
        row("activities attributed to a range (nvtx_range)", "all", "%d of %d" % (ours["attributed"], ours["activities"] * steps),
            ours["attributed"] == round(ours["activities"] * steps) and ours["attributed"] > 0),
        row("stream ids", ",".join(map(str, sorted(ref["streams"]))), ",".join(map(str, sorted(ours["streams"]))), ref["streams"] == ours["streams"]),
    ]
    print("validate defaults: %d passed, %d failed" % (sum(results), len(results) - sum(results)))


def inside_mode(ours_path, xla_path, ref_path, steps):
    ours_all, modules = load(ours_path)
    xla_all, _ = load(xla_path)
    ref = summary(load(ref_path)[0], steps)
    per_step = ref["activities"]
    # 3 warm-up executions, then steps before, steps inside the trace, steps after.
    if len(modules) < 3 + 3 * steps:
        print("only %d executions of jit_train_step in our trace" % len(modules))
        print("validate inside: 0 passed, 1 failed")
        return
    b, d, a = modules[3], modules[3 + steps], modules[3 + 2 * steps]
    before, during, after = len(window(ours_all, b, d)), len(window(ours_all, d, a)), len(window(ours_all, a))
    xla = len(xla_all)
    print("%-62s %14s %14s  %s" % ("check (a jax.profiler.trace inside an injected run)", "expected", "ours", "verdict"))
    results = [
        row("our activities of the %d steps before the trace" % steps, "%d" % round(per_step * steps), "%d" % before, before == round(per_step * steps)),
        row("our activities of the %d steps after the trace" % steps, "%d" % round(per_step * steps), "%d" % after, after == round(per_step * steps)),
        row("XLA's own trace of the %d steps inside (its GPU activities)" % steps, ">= %d" % round(per_step * steps), "%d" % xla, xla >= round(per_step * steps)),
    ]
    print("  (ours during the trace: %d activities; they went to XLA's tracer, counted in our warning)" % during)
    print("validate inside: %d passed, %d failed" % (sum(results), len(results) - sum(results)))


if __name__ == "__main__":
    if sys.argv[1] == "steps":
        steps_mode(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        inside_mode(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
