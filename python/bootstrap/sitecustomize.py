"""`roctx record`'s Python start-up hook: the release tarball's python/bootstrap/ goes first on
PYTHONPATH, so every Python process the recorded command starts imports this module at start-up
(as `ddtrace-run` and `opentelemetry-instrument` do), with nothing installed in its environment.

It makes ``roctx_utils`` importable (an installed copy wins; else the tarball's python/src), runs
the zero-code hooks when ``ROCTX_UTILS_PYTHON_HOOKS`` is set (jax.profiler.TraceAnnotation and
torch.profiler), then runs the ``sitecustomize`` this one hides, if the environment has one.
Nothing here may stop the interpreter: a failure is one line on stderr."""

import os
import sys


def _warn(message):
    level = os.environ.get("ROCTX_UTILS_LOG", "").strip().lower()
    if level not in ("off", "quiet", "0", "false", "no"):
        try:
            sys.stderr.write("roctx_utils (python): warning: %s\n" % message)
        except Exception:
            pass


_HERE = os.path.dirname(os.path.abspath(__file__))


def _hooks():
    try:
        import roctx_utils  # noqa: F401  (an installed copy wins)
    except ImportError:
        src = os.path.join(os.path.dirname(_HERE), "src")
        if os.path.isdir(os.path.join(src, "roctx_utils")):
            sys.path.append(src)
    if os.environ.get("ROCTX_UTILS_PYTHON_HOOKS", "").strip():
        import roctx_utils._startup  # noqa: F401  (idempotent: the .pth may have run it)


def _chain():
    """Runs the ``sitecustomize`` that ours hides, found as Python's own import would find it on
    the rest of sys.path: a module (``.py``, ``.pyc``, an extension) or a package (a directory
    with ``__init__.py``), whichever comes first."""
    import importlib.machinery
    import importlib.util

    rest = []
    for entry in sys.path:
        try:
            if os.path.abspath(entry or os.curdir) == _HERE:
                continue
        except Exception:
            continue
        rest.append(entry)
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:  # none, or a namespace package (nothing to run)
        return
    module = importlib.util.module_from_spec(spec)
    ours = sys.modules.get("sitecustomize")
    sys.modules["sitecustomize"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        if ours is not None:
            sys.modules["sitecustomize"] = ours
        raise


try:
    _hooks()
except Exception as e:
    _warn("roctx record's start-up hook: %r" % (e,))
try:
    _chain()
except Exception as e:
    _warn("the environment's own sitecustomize failed under roctx record: %r" % (e,))
