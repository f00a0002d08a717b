"""Profiler annotations from Python for roctx_utils.

    import roctx_utils

    with roctx_utils.annotate("load_batch"):      # a ROCTX range on this thread
        ...

    @roctx_utils.annotate("train_step")            # or as a decorator (functions, generators,
    def train_step(batch): ...                     # coroutines and async generators)

    roctx_utils.mark("checkpoint")                 # an instant

    with roctx_utils.capture():                    # a capture window: under
        train(steps=10)                            # `roctx record --capture-range=profiler-api`
                                                   # only this is recorded (also start()/stop())

    import roctx_utils.jax
    roctx_utils.jax.install()   # jax.profiler.TraceAnnotation, StepTraceAnnotation and
                                # annotate_function also become ROCTX ranges

    import roctx_utils.torch
    roctx_utils.torch.install() # torch.profiler and our GPU tracing share CUPTI cleanly

With ``ROCTX_UTILS_PYTHON_HOOKS=1`` the installed package does both ``install()`` calls by
itself when the script imports jax or torch: no code change.

Ranges go wherever the native library sends them: roctx (rocprofv3, our own rocprofiler-sdk
tool), its in-process capture, the ``ROCTX_UTILS_XSPACE_OUT`` log directory for XProf and
TensorBoard, with the GPU kernels each range launched under it. The library is found as
``_lib`` documents; without one every call here is a no-op (one warning, never an exception).
"""

import ctypes
import functools
import inspect
import threading

from . import _lib

__all__ = ["annotate", "implementation", "mark", "start", "stop", "capture", "flush_kernels", "handover_kernels", "reclaim_kernels", "library", "stats"]
__version__ = "0.1.0"

# Counted instead of raised: pops we refused because the range was opened on another thread.
_stats = {"wrong_thread_stops": 0, "errors": 0}
_warned = set()


def _warn_once(key, message):
    if key not in _warned:
        _warned.add(key)
        _lib.warn(message)


def _wrong_thread():
    _stats["wrong_thread_stops"] += 1
    _warn_once("thread", "an annotation was stopped on another thread than the one that "
                         "started it; it was not popped (ranges are per thread)")


def _encode(name):
    try:
        text = name if isinstance(name, str) else str(name)
        # The C side reads up to the first NUL; show one rather than cutting the label there.
        return text.replace("\0", "\\0").encode("utf-8", "replace")
    except Exception:
        _stats["errors"] += 1
        return b"<unprintable annotation name>"


def library():
    """Where the native library was found (a string), or None when annotations are off."""
    lib = _lib.get()
    return lib.origin if lib else None


def stats():
    """What the package counted instead of raising (a dict copy)."""
    return dict(_stats)


def mark(name):
    """An instant event (roctxMarkA) named ``name``."""
    lib = _lib.get()
    if lib is None:
        return
    try:
        lib.mark(_encode(name))
    except Exception:
        _stats["errors"] += 1


def flush_kernels():
    """Delivers every GPU record the vendor API holds for us now (CUPTI's or rocprofiler-sdk's
    buffers) into our trace."""
    lib = _lib.get()
    if lib is None:
        return
    try:
        # struct roctx_utils_kernel_stats: struct_size first; 112 bytes in this version (an
        # older library writes its shorter prefix).
        buf = (ctypes.c_uint64 * 14)()
        buf[0] = ctypes.sizeof(buf)
        lib.kernel_stats_get(ctypes.addressof(buf))
    except Exception:
        _stats["errors"] += 1


def handover_kernels():
    """Call right before another profiler in this process takes CUPTI (one per process): every
    record CUPTI holds for us is delivered now, ours steps back, and we leave CUPTI alone until
    ``reclaim_kernels()``. ``roctx_utils.jax`` and ``roctx_utils.torch`` call both around
    ``jax.profiler`` and ``torch.profiler``. Returns True when CUPTI was ours to hand over
    (False on ROCm, where every tool has its own rocprofiler-sdk context)."""
    return _status_call("kernels_handover")


def reclaim_kernels():
    """Call when the profiler ``handover_kernels()`` made way for has stopped: CUPTI is ours
    again as soon as nobody traces (now, or at that profiler's finalize). Returns True when GPU
    work is traced by us again now."""
    return _status_call("kernels_reclaim")


def start():
    """Opens a capture window: with ``roctx record --capture-range=profiler-api`` (or
    ``ROCTX_UTILS_CAPTURE_RANGE=profiler-api``) nothing is recorded, and no kernel traced, outside
    the windows ``start()`` and ``stop()`` bound, and each window is written as a run of its own
    (as ``cudaProfilerStart`` does under ``nsys --capture-range=cudaProfilerApi``). Returns True
    when a window opened (False: one is open, the profiler API's windows are not configured, or
    no more are allowed)."""
    return _status_call("capture_start")


def stop():
    """Closes the open capture window (ranges still open end there, with a mark). Returns True
    when one closed."""
    return _status_call("capture_stop")


class capture:
    """``start()`` on entry and ``stop()`` on exit, as a context manager or a decorator::

        with roctx_utils.capture():
            for step in range(100, 110):
                train_step(step)
    """

    __slots__ = ("opened",)

    def __init__(self):
        self.opened = False

    def __enter__(self):
        self.opened = start()
        return self

    def __exit__(self, *exc):
        if self.opened:
            stop()
            self.opened = False
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with capture():
                return fn(*args, **kwargs)
        return wrapped


def _status_call(name):
    """Calls the library's ``name`` (a C call returning ROCTX_UTILS_OK or a status): whether it
    said OK. No library or a failing call: False (the failure counted)."""
    lib = _lib.get()
    if lib is None:
        return False
    try:
        return getattr(lib, name)() == 0
    except Exception:
        _stats["errors"] += 1
        return False


# The library's push and pop, bound once (issue 44): the pure path's enter and exit call these
# module globals directly instead of asking _lib for the library each time. None until the
# first annotation binds them; _NO_LIB when there is no library (annotations are no-ops).
_push = _pop = None


def _NO_LIB(*_args):
    return None


def _bind():
    """Binds ``_push`` and ``_pop`` from the process's library (once)."""
    global _push, _pop
    lib = _lib.get()
    if lib is None:
        _pop = _NO_LIB
        _push = _NO_LIB
    else:
        _pop = lib.range_pop
        _push = lib.range_push
    return _push


def _fast_binding():
    """For ``_fast``: the addresses of the library's push and pop, or None without a library."""
    lib = _lib.get()
    if lib is None:
        return None
    address = lambda fn: ctypes.cast(fn, ctypes.c_void_p).value or 0
    return address(lib.range_push), address(lib.range_pop)


def _load_fast():
    """The compiled fast path (``_fast.c``), or None: not built (a source install without a
    compiler), not loadable (a free-threaded or non-CPython interpreter), or turned off with
    ``ROCTX_UTILS_PYTHON_PURE=1``."""
    if _lib.flag("ROCTX_UTILS_PYTHON_PURE"):
        return None
    try:
        from . import _fast as fast
    except ImportError:
        return None
    fast.setup(_fast_binding, _wrong_thread)
    return fast


_fast = _load_fast()


def implementation():
    """Which path annotations take: ``"compiled"`` (the C extension) or ``"python"``."""
    return "compiled" if _fast is not None else "python"


class _Range:
    """One pushed range: popped at most once, and only on the thread that pushed it (roctx
    ranges are a per-thread stack; a pop from another thread would close that thread's range)."""

    __slots__ = ("_lib", "_thread", "_open")

    def __init__(self, label):
        self._lib = None
        self._open = False
        if _fast is not None:
            self._thread = _fast.push(label)  # this thread's ident
            self._open = True
            return
        self._thread = threading.get_ident()
        self._lib = _lib.get()
        if self._lib is not None:
            try:
                self._lib.range_push(label)
                self._open = True
            except Exception:
                _stats["errors"] += 1

    def stop(self):
        if not self._open:
            return
        if threading.get_ident() != self._thread:
            # Garbage collection on another thread: a pop here would corrupt that thread's
            # stack, so the range stays open until its thread ends (counted, said once).
            self._open = False
            _wrong_thread()
            return
        self._open = False
        if _fast is not None:
            _fast.pop(self._thread)
            return
        try:
            self._lib.range_pop()
        except Exception:
            _stats["errors"] += 1


def _stepped(label, step):
    """Runs ``step()`` (one resumption of a generator or coroutine) inside a range."""
    r = _Range(label)
    try:
        return step()
    finally:
        r.stop()


class _SteppedAwaitable:
    """Drives an awaitable step by step, each step inside a range: a suspended coroutine must
    not hold a range open while its thread runs other tasks."""

    __slots__ = ("_label", "_awaitable")

    def __init__(self, label, awaitable):
        self._label = label
        self._awaitable = awaitable

    def __await__(self):
        it = self._awaitable.__await__()
        send, value, error = True, None, None
        while True:
            try:
                if error is not None:
                    err, error = error, None
                    yielded = _stepped(self._label, lambda: it.throw(err))
                else:
                    v = value
                    yielded = _stepped(self._label, lambda: it.send(v))
            except StopIteration as stop:
                return stop.value
            try:
                value = yield yielded
            except GeneratorExit:
                it.close()
                raise
            except BaseException as e:  # thrown into us: pass it on inside a range
                error = e
                value = None


class _PureAnnotation:
    """The pure-Python enter and exit of ``annotate`` (the fallback of ``_fast.Range``)."""

    __slots__ = ("_label", "_ranges")

    def __enter__(self):
        try:
            ranges = self._ranges
        except AttributeError:  # made by __new__ alone
            ranges = self._ranges = threading.local()
        # The hot path (issue 44): one thread-local lookup, the bound push, a list append; no
        # call into _lib, no attribute chain.
        try:
            stack = ranges.stack
        except AttributeError:
            stack = ranges.stack = []
        push = _push or _bind()
        if push is _NO_LIB:
            stack.append(False)
            return self
        try:
            push(self._label or b"annotate")
        except Exception:
            _stats["errors"] += 1
            stack.append(False)
            return self
        stack.append(True)
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            pushed = self._ranges.stack.pop()
        except (AttributeError, IndexError):
            # Exited on a thread that never entered it (a suspended frame resumed elsewhere):
            # popping here would close this thread's innermost range.
            _wrong_thread()
            return False
        if pushed:
            try:
                _pop()
            except Exception:
                _stats["errors"] += 1
        return False


_Annotation = _fast.Range if _fast is not None else _PureAnnotation


class annotate(_Annotation):
    """A ROCTX range named ``name`` on the calling thread.

    As a context manager it covers the block; an exception inside still pops it, and the
    exception propagates unchanged. As a decorator (``@annotate("n")``, ``@annotate()`` or
    ``@annotate`` use the function's qualified name) it covers each call; for a generator,
    coroutine or async generator it covers each resumption (a suspended one holds no range
    open, so the thread's other work never nests inside it). Never raises into your code.
    """

    __slots__ = ("_name",)

    def __new__(cls, name=None):
        if callable(name) and not isinstance(name, str):  # bare @annotate
            return cls(None)(name)
        return super().__new__(cls)

    def __init__(self, name=None):
        self._name = name
        self._label = None if name is None else _encode(name)
        if _fast is None:
            # Per thread: one object may be entered on several threads, and nested on each. An
            # entry is whether that `with` pushed (no library: nothing to pop).
            self._ranges = threading.local()

    def __call__(self, func):
        label = self._label
        if label is None:
            label = _encode(getattr(func, "__qualname__", None) or getattr(func, "__name__", "function"))

        # Each wrapper is of the kind its function is (an async generator function, a coroutine
        # function, a generator function), so that inspect.isasyncgenfunction() and friends, and
        # the frameworks that decide how to call a function from them (FastAPI, pytest-asyncio),
        # see the same function; functools.wraps keeps its name, docs and inspect.signature().
        if inspect.isasyncgenfunction(func):
            @functools.wraps(func)
            async def agen_wrapper(*args, **kwargs):
                agen = func(*args, **kwargs)
                value, error = None, None
                while True:
                    try:
                        if error is not None:
                            err, error = error, None
                            yielded = await _SteppedAwaitable(label, agen.athrow(err))
                        else:
                            yielded = await _SteppedAwaitable(label, agen.asend(value))
                    except StopAsyncIteration:
                        return
                    try:
                        value = yield yielded
                    except GeneratorExit:
                        await _SteppedAwaitable(label, agen.aclose())
                        raise
                    except BaseException as e:  # thrown into us: pass it on inside a range
                        error, value = e, None
            return agen_wrapper

        if inspect.iscoroutinefunction(func):
            @functools.wraps(func)
            async def coro_wrapper(*args, **kwargs):
                return await _SteppedAwaitable(label, func(*args, **kwargs))
            return coro_wrapper

        if inspect.isgeneratorfunction(func):
            @functools.wraps(func)
            def gen_wrapper(*args, **kwargs):
                gen = func(*args, **kwargs)
                value, error = None, None
                while True:
                    try:
                        if error is not None:
                            err, error = error, None
                            yielded = _stepped(label, lambda: gen.throw(err))
                        else:
                            v = value
                            yielded = _stepped(label, lambda: gen.send(v))
                    except StopIteration as stop:
                        return stop.value
                    try:
                        value = yield yielded
                    except GeneratorExit:
                        _stepped(label, gen.close)
                        raise
                    except BaseException as e:
                        error, value = e, None
            return gen_wrapper

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            r = _Range(label)
            try:
                return func(*args, **kwargs)
            finally:
                r.stop()
        return wrapper

