#!/bin/bash
# The project's one test command (CI runs it through .ci/run).
#
#   1. installs the Debian packages the offline Bazel 4.2.3 build needs (and valgrind for 3),
#      only if one is missing;
#   2. cargo test --locked in rust/ (the Rust workspace, including the layering check
#      rust/roctx_utils/tests/layers.rs and the README environment-table check), then
#      cargo clippy on every target with -D warnings and clippy::undocumented_unsafe_blocks;
#   3. every workspace crate's unit-test binary (cargo test --lib) under valgrind memcheck: the
#      Rust code is not instrumented by the Bazel sanitizer builds of 6 (docs/sanitizers.md);
#   4. bazel-4 test //... with --config=rocm (Rust implementation);
#   5. the real XProf consumer (tests/xprof/check_xprof.py, xprof from PyPI in a cached venv)
#      on what //examples:xla_style_host writes with ROCTX_UTILS_XSPACE_OUT, and on a merged
#      XLA-like fixture (rust/roctx_export/examples/xprof_fixture.rs) plus its negative control,
#      and op scopes in XProf's Roofline Model against `roctx roofline` (check_op_scopes.py);
#   5b. a real NVTX3 client (tests/nvtx/real_client.cc, NVIDIA's header-only loader from PyPI
#      nvidia-nvtx) loading //nvtx:libroctx_utils_nvtx.so through NVTX_INJECTION64_PATH;
#   5c. the Python package (python/): pip install ./python with jax[cpu] in the same venv, its
#      unit tests against that library, and an annotated JAX script (explicitly hooked, then
#      with ROCTX_UTILS_PYTHON_HOOKS=1) read back through XProf; the XLA fork's TraceMeWrapper
#      patch (//cc_tests:traceme_wrapper_test: the class it makes, on the pinned d8a5b437 lines);
#   5d. the release tarball (scripts/release.sh) unpacked into a fresh directory, and its
#      `roctx record -- COMMAND` against stock hosts on the fake rocprofiler-sdk (each record
#      layout) and the fake CUPTI, read back through XProf (tests/record/check_record.sh); CPU-only
#      recording; the binary wheel installed into a fresh venv, recording through its `roctx`;
#   5e. `roctx stats` of the files of 5a and 5d against XProf's own kernel_stats
#      (tests/xprof/check_stats.py);
#   5f. the XLA fork integration: integrations/xla/check_test.sh, then check.sh --compat on each
#      real XLA tree under ~/.cache/roctx_utils/xla_trees (skipped, and said, when there is none);
#   6. sanitizers (docs/sanitizers.md): bazel-4 test //... --config=rocm --config=asan
#      (AddressSanitizer + UndefinedBehaviorSanitizer, leaks included), then --config=tsan
#      (ThreadSanitizer), in the same output base as 4 and 7;
#   7. bazel-4 test //... without --config=rocm (stub; the rocm-only tests are SKIPPED there; this
#      rebuilds bazel-bin/examples/xla_style_host as the stub, hence after 5);
#   8. the consumer workspace examples/xla_fork (an XLA fork taking @roctx_utils as the README
#      says), bazel-4 test //... with and without --config=rocm; then both Bazel servers shut down.
#
# The CI harness cannot read Bazel's "Executed N out of M tests" summary, so this script counts
# test *cases* itself and ends with exactly one line "N passed, M failed". Bazel cases come from
# each test target's googletest XML (bazel-testlogs/<pkg>/<target>/test.xml), read right after
# the run that produced it: the rocm and stub configurations write to the same testlogs
# directory, so the second run overwrites the first one's files (asan and tsan have their own,
# bazel-out/k8-fastbuild{asan,tsan}/testlogs, which bazel-testlogs points at after their runs).
#
# Works as root on a fresh Debian 12 machine with only rustup (in ~/.cargo/bin) and python3.
# Exit status: non-zero if any case failed or if nothing at all was counted.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD

# shellcheck source=scripts/setup_env.sh
source scripts/setup_env.sh

TMPDIR_TESTS=$(mktemp -d)
trap 'rm -rf "$TMPDIR_TESTS"' EXIT

total_passed=0
total_failed=0
SUMMARY=()  # one line per section, printed at the end

record() {  # record SECTION PASSED FAILED [NOTE]
  total_passed=$((total_passed + $2))
  total_failed=$((total_failed + $3))
  SUMMARY+=("$(printf '%-28s %5d passed, %5d failed%s' "$1:" "$2" "$3" "${4:+  ($4)}")")
}

# Records LOG's last "PREFIX: N passed, M failed" line under SECTION; RC is the exit status of
# WHAT, which wrote LOG, named in the failure when no such line came.
record_result() {  # record_result SECTION LOG PREFIX RC WHAT
  local p f
  read -r p f < <(sed -nE "s/^$3: ([0-9]+) passed, ([0-9]+) failed\$/\\1 \\2/p" "$2" | tail -n 1)
  if [ -z "$p" ]; then
    record "$1" 0 1 "$5 exited $4 without a result line"
  else
    record "$1" "$p" "$f"
  fi
}

finish() {
  echo
  echo "==================== summary ===================="
  local line
  for line in "${SUMMARY[@]}"; do echo "$line"; done
  echo "================================================="
  echo "$total_passed passed, $total_failed failed"
  if [ "$total_failed" -gt 0 ]; then exit 1; fi
  if [ $((total_passed + total_failed)) -eq 0 ]; then
    echo "error: no test cases were counted" >&2
    exit 1
  fi
  exit 0
}

# ---------------------------------------------------------------------------------------------
# 1. Packages: apt only when something is missing, so reruns stay offline and fast.
# ---------------------------------------------------------------------------------------------
APT_PACKAGES+=(valgrind)  # for run_valgrind only, so not in setup_env.sh (demo.sh needs none)
if ! ensure_packages; then
  echo "error: apt-get install failed; cannot build or test" >&2
  record "setup (apt)" 0 1 "apt-get failed"
  finish
fi

# ---------------------------------------------------------------------------------------------
# 2. cargo test: sum every "test result: <ok|FAILED>. N passed; M failed" line (unit tests,
#    integration tests and doc-tests each print one).
# ---------------------------------------------------------------------------------------------
run_cargo() {
  local log=$TMPDIR_TESTS/cargo.log rc p=0 f=0 np nf note=""
  echo
  echo "==> (cd rust && cargo test --locked)"
  (cd rust && cargo test --locked) 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  while read -r np nf; do
    p=$((p + np))
    f=$((f + nf))
  done < <(sed -e 's/\x1b\[[0-9;]*m//g' "$log" |
    sed -nE 's/^test result: [A-Za-z]+\. ([0-9]+) passed; ([0-9]+) failed.*/\1 \2/p')
  # A build error, a crashed test binary or a --locked mismatch prints no failing result line,
  # but must still fail the run.
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    f=1
    note="cargo exited $rc with no failing result line"
  fi
  record "cargo test (rust/)" "$p" "$f" "$note"
  if grep -q '^test no_layer_refers_to_one_above_it_and_there_is_no_cycle \.\.\. ok' "$log"; then
    SUMMARY+=("  (includes the layering check: no upward or sideways import, no cycle)")
  fi
}

# ---------------------------------------------------------------------------------------------
# 2b. clippy: one case, failed on any warning (undocumented unsafe blocks included).
# ---------------------------------------------------------------------------------------------
run_clippy() {
  local log=$TMPDIR_TESTS/clippy.log rc
  echo
  if ! cargo clippy --version >/dev/null 2>&1 && ! rustup component add clippy; then
    record "cargo clippy (rust/)" 0 1 "no clippy: 'rustup component add clippy' failed"
    return
  fi
  echo "==> (cd rust && cargo clippy --locked --workspace --all-targets -- -D warnings -D clippy::undocumented_unsafe_blocks)"
  (cd rust && cargo clippy --locked --workspace --all-targets -- -D warnings -D clippy::undocumented_unsafe_blocks) 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  if [ "$rc" -eq 0 ]; then
    record "cargo clippy (rust/)" 1 0
  else
    record "cargo clippy (rust/)" 0 1 "clippy exited $rc: $(grep -c '^error' "$log") error(s)"
  fi
}

# ---------------------------------------------------------------------------------------------
# 2c. valgrind: every workspace crate's unit-test binary under memcheck, for the Rust code that
#     the Bazel sanitizer builds (3c) link uninstrumented. Cases from each binary's "test result"
#     line, as in 2; a memory error or a definite leak fails that binary (docs/sanitizers.md).
# ---------------------------------------------------------------------------------------------
VALGRIND_FLAGS=(-q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite
  --show-leak-kinds=definite)

run_valgrind() {
  local section="valgrind (rust unit tests)" dir=$TMPDIR_TESTS/valgrind list log rc
  local bin pkg name p=0 f=0 np nf notes=()
  mkdir -p "$dir"
  echo
  if ! command -v valgrind >/dev/null 2>&1; then
    record "$section" 0 1 "valgrind is not installed"
    return
  fi
  echo "==> (cd rust && cargo test --locked --workspace --lib --no-run); each binary under valgrind ${VALGRIND_FLAGS[*]}"
  # The binaries `cargo test` of 2 already built: "<executable> <package dir>" per library crate.
  if ! list=$( (cd rust && cargo test --locked --workspace --lib --no-run --message-format=json) |
    python3 -c '
import json, os, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["executable"], os.path.dirname(m["manifest_path"]))
'); then
    record "$section" 0 1 "cargo test --no-run failed"
    return
  fi
  if [ -z "$list" ]; then
    record "$section" 0 1 "no unit-test binaries found"
    return
  fi
  while read -r bin pkg; do
    name=$(basename "$pkg")
    log=$dir/$name.log
    echo "--> $name: valgrind ${bin#"$ROOT"/}"
    # Like cargo: run from the package directory, with CARGO_MANIFEST_DIR set.
    (cd "$pkg" && CARGO_MANIFEST_DIR=$pkg valgrind "${VALGRIND_FLAGS[@]}" "$bin") >"$log" 2>&1
    rc=$?
    grep -vE '^test .* \.\.\. ok$|^$' "$log" | sed 's/^/    /'
    read -r np nf < <(sed -nE 's/^test result: [A-Za-z]+\. ([0-9]+) passed; ([0-9]+) failed.*/\1 \2/p' "$log" | tail -n 1)
    np=${np:-0}
    nf=${nf:-0}
    if [ "$rc" -eq 99 ]; then
      nf=$((nf + 1))
      notes+=("$name: memcheck errors")
    elif [ "$rc" -ne 0 ] && [ "$nf" -eq 0 ]; then
      nf=1
      notes+=("$name: exited $rc with no failing result line")
    fi
    p=$((p + np))
    f=$((f + nf))
  done <<<"$list"
  record "$section" "$p" "$f" "$(IFS=';'; echo "${notes[*]}")"
}

# ---------------------------------------------------------------------------------------------
# 3. bazel test: per test case, from each reported target's test.xml.
# ---------------------------------------------------------------------------------------------
# Reads a bazel test log, prints one line per test target and finally "COUNTS <passed> <failed>".
# Args: LOG TESTLOGS_DIR START_EPOCH BAZEL_RC
count_bazel_cases() {
  python3 - "$@" <<'PY'
import glob
import os
import re
import sys
import xml.etree.ElementTree as ET

log_path, testlogs, start, rc = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# "//pkg:target   (cached) PASSED in 0.1s", "//pkg:t  FAILED TO BUILD", "//pkg:t  NO STATUS",
# "//pkg:t  FLAKY, failed in 1 out of 2 in 0.2s", "//pkg:t  SKIPPED", "@repo//pkg:t ...".
RESULT = re.compile(
    r"^((?:@[^/\s]*)?//[^\s:]*:\S+)\s+(\(cached\)\s+)?([A-Z][A-Z ]*[A-Z])(?=[\s,]|$)")
RAN_OK = {"PASSED", "FLAKY"}          # the test ran and (finally) passed: count from XML
RAN_FAILED = {"FAILED", "TIMEOUT"}    # the test ran and failed: count from XML, at least 1
NOT_COUNTED = {"SKIPPED"}             # incompatible with this configuration
# Anything else (FAILED TO BUILD, NO STATUS, INCOMPLETE, REMOTE FAILURE, ...) did not run in
# this invocation, so any XML on disk is stale: 1 failure.

results = {}
with open(log_path, errors="replace") as f:
    for raw in f:
        m = RESULT.match(ANSI.sub("", raw.rstrip("\n")))
        if m:
            results[m.group(1)] = (m.group(3), bool(m.group(2)))


def target_dir(label):
    repo, _, rest = label.partition("//")
    pkg, _, name = rest.partition(":")
    parts = (["external", repo.lstrip("@")] if repo else []) + ([pkg] if pkg else []) + [name]
    return os.path.join(testlogs, *parts)


def xml_files(directory):
    # Unsharded: test.xml; sharded / --runs_per_test: shard_*/test.xml, run_*/shard_*/test.xml.
    top = os.path.join(directory, "test.xml")
    if os.path.isfile(top):
        return [top]
    return sorted(glob.glob(os.path.join(directory, "*", "test.xml")) +
                  glob.glob(os.path.join(directory, "*", "*", "test.xml")))


def attr(element, name):
    value = element.get(name)
    return int(value) if value is not None and value.strip().isdigit() else None


def xml_counts(path):
    """(passed, failed, not_run) from a googletest (or Bazel fallback) JUnit XML."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")

    def total(name):
        # googletest puts tests/failures/errors/disabled on <testsuites>; "skipped" only on each
        # <testsuite>. Bazel's fallback XML (test exited without writing one) has a bare
        # <testsuites> root; then the suites are summed.
        value = attr(root, name)
        if value is None:
            value = sum(attr(s, name) or 0 for s in suites)
        return value

    tests, failures, errors = total("tests"), total("failures"), total("errors")
    not_run = total("disabled") + total("skipped")  # counted in "tests", but never passed
    failed = failures + errors
    return max(tests - failed - not_run, 0), failed, not_run


passed = failed = 0
for label in sorted(results):
    status, cached = results[label]
    note = ""
    if status in NOT_COUNTED:
        p = f = 0
        note = "not counted"
    elif status in RAN_OK or status in RAN_FAILED:
        p = f = n = 0
        usable = False
        for path in xml_files(target_dir(label)):
            # A result that was not "(cached)" ran now; an older XML belongs to another run.
            if not cached and os.path.getmtime(path) < start - 2:
                note = "stale XML ignored"
                continue
            try:
                xp, xf, xn = xml_counts(path)
            except (ET.ParseError, OSError) as e:
                note = "unreadable XML (%s)" % e
                continue
            p, f, n, usable = p + xp, f + xf, n + xn, True
        if not usable:
            # No XML to count cases from: the target counts as a single case.
            p, f = (1, 0) if status in RAN_OK else (0, 1)
            note = (note + "; " if note else "") + "no usable test.xml, counted as 1 case"
        elif status in RAN_FAILED and f == 0:
            # E.g. a crash after googletest wrote a clean XML: the target still failed.
            f = 1
            note = "target failed but XML shows no failing case: counted 1 failure"
        elif n:
            note = "%d disabled/skipped case(s) not counted" % n
    else:
        p, f = 0, 1
        note = "did not run: counted as 1 failure"
    passed += p
    failed += f
    print("  %-55s %-16s %4d passed, %4d failed%s" % (
        label, ("(cached) " if cached else "") + status, p, f, "  [%s]" % note if note else ""))

# rc 0: all passed; 3: some tests failed; 4: no test targets. Anything else (1: build or
# analysis error, 2: bad command line, 8: interrupted, ...) fails the run even without lines.
if rc not in (0, 3, 4) and not any(
        s not in RAN_OK and s not in NOT_COUNTED for s, _ in results.values()):
    failed += 1
    print("  bazel exited %d without a failing result line: counted as 1 failure" % rc)
if not results:
    print("  (no per-target result lines in this run)")
print("COUNTS %d %d" % (passed, failed))
PY
}

run_bazel() {  # run_bazel SECTION_NAME EXTRA_FLAGS...   (in this workspace)
  run_bazel_in "$ROOT" "$@"
}

run_bazel_in() {  # run_bazel_in WORKSPACE_DIR SECTION_NAME EXTRA_FLAGS...
  local ws=$1 section=$2
  shift 2
  local log=$TMPDIR_TESTS/bazel.log rc start out p f testlogs
  echo
  echo "==> (cd ${ws#"$ROOT"/} && $BAZEL test //... --config=bazel4 $*)"
  start=$(date +%s)
  (cd "$ws" && "$BAZEL" test //... --config=bazel4 "$@") 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}

  testlogs=$ws/bazel-testlogs
  if [ ! -d "$testlogs" ]; then
    testlogs=$(cd "$ws" && "$BAZEL" info bazel-testlogs --config=bazel4 "$@" 2>/dev/null) || testlogs=$ws/bazel-testlogs
  fi

  echo
  echo "--- $section: cases per target (bazel exit code $rc) ---"
  if ! out=$(count_bazel_cases "$log" "$testlogs" "$start" "$rc"); then
    echo "error: could not count the bazel results" >&2
    record "$section" 0 1 "result parser failed"
    return
  fi
  printf '%s\n' "$out" | grep -v '^COUNTS '
  read -r _ p f <<<"$(printf '%s\n' "$out" | grep '^COUNTS ' | tail -n 1)"
  record "$section" "${p:-0}" "${f:-1}" "bazel exit code $rc"
}

# ---------------------------------------------------------------------------------------------
# 3c. Sanitizers (docs/sanitizers.md): //... again with the Rust implementation and every C/C++
#     target Bazel compiles instrumented, first with ASan+UBSan (--config=asan), then with TSan
#     (--config=tsan); a sanitizer report fails its test. Same output base and flags as 3; each
#     config has its own output directory (--platform_suffix in .bazelrc), so neither overwrites
#     the plain build and a rerun finds all three cached. Nothing is excluded.
# ---------------------------------------------------------------------------------------------
run_sanitizers() {
  run_bazel "bazel test (rocm, asan)" --config=rocm --config=asan
  run_bazel "bazel test (rocm, tsan)" --config=rocm --config=tsan
}

# ---------------------------------------------------------------------------------------------
# 3b. A consumer: examples/xla_fork is an XLA fork's workspace of its own that takes
#     @roctx_utils through the README's three WORKSPACE lines, swaps its nvtx_utils_impl with a
#     select() and points --@roctx_utils//:annotation_stack at its own AnnotationStack. With
#     --config=rocm its test checks that ranges land in that stack and in roctx; without, its
#     stub test runs and the rest still builds. Then its Bazel server is shut down.
# ---------------------------------------------------------------------------------------------
run_consumer() {
  local ws=$ROOT/examples/xla_fork
  run_bazel_in "$ws" "consumer xla_fork --config=rocm" --config=rocm
  run_bazel_in "$ws" "consumer xla_fork (stub)"
  (cd "$ws" && "$BAZEL" shutdown)
}

# ---------------------------------------------------------------------------------------------
# The Python package (python/): `pip install ./python` into the xprof venv with jax[cpu], its
# unit tests against the real library, and a user's annotated script, explicitly hooked and with
# zero code (ROCTX_UTILS_PYTHON_HOOKS=1), read back through XProf's reader.
# ---------------------------------------------------------------------------------------------
run_python() {
  local dir=$TMPDIR_TESTS/python lib=$ROOT/bazel-bin/nvtx/libroctx_utils_nvtx.so log mode
  mkdir -p "$dir"
  echo
  echo "==> python package: pip install ./python (+ jax[cpu]==$JAX_CPU_VERSION) into $XPROF_VENV"
  if ! ensure_jax_cpu || ! "$XPROF_VENV/bin/python" -m pip install -q --force-reinstall --no-deps ./python; then
    record "python: install" 0 1 "pip could not install jax[cpu] or ./python (see above)"
    return
  fi
  if [ ! -f "$lib" ]; then
    record "python: install" 0 1 "no $lib (the NVTX section builds it)"
    return
  fi
  record "python: install" 1 0
  # Twice: on the compiled fast path `pip install` built (issue 44), then on the pure-Python
  # fallback; each run checks it took the path it was told to.
  local path pure
  for path in compiled python; do
    log=$dir/unit_$path.log
    pure=0
    [ "$path" = python ] && pure=1
    (cd python/tests && env -u ROCTX_UTILS_CAPTURE -u ROCTX_UTILS_PYTHON_HOOKS ROCTX_UTILS_TEST_LIBRARY="$lib" \
      ROCTX_UTILS_PYTHON_PURE=$pure ROCTX_UTILS_TEST_PATH=$path "$XPROF_VENV/bin/python" test_roctx_utils.py) 2>&1 | tee "$log"
    record_result "python: unit tests ($path)" "$log" "python package" "${PIPESTATUS[0]}" test_roctx_utils.py
  done
  for mode in explicit zero-code; do
    local hooks=0
    [ "$mode" = zero-code ] && hooks=1
    echo "==> ROCTX_UTILS_PYTHON_HOOKS=$hooks ROCTX_UTILS_LIBRARY=$lib python python/tests/annotated_script.py $mode"
    rm -rf "$dir/logs_$mode"
    if ! env -u ROCTX_UTILS_CAPTURE ROCTX_UTILS_PYTHON_HOOKS=$hooks ROCTX_UTILS_LIBRARY="$lib" \
        ROCTX_UTILS_XSPACE_OUT="$dir/logs_$mode" JAX_PLATFORMS=cpu \
        "$XPROF_VENV/bin/python" python/tests/annotated_script.py "$mode" 2>&1 | tee "$dir/script_$mode.log" ||
        ! grep -q '^annotated_script: ok' "$dir/script_$mode.log"; then
      record "python: script ($mode)" 0 1 "annotated_script.py $mode failed"
      continue
    fi
    run_check_xprof "python: script ($mode)" "$dir/check_$mode.log" "$dir/logs_$mode" \
      --roctx-rows 3 \
      --nest 'user_step_0>inner' --nest 'user_step_1>inner' --nest 'train 3>forward' \
      --count 'user_step_0=1' --count 'train 3=1' --count 'tagged#batch=4,flag=1#=1' \
      --count 'no_with=1' --top 'no_with' --top 'after_no_with' \
      --count 'raises=1' --top 'after_error' \
      --count 'gen_step=4' --count 'fetch=4' --top 'fetch' \
      --count 'worker_0=1' --count 'worker_1=1' --mark done
  done
}

# ---------------------------------------------------------------------------------------------
# 4. The real consumer: XProf (PyPI `xprof`) renders our XSpaces; check_xprof.py checks the rows.
# ---------------------------------------------------------------------------------------------
# Runs check_xprof.py and records its "xprof consumer: N passed, M failed" line.
# Args: SECTION LOG CHECK_XPROF_ARGS...
run_check_xprof() {
  local section=$1 log=$2 rc p f
  shift 2
  "$XPROF_VENV/bin/python" tests/xprof/check_xprof.py "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  read -r p f < <(sed -nE 's/^xprof consumer: ([0-9]+) passed, ([0-9]+) failed$/\1 \2/p' "$log" | tail -n 1)
  p=${p:-0}
  f=${f:-0}
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    record "$section" "$p" 1 "check_xprof.py exited $rc with no failed check"
  else
    record "$section" "$p" "$f"
  fi
}

run_xprof() {
  local dir=$TMPDIR_TESTS/xprof start log rc
  mkdir -p "$dir"
  echo
  echo "==> xprof consumer: $XPROF_VENV"
  start=$(date +%s)
  if ! ensure_xprof_venv; then
    record "xprof: setup" 0 1 "no xprof==$XPROF_VERSION venv (venv or pip failed, see above)"
    return
  fi
  echo "    (venv ready in $(($(date +%s) - start))s)"

  # (a) The example host (Rust backend) writes its ROCTX ranges as a log directory at exit.
  echo
  echo "==> $BAZEL build //examples:xla_style_host --config=bazel4 --config=rocm"
  log=$dir/host.log
  if ! "$BAZEL" build //examples:xla_style_host --config=bazel4 --config=rocm; then
    record "xprof: xla_style_host" 0 1 "bazel build failed"
  else
    echo "==> XLA_ROCM_ENABLE_ROCTX=1 ROCTX_UTILS_XSPACE_OUT=$dir/host_logs bazel-bin/examples/xla_style_host"
    env -u ROCTX_UTILS_CAPTURE XLA_ROCM_ENABLE_ROCTX=1 ROCTX_UTILS_XSPACE_OUT="$dir/host_logs" \
      "$ROOT/bazel-bin/examples/xla_style_host" >"$log" 2>&1
    rc=$?
    if [ "$rc" -ne 0 ] || ! grep -q '^backend: Rust' "$log"; then
      cat "$log"
      record "xprof: xla_style_host" 0 1 "the example exited $rc or is not the Rust backend"
    else
      run_check_xprof "xprof: xla_style_host" "$dir/check_host.log" "$dir/host_logs" \
        --roctx-rows 3 \
        --row '^Host Threads/[0-9]+/ROCTX \(xla_gpu_exec_0\)$' \
        --row '^Host Threads/[0-9]+/ROCTX \(xla_gpu_exec_1\)$' \
        --row '^Host Threads/[0-9]+/ROCTX \(xla_gpu_exec_2\)$' \
        --nest 'jit_train_step>Thunk:#hlo_op=fusion.3,unique_hlo_op_id=7#>loop_fusion_3_kernel>host_callback' \
        --nest 'jit_train_step>Thunk:#hlo_op=custom-call.1,unique_hlo_op_id=12#>gemm_custom_call_1>host_callback' \
        --nest 'jit_train_step>Thunk:#hlo_op=all-reduce.5,unique_hlo_op_id=21#>all_reduce_5_kernel>host_callback' \
        --nest-all 'jit_train_step>host_callback'
    fi
  fi

  # (b) XLA-like capture (thread lines with the ROCTX tids as ids, a colliding NVTX plane)
  #     merged with our ROCTX output: every line must stay its own row.
  echo
  echo "==> (cd rust && cargo run --release --locked -p roctx_export --example xprof_fixture)"
  if ! (cd rust && cargo run --release --locked -q -p roctx_export --example xprof_fixture -- "$dir/fixture"); then
    record "xprof: merged fixture" 0 1 "xprof_fixture failed"
  else
    run_check_xprof "xprof: merged fixture" "$dir/check_fixture.log" "$dir/fixture" \
      --roctx-rows 3 \
      --row '^Host Threads/4242$' --row '^Host Threads/4243$' --row '^Host Threads/4242/NVTX$' \
      --row '^python$' \
      --row '^Host Threads/4242/ROCTX \(xla_gpu_exec_0\)$' --row '^Host Threads/4243/ROCTX$' \
      --row '^Host Threads/4300/ROCTX \(xla_gpu_exec_2\)$' \
      --nest 'jit_train_step>Thunk:#hlo_op=fusion.3,unique_hlo_op_id=7#>loop_fusion_3_kernel' \
      --nest 'jit_train_step>Thunk:#hlo_op=custom-call.1,unique_hlo_op_id=12#>gemm_custom_call_1' \
      --mark step_marker --mark checkpoint \
      --gpu-rows 2 \
      --kernel 'loop_fusion_3=Thunk:#hlo_op=fusion.3,unique_hlo_op_id=7#' \
      --kernel 'Cijk_Alik_Bljk_HHS_BH_MT128x128x32=Thunk:#hlo_op=custom-call.1,unique_hlo_op_id=12#' \
      --kernel 'memset_kernel='
    # The same capture merged with itself: the second GPU plane goes beside the first (issue
    # 22), and XProf's kernel and overview statistics must count the work once.
    fixture=$(find "$dir/fixture" -name '*.xplane.pb' | head -n 1)
    mkdir -p "$dir/beside"
    if (cd rust && cargo run --release --locked -q -p roctx_cli -- merge "$fixture" "$fixture" -o "$dir/beside/beside.xplane.pb") >"$dir/beside.log" 2>&1; then
      run_check_xprof "xprof: side-by-side merge counts once" "$dir/check_beside.log" "$dir/beside/beside.xplane.pb" \
        --same-stats-as "$fixture"
    else
      cat "$dir/beside.log"
      record "xprof: side-by-side merge counts once" 0 1 "roctx merge failed"
    fi
  fi

  # (d) One job, many processes (README, Multi-GPU and multi-node jobs): 8 ranks of the example
  #     host at once, then 8 more 2 s later under the same run name, into one log directory:
  #     XProf lists 16 hosts in that one run and draws each file's 3 ROCTX rows. Then 8 processes
  #     with no launcher variable at all: 8 distinct files, each drawn.
  if [ -x "$ROOT/bazel-bin/examples/xla_style_host" ]; then
    run_job_batches "$dir"
  fi

  # (e) Op scopes in XProf's op statistics and Roofline Model (issue 26).
  run_op_scopes "$dir/op_scopes"

  # (c) Negative control: the same merge with display ids cleared collides in XProf (U2), and
  #     the checker has to say so.
  echo
  echo "==> negative control: xprof_fixture --unsafe-rows must fail rows-match-xspace-lines"
  log=$dir/check_unsafe.log
  if ! (cd rust && cargo run --release --locked -q -p roctx_export --example xprof_fixture -- "$dir/unsafe" --unsafe-rows) >"$log" 2>&1; then
    cat "$log"
    record "xprof: negative control" 0 1 "xprof_fixture --unsafe-rows failed"
    return
  fi
  sed 's/^/    /' "$log"
  "$XPROF_VENV/bin/python" tests/xprof/check_xprof.py "$dir/unsafe" --roctx-rows 3 >"$log" 2>&1
  rc=$?
  sed 's/^/    /' "$log"
  if [ "$rc" -ne 0 ] && grep -q '^FAIL rows-match-xspace-lines' "$log"; then
    echo "PASS negative control: the row collision was detected"
    record "xprof: negative control" 1 0
  else
    echo "FAIL negative control: check_xprof.py (exit $rc) did not report the row collision"
    record "xprof: negative control" 0 1 "collision not detected"
  fi
}

# op_scopes_host (4 groups of roofline.h op scopes and their kernels) on the fake
# rocprofiler-sdk and on the fake CUPTI, on 1 and 16 threads, and its ggml build (5 groups through llama.cpp's five
# ggml_cuda_roofline_* hooks: fused ops, a MoE read-back), writes its XSpace and roofline report at exit;
# check_op_scopes.py holds XProf's roofline_model, framework_op_stats and overview_page against
# `roctx roofline` on the report. Then the ROCm one merged with a real XLA capture (jax[cpu]):
# the same answers, and XLA's modules intact.  run_op_scopes DIR
run_op_scopes() {
  local dir=$1 bin=$ROOT/bazel-bin/cc_tests roctx=$ROOT/rust/target/release/roctx xla v
  mkdir -p "$dir"
  echo
  local targets=(//cc_tests:op_scopes_host //cc_tests:op_scopes_host_cupti //cc_tests:op_scopes_host_ggml //cc_tests:libfake_other_tool.so)
  echo "==> $BAZEL build ${targets[*]} --config=bazel4 --config=rocm"
  if ! "$BAZEL" build "${targets[@]}" --config=bazel4 --config=rocm ||
    ! (cd rust && cargo build --release --locked -q -p roctx_cli); then
    record "xprof: op scopes" 0 1 "build failed"
    return
  fi
  echo "==> op_scopes_host (fake rocprofiler-sdk 7.0, tool mode), op_scopes_host_cupti (fake CUPTI), each on 1 and 16 threads; op_scopes_host_ggml (llama.cpp's hooks)"
  env -u ROCTX_UTILS_CAPTURE XLA_ROCM_ENABLE_ROCTX=1 ROCTX_UTILS_CAPTURE=sdk \
    ROCTX_UTILS_ROCTX_LIBRARY="$bin/libfake_roctx.so" FAKE_ROCPROFILER_NO_ATEXIT=1 FAKE_ROCPROFILER_VERSION=10000 \
    ROCTX_UTILS_ROCPROFILER_LIBRARY="$bin/fake_sdk7/lib/librocprofiler-sdk.so.1" \
    ROCTX_UTILS_XSPACE_OUT="$dir/rocm" ROCTX_UTILS_ROOFLINE_OUT="$dir/rocm.json" "$bin/op_scopes_host" >"$dir/rocm.log" 2>&1
  env -u ROCTX_UTILS_CAPTURE ROCTX_UTILS_TEST_LIBRARY="$ROOT/bazel-bin/nvtx/libroctx_utils_nvtx.so" \
    ROCTX_UTILS_CUPTI_LIBRARY="$bin/libfake_cupti.so" ROCTX_UTILS_CUDA_LIBRARY="$bin/libfake_cupti.so" \
    ROCTX_UTILS_ROCTX_LIBRARY=/nonexistent/libroctx.so \
    ROCTX_UTILS_XSPACE_OUT="$dir/cupti" ROCTX_UTILS_ROOFLINE_OUT="$dir/cupti.json" "$bin/op_scopes_host_cupti" >"$dir/cupti.log" 2>&1
  # 16 threads at once, each on a stream of its own; the ROCm one beside another tool in
  # ROCP_TOOL_LIBRARIES (rocprofv3's place), which must see the markers too.
  env -u ROCTX_UTILS_CAPTURE XLA_ROCM_ENABLE_ROCTX=1 ROCTX_UTILS_CAPTURE=sdk OP_SCOPES_THREADS=16 \
    ROCP_TOOL_LIBRARIES="$bin/libfake_other_tool.so" OTHER_TOOL_OUT="$dir/rocm_16threads.other" \
    ROCTX_UTILS_ROCTX_LIBRARY="$bin/libfake_roctx.so" FAKE_ROCPROFILER_VERSION=10000 \
    ROCTX_UTILS_ROCPROFILER_LIBRARY="$bin/fake_sdk7/lib/librocprofiler-sdk.so.1" \
    ROCTX_UTILS_XSPACE_OUT="$dir/rocm_16threads" ROCTX_UTILS_ROOFLINE_OUT="$dir/rocm_16threads.json" \
    "$bin/op_scopes_host" >"$dir/rocm_16threads.log" 2>&1
  env -u ROCTX_UTILS_CAPTURE OP_SCOPES_THREADS=16 ROCTX_UTILS_TEST_LIBRARY="$ROOT/bazel-bin/nvtx/libroctx_utils_nvtx.so" \
    ROCTX_UTILS_CUPTI_LIBRARY="$bin/libfake_cupti.so" ROCTX_UTILS_CUDA_LIBRARY="$bin/libfake_cupti.so" \
    ROCTX_UTILS_ROCTX_LIBRARY=/nonexistent/libroctx.so \
    ROCTX_UTILS_XSPACE_OUT="$dir/cupti_16threads" ROCTX_UTILS_ROOFLINE_OUT="$dir/cupti_16threads.json" \
    "$bin/op_scopes_host_cupti" >"$dir/cupti_16threads.log" 2>&1
  if grep -qE '^priority=[0-9]+ markers=[1-9]' "$dir/rocm_16threads.other" 2>/dev/null; then
    record "xprof: op scopes (other tool)" 1 0
  else
    record "xprof: op scopes (other tool)" 0 1 "$(cat "$dir/rocm_16threads.other" 2>&1)"
  fi
  # As a llama.cpp user runs it: GGML_ROOFLINE_OUT activates the hooks, no capture mode set.
  env -u ROCTX_UTILS_CAPTURE -u ROCTX_UTILS_ROOFLINE_OUT ROCTX_UTILS_ROCTX_LIBRARY="$bin/libfake_roctx.so" \
    FAKE_ROCPROFILER_NO_ATEXIT=1 FAKE_ROCPROFILER_VERSION=10000 \
    ROCTX_UTILS_ROCPROFILER_LIBRARY="$bin/fake_sdk7/lib/librocprofiler-sdk.so.1" \
    ROCTX_UTILS_XSPACE_OUT="$dir/ggml" GGML_ROOFLINE_OUT="$dir/ggml.json" "$bin/op_scopes_host_ggml" >"$dir/ggml.log" 2>&1
  # The fake SDK's MI300X agent and the fake CUDA driver's H200: CUs/SMs, clock, memory and
  # compute capability reach the GPU plane (the table's bandwidth and FP16 peak stay XProf's roofs).
  local mi300x="--plane-stat core_count=304 --plane-stat clock_rate=2100000 --plane-stat memory_size=206158430208 --plane-stat compute_cap_major=9 --plane-stat memory_bandwidth=5300000000000"
  local -A stats=([rocm]="$mi300x" [rocm_16threads]="" [cupti_16threads]="" [cupti]="--plane-stat core_count=132 --plane-stat clock_rate=1980000 --plane-stat memory_size=150754820096 --plane-stat compute_cap_major=9 --plane-stat memory_bandwidth=4800000000000" [ggml]="$mi300x")
  for v in rocm rocm_16threads cupti cupti_16threads ggml; do
    cat "$dir/$v.log"
    # shellcheck disable=SC2086  # the stat options are words
    "$XPROF_VENV/bin/python" tests/xprof/check_op_scopes.py --roctx "$roctx" --report "$dir/$v.json" ${stats[$v]} "$dir/$v" \
      2>"$dir/check_$v.err" | tee "$dir/check_$v.log"
    record_result "xprof: op scopes ($v)" "$dir/check_$v.log" "op scopes" "${PIPESTATUS[0]}" check_op_scopes.py
  done
  echo "==> jax[cpu] capture, merged with the ROCm one: roctx merge"
  if ensure_jax_cpu && "$XPROF_VENV/bin/python" tests/xprof/jax_cpu_capture.py "$dir/jax" >"$dir/jax.log" 2>&1 &&
    xla=$(find "$dir/jax" -name '*.xplane.pb' | head -n 1) && [ -n "$xla" ] &&
    "$roctx" merge "$xla" "$dir/rocm" -o "$dir/merged.xplane.pb"; then
    "$XPROF_VENV/bin/python" tests/xprof/check_op_scopes.py --roctx "$roctx" --report "$dir/rocm.json" \
      --merged-with "$xla" "$dir/merged.xplane.pb" 2>"$dir/check_merged.err" | tee "$dir/check_merged.log"
    record_result "xprof: op scopes merged with XLA" "$dir/check_merged.log" "op scopes" "${PIPESTATUS[0]}" check_op_scopes.py
  else
    cat "$dir/jax.log"
    record "xprof: op scopes merged with XLA" 0 1 "the jax[cpu] capture or roctx merge failed"
  fi
}

# Launchers' variables (roctx_config::job): none may leak from whoever runs the tests.
LAUNCHER_VARS=(ROCTX_UTILS_RUN_NAME TORCHELASTIC_RUN_ID SLURM_JOB_ID PMIX_NAMESPACE OMPI_MCA_orte_ess_jobid
  LSB_JOBID PBS_JOBID FLUX_JOB_ID RANK OMPI_COMM_WORLD_RANK PMIX_RANK PMI_RANK SLURM_PROCID LOCAL_RANK)

# Starts `xla_style_host` 8 times at once with `ENV...` plus RANK=<n> if WITH_RANK, into LOGDIR;
# waits; returns non-zero if any failed.  job_batch LOGDIR TAG WITH_RANK [ENV...]
job_batch() {
  local logdir=$1 tag=$2 with_rank=$3 pids=() rank failed=0 unset=()
  shift 3
  for v in "${LAUNCHER_VARS[@]}"; do unset+=(-u "$v"); done
  for rank in 0 1 2 3 4 5 6 7; do
    env "${unset[@]}" -u ROCTX_UTILS_CAPTURE XLA_ROCM_ENABLE_ROCTX=1 ROCTX_UTILS_XSPACE_OUT="$logdir" "$@" \
      ${with_rank:+RANK=$rank} "$ROOT/bazel-bin/examples/xla_style_host" >"$logdir.$tag.$rank.log" 2>&1 &
    pids+=($!)
  done
  for rank in 0 1 2 3 4 5 6 7; do
    wait "${pids[$rank]}" || { failed=1; cat "$logdir.$tag.$rank.log"; }
  done
  return $failed
}

run_job_batches() {
  local dir=$1 job=$1/job_logs plain=$1/plain_logs files names
  echo
  echo "==> one job: 2 x 8 processes of xla_style_host, ROCTX_UTILS_RUN_NAME=job-17 RANK=0..7, 2 s apart"
  mkdir -p "$job" "$plain"
  if ! job_batch "$job" b1 1 ROCTX_UTILS_RUN_NAME=job-17 || ! { sleep 2; job_batch "$job" b2 1 ROCTX_UTILS_RUN_NAME=job-17; }; then
    record "xprof: one job, 16 processes" 0 1 "a process of the job failed"
  else
    find "$job" -name '*.xplane.pb' | sort | sed 's/^/    /'
    run_check_xprof "xprof: one job, 16 processes" "$dir/check_job.log" "$job/plugins/profile/job-17" \
      --hosts 16 --roctx-rows 3 --nest-all 'jit_train_step>host_callback'
    # The same run folded into one file: XProf draws 16 host processes, 3 ROCTX rows each.
    echo "==> roctx merge --per-process $job -o $dir/job_folded.xplane.pb"
    if (cd rust && cargo run --release --locked -q -p roctx_cli -- merge --per-process "$job" -o "$dir/job_folded.xplane.pb"); then
      run_check_xprof "xprof: one job, folded" "$dir/check_folded.log" "$dir/job_folded.xplane.pb" --folded 16 --roctx-rows 3
    else
      record "xprof: one job, folded" 0 1 "roctx merge --per-process failed"
    fi
  fi
  echo
  echo "==> no launcher: 8 processes of xla_style_host, no run name, no rank"
  if ! job_batch "$plain" plain ""; then
    record "xprof: 8 plain processes" 0 1 "a process failed"
    return
  fi
  mapfile -t files < <(find "$plain" -name '*.xplane.pb' | sort)
  names=$(printf '%s\n' "${files[@]}" | xargs -n1 basename | sort -u | wc -l)
  printf '    %s\n' "${files[@]}"
  if [ "${#files[@]}" -ne 8 ] || [ "$names" -ne 8 ]; then
    record "xprof: 8 plain processes" 0 1 "${#files[@]} files, $names distinct names (expected 8, 8)"
    return
  fi
  run_check_xprof "xprof: 8 plain processes" "$dir/check_plain.log" "${files[@]}" --roctx-rows 3
}

# 5b. A real NVTX3 client: NVIDIA's own header-only loader (PyPI nvidia-nvtx headers, fetched
#     with the xprof venv's pip) finds libroctx_utils_nvtx.so through NVTX_INJECTION64_PATH.
NVTX3_VERSION=13.0.85
run_nvtx_real() {
  local dir=$TMPDIR_TESTS/nvtx cache=${ROCTX_UTILS_CACHE:-$HOME/.cache/roctx_utils}/nvtx3-$NVTX3_VERSION
  local log=$TMPDIR_TESTS/nvtx/client.log
  mkdir -p "$dir"
  echo
  echo "==> real NVTX3 client against //nvtx:libroctx_utils_nvtx.so"
  if [ ! -f "$cache/nvidia/cu13/include/nvtx3/nvToolsExt.h" ]; then
    rm -rf "$cache" && mkdir -p "$cache" &&
      "$XPROF_VENV/bin/pip" download -q --no-deps "nvidia-nvtx==$NVTX3_VERSION" -d "$cache" &&
      "$XPROF_VENV/bin/python" -m zipfile -e "$cache"/nvidia_nvtx-*.whl "$cache" ||
      { record "nvtx: real client" 0 1 "could not fetch the nvidia-nvtx $NVTX3_VERSION headers"; return; }
  fi
  if ! "$BAZEL" build //nvtx:libroctx_utils_nvtx.so --config=bazel4 --config=rocm; then
    record "nvtx: real client" 0 1 "bazel build of the injection library failed"
    return
  fi
  # The exported surface (nvtx/exports.lds): the injection entry point, the C API, llama.cpp's
  # five hooks and the profiler API's start/stop (nvtx/profiler_api.c), nothing else. A hook missing here breaks the ggml-cuda link on CUDA; anything
  # extra (a Rust or C++ symbol) could interpose on the host's.
  local syms hooks extra
  syms=$(nm -D --defined-only "$ROOT/bazel-bin/nvtx/libroctx_utils_nvtx.so" | awk '$2 ~ /^[TDBVW]$/ {print $3}' | sort -u)
  hooks=$(grep -cE '^ggml_cuda_roofline_(init|set_device|reset|begin_op|fuse_ops)$' <<<"$syms")
  extra=$(grep -vE '^(InitializeInjectionNvtx2|roctx_utils_[a-z0-9_]+|ggml_cuda_roofline_[a-z_]+|(cuda|hip)Profiler(Start|Stop))$' <<<"$syms" | tr '\n' ' ')
  if [ "$hooks" = 5 ] && grep -qx InitializeInjectionNvtx2 <<<"$syms" && [ -z "$extra" ]; then
    record "nvtx: exports" 1 0
  else
    echo "FAIL nvtx exports: $hooks of 5 ggml hooks; unexpected: ${extra:-none}"
    record "nvtx: exports" 0 1 "exported symbols differ from nvtx/exports.lds"
  fi
  if ! g++ -std=c++17 -O1 -Wall -I"$cache/nvidia/cu13/include" -Iinclude tests/nvtx/real_client.cc \
      -ldl -lpthread -o "$dir/real_client"; then
    record "nvtx: real client" 0 1 "the client did not compile against the NVTX3 headers"
    return
  fi
  env NVTX_INJECTION64_PATH="$ROOT/bazel-bin/nvtx/libroctx_utils_nvtx.so" ROCTX_UTILS_XSPACE_OUT="$dir/logs" \
    "$dir/real_client" 2>&1 | tee "$log"
  record_result "nvtx: real client" "$log" "nvtx real client" "${PIPESTATUS[0]}" "the client"
}

# ---------------------------------------------------------------------------------------------
# 5d. The release tarball (scripts/release.sh), unpacked into a fresh directory, and its
#     `roctx record -- COMMAND` against stock hosts on the fake rocprofiler-sdk (every record
#     layout) and the fake CUPTI, read back through XProf (tests/record/check_record.sh).
# ---------------------------------------------------------------------------------------------
run_record() {
  local dir=$TMPDIR_TESTS/record tarball log=$TMPDIR_TESTS/record/check.log
  mkdir -p "$dir/unpacked"
  echo
  echo "==> RELEASE_COMPILATION_MODE=fastbuild bash scripts/release.sh $dir"
  if ! tarball=$(RELEASE_COMPILATION_MODE=fastbuild bash scripts/release.sh "$dir" | tail -n 1) || [ ! -f "$tarball" ]; then
    record "record: release tarball" 0 1 "scripts/release.sh failed"
    return
  fi
  if ! tar -xzf "$tarball" -C "$dir/unpacked" || ! "$BAZEL" build --config=bazel4 --config=rocm \
      //cc_tests:stock_hip_host //cc_tests:stock_cuda_host //cc_tests:libfake_other_tool.so \
      //cc_tests:libfake_rocprofiler_sdk.so //cc_tests:fake_sdk7/lib/librocprofiler-sdk.so.1 \
      //cc_tests:libfake_cupti.so //cc_tests:libfake_roctx.so; then
    record "record: release tarball" 0 1 "unpacking $tarball or building the test hosts failed"
    return
  fi
  record "record: release tarball" 1 0
  bash tests/record/check_record.sh "$dir/unpacked/$(basename "$tarball" .tar.gz)" "$ROOT/bazel-bin" \
    "$XPROF_VENV/bin/python" "$dir/work" "$(ls "$dir"/roctx_utils-*.whl 2>/dev/null | head -n 1)" 2>&1 | tee "$log"
  record_result "record: roctx record" "$log" "record" "${PIPESTATUS[0]}" check_record.sh
}

# ---------------------------------------------------------------------------------------------
# 5e. `roctx stats` (docs/stats.md) against the real consumer: XProf's own kernel_stats of the
#     op-scope files of 5a (e) and of the `roctx record` runs of 5d must list the same kernels
#     with equal counts and total times within 0.1 %; and in the record runs (12 kernels and 6
#     copies, each launched inside a range) all GPU time is some range's.
# ---------------------------------------------------------------------------------------------
run_stats() {
  local dir=$TMPDIR_TESTS/stats ops=$TMPDIR_TESTS/xprof/op_scopes rec=$TMPDIR_TESTS/record/work
  local roctx=$ROOT/rust/target/release/roctx
  mkdir -p "$dir"
  echo
  echo "==> roctx stats against XProf's kernel_stats (tests/xprof/check_stats.py)"
  if ! (cd rust && cargo build --release --locked -q -p roctx_cli); then
    record "stats" 0 1 "building roctx failed"
    return
  fi
  "$XPROF_VENV/bin/python" tests/xprof/check_stats.py --roctx "$roctx" \
    "$ops/rocm" "$ops/cupti_16threads" "$ops/ggml" "$ops/merged.xplane.pb" 2>"$dir/ops.err" | tee "$dir/ops.log"
  record_result "stats: kernels as XProf's (op scopes)" "$dir/ops.log" "stats" "${PIPESTATUS[0]}" check_stats.py
  "$XPROF_VENV/bin/python" tests/xprof/check_stats.py --roctx "$roctx" --kernels 12 --copies 6 --all-in-ranges \
    "$rec/rocm-v600" "$rec/rocm-v10000" "$rec/nvidia" 2>"$dir/record.err" | tee "$dir/record.log"
  record_result "stats: roctx record runs" "$dir/record.log" "stats" "${PIPESTATUS[0]}" check_stats.py
}

# ---------------------------------------------------------------------------------------------
# 5f. The XLA fork integration (integrations/xla, docs/xla.md). check_test.sh: check.sh's
#     verdicts on trees made of our own files (one that compiles against the library, one with a
#     changed signature, one that declares a function we lack, the pinned d8a5b437 lines) and the
#     swap's three copies (patch, README, examples/xla_fork) agreeing. Then every real XLA tree
#     under $XLA_TREES (integrations/xla/extract_tree.sh puts one there) through
#     `check.sh --compat`: upstream's own headers built and run against the library, both patches
#     applied. No tree there (CI has none: upstream code is not committed): said, not counted.
# ---------------------------------------------------------------------------------------------
XLA_TREES=${ROCTX_UTILS_XLA_TREES:-${ROCTX_UTILS_CACHE:-$HOME/.cache/roctx_utils}/xla_trees}

run_xla() {
  local log=$TMPDIR_TESTS/xla_check.log tree name p f
  echo
  echo "==> integrations/xla/check_test.sh"
  BAZEL=$BAZEL bash integrations/xla/check_test.sh 2>&1 | tee "$log"
  record_result "xla: check.sh, the swap" "$log" "xla check" "${PIPESTATUS[0]}" check_test.sh
  local found=0
  for tree in "$XLA_TREES"/*/; do
    [ -d "$tree" ] || continue
    found=1
    name=$(basename "$tree")
    log=$TMPDIR_TESTS/xla_tree_$name.log
    echo
    echo "==> integrations/xla/check.sh --compat $tree"
    BAZEL=$BAZEL bash integrations/xla/check.sh --compat "$tree" 2>&1 | tee "$log"
    p=$(grep -cE '^(tree|swap|traceme|compat) +OK ' "$log")
    f=$(grep -cE '^(tree|swap|traceme|compat) +FAIL ' "$log")
    if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then f=1; fi  # check.sh refused the tree (exit 2)
    record "xla tree $name" "$p" "$f"
  done
  if [ "$found" -eq 0 ]; then
    SUMMARY+=("xla trees: SKIPPED, none in $XLA_TREES (integrations/xla/extract_tree.sh; docs/xla.md)")
  fi
}

run_cargo
run_clippy
run_valgrind                                        # the Rust unit tests under memcheck
run_bazel "bazel test --config=rocm" --config=rocm  # Rust implementation
run_xprof                                           # needs the rocm build of the example
run_nvtx_real                                       # needs the xprof venv's pip
run_python                                          # needs the venv and the injection library
run_record                                          # needs the venv and the rocm build (before 6)
run_stats                                           # needs the files of run_xprof and run_record
run_xla                                             # needs the rocm build; after every bazel-bin user
run_sanitizers                                      # rocm again under asan, then tsan
run_bazel "bazel test (stub)"                       # stub; rocm-only targets are SKIPPED
run_consumer                                        # examples/xla_fork, both configurations
echo
echo "==> $BAZEL shutdown"
"$BAZEL" shutdown
finish
