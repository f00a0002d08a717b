#!/usr/bin/env bash
# Tells an XLA fork's maintainer what roctx_utils needs in their tree, changing nothing in it.
#
#   integrations/xla/check.sh [--compat] /path/to/xla
#
# One line per check, then the details:
#   tree     which pinned tree (pinned_trees.tsv) the profiler files match, if any;
#   swap     which variant of the backend swap fits: nvtx_utils_impl.patch (today's layout,
#            openxla/xla main and ROCm/xla rocm-jaxlib-v0.9.2 to v0.11.1), or the by-hand
#            variant for the layout of openxla/xla#46935 (range_annotations_backend);
#   traceme  which TraceMeWrapper patch applies: traceme_wrapper.patch (the same trees), or
#            traceme_wrapper_d8a5b437.patch (older trees); or that one is already applied;
#   compat   (--compat) the tree's own nvtx_utils.h, scoped_annotation.h and AnnotationStack
#            compiled and linked against //:roctx_utils_impl, with a ScopedAnnotation round trip
#            into both the stack and roctx (//integrations/xla/tree_compat:tree_compat_test,
#            built here with Bazel 4 --config=rocm), and every function the tree's header
#            declares defined by the library.
#
# Exit status: 0 if every check passed (a swap variant and a TraceMeWrapper variant fit, and
# with --compat the tree compiles and links against the library); 1 if one did not; 2 on a
# usage error or a directory that is not an XLA tree.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
usage() { echo "usage: $0 [--compat] /path/to/xla" >&2; exit 2; }

compat=0
case "${1:-}" in
  --compat) compat=1; shift ;;
  -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
[[ $# -eq 1 ]] || usage
[[ -d "$1" ]] || { echo "error: $1 is not a directory" >&2; exit 2; }
root="$(cd "$1" && pwd -P)"

header=third_party/tsl/tsl/profiler/lib/nvtx_utils.h
build=third_party/tsl/tsl/profiler/lib/BUILD
profiler=xla/python/profiler.cc
if [[ ! -f "$root/$header" && ! -f "$root/$profiler" ]]; then
  echo "error: $root is not an XLA tree (neither $header nor $profiler)" >&2
  exit 2
fi

failed=0
declare -a details=()
say() {  # say CHECK STATUS TEXT: one summary line; FAIL makes the exit status 1
  printf '%-8s %-6s %s\n' "$1" "$2" "$3"
  [[ "$2" == FAIL ]] && failed=1
}

rev="(not a git checkout)"
if git -C "$root" rev-parse --show-toplevel >/dev/null 2>&1 &&
    [[ "$(git -C "$root" rev-parse --show-toplevel)" == "$root" ]]; then
  rev="$(git -C "$root" rev-parse --verify -q HEAD || echo "(no commit)")"
fi
echo "XLA tree: $root @ $rev"

# ---- tree: the pinned tree whose files this one has, blob for blob ----
best="" best_same=0 best_total=0 best_differ=""
while read -r name; do
  same=0 total=0 differ=""
  while IFS=$'\t' read -r tree origin path blob; do
    [[ "$tree" == "$name" ]] || continue
    total=$((total + 1))
    if [[ ! -f "$root/$path" ]]; then
      differ+=" $path(missing)"
    elif [[ "$(git hash-object "$root/$path")" == "$blob" ]]; then
      same=$((same + 1))
    else
      differ+=" $path"
    fi
  done < <(grep -v '^#' "$here/pinned_trees.tsv")
  if ((same > best_same)); then
    best=$name best_same=$same best_total=$total best_differ=$differ
    best_origin=$(awk -F'\t' -v t="$name" '$1 == t { print $2; exit }' "$here/pinned_trees.tsv")
  fi
done < <(grep -v '^#' "$here/pinned_trees.tsv" | cut -f1 | uniq)
if ((best_same > 0 && best_same == best_total)); then
  say tree OK "the profiler files are those of $best ($best_origin), checked with roctx_utils"
elif ((best_same > 0)); then
  say tree NOTE "closest pinned tree: $best ($best_origin), $best_same of $best_total files the same"
  details+=("tree: files that differ from $best:$best_differ")
else
  say tree NOTE "no pinned tree has these files (the checks below still apply)"
fi

# ---- patches: applies, already applied, or not ----
patch_state() {  # patch_state PATCH -> applies | applied | fails (git apply's words in $why)
  why=""
  if why=$(cd "$root" && git apply --check -v "$1" 2>&1); then
    echo applies
  elif (cd "$root" && git apply --check --reverse "$1" >/dev/null 2>&1); then
    echo applied
  else
    echo fails
  fi
}

# ---- swap ----
if [[ -f "$root/$build" ]] && grep -q 'range_annotations_backend' "$root/$build"; then
  say swap NOTE "openxla/xla#46935's layout (range_annotations_backend): swap by hand, README variant B"
elif [[ -f "$root/$build" ]] && grep -q '"roctx_utils.cc"' "$root/$build"; then
  say swap NOTE "openxla/xla#46935's first form (roctx_utils.cc): make nvtx_utils_impl the README's rule (step 2) by hand"
elif [[ -f "$root/$build" ]]; then
  state=$(patch_state "$here/nvtx_utils_impl.patch")
  case $state in
    applies) say swap OK "nvtx_utils_impl.patch applies: (cd $root && git apply $here/nvtx_utils_impl.patch)" ;;
    applied) say swap OK "nvtx_utils_impl.patch is already applied" ;;
    *) say swap FAIL "nvtx_utils_impl.patch does not apply: change nvtx_utils_impl in $build by hand (README, step 2)"
       details+=("swap: git apply says:" "$(sed 's/^/  /' <<<"$why")") ;;
  esac
else
  say swap FAIL "no $build: not today's layout (README, 'Using it from an XLA fork')"
fi

# ---- traceme ----
if [[ ! -f "$root/$profiler" ]]; then
  say traceme FAIL "no $profiler"
else
  found=""
  for variant in traceme_wrapper.patch traceme_wrapper_d8a5b437.patch; do
    state=$(patch_state "$here/$variant")
    if [[ $state == applies ]]; then
      found="$variant applies: (cd $root && git apply $here/$variant)"
      break
    elif [[ $state == applied ]]; then
      found="$variant is already applied"
      break
    fi
    details+=("traceme: $variant: git apply says:" "$(sed 's/^/  /' <<<"$why")")
  done
  if [[ -n "$found" ]]; then
    say traceme OK "$found"
  else
    say traceme FAIL "no variant applies: re-anchor the include and BUILD hunks (integrations/xla/README.md)"
  fi
fi

# ---- compat ----
# The function names a header declares at namespace scope (qualified, one a line): declarations
# ending in ';' whose text has a '('; inline and template definitions, types and usings are not
# declarations of functions the library must define.
declared_functions() {
  python3 - "$1" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
text = re.sub(r"//[^\n]*", " ", text)
text = re.sub(r"^\s*#[^\n]*", " ", text, flags=re.M)
names, scopes, stmt, body = set(), [], "", 0
for ch in text:
    if body:
        body += {"{": 1, "}": -1}.get(ch, 0)
        continue
    if ch == "{":
        m = re.match(r"\s*namespace\s+([\w:]*)\s*$", stmt)
        if m:
            scopes.append(m.group(1))
        elif re.match(r'\s*extern\s+"C"\s*$', stmt):
            scopes.append("")
        else:
            body = 1  # a function, class or struct body
        stmt = ""
    elif ch == "}":
        if scopes:
            scopes.pop()
        stmt = ""
    elif ch == ";":
        s = " ".join(stmt.split())
        stmt = ""
        if "(" in s and not re.match(r"(using|typedef|template|inline|return|static_assert|friend|struct|class|enum)\b", s):
            name = re.search(r"([A-Za-z_]\w*)\s*\(", s)
            if name:
                names.add("::".join([x for x in scopes if x] + [name.group(1)]))
    else:
        stmt += ch
print("\n".join(sorted(names)))
PY
}

if ((compat)); then
  bazel=${BAZEL:-bazel-4}
  log=$(mktemp)
  trap 'rm -f "$log"' EXIT
  flags=(--config=bazel4 --config=rocm "--repo_env=ROCTX_UTILS_XLA_TREE=$root"
         --//:annotation_stack=@xla_tree//:annotation_stack)
  target=//integrations/xla/tree_compat:tree_compat_test
  if ! command -v "$bazel" >/dev/null 2>&1; then
    say compat FAIL "no $bazel (bash scripts/test.sh installs Debian's Bazel 4.2.3)"
  elif (cd "$repo" && "$bazel" test "${flags[@]}" --test_output=all "$target") >"$log" 2>&1; then
    bin="$repo/bazel-bin/integrations/xla/tree_compat/tree_compat_test"
    defined=$(nm -C --defined-only "$bin" 2>/dev/null | sed -nE 's/^[0-9a-f]+ [TtWw] (tsl::profiler::[A-Za-z_:]*)\(.*/\1/p' | sort -u)
    missing=""
    while read -r name; do
      [[ -n "$name" ]] || continue
      grep -qxF "$name" <<<"$defined" || missing+=" $name"
    done < <(declared_functions "$root/$header")
    cases=$(grep -cE '^\[       OK \]' "$log")
    skipped=$(grep -cE '^\[  SKIPPED \] [A-Za-z].* \([0-9]+ ms\)$' "$log")
    if [[ -n "$missing" ]]; then
      say compat FAIL "the tree's nvtx_utils.h declares what roctx_utils does not define:$missing"
    else
      say compat OK "tree_compat_test: $cases passed, $skipped skipped; every function nvtx_utils.h declares is defined"
    fi
    details+=("compat: tree_compat_test's cases:" "$(grep -E '^\[ +(OK|SKIPPED) +\] [A-Za-z].* \([0-9]+ ms\)$' "$log" | sed 's/^/  /')")
  else
    say compat FAIL "the tree's headers do not compile, link or pass against roctx_utils"
    details+=("compat: bazel test $target says:" "$(grep -E 'error|Error|FAILED|undefined reference|Expected|Which is|Failure' "$log" | head -n 40 | sed 's/^/  /')")
  fi
fi

for line in "${details[@]}"; do
  [[ -n "$line" ]] && echo "$line"
done
exit "$failed"
