#!/usr/bin/env bash
# Tests check.sh and the agreement of the swap's three copies, with what a clean clone has (the
# test command runs it; no XLA checkout is needed). The trees check.sh reads here are made of our
# own files: the example fork's nvtx_utils.h (it declares what upstream's does), the bundled
# scoped_annotation.h and AnnotationStack (compat/), and the pinned d8a5b437 lines of
# upstream/. The real trees are checked by check.sh itself wherever one exists.
#
#   integrations/xla/check_test.sh     ends with "xla check: N passed, M failed"
#
# Needs bazel-4 and the --config=rocm build of the test command (each --compat case builds
# //integrations/xla/tree_compat:tree_compat_test against its tree).
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0

check() {  # check DESCRIPTION CONDITION...
  local what=$1
  shift
  if "$@"; then
    passed=$((passed + 1))
    echo "PASS $what"
  else
    failed=$((failed + 1))
    echo "FAIL $what"
  fi
}
has_line() { grep -qE "$1" "$2"; }

# run_check NAME [--compat] TREE: check.sh's output in $work/NAME.out, its exit status in rc_NAME.
run_check() {
  local name=$1
  shift
  bash "$here/check.sh" "$@" >"$work/$name.out" 2>&1
  printf -v "rc_$name" '%d' $?
  sed 's/^/    /' "$work/$name.out"
}

# A tree of today's layout built from our own files.
make_tree() {  # make_tree DIR
  local d=$1
  mkdir -p "$d/third_party/tsl/tsl/profiler/lib" "$d/xla/tsl/profiler/backends/cpu"
  cp "$repo/examples/xla_fork/third_party/tsl/tsl/profiler/lib/nvtx_utils.h" \
    "$repo/compat/tsl/profiler/lib/scoped_annotation.h" "$d/third_party/tsl/tsl/profiler/lib/"
  cp "$repo/compat/xla/tsl/profiler/backends/cpu/annotation_stack.h" \
    "$repo/compat/xla/tsl/profiler/backends/cpu/annotation_stack.cc" "$d/xla/tsl/profiler/backends/cpu/"
}

echo "==> usage errors"
bash "$here/check.sh" >/dev/null 2>&1
check "no argument: exit 2" test $? -eq 2
mkdir -p "$work/empty"
bash "$here/check.sh" "$work/empty" >/dev/null 2>&1
check "a directory that is no XLA tree: exit 2" test $? -eq 2

echo "==> a tree of today's layout (our files): the headers compile and link against roctx_utils"
make_tree "$work/ours"
run_check ours --compat "$work/ours"
check "compat OK" has_line '^compat +OK +tree_compat_test: 4 passed, 0 skipped' "$work/ours.out"
check "no pinned tree has these files" has_line '^tree +NOTE +no pinned tree' "$work/ours.out"
check "swap FAIL without TSL's BUILD" has_line '^swap +FAIL +no third_party/tsl/tsl/profiler/lib/BUILD' "$work/ours.out"
check "traceme FAIL without profiler.cc" has_line '^traceme +FAIL +no xla/python/profiler.cc' "$work/ours.out"
check "exit 1 when a check fails" test "$rc_ours" -eq 1

echo "==> a header that changed a signature: the link fails"
make_tree "$work/signature"
sed -i 's/void NameDevice(int device_id, const std::string& device_name);/void NameDevice(int device_id, const char* device_name);/' \
  "$work/signature/third_party/tsl/tsl/profiler/lib/nvtx_utils.h"
check "the mutation took" grep -q 'const char\* device_name' "$work/signature/third_party/tsl/tsl/profiler/lib/nvtx_utils.h"
run_check signature --compat "$work/signature"
check "compat FAIL" has_line '^compat +FAIL +the tree.s headers do not compile, link or pass' "$work/signature.out"
check "the undefined NameDevice is named" has_line 'undefined reference to .tsl::profiler::NameDevice\(int, char const\*\)' "$work/signature.out"

echo "==> a header that declares a function the library lacks"
make_tree "$work/extra"
sed -i 's|^void RangePop(ProfilerDomainHandle domain);|&\nvoid RangeMark(ProfilerDomainHandle domain, const char* message);|' \
  "$work/extra/third_party/tsl/tsl/profiler/lib/nvtx_utils.h"
check "the mutation took" grep -q 'RangeMark' "$work/extra/third_party/tsl/tsl/profiler/lib/nvtx_utils.h"
run_check extra --compat "$work/extra"
check "compat FAIL naming RangeMark" has_line '^compat +FAIL .*does not define: tsl::profiler::RangeMark$' "$work/extra.out"

echo "==> the pinned d8a5b437 lines: the older TraceMeWrapper variant"
mkdir -p "$work/older/xla/python"
cp "$here/upstream/profiler.cc.head" "$work/older/xla/python/profiler.cc"
cp "$here/upstream/BUILD.profiler_excerpt" "$work/older/xla/python/BUILD"
run_check older "$work/older"
check "traceme OK with traceme_wrapper_d8a5b437.patch" \
  has_line '^traceme +OK +traceme_wrapper_d8a5b437.patch applies' "$work/older.out"
check "today's variant is tried first and said not to apply" \
  has_line '^traceme: traceme_wrapper.patch: git apply says:' "$work/older.out"
(cd "$work/older" && git apply "$here/traceme_wrapper_d8a5b437.patch")
run_check older_applied "$work/older"
check "then: already applied" has_line '^traceme +OK +traceme_wrapper_d8a5b437.patch is already applied' \
  "$work/older_applied.out"
check "nothing in the tree changed but what git apply did" \
  test -z "$(cd "$work/older" && ls -A | grep -v '^xla$')"

echo "==> the swap's three copies agree: nvtx_utils_impl.patch, the README, examples/xla_fork"
# The nvtx_utils_impl rule as the patch leaves it (its second hunk's new side), as the fork's
# BUILD in the example has it, and as the README shows it.
awk '/^@@/ { n++ } n == 2 && /^[ +]/ { print substr($0, 2) }' "$here/nvtx_utils_impl.patch" |
  sed -n '/name = "nvtx_utils_impl"/,/^)/p' >"$work/rule.patch"
sed -n '/name = "nvtx_utils_impl"/,/^)/p' \
  "$repo/examples/xla_fork/third_party/tsl/tsl/profiler/lib/BUILD" >"$work/rule.example"
sed -n '/^    name = "nvtx_utils_impl",$/,/^)$/p' "$repo/README.md" | sed -n '1,/^)$/p' >"$work/rule.readme"
check "the patch's rule is not empty" grep -q 'roctx_utils_impl' "$work/rule.patch"
check "examples/xla_fork has the patch's rule" cmp -s "$work/rule.patch" "$work/rule.example"
check "the README has the patch's rule" cmp -s "$work/rule.patch" "$work/rule.readme"
load='load("@local_config_rocm//rocm:build_defs.bzl", "if_rocm_is_configured")'
check "the patch adds the load" grep -qxF "+$load" "$here/nvtx_utils_impl.patch"
check "examples/xla_fork has the load" grep -qxF "$load" "$repo/examples/xla_fork/third_party/tsl/tsl/profiler/lib/BUILD"
check "the README has the load" grep -qxF "$load" "$repo/README.md"

echo "xla check: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
