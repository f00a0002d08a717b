"""Issue 24 on the H200: `roctx record -- python3 jax_user_steps.py` (from the unpacked release
tarball, roctx_utils not installed in the environment) writes the same run as setting the NVTX
injection by hand. Both traces converted by `roctx convert --format chrome`.

  compare_record.py RECORD.json HAND.json STEPS

Two processes compile and autotune anew, so kernel choices and fusion numbers differ between
them, as between any two runs; the comparison is therefore per measured step (`train <i>`,
StepTraceAnnotation with no code change): the ROCTX ranges inside each step, its GPU
activities, how many of them are attributed to a range inside the step, and its GPU busy time.
Ends with `validate record: N passed, M failed`.
"""
import statistics
import sys

from compare_defaults import load_all


def inside(outer, inner):
    return outer["ts"] <= inner["ts"] and inner["ts"] + inner.get("dur", 0) <= outer["ts"] + outer["dur"]


def per_step(path, steps):
    gpu, _, host = load_all(path)
    out = []
    for i in range(steps):
        step = [e for e in host if e["name"] == "train %d" % i]
        if len(step) != 1:
            out.append(None)
            continue
        s = step[0]
        ranges = [e for e in host if e is not s and e["pid"] == s["pid"] and e["tid"] == s["tid"] and inside(s, e)]
        names = {e["name"] for e in ranges} | {s["name"]}
        work = [g for g in gpu if inside(s, g)]
        attributed = sum(1 for g in work if g.get("args", {}).get("nvtx_range") in names)
        out.append((len(ranges), len(work), attributed, sum(g.get("dur", 0) for g in work)))
    return out, len(host), len(gpu)


def main():
    steps = int(sys.argv[3])
    rec, rec_ranges, rec_gpu = per_step(sys.argv[1], steps)
    hand, hand_ranges, hand_gpu = per_step(sys.argv[2], steps)
    results = []

    def row(check, expected, got, ok):
        results.append(bool(ok))
        print("%-60s %16s %16s  %s" % (check, expected, got, "PASS" if ok else "FAIL"))

    print("%-60s %16s %16s  %s" % ("check (roctx record vs the injection by hand)", "by hand", "record", "verdict"))
    row("`train <i>` steps found (StepTraceAnnotation, zero code)", sum(1 for s in hand if s), sum(1 for s in rec if s),
        all(rec) and all(hand))
    if all(rec) and all(hand):
        row("ROCTX ranges inside each step", "/".join(str(s[0]) for s in hand), "/".join(str(s[0]) for s in rec),
            [s[0] for s in rec] == [s[0] for s in hand] and rec[0][0] > 0)
        row("GPU activities inside each step", "/".join(str(s[1]) for s in hand), "/".join(str(s[1]) for s in rec),
            [s[1] for s in rec] == [s[1] for s in hand] and rec[0][1] > 0)
        row("of them attributed to a range of the step", "%d/%d" % (sum(s[2] for s in hand), sum(s[1] for s in hand)),
            "%d/%d" % (sum(s[2] for s in rec), sum(s[1] for s in rec)),
            all(s[2] == s[1] for s in rec) and all(s[2] == s[1] for s in hand))
        busy_r = statistics.median(s[3] for s in rec)
        busy_h = statistics.median(s[3] for s in hand)
        row("median GPU busy time per step, us (within 10 %)", "%.0f" % busy_h, "%.0f" % busy_r,
            busy_h > 0 and abs(busy_r / busy_h - 1) <= 0.10)
    print("  (whole run, compilation and autotuning included: %d and %d ROCTX ranges, %d and %d GPU activities, by hand and record)"
          % (hand_ranges, rec_ranges, hand_gpu, rec_gpu))
    print("validate record: %d passed, %d failed" % (sum(results), len(results) - sum(results)))


if __name__ == "__main__":
    main()
