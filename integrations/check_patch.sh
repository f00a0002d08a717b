#!/usr/bin/env bash
# Checks whether one of our patches applies to a checkout of the project it is for, without
# changing it. Called by integrations/<project>/check.sh:
#
#   check_patch.sh PROJECT PATCH MARKER_FILE /path/to/checkout
#
# MARKER_FILE is a path every checkout of PROJECT has (how a wrong directory is told apart).
# Exit status: 0 if the patch applies cleanly, or is already applied; 1 if it does not apply;
# 2 on a usage error. Nothing in the checkout is modified.
set -euo pipefail

if [[ $# -ne 4 ]]; then
    echo "usage: $(basename "$0") PROJECT PATCH MARKER_FILE /path/to/checkout" >&2
    exit 2
fi
project="$1" patch="$2" marker="$3" root="$4"
if [[ ! -f "$root/$marker" ]]; then
    echo "error: $root is not a $project checkout (no $marker)" >&2
    exit 2
fi
cd "$root"

rev="(not a git checkout)"
if git rev-parse --show-toplevel >/dev/null 2>&1; then
    if [[ "$(git rev-parse --show-toplevel)" != "$(pwd -P)" ]]; then
        echo "error: $root is inside another git repository; pass the $project root" >&2
        exit 2
    fi
    rev="$(git rev-parse --verify -q HEAD || echo "(no commit)")"
fi
echo "$project: $root @ $rev"
echo "patch: $patch"

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
echo "FAIL: the patch does not apply; the hunks named above need re-anchoring (see README.md next to the patch)."
failed="$(echo "$out" | sed -n 's/^error: patch failed: //p')"
if [[ -n "$failed" ]]; then
    echo "failed hunks (file:line in the patch's upstream):"
    echo "$failed" | sed 's/^/  /'
fi
exit 1
