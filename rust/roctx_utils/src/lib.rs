/*!
ROCm's answer to NVTX in XLA/JAX: the `tsl::profiler` range-annotation backend, marker capture
and trace export, as one Rust staticlib linked into C++ hosts. This crate is the facade: the
layers a host reaches (abi, emitter, runtime) and the ones that need them (listener, export)
are its modules; the layers below are crates of their own, so the compiler enforces that they
never call up.

# Layers (each only calls those below it)

```text
  host C++ / C / Python (nvtx_utils.h, roctx_utils.h)
        |
  abi        cxx bridge (extern "Rust"), the C API                     [abi]
  emitter    domain, dual push, naming, RegisterString, annotations    [emitter]
  runtime    start-up sequence, roctx binding policy, sink, sessions   [runtime]
  listener   capture modes, SDK tool mode, host-fed records            [listener]
  export     snapshot -> XSpace / log dir / Chrome JSON                [export] + roctx_export
  collector  per-thread buffers, sessions, record types, Sink          roctx_collector
  sys        roctx, rocprofiler-sdk, clock, gettid, guard              roctx_sys + [host]
  config     every environment variable, read once; stderr messages    roctx_config
```

`docs/architecture.md` draws the data flow and states the rules; `tests/layers.rs` fails the
build's tests when a source file imports a layer above its own.

# Modules

- [`abi`]: every inbound crossing of the C ABI: the cxx bridge exporting the drop-in functions,
  the C surface of `roctx_utils.h`, all run inside the panic [`abi::guard`].
- [`emitter`]: the drop-in API's behaviour: the domain, the dual push into AnnotationStack and
  roctx (and the installed sink), naming, string interning, the annotation object.
- [`runtime`]: the one start-up sequence (config, SDK, roctx, automatic session), the event
  sink the emitter records through, sessions and the exit hook.
- [`listener`]: capture modes; rocprofiler-sdk tool mode, host-fed records, the marker state
  machine's inputs.
- [`export`]: snapshots as XSpace (a `/host:ROCTX` plane merged into `/host:CPU`), TensorBoard
  log directories and Chrome JSON (formats in the `roctx_export` crate).
- [`host`]: the host's AnnotationStack (a `sys`-layer cxx bridge).

# Environment

Every variable is listed, with its grammar and default, in [`roctx_config::VARS`] and in the
README's Environment table (a test keeps the two equal).

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

pub mod abi;
pub mod emitter;
pub mod export;
pub mod host;
pub mod listener;
pub mod runtime;

/// The lower layers, for Rust users of the rlib.
pub use {roctx_collector as collector, roctx_config as config, roctx_sys as sys};
