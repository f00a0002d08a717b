"""`roctx` on PATH from the binary wheel: runs the CLI the wheel carries (issue 43).

The wheel (scripts/build_wheel.py) holds the Rust CLI at ``roctx_utils/_native/bin/roctx`` and
both libraries in ``_native/lib``, its ``../lib``, where ``roctx record`` finds them. This console
script replaces itself with that binary (``exec``: the same process id, so signals, exit status
and ``roctx record``'s signal forwarding are the binary's own). A pure-Python install
(``pip install ./python``) has no binary and no console script; this module then says where to
get one.
"""

import os
import sys


def binary():
    """The wheel's CLI, or None."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_native", "bin", "roctx")
    return path if os.path.isfile(path) and os.access(path, os.X_OK) else None


def main():
    path = binary()
    if path is None:
        sys.stderr.write("roctx: this roctx_utils installation has no native CLI (pip install ./python "
                         "is the pure-Python package): install the binary wheel "
                         "(roctx_utils-<version>-cp39-abi3-manylinux_*.whl) or use the release "
                         "tarball's bin/roctx\n")
        return 2
    try:
        os.execv(path, [path] + sys.argv[1:])
    except OSError as e:
        sys.stderr.write("roctx: could not run %s: %s\n" % (path, e))
        return 2
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
