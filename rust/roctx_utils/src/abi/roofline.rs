//! The `extern "C"` surface of `include/roctx_utils/roofline.h`: op scopes and the roofline
//! report. Each entry runs inside [`guard`]; with kernel tracing off, each is a no-op.
#![allow(clippy::missing_safety_doc)]
// The mirrors' fields are the header's, documented there (include/roctx_utils/roofline.h).
#![allow(missing_docs)]

use std::ffi::c_char;
use std::mem::{offset_of, size_of};

use roctx_kernels::OpDescriptor;
use roctx_sys::CText;

use super::guard;
use crate::listener::kernels;
use crate::runtime::{self, roofline};

const STATUS_OK: i32 = 0;
const STATUS_INVALID_ARGUMENT: i32 = 3;
const STATUS_IO_ERROR: i32 = 4;

/// `roctx_utils_op_source`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct OpSourceC {
    pub type_name: *const c_char,
    pub ne: [i64; 4],
    pub bytes: u64,
}

/// `roctx_utils_op_desc`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct OpDescC {
    pub struct_size: u64,
    pub op: *const c_char,
    pub name: *const c_char,
    pub dtype: *const c_char,
    pub quant: *const c_char,
    pub ne: [i64; 4],
    pub src: *const OpSourceC,
    pub n_src: u32,
    pub n_op_params: u32,
    pub op_params: *const i32,
    pub bytes: u64,
    pub dst_bytes: u64,
    pub m: u64,
    pub n: u64,
    pub k: u64,
    pub n_experts: u64,
    pub top_k: u64,
    pub fused: *const OpDescC,
    pub n_fused: u32,
    pub reserved: u32,
}

// The header's static asserts, on this side.
const _: () = {
    assert!(size_of::<OpSourceC>() == 48);
    assert!(offset_of!(OpSourceC, ne) == 8);
    assert!(offset_of!(OpSourceC, bytes) == 40);
    assert!(size_of::<OpDescC>() == 168);
    assert!(offset_of!(OpDescC, op) == 8);
    assert!(offset_of!(OpDescC, quant) == 32);
    assert!(offset_of!(OpDescC, ne) == 40);
    assert!(offset_of!(OpDescC, src) == 72);
    assert!(offset_of!(OpDescC, n_src) == 80);
    assert!(offset_of!(OpDescC, n_op_params) == 84);
    assert!(offset_of!(OpDescC, op_params) == 88);
    assert!(offset_of!(OpDescC, bytes) == 96);
    assert!(offset_of!(OpDescC, m) == 112);
    assert!(offset_of!(OpDescC, top_k) == 144);
    assert!(offset_of!(OpDescC, fused) == 152);
    assert!(offset_of!(OpDescC, n_fused) == 160);
};

/// `roctx_utils_kernel_stats`: `struct_size`, then [`roctx_kernels::KernelStats`] itself
/// (`#[repr(C)]`, all `u64`, in the header's order).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct KernelStatsC {
    pub struct_size: u64,
    pub stats: roctx_kernels::KernelStats,
}
const _: () = {
    assert!(size_of::<KernelStatsC>() == 112);
    assert!(offset_of!(KernelStatsC, stats) + offset_of!(roctx_kernels::KernelStats, dispatches) == 8);
    assert!(offset_of!(KernelStatsC, stats) + offset_of!(roctx_kernels::KernelStats, names_over_cap) == 72);
    assert!(offset_of!(KernelStatsC, stats) + offset_of!(roctx_kernels::KernelStats, unjoined) == 80);
    assert!(offset_of!(KernelStatsC, stats) + offset_of!(roctx_kernels::KernelStats, not_seen) == 88);
    assert!(offset_of!(KernelStatsC, stats) + offset_of!(roctx_kernels::KernelStats, names_too_long) == 96);
    assert!(offset_of!(KernelStatsC, stats) + offset_of!(roctx_kernels::KernelStats, invocations_over_cap) == 104);
};

/// `roctx_utils_kernel_stats_get`.
///
/// # Safety
/// `out` is null or a `roctx_utils_kernel_stats` with `struct_size` set.
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_kernel_stats_get(out: *mut KernelStatsC) -> i32 {
    guard(-1, || {
        kernels::flush();
        let value = KernelStatsC { struct_size: size_of::<KernelStatsC>() as u64, stats: roctx_kernels::stats() };
        // SAFETY: the header requires null or a roctx_utils_kernel_stats with struct_size set.
        unsafe { super::c_api::write_sized(out, value, 16) }
    })
}

/// `roctx_utils_kernels_handover`.
#[no_mangle]
pub extern "C" fn roctx_utils_kernels_handover() -> i32 {
    guard(-1, || if kernels::handover() { 0 } else { 2 })
}

/// `roctx_utils_kernels_reclaim`.
#[no_mangle]
pub extern "C" fn roctx_utils_kernels_reclaim() -> i32 {
    guard(-1, || if kernels::reclaim() { 0 } else { 2 })
}

/// Most elements read from any caller array (sources, parameters, fused nodes): the kernel
/// stage keeps fewer, and counts the cut.
const MAX_READ: u32 = 1024;

/// # Safety
/// `p` must be null or a C string valid for the call.
unsafe fn text(p: *const c_char) -> String {
    // SAFETY: forwarded contract.
    let t = unsafe { CText::from_ptr_or_empty(p) };
    String::from_utf8_lossy(t.to_bytes()).into_owned()
}

/// Reads the caller's descriptor: at most its `struct_size` bytes (the rest reads as zero).
///
/// # Safety
/// `desc` must be null or a descriptor as `roofline.h` describes, valid for the call.
unsafe fn read_desc(desc: *const OpDescC, depth: u32) -> Option<OpDescriptor> {
    if desc.is_null() {
        return None;
    }
    // SAFETY: the struct starts with its u64 size (header contract).
    let size = unsafe { desc.cast::<u64>().read_unaligned() };
    let size = usize::try_from(size).unwrap_or(usize::MAX).min(size_of::<OpDescC>());
    if size < offset_of!(OpDescC, name) {
        return None; // not even the op name
    }
    let mut raw = [0u8; size_of::<OpDescC>()];
    // SAFETY: `size` bytes are readable (contract) and fit `raw`.
    unsafe { std::ptr::copy_nonoverlapping(desc.cast::<u8>(), raw.as_mut_ptr(), size) };
    // SAFETY: `raw` is the struct's size; zeroed pointers and integers are valid values.
    let d = unsafe { std::ptr::read_unaligned(raw.as_ptr().cast::<OpDescC>()) };
    // SAFETY: the strings are null or valid C strings (contract).
    let op = unsafe { text(d.op) };
    if op.is_empty() {
        return None;
    }
    let mut out = OpDescriptor {
        op,
        // SAFETY: as above.
        name: unsafe { text(d.name) },
        // SAFETY: as above.
        dtype: unsafe { text(d.dtype) },
        // SAFETY: as above.
        quant: unsafe { text(d.quant) },
        ne: d.ne,
        bytes: d.bytes,
        dst_bytes: d.dst_bytes,
        m: d.m,
        n: d.n,
        k: d.k,
        n_experts: d.n_experts,
        top_k: d.top_k,
        ..OpDescriptor::default()
    };
    if !d.src.is_null() {
        for i in 0..d.n_src.min(MAX_READ) as usize {
            // SAFETY: `n_src` sources are readable (contract).
            let s = unsafe { d.src.add(i).read_unaligned() };
            out.src_ne.push(s.ne);
            // SAFETY: null or a valid C string (contract).
            out.src_types.push(unsafe { text(s.type_name) });
            out.src_bytes.push(s.bytes);
        }
    }
    if !d.op_params.is_null() {
        for i in 0..d.n_op_params.min(MAX_READ) as usize {
            // SAFETY: `n_op_params` parameters are readable (contract).
            out.op_params.push(unsafe { d.op_params.add(i).read_unaligned() });
        }
    }
    if depth == 0 && !d.fused.is_null() {
        for i in 0..d.n_fused.min(MAX_READ) as usize {
            // SAFETY: `n_fused` descriptors are readable (contract); one level only.
            if let Some(f) = unsafe { read_desc(d.fused.add(i), 1) } {
                out.fused_ops.push(f);
            }
        }
    }
    Some(out)
}

/// Whether op scopes do anything: kernels are traced (start-up configures the SDK first).
fn tracing() -> bool {
    runtime::get();
    kernels::active()
}

/// `roctx_utils_op_begin`.
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_op_begin(op: *const OpDescC) -> u64 {
    guard(0, || {
        if !tracing() {
            return 0;
        }
        // SAFETY: the header's contract for `op`.
        let Some(desc) = (unsafe { read_desc(op, 0) }) else {
            roctx_kernels::count_rejected(1);
            return 0;
        };
        let id = roctx_kernels::begin_invocation(desc);
        let (_, range) = kernels::current_scope();
        kernels::set_scope(id, range);
        u64::from(id)
    })
}

/// `roctx_utils_op_end`.
#[no_mangle]
pub extern "C" fn roctx_utils_op_end() {
    guard((), || {
        if kernels::active() {
            let (_, range) = kernels::current_scope();
            kernels::set_scope(0, range);
        }
    })
}

/// `roctx_utils_op_set_experts_used`.
#[no_mangle]
pub extern "C" fn roctx_utils_op_set_experts_used(invocation: u64, experts: u64) {
    guard((), || {
        if let Ok(invocation) = u32::try_from(invocation) {
            roctx_kernels::set_experts_used(invocation, experts);
        }
    })
}

/// `roctx_utils_op_fuse`.
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_op_fuse(group: *const OpDescC) -> i32 {
    guard(0, || {
        let (invocation, _) = kernels::current_scope();
        // SAFETY: the header's contract for `group`.
        match unsafe { read_desc(group, 0) } {
            Some(group) => i32::from(roctx_kernels::fuse_invocation(invocation, group)),
            None => 0,
        }
    })
}

/// `roctx_utils_roofline_set_device`.
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_roofline_set_device(arch: *const c_char) {
    guard((), || {
        // SAFETY: null or a C string valid for the call (header contract).
        roctx_kernels::set_device(&unsafe { text(arch) });
    })
}

/// `roctx_utils_roofline_reset`.
#[no_mangle]
pub extern "C" fn roctx_utils_roofline_reset() {
    guard((), roofline::reset)
}

/// `roctx_utils_roofline_write`.
#[no_mangle]
pub unsafe extern "C" fn roctx_utils_roofline_write(path: *const c_char) -> i32 {
    guard(STATUS_IO_ERROR, || {
        let path = if path.is_null() {
            match &roctx_config::get().roofline_out {
                Some(p) => p.clone(),
                None => return STATUS_INVALID_ARGUMENT,
            }
        } else {
            // SAFETY: a C string valid for the call (header contract).
            let t = unsafe { CText::from_ptr_or_empty(path) };
            std::path::PathBuf::from(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(t.to_bytes()))
        };
        if roofline::write(&path) { STATUS_OK } else { STATUS_IO_ERROR }
    })
}
