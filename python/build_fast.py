"""Compiles roctx_utils._fast (src/roctx_utils/_fast.c, the C fast path of annotate: issue 44)
for the running CPython, as an abi3 module: one build serves CPython 3.9 and later on this
platform. Used by the wheel build hook (hatch_build.py: `pip install ./python`) and by
scripts/build_wheel.py (the binary wheel). Standard library only.

    python3 build_fast.py OUT_DIR     # prints the module's path, or why not (exit 1)
"""

import os
import shlex
import subprocess
import sys
import sysconfig

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "src", "roctx_utils", "_fast.c")
# The file name any CPython 3.2+ on Linux imports as roctx_utils._fast.
MODULE = "_fast.abi3.so"
# The wheel tag's interpreter and ABI: the oldest CPython the limited API level allows.
ABI_TAG = "cp39-abi3"


def why_not():
    """Why this interpreter cannot take the compiled module (None: it can)."""
    if sys.implementation.name != "cpython":
        return "%s is not CPython" % sys.implementation.name
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        return "a free-threaded CPython does not load abi3 modules"
    if not sys.platform.startswith("linux"):
        return "only Linux builds are made"
    if not os.path.isfile(os.path.join(sysconfig.get_paths()["include"], "Python.h")):
        return "no Python.h in %s (install python3-dev)" % sysconfig.get_paths()["include"]
    return None


def build(out_dir):
    """Compiles the module into out_dir: (path, None), or (None, why)."""
    reason = why_not()
    if reason:
        return None, reason
    cc = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    out = os.path.join(out_dir, MODULE)
    cmd = cc + ["-O2", "-fPIC", "-shared", "-fvisibility=hidden", "-Wall",
                "-I" + sysconfig.get_paths()["include"], SOURCE, "-ldl", "-o", out]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        return None, "no C compiler (%s: %s)" % (cc[0], e.strerror)
    if r.returncode != 0:
        return None, "%s failed:\n%s" % (" ".join(cmd), r.stderr.strip())
    return out, None


def platform_tag():
    """This machine's wheel platform tag (linux_x86_64), before any manylinux policy."""
    return sysconfig.get_platform().replace("-", "_").replace(".", "_")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    path, reason = build(sys.argv[1])
    if path is None:
        sys.exit("build_fast.py: the compiled fast path is not built: %s" % reason)
    print(path)
