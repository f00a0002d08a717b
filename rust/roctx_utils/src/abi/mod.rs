//! The top layer: what hosts call. Every inbound crossing of the C ABI lives here, and only
//! here:
//!
//! - [`bridge`]: the drop-in `tsl::profiler` functions, exported under their upstream C++ names
//!   through cxx (`extern "Rust"`), plus the targets of the C++ forwarders;
//! - [`c_api`]: the `extern "C"` surface of `roctx_utils.h` (annotation handles, sessions,
//!   snapshots, export, diagnostics);
//! - [`ggml`]: llama.cpp's five `ggml_cuda_roofline_*` entry points (the `GGML_HIP_ROOFLINE` drop-in);
//! - [`roofline`]: the `extern "C"` surface of `roofline.h` (op scopes, the report);
//! - [`tool`]: the rocprofiler-sdk tool entry behind `libroctx_utils_tool.so`'s `rocprofiler_configure`;
//! - [`guard`] (from `roctx_sys`, where the listener's SDK callbacks and the runtime's exit hook
//!   reach it too): every entry runs inside it, so a panic becomes a counted neutral result and
//!   never unwinds into C++ (cxx would abort, and an abort takes the host down).
//!
//! Bodies here translate arguments and call the layers below; they hold no state of their own.

pub mod bridge;
pub mod c_api;
pub mod ggml;
pub mod nvtx;
pub mod roofline;
pub mod tool;

pub use roctx_sys::{guard, panics_caught};
