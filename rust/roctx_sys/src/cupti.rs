//! CUPTI's activity API (nvidia_sources.md C): the functions kernel tracing needs, bound at run
//! time from the process's own `libcupti` (never a second copy), and the records it reads, as
//! `#[repr(C)]` layouts with the spec's offsets asserted. Records are read through
//! `cuptiActivityGetNextRecord`, never stepped by size; kernel records are read up to the
//! 208-byte prefix that Kernel9, 10 and 13 share.
// The fields are CUPTI's, named as in its headers (nvidia_sources.md C.4, C.5).
#![allow(missing_docs)]

use std::ffi::{c_char, c_void, CStr};
use std::path::Path;

use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};

/// `CUptiResult`.
pub type CuptiResult = i32;
/// `CUPTI_SUCCESS`.
pub const SUCCESS: CuptiResult = 0;
/// `CUPTI_ERROR_MAX_LIMIT_REACHED`: no more records in the buffer.
pub const ERROR_MAX_LIMIT_REACHED: CuptiResult = 12;
/// `CUPTI_ERROR_INVALID_KIND`: no more records in the buffer (another way CUPTI says it).
pub const ERROR_INVALID_KIND: CuptiResult = 21;

/// Activity kinds (C.3).
pub mod kind {
    pub const MEMCPY: i32 = 1;
    pub const MEMSET: i32 = 2;
    pub const DRIVER: i32 = 4;
    pub const RUNTIME: i32 = 5;
    pub const CONCURRENT_KERNEL: i32 = 10;
    pub const MEMCPY2: i32 = 22;
    pub const EXTERNAL_CORRELATION: i32 = 39;
}

/// `CUPTI_CB_DOMAIN_DRIVER_API`: driver API callback ids (DRIVER records' `cbid`).
pub const DOMAIN_DRIVER_API: u32 = 1;
/// `CUPTI_CB_DOMAIN_RUNTIME_API`: runtime API callback ids (RUNTIME records' `cbid`).
pub const DOMAIN_RUNTIME_API: u32 = 2;

/// Whether a CUDA runtime or driver function (by name) puts work on the GPU that kernel,
/// copy or set records can name by correlation id: launches (`cudaLaunchKernel`,
/// `cuLaunchKernelEx`, cooperative and host-function launches), graph launches, copies and
/// sets. The join needs exactly these API records.
pub fn enqueues_gpu_work(name: &str) -> bool {
    const PREFIXES: [&str; 8] = ["cudaLaunch", "cudaGraphLaunch", "cudaMemcpy", "cudaMemset", "cuLaunch", "cuGraphLaunch", "cuMemcpy", "cuMemset"];
    PREFIXES.iter().any(|p| name.starts_with(p))
}

/// `CUpti_BuffersCallbackRequestFunc`.
pub type BufferRequested = unsafe extern "C" fn(buffer: *mut *mut u8, size: *mut usize, max_records: *mut usize);
/// `CUpti_BuffersCallbackCompleteFunc`.
pub type BufferCompleted = unsafe extern "C" fn(context: *mut c_void, stream_id: u32, buffer: *mut u8, size: usize, valid: usize);
/// `CUpti_TimestampCallbackFunc`.
pub type TimestampCallback = unsafe extern "C" fn() -> u64;

/// The CUPTI functions kernel tracing needs.
#[derive(Debug)]
pub struct Api {
    pub get_version: unsafe extern "C" fn(*mut u32) -> CuptiResult,
    pub get_result_string: unsafe extern "C" fn(CuptiResult, *mut *const c_char) -> CuptiResult,
    pub register_callbacks: unsafe extern "C" fn(BufferRequested, BufferCompleted) -> CuptiResult,
    pub register_timestamp_callback: Option<unsafe extern "C" fn(TimestampCallback) -> CuptiResult>,
    pub enable: unsafe extern "C" fn(i32) -> CuptiResult,
    /// `cuptiActivityDisable(kind)`.
    pub disable: unsafe extern "C" fn(i32) -> CuptiResult,
    pub get_next_record: unsafe extern "C" fn(*mut u8, usize, *mut *mut u8) -> CuptiResult,
    pub flush_all: unsafe extern "C" fn(u32) -> CuptiResult,
    /// `cuptiGetTimestamp`: CUPTI's clock, which is our timestamp callback while CUPTI keeps it
    /// (another client's `cuptiFinalize` drops it: how a takeover's end is seen).
    pub get_timestamp: Option<unsafe extern "C" fn(*mut u64) -> CuptiResult>,
    pub dropped_records: unsafe extern "C" fn(*mut c_void, u32, *mut usize) -> CuptiResult,
    /// `cuptiActivityEnableRuntimeApi(cbid, enable)` (CUPTI 12.5+): whether calls of one
    /// runtime function make RUNTIME records.
    pub enable_runtime_api: Option<unsafe extern "C" fn(u32, u8) -> CuptiResult>,
    /// `cuptiActivityEnableDriverApi(cbid, enable)` (CUPTI 12.5+): the same for DRIVER records.
    pub enable_driver_api: Option<unsafe extern "C" fn(u32, u8) -> CuptiResult>,
    /// `cuptiGetCallbackName(domain, cbid, &name)`: a callback id's function name.
    pub get_callback_name: Option<unsafe extern "C" fn(u32, u32, *mut *const c_char) -> CuptiResult>,
    /// `cuptiGetVersion`'s answer.
    pub version: u32,
    /// Where the library was found.
    pub location: String,
    _library: Library,
}

/// Sonames tried, newest first.
pub const SONAMES: [&str; 2] = ["libcupti.so.13", "libcupti.so.12"];

/// Whether the process has a libcupti loaded already (looked up by soname, never loaded).
pub fn loaded_in_process() -> bool {
    SONAMES.iter().any(|soname| {
        let name = std::ffi::CString::new(*soname).unwrap_or_default();
        // SAFETY: RTLD_NOLOAD only looks the name up; the handle is closed at once.
        let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
        if handle.is_null() {
            return false;
        }
        // SAFETY: a handle dlopen just returned.
        unsafe { libc::dlclose(handle) };
        true
    })
}

impl Api {
    /// The process's libcupti if one is loaded already (JAX's and PyTorch's wheels load theirs),
    /// else `explicit` (a path), else a soname through the loader's search. The error lists
    /// every attempt.
    pub fn open(explicit: Option<&Path>) -> Result<Api, String> {
        let mut tried = Vec::new();
        for soname in SONAMES {
            // SAFETY: RTLD_NOLOAD only returns a library already initialised in this process.
            match unsafe { Library::open(Some(soname), RTLD_NOW | RTLD_LOCAL | libc::RTLD_NOLOAD) } {
                Ok(lib) => return Api::bind(lib, format!("{soname} (already loaded)")),
                Err(_) => tried.push(format!("{soname}: not loaded in the process")),
            }
        }
        let candidates: Vec<String> = match explicit {
            Some(path) => vec![path.display().to_string()],
            None => SONAMES.iter().map(|s| (*s).to_owned()).collect(),
        };
        for candidate in candidates {
            // SAFETY: loading CUPTI runs its initialisers, which have no preconditions.
            match unsafe { Library::open(Some(&candidate), RTLD_NOW | RTLD_LOCAL) } {
                Ok(lib) => return Api::bind(lib, candidate),
                Err(e) => tried.push(format!("{candidate}: {e}")),
            }
        }
        Err(format!("no libcupti could be loaded (tried: {})", tried.join("; ")))
    }

    fn bind(lib: Library, location: String) -> Result<Api, String> {
        macro_rules! bind {
            ($name:literal) => {{
                // SAFETY: the field type is CUPTI's signature of that function (C.2).
                let f = unsafe { lib.get(concat!($name, "\0").as_bytes()) };
                f.map(|s| *s).map_err(|_| format!("{location} has no {}", $name))?
            }};
        }
        let get_version: unsafe extern "C" fn(*mut u32) -> CuptiResult = bind!("cuptiGetVersion");
        let mut version = 0u32;
        // SAFETY: a valid out-pointer.
        unsafe { get_version(&mut version) };
        Ok(Api {
            get_version,
            get_result_string: bind!("cuptiGetResultString"),
            register_callbacks: bind!("cuptiActivityRegisterCallbacks"),
            // SAFETY: as in bind!.
            register_timestamp_callback: unsafe { lib.get(b"cuptiActivityRegisterTimestampCallback\0") }.ok().map(|s| *s),
            enable: bind!("cuptiActivityEnable"),
            disable: bind!("cuptiActivityDisable"),
            get_next_record: bind!("cuptiActivityGetNextRecord"),
            flush_all: bind!("cuptiActivityFlushAll"),
            // SAFETY: as in bind!.
            get_timestamp: unsafe { lib.get(b"cuptiGetTimestamp\0") }.ok().map(|s| *s),
            dropped_records: bind!("cuptiActivityGetNumDroppedRecords"),
            // SAFETY: as in bind!.
            enable_runtime_api: unsafe { lib.get(b"cuptiActivityEnableRuntimeApi\0") }.ok().map(|s| *s),
            // SAFETY: as in bind!.
            enable_driver_api: unsafe { lib.get(b"cuptiActivityEnableDriverApi\0") }.ok().map(|s| *s),
            // SAFETY: as in bind!.
            get_callback_name: unsafe { lib.get(b"cuptiGetCallbackName\0") }.ok().map(|s| *s),
            version,
            location,
            _library: lib,
        })
    }

    /// The function name of callback id `cbid` of `domain` ([`DOMAIN_DRIVER_API`],
    /// [`DOMAIN_RUNTIME_API`]), if CUPTI knows it.
    pub fn callback_name(&self, domain: u32, cbid: u32) -> Option<String> {
        let get = self.get_callback_name?;
        let mut p: *const c_char = std::ptr::null();
        // SAFETY: a valid out-pointer; CUPTI returns a static string.
        if unsafe { get(domain, cbid, &mut p) } != SUCCESS || p.is_null() {
            return None;
        }
        // SAFETY: a static NUL-terminated string.
        Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }

    /// CUPTI's name for `result`.
    pub fn result_name(&self, result: CuptiResult) -> String {
        let mut p: *const c_char = std::ptr::null();
        // SAFETY: a valid out-pointer; CUPTI returns a static string.
        if unsafe { (self.get_result_string)(result, &mut p) } == SUCCESS && !p.is_null() {
            // SAFETY: a static NUL-terminated string.
            return format!("{} ({result})", unsafe { CStr::from_ptr(p) }.to_string_lossy());
        }
        format!("CUPTI error {result}")
    }
}

/// The 208-byte prefix of `CUpti_ActivityKernel9/10/13` (C.4).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct KernelPrefix {
    pub kind: u32,
    pub cache_config: u8,
    pub shared_memory_config: u8,
    pub registers_per_thread: u16,
    pub partitioned_global_cache_requested: u32,
    pub partitioned_global_cache_executed: u32,
    pub start: u64,
    pub end: u64,
    pub completed: u64,
    pub device_id: u32,
    pub context_id: u32,
    pub stream_id: u32,
    pub grid: [i32; 3],
    pub block: [i32; 3],
    pub static_shared_memory: i32,
    pub dynamic_shared_memory: i32,
    pub local_memory_per_thread: u32,
    pub local_memory_total: u32,
    pub correlation_id: u32,
    pub grid_id: i64,
    pub name: *const c_char,
    pub reserved0: u64,
    pub queued: u64,
    pub submitted: u64,
    pub launch_type: u8,
    pub is_shared_memory_carveout_requested: u8,
    pub shared_memory_carveout_requested: u8,
    pub padding: u8,
    pub shared_memory_executed: u32,
    pub graph_node_id: u64,
    pub shmem_limit_config: u32,
    pub graph_id: u32,
    pub access_policy_window: *mut c_void,
    pub channel_id: u32,
    pub channel_type: u32,
    pub cluster: [u32; 3],
    pub cluster_scheduling_policy: u32,
    pub local_memory_total_v2: u64,
    pub max_potential_cluster_size: u32,
    pub max_active_clusters: u32,
}

const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<KernelPrefix>() == 208);
    assert!(offset_of!(KernelPrefix, start) == 16);
    assert!(offset_of!(KernelPrefix, end) == 24);
    assert!(offset_of!(KernelPrefix, device_id) == 40);
    assert!(offset_of!(KernelPrefix, stream_id) == 48);
    assert!(offset_of!(KernelPrefix, grid) == 52);
    assert!(offset_of!(KernelPrefix, block) == 64);
    assert!(offset_of!(KernelPrefix, correlation_id) == 92);
    assert!(offset_of!(KernelPrefix, grid_id) == 96);
    assert!(offset_of!(KernelPrefix, name) == 104);
    assert!(offset_of!(KernelPrefix, graph_node_id) == 144);
    assert!(offset_of!(KernelPrefix, graph_id) == 156);
    assert!(offset_of!(KernelPrefix, cluster) == 176);
    assert!(offset_of!(KernelPrefix, local_memory_total_v2) == 192);
};

/// `CUpti_ActivityExternalCorrelation` (24 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ExternalCorrelation {
    pub kind: u32,
    pub external_kind: i32,
    pub external_id: u64,
    pub correlation_id: u32,
    pub reserved: u32,
}

/// `CUpti_ActivityAPI` (40 bytes): a runtime or driver call.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ApiRecord {
    pub kind: u32,
    pub cbid: u32,
    pub start: u64,
    pub end: u64,
    pub process_id: u32,
    pub thread_id: u32,
    pub correlation_id: u32,
    pub return_value: u32,
}

const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<ExternalCorrelation>() == 24);
    assert!(offset_of!(ExternalCorrelation, external_id) == 8);
    assert!(offset_of!(ExternalCorrelation, correlation_id) == 16);
    assert!(size_of::<ApiRecord>() == 40);
    assert!(offset_of!(ApiRecord, thread_id) == 28);
    assert!(offset_of!(ApiRecord, correlation_id) == 32);
};

/// The first 80 bytes of `CUpti_ActivityMemcpy5/6/7` (C.5): every field up to `channelID`,
/// the same in each (later versions only append).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct MemcpyPrefix {
    pub kind: u32,
    pub copy_kind: u8,
    pub src_kind: u8,
    pub dst_kind: u8,
    pub flags: u8,
    pub bytes: u64,
    pub start: u64,
    pub end: u64,
    pub device_id: u32,
    pub context_id: u32,
    pub stream_id: u32,
    pub correlation_id: u32,
    pub runtime_correlation_id: u32,
    pub pad: u32,
    pub reserved0: *mut c_void,
    pub graph_node_id: u64,
    pub graph_id: u32,
    pub channel_id: u32,
}

/// The first 88 bytes of `CUpti_ActivityMemcpyPtoP4` (kind MEMCPY2: a copy between two
/// devices), up to `channelID`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct MemcpyPtoPPrefix {
    pub kind: u32,
    pub copy_kind: u8,
    pub src_kind: u8,
    pub dst_kind: u8,
    pub flags: u8,
    pub bytes: u64,
    pub start: u64,
    pub end: u64,
    pub device_id: u32,
    pub context_id: u32,
    pub stream_id: u32,
    pub src_device_id: u32,
    pub src_context_id: u32,
    pub dst_device_id: u32,
    pub dst_context_id: u32,
    pub correlation_id: u32,
    pub reserved0: *mut c_void,
    pub graph_node_id: u64,
    pub graph_id: u32,
    pub channel_id: u32,
}

/// The first 80 bytes of `CUpti_ActivityMemset4/5` (C.5), up to `channelID`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct MemsetPrefix {
    pub kind: u32,
    pub value: u32,
    pub bytes: u64,
    pub start: u64,
    pub end: u64,
    pub device_id: u32,
    pub context_id: u32,
    pub stream_id: u32,
    pub correlation_id: u32,
    pub flags: u16,
    pub memory_kind: u16,
    pub padding: u32,
    pub reserved0: *mut c_void,
    pub graph_node_id: u64,
    pub graph_id: u32,
    pub channel_id: u32,
}

const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<MemcpyPrefix>() == 80);
    assert!(offset_of!(MemcpyPrefix, copy_kind) == 4);
    assert!(offset_of!(MemcpyPrefix, bytes) == 8);
    assert!(offset_of!(MemcpyPrefix, start) == 16);
    assert!(offset_of!(MemcpyPrefix, end) == 24);
    assert!(offset_of!(MemcpyPrefix, device_id) == 32);
    assert!(offset_of!(MemcpyPrefix, stream_id) == 40);
    assert!(offset_of!(MemcpyPrefix, correlation_id) == 44);
    assert!(offset_of!(MemcpyPrefix, runtime_correlation_id) == 48);
    assert!(offset_of!(MemcpyPrefix, graph_node_id) == 64);
    assert!(offset_of!(MemcpyPrefix, graph_id) == 72);
    assert!(offset_of!(MemcpyPrefix, channel_id) == 76);
    assert!(size_of::<MemcpyPtoPPrefix>() == 88);
    assert!(offset_of!(MemcpyPtoPPrefix, stream_id) == 40);
    assert!(offset_of!(MemcpyPtoPPrefix, src_device_id) == 44);
    assert!(offset_of!(MemcpyPtoPPrefix, dst_device_id) == 52);
    assert!(offset_of!(MemcpyPtoPPrefix, correlation_id) == 60);
    assert!(offset_of!(MemcpyPtoPPrefix, graph_node_id) == 72);
    assert!(offset_of!(MemcpyPtoPPrefix, graph_id) == 80);
    assert!(size_of::<MemsetPrefix>() == 80);
    assert!(offset_of!(MemsetPrefix, value) == 4);
    assert!(offset_of!(MemsetPrefix, bytes) == 8);
    assert!(offset_of!(MemsetPrefix, stream_id) == 40);
    assert!(offset_of!(MemsetPrefix, correlation_id) == 44);
    assert!(offset_of!(MemsetPrefix, flags) == 48);
    assert!(offset_of!(MemsetPrefix, memory_kind) == 50);
    assert!(offset_of!(MemsetPrefix, graph_node_id) == 64);
    assert!(offset_of!(MemsetPrefix, graph_id) == 72);
};

/// A record from a completed buffer, by kind.
#[derive(Debug, Clone, Copy)]
pub enum Activity {
    /// A kernel with a device timing (start and end both non-zero, end not before start).
    Kernel(KernelPrefix),
    /// A kernel, copy or set record without a usable timing (counted, not kept).
    Untimed,
    /// A memory copy with a device timing (a MEMCPY2 peer copy is given the same shape).
    Copy(MemcpyPrefix),
    /// A memory set with a device timing.
    Set(MemsetPrefix),
    External(ExternalCorrelation),
    Api(ApiRecord),
    /// Any other kind (not subscribed by us, or another client's).
    Other(u32),
}

/// Reads the record at `record`.
///
/// # Safety
/// `record` must be a record pointer `cuptiActivityGetNextRecord` returned for a buffer still
/// held: readable for its kind's struct (at least the 208-byte kernel prefix for kernels).
pub unsafe fn activity(record: *const u8) -> Activity {
    // SAFETY: every record starts with its u32 kind.
    let k = unsafe { record.cast::<u32>().read_unaligned() };
    match k as i32 {
        kind::CONCURRENT_KERNEL => {
            // SAFETY: kernel records are at least the 208-byte prefix (C.4).
            let r = unsafe { record.cast::<KernelPrefix>().read_unaligned() };
            if timed(r.start, r.end) {
                Activity::Kernel(r)
            } else {
                Activity::Untimed
            }
        }
        kind::MEMCPY => {
            // SAFETY: memcpy records are at least the 80-byte prefix (Memcpy5 is 88 bytes).
            let r = unsafe { record.cast::<MemcpyPrefix>().read_unaligned() };
            if timed(r.start, r.end) {
                Activity::Copy(r)
            } else {
                Activity::Untimed
            }
        }
        kind::MEMCPY2 => {
            // SAFETY: MEMCPY2 records are MemcpyPtoP4 (96 bytes), beyond the 88-byte prefix.
            let r = unsafe { record.cast::<MemcpyPtoPPrefix>().read_unaligned() };
            if !timed(r.start, r.end) {
                return Activity::Untimed;
            }
            // One shape for every copy: the device it ran on, its correlation, its graph node.
            Activity::Copy(MemcpyPrefix {
                kind: r.kind,
                copy_kind: r.copy_kind,
                src_kind: r.src_kind,
                dst_kind: r.dst_kind,
                flags: r.flags,
                bytes: r.bytes,
                start: r.start,
                end: r.end,
                device_id: r.device_id,
                context_id: r.context_id,
                stream_id: r.stream_id,
                correlation_id: r.correlation_id,
                runtime_correlation_id: 0,
                pad: 0,
                reserved0: std::ptr::null_mut(),
                graph_node_id: r.graph_node_id,
                graph_id: r.graph_id,
                channel_id: r.channel_id,
            })
        }
        kind::MEMSET => {
            // SAFETY: memset records are at least the 80-byte prefix (Memset4 is 88 bytes).
            let r = unsafe { record.cast::<MemsetPrefix>().read_unaligned() };
            if timed(r.start, r.end) {
                Activity::Set(r)
            } else {
                Activity::Untimed
            }
        }
        // SAFETY: the kinds' own structs (C.5).
        kind::EXTERNAL_CORRELATION => Activity::External(unsafe { record.cast::<ExternalCorrelation>().read_unaligned() }),
        // SAFETY: as above.
        kind::RUNTIME | kind::DRIVER => Activity::Api(unsafe { record.cast::<ApiRecord>().read_unaligned() }),
        _ => Activity::Other(k),
    }
}

/// Whether a device record carries a usable timing (CUPTI writes 0/0 for work it could not time).
fn timed(start: u64, end: u64) -> bool {
    start != 0 && end != 0 && end >= start
}
