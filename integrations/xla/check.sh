#!/usr/bin/env bash
# Checks whether traceme_wrapper.patch applies to an openxla/xla checkout (or a fork), without
# changing it.
#
#   integrations/xla/check.sh /path/to/xla
#
# Exit status: 0 if the patch applies cleanly, or is already applied; 1 if it does not apply;
# 2 on a usage error. Nothing in the checkout is modified.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [[ $# -ne 1 ]]; then
    echo "usage: $0 /path/to/xla" >&2
    exit 2
fi
exec "$here/../check_patch.sh" xla "$here/traceme_wrapper.patch" xla/python/profiler.cc "$1"
