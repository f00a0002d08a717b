"""Finding and binding the native library: ctypes over the C API of ``roctx_utils.h``.

Search order (the first that exports the whole API wins):

1. a copy already in the process, looked up with ``RTLD_NOLOAD`` so that we share its state:
   the NVTX injection (``NVTX_INJECTION64_PATH``), a rocprofiler-sdk tool in
   ``ROCP_TOOL_LIBRARIES``, any ``libroctx_utils*.so`` mapped in ``/proc/self/maps``, or the main
   program itself (a host that links roctx_utils and exports its C API);
2. ``ROCTX_UTILS_LIBRARY=<path>``: a shared library that exports the C API
   (``libroctx_utils_nvtx.so`` does);
3. the NVTX injection library, loaded by path: NVTX loads the same file later, and the loader
   hands both of us one copy. The library then knows it is an NVIDIA process from this first
   call (it compares ``NVTX_INJECTION64_PATH`` with itself) and starts CUPTI;
4. on ROCm, when ``ROCP_TOOL_LIBRARIES`` lists a roctx_utils tool (``roctx record`` on ROCm) that
   is not loaded yet: rocprofiler-sdk's own roctx (``librocprofiler-sdk-roctx``), as PyTorch's
   ``torch.cuda.nvtx`` is on ROCm. Its first call starts the SDK's tool discovery, which loads
   our tool; every range then reaches it through the SDK. Never our library by path: a second
   copy beside the SDK's would write a second trace;
5. when none of the above names a library: the one the binary wheel carries
   (``roctx_utils/_native/lib/libroctx_utils_nvtx.so``), ranges captured in-process.

Nothing found, or a library without the API, gives one warning and leaves every annotation a
no-op. Nothing here ever raises into the caller's code.
"""

import ctypes
import os
import stat
import sys
import threading

# Every function this package calls. A library that lacks one is from another version.
REQUIRED = (
    "roctx_utils_range_push",
    "roctx_utils_range_pop",
    "roctx_utils_mark",
    "roctx_utils_kernel_stats_get",
    "roctx_utils_kernels_handover",
    "roctx_utils_kernels_reclaim",
)

RTLD_NOLOAD = getattr(os, "RTLD_NOLOAD", 4)
RTLD_LAZY = getattr(os, "RTLD_LAZY", 1)


class Library:
    """The bound C API and where it came from."""

    def __init__(self, cdll, origin):
        self.origin = origin
        # Ranges and marks through a PyDLL view of the same handle: ctypes keeps the GIL across
        # these calls instead of releasing and re-taking it around each one, which with many
        # Python threads costs far more than the call (measured: BENCHMARKS.md). They never
        # block for long and never call back into Python. The flush goes through the plain
        # CDLL, which releases the GIL: it waits for the vendor's buffers.
        fast = ctypes.PyDLL(cdll._name, handle=cdll._handle)
        self.range_push = fast.roctx_utils_range_push
        self.range_push.argtypes = [ctypes.c_char_p]
        self.range_push.restype = None
        self.range_pop = fast.roctx_utils_range_pop
        self.range_pop.argtypes = []
        self.range_pop.restype = None
        self.mark = fast.roctx_utils_mark
        self.mark.argtypes = [ctypes.c_char_p]
        self.mark.restype = None
        self.kernel_stats_get = cdll.roctx_utils_kernel_stats_get
        self.kernel_stats_get.argtypes = [ctypes.c_void_p]
        self.kernel_stats_get.restype = ctypes.c_int
        self.kernels_handover = cdll.roctx_utils_kernels_handover
        self.kernels_handover.argtypes = []
        self.kernels_handover.restype = ctypes.c_int
        self.kernels_reclaim = cdll.roctx_utils_kernels_reclaim
        self.kernels_reclaim.argtypes = []
        self.kernels_reclaim.restype = ctypes.c_int
        # Capture windows (a library older than them has neither: NOT_RUNNING).
        for name in ("capture_start", "capture_stop"):
            fn = getattr(cdll, "roctx_utils_" + name, None)
            if fn is not None:
                fn.argtypes = []
                fn.restype = ctypes.c_int
            setattr(self, name, fn or _not_running)
        self._cdll = cdll  # keeps the handle (and the library) alive
        self._fast = fast


class RoctxLibrary:
    """rocprofiler-sdk's roctx in the role of the C API: ranges and marks are roctx calls that
    the SDK hands to our tool; the kernel calls have nothing to do (every rocprofiler-sdk tool
    has its own context, and the tool flushes at exit)."""

    def __init__(self, cdll, origin):
        self.origin = origin
        fast = ctypes.PyDLL(cdll._name, handle=cdll._handle)
        self.range_push = fast.roctxRangePushA
        self.range_push.argtypes = [ctypes.c_char_p]
        self.range_push.restype = ctypes.c_int
        self.range_pop = fast.roctxRangePop
        self.range_pop.argtypes = []
        self.range_pop.restype = ctypes.c_int
        self.mark = fast.roctxMarkA
        self.mark.argtypes = [ctypes.c_char_p]
        self.mark.restype = None
        self._cdll = cdll
        self._fast = fast

    @staticmethod
    def kernel_stats_get(_buf):
        return NOT_RUNNING

    @staticmethod
    def kernels_handover():
        return NOT_RUNNING

    @staticmethod
    def kernels_reclaim():
        return NOT_RUNNING

    def capture_start(self):
        # roctxProfilerResume(0): our tool opens a window when the profiler API's windows are
        # configured (rocprofiler-sdk's MARKER_CONTROL_API).
        return self._control("roctxProfilerResume")

    def capture_stop(self):
        return self._control("roctxProfilerPause")

    def _control(self, name):
        fn = getattr(self._cdll, name, None)
        if fn is None:
            return NOT_RUNNING
        fn.argtypes = [ctypes.c_uint64]
        fn.restype = ctypes.c_int
        return 0 if fn(0) == 0 else NOT_RUNNING


# ROCTX_UTILS_NOT_RUNNING (roctx_utils.h).
NOT_RUNNING = 2


def _not_running():
    return NOT_RUNNING

ROCTX_SONAMES = ("librocprofiler-sdk-roctx.so.1", "librocprofiler-sdk-roctx.so.0")


def _roctx(env, notes):
    roots = [os.path.join(env[k], "lib") for k in ("ROCM_PATH",) if env.get(k)] + ["/opt/rocm/lib"]
    for name in ROCTX_SONAMES:
        for path in [name] + [os.path.join(r, name) for r in roots]:
            why = _not_a_library_file(path)
            if why:
                notes.append(why)
                continue
            try:
                cdll = ctypes.CDLL(path, mode=RTLD_LAZY)
            except OSError:
                continue
            if all(hasattr(cdll, f) for f in ("roctxRangePushA", "roctxRangePop", "roctxMarkA")):
                return RoctxLibrary(cdll, "%s (rocprofiler-sdk's roctx, for the roctx_utils tool in "
                                          "ROCP_TOOL_LIBRARIES)" % path)
    notes.append("ROCP_TOOL_LIBRARIES lists a roctx_utils tool, but no rocprofiler-sdk roctx (%s) "
                 "could be loaded" % ", ".join(ROCTX_SONAMES))
    return None


def _exports_api(cdll):
    missing = [name for name in REQUIRED if not hasattr(cdll, name)]
    return missing


def _split_paths(value):
    # ROCP_TOOL_LIBRARIES: rocprofiler-register splits on ':' (and the SDK on ',' too).
    out = []
    for chunk in (value or "").replace(",", ":").split(":"):
        chunk = chunk.strip()
        if chunk:
            out.append(chunk)
    return out


def _mapped_candidates():
    try:
        with open("/proc/self/maps", "r", encoding="utf-8", errors="replace") as maps:
            lines = maps.readlines()
    except OSError:
        return []
    seen = []
    for line in lines:
        parts = line.split(None, 5)
        if len(parts) == 6:
            path = parts[5].strip()
            if os.path.basename(path).startswith("libroctx_utils") and path not in seen:
                seen.append(path)
    return seen


def _not_a_library_file(path):
    """Why ``path`` cannot be a shared library file, or None. A path with a '/' must name a
    regular file (a link to one is fine): dlopen of a FIFO blocks until a writer comes, even
    with RTLD_NOLOAD, and would hang the first annotation for good. A bare soname is the
    loader's to search."""
    if "/" not in path:
        return None
    try:
        st = os.stat(path)  # follows links; never opens the file
    except OSError:
        return None  # missing: dlopen says so
    for test, kind in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISDIR, "a directory")):
        if test(st.st_mode):
            return "%s is %s, not a shared library file" % (path, kind)
    return None if stat.S_ISREG(st.st_mode) else "%s is not a regular file" % path


def _try(path, mode, origin, notes):
    why = _not_a_library_file(path)
    if why:
        notes.append("%s (%s)" % (why, origin))
        return None
    try:
        cdll = ctypes.CDLL(path, mode=mode)
    except OSError as e:
        if not mode & RTLD_NOLOAD:
            notes.append("%s (%s): %s" % (path, origin, e))
        return None
    missing = _exports_api(cdll)
    if missing:
        notes.append("%s (%s) does not export %s: a roctx_utils of another version, or not roctx_utils"
                      % (path, origin, ", ".join(missing)))
        return None
    return Library(cdll, "%s (%s)" % (path, origin))


def find(environ=None):
    """Returns (Library or None, [notes on what was tried])."""
    env = os.environ if environ is None else environ
    notes = []
    injection = env.get("NVTX_INJECTION64_PATH", "").strip()
    in_process = []
    if injection:
        in_process.append((injection, "the NVTX injection, already loaded"))
    for path in _split_paths(env.get("ROCP_TOOL_LIBRARIES")):
        in_process.append((path, "a rocprofiler-sdk tool, already loaded"))
    for path in _mapped_candidates():
        in_process.append((path, "already mapped in this process"))
    for path, origin in in_process:
        lib = _try(path, RTLD_LAZY | RTLD_NOLOAD, origin, notes)
        if lib:
            return lib, notes
    try:
        main = ctypes.CDLL(None)
        if not _exports_api(main):
            return Library(main, "the main program (a host that links roctx_utils)"), notes
    except OSError:
        pass
    explicit = env.get("ROCTX_UTILS_LIBRARY", "").strip()
    if explicit:
        lib = _try(explicit, RTLD_LAZY, "ROCTX_UTILS_LIBRARY", notes)
        if lib:
            return lib, notes
    if injection:
        lib = _try(injection, RTLD_LAZY, "NVTX_INJECTION64_PATH, loaded here first", notes)
        if lib:
            return lib, notes
    tools = [p for p in _split_paths(env.get("ROCP_TOOL_LIBRARIES"))
             if os.path.basename(p).startswith("libroctx_utils")]
    if tools:
        lib = _roctx(env, notes)
        if lib:
            return lib, notes
    if not explicit and not injection and not tools:
        bundled = _bundled()
        if bundled:
            lib = _try(bundled, RTLD_LAZY, "the library inside this package (the binary wheel)", notes)
            if lib:
                return lib, notes
        notes.append("no roctx_utils library is loaded in this process, and neither "
                     "ROCTX_UTILS_LIBRARY nor NVTX_INJECTION64_PATH names one")
    return None, notes


def _bundled():
    """The binary wheel's ``libroctx_utils_nvtx.so`` (``_native/lib``), or None (a pure-Python
    install). Loaded by path only when nothing above named a library: never beside a
    rocprofiler-sdk tool of ours, which would then be a second copy."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_native", "lib", "libroctx_utils_nvtx.so")
    return path if os.path.isfile(path) else None


_lock = threading.Lock()
_state = {"done": False, "lib": None}


def get():
    """The process's Library, found once (None when there is none: annotations are no-ops)."""
    if _state["done"]:
        return _state["lib"]
    with _lock:
        if not _state["done"]:
            try:
                lib, notes = find()
            except Exception as e:  # never into the caller's code
                lib, notes = None, ["the search failed: %r" % (e,)]
            if lib is None:
                warn("annotations are off: " + "; ".join(notes) +
                     ". Set ROCTX_UTILS_LIBRARY to the path of libroctx_utils_nvtx.so "
                     "(or run under its NVTX injection).")
            _state["lib"] = lib
            _state["done"] = True
    return _state["lib"]


def warn(message):
    """One line on stderr, unless ROCTX_UTILS_LOG turns the library's messages off."""
    level = os.environ.get("ROCTX_UTILS_LOG", "").strip().lower()
    if level in ("off", "quiet", "0", "false", "no"):
        return
    try:
        sys.stderr.write("roctx_utils (python): warning: %s\n" % message)
    except Exception:
        pass


_ON = ("1", "true", "on", "yes")
_OFF = ("", "0", "false", "off", "no")


def flag(name, off="it stays off"):
    """An on/off variable of the package's: True for 1 (true, on, yes), False when unset or 0
    (false, off, no); any other value warns (ending with ``off``) and counts as off."""
    value = os.environ.get(name, "").strip().lower()
    if value in _ON:
        return True
    if value not in _OFF:
        warn("%s=%r is not 1 or 0 (true/false, on/off, yes/no); %s" % (name, os.environ.get(name), off))
    return False


def reset_for_tests():
    with _lock:
        _state["done"] = False
        _state["lib"] = None


# Set on a class or function roctx_utils.jax / roctx_utils.torch patched: install() is idempotent.
MARK = "__roctx_utils_hooked__"


def hook_target(who, load, attr, methods):
    """What ``who``'s install() patches: the class ``attr`` of the module ``load()`` imports,
    which must have ``methods``. Or a bool for install() to return at once: False when it cannot
    be hooked (the reason said once on stderr), True when an earlier call hooked it."""
    try:
        module = load()
    except Exception as e:
        warn("%s is not importable (%s); nothing installed" % (who, e))
        return False
    cls = getattr(module, attr, None)
    if not isinstance(cls, type) or not all(callable(getattr(cls, m, None)) for m in methods):
        warn("%s has no %s with %s; nothing installed" % (who, attr, ", ".join(methods)))
        return False
    if cls.__dict__.get(MARK):
        return get() is not None
    if get() is None:
        return False  # get() said why
    return cls

