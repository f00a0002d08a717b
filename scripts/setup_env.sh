# Sourced by scripts/test.sh and scripts/demo.sh: the machine setup both need, so the two
# commands of the README can never disagree about it. Defines APT_PACKAGES, BAZEL and
# ensure_packages, and puts rustup's cargo on PATH.

export DEBIAN_FRONTEND=noninteractive
# Debian's offline Bazel 4.2.3, googletest sources, skylib, Google Benchmark for //bench, and
# python3-venv (Debian's python3 cannot `python3 -m venv` without it) for the xprof venv of
# scripts/test.sh, python3-dev (Python.h: the Python package's compiled fast path, issue 44),
# and patch, which applies integrations/xla's patch in a test.
APT_PACKAGES=(bazel-bootstrap googletest bazel-skylib libbenchmark-dev python3-venv python3-dev patch)
BAZEL=bazel-4  # never the /usr/bin/bazel wrapper: it trips over .bazelversion files

# rustup installs into ~/.cargo/bin, which a non-login shell may not have on PATH.
if ! command -v cargo >/dev/null 2>&1; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi

# apt only when a package is missing, so reruns stay offline and fast.
ensure_packages() {
  local missing=() pkg
  for pkg in "${APT_PACKAGES[@]}"; do
    if [ "$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null)" != installed ]; then
      missing+=("$pkg")
    fi
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "==> apt packages present: ${APT_PACKAGES[*]}"
    return 0
  fi
  echo "==> installing missing apt packages: ${missing[*]}"
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then sudo=(sudo); fi
  "${sudo[@]}" apt-get update -q &&
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# The real XProf consumer (tests/xprof/check_xprof.py) lives in its own venv, outside the tree.
XPROF_VERSION=2.24.2
XPROF_VENV=${ROCTX_UTILS_CACHE:-$HOME/.cache/roctx_utils}/xprof-venv

# Creates $XPROF_VENV with xprof==$XPROF_VERSION unless it already has it (then offline and
# instant). Returns non-zero, with a message on stderr, when venv creation or pip fails.
ensure_xprof_venv() {
  local py=$XPROF_VENV/bin/python
  if [ -x "$py" ] && "$py" -c 'import sys, importlib.metadata as m, xprof
sys.exit(m.version("xprof") != sys.argv[1])' "$XPROF_VERSION" 2>/dev/null; then
    echo "==> xprof $XPROF_VERSION present in $XPROF_VENV"
    return 0
  fi
  echo "==> creating $XPROF_VENV with xprof==$XPROF_VERSION (about 350 MB from PyPI)"
  if ! python3 -m venv "$XPROF_VENV"; then
    echo "error: 'python3 -m venv $XPROF_VENV' failed (Debian needs the python3-venv package)" >&2
    return 1
  fi
  if ! "$py" -m pip install -q "xprof==$XPROF_VERSION"; then
    echo "error: 'pip install xprof==$XPROF_VERSION' failed (is PyPI reachable?)" >&2
    return 1
  fi
}

# jax[cpu] for the Python package's tests (python/, scripts/test.sh run_python), in the same
# venv: a real JAX whose TraceAnnotation the package hooks.
JAX_CPU_VERSION=0.10.2

# Puts jax[cpu]==$JAX_CPU_VERSION into $XPROF_VENV unless it is there (then offline, instant).
ensure_jax_cpu() {
  local py=$XPROF_VENV/bin/python
  if "$py" -c 'import sys, importlib.metadata as m
sys.exit(m.version("jax") != sys.argv[1] or m.version("jaxlib") != sys.argv[1])' "$JAX_CPU_VERSION" 2>/dev/null; then
    echo "==> jax[cpu] $JAX_CPU_VERSION present in $XPROF_VENV"
    return 0
  fi
  echo "==> installing jax[cpu]==$JAX_CPU_VERSION into $XPROF_VENV (about 90 MB from PyPI)"
  "$py" -m pip install -q "jax[cpu]==$JAX_CPU_VERSION" ||
    { echo "error: 'pip install jax[cpu]==$JAX_CPU_VERSION' failed (is PyPI reachable?)" >&2; return 1; }
}
