/*!
ROCm's answer to NVTX in XLA/JAX: the `tsl::profiler` range-annotation backend, marker capture
and trace export, as one Rust library linked into C++ hosts.

# Pipeline

```text
  host C++ (ScopedAnnotation, TraceAnnotation, llama.cpp)
        |  nvtx_utils.h / roctx_utils.h          (ffi::bridge, ffi::c_api)
        v
  +-----------+   roctx (dlopen'ed)   +----------+     +-----------+     +--------+
  |  emitter  | --------------------> | listener | --> | collector | --> | export |
  +-----------+                       +----------+     +-----------+     +--------+
        |  AnnotationStack (host's, via //:annotation_stack)
        v
```

Kernel attribution and the roofline report come next (see `docs/architecture.md`). Data flows one way: later stages never
call earlier ones.

# Modules

- [`emitter`]: the drop-in API's behaviour: the `XLA_ROCM_ENABLE_ROCTX` latch, the dual push
  into AnnotationStack and roctx, naming, string interning, the annotation object.
- [`listener`]: capture modes and sessions; rocprofiler-sdk tool mode, host-fed records, the
  marker state machine.
- [`collector`]: per-thread bounded buffers, exact drop counters, snapshots.
- [`export`]: snapshots as XSpace (a `/host:ROCTX` plane merged into `/host:CPU`), TensorBoard
  log directories and Chrome JSON (formats in the `roctx_export` crate).
- [`ffi`]: every crossing of the C ABI: the cxx bridge, the C surface of `roctx_utils.h`, the
  run-time roctx binding and the panic guard that keeps unwinding out of the host.

# Environment

| Variable | Read | Meaning |
|---|---|---|
| `XLA_ROCM_ENABLE_ROCTX` | once, latched | `1`/`true` enables emission, `0`/`false`/unset disables, anything else warns and disables |
| `ROCTX_UTILS_ROCTX_LIBRARY` | once | roctx library to try first (a path or soname) |
| `ROCM_PATH` | once | extra roctx search directory `$ROCM_PATH/lib` |
| `ROCTX_UTILS_STRING_POOL_BYTES` | once | cap on RegisterString's pool (bytes, `k`/`m`/`g` suffixes); default 64 MiB |
| `ROCTX_UTILS_CAPTURE` | once | `auto` (default), `sdk`, `self`, `host`, `off` |
| `ROCTX_UTILS_ROCPROFILER_LIBRARY` | once | rocprofiler-sdk library to try first |
| `ROCTX_UTILS_XSPACE_OUT` | once | a log directory: capture from the first range, write `<dir>/plugins/profile/<run>/<host>.xplane.pb` at stop/exit |
| `ROCTX_UTILS_LOG` | once | `warn` (default), `info`, or `off` for roctx_utils' own stderr messages |

# Example

```
use roctx_utils::emitter;
// No ROCm here: interning still works and handles are stable C strings.
let a = emitter::intern::register(b"Thunk:#hlo_op=fusion.3#");
let b = emitter::intern::register(b"Thunk:#hlo_op=fusion.3#");
assert_eq!(a, b);
let text = unsafe { std::ffi::CStr::from_ptr(a) };
assert_eq!(text.to_str().unwrap(), "Thunk:#hlo_op=fusion.3#");
```
*/
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub, clippy::undocumented_unsafe_blocks)]

pub mod collector;
pub mod emitter;
pub mod export;
pub mod ffi;
pub mod listener;
mod log;
