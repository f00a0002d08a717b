"""``torch.profiler`` and our GPU tracing, sharing CUPTI without losing anything of ours.

Kineto (``torch.profiler``, ``torch.autograd.profiler.profile``) takes CUPTI's activity callbacks
when it prepares a trace with CUDA activities, and gives them up without ``cuptiFinalize`` when
it stops (unless ``TEARDOWN_CUPTI=1``), which CUPTI gives us no sign of. ``install()`` wraps the
class every torch profiler goes through:

- before Kineto prepares a CUDA trace, CUPTI is handed over (``roctx_utils.handover_kernels()``):
  every record CUPTI holds for us is delivered to us first, ours steps back, and we never take
  CUPTI from under Kineto;
- when that profiler exits, CUPTI is taken back (``roctx_utils.reclaim_kernels()``): what the GPU
  does after it is ours again. What ran while Kineto held CUPTI is in Kineto's trace; the library
  counts the launches it missed and says so once.

Annotations need no hook: ``torch.cuda.nvtx`` already reaches the same library through the NVTX
injection, and ``roctx_utils.annotate`` works beside it.
"""

import roctx_utils as _pkg

from . import _lib

_MARK = _lib.MARK


def _uses_cuda(prof):
    try:
        return any("CUDA" in str(a) for a in (getattr(prof, "kineto_activities", None) or ()))
    except Exception:
        return True  # handing over when unsure only costs a flush


def install():
    """Wraps torch's profiler; returns True when it now shares CUPTI with us cleanly (also when
    an earlier call did), False when it cannot (no torch, an unknown torch, no native library:
    each said once on stderr). Never raises."""
    def load():
        import torch.autograd.profiler as ap
        return ap

    cls = _lib.hook_target("roctx_utils.torch.install(): torch", load, "profile", ("_prepare_trace", "__exit__"))
    if not isinstance(cls, type):
        return cls

    base_prepare = cls._prepare_trace
    base_exit = cls.__exit__

    def _prepare_trace(self, *args, **kwargs):
        if _uses_cuda(self):
            _pkg.handover_kernels()
            try:
                self._roctx_utils_took_cupti = True
            except Exception:
                pass
        return base_prepare(self, *args, **kwargs)

    def __exit__(self, exc_type, exc_value, traceback):
        try:
            return base_exit(self, exc_type, exc_value, traceback)
        finally:
            state = getattr(self, "__dict__", None)
            if state and state.pop("_roctx_utils_took_cupti", False):
                _pkg.reclaim_kernels()

    cls._prepare_trace = _prepare_trace
    cls.__exit__ = __exit__
    setattr(cls, _MARK, True)
    return True
