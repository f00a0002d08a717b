"""The wheel's build hook (hatchling): `pip install ./python` compiles roctx_utils._fast, the C
fast path of annotate (build_fast.py), into a cp39-abi3 wheel for this platform. Without a C
compiler or Python's headers, or on an interpreter that cannot load it, the wheel stays pure
Python (py3-none-any) and annotate takes its Python path: the same behaviour, slower
(docs/python.md gives both costs). ROCTX_UTILS_PYTHON_PURE=1 at install time skips it."""

import importlib.util
import os
import shutil
import sys
import tempfile

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


def _build_fast():
    spec = importlib.util.spec_from_file_location("roctx_build_fast", os.path.join(os.path.dirname(os.path.abspath(__file__)), "build_fast.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class FastPathHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version, build_data):
        self._tmp = None
        if self.target_name != "wheel" or version == "editable":
            return
        if os.environ.get("ROCTX_UTILS_PYTHON_PURE", "").strip().lower() in ("1", "true", "on", "yes"):
            return
        fast = _build_fast()
        self._tmp = tempfile.mkdtemp(prefix="roctx_fast_")
        path, reason = fast.build(self._tmp)
        if path is None:
            sys.stderr.write("roctx_utils: the compiled fast path of annotate is not built (%s); "
                             "the package takes its pure-Python path\n" % reason)
            return
        build_data["pure_python"] = False
        build_data["infer_tag"] = False
        build_data["tag"] = "%s-%s" % (fast.ABI_TAG, fast.platform_tag())
        build_data["force_include"][path] = "roctx_utils/" + fast.MODULE

    def finalize(self, version, build_data, artifact_path):
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)
