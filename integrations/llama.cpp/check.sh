#!/usr/bin/env bash
# Checks whether roctx_roofline.patch applies to a llama.cpp checkout, without changing it.
#
#   integrations/llama.cpp/check.sh /path/to/llama.cpp
#
# Exit status: 0 if the patch applies cleanly, or is already applied; 1 if it does not apply;
# 2 on a usage error. Nothing in the checkout is modified.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
patch="$here/roctx_roofline.patch"

if [[ $# -ne 1 ]]; then
    echo "usage: $0 /path/to/llama.cpp" >&2
    exit 2
fi
root="$1"
if [[ ! -f "$root/ggml/src/ggml-cuda/ggml-cuda.cu" ]]; then
    echo "error: $root is not a llama.cpp checkout (no ggml/src/ggml-cuda/ggml-cuda.cu)" >&2
    exit 2
fi
cd "$root"

rev="(not a git checkout)"
if git rev-parse --show-toplevel >/dev/null 2>&1; then
    if [[ "$(git rev-parse --show-toplevel)" != "$(pwd -P)" ]]; then
        echo "error: $root is inside another git repository; pass the llama.cpp root" >&2
        exit 2
    fi
    rev="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
fi
echo "llama.cpp: $root @ $rev"
echo "patch:     $patch"

if out="$(git apply --check -v "$patch" 2>&1)"; then
    echo "$out" | sed 's/^/  /'
    echo "OK: the patch applies cleanly (git apply $patch)"
    exit 0
fi

if git apply --check --reverse "$patch" >/dev/null 2>&1; then
    echo "OK: the patch is already applied"
    exit 0
fi

echo "$out" | sed 's/^/  /'
echo "FAIL: the patch does not apply; the hunks named above need re-anchoring (see README.md, 'If the patch stops applying')."
failed="$(echo "$out" | sed -n 's/^error: patch failed: //p')"
if [[ -n "$failed" ]]; then
    echo "failed hunks (file:line in the patch's upstream):"
    echo "$failed" | sed 's/^/  /'
fi
exit 1
