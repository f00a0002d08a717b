#!/bin/bash
# Builds the binary wheel, dist/roctx_utils-<version>-cp39-abi3-manylinux_2_<N>_x86_64.whl
# (scripts/build_wheel.py: `pip install` it and `roctx` is on PATH), and the release tarball,
# dist/roctx_utils-<version>-linux-x86_64.tar.gz (or OUT_DIR/...), one directory that profiles
# any process once unpacked (README, "Profile any process"):
#
#   bin/roctx                        the CLI: record, inspect, merge, convert, roofline
#   lib/libroctx_utils_tool.so       the rocprofiler-sdk tool library (ROCm)
#   lib/libroctx_utils_nvtx.so       the NVTX3 injection library (NVIDIA)
#   include/                         roctx_utils.h, roofline.h and the drop-in nvtx_utils.h
#   python/                          the Python package (pip install ./python) and
#                                    python/bootstrap/, which `roctx record` puts on PYTHONPATH
#   README.md, LICENSE
#
# Usage: bash scripts/release.sh [OUT_DIR]. RELEASE_COMPILATION_MODE=fastbuild builds the C++
# parts without optimization (the test command does, to share its Bazel cache; the Rust is built
# by cargo --release either way). Prints the wheel's path, then the tarball's on its last line.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
# shellcheck source=scripts/setup_env.sh
source scripts/setup_env.sh
ensure_packages >&2

OUT_DIR=$(realpath -m "${1:-$ROOT/dist}")
MODE=${RELEASE_COMPILATION_MODE:-opt}
VERSION=$(sed -nE 's/^version = "([^"]+)"$/\1/p' rust/Cargo.toml | head -n 1)
NAME=roctx_utils-$VERSION-linux-x86_64
FLAGS=(--config=bazel4 --config=rocm -c "$MODE")

echo "==> $BAZEL build ${FLAGS[*]} //:roctx_utils_tool //:roctx_utils_nvtx" >&2
"$BAZEL" build "${FLAGS[@]}" //:roctx_utils_tool //:roctx_utils_nvtx >&2
BIN=$("$BAZEL" info "${FLAGS[@]}" bazel-bin 2>/dev/null)
echo "==> (cd rust && cargo build --release --locked -p roctx_cli)" >&2
(cd rust && cargo build --release --locked -q -p roctx_cli) >&2

STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
DEST=$STAGE/$NAME
mkdir -p "$DEST"/{bin,lib,include,python}
install -m 0755 rust/target/release/roctx "$DEST/bin/roctx"
install -m 0755 "$BIN/tool/libroctx_utils_tool.so" "$BIN/nvtx/libroctx_utils_nvtx.so" "$DEST/lib/"
cp -R include/. "$DEST/include/"
cp -R python/pyproject.toml python/README.md python/src python/bootstrap "$DEST/python/"
find "$DEST/python" -name __pycache__ -prune -exec rm -rf {} +
cp README.md "$DEST/"
if [ -f LICENSE ]; then cp LICENSE "$DEST/"; fi

mkdir -p "$OUT_DIR"
EPOCH=$(git log -1 --format=%ct 2>/dev/null || date +%s)
# The binary wheel beside it (issue 43): the Python package, both libraries and the CLI.
echo "==> python3 scripts/build_wheel.py" >&2
WHEEL=$(SOURCE_DATE_EPOCH=$EPOCH python3 scripts/build_wheel.py --roctx "$DEST/bin/roctx" --lib "$DEST/lib" --out "$OUT_DIR" | tail -n 1)
echo "$WHEEL"
# Reproducible entries: sorted, owned by root, dated by the last commit.
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$EPOCH" \
  -C "$STAGE" -czf "$OUT_DIR/$NAME.tar.gz" "$NAME"
echo "$OUT_DIR/$NAME.tar.gz"
