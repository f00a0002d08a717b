"""Unit tests of the roctx_utils Python package against the real native library.

Run: ROCTX_UTILS_TEST_LIBRARY=<path of libroctx_utils_nvtx.so> python test_roctx_utils.py
(tests/test.sh does, in the xprof virtualenv with jax[cpu]). Ends with `N passed, M failed`.

What a range looks like is read back through the library's own C API (an in-process session
and its snapshot), so each test sees exactly which ranges were recorded, nested how, on which
thread; scripts/test.sh checks the same through XProf's reader with annotated_script.py.
"""

import asyncio
import ctypes
import importlib.util
import inspect
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
import unittest

LIBRARY = os.environ.get("ROCTX_UTILS_TEST_LIBRARY", "")
os.environ["ROCTX_UTILS_LIBRARY"] = LIBRARY
os.environ.pop("ROCTX_UTILS_XSPACE_OUT", None)
os.environ.pop("NVTX_INJECTION64_PATH", None)

import roctx_utils  # noqa: E402
import roctx_utils.jax as rjax  # noqa: E402
from roctx_utils import _lib  # noqa: E402


class SessionOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint64), ("mode", ctypes.c_uint32), ("reserved", ctypes.c_uint32),
                ("max_events_per_thread", ctypes.c_uint64), ("max_label_bytes_per_thread", ctypes.c_uint64)]


class Event(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint64), ("kind", ctypes.c_uint32), ("depth", ctypes.c_uint32),
                ("tid", ctypes.c_uint64), ("end_tid", ctypes.c_uint64), ("start_ns", ctypes.c_uint64),
                ("end_ns", ctypes.c_uint64), ("label", ctypes.c_void_p), ("label_len", ctypes.c_size_t)]


assert ctypes.sizeof(SessionOptions) == 32 and ctypes.sizeof(Event) == 64

RANGE, MARK = 0, 1
IN_PROCESS = 3


class Session:
    """An in-process capture session of the library the package bound."""

    def __init__(self):
        self.lib = ctypes.CDLL(LIBRARY)
        self.lib.roctx_utils_session_stop.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        self.lib.roctx_utils_snapshot_event_count.argtypes = [ctypes.c_void_p]
        self.lib.roctx_utils_snapshot_event_count.restype = ctypes.c_size_t
        self.lib.roctx_utils_snapshot_event.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(Event)]
        self.lib.roctx_utils_snapshot_free.argtypes = [ctypes.c_void_p]

    def __enter__(self):
        options = SessionOptions(struct_size=32, mode=IN_PROCESS)
        assert self.lib.roctx_utils_session_start(ctypes.byref(options)) == 0
        self.events = []
        return self

    def __exit__(self, *exc):
        snapshot = ctypes.c_void_p()
        assert self.lib.roctx_utils_session_stop(ctypes.byref(snapshot)) == 0
        for i in range(self.lib.roctx_utils_snapshot_event_count(snapshot)):
            e = Event(struct_size=64)
            assert self.lib.roctx_utils_snapshot_event(snapshot, i, ctypes.byref(e)) == 0
            label = ctypes.string_at(e.label, e.label_len).decode("utf-8", "replace")
            self.events.append((e.kind, e.depth, e.tid, e.start_ns, e.end_ns, label))
        self.lib.roctx_utils_snapshot_free(snapshot)
        return False

    def ranges(self):
        """(label, depth) in start order, ranges only."""
        return [(e[5], e[1]) for e in sorted(self.events, key=lambda e: e[3]) if e[0] == RANGE]


def run_python(code, env_extra=None, env_drop=()):
    env = dict(os.environ)
    for k in env_drop:
        env.pop(k, None)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=120)


class Annotate(unittest.TestCase):
    def test_context_manager_nests_and_pops(self):
        with Session() as s:
            with roctx_utils.annotate("outer"):
                with roctx_utils.annotate("inner"):
                    pass
            roctx_utils.mark("m")
        self.assertEqual(s.ranges(), [("outer", 0), ("inner", 1)])
        self.assertEqual([e[5] for e in s.events if e[0] == MARK], ["m"])

    def test_an_exception_still_pops_and_propagates_unchanged(self):
        error = ValueError("mine")
        with Session() as s:
            with self.assertRaises(ValueError) as caught:
                with roctx_utils.annotate("raises"):
                    raise error
            with roctx_utils.annotate("after"):
                pass
        self.assertIs(caught.exception, error)
        self.assertEqual(s.ranges(), [("raises", 0), ("after", 0)])

    def test_decorator_keeps_the_function_and_its_name(self):
        @roctx_utils.annotate
        def plain(a, b=2):
            """doc"""
            return a + b

        @roctx_utils.annotate("named")
        def other():
            raise KeyError("k")

        with Session() as s:
            self.assertEqual(plain(1), 3)
            self.assertRaises(KeyError, other)
        self.assertEqual(plain.__name__, "plain")
        self.assertEqual(plain.__doc__, "doc")
        labels = [l for l, _ in s.ranges()]
        self.assertEqual(labels, [plain.__qualname__, "named"])

    def test_one_object_reused_and_nested_on_two_threads(self):
        a = roctx_utils.annotate("shared")
        seen = []

        def body():
            with a:
                with a:
                    seen.append(threading.get_ident())

        with Session() as s:
            threads = [threading.Thread(target=body) for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        tids = {e[2] for e in s.events}
        self.assertEqual(len(tids), 2)
        for tid in tids:
            mine = sorted((e for e in s.events if e[2] == tid), key=lambda e: e[3])
            self.assertEqual([(e[5], e[1]) for e in mine], [("shared", 0), ("shared", 1)])

    def test_generator_each_resumption_is_a_range_and_protocol_is_kept(self):
        @roctx_utils.annotate("gen")
        def echo():
            got = yield 1
            try:
                yield got * 10
            except KeyError:
                yield "caught"
            return "finished"

        with Session() as s:
            g = echo()
            self.assertEqual(next(g), 1)
            with roctx_utils.annotate("between"):  # the suspended generator holds no range
                pass
            self.assertEqual(g.send(4), 40)
            self.assertEqual(g.throw(KeyError("x")), "caught")
            with self.assertRaises(StopIteration) as stop:
                next(g)
            self.assertEqual(stop.exception.value, "finished")
        self.assertEqual(s.ranges(), [("gen", 0), ("between", 0), ("gen", 0), ("gen", 0), ("gen", 0)])

    def test_closing_a_generator_early_pops(self):
        @roctx_utils.annotate("gen")
        def forever():
            while True:
                yield 0

        with Session() as s:
            g = forever()
            next(g)
            g.close()
            with roctx_utils.annotate("after"):
                pass
        self.assertEqual([d for l, d in s.ranges() if l == "after"], [0])

    def test_coroutines_interleaved_on_one_thread_never_nest(self):
        @roctx_utils.annotate("task")
        async def task(n):
            for _ in range(n):
                await asyncio.sleep(0)
            return n

        async def main():
            return await asyncio.gather(task(2), task(3))

        with Session() as s:
            self.assertEqual(asyncio.run(main()), [2, 3])
        ranges = s.ranges()
        self.assertEqual({l for l, _ in ranges}, {"task"})
        self.assertEqual({d for _, d in ranges}, {0})  # never one inside the other
        self.assertEqual(len(ranges), 3 + 4)  # a range per resumption

    def test_async_generator(self):
        @roctx_utils.annotate("agen")
        async def numbers():
            for i in range(2):
                await asyncio.sleep(0)
                yield i

        async def main():
            return [i async for i in numbers()]

        with Session() as s:
            self.assertEqual(asyncio.run(main()), [0, 1])
        self.assertTrue(s.ranges())
        self.assertEqual({d for _, d in s.ranges()}, {0})

    def test_a_decorated_function_keeps_its_kind_name_and_signature(self):
        # Issue 40: FastAPI and pytest-asyncio decide how to call a function from these checks.
        async def agen(a, b=2):
            """an async generator"""
            yield a + b

        async def coro(x, *, y=1):
            """a coroutine"""
            return x + y

        def gen(n):
            """a generator"""
            yield from range(n)

        def plain(p, q=None):
            """a function"""
            return p

        kinds = (inspect.isasyncgenfunction, inspect.iscoroutinefunction, inspect.isgeneratorfunction)
        for func in (agen, coro, gen, plain):
            wrapped = roctx_utils.annotate(func)
            for kind in kinds:
                self.assertEqual(kind(wrapped), kind(func), "%s: %s" % (func.__name__, kind.__name__))
            self.assertEqual(inspect.signature(wrapped), inspect.signature(func))
            self.assertEqual((wrapped.__name__, wrapped.__doc__, wrapped.__qualname__),
                             (func.__name__, func.__doc__, func.__qualname__))
            self.assertIs(wrapped.__wrapped__, func)

    def test_async_generator_protocol_asend_athrow_aclose_each_in_a_range(self):
        closed = []

        @roctx_utils.annotate("agen")
        async def echo():
            try:
                got = yield 1
                try:
                    yield got * 10
                except KeyError:
                    yield "caught"
                yield "more"
            finally:
                closed.append(True)

        async def main():
            g = echo()
            out = [await g.__anext__(), await g.asend(4), await g.athrow(KeyError("x"))]
            with roctx_utils.annotate("between"):  # the suspended generator holds no range
                pass
            await g.aclose()
            return out

        with Session() as s:
            self.assertEqual(asyncio.run(main()), [1, 40, "caught"])
        self.assertEqual(closed, [True])
        self.assertEqual({d for _, d in s.ranges()}, {0})
        self.assertEqual([l for l, _ in s.ranges()], ["agen", "agen", "agen", "between", "agen"])

    def test_a_stop_on_another_thread_is_counted_not_popped(self):
        before = roctx_utils.stats()["wrong_thread_stops"]
        with Session() as s:
            r = roctx_utils._Range(b"opened_here")
            t = threading.Thread(target=r.stop)
            t.start()
            t.join()
            r.stop()  # already handled: nothing more
        self.assertEqual(roctx_utils.stats()["wrong_thread_stops"], before + 1)
        # never popped on its thread: still open when the session stopped, so not recorded as
        # closed (the session counts it open); nothing else was popped in its place
        self.assertNotIn(("opened_here", 0), s.ranges())
        roctx_utils._lib.get().range_pop()  # rebalance this thread for the next tests

    def test_hostile_names_never_raise(self):
        class Bad:
            def __str__(self):
                raise RuntimeError("no")

        with Session() as s:
            with roctx_utils.annotate(Bad()):
                pass
            with roctx_utils.annotate("a\0b"):
                pass
            with roctx_utils.annotate("x" * (1 << 20)):
                pass
            with roctx_utils.annotate(42):
                pass
            roctx_utils.mark(Bad())
        labels = [l for l, _ in s.ranges()]
        self.assertEqual(labels[0], "<unprintable annotation name>")
        self.assertEqual(labels[1], "a\\0b")
        self.assertLessEqual(len(labels[2]), 1 << 20)
        self.assertEqual(labels[3], "42")


class Paths(unittest.TestCase):
    # Issue 44: annotate's enter and exit are C (roctx_utils._fast) where the package was built
    # with it, else pure Python; tests/test.sh runs this file once each way
    # (ROCTX_UTILS_TEST_PATH says which this run must take) and every test above runs on both.
    def test_the_expected_path_is_taken(self):
        want = os.environ.get("ROCTX_UTILS_TEST_PATH")
        if not want:
            self.skipTest("ROCTX_UTILS_TEST_PATH not set")
        self.assertEqual(roctx_utils.implementation(), want)
        self.assertEqual(roctx_utils._fast is not None, want == "compiled")

    def test_pure_is_chosen_by_the_variable_and_a_bad_value_warns(self):
        r = run_python("import roctx_utils; print(roctx_utils.implementation())", {"ROCTX_UTILS_PYTHON_PURE": "1"})
        self.assertEqual(r.stdout.strip(), "python", r.stderr)
        r = run_python("import roctx_utils; print(roctx_utils.implementation())", {"ROCTX_UTILS_PYTHON_PURE": "maybe"})
        installed = importlib.util.find_spec("roctx_utils._fast") is not None
        self.assertEqual(r.stdout.strip(), "compiled" if installed else "python", r.stderr)
        self.assertIn("ROCTX_UTILS_PYTHON_PURE='maybe' is not 1 or 0", r.stderr)

    def test_nesting_deeper_than_the_checked_stack_stays_balanced(self):
        # The C path names 64 open annotations per thread; deeper ones are counted only (the
        # library records 256 levels).
        a = roctx_utils.annotate("deep")
        depth = 100

        def nest(n):
            if n:
                with a:
                    nest(n - 1)

        with Session() as s:
            nest(depth)
            with roctx_utils.annotate("after"):
                pass
        ranges = s.ranges()
        self.assertEqual(len(ranges), depth + 1)
        self.assertEqual(sorted(d for l, d in ranges if l == "deep"), list(range(depth)))
        self.assertEqual(ranges[-1], ("after", 0))

    def test_an_exit_on_a_thread_that_never_entered_is_counted_not_popped(self):
        before = roctx_utils.stats()["wrong_thread_stops"]
        a = roctx_utils.annotate("entered_here")
        with Session() as s:
            with roctx_utils.annotate("outer_elsewhere"):
                a.__enter__()
                t = threading.Thread(target=lambda: self.assertFalse(a.__exit__(None, None, None)))
                t.start()
                t.join()
                a.__exit__(None, None, None)  # its own thread: pops it
        self.assertEqual(roctx_utils.stats()["wrong_thread_stops"], before + 1)
        self.assertEqual(s.ranges(), [("outer_elsewhere", 0), ("entered_here", 1)])

    def test_a_with_block_resumed_after_another_opened_still_pops(self):
        # A generator suspended inside `with a`, resumed (and finished) while `b` is open on the
        # same thread: a's exit is not the innermost, and it pops (as the pure path does).
        a, b = roctx_utils.annotate("a"), roctx_utils.annotate("b")
        before = roctx_utils.stats()["wrong_thread_stops"]

        def gen():
            with a:
                yield

        with Session() as s:
            g = gen()
            next(g)
            b.__enter__()
            self.assertRaises(StopIteration, next, g)
            b.__exit__(None, None, None)
            with roctx_utils.annotate("after"):
                pass
        self.assertEqual(roctx_utils.stats()["wrong_thread_stops"], before)
        self.assertEqual([l for l, _ in s.ranges()], ["a", "b", "after"])
        self.assertEqual(s.ranges()[-1], ("after", 0))

    def test_enter_returns_the_object_and_exit_never_swallows(self):
        a = roctx_utils.annotate("x")
        with Session():
            with a as entered:
                self.assertIs(entered, a)
            self.assertIs(a.__exit__(None, None, None), False)  # an unmatched exit: counted
        self.assertEqual(type(a).__name__, "annotate")
        self.assertIsInstance(a, roctx_utils.annotate)


class CaptureWindows(unittest.TestCase):
    # Without ROCTX_UTILS_CAPTURE_RANGE=profiler-api (and an output) there is no window to open:
    # start() and stop() say so, the context manager and decorator still run their body, and an
    # explicit session records as before. The windows themselves: tests/record/check_record.sh.
    def test_no_window_without_the_profiler_api_configured(self):
        self.assertFalse(roctx_utils.start())
        self.assertFalse(roctx_utils.stop())
        ran = []

        @roctx_utils.capture()
        def body():
            ran.append(1)
            return 5

        with Session() as s:
            with roctx_utils.capture() as c:
                self.assertFalse(c.opened)
                with roctx_utils.annotate("inside"):
                    pass
            self.assertEqual(body(), 5)
        self.assertEqual(ran, [1])
        self.assertEqual(s.ranges(), [("inside", 0)])


class Bootstrap(unittest.TestCase):
    """`roctx record`'s start-up hook (python/bootstrap/sitecustomize.py) runs the environment's
    own sitecustomize after it, found as Python finds one: a module or a package (issue 40)."""

    BOOTSTRAP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bootstrap")

    def chained(self, make):
        d = tempfile.mkdtemp()
        make(d)
        return run_python("import sys; print('chained' if getattr(sys, 'site_marker', None) == 'theirs' else 'not run')",
                          {"PYTHONPATH": os.pathsep.join([self.BOOTSTRAP, d])}, env_drop=("ROCTX_UTILS_PYTHON_HOOKS",))

    def test_a_sitecustomize_module_runs_after_ours(self):
        def make(d):
            with open(os.path.join(d, "sitecustomize.py"), "w") as f:
                f.write("import sys\nsys.site_marker = 'theirs'\n")
        r = self.chained(make)
        self.assertEqual(r.stdout.strip(), "chained", r.stderr)

    def test_a_sitecustomize_package_runs_after_ours(self):
        def make(d):
            os.mkdir(os.path.join(d, "sitecustomize"))
            with open(os.path.join(d, "sitecustomize", "__init__.py"), "w") as f:
                f.write("import sys\nsys.site_marker = 'theirs'\n")
        r = self.chained(make)
        self.assertEqual(r.stdout.strip(), "chained", r.stderr)
        self.assertEqual(r.stderr, "")


class JaxLabels(unittest.TestCase):
    def test_labels(self):
        self.assertEqual(rjax.label("x", {}), b"x")
        self.assertEqual(rjax.label("train", {"_r": 1, "step_num": 3}), b"train 3")
        self.assertEqual(rjax.label("t", {"batch": 4, "flag": True, "off": False}), b"t#batch=4,flag=1,off=0#")


class JaxInstall(unittest.TestCase):
    def test_install_hooks_and_keeps_traceme(self):
        import jax
        self.assertTrue(rjax.install())
        self.assertTrue(rjax.install())  # harmless twice
        cls = jax.profiler.TraceAnnotation
        self.assertTrue(issubclass(jax.profiler.StepTraceAnnotation, cls))
        with Session() as s:
            with jax.profiler.TraceAnnotation("user", k=1) as t:
                self.assertIsInstance(t, cls)
            with jax.profiler.StepTraceAnnotation("train", step_num=7):
                jax.profiler.annotate_function(lambda: None, name="fn")()
            t = jax.profiler.TraceAnnotation("no_with")
            del t
            t2 = jax.profiler.TraceAnnotation("exit_then_gc")
            t2.__exit__(None, None, None)
            del t2
            with jax.profiler.TraceAnnotation("after"):
                pass
        self.assertEqual(s.ranges(), [("user#k=1#", 0), ("train 7", 0), ("fn", 1), ("no_with", 0),
                                      ("exit_then_gc", 0), ("after", 0)])

    def test_hooked_edges_errors_threads_and_keywords(self):
        self.hooked_edges()
        from roctx_utils import _fast
        if _fast is not None:
            # The compiled hooks again, calling TraceMe's methods with argument tuples (as on an
            # interpreter that exports no PyObject_Vectorcall).
            was = _fast._vectorcall(False)
            try:
                self.hooked_edges()
            finally:
                _fast._vectorcall(was)

    def hooked_edges(self):
        # What the compiled hooks (_fast.c) must do as the Python ones do: TraceMe's own errors
        # pass through with no range left open, an exception in the block propagates, a stop on
        # another thread is counted and not popped, keyword arguments label the range.
        import jax
        self.assertTrue(rjax.install())
        cls = jax.profiler.TraceAnnotation
        before = roctx_utils.stats()["wrong_thread_stops"]
        with Session() as s:
            with self.assertRaises(TypeError):
                cls(123)  # TraceMe takes a str
            with self.assertRaises(KeyError):
                with cls("raises"):
                    raise KeyError("k")
            t = cls("with_kwargs", k=2)
            other = threading.Thread(target=lambda: t.__exit__(None, None, None))
            other.start()
            other.join()
            t.__exit__(None, None, None)  # already stopped (on the wrong thread): nothing more
            with cls("after"):
                pass
        self.assertEqual(roctx_utils.stats()["wrong_thread_stops"], before + 1)
        # with_kwargs#k=2# stayed open on this thread (never popped, so not recorded as closed),
        # and "after" nests in it
        self.assertEqual(s.ranges(), [("raises", 0), ("after", 1)])
        roctx_utils._lib.get().range_pop()  # rebalance this thread for the next tests

    def test_the_compiled_hooks_table_finds_every_open_instance_after_any_removal(self):
        # The compiled hooks keep which instances have a range open in a table of their own
        # (_fast.c); each key is looked up after every removal, in a scrambled order.
        from roctx_utils import _fast
        if _fast is None:
            self.skipTest("the pure-Python path")
        for n in (1, 63, 200, 1000, 4096):
            self.assertTrue(_fast._table_check(n), n)

    def test_many_open_at_once_each_closes_once_by_exit_or_collection(self):
        # More annotations open at once than the compiled hooks' table starts with (64), closed
        # innermost first, every third by being collected without an exit; twice, so the second
        # round's objects take addresses the first round's had.
        import gc
        import jax
        self.assertTrue(rjax.install())
        cls = jax.profiler.TraceAnnotation
        want = []
        with Session() as s:
            for _ in range(2):
                open_ = [cls("n%d" % i) for i in range(200)]
                for i in reversed(range(200)):
                    t = open_.pop()
                    if i % 3:
                        t.__exit__(None, None, None)
                    del t  # the last reference: __del__ pops the never-exited ones
                want += [("n%d" % i, i) for i in range(200)]  # in the order they began
                gc.collect()
        self.assertEqual(s.ranges(), want)

    def test_start_and_stop_trace_hand_cupti_over_and_back(self):
        import tempfile
        import jax
        import jax._src.profiler as sp
        rjax.install()
        self.assertTrue(getattr(sp.start_trace, "__roctx_utils_hooked__", False))
        self.assertIs(jax.profiler.start_trace, sp.start_trace)
        self.assertIs(jax.profiler.stop_trace, sp.stop_trace)
        calls = []
        saved = roctx_utils.handover_kernels, roctx_utils.reclaim_kernels
        roctx_utils.handover_kernels = lambda: calls.append("handover")
        roctx_utils.reclaim_kernels = lambda: calls.append("reclaim")
        try:
            with tempfile.TemporaryDirectory() as d:
                with jax.profiler.trace(d):  # the real XLA profiler, CPU only here
                    calls.append("traced")
        finally:
            roctx_utils.handover_kernels, roctx_utils.reclaim_kernels = saved
        self.assertEqual(calls, ["handover", "traced", "reclaim"])


FAKE_TORCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_torch")


class TorchHook(unittest.TestCase):
    """roctx_utils.torch against a stand-in with torch 2.11's profiler shape (fake_torch/)."""

    def test_flush_before_kineto_takes_cupti_and_reclaim_after_it_stops(self):
        r = run_python("""
            import roctx_utils, roctx_utils.torch
            import torch.autograd.profiler as ap
            roctx_utils.handover_kernels = lambda: ap.log.append("handover")
            roctx_utils.reclaim_kernels = lambda: ap.log.append("reclaim") or True
            assert roctx_utils.torch.install() is True
            assert roctx_utils.torch.install() is True  # harmless twice
            with ap.profile(["ProfilerActivity.CPU", "ProfilerActivity.CUDA"]):
                ap.log.append("inside")
            try:
                with ap.profile(["ProfilerActivity.CUDA"]):
                    raise KeyError("in the block")
            except KeyError:
                ap.log.append("raised")
            with ap.profile(["ProfilerActivity.CPU"]):  # no CUDA: Kineto leaves CUPTI alone
                ap.log.append("cpu only")
            print(ap.log)
        """, {"PYTHONPATH": FAKE_TORCH})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), str([
            "handover", "prepare", "start", "inside", "exit", "reclaim",
            "handover", "prepare", "start", "exit", "reclaim", "raised",
            "prepare", "start", "cpu only", "exit"]))

    def test_zero_code_hooks_torch_at_import(self):
        r = run_python("""
            import torch
            print(bool(torch.autograd.profiler.profile.__dict__.get("__roctx_utils_hooked__")))
        """, {"PYTHONPATH": FAKE_TORCH, "ROCTX_UTILS_PYTHON_HOOKS": "1"})
        self.assertEqual(r.stdout.strip(), "True", r.stderr)

    def test_reclaim_without_cupti_says_not_traced(self):
        self.assertFalse(roctx_utils.reclaim_kernels())  # CPU only: kernels are not CUPTI's


class Discovery(unittest.TestCase):
    def test_the_pure_python_package_has_no_bundled_library_or_cli(self):
        # Issue 43: only the binary wheel carries _native/; `pip install ./python` does not.
        from roctx_utils import _cli
        self.assertIsNone(_lib._bundled())
        self.assertIsNone(_cli.binary())
        r = run_python("import sys, roctx_utils._cli as c; sys.exit(c.main())")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("has no native CLI", r.stderr)
        self.assertIn("binary wheel", r.stderr)

    def test_a_bundled_library_is_found_last(self):
        # A package with _native/lib (the wheel's layout): used only when nothing names one.
        with tempfile.TemporaryDirectory() as d:
            pkg = os.path.join(d, "roctx_utils")
            os.makedirs(os.path.join(pkg, "_native", "lib"))
            for name in os.listdir(os.path.dirname(roctx_utils.__file__)):
                if name.endswith(".py"):
                    with open(os.path.join(os.path.dirname(roctx_utils.__file__), name)) as src, open(os.path.join(pkg, name), "w") as dst:
                        dst.write(src.read())
            lib = LIBRARY
            if not lib:
                self.skipTest("ROCTX_UTILS_TEST_LIBRARY names no library to copy")
            with open(lib, "rb") as src, open(os.path.join(pkg, "_native", "lib", "libroctx_utils_nvtx.so"), "wb") as dst:
                dst.write(src.read())
            r = run_python("""
                import roctx_utils, roctx_utils._lib as l
                assert roctx_utils.__file__.startswith(%r), roctx_utils.__file__
                print(l.get().origin if l.get() else None)
            """ % d, {"PYTHONPATH": d}, env_drop=("ROCTX_UTILS_LIBRARY",))
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("the library inside this package (the binary wheel)", r.stdout)

    def test_no_library_is_one_warning_and_no_ops(self):
        r = run_python("""
            import roctx_utils, roctx_utils.jax
            with roctx_utils.annotate("a"):
                roctx_utils.mark("m")
            with roctx_utils.annotate("b"):
                pass
            roctx_utils.flush_kernels()
            assert roctx_utils.library() is None
            assert roctx_utils.jax.install() is False
            print("ok")
        """, env_drop=("ROCTX_UTILS_LIBRARY",))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("ok", r.stdout)
        self.assertEqual(r.stderr.count("roctx_utils (python): warning"), 1, r.stderr)
        self.assertIn("ROCTX_UTILS_LIBRARY", r.stderr)

    def test_a_missing_path_says_so(self):
        r = run_python("import roctx_utils; roctx_utils.mark('m'); print(roctx_utils.library())",
                       {"ROCTX_UTILS_LIBRARY": "/nonexistent/libroctx_utils_nvtx.so"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("/nonexistent/libroctx_utils_nvtx.so", r.stderr)
        self.assertEqual(r.stdout.strip(), "None")

    def test_a_fifo_named_by_any_variable_never_blocks(self):
        # Issue 40: dlopen of a FIFO waits for a writer, RTLD_NOLOAD or not; the first annotation
        # hung for good. Each variable the search reads a path from is checked first.
        d = tempfile.mkdtemp()
        fifo = os.path.join(d, "libroctx_utils_nvtx.so")
        os.mkfifo(fifo)
        code = "import roctx_utils; roctx_utils.mark('m'); print('ok', roctx_utils.library())"
        drop = ("ROCTX_UTILS_LIBRARY", "NVTX_INJECTION64_PATH", "ROCP_TOOL_LIBRARIES")
        for variable in drop:
            r = run_python(code, {variable: fifo}, env_drop=drop)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.strip(), "ok None", variable)
            self.assertIn("%s is a FIFO, not a shared library file" % fifo, r.stderr, variable)

    def test_a_library_without_the_api_is_refused(self):
        r = run_python("import roctx_utils; roctx_utils.mark('m'); print(roctx_utils.library())",
                       {"ROCTX_UTILS_LIBRARY": "libc.so.6"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("does not export roctx_utils_range_push", r.stderr)
        self.assertEqual(r.stdout.strip(), "None")

    def test_the_copy_already_in_the_process_comes_first(self):
        r = run_python("""
            import ctypes, os, sys
            ctypes.CDLL(sys.argv[0] if False else os.environ["LIB"])
            import roctx_utils
            print(roctx_utils.library())
        """, {"LIB": LIBRARY, "ROCTX_UTILS_LIBRARY": "/nonexistent/other.so"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("already mapped in this process", r.stdout)
        self.assertNotIn("warning", r.stderr)

    def test_the_nvtx_injection_is_used_and_shared(self):
        loaded = run_python("""
            import ctypes, os
            ctypes.CDLL(os.environ["NVTX_INJECTION64_PATH"])
            import roctx_utils
            print(roctx_utils.library())
        """, {"NVTX_INJECTION64_PATH": LIBRARY}, env_drop=("ROCTX_UTILS_LIBRARY",))
        self.assertIn("the NVTX injection, already loaded", loaded.stdout, loaded.stderr)
        first = run_python("import roctx_utils; print(roctx_utils.library())",
                           {"NVTX_INJECTION64_PATH": LIBRARY}, env_drop=("ROCTX_UTILS_LIBRARY",))
        self.assertIn("NVTX_INJECTION64_PATH, loaded here first", first.stdout, first.stderr)

    def test_a_listed_tool_not_loaded_yet_is_reached_through_roctx_never_by_path(self):
        # ROCm under `roctx record`: the tool library is in ROCP_TOOL_LIBRARIES but Python runs
        # before HIP. A roctx library (here under $ROCM_PATH/lib; any C library exporting the
        # three roctx functions would do) is used, and the tool is never loaded by path.
        root = tempfile.mkdtemp()
        os.makedirs(os.path.join(root, "lib"))
        r = run_python("""
            import roctx_utils
            roctx_utils.mark("m")
            print(roctx_utils.library())
            with open("/proc/self/maps") as maps:
                print("tool mapped:", "libroctx_utils" in maps.read())
        """, {"ROCP_TOOL_LIBRARIES": LIBRARY, "ROCM_PATH": root},
            env_drop=("ROCTX_UTILS_LIBRARY", "NVTX_INJECTION64_PATH"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("tool mapped: False", r.stdout)
        # No rocprofiler-sdk roctx on this machine: said once, annotations off.
        self.assertIn("no rocprofiler-sdk roctx", r.stderr)
        self.assertEqual(r.stderr.count("roctx_utils (python): warning"), 1, r.stderr)

    def test_hooks_variable(self):
        code = """
            import jax
            print(bool(jax.profiler.TraceAnnotation.__dict__.get("__roctx_utils_hooked__")))
        """
        on = run_python(code, {"ROCTX_UTILS_PYTHON_HOOKS": "1"})
        self.assertEqual(on.stdout.strip(), "True", on.stderr)
        off = run_python(code, {"ROCTX_UTILS_PYTHON_HOOKS": "0"})
        self.assertEqual((off.stdout.strip(), off.stderr), ("False", ""))
        bad = run_python(code, {"ROCTX_UTILS_PYTHON_HOOKS": "maybe"})
        self.assertEqual(bad.stdout.strip(), "False", bad.stderr)
        self.assertIn("ROCTX_UTILS_PYTHON_HOOKS='maybe' is not 1 or 0", bad.stderr)

    def test_install_without_jax_says_so(self):
        r = run_python("""
            import sys
            sys.modules["jax"] = None  # as if jax were not installed
            import roctx_utils.jax
            print(roctx_utils.jax.install())
        """)
        self.assertEqual(r.stdout.strip(), "False", r.stderr)
        self.assertIn("jax is not importable", r.stderr)


if __name__ == "__main__":
    if not LIBRARY:
        sys.exit("set ROCTX_UTILS_TEST_LIBRARY to the path of libroctx_utils_nvtx.so")
    result = unittest.main(exit=False, verbosity=2).result
    failed = len(result.failures) + len(result.errors)
    print("python package: %d passed, %d failed" % (result.testsRun - failed, failed))
    sys.exit(1 if failed else 0)
