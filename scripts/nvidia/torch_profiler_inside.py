"""Issue 22 item 5 with PyTorch: a torch.profiler session (Kineto: takes CUPTI, stops without
cuptiFinalize) in the middle of an injected run with ROCTX_UTILS_PYTHON_HOOKS=1. Four phases of
STEPS steps, each inside a roctx_utils.annotate range that ends after a synchronize:
phase_warm, phase_before, phase_profiled_1 (under torch.profiler), phase_between,
phase_profiled_2 (a second torch.profiler session), phase_after.

  torch_profiler_inside.py STEPS

Prints `kineto: N1 N2 CUDA activities` (what each torch.profiler session saw).
check_user_steps.py torch-inside reads our trace.
"""
import sys
import time

import torch

import roctx_utils


def main():
    steps = int(sys.argv[1])
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True).cuda()
    x = torch.randn(8, 256, 512, device="cuda")

    def run(n):
        for _ in range(n):
            layer(x).sum().backward()
        torch.cuda.synchronize()

    def say(what):
        print("%s at %d ms (CLOCK_BOOTTIME)" % (what, time.clock_gettime_ns(time.CLOCK_BOOTTIME) // 1000000), flush=True)

    run(3)
    for phase in ("warm", "before"):
        with roctx_utils.annotate("phase_" + phase):
            run(steps)
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    kineto = []
    # Two sessions: Kineto must get its trace the second time too, after we took CUPTI back.
    for session, after in (("profiled_1", "between"), ("profiled_2", "after")):
        with roctx_utils.annotate("phase_" + session):
            say("torch.profiler start")
            with torch.profiler.profile(activities=acts) as prof:
                say("torch.profiler started")
                run(steps)
            say("torch.profiler stopped")
        # Kineto's raw events: its GPU activities (kernels, copies, sets) have device type CUDA.
        kineto.append(sum(1 for e in prof.profiler.kineto_results.events() if e.device_type() == torch.autograd.DeviceType.CUDA))
        with roctx_utils.annotate("phase_" + after):
            run(steps)
    say("done")
    print("kineto: %s CUDA activities" % " ".join(map(str, kineto)))
    print("torch_profiler_inside: hooked %s" % bool(torch.autograd.profiler.profile.__dict__.get("__roctx_utils_hooked__")))


if __name__ == "__main__":
    main()
