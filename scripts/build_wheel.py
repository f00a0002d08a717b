#!/usr/bin/env python3
"""Builds the binary wheel of roctx_utils (issue 43), as maturin builds a Rust tool's: the Python
package, the two native libraries and the `roctx` CLI, in one platform wheel.

    python3 scripts/build_wheel.py --roctx BIN --lib DIR --out DIST [--tag TAG]

Layout inside the wheel (what `pip install` puts in site-packages):

    roctx_utils/                         the Python package (python/src/roctx_utils)
    roctx_utils/_fast.abi3.so            the C fast path of annotate (python/build_fast.py:
                                         abi3, so the wheel is cp39-abi3: CPython 3.9 and later)
    roctx_utils/_native/bin/roctx        the CLI; `roctx` on PATH is the console script
                                         roctx_utils._cli:main, which runs it
    roctx_utils/_native/lib/*.so         libroctx_utils_tool.so (ROCm), libroctx_utils_nvtx.so
                                         (NVIDIA, and CPU-only recording): ../lib of the CLI, where
                                         `roctx record` looks first
    roctx_utils/_native/python/bootstrap the start-up hook `roctx record` puts on PYTHONPATH
    roctx_utils_startup.pth              the zero-code hook (as `pip install ./python` installs)

The platform tag is the oldest manylinux the ELF files allow: the highest GLIBC_ symbol version
any of them needs gives manylinux_2_<minor>, and their GLIBCXX_/CXXABI_ versions must be within
that policy's (auditwheel's policy table, for the policies listed below); `--tag` overrides it.
`auditwheel show` on the result says the same where auditwheel is installed (the test command
checks). Reproducible: entries sorted, dated SOURCE_DATE_EPOCH (else 1980-01-01). Prints the
wheel's path.
"""

import argparse
import atexit
import base64
import csv
import hashlib
import io
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "roctx_utils"  # the normalized distribution name of `roctx-utils`

# manylinux policies (PEP 600; auditwheel's policy/manylinux-policy.json): the highest GLIBCXX_
# and CXXABI_ versions each allows, by glibc minor.
POLICIES = {
    17: ("3.4.19", "1.3.7"),
    28: ("3.4.25", "1.3.11"),
    31: ("3.4.28", "1.3.12"),
    34: ("3.4.29", "1.3.13"),
    35: ("3.4.30", "1.3.13"),
    36: ("3.4.30", "1.3.13"),
    39: ("3.4.32", "1.3.14"),
}


def version_tuple(v):
    return tuple(int(x) for x in v.split("."))


def symbol_versions(path):
    """The GLIBC_, GLIBCXX_ and CXXABI_ versions `path`'s dynamic symbols need."""
    out = subprocess.run(["objdump", "-T", path], check=True, capture_output=True, text=True).stdout
    need = {"GLIBC": set(), "GLIBCXX": set(), "CXXABI": set()}
    for kind, v in re.findall(r"\b(GLIBC|GLIBCXX|CXXABI)_([0-9][0-9.]*)\b", out):
        # Only undefined symbols are needs; a defined one is exported (none of ours are versioned).
        need[kind].add(v.rstrip("."))
    return need


def platform_tag(elves):
    needs = [symbol_versions(e) for e in elves]  # one objdump per file
    glibc = max((version_tuple(v) for n in needs for v in n["GLIBC"]), default=(2, 17))
    cxx = max((version_tuple(v) for n in needs for v in n["GLIBCXX"]), default=(3, 4))
    abi = max((version_tuple(v) for n in needs for v in n["CXXABI"]), default=(1, 3))
    for minor in sorted(POLICIES):
        if minor < glibc[1]:
            continue
        max_cxx, max_abi = POLICIES[minor]
        if cxx <= version_tuple(max_cxx) and abi <= version_tuple(max_abi):
            return "manylinux_2_%d_x86_64" % minor, glibc, cxx
    return "linux_x86_64", glibc, cxx


def project():
    text = open(os.path.join(ROOT, "python", "pyproject.toml"), encoding="utf-8").read()
    field = lambda name: re.search(r'^%s = "([^"]*)"' % name, text, re.M).group(1)
    return {"version": field("version"), "description": field("description"), "requires-python": field("requires-python")}


def files():
    """(path in the wheel, source path, executable) for every file but the dist-info."""
    out = []
    src = os.path.join(ROOT, "python", "src")
    for d, dirs, names in os.walk(os.path.join(src, NAME)):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        for n in sorted(names):
            if n.endswith((".pyc", ".pyo", ".c", ".so")):
                continue  # the C source is built (below), never shipped; no stray module
            p = os.path.join(d, n)
            out.append((os.path.relpath(p, src), p, False))
    out.append(("roctx_utils_startup.pth", os.path.join(src, "roctx_utils_startup.pth"), False))
    out.append((NAME + "/_native/python/bootstrap/sitecustomize.py", os.path.join(ROOT, "python", "bootstrap", "sitecustomize.py"), False))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--roctx", required=True, help="the roctx CLI binary")
    ap.add_argument("--lib", required=True, help="the directory holding libroctx_utils_tool.so and libroctx_utils_nvtx.so")
    ap.add_argument("--out", required=True, help="where the wheel goes")
    ap.add_argument("--tag", help="the platform tag (default: from the ELF files' symbol versions)")
    a = ap.parse_args()

    meta = project()
    libs = [os.path.join(a.lib, n) for n in ("libroctx_utils_tool.so", "libroctx_utils_nvtx.so")]
    for p in [a.roctx] + libs:
        if not os.path.isfile(p):
            sys.exit("build_wheel.py: %s does not exist" % p)
    # Debug sections stripped from copies (symbols kept: backtraces still name functions), as
    # release wheels ship: a third of the size.
    tmpdir = tempfile.mkdtemp(prefix="roctx_wheel_")
    atexit.register(shutil.rmtree, tmpdir, True)

    def stripped(p):
        out = os.path.join(tmpdir, os.path.basename(p))
        shutil.copyfile(p, out)
        if shutil.which("strip") and subprocess.run(["strip", "--strip-debug", out], capture_output=True).returncode == 0:
            return out
        return p

    entries = files()
    # The compiled fast path (issue 44), for this platform; a release without it would be
    # slower for every user, so it is required here (`pip install ./python` falls back instead).
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import build_fast
    fast, reason = build_fast.build(tmpdir)
    if fast is None:
        sys.exit("build_wheel.py: the compiled fast path could not be built: %s" % reason)
    entries.append((NAME + "/" + build_fast.MODULE, fast, False))
    entries.append((NAME + "/_native/bin/roctx", stripped(a.roctx), True))
    entries += [(NAME + "/_native/lib/" + os.path.basename(p), stripped(p), True) for p in libs]
    tag, glibc, cxx = (a.tag, None, None) if a.tag else platform_tag([a.roctx, fast] + libs)
    if glibc:
        print("build_wheel.py: needs GLIBC %s, GLIBCXX %s: %s" % (".".join(map(str, glibc)), ".".join(map(str, cxx)), tag), file=sys.stderr)
    tag = "%s-%s" % (build_fast.ABI_TAG, tag)

    dist_info = "%s-%s.dist-info" % (NAME, meta["version"])
    readme = open(os.path.join(ROOT, "python", "README.md"), encoding="utf-8").read()
    metadata = "\n".join([
        "Metadata-Version: 2.1",
        "Name: roctx-utils",
        "Version: " + meta["version"],
        "Summary: " + meta["description"],
        "License: Apache-2.0",
        "Requires-Python: " + meta["requires-python"],
        "Provides-Extra: jax",
        'Requires-Dist: jax; extra == "jax"',
        "Classifier: Programming Language :: Python :: 3",
        "Classifier: Operating System :: POSIX :: Linux",
        "Classifier: Topic :: System :: Monitoring",
        "Description-Content-Type: text/markdown",
        "",
        readme,
    ])
    wheel = "Wheel-Version: 1.0\nGenerator: roctx_utils scripts/build_wheel.py\nRoot-Is-Purelib: false\nTag: %s\n" % tag
    entry_points = "[console_scripts]\nroctx = roctx_utils._cli:main\n"
    generated = [(dist_info + "/METADATA", metadata.encode()), (dist_info + "/WHEEL", wheel.encode()),
                 (dist_info + "/entry_points.txt", entry_points.encode())]

    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    date = time.gmtime(max(epoch, 315532800))[:6]
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, "%s-%s-%s.whl" % (NAME, meta["version"], tag))
    record = []

    def add(z, name, data, executable):
        info = zipfile.ZipInfo(name, date_time=date)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = ((0o755 if executable else 0o644) | stat.S_IFREG) << 16
        z.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append((name, "sha256=" + digest, str(len(data))))

    tmp = path + ".part"
    with zipfile.ZipFile(tmp, "w") as z:
        for name, src, executable in sorted(entries):
            with open(src, "rb") as f:
                add(z, name, f.read(), executable)
        for name, data in generated:
            add(z, name, data, False)
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerows(record)
        w.writerow((dist_info + "/RECORD", "", ""))
        info = zipfile.ZipInfo(dist_info + "/RECORD", date_time=date)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = (0o644 | stat.S_IFREG) << 16
        z.writestr(info, out.getvalue())
    os.replace(tmp, path)
    print(path)


if __name__ == "__main__":
    main()
