#!/usr/bin/env bash
# Writes the files check.sh reads from one revision of an XLA git repository into DEST, without
# a checkout: for a bare clone or a mirror, or to keep a few revisions side by side for the test
# command's "XLA trees" section (${ROCTX_UTILS_CACHE:-~/.cache/roctx_utils}/xla_trees/NAME).
#
#   integrations/xla/extract_tree.sh GIT_DIR REVISION DEST
#
# e.g. extract_tree.sh ~/src/rocm-xla/.git origin/rocm-jaxlib-v0.10.1 ~/.cache/roctx_utils/xla_trees/rocm-jaxlib-v0.10.1
# DEST/REVISION records the commit. Exit status: 0 on success, 1 if a file is missing at that
# revision, 2 on a usage error.
set -euo pipefail

if [[ $# -ne 3 ]]; then
  echo "usage: $0 GIT_DIR REVISION DEST" >&2
  exit 2
fi
git_dir=$1 rev=$2 dest=$3
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
commit=$(git --git-dir="$git_dir" rev-parse --verify -q "$rev^{commit}") ||
  { echo "error: no revision $rev in $git_dir" >&2; exit 2; }

status=0
while read -r path; do
  mkdir -p "$dest/$(dirname "$path")"
  if ! git --git-dir="$git_dir" show "$commit:$path" >"$dest/$path" 2>/dev/null; then
    echo "error: $rev has no $path" >&2
    rm -f "$dest/$path"
    status=1
  fi
done < <(grep -v '^#' "$here/pinned_trees.tsv" | cut -f3 | sort -u)
echo "$commit" >"$dest/REVISION"
echo "$dest: $rev = $commit"
exit "$status"
