#!/bin/bash
# Demo: run the XLA-style example host (//examples:xla_style_host) against the ROCm (Rust)
# backend with range emission switched on, and explain what it shows.
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
