#!/bin/bash
# Bazel action: build one crate of the Cargo workspace from vendored, locked sources.
# Args: cargo_env.sh Cargo.toml vendor.tar crate out.a bridge_dir
set -euo pipefail
CARGO_ENV=$1 MANIFEST=$2 VENDOR_TAR=$3 CRATE=$4 OUT_A=$5 BRIDGE_DIR=$6
source "$CARGO_ENV"
EXECROOT=$PWD
TMP=$(mktemp -d -t cargo_bazel.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
tar -xf "$VENDOR_TAR" -C "$TMP"
export CARGO_HOME="$TMP/cargo_home"       # throw-away: nothing from $HOME is used
export CARGO_TARGET_DIR="$TMP/target"     # fresh each time: cargo fingerprints are path-based
export RUSTC                               # the real rustc, not a rustup proxy
export CXXBRIDGE_EXPORT_DIR="$EXECROOT/$BRIDGE_DIR"
export PATH="$(dirname "$RUSTC"):/usr/local/bin:/usr/bin:/bin"
export CARGO_TERM_COLOR=never CARGO_TERM_PROGRESS_WHEN=never
"$CARGO" build --frozen --release --lib -p "$CRATE" --manifest-path "$MANIFEST" --quiet \
  --config "source.crates-io.replace-with='vendored-sources'" \
  --config "source.vendored-sources.directory='$TMP/vendor'"
cp "$CARGO_TARGET_DIR/release/lib$CRATE.a" "$EXECROOT/$OUT_A"
