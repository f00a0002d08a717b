"""``jax.profiler``'s own annotations as ROCTX ranges, with stock JAX wheels (no rebuild).

``install()`` makes ``jax.profiler.TraceAnnotation``, ``StepTraceAnnotation`` and
``annotate_function`` push a ROCTX range too, beside their TraceMe (kept as it was). The range
opens when the annotation is created (as TraceMe starts there) and closes at ``__exit__``, or
when the object is garbage collected if it was never used with ``with``; never twice. Labels:

- ``TraceAnnotation("name", k=v)``: TraceMe's own name, ``name#k=v#`` (``name`` with no kwargs);
- ``StepTraceAnnotation("train", step_num=3)``: ``train 3``, as XProf labels that step.

It also wraps ``jax.profiler.start_trace`` / ``stop_trace`` (and so ``jax.profiler.trace``): CUPTI
is handed over to XLA's profiler with every record of ours delivered first, and we take it back
when XLA's profiler is done, so nothing we had is lost and XLA's trace is never disturbed.

This mirrors the RFC's TraceMeWrapper change for XLA forks (``integrations/xla/``).
"""

import functools
import threading

import roctx_utils as _pkg

from . import _fast, _lib, _stats, _wrong_thread

_get_ident = threading.get_ident

_MARK = _lib.MARK


def _encode_value(value):
    # TraceMeWrapper::EncodePyObject: bools as 1/0, everything else str().
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


_PLAIN = {}  # name -> label, for annotations without kwargs (the common case), bounded


def label(name, kwargs):
    """The ROCTX label of a jax.profiler annotation (bytes)."""
    if not kwargs:
        cached = _PLAIN.get(name) if isinstance(name, str) else None
        if cached is not None:
            return cached
    try:
        text = name if isinstance(name, str) else str(name)
        if "step_num" in kwargs:
            # XProf's step label: the step event's name, a space, the step number
            # (EventNode::GetGroupName).
            text = "%s %s" % (text, _encode_value(kwargs["step_num"]))
        elif kwargs:
            text += "#" + ",".join("%s=%s" % (k, _encode_value(v)) for k, v in kwargs.items()) + "#"
        out = text.replace("\0", "\\0").encode("utf-8", "replace")
        if not kwargs and isinstance(name, str) and len(_PLAIN) < 4096:
            _PLAIN[name] = out
        return out
    except Exception:
        return b"<unprintable annotation name>"


def _stop(self):
    """Pops the annotation's range once, on the thread that pushed it."""
    state = getattr(self, "__dict__", None)
    tid = state.pop("_roctx_utils_tid", None) if state else None
    if tid is None:
        return
    if tid != _get_ident():
        _wrong_thread()
        return
    try:
        _lib.get().range_pop()
    except Exception:
        _stats["errors"] += 1


def install():
    """Hooks jax.profiler's annotations; returns True when they now push ROCTX ranges (also when
    an earlier call did), False when they cannot (no jax, an unknown jax, no native library:
    each said once on stderr). Never raises."""
    def load():
        import jax._src.profiler as sp
        return sp

    cls = _lib.hook_target("roctx_utils.jax.install(): jax", load, "TraceAnnotation", ("__init__", "__exit__"))
    if not isinstance(cls, type):
        return cls
    import jax._src.profiler as sp
    import jax.profiler as jp

    base_init = cls.__init__
    base_exit = cls.__exit__
    base_del = cls.__dict__.get("__del__")
    lib = _lib.get()

    if _fast is not None:
        # The compiled path (issue 44): __init__, __exit__ and __del__ are C methods of the class
        # (_fast.c), with the same behaviour as the Python ones below and no Python frame.
        try:
            cls.__init__, cls.__exit__, cls.__del__ = _fast.hook_trace_annotation(
                cls, base_init, base_exit, base_del, _PLAIN, label)
            setattr(cls, _MARK, True)
            _wrap_start_trace(sp, jp)
            return True
        except Exception as e:  # the Python hooks below instead
            _lib.warn("roctx_utils.jax.install(): the compiled hooks failed (%r); using the "
                      "Python ones" % (e,))

    def __init__(self, name, **kwargs):
        base_init(self, name, **kwargs)
        try:
            lib.range_push(label(name, kwargs))
            self._roctx_utils_tid = _get_ident()  # pushed: the first stop pops, on this thread
        except Exception:
            _stats["errors"] += 1

    def __exit__(self, exc_type, exc_value, traceback):
        try:
            return base_exit(self, exc_type, exc_value, traceback)
        finally:
            _stop(self)

    def __del__(self):
        try:
            _stop(self)
        except Exception:
            pass
        if base_del is not None:
            base_del(self)

    for f, base in ((__init__, base_init), (__exit__, base_exit)):
        try:
            functools.update_wrapper(f, base)
        except Exception:
            pass
    cls.__init__ = __init__
    cls.__exit__ = __exit__
    cls.__del__ = __del__
    setattr(cls, _MARK, True)

    _wrap_start_trace(sp, jp)
    return True


def _wrap_start_trace(sp, jp):
    start = getattr(sp, "start_trace", None)
    stop = getattr(sp, "stop_trace", None)
    if start is None or stop is None or getattr(start, _MARK, False):
        return

    @functools.wraps(start)
    def start_trace(*args, **kwargs):
        # XLA's profiler takes CUPTI's callbacks next (on ROCm it has its own SDK context):
        # hand CUPTI over with nothing of ours left in it, and keep off until stop_trace.
        _pkg.handover_kernels()
        try:
            return start(*args, **kwargs)
        except BaseException:
            _pkg.reclaim_kernels()
            raise

    @functools.wraps(stop)
    def stop_trace(*args, **kwargs):
        try:
            return stop(*args, **kwargs)
        finally:
            _pkg.reclaim_kernels()

    setattr(start_trace, _MARK, True)
    setattr(stop_trace, _MARK, True)
    # jax.profiler.trace() looks both up here.
    sp.start_trace, sp.stop_trace = start_trace, stop_trace
    if getattr(jp, "start_trace", None) is start:
        jp.start_trace = start_trace
    if getattr(jp, "stop_trace", None) is stop:
        jp.stop_trace = stop_trace
