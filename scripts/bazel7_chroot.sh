#!/bin/bash
# NON-GATING: exercise the bzlmod path (MODULE.bazel + empty WORKSPACE.bzlmod) with Debian sid's
# Bazel 7 (bazel-bootstrap) in a debootstrap'ed sid chroot, fully offline for Bazel.
#
# Never make this a CI gate: sid changes daily and there is no pinned snapshot, so a red run
# may be sid's fault, not ours. The gating build is Debian 12's Bazel 4.2.3 (scripts/test.sh).
#
# What it checks, inside the chroot, on a read-only bind mount of this checkout:
#   1. bazel build //:roctx_utils_impl --config=rocm   (MODULE.bazel, use_repo_rule(cargo_vendor),
#                                                       cargo inside a Bazel 7 action, cxx bridge)
#   2. bazel test //... --config=rocm                  (Rust implementation; all suites)
#   3. bazel test //...                                (stub; rocm-only tests are SKIPPED)
#   4. the bzlmod consumer examples/xla_fork (bazel_dep(name = "roctx_utils") + local_path_override,
#      --@roctx_utils//:annotation_stack pointed at its own stack): bazel test //... with and
#      without --config=rocm, as scripts/test.sh does with Bazel 4 and its WORKSPACE
# and prints a summary with per-target counts and timings. Exit status is non-zero if any step
# failed. (--config=bazel4 is Bazel-4 only and is deliberately not used here.)
#
# Setup (spec bazel_offline.md §14-15), reused across runs:
#   * debootstrap --variant=minbase sid into ${SID_ROOT:-/var/tmp/roctx_utils_sid} (~1.6 GB, apt cache cleaned);
#   * apt (Check-Valid-Until=false) installs bazel-bootstrap, googletest, libbenchmark-dev
#     (for //bench), g++, ca-certificates; only when missing, or always with SID_UPDATE=1;
#   * stand-in modules protobuf/zlib/apple_support/buildozer, wired through --override_module in
#     the chroot's /etc/bazel.bazelrc; googletest as a local module over /usr/src/googletest,
#     overridden on the roctx_utils steps' command lines (the consumer does not depend on it);
#   * bind mounts: /proc, /dev, $RUSTUP_HOME (read-only), $CARGO_HOME, the checkout (read-only,
#     at /srv/roctx_utils). Bazel runs with --lockfile_mode=off and --symlink_prefix=/ so that it
#     writes nothing into the checkout. Everything is unmounted by a trap on exit.
#
# Network: deb.debian.org (debootstrap, apt) and crates.io (cargo vendor, once) only.
#
# Usage (as root):
#   scripts/bazel7_chroot.sh            set up if needed, then build + test
#   SID_UPDATE=1 scripts/bazel7_chroot.sh   also apt-get update + upgrade the chroot first
#   SID_EXPUNGE=1 scripts/bazel7_chroot.sh  bazel clean --expunge first (cold timings)
#   scripts/bazel7_chroot.sh --remove   unmount leftovers and delete the chroot (never while mounted)
set -uo pipefail

SID_ROOT=${SID_ROOT:-/var/tmp/roctx_utils_sid}
SID_ROOT=${SID_ROOT%/}
MIRROR=${SID_MIRROR:-http://deb.debian.org/debian}
REPO=$(cd "$(dirname "$0")/.." && pwd)
SRC_MNT=/srv/roctx_utils
RUSTUP_DIR=${RUSTUP_HOME:-$HOME/.rustup}
CARGO_DIR=${CARGO_HOME:-$HOME/.cargo}
PACKAGES=(bazel-bootstrap googletest libbenchmark-dev g++ ca-certificates)
APT=(apt-get -q -y -o Acquire::Check-Valid-Until=false)

log() { printf '\n=== [bazel7_chroot] %s\n' "$*"; }
die() { printf '[bazel7_chroot] ERROR: %s\n' "$*" >&2; exit 2; }

[ "$(id -u)" -eq 0 ] || die "run as root (debootstrap, chroot and mount need it)"
case $SID_ROOT in /|/usr|/var|/var/tmp|/tmp|/root|"$HOME") die "refusing SID_ROOT=$SID_ROOT" ;; esac
[ -d "$RUSTUP_DIR" ] && [ -x "$CARGO_DIR/bin/cargo" ] || die "no rustup toolchain in $RUSTUP_DIR / $CARGO_DIR"

mkdir -p "$(dirname "$SID_ROOT")"
exec 9>"$SID_ROOT.lock"
flock -n 9 || die "another run holds $SID_ROOT.lock"

# Mount points under $SID_ROOT, deepest first.
mounts_under_root() {
  awk -v r="$SID_ROOT/" 'index($5, r) == 1 { print $5 }' /proc/self/mountinfo | sort -r
}

unmount_all() {
  local m
  for m in $(mounts_under_root); do
    umount "$m" 2>/dev/null || umount -l "$m" || echo "[bazel7_chroot] WARNING: could not unmount $m" >&2
  done
}

if [ "${1:-}" = --remove ]; then
  unmount_all
  [ -z "$(mounts_under_root)" ] || die "mounts remain under $SID_ROOT; not deleting"
  log "deleting $SID_ROOT"
  rm -rf --one-file-system "$SID_ROOT" "$SID_ROOT.lock"
  exit 0
fi

# ---- chroot helpers -----------------------------------------------------------------------------

# Every chroot command runs with the lock's fd 9 closed: the Bazel server daemonizes and would
# otherwise hold the lock long after this script is gone.
in_chroot() {  # in_chroot 'shell command'  (runs in the checkout, or in $IN_DIR below it)
  chroot "$SID_ROOT" /usr/bin/env -i HOME="$HOME" LANG=C.UTF-8 TERM="${TERM:-dumb}" \
    RUSTUP_HOME="$RUSTUP_DIR" CARGO_HOME="$CARGO_DIR" DEBIAN_FRONTEND=noninteractive \
    PATH="$CARGO_DIR/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    bash -c "cd $SRC_MNT/${IN_DIR:-} && $1" 9>&-
}

shutdown_bazel_quietly() {  # the servers would otherwise keep the bind mounts busy
  local dir
  for dir in "" examples/xla_fork; do
    [ -x "$SID_ROOT/usr/bin/bazel" ] && mountpoint -q "$SID_ROOT$SRC_MNT" &&
      timeout 60 chroot "$SID_ROOT" /usr/bin/env -i HOME="$HOME" PATH=/usr/bin:/bin \
        bash -c "cd $SRC_MNT/$dir && /usr/bin/bazel shutdown" >/dev/null 2>&1 9>&-
  done
}

BAZEL_STARTED=
cleanup() {
  [ -n "$BAZEL_STARTED" ] && shutdown_bazel_quietly
  unmount_all
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

bind_mount() {  # bind_mount HOST_PATH CHROOT_PATH [ro]
  local dst=$SID_ROOT$2
  mkdir -p "$dst"
  mountpoint -q "$dst" && return 0
  mount --bind "$1" "$dst" || die "mount --bind $1 $dst"
  if [ "${3:-}" = ro ]; then mount -o remount,bind,ro "$dst" || die "remount ro $dst"; fi
}

declare -A T  # step -> seconds
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# A previous run killed hard may have left mounts and a Bazel server behind; start clean.
if [ -n "$(mounts_under_root)" ]; then
  echo "[bazel7_chroot] leftover mounts under $SID_ROOT: stopping any Bazel server, unmounting"
  shutdown_bazel_quietly
  unmount_all
fi

# ---- 1. debootstrap -----------------------------------------------------------------------------

t0=$(now)
if [ ! -e "$SID_ROOT/.roctx_debootstrap_done" ]; then
  if ! command -v debootstrap >/dev/null; then
    log "installing debootstrap on the host"
    apt-get -q update && DEBIAN_FRONTEND=noninteractive apt-get -q -y install --no-install-recommends debootstrap \
      || die "apt-get install debootstrap failed"
  fi
  if [ -e "$SID_ROOT" ]; then  # an interrupted debootstrap: start over (no mounts, checked above)
    [ -z "$(mounts_under_root)" ] || die "mounts remain under $SID_ROOT"
    rm -rf --one-file-system "$SID_ROOT"
  fi
  log "debootstrap --variant=minbase sid $SID_ROOT $MIRROR"
  debootstrap --variant=minbase sid "$SID_ROOT" "$MIRROR" || die "debootstrap failed"
  touch "$SID_ROOT/.roctx_debootstrap_done"
else
  log "reusing the sid chroot at $SID_ROOT"
fi
T[debootstrap]=$(elapsed "$t0")

cp -L /etc/resolv.conf "$SID_ROOT/etc/resolv.conf"
printf '#!/bin/sh\nexit 101\n' >"$SID_ROOT/usr/sbin/policy-rc.d" && chmod 755 "$SID_ROOT/usr/sbin/policy-rc.d"

bind_mount /proc /proc
bind_mount /dev /dev
bind_mount "$RUSTUP_DIR" "$RUSTUP_DIR" ro
bind_mount "$CARGO_DIR" "$CARGO_DIR"      # cargo vendor fills the registry cache
bind_mount "$REPO" "$SRC_MNT" ro

# ---- 2. packages --------------------------------------------------------------------------------

t0=$(now)
missing=$(in_chroot "dpkg-query -W -f='\${db:Status-Abbrev} \${Package}\n' ${PACKAGES[*]} 2>&1 | grep -v '^ii ' || true")
if [ -n "$missing" ] || [ -n "${SID_UPDATE:-}" ]; then
  log "apt in the chroot: ${PACKAGES[*]}${SID_UPDATE:+ (+ upgrade)}"
  in_chroot "${APT[*]} update" || die "apt-get update in the chroot failed"
  if [ -n "${SID_UPDATE:-}" ]; then in_chroot "${APT[*]} dist-upgrade" || die "apt-get dist-upgrade failed"; fi
  in_chroot "${APT[*]} install --no-install-recommends ${PACKAGES[*]}" || die "apt-get install failed"
  in_chroot "apt-get clean"
fi
T[apt]=$(elapsed "$t0")

# sid's /usr/bin/bazel is the Bazel binary itself (bookworm's is a version-picking wrapper).
BAZEL=$(in_chroot 'ls /usr/bin/bazel-[0-9]* /usr/bin/bazel 2>/dev/null | head -n 1')
[ -n "$BAZEL" ] || die "no /usr/bin/bazel in the chroot"
BAZEL_VERSION=$(in_chroot "$BAZEL --version" 2>/dev/null | grep -m 1 "^bazel ")
case $BAZEL_VERSION in "bazel 7."*|"bazel 8."*|"bazel 9."*) ;; *) die "unexpected Bazel in sid: '$BAZEL_VERSION' ($BAZEL)" ;; esac
GTEST_VERSION=$(in_chroot "dpkg-query -W -f='\${Version}' googletest" | sed 's/^[0-9]*://; s/[-+~].*//')

# ---- 3. offline bzlmod wiring (rewritten every run; cheap) --------------------------------------

for m in protobuf zlib apple_support buildozer; do
  mkdir -p "$SID_ROOT/opt/bzlmod-standins/$m"
  printf '# Empty stand-in: Bazel 7 bazel_tools lists this module; nothing here uses it.\nmodule(name = "%s")\n' "$m" \
    >"$SID_ROOT/opt/bzlmod-standins/$m/MODULE.bazel"
  : >"$SID_ROOT/opt/bzlmod-standins/$m/BUILD.bazel"
done

GT=$SID_ROOT/opt/googletest-module
mkdir -p "$GT"
ln -sfn /usr/src/googletest/googletest "$GT/googletest"
ln -sfn /usr/src/googletest/googlemock "$GT/googlemock"
cat >"$GT/MODULE.bazel" <<EOF
# Debian sid's googletest sources (/usr/src/googletest) as a local module.
module(name = "googletest", version = "$GTEST_VERSION")

bazel_dep(name = "rules_cc", version = "0.0.11")
EOF
cp "$REPO/third_party/googletest/googletest.BUILD" "$GT/BUILD.bazel"

cat >"$SID_ROOT/etc/bazel.bazelrc" <<'EOF'
# Written by roctx_utils scripts/bazel7_chroot.sh (sid's /etc/bazel/bazelrc try-imports it).
# googletest is overridden on the command line of the steps in the roctx_utils module only: Bazel
# rejects an override of a module the root does not depend on (the consumer has no googletest).
common --override_module=protobuf=/opt/bzlmod-standins/protobuf
common --override_module=zlib=/opt/bzlmod-standins/zlib
common --override_module=apple_support=/opt/bzlmod-standins/apple_support
common --override_module=buildozer=/opt/bzlmod-standins/buildozer
# The checkout is mounted read-only: no MODULE.bazel.lock, no bazel-* convenience symlinks.
common --lockfile_mode=off
build --symlink_prefix=/
EOF

# ---- 4. build and test --------------------------------------------------------------------------

LOGDIR=$(mktemp -d -t bazel7_chroot.XXXXXX)
STEPS=() RESULTS=()
total_pass=0 total_fail=0 total_skip=0 failed_steps=0

run_step() {  # run_step NAME bazel-args...
  local name=$1; shift
  local log rc p f s t
  log=$LOGDIR/$(printf '%s' "$name" | tr -cs 'a-zA-Z0-9' _).log
  log "$BAZEL_VERSION: bazel $*"
  BAZEL_STARTED=1
  t=$(now)
  in_chroot "$BAZEL $*" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  T[$name]=$(elapsed "$t")
  p=$(grep -cE '^//[^ ]+ +(\(cached\) +)?(PASSED|FLAKY)' "$log")
  f=$(grep -cE '^//[^ ]+ +(\(cached\) +)?(FAILED|TIMEOUT|INCOMPLETE|NO STATUS)' "$log")
  s=$(grep -cE '^//[^ ]+ +SKIPPED' "$log")
  # bazel test: 0 = all passed, 3 = tests failed, 4 = no tests; anything else is a build error.
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  STEPS+=("$name")
  if [ "$1" = build ]; then
    RESULTS+=("$([ "$rc" -eq 0 ] && echo "OK" || echo "FAILED (exit $rc)")")
  else
    RESULTS+=("$p passed, $f failed, $s skipped (exit $rc)")
    total_pass=$((total_pass + p)) total_fail=$((total_fail + f)) total_skip=$((total_skip + s))
  fi
  [ "$rc" -eq 0 ] || failed_steps=$((failed_steps + 1))
}

if [ -n "${SID_EXPUNGE:-}" ]; then BAZEL_STARTED=1; in_chroot "$BAZEL clean --expunge" >/dev/null 2>&1; fi

GT_OVERRIDE=--override_module=googletest=/opt/googletest-module
run_step "build impl (rocm)" build //:roctx_utils_impl --config=rocm $GT_OVERRIDE
# Proof that Bazel 7 took the bzlmod route (MODULE.bazel) and not WORKSPACE: the main repository's
# execroot is "_main" under bzlmod and "roctx_utils" (workspace name) under WORKSPACE.
EXECROOT=$(in_chroot "$BAZEL info execution_root $GT_OVERRIDE 2>/dev/null")
case $EXECROOT in
  */_main) BZLMOD="yes (execroot .../execroot/_main)" ;;
  *) BZLMOD="NO (execroot '$EXECROOT')"; failed_steps=$((failed_steps + 1)) ;;
esac
echo "bzlmod: $BZLMOD"
run_step "test //... (rocm)" test //... --config=rocm $GT_OVERRIDE
run_step "test //... (stub)" test //... $GT_OVERRIDE
log "bazel shutdown"
in_chroot "$BAZEL shutdown" && BAZEL_STARTED=

# The bzlmod consumer: a workspace of its own inside the checkout, with its own Bazel server.
IN_DIR=examples/xla_fork
run_step "consumer xla_fork (rocm)" test //... --config=rocm
CONSUMER_EXECROOT=$(in_chroot "$BAZEL info execution_root" 2>"$LOGDIR/consumer_info.err")
case $CONSUMER_EXECROOT in
  */_main) CONSUMER_BZLMOD="yes (execroot .../execroot/_main)" ;;
  *) CONSUMER_BZLMOD="NO (execroot '$CONSUMER_EXECROOT')"; failed_steps=$((failed_steps + 1))
     cat "$LOGDIR/consumer_info.err" ;;
esac
run_step "consumer xla_fork (stub)" test //...
in_chroot "$BAZEL shutdown"
IN_DIR=
unmount_all  # before du: the bind mounts share the chroot's filesystem

# ---- 5. summary ---------------------------------------------------------------------------------

echo
echo "==================== bazel7_chroot summary (NON-GATING) ===================="
chroot_size=$([ -z "$(mounts_under_root)" ] && du -sh "$SID_ROOT" 2>/dev/null | cut -f1)
echo "chroot:       $SID_ROOT (${chroot_size:-size unknown})"
echo "bazel:        $BAZEL_VERSION ($BAZEL), googletest $GTEST_VERSION"
echo "bzlmod:       $BZLMOD; consumer: ${CONSUMER_BZLMOD:-not run}"
printf '%-22s %6ss\n' "setup: debootstrap" "${T[debootstrap]}" "setup: apt" "${T[apt]}"
for i in "${!STEPS[@]}"; do
  printf '%-22s %6ss  %s\n' "${STEPS[i]}" "${T[${STEPS[i]}]}" "${RESULTS[i]}"
done
echo "test targets: $total_pass passed, $total_fail failed, $total_skip skipped (per target, both configs)"
echo "logs:         $LOGDIR"
if [ "$failed_steps" -eq 0 ]; then
  echo "RESULT: PASS"
else
  echo "RESULT: FAIL ($failed_steps step(s) failed)"
fi
[ "$failed_steps" -eq 0 ]
