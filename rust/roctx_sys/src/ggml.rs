//! ggml -> Rust, for the llama.cpp drop-in (`ggml_cuda_roofline_*`): a `#[repr(C)]` mirror of
//! `struct ggml_tensor`'s stable fields (ggml.h; LP64), and the host's own ggml functions looked
//! up in the process (`dlsym(RTLD_DEFAULT)`: llama.cpp links ggml, so they are there).
//!
//! Op and type *names* and byte counts come from those functions, never from enum values
//! compiled into this library, so an op or type added to ggml after we were built cannot
//! mislabel a row. Without them the drop-in stays inactive and says why.

// The mirror's fields are ggml.h's, documented there.
#![allow(missing_docs)]

use std::ffi::{c_char, c_int, c_void, CStr};

use libloading::os::unix::Library;

/// `GGML_MAX_DIMS`.
pub const MAX_DIMS: usize = 4;
/// `GGML_MAX_OP_PARAMS / sizeof(int32_t)`.
pub const MAX_OP_PARAMS: usize = 16;
/// `GGML_MAX_SRC`.
pub const MAX_SRC: usize = 10;
/// `GGML_MAX_NAME`.
pub const MAX_NAME: usize = 64;

/// `struct ggml_tensor` (ggml.h, unchanged in layout since `flags` replaced `is_param`).
#[repr(C)]
#[derive(Debug)]
pub struct Tensor {
    pub type_: c_int,
    pub buffer: *mut c_void,
    pub ne: [i64; MAX_DIMS],
    pub nb: [usize; MAX_DIMS],
    pub op: c_int,
    pub op_params: [i32; MAX_OP_PARAMS],
    pub flags: i32,
    pub src: [*const Tensor; MAX_SRC],
    pub view_src: *const Tensor,
    pub view_offs: usize,
    pub data: *mut c_void,
    pub name: [c_char; MAX_NAME],
    pub extra: *mut c_void,
    pub padding: [u8; 8],
}
const _: () = {
    assert!(std::mem::size_of::<Tensor>() == 336);
    assert!(std::mem::offset_of!(Tensor, ne) == 16);
    assert!(std::mem::offset_of!(Tensor, nb) == 48);
    assert!(std::mem::offset_of!(Tensor, op) == 80);
    assert!(std::mem::offset_of!(Tensor, op_params) == 84);
    assert!(std::mem::offset_of!(Tensor, flags) == 148);
    assert!(std::mem::offset_of!(Tensor, src) == 152);
    assert!(std::mem::offset_of!(Tensor, view_src) == 232);
    assert!(std::mem::offset_of!(Tensor, data) == 248);
    assert!(std::mem::offset_of!(Tensor, name) == 256);
    assert!(std::mem::offset_of!(Tensor, extra) == 320);
};

/// The host's ggml functions the drop-in reads tensors with.
#[derive(Debug, Clone, Copy)]
pub struct Api {
    /// `ggml_op_desc`: the op name, or the unary/GLU sub-op name.
    pub op_desc: unsafe extern "C" fn(*const Tensor) -> *const c_char,
    /// `ggml_type_name`.
    pub type_name: unsafe extern "C" fn(c_int) -> *const c_char,
    /// `ggml_nbytes`.
    pub nbytes: unsafe extern "C" fn(*const Tensor) -> usize,
    /// `ggml_graph_node` (negative indices count from the end); only `fuse_ops` needs it.
    pub graph_node: Option<unsafe extern "C" fn(*mut c_void, c_int) -> *mut Tensor>,
    /// `ggml_graph_n_nodes`, to bound `graph_node`'s index.
    pub graph_n_nodes: Option<unsafe extern "C" fn(*mut c_void) -> c_int>,
}

impl Api {
    /// Looks the functions up in the process; the error names the first one missing.
    pub fn find() -> Result<Api, String> {
        let this = Library::this();
        macro_rules! find {
            ($name:literal) => {{
                // SAFETY: the field type is ggml.h's signature of that function.
                let f = unsafe { this.get(concat!($name, "\0").as_bytes()) };
                f.map(|s| *s)
            }};
        }
        let missing = |name: &str| format!("{name} is not in the process (the drop-in reads tensors through the host's own ggml)");
        Ok(Api {
            op_desc: find!("ggml_op_desc").map_err(|_| missing("ggml_op_desc"))?,
            type_name: find!("ggml_type_name").map_err(|_| missing("ggml_type_name"))?,
            nbytes: find!("ggml_nbytes").map_err(|_| missing("ggml_nbytes"))?,
            graph_node: find!("ggml_graph_node").ok(),
            graph_n_nodes: find!("ggml_graph_n_nodes").ok(),
        })
    }

    /// The name `f` returns, lossy, capped at 256 bytes; empty for null.
    ///
    /// # Safety
    /// `p` must be null or a NUL-terminated string that stays valid for the call.
    pub unsafe fn text(p: *const c_char) -> String {
        if p.is_null() {
            return String::new();
        }
        // SAFETY: per contract.
        let bytes = unsafe { CStr::from_ptr(p) }.to_bytes();
        String::from_utf8_lossy(&bytes[..bytes.len().min(256)]).into_owned()
    }
}

/// The GPU runtime's synchronize and copy, for the MoE read-back of a `MUL_MAT_ID`'s ids tensor
/// (roofline.md 5.4): HIP's when the process has it, else CUDA's. Found in the process, never
/// loaded: the host's ggml backend already linked one.
#[derive(Debug, Clone, Copy)]
pub struct DeviceCopy {
    /// `hipStreamSynchronize` / `cudaStreamSynchronize`.
    sync: unsafe extern "C" fn(*mut c_void) -> c_int,
    /// `hipMemcpy` / `cudaMemcpy` (dst, src, bytes, kind).
    memcpy: unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int) -> c_int,
    /// `"hip"` or `"cuda"`.
    pub runtime: &'static str,
}

/// `hipMemcpyDeviceToHost` and `cudaMemcpyDeviceToHost` are both 2.
const DEVICE_TO_HOST: c_int = 2;

impl DeviceCopy {
    /// The process's HIP or CUDA runtime functions, if either is there.
    pub fn find() -> Option<DeviceCopy> {
        let this = Library::this();
        for (runtime, sync, memcpy) in [("hip", "hipStreamSynchronize\0", "hipMemcpy\0"), ("cuda", "cudaStreamSynchronize\0", "cudaMemcpy\0")] {
            // SAFETY: the field types are the runtimes' documented signatures.
            let found = unsafe { (this.get(sync.as_bytes()).map(|s| *s), this.get(memcpy.as_bytes()).map(|s| *s)) };
            if let (Ok(sync), Ok(memcpy)) = found {
                return Some(DeviceCopy { sync, memcpy, runtime });
            }
        }
        None
    }

    /// Waits for `stream`, then copies `bytes` bytes of device memory at `src` to the host.
    /// The error is the runtime's status of the call that failed.
    ///
    /// # Safety
    /// `stream` must be a stream of the runtime (or null, its default stream) and `src` device
    /// memory readable for `bytes` bytes.
    pub unsafe fn read(&self, stream: *mut c_void, src: *const c_void, bytes: usize) -> Result<Vec<u8>, (&'static str, c_int)> {
        // SAFETY: per contract.
        let status = unsafe { (self.sync)(stream) };
        if status != 0 {
            return Err(("StreamSynchronize", status));
        }
        let mut out = vec![0u8; bytes];
        // SAFETY: `out` holds `bytes` writable bytes; `src` per contract.
        let status = unsafe { (self.memcpy)(out.as_mut_ptr().cast(), src, bytes, DEVICE_TO_HOST) };
        if status != 0 {
            return Err(("Memcpy", status));
        }
        Ok(out)
    }
}
