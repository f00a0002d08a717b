//! The rocprofiler-sdk tool entry of `libroctx_utils_tool.so`. The library's exported
//! `rocprofiler_configure` (`tool/rocprofiler_configure.c`) is a one-line C forwarder to
//! [`roctx_utils_tool_configure`]: the symbol the SDK looks for must exist only in the tool
//! library, never in the staticlib that XLA forks and other hosts link (a global
//! `rocprofiler_configure` there makes rocprofiler-register go looking for the SDK at the first
//! roctx call, and abort when it cannot find it: rocprofiler_abi.md 2.2).
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_char, c_void};

use roctx_sys::rocprofiler::ToolConfigureResult;

use super::guard;
use crate::runtime::tool_library;

/// `rocprofiler_configure` of the tool library: our result, or null to decline.
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_tool_configure(
    version: u32,
    runtime_version: *const c_char,
    priority: u32,
    client_id: *mut c_void,
) -> *mut ToolConfigureResult {
    // SAFETY: the SDK's own arguments, forwarded as they came.
    guard(std::ptr::null_mut(), || unsafe {
        tool_library::configure(version, runtime_version, priority, client_id)
    })
}
