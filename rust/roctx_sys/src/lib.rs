/*!
roctx_utils' outbound bindings: everything it calls that is not Rust, without policy. Which
library to try, when, and what to tell the user about it is decided above (`roctx_utils`'s
`runtime` and `listener`); this crate only binds, checks layouts and reports facts.

- [`roctx`]: one roctx library bound with libloading, and the check that keeps
  rocprofiler-register from aborting the host at roctx's first call;
- [`rocprofiler`]: rocprofiler-sdk's records as `#[repr(C)]` layouts per ABI generation (size and
  offset asserts from the spec tables), decoding, and the tool API's function table;
- [`ggml`]: the host's `ggml_tensor` layout and ggml functions, for the llama.cpp drop-in;
- [`cupti`]: CUPTI's activity API and kernel/correlation records (NVIDIA kernels);
- [`nvtx`]: NVTX3's injection interface (export tables, callback slots, event attributes);
- [`clock`]: the capture clock (the invariant TSC where the kernel trusts it, else
  `CLOCK_BOOTTIME`) and its conversion to BOOTTIME at snapshot time;
- [`os`]: `CLOCK_BOOTTIME` (the clock of rocprofiler-sdk's and CUPTI's records), `gettid`, the
  host name, `atexit`;
- [`CText`]: a C string borrowed from the host, measured only when someone needs its bytes;
- [`tls`]: per-thread values in one block of static TLS (the initial-exec model, also in a
  `dlopen`'ed copy), reached without `__tls_get_addr`;
- [`output`]: how every file is written: whole or not at all, replacing only regular files
  (`output::replace_regular`) or never replacing anything (`output::write_new`);
- [`pages`]: heap memory neither cleared nor built element by element (the collector's event
  chunks, whose every word is stored before it is read: no `memset` of a new chunk);
- [`guard`]: the panic fence every `extern "C"` function of the library runs its body in.

The host's AnnotationStack, the other outbound call, is a cxx bridge and lives in
`roctx_utils::host`: it must be compiled against the AnnotationStack the host selects.
*/
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub, clippy::undocumented_unsafe_blocks)]

pub mod clock;
mod ctext;
pub mod cuda;
pub mod cupti;
pub mod demangle;
pub mod ggml;
mod guard;
pub mod nvtx;
pub mod os;
pub mod output;
pub mod pages;
pub mod rocprofiler;
pub mod roctx;
pub mod signals;
pub mod tls;

pub use ctext::CText;
pub use guard::{guard, panics_caught};
