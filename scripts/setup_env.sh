# Sourced by scripts/test.sh and scripts/demo.sh: the machine setup both need, so the two
# commands of the README can never disagree about it. Defines APT_PACKAGES, BAZEL and
# ensure_packages, and puts rustup's cargo on PATH.

export DEBIAN_FRONTEND=noninteractive
# Debian's offline Bazel 4.2.3, googletest sources, skylib, and Google Benchmark for //bench.
APT_PACKAGES=(bazel-bootstrap googletest bazel-skylib libbenchmark-dev)
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
