#!/usr/bin/env bash
# Checks whether traceme_wrapper.patch applies to an openxla/xla checkout (or a fork), without changing it.
#
#   integrations/xla/check.sh /path/to/xla
#
# Exit status: 0 if the patch applies cleanly, or is already applied; 1 if it does not apply;
# 2 on a usage error. Nothing in the checkout is modified.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
patch="$here/traceme_wrapper.patch"

if [[ $# -ne 1 ]]; then
    echo "usage: $0 /path/to/xla" >&2
    exit 2
fi
root="$1"
if [[ ! -f "$root/xla/python/profiler.cc" ]]; then
    echo "error: $root is not an XLA checkout (no xla/python/profiler.cc)" >&2
    exit 2
fi
cd "$root"

rev="(not a git checkout)"
if git rev-parse --show-toplevel >/dev/null 2>&1; then
    if [[ "$(git rev-parse --show-toplevel)" != "$(pwd -P)" ]]; then
        echo "error: $root is inside another git repository; pass the XLA root" >&2
        exit 2
    fi
    rev="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
fi
echo "xla:       $root @ $rev"
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
