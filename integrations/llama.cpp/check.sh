#!/usr/bin/env bash
# Checks whether roctx_roofline.patch applies to a llama.cpp checkout, without changing it.
#
#   integrations/llama.cpp/check.sh /path/to/llama.cpp
#
# Exit status: 0 if the patch applies cleanly, or is already applied; 1 if it does not apply;
# 2 on a usage error. Nothing in the checkout is modified.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [[ $# -ne 1 ]]; then
    echo "usage: $0 /path/to/llama.cpp" >&2
    exit 2
fi
exec "$here/../check_patch.sh" llama.cpp "$here/roctx_roofline.patch" ggml/src/ggml-cuda/ggml-cuda.cu "$1"
