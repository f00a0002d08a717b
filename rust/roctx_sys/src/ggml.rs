//! ggml -> Rust, for the llama.cpp drop-in (`ggml_cuda_roofline_*`): a `#[repr(C)]` mirror of
//! `struct ggml_tensor`'s stable fields (ggml.h; LP64), and the host's own ggml functions looked
//! up in the process (`dlsym(RTLD_DEFAULT)`: llama.cpp links ggml, so they are there).
//!
//! Op and type *names* and byte counts come from those functions, never from enum values
//! compiled into this library, so an op or type added to ggml after we were built cannot
//! mislabel a row. Without them the drop-in stays inactive and says why.

// The mirror's fields are ggml.h's, documented there.
#![allow(missing_docs)]

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};

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
    hip: bool,
}

/// The GPU runtime's stream-ordered calls for a MoE read-back that never blocks the stream or
/// the host: the ids copied on a side stream into pinned host memory between two events, found
/// in the process like [`DeviceCopy`] (HIP's when the process has it, else CUDA's). Each field
/// is the runtime's documented signature; HIP's and CUDA's agree but for `host_alloc`.
#[derive(Debug, Clone, Copy)]
pub struct AsyncCopy {
    host_alloc: HostAlloc,
    /// `hipEventCreateWithFlags` / `cudaEventCreateWithFlags`.
    event_create: unsafe extern "C" fn(*mut *mut c_void, c_uint) -> c_int,
    /// `hipEventQuery` / `cudaEventQuery`.
    event_query: unsafe extern "C" fn(*mut c_void) -> c_int,
    /// `hipEventSynchronize` / `cudaEventSynchronize`.
    event_synchronize: unsafe extern "C" fn(*mut c_void) -> c_int,
    /// `hipStreamCreateWithFlags` / `cudaStreamCreateWithFlags`.
    stream_create: unsafe extern "C" fn(*mut *mut c_void, c_uint) -> c_int,
    /// The calls of every read-back.
    per_op: PerOp,
    hip: bool,
}

/// The calls made for every read-back ([`AsyncCopy::enqueue`], [`AsyncCopy::wait`],
/// [`AsyncCopy::device`]): with CUDA, the driver API's when the process has loaded it, else the
/// runtime's. Under CUPTI each runtime call is intercepted twice (the runtime's callback, then
/// the driver call it makes): the driver's calls took 5 us off each 1-token MoE op on the H200
/// (issue 28). The runtime's streams and events are the driver's (`cudaStream_t` is `CUstream`).
#[derive(Debug, Clone, Copy)]
struct PerOp {
    /// `hipEventRecord` / `cudaEventRecord` / `cuEventRecord` (event, stream).
    event_record: unsafe extern "C" fn(*mut c_void, *mut c_void) -> c_int,
    /// `hipStreamWaitEvent` / `cudaStreamWaitEvent` / `cuStreamWaitEvent` (stream, event, flags).
    stream_wait_event: unsafe extern "C" fn(*mut c_void, *mut c_void, c_uint) -> c_int,
    /// `hipGetDevice` / `cudaGetDevice` / `cuCtxGetDevice` (the current context's device: the
    /// runtime's current device, whose primary context `cudaSetDevice` made current).
    get_device: unsafe extern "C" fn(*mut c_int) -> c_int,
    copy: DeviceToHost,
    names: &'static PerOpNames,
}

#[derive(Debug, Clone, Copy)]
enum DeviceToHost {
    /// `hipMemcpyAsync` / `cudaMemcpyAsync` (dst, src, bytes, kind, stream).
    Runtime(unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int, *mut c_void) -> c_int),
    /// `cuMemcpyDtoHAsync_v2` (dst, src, bytes, stream).
    Driver(unsafe extern "C" fn(*mut c_void, *const c_void, usize, *mut c_void) -> c_int),
}

/// The names [`PerOp`]'s calls fail under.
#[derive(Debug)]
struct PerOpNames {
    record: &'static str,
    wait: &'static str,
    copy: &'static str,
    device: &'static str,
}

const HIP_PER_OP: PerOpNames = PerOpNames { record: "hipEventRecord", wait: "hipStreamWaitEvent", copy: "hipMemcpyAsync", device: "hipGetDevice" };
const CUDA_PER_OP: PerOpNames = PerOpNames { record: "cudaEventRecord", wait: "cudaStreamWaitEvent", copy: "cudaMemcpyAsync", device: "cudaGetDevice" };
const DRIVER_PER_OP: PerOpNames = PerOpNames { record: "cuEventRecord", wait: "cuStreamWaitEvent", copy: "cuMemcpyDtoHAsync_v2", device: "cuCtxGetDevice" };

/// The streams and events of one read-back ([`AsyncCopy::enqueue`]).
#[derive(Debug, Clone, Copy)]
pub struct Queues {
    /// Where the ids are produced (the op's stream).
    pub stream: *mut c_void,
    /// Recorded on `stream` before the copy.
    pub ready: *mut c_void,
    /// The side stream the copy runs on.
    pub side: *mut c_void,
    /// Recorded on `side` after the copy.
    pub done: *mut c_void,
}

#[derive(Debug, Clone, Copy)]
enum HostAlloc {
    /// `hipHostMalloc(ptr, bytes, flags)`.
    Hip(unsafe extern "C" fn(*mut *mut c_void, usize, c_uint) -> c_int),
    /// `cudaMallocHost(ptr, bytes)`.
    Cuda(unsafe extern "C" fn(*mut *mut c_void, usize) -> c_int),
}

/// `hipErrorNotReady`, `cudaErrorNotReady` and `CUDA_ERROR_NOT_READY` are all 600.
pub const NOT_READY: c_int = 600;
/// `hipEventDisableTiming` / `cudaEventDisableTiming`.
const EVENT_DISABLE_TIMING: c_uint = 2;
/// `hipStreamNonBlocking` / `cudaStreamNonBlocking`.
const STREAM_NON_BLOCKING: c_uint = 1;

/// A runtime or driver call that failed: its name and status.
pub type CallError = (&'static str, c_int);

fn status(call: &'static str, s: c_int) -> Result<(), CallError> {
    if s == 0 { Ok(()) } else { Err((call, s)) }
}

/// `concat!("hip", name)` or `concat!("cuda", name)`.
macro_rules! named {
    ($hip:expr, $name:literal) => {
        if $hip { concat!("hip", $name) } else { concat!("cuda", $name) }
    };
}

impl AsyncCopy {
    /// The process's HIP or CUDA runtime functions, if either has them all (with CUDA, the
    /// driver's for the calls of every read-back where the process has loaded `libcuda.so.1`).
    pub fn find() -> Option<AsyncCopy> {
        let this = Library::this();
        macro_rules! get {
            ($name:expr) => {{
                let name: String = $name;
                // SAFETY: each use below names the field's documented signature.
                unsafe { this.get(format!("{name}\0").as_bytes()).map(|s| *s).ok()? }
            }};
        }
        for runtime in ["hip", "cuda"] {
            let found = (|| {
                let hip = runtime == "hip";
                let host_alloc = if hip { HostAlloc::Hip(get!("hipHostMalloc".to_owned())) } else { HostAlloc::Cuda(get!("cudaMallocHost".to_owned())) };
                let runtime_per_op = PerOp {
                    event_record: get!(format!("{runtime}EventRecord")),
                    stream_wait_event: get!(format!("{runtime}StreamWaitEvent")),
                    get_device: get!(format!("{runtime}GetDevice")),
                    copy: DeviceToHost::Runtime(get!(format!("{runtime}MemcpyAsync"))),
                    names: if hip { &HIP_PER_OP } else { &CUDA_PER_OP },
                };
                Some(AsyncCopy {
                    host_alloc,
                    event_create: get!(format!("{runtime}EventCreateWithFlags")),
                    event_query: get!(format!("{runtime}EventQuery")),
                    event_synchronize: get!(format!("{runtime}EventSynchronize")),
                    stream_create: get!(format!("{runtime}StreamCreateWithFlags")),
                    per_op: if hip { runtime_per_op } else { driver_per_op().unwrap_or(runtime_per_op) },
                    hip,
                })
            })();
            if found.is_some() {
                return found;
            }
        }
        None
    }

    /// The calling thread's current device.
    pub fn device(&self) -> Result<c_int, CallError> {
        let mut d: c_int = 0;
        // SAFETY: a valid out-pointer.
        status(self.per_op.names.device, unsafe { (self.per_op.get_device)(&mut d) }).map(|()| d)
    }

    /// `bytes` of pinned host memory on the current device's behalf. Never freed by us: freeing
    /// pinned memory synchronizes the device.
    pub fn host_alloc(&self, bytes: usize) -> Result<*mut u8, CallError> {
        let mut p: *mut c_void = std::ptr::null_mut();
        let s = match self.host_alloc {
            // SAFETY: a valid out-pointer; flags 0 (hipHostMallocDefault).
            HostAlloc::Hip(f) => unsafe { f(&mut p, bytes, 0) },
            // SAFETY: a valid out-pointer.
            HostAlloc::Cuda(f) => unsafe { f(&mut p, bytes) },
        };
        status(if self.hip { "hipHostMalloc" } else { "cudaMallocHost" }, s).map(|()| p.cast())
    }

    /// An event without timing on the current device.
    pub fn event(&self) -> Result<*mut c_void, CallError> {
        let mut e: *mut c_void = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        status(named!(self.hip, "EventCreateWithFlags"), unsafe { (self.event_create)(&mut e, EVENT_DISABLE_TIMING) }).map(|()| e)
    }

    /// A stream of the current device that does not synchronize with the null stream.
    pub fn stream(&self) -> Result<*mut c_void, CallError> {
        let mut s: *mut c_void = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        status(named!(self.hip, "StreamCreateWithFlags"), unsafe { (self.stream_create)(&mut s, STREAM_NON_BLOCKING) }).map(|()| s)
    }

    /// Enqueues, without blocking anything: `q.ready` recorded on `q.stream` (where the ids are
    /// produced), `q.side` waiting for it, the copy of `bytes` at `src` into `dst` on `q.side`,
    /// and `q.done` recorded after it.
    ///
    /// # Safety
    /// Events and side stream of the device that owns `q.stream`; `src` device memory readable
    /// for `bytes` until `done` completes; `dst` pinned memory of at least `bytes`, untouched
    /// until `done` completes.
    pub unsafe fn enqueue(&self, q: &Queues, dst: *mut u8, src: *const c_void, bytes: usize) -> Result<(), CallError> {
        let (f, n) = (&self.per_op, self.per_op.names);
        // SAFETY: per contract.
        unsafe {
            status(n.record, (f.event_record)(q.ready, q.stream))?;
            status(n.wait, (f.stream_wait_event)(q.side, q.ready, 0))?;
            let copied = match f.copy {
                DeviceToHost::Runtime(copy) => copy(dst.cast(), src, bytes, DEVICE_TO_HOST, q.side),
                DeviceToHost::Driver(copy) => copy(dst.cast(), src, bytes, q.side),
            };
            status(n.copy, copied)?;
            status(n.record, (f.event_record)(q.done, q.side))
        }
    }

    /// Makes `stream`'s later work wait for `event` (never blocks the host).
    ///
    /// # Safety
    /// A stream and an event of the runtime.
    pub unsafe fn wait(&self, stream: *mut c_void, event: *mut c_void) -> Result<(), CallError> {
        // SAFETY: per contract.
        status(self.per_op.names.wait, unsafe { (self.per_op.stream_wait_event)(stream, event, 0) })
    }

    /// Whether `event` has completed: `Ok(false)` while it has not.
    ///
    /// # Safety
    /// An event of the runtime.
    pub unsafe fn done(&self, event: *mut c_void) -> Result<bool, CallError> {
        // SAFETY: per contract.
        match unsafe { (self.event_query)(event) } {
            0 => Ok(true),
            NOT_READY => Ok(false),
            s => Err((named!(self.hip, "EventQuery"), s)),
        }
    }

    /// Blocks until `event` completes.
    ///
    /// # Safety
    /// An event of the runtime.
    pub unsafe fn finish(&self, event: *mut c_void) -> Result<(), CallError> {
        // SAFETY: per contract.
        status(named!(self.hip, "EventSynchronize"), unsafe { (self.event_synchronize)(event) })
    }
}

/// The CUDA driver's calls for [`PerOp`], from the process (a host that links `libcuda`, or a
/// test playing it) or its already loaded `libcuda.so.1` (the runtime opens it privately).
fn driver_per_op() -> Option<PerOp> {
    let this = Library::this();
    // SAFETY: RTLD_NOLOAD only returns a library already loaded and initialised in the process;
    // kept open for the process's life (its functions are called until exit).
    let loaded = || unsafe { Library::open(Some("libcuda.so.1"), libc::RTLD_NOW | libc::RTLD_NOLOAD) }.ok().map(|l| &*Box::leak(Box::new(l)));
    for lib in std::iter::once(Some(&this)).chain(std::iter::once_with(loaded)).flatten() {
        macro_rules! get {
            ($name:literal) => {
                // SAFETY: the driver API's signature of that function (cuda.h), as the field says.
                unsafe { lib.get(concat!($name, "\0").as_bytes()).map(|s| *s).ok() }
            };
        }
        let found = (|| {
            Some(PerOp {
                event_record: get!("cuEventRecord")?,
                stream_wait_event: get!("cuStreamWaitEvent")?,
                get_device: get!("cuCtxGetDevice")?,
                copy: DeviceToHost::Driver(get!("cuMemcpyDtoHAsync_v2")?),
                names: &DRIVER_PER_OP,
            })
        })();
        if found.is_some() {
            return found;
        }
    }
    None
}

/// `hipMemcpyDeviceToHost` and `cudaMemcpyDeviceToHost` are both 2.
const DEVICE_TO_HOST: c_int = 2;

impl DeviceCopy {
    /// The process's HIP or CUDA runtime functions, if either is there.
    pub fn find() -> Option<DeviceCopy> {
        let this = Library::this();
        for (hip, sync, memcpy) in [(true, "hipStreamSynchronize\0", "hipMemcpy\0"), (false, "cudaStreamSynchronize\0", "cudaMemcpy\0")] {
            // SAFETY: the field types are the runtimes' documented signatures.
            let found = unsafe { (this.get(sync.as_bytes()).map(|s| *s), this.get(memcpy.as_bytes()).map(|s| *s)) };
            if let (Ok(sync), Ok(memcpy)) = found {
                return Some(DeviceCopy { sync, memcpy, hip });
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
    pub unsafe fn read(&self, stream: *mut c_void, src: *const c_void, bytes: usize) -> Result<Vec<u8>, CallError> {
        // SAFETY: per contract.
        status(named!(self.hip, "StreamSynchronize"), unsafe { (self.sync)(stream) })?;
        let mut out = vec![0u8; bytes];
        // SAFETY: `out` holds `bytes` writable bytes; `src` per contract.
        status(named!(self.hip, "Memcpy"), unsafe { (self.memcpy)(out.as_mut_ptr().cast(), src, bytes, DEVICE_TO_HOST) })?;
        Ok(out)
    }
}
