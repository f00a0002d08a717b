#!/bin/bash
# Builds upstream ggml's CUDA backend for the H200 (sm_90a) on this GPU-less machine, with our
# llama.cpp hook (integrations/llama.cpp/roctx_roofline.patch) linked against
# libroctx_utils_nvtx.so, and packs what the device needs into .devbin/ggml/:
#
#   bash scripts/nvidia/build_ggml_cuda.sh /path/to/ggml-checkout
#
# The checkout is ggml-org/ggml, which mirrors llama.cpp's ggml/ directory (its
# scripts/sync-llama.last names the llama.cpp commit) and carries test-backend-ops in tests/;
# the full llama.cpp repository is too large to fetch here. The patch's ggml-cuda/ggml-hip part
# is applied to a copy, never to the checkout. The CUDA 13.0 toolchain comes from PyPI (nvcc, runtime, cuBLAS,
# CCCL headers: shared/spec/nvidia_sources.md §G) into a venv under ~/.cache/roctx_utils; the
# device loads cuBLAS and the runtime from its own PyTorch wheels at run time, so they are not
# carried. Only the targets test-backend-ops needs are built, for one architecture, without the
# FlashAttention kernels: 141 CUDA files, about 40 minutes on 2 cores; the build folder is kept
# and reused.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SRC=$(cd "${1:?usage: $0 /path/to/ggml-checkout}" && pwd)
CACHE=${ROCTX_UTILS_CACHE:-$HOME/.cache/roctx_utils}
VENV=$CACHE/cuda-venv
COPY=$CACHE/src/ggml BUILD=$CACHE/llama-build/b LIB=$CACHE/llama-build/lib
CUDA_PKGS=(cmake ninja nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-nvvm==13.0.88
           nvidia-cuda-runtime==13.0.96 nvidia-cublas==13.0.2.14 nvidia-cuda-cccl==13.0.85)

if [ ! -d "$SRC/src/ggml-cuda" ] || [ ! -f "$SRC/tests/test-backend-ops.cpp" ]; then
  echo "error: $SRC is not a ggml-org/ggml checkout (no src/ggml-cuda, tests/test-backend-ops.cpp)" >&2
  exit 2
fi

[ -x "$VENV/bin/pip" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q "${CUDA_PKGS[@]}"
CUDA=$("$VENV/bin/python" -c 'import nvidia, os; print(os.path.join(nvidia.__path__[0], "cu13"))')
# The wheels ship only versioned sonames and lib/, where CMake's FindCUDAToolkit and nvcc's
# link step look for lib64/ and the unversioned names.
ln -sfn lib "$CUDA/lib64"
for l in cudart cublas cublasLt; do ln -sf "lib$l.so.13" "$CUDA/lib/lib$l.so"; done

(cd "$ROOT" && bazel-4 build //nvtx:libroctx_utils_nvtx.so --config=bazel4 --config=rocm)
mkdir -p "$LIB" "$(dirname "$COPY")"
install -m 0755 "$ROOT/bazel-bin/nvtx/libroctx_utils_nvtx.so" "$LIB/"

# A clone of the checkout with the patch applied; kept (with the build folder) while the checkout's
# commit is the same, so a second run only relinks.
head=$(git -C "$SRC" rev-parse HEAD)
if [ "$(git -C "$COPY" rev-parse HEAD 2>/dev/null)" != "$head" ]; then
  rm -rf "$COPY" "$BUILD" && git clone -q "$SRC" "$COPY" && git -C "$COPY" checkout -q "$head"
fi
echo "ggml $head = llama.cpp $(cat "$SRC/scripts/sync-llama.last" 2>/dev/null || echo '?')"
# The patch's paths are llama.cpp's (a/ggml/src/...): -p2 makes them ggml's.
patch_args=(-p2 --include='src/ggml-cuda/*' --include='src/ggml-hip/*' "$ROOT/integrations/llama.cpp/roctx_roofline.patch")
git -C "$COPY" apply --reverse --check "${patch_args[@]}" 2>/dev/null || git -C "$COPY" apply "${patch_args[@]}"

PATH=$CUDA/bin:$VENV/bin:$PATH
cmake -S "$COPY" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a -DCMAKE_CUDA_COMPILER="$CUDA/bin/nvcc" -DCUDAToolkit_ROOT="$CUDA" \
  -DGGML_CUDA_FA=OFF -DGGML_CUDA_NCCL=OFF -DGGML_CUDA_NO_VMM=ON -DGGML_NATIVE=OFF \
  -DGGML_BUILD_TESTS=ON -DGGML_BUILD_EXAMPLES=OFF -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath-link,$CUDA/lib" \
  -DGGML_ROCTX_ROOFLINE=ON -DROCTX_UTILS_LIBRARY="$LIB/libroctx_utils_nvtx.so" >/dev/null
nice -n 5 ninja -C "$BUILD" -j"$(nproc)" test-backend-ops

# What the device needs, under their sonames (no links: the device copy takes plain files):
# the test and ggml's libraries; libroctx_utils_nvtx.so is .devbin's own.
out=$ROOT/.devbin/ggml
rm -rf "$out" && mkdir -p "$out" && install -m 0755 "$LIB/libroctx_utils_nvtx.so" "$ROOT/.devbin/"
cp "$BUILD/bin/test-backend-ops" "$out/"
for lib in "$BUILD"/src/libggml*.so "$BUILD"/src/ggml-cuda/libggml*.so; do
  cp -L "$lib" "$out/$(objdump -p "$lib" | awk '$1 == "SONAME" {print $2}')"
done
strip --strip-unneeded "$out"/*
du -sh "$out"
