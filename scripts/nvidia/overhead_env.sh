# Sourced by scripts/nvidia/llama_overhead.sh, moe_layer.sh, overhead_run.sh and
# validate_nvidia.sh: what each configuration of an overhead measurement runs with, so the
# scripts mean the same by `none`, `cupti` and `hook`.
# The caller sets BIN (ggml/, the library, libcupti_only.so) before sourcing; a packed ggml/ is
# unpacked then (unpack_ggml).
#
#   defaults  no hook, ggml's own defaults (CUDA graphs and PDL as ggml decides)
#   none      no hook, graphs and PDL off, as the hook sets them
#   cupti     none plus CUPTI's activity API with our kinds and API-record filter, records
#             dropped (BIN/libcupti_only.so, from scripts/nvidia/cupti_only.c)
#   cupti_ts  cupti plus a CLOCK_BOOTTIME timestamp callback (as ours registers)
#   cupti_tsc cupti plus a timestamp callback reading the TSC (no clock_gettime)
#   cupti_ours  cupti_ts plus every record read and a flush every 100 ms: CUPTI doing all it does
#             for our client, none of our own work (hook - cupti_ours: the op scopes and the join)
#   hook      GGML_ROOFLINE_OUT set: op scopes, kernels traced through CUPTI (default settings:
#             MoE experts counted from the shapes, GGML_ROOFLINE_MOE=analytic)
#   hook_exact  hook with GGML_ROOFLINE_MOE=exact (the MoE routing read back)
#   hook_alt  hook with the library in BIN/alt/ (another build of it: an A/B in one session)
#   hook_all  hook with ROCTX_UTILS_CUPTI_API=all (an API record for every CUDA call)

# The CUDA 13 libraries of the device's wheels (CUPTI among them); empty without them (ROCm).
NVLIB=$(python3 -c 'import nvidia, os; print(os.path.join(nvidia.__path__[0], "cu13", "lib"))' 2>/dev/null || true)

# The kit's ggml/, which scripts/nvidia/overhead_kit.sh carries xz-packed (the device's copy of
# a working tree is limited to 64 MiB): unpacked into BIN where it is not there yet.
unpack_ggml() { # unpack_ggml BIN
  if [ ! -d "$1/ggml" ] && ls "$1"/pack/ggml.tar.xz.* >/dev/null 2>&1; then cat "$1"/pack/ggml.tar.xz.* | tar -xJ -C "$1"; fi
}
unpack_ggml "$BIN"

# Whether the `cupti` configuration can run here.
cupti_only_available() { [ -f "$BIN/libcupti_only.so" ] && [ -n "$NVLIB" ]; }

# overhead_env CONFIG REPORT: sets the array ENV to CONFIG's environment (REPORT: the hook's
# report path).
overhead_env() {
  local cfg=$1 report=$2
  ENV=(LD_LIBRARY_PATH="$BIN/ggml:$BIN${NVLIB:+:$NVLIB}")
  [ "$cfg" = hook_alt ] && ENV=(LD_LIBRARY_PATH="$BIN/alt:$BIN/ggml:$BIN${NVLIB:+:$NVLIB}")
  [ "$cfg" = defaults ] || ENV+=(GGML_CUDA_DISABLE_GRAPHS=1 GGML_CUDA_PDL=0)
  case $cfg in
    hook | hook_exact | hook_all | hook_alt) ENV+=(GGML_ROOFLINE_OUT="$report" ${NVLIB:+ROCTX_UTILS_CUPTI_LIBRARY=$NVLIB/libcupti.so.13}) ;;
    cupti | cupti_ts | cupti_tsc | cupti_ours) ENV+=(LD_PRELOAD="$BIN/libcupti_only.so" CUPTI_ONLY_LIBRARY="$NVLIB/libcupti.so.13") ;;
  esac
  case $cfg in
    cupti_ts) ENV+=(CUPTI_ONLY_TIMESTAMP=1) ;;
    cupti_tsc) ENV+=(CUPTI_ONLY_TIMESTAMP=2) ;;
    cupti_ours) ENV+=(CUPTI_ONLY_TIMESTAMP=1 CUPTI_ONLY_READ=1 CUPTI_ONLY_FLUSH_MS=100) ;;
  esac
  if [ "$cfg" = hook_all ]; then ENV+=(ROCTX_UTILS_CUPTI_API=all); fi
  if [ "$cfg" = hook_exact ]; then ENV+=(GGML_ROOFLINE_MOE=exact); fi
}
