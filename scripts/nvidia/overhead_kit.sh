#!/bin/bash
# Builds, on this GPU-less machine, everything scripts/nvidia/overhead_run.sh needs on the
# device, into .devbin/ (carried with `carry: [".devbin"]`):
#
#   bash scripts/nvidia/overhead_kit.sh /path/to/ggml-checkout    # ggml-org/ggml, d99724f2 so far
#
#   libroctx_utils_nvtx.so, ggml/ (test-backend-ops and ggml's libraries, CUDA sm_90a, with the
#                      llama.cpp hook): scripts/nvidia/build_ggml_cuda.sh (about 12 minutes on 2
#                      cores the first time, a relink after)
#   moe_layer          scripts/nvidia/moe_layer.cpp against that ggml
#   libcupti_only.so   scripts/nvidia/cupti_only.c (the `cupti` configuration)
#   pack/ggml.tar.xz.0 ggml/ packed (46 MiB of libraries to about 25 MiB: the device's copy of a
#                      working tree is limited to 64 MiB); overhead_run.sh unpacks it there
#   build_info.txt     the commit the kit was built at
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SRC=$(cd "${1:?usage: $0 /path/to/ggml-checkout}" && pwd)
CACHE=${ROCTX_UTILS_CACHE:-$HOME/.cache/roctx_utils}
KIT=$ROOT/.devbin
bash "$ROOT/scripts/nvidia/build_ggml_cuda.sh" "$SRC"
# The headers of the patched copy build_ggml_cuda.sh compiled (the same as the checkout's).
g++ -O2 -std=c++17 -I"$CACHE/src/ggml/include" "$ROOT/scripts/nvidia/moe_layer.cpp" -o "$KIT/moe_layer" \
  "$KIT/ggml/libggml.so.0" "$KIT/ggml/libggml-base.so.0" -Wl,--allow-shlib-undefined
gcc -O2 -shared -fPIC -o "$KIT/libcupti_only.so" "$ROOT/scripts/nvidia/cupti_only.c" -ldl -lpthread
rm -rf "$KIT/pack" && mkdir -p "$KIT/pack"
tar -C "$KIT" -cf - ggml | xz -T0 -6 >"$KIT/pack/ggml.tar.xz.0"
rm -rf "$KIT/ggml"
echo "commit=$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- rust nvtx scripts/nvidia || echo '+changes') ggml=$(git -C "$SRC" rev-parse --short HEAD)" >"$KIT/build_info.txt"
du -sh "$KIT"
git -C "$ROOT" check-ignore -q "$KIT" || echo "warning: $KIT is not ignored by git" >&2
