#!/bin/bash
# Demo: run the XLA-style example host (//examples:xla_style_host) against the ROCm (Rust)
# backend with range emission switched on, and explain what it shows; then run it again with
# ROCTX_UTILS_XSPACE_OUT=$PWD/roctx_logs, show the rows XProf will draw (`roctx inspect`, the
# CLI in rust/roctx_cli) and print how to open the trace in TensorBoard/XProf.
#
# Works as root on a fresh Debian 12 machine with only rustup (in ~/.cargo/bin) and python3;
# no ROCm is needed: without a roctx library the backend still feeds AnnotationStack.
set -euo pipefail

cd "$(dirname "$0")/.."

# shellcheck source=scripts/setup_env.sh
source scripts/setup_env.sh
ensure_packages

cat <<'EOF'
==================================================================================
roctx_utils demo: an XLA-style host on the ROCm range-annotation backend
----------------------------------------------------------------------------------
//examples:xla_style_host does what XLA's GPU runtime does with tsl::profiler:
  * enables AnnotationStack (as the GPU tracer does when a profiling session starts),
  * names 3 executor threads (NameCurrentThread -> roctxNameOsThread),
  * on each thread opens nested ranges: module "jit_train_step" -> a "Thunk:#hlo_op=...#"
    ScopedAnnotation -> a kernel range (RegisterString handle + RangePush with a payload)
    -> a roctx_utils::Annotation that is stopped explicitly,
  * prints, per thread, the AnnotationStack seen in the innermost scope, and at the end
    which roctx library was loaded and the backend's counters.
XLA_ROCM_ENABLE_ROCTX=1 turns range emission on: DefaultProfilerDomain() becomes non-null,
so every range goes through RangePush, which feeds both AnnotationStack and roctx.
Building with --config=rocm (the first build runs cargo; allow a minute)...
==================================================================================
EOF

XLA_ROCM_ENABLE_ROCTX=1 "$BAZEL" run //examples:xla_style_host --config=bazel4 --config=rocm

cat <<'EOF'
==================================================================================
How to read this:
  * domain=non-null: range emission is on (XLA_ROCM_ENABLE_ROCTX=1 was read and latched).
  * The innermost AnnotationStack string ("module::thunk::kernel::host_callback") is what a
    host profiler such as XProf's CPU tracer attributes work to. The backend built it by
    mirroring every RangePush into AnnotationStack; the depth counts open scopes.
  * After Annotation::Stop() the last level is gone, and destroying the object does not pop
    a second time; after all scopes close the stack is empty again (balanced).
  * "roctx state: MISSING" / "roctx library: none" means no roctx library is installed
    here, so ranges reach AnnotationStack only (one warning on stderr says what was tried).
    On a ROCm machine the same run sends the ranges to rocprofiler-sdk's roctx as well; set
    ROCTX_UTILS_ROCTX_LIBRARY=/path/to/librocprofiler-sdk-roctx.so.1 to pick one explicitly.
  * strings_interned counts the kernel titles registered once up front (RegisterString).
Try it without XLA_ROCM_ENABLE_ROCTX (domain=null: ScopedAnnotation feeds AnnotationStack
directly, nothing is interned), or without --config=rocm (the no-op stub backend).
==================================================================================
EOF

# ---------------------------------------------------------------------------------------------
# The same host, captured: ROCTX ranges recorded in-process and written for TensorBoard/XProf.
# ---------------------------------------------------------------------------------------------
LOGDIR=$PWD/roctx_logs
cat <<'EOF'
==================================================================================
Now the same binary again, with ROCTX_UTILS_XSPACE_OUT=$PWD/roctx_logs: the backend captures
its own ROCTX ranges in-process (no ROCm or rocprofiler needed) and, at exit, writes
  roctx_logs/plugins/profile/<run>/<host>_pid<pid>.xplane.pb
the TensorBoard log directory layout XProf reads. Each executor thread gets a row
"Host Threads/<tid>/ROCTX (<thread name>)" holding its nested ranges, each event with an
nvtx_range arg, as XLA's own ROCm tracer writes them.
==================================================================================
EOF
XLA_ROCM_ENABLE_ROCTX=1 ROCTX_UTILS_XSPACE_OUT="$LOGDIR" bazel-bin/examples/xla_style_host >/dev/null

echo
echo "==> building the roctx CLI: (cd rust && cargo build --release --locked -p roctx_cli)"
(cd rust && cargo build --release --locked -p roctx_cli)
ROCTX=$PWD/rust/target/release/roctx

echo
echo "==> roctx inspect roctx_logs   (its newest run: planes, the rows XProf draws, nesting)"
inspect_rc=0
"$ROCTX" inspect "$LOGDIR" || inspect_rc=$?
if [ "$inspect_rc" -ne 0 ]; then
  echo "warning: roctx inspect exited $inspect_rc (1: XProf would draw something wrong)" >&2
fi

cat <<EOF
==================================================================================
View it with XProf's trace viewer, inside TensorBoard or standalone (any machine with Python 3):

  pip install tensorboard xprof        # or just xprof for the standalone server
  tensorboard --logdir roctx_logs      # http://localhost:6006/#profile
  xprof --logdir roctx_logs            # http://localhost:8791/  (--port N to change)

Pick the newest run and the trace viewer: process /host:CPU has one row per executor thread,
"Host Threads/<tid>/ROCTX (xla_gpu_exec_N)", with
jit_train_step > Thunk:#hlo_op=...# > <kernel> > host_callback nested by time; click an event
to see its nvtx_range. Every run of this demo adds a run directory under roctx_logs/.
More: rust/target/release/roctx merge (add XLA's own capture of the same run), roctx convert
--format chrome (chrome://tracing, ui.perfetto.dev), roctx --help.
EOF
if [ -x "$XPROF_VENV/bin/xprof" ]; then
  echo "xprof is already installed here (scripts/test.sh's venv):"
  echo "  $XPROF_VENV/bin/xprof --logdir roctx_logs"
fi
echo "=================================================================================="
