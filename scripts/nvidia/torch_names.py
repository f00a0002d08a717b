"""Kernel names as Kineto prints them vs as our trace prints them (issue 22 item 4): a
TransformerEncoderLayer forward and backward, a few steps (under emit_nvtx in our run).

  torch_names.py kineto OUT.txt   # run under torch.profiler (no injection): Kineto's names
  torch_names.py ours             # run under the NVTX injection with ROCTX_UTILS_XSPACE_OUT
  torch_names.py compare OURS_CHROME_JSON KINETO.txt
                                  # the distinct kernel names of our trace (roctx convert
                                  # --format chrome) against Kineto's; prints a check line
"""
import json
import sys


def workload(steps=3, nvtx=True):
    import contextlib

    import torch

    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048, batch_first=True).cuda()
    x = torch.randn(16, 128, 512, device="cuda")
    for _ in range(steps):
        # emit_nvtx is a profiler of its own: not inside torch.profiler.
        with torch.autograd.profiler.emit_nvtx() if nvtx else contextlib.nullcontext():
            layer(x).sum().backward()
    torch.cuda.synchronize()


def kineto(out):
    import torch
    from torch.profiler import ProfilerActivity, profile

    workload(1, nvtx=False)  # warm-up outside the profile (cuBLAS handles, autotuning)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        workload(nvtx=False)
    gpu = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    names = sorted(set(gpu))
    moved = sum(1 for n in gpu if n.startswith(("Memcpy", "Memset")))
    with open(out, "w") as f:
        f.write("\n".join(names) + "\n")
    with open(out + ".counts", "w") as f:
        f.write("%d %d\n" % (len(gpu) - moved, moved))
    print("kineto: %d distinct GPU activity names" % len(names))


def ours_events(chrome_path):
    """Our GPU activities launched in the measured steps (after the `measured` range began)."""
    trace = json.load(open(chrome_path))
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    gpu = {e["pid"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name" and "/device:GPU" in str(e.get("args", {}).get("name", ""))}
    since = min((e["ts"] for e in events if e.get("ph") == "X" and e.get("name") == "measured"), default=0)
    return [e for e in events if e.get("ph") == "X" and e.get("pid") in gpu and e["ts"] >= since]


def ours_names(chrome_path):
    return {e["name"] for e in ours_events(chrome_path)}


def compare(chrome_path, kineto_path):
    ours = ours_names(chrome_path)
    theirs = {l.rstrip("\n") for l in open(kineto_path) if l.strip()}
    # Copies and sets are named differently by design (XLA's MemcpyD2D, not Kineto's "Memcpy DtoD
    # (Device -> Device)"): they are compared by count below.
    theirs = {n for n in theirs if not n.startswith(("Memcpy", "Memset"))}
    ours = {n for n in ours if not n.startswith(("Memcpy", "Memset"))}
    same = ours & theirs
    print("%-60s %10s %10s  %s" % ("check", "Kineto", "ours", "verdict"))
    print("%-60s %10d %10d  %s" % ("distinct kernel names, spelled as Kineto spells them", len(theirs), len(same), "PASS" if ours == theirs else "FAIL"))
    k_kernels, k_moved = (int(v) for v in open(kineto_path + ".counts").read().split())
    events = ours_events(chrome_path)
    o_moved = sum(1 for e in events if e["name"].startswith(("Memcpy", "Memset")))
    o_kernels = len(events) - o_moved
    counts_ok = (o_kernels, o_moved) == (k_kernels, k_moved)
    print("%-60s %10s %10s  %s" % ("kernels / copies and sets in the 3 measured steps", "%d / %d" % (k_kernels, k_moved), "%d / %d" % (o_kernels, o_moved), "PASS" if counts_ok else "FAIL"))
    for n in sorted(ours - theirs)[:5]:
        print("  only ours:   " + n[:150])
    for n in sorted(theirs - ours)[:5]:
        print("  only Kineto: " + n[:150])
    ok = (ours == theirs) + counts_ok
    print("validate names: %d passed, %d failed" % (ok, 2 - ok))


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "kineto":
        kineto(sys.argv[2])
    elif mode == "ours":
        import torch

        workload(1)
        torch.cuda.nvtx.range_push("measured")
        workload()
        torch.cuda.nvtx.range_pop()
        print("ours: done")
    else:
        compare(sys.argv[2], sys.argv[3])
