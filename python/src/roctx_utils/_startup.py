"""The zero-code hook, imported by ``roctx_utils_startup.pth`` when ``ROCTX_UTILS_PYTHON_HOOKS``
is set: with ``1`` (or true/on/yes), ``roctx_utils.jax.install()`` runs right after the script
imports jax (its TraceAnnotations become ROCTX ranges) and ``roctx_utils.torch.install()`` right
after it imports torch (torch.profiler shares CUPTI with us cleanly), with no change to the
script. Anything unexpected is said on stderr and never stops the interpreter."""

import sys

from . import _lib


def _install(name):
    try:
        if name == "jax":
            from . import jax as hooks
        else:
            from . import torch as hooks
        hooks.install()
    except Exception as e:
        _lib.warn("ROCTX_UTILS_PYTHON_HOOKS: installing the %s hooks failed: %r" % (name, e))


class _ImportHook:
    """A meta-path finder that only watches for ``jax`` and ``torch``: it lets the real finders
    locate them, then installs our hooks once the package's own ``__init__`` has finished."""

    def __init__(self):
        self.waiting = {"jax", "torch"}

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.waiting:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        exec_module = getattr(loader, "exec_module", None)
        if exec_module is None:
            return spec
        self.waiting.discard(fullname)
        if not self.waiting:
            try:
                sys.meta_path.remove(self)
            except ValueError:
                pass

        def exec_and_install(module):
            exec_module(module)
            _install(fullname)

        # On this module's own loader instance, so that the spec and loader it sees (and
        # importlib.resources uses) stay the real ones.
        loader.exec_module = exec_and_install
        return spec


def _setup():
    if not _lib.flag("ROCTX_UTILS_PYTHON_HOOKS", "the hooks stay off"):
        return
    hook = _ImportHook()
    for name in sorted(hook.waiting):
        if name in sys.modules:
            hook.waiting.discard(name)
            _install(name)
    if hook.waiting:
        sys.meta_path.insert(0, hook)


try:
    _setup()
except Exception as e:  # a start-up hook must never stop the interpreter
    _lib.warn("ROCTX_UTILS_PYTHON_HOOKS: %r" % (e,))
