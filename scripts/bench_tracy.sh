#!/bin/bash
# Builds Tracy's zone for bench/side_by_side.cc (issue 44's anchor): Tracy v0.14's client
# (TracyClient.cpp) from crates.io's tracy-client-sys, pinned by bench/tracy/Cargo.lock, compiled
# with bench/tracy_zone.cc into DIR/libbench_tracy.so, which side_by_side opens when
# BENCH_TRACY_LIB names it. Nothing of Tracy is kept in this tree: cargo puts its source in
# cargo's registry cache.
#
#   bash scripts/bench_tracy.sh DIR
#
# Tracy's defaults, less what is not the zone: no broadcast, CPU sampling, system or
# context-switch tracing, code transfer, crash handler or call stacks (a zone costs the same
# either way; these are its other threads and signal handlers). Its thread-locals are
# initial-exec (48 bytes of static TLS), and its calls bind inside the library (-Bsymbolic), as
# when Tracy is linked into an executable, which is how its users build it.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:?usage: bench_tracy.sh DIR}
manifest="$ROOT/bench/tracy/Cargo.toml"
cargo fetch --locked --manifest-path "$manifest" >&2
src=$(cargo metadata --format-version 1 --locked --manifest-path "$manifest" |
  python3 -c 'import json, os, sys
m = json.load(sys.stdin)
print(next(os.path.dirname(p["manifest_path"]) for p in m["packages"] if p["name"] == "tracy-client-sys"))')/tracy
[ -f "$src/TracyClient.cpp" ] || { echo "bench_tracy.sh: no TracyClient.cpp under $src" >&2; exit 1; }
mkdir -p "$out"
${CXX:-g++} -O2 -std=c++17 -fPIC -shared -fvisibility=hidden -ftls-model=initial-exec -Wl,-Bsymbolic \
  -DTRACY_ENABLE -DTRACY_NO_BROADCAST -DTRACY_NO_SAMPLING -DTRACY_NO_SYSTEM_TRACING \
  -DTRACY_NO_CONTEXT_SWITCH -DTRACY_NO_CODE_TRANSFER -DTRACY_NO_CRASH_HANDLER -DTRACY_NO_CALLSTACK \
  -I"$src" "$ROOT/bench/tracy_zone.cc" "$src/TracyClient.cpp" -o "$out/libbench_tracy.so" -lpthread -ldl
echo "$out/libbench_tracy.so: Tracy $(sed -n 's/.*constexpr int \(Major\|Minor\|Patch\) = \([0-9]*\);.*/\2/p' "$src/common/TracyVersion.hpp" | paste -sd.) from $src" >&2
