//! rocprofiler-sdk -> Rust: the SDK's records as `#[repr(C)]` layouts per ABI generation, the
//! run-time binding of the tool API, and the `extern "C"` callbacks it calls.
//!
//! Layouts (rocprofiler_abi.md 5.1, 5.5; x86-64): the callback record has no `size` field and
//! is passed by value, 56 bytes on SDK < 1.0 (ROCm 6.x) and 64 bytes from 1.0 (ROCm 7.x), whose
//! correlation id gained `ancestor`. The version the SDK reports picks the layout; nothing here
//! guesses. Marker payloads carry `size` and are validated before any field is read.
// Field names mirror the SDK's own; the layout tables in the spec document them.
#![allow(missing_docs)]

use std::ffi::{c_char, c_int, c_void, CStr};

use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};

/// `rocprofiler_callback_tracing_record_t` for SDK 0.4-0.6 (ROCm 6.2-6.4).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CallbackRecordV6 {
    pub context_id: u64,
    pub thread_id: u64,
    pub correlation_internal: u64,
    pub correlation_external: u64,
    pub kind: i32,
    pub operation: i32,
    pub phase: i32,
    pub payload: *mut c_void,
}
const _: () = {
    assert!(std::mem::size_of::<CallbackRecordV6>() == 56);
    assert!(std::mem::offset_of!(CallbackRecordV6, thread_id) == 8);
    assert!(std::mem::offset_of!(CallbackRecordV6, correlation_internal) == 16);
    assert!(std::mem::offset_of!(CallbackRecordV6, kind) == 32);
    assert!(std::mem::offset_of!(CallbackRecordV6, operation) == 36);
    assert!(std::mem::offset_of!(CallbackRecordV6, phase) == 40);
    assert!(std::mem::offset_of!(CallbackRecordV6, payload) == 48);
};

/// `rocprofiler_callback_tracing_record_t` for SDK 1.x (ROCm 7.x).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CallbackRecordV7 {
    pub context_id: u64,
    pub thread_id: u64,
    pub correlation_internal: u64,
    pub correlation_external: u64,
    pub correlation_ancestor: u64,
    pub kind: i32,
    pub operation: i32,
    pub phase: i32,
    pub payload: *mut c_void,
}
const _: () = {
    assert!(std::mem::size_of::<CallbackRecordV7>() == 64);
    assert!(std::mem::offset_of!(CallbackRecordV7, thread_id) == 8);
    assert!(std::mem::offset_of!(CallbackRecordV7, correlation_internal) == 16);
    assert!(std::mem::offset_of!(CallbackRecordV7, kind) == 40);
    assert!(std::mem::offset_of!(CallbackRecordV7, operation) == 44);
    assert!(std::mem::offset_of!(CallbackRecordV7, phase) == 48);
    assert!(std::mem::offset_of!(CallbackRecordV7, payload) == 56);
};

/// `rocprofiler_callback_tracing_marker_api_data_t` (32 bytes in every version): `size`, then
/// the args union at +8 (message, id, tid or name; a second word at +16 for the naming calls),
/// then the retval union at +24.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct MarkerPayload {
    pub size: u64,
    pub arg0: u64,
    pub arg1: u64,
    pub retval: u64,
}
const _: () = {
    assert!(std::mem::size_of::<MarkerPayload>() == 32);
    assert!(std::mem::offset_of!(MarkerPayload, arg0) == 8);
    assert!(std::mem::offset_of!(MarkerPayload, retval) == 24);
};

/// `rocprofiler_tool_configure_result_t` (32 bytes, every version).
#[repr(C)]
#[derive(Debug)]
pub struct ToolConfigureResult {
    pub size: usize,
    pub initialize: Option<unsafe extern "C" fn(fini: *mut c_void, tool_data: *mut c_void) -> c_int>,
    pub finalize: Option<unsafe extern "C" fn(tool_data: *mut c_void)>,
    pub tool_data: *mut c_void,
}
const _: () = assert!(std::mem::size_of::<ToolConfigureResult>() == 32);

/// The decoded, layout-independent view of a callback record (what the listener consumes).
#[derive(Debug, Clone, Copy)]
pub struct Record {
    pub thread_id: u64,
    pub correlation_internal: u64,
    pub kind: i32,
    pub operation: i32,
    pub phase: i32,
    pub payload: *const c_void,
}

impl From<CallbackRecordV6> for Record {
    fn from(r: CallbackRecordV6) -> Record {
        Record { thread_id: r.thread_id, correlation_internal: r.correlation_internal, kind: r.kind, operation: r.operation, phase: r.phase, payload: r.payload }
    }
}

impl From<CallbackRecordV7> for Record {
    fn from(r: CallbackRecordV7) -> Record {
        Record { thread_id: r.thread_id, correlation_internal: r.correlation_internal, kind: r.kind, operation: r.operation, phase: r.phase, payload: r.payload }
    }
}

/// Which record layout an SDK version uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// SDK 0.4.0-0.6.x (ROCm 6.2-6.4): 56-byte records, 16-byte client id.
    V6,
    /// SDK 1.x (ROCm 7.x): 64-byte records, 24-byte client id with `size`.
    V7,
}

impl Layout {
    /// The layout for `version` (10000*major + 100*minor + patch), or `None` for a version
    /// whose layouts this build does not know (older than 0.4, or 2.0 and later).
    pub fn for_version(version: u32) -> Option<Layout> {
        match version {
            400..=9_999 => Some(Layout::V6),
            10_000..=19_999 => Some(Layout::V7),
            _ => None,
        }
    }

    /// Size of the callback record in this layout.
    pub fn record_size(self) -> usize {
        match self {
            Layout::V6 => std::mem::size_of::<CallbackRecordV6>(),
            Layout::V7 => std::mem::size_of::<CallbackRecordV7>(),
        }
    }
}

/// Decodes a record the host handed over as bytes.
///
/// # Safety
/// `ptr` must point at `len` readable bytes.
pub unsafe fn decode(ptr: *const c_void, len: usize, layout: Layout) -> Option<Record> {
    if ptr.is_null() || len != layout.record_size() {
        return None;
    }
    // `len` bytes are readable (contract) and equal the struct size; read_unaligned because a
    // host may hand us a pointer into a byte buffer.
    Some(match layout {
        // SAFETY: see above; `len` is the size of CallbackRecordV6.
        Layout::V6 => unsafe { std::ptr::read_unaligned(ptr.cast::<CallbackRecordV6>()) }.into(),
        // SAFETY: see above; `len` is the size of CallbackRecordV7.
        Layout::V7 => unsafe { std::ptr::read_unaligned(ptr.cast::<CallbackRecordV7>()) }.into(),
    })
}

/// Reads a marker payload after checking its `size` covers `needed` bytes.
///
/// # Safety
/// A non-null `payload` must point at a marker payload valid for the callback's duration.
pub unsafe fn marker_payload(payload: *const c_void, needed: usize) -> Option<MarkerPayload> {
    if payload.is_null() {
        return None;
    }
    // SAFETY: every payload starts with its u64 size (contract).
    let size = unsafe { std::ptr::read_unaligned(payload.cast::<u64>()) };
    if (size as usize) < needed {
        return None;
    }
    // Larger sizes are newer, compatible payloads; read only the 32 bytes we know, and only
    // what `size` covers (zeros beyond it).
    let mut words = [0u64; 4];
    let covered = (size as usize).min(32) / 8;
    for (i, w) in words.iter_mut().enumerate().take(covered) {
        // SAFETY: within `size` bytes of a valid payload.
        *w = unsafe { std::ptr::read_unaligned(payload.cast::<u64>().add(i)) };
    }
    Some(MarkerPayload { size, arg0: words[1], arg1: words[2], retval: words[3] })
}

/// Copies the C string at `ptr` (null reads as empty), capped at `max` bytes.
///
/// # Safety
/// A non-null `ptr` must be a NUL-terminated string valid for the call.
pub unsafe fn c_string_bytes(ptr: u64, max: usize) -> Vec<u8> {
    if ptr == 0 {
        return Vec::new();
    }
    // SAFETY: per contract. CAST: the payload stores the pointer as a 64-bit word.
    let bytes = unsafe { CStr::from_ptr(ptr as usize as *const c_char) }.to_bytes();
    bytes[..bytes.len().min(max)].to_vec()
}

/// Status of an SDK call: only 0 is success (numbering shifted at 0.5.0, so names come from
/// `rocprofiler_get_status_name`).
pub type Status = c_int;

/// The SDK functions tool mode uses, bound from a library loaded RTLD_NOW | RTLD_GLOBAL (so
/// rocprofiler-register finds `rocprofiler_set_api_table` without a dlopen of its own).
#[derive(Debug)]
pub struct SdkApi {
    pub get_version: unsafe extern "C" fn(*mut u32, *mut u32, *mut u32) -> Status,
    pub is_initialized: unsafe extern "C" fn(*mut c_int) -> Status,
    pub force_configure: unsafe extern "C" fn(ConfigureFn) -> Status,
    pub create_context: unsafe extern "C" fn(*mut u64) -> Status,
    pub configure_callback_tracing_service:
        unsafe extern "C" fn(u64, c_int, *const i32, usize, *const c_void, *mut c_void) -> Status,
    pub start_context: unsafe extern "C" fn(u64) -> Status,
    pub stop_context: unsafe extern "C" fn(u64) -> Status,
    pub get_status_name: Option<unsafe extern "C" fn(Status) -> *const c_char>,
    pub location: String,
    _library: Library,
}

/// `rocprofiler_configure_func_t`.
pub type ConfigureFn =
    unsafe extern "C" fn(version: u32, runtime_version: *const c_char, priority: u32, client_id: *mut c_void) -> *mut ToolConfigureResult;

impl SdkApi {
    /// Loads and binds the SDK at `location`; the error names what is missing.
    pub fn load(location: &str) -> Result<SdkApi, String> {
        // SAFETY: loading the SDK runs its constructors, which is why this only happens late,
        // on demand, and never as a DT_NEEDED (rocprofiler_abi.md 6.2).
        let library = unsafe { Library::open(Some(location), RTLD_NOW | RTLD_GLOBAL) }.map_err(|e| e.to_string())?;
        Self::bind(library, location)
    }

    /// Binds the SDK at `location` only if it is loaded in the process already (a tool the SDK
    /// loaded from `ROCP_TOOL_LIBRARIES` must use the very copy that called it, never load one).
    pub fn open_loaded(location: &str) -> Result<SdkApi, String> {
        // SAFETY: RTLD_NOLOAD returns a library that is already initialised, or nothing.
        let library = unsafe { Library::open(Some(location), RTLD_NOW | libc::RTLD_NOLOAD) }
            .map_err(|_| format!("{location}: not loaded in this process"))?;
        Self::bind(library, location)
    }

    /// The file of the rocprofiler-sdk whose functions the loader resolves globally (where
    /// rocprofiler-register loaded it RTLD_GLOBAL), if any.
    pub fn global_location() -> Option<String> {
        // SAFETY: dlsym with RTLD_DEFAULT only searches the global scope.
        let address = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"rocprofiler_get_version".as_ptr()) };
        if address.is_null() {
            return None;
        }
        // SAFETY: Dl_info is plain data; dladdr fills it for an address of a loaded object.
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if unsafe { libc::dladdr(address, &mut info) } == 0 || info.dli_fname.is_null() {
            return None;
        }
        // SAFETY: a NUL-terminated name owned by the loader, valid while the object is loaded.
        Some(unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned())
    }

    fn bind(library: Library, location: &str) -> Result<SdkApi, String> {
        macro_rules! bind {
            ($name:literal) => {{
                // SAFETY: the field type is the C signature of that SDK function.
                let symbol = unsafe { library.get(concat!($name, "\0").as_bytes()) };
                *symbol.map_err(|_| format!("{location} lacks {}", $name))?
            }};
        }
        Ok(SdkApi {
            get_version: bind!("rocprofiler_get_version"),
            is_initialized: bind!("rocprofiler_is_initialized"),
            force_configure: bind!("rocprofiler_force_configure"),
            create_context: bind!("rocprofiler_create_context"),
            configure_callback_tracing_service: bind!("rocprofiler_configure_callback_tracing_service"),
            start_context: bind!("rocprofiler_start_context"),
            stop_context: bind!("rocprofiler_stop_context"),
            // SAFETY: as above; optional.
            get_status_name: unsafe { library.get(b"rocprofiler_get_status_name\0") }.ok().map(|s| *s),
            location: location.to_owned(),
            _library: library,
        })
    }

    /// `"ROCPROFILER_STATUS_..." (n)` for a status.
    pub fn status_name(&self, status: Status) -> String {
        let name = self.get_status_name.and_then(|f| {
            // SAFETY: returns a static string or null.
            let p = unsafe { f(status) };
            // SAFETY: non-null results are static NUL-terminated strings.
            (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
        });
        match name {
            Some(name) => format!("{name} ({status})"),
            None => format!("status {status}"),
        }
    }

    /// `rocprofiler_get_version` as 10000*major + 100*minor + patch.
    pub fn version(&self) -> Option<u32> {
        let (mut major, mut minor, mut patch) = (0u32, 0u32, 0u32);
        // SAFETY: three valid out-pointers.
        let status = unsafe { (self.get_version)(&mut major, &mut minor, &mut patch) };
        (status == 0).then(|| major.saturating_mul(10_000).saturating_add(minor.saturating_mul(100)).saturating_add(patch))
    }

    /// `rocprofiler_is_initialized`: 0 not yet, -1 initializing, 1 done.
    pub fn initialized(&self) -> Result<c_int, Status> {
        let mut state = 0;
        // SAFETY: a valid out-pointer.
        let status = unsafe { (self.is_initialized)(&mut state) };
        if status == 0 { Ok(state) } else { Err(status) }
    }
}

/// Writes our client name into `client_id` in the layout of `layout` (a debugging aid; the
/// wrong offset would corrupt the SDK's struct, hence the version switch).
///
/// # Safety
/// `client_id` must be null or the SDK's `rocprofiler_client_id_t` for that layout.
pub unsafe fn set_client_name(client_id: *mut c_void, layout: Layout, name: &'static CStr) {
    if client_id.is_null() {
        return;
    }
    match layout {
        // SAFETY: 6.x layout {const char* name @0; uint32_t handle @8}.
        Layout::V6 => unsafe { client_id.cast::<*const c_char>().write(name.as_ptr()) },
        Layout::V7 => {
            // SAFETY: 7.x layout {size_t size @0; const char* name @8; ...}; only write if the
            // struct says it is that large.
            let size = unsafe { client_id.cast::<usize>().read() };
            if size >= 16 {
                // SAFETY: offset 8 is within `size`.
                unsafe { client_id.cast::<u8>().add(8).cast::<*const c_char>().write(name.as_ptr()) };
            }
        }
    }
}

// ---- kernels: buffer tracing of KERNEL_DISPATCH, CODE_OBJECT symbols, external correlation ----

/// `rocprofiler_callback_tracing_kind_t` CODE_OBJECT (the same value in every version, 4.1).
pub const CALLBACK_KIND_CODE_OBJECT: i32 = 10;
/// `rocprofiler_code_object_operation_t` DEVICE_KERNEL_SYMBOL_REGISTER (4.5).
pub const CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER: i32 = 2;
/// Phase LOAD (= ENTER) of a CODE_OBJECT record (4.3).
pub const PHASE_LOAD: i32 = 1;
/// `rocprofiler_buffer_tracing_kind_t` KERNEL_DISPATCH (11 in every version; kinds from 12 on
/// are renumbered by version, 4.2).
pub const BUFFER_KIND_KERNEL_DISPATCH: i32 = 11;
/// `ROCPROFILER_BUFFER_TRACING_HIP_RUNTIME_API` (4.2; the same in every version).
pub const BUFFER_KIND_HIP_RUNTIME_API: i32 = 5;
/// `ROCPROFILER_BUFFER_TRACING_MEMORY_COPY` (the same value in every version).
pub const BUFFER_KIND_MEMORY_COPY: i32 = 10;
/// `rocprofiler_buffer_category_t` TRACING (4.5).
pub const BUFFER_CATEGORY_TRACING: u32 = 1;
/// `rocprofiler_buffer_policy_t` LOSSLESS (3.6).
pub const BUFFER_POLICY_LOSSLESS: c_int = 2;

/// `rocprofiler_record_header_t` (16 bytes, every version, 5.2).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct RecordHeader {
    pub category: u32,
    pub kind: u32,
    pub payload: *mut c_void,
}
const _: () = {
    assert!(std::mem::size_of::<RecordHeader>() == 16);
    assert!(std::mem::offset_of!(RecordHeader, kind) == 4);
    assert!(std::mem::offset_of!(RecordHeader, payload) == 8);
};

/// `rocprofiler_dim3_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dim3 {
    pub x: u32,
    pub y: u32,
    pub z: u32,
}
const _: () = assert!(std::mem::size_of::<Dim3>() == 12);

/// `rocprofiler_kernel_dispatch_info_t` (128 bytes, every version, 5.3); its own `size` is 72,
/// the offset of the reserved padding.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct KernelDispatchInfo {
    pub size: u64,
    pub agent_id: u64,
    pub queue_id: u64,
    pub kernel_id: u64,
    pub dispatch_id: u64,
    pub private_segment_size: u32,
    pub group_segment_size: u32,
    pub workgroup_size: Dim3,
    pub grid_size: Dim3,
    pub reserved_padding: [u8; 56],
}
const _: () = {
    assert!(std::mem::size_of::<KernelDispatchInfo>() == 128);
    assert!(std::mem::offset_of!(KernelDispatchInfo, agent_id) == 8);
    assert!(std::mem::offset_of!(KernelDispatchInfo, queue_id) == 16);
    assert!(std::mem::offset_of!(KernelDispatchInfo, kernel_id) == 24);
    assert!(std::mem::offset_of!(KernelDispatchInfo, dispatch_id) == 32);
    assert!(std::mem::offset_of!(KernelDispatchInfo, private_segment_size) == 40);
    assert!(std::mem::offset_of!(KernelDispatchInfo, group_segment_size) == 44);
    assert!(std::mem::offset_of!(KernelDispatchInfo, workgroup_size) == 48);
    assert!(std::mem::offset_of!(KernelDispatchInfo, grid_size) == 60);
    assert!(std::mem::offset_of!(KernelDispatchInfo, reserved_padding) == 72);
};

/// `rocprofiler_buffer_tracing_kernel_dispatch_record_t` (184 bytes, every version, 5.4).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct KernelDispatchRecord {
    pub size: u64,
    pub kind: i32,
    pub operation: i32,
    pub correlation_internal: u64,
    pub correlation_external: u64,
    pub thread_id: u64,
    pub start_timestamp: u64,
    pub end_timestamp: u64,
    pub dispatch_info: KernelDispatchInfo,
}
const _: () = {
    assert!(std::mem::size_of::<KernelDispatchRecord>() == 184);
    assert!(std::mem::offset_of!(KernelDispatchRecord, kind) == 8);
    assert!(std::mem::offset_of!(KernelDispatchRecord, operation) == 12);
    assert!(std::mem::offset_of!(KernelDispatchRecord, correlation_internal) == 16);
    assert!(std::mem::offset_of!(KernelDispatchRecord, correlation_external) == 24);
    assert!(std::mem::offset_of!(KernelDispatchRecord, thread_id) == 32);
    assert!(std::mem::offset_of!(KernelDispatchRecord, start_timestamp) == 40);
    assert!(std::mem::offset_of!(KernelDispatchRecord, end_timestamp) == 48);
    assert!(std::mem::offset_of!(KernelDispatchRecord, dispatch_info) == 56);
    assert!(std::mem::offset_of!(KernelDispatchRecord, dispatch_info) + std::mem::offset_of!(KernelDispatchInfo, kernel_id) == 80);
    assert!(std::mem::offset_of!(KernelDispatchRecord, dispatch_info) + std::mem::offset_of!(KernelDispatchInfo, grid_size) == 116);
};

/// Bytes of a dispatch record we read: through `dispatch_info.grid_size`. A record whose `size`
/// is smaller is malformed; a larger one is a newer SDK's, read for the fields we know.
pub const KERNEL_DISPATCH_RECORD_MIN: usize = 56 + 72;

/// A decoded kernel dispatch: device timestamps (`CLOCK_BOOTTIME` ns, the marker clock, 3.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelDispatch {
    pub correlation_internal: u64,
    pub correlation_external: u64,
    pub thread_id: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    pub agent_id: u64,
    pub queue_id: u64,
    pub kernel_id: u64,
    pub dispatch_id: u64,
    pub workgroup_size: Dim3,
    pub grid_size: Dim3,
}

/// Why a buffer record was not a usable kernel dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DispatchError {
    /// Not TRACING/KERNEL_DISPATCH: some other service's record (not ours to read).
    OtherKind,
    /// Null payload, `size` too small, or end before start.
    Malformed,
}

/// Reads one buffer record as a kernel dispatch, checking category, kind, `size` (5.4) and the
/// time order; never touches a byte past `size`.
///
/// # Safety
/// `header` must be null or a record header valid for the call whose payload, if non-null, is
/// readable for at least the `size` it declares.
pub unsafe fn kernel_dispatch(header: *const RecordHeader) -> Result<KernelDispatch, DispatchError> {
    // SAFETY: the caller's contract is the helper's.
    let (h, size) = unsafe { tracing_record(header, BUFFER_KIND_KERNEL_DISPATCH) }?;
    if size < KERNEL_DISPATCH_RECORD_MIN as u64 {
        return Err(DispatchError::Malformed);
    }
    let mut raw = [0u8; std::mem::size_of::<KernelDispatchRecord>()];
    let n = raw.len().min(usize::try_from(size).unwrap_or(usize::MAX));
    // SAFETY: the payload is readable for `size` bytes (contract) and `n <= size`.
    unsafe { std::ptr::copy_nonoverlapping(h.payload.cast::<u8>(), raw.as_mut_ptr(), n) };
    // SAFETY: `raw` is exactly the struct's size and every bit pattern is a valid value of it.
    let r = unsafe { std::ptr::read_unaligned(raw.as_ptr().cast::<KernelDispatchRecord>()) };
    if r.end_timestamp < r.start_timestamp {
        return Err(DispatchError::Malformed);
    }
    Ok(KernelDispatch {
        correlation_internal: r.correlation_internal,
        correlation_external: r.correlation_external,
        thread_id: r.thread_id,
        start_ns: r.start_timestamp,
        end_ns: r.end_timestamp,
        agent_id: r.dispatch_info.agent_id,
        queue_id: r.dispatch_info.queue_id,
        kernel_id: r.dispatch_info.kernel_id,
        dispatch_id: r.dispatch_info.dispatch_id,
        workgroup_size: r.dispatch_info.workgroup_size,
        grid_size: r.dispatch_info.grid_size,
    })
}

/// A buffer record's header and its payload's `size`, if the record is a TRACING record of
/// `kind`: `OtherKind` for any other, `Malformed` for a null header or payload.
///
/// # Safety
/// `header` is null or a record header the SDK passed to a buffer callback, valid for the call,
/// whose payload (if not null) starts with its u64 size.
unsafe fn tracing_record(header: *const RecordHeader, kind: i32) -> Result<(RecordHeader, u64), DispatchError> {
    if header.is_null() {
        return Err(DispatchError::Malformed);
    }
    // SAFETY: non-null and valid for the call (contract).
    let h = unsafe { std::ptr::read_unaligned(header) };
    // CAST: buffer tracing kinds are small non-negative values.
    if h.category != BUFFER_CATEGORY_TRACING || h.kind != kind as u32 {
        return Err(DispatchError::OtherKind);
    }
    if h.payload.is_null() {
        return Err(DispatchError::Malformed);
    }
    // SAFETY: every buffer record starts with its u64 size (5.7).
    let size = unsafe { std::ptr::read_unaligned(h.payload.cast::<u64>()) };
    Ok((h, size))
}

/// The 80 bytes of `rocprofiler_buffer_tracing_memory_copy_record_t` that 6.2 (80 bytes) and
/// 7.0 (96: `dst_address`, `src_address` appended) share. The correlation id is 16 bytes in
/// both (7.0's `rocprofiler_async_correlation_id_t`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct MemoryCopyRecord {
    pub size: u64,
    pub kind: i32,
    pub operation: i32,
    pub correlation_internal: u64,
    pub correlation_external: u64,
    pub thread_id: u64,
    pub start_timestamp: u64,
    pub end_timestamp: u64,
    pub dst_agent_id: u64,
    pub src_agent_id: u64,
    pub bytes: u64,
}

const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<MemoryCopyRecord>() == 80);
    assert!(offset_of!(MemoryCopyRecord, operation) == 12);
    assert!(offset_of!(MemoryCopyRecord, correlation_internal) == 16);
    assert!(offset_of!(MemoryCopyRecord, thread_id) == 32);
    assert!(offset_of!(MemoryCopyRecord, start_timestamp) == 40);
    assert!(offset_of!(MemoryCopyRecord, end_timestamp) == 48);
    assert!(offset_of!(MemoryCopyRecord, dst_agent_id) == 56);
    assert!(offset_of!(MemoryCopyRecord, src_agent_id) == 64);
    assert!(offset_of!(MemoryCopyRecord, bytes) == 72);
};

/// `rocprofiler_memory_copy_operation_t` (the copy's direction; the same in 6.x and 7.x).
pub mod memory_copy {
    pub const NONE: i32 = 0;
    pub const HOST_TO_HOST: i32 = 1;
    pub const HOST_TO_DEVICE: i32 = 2;
    pub const DEVICE_TO_HOST: i32 = 3;
    pub const DEVICE_TO_DEVICE: i32 = 4;
}

/// A memory copy record, read and checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryCopy {
    /// `rocprofiler_memory_copy_operation_t` ([`memory_copy`]); any value is passed on.
    pub operation: i32,
    pub correlation_internal: u64,
    pub correlation_external: u64,
    pub thread_id: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    pub dst_agent_id: u64,
    pub src_agent_id: u64,
    pub bytes: u64,
}

/// Reads a MEMORY_COPY buffer record: `OtherKind` for any other record, `Malformed` for a null
/// payload, a size below the 80 shared bytes, or an end before the start.
///
/// # Safety
/// `header` is null or a record header the SDK passed to a buffer callback, valid for the call,
/// whose payload is readable for its own `size` bytes.
pub unsafe fn memory_copy(header: *const RecordHeader) -> Result<MemoryCopy, DispatchError> {
    // SAFETY: the caller's contract is the helper's.
    let (h, size) = unsafe { tracing_record(header, BUFFER_KIND_MEMORY_COPY) }?;
    if size < std::mem::size_of::<MemoryCopyRecord>() as u64 {
        return Err(DispatchError::Malformed);
    }
    // SAFETY: the payload is readable for `size` bytes, at least the struct's 80.
    let r = unsafe { std::ptr::read_unaligned(h.payload.cast::<MemoryCopyRecord>()) };
    if r.end_timestamp < r.start_timestamp {
        return Err(DispatchError::Malformed);
    }
    Ok(MemoryCopy {
        operation: r.operation,
        correlation_internal: r.correlation_internal,
        correlation_external: r.correlation_external,
        thread_id: r.thread_id,
        start_ns: r.start_timestamp,
        end_ns: r.end_timestamp,
        dst_agent_id: r.dst_agent_id,
        src_agent_id: r.src_agent_id,
        bytes: r.bytes,
    })
}

/// `rocprofiler_buffer_tracing_hip_api_record_t` of 6.x (56 bytes): the correlation id is 16
/// bytes there (5.1).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct HipApiRecordV6 {
    pub size: u64,
    pub kind: i32,
    pub operation: i32,
    pub correlation_internal: u64,
    pub correlation_external: u64,
    pub start_timestamp: u64,
    pub end_timestamp: u64,
    pub thread_id: u64,
}
const _: () = {
    assert!(std::mem::size_of::<HipApiRecordV6>() == 56);
    assert!(std::mem::offset_of!(HipApiRecordV6, operation) == 12);
    assert!(std::mem::offset_of!(HipApiRecordV6, correlation_internal) == 16);
    assert!(std::mem::offset_of!(HipApiRecordV6, start_timestamp) == 32);
    assert!(std::mem::offset_of!(HipApiRecordV6, end_timestamp) == 40);
    assert!(std::mem::offset_of!(HipApiRecordV6, thread_id) == 48);
};

/// The 7.x record (64 bytes): the correlation id gained `ancestor` (24 bytes, 5.1).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct HipApiRecordV7 {
    pub size: u64,
    pub kind: i32,
    pub operation: i32,
    pub correlation_internal: u64,
    pub correlation_external: u64,
    pub correlation_ancestor: u64,
    pub start_timestamp: u64,
    pub end_timestamp: u64,
    pub thread_id: u64,
}
const _: () = {
    assert!(std::mem::size_of::<HipApiRecordV7>() == 64);
    assert!(std::mem::offset_of!(HipApiRecordV7, correlation_internal) == 16);
    assert!(std::mem::offset_of!(HipApiRecordV7, start_timestamp) == 40);
    assert!(std::mem::offset_of!(HipApiRecordV7, end_timestamp) == 48);
    assert!(std::mem::offset_of!(HipApiRecordV7, thread_id) == 56);
};

/// A HIP runtime API call, as its buffer record gives it (timestamps `CLOCK_BOOTTIME` ns, 3.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HipApiCall {
    pub operation: i32,
    pub correlation_internal: u64,
    pub thread_id: u64,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// Reads one buffer record as a HIP runtime API call in `layout`, checking category, kind,
/// `size` (at least the layout's record) and the time order; never reads past `size`.
///
/// # Safety
/// As [`kernel_dispatch`].
pub unsafe fn hip_api_call(header: *const RecordHeader, layout: Layout) -> Result<HipApiCall, DispatchError> {
    // SAFETY: the caller's contract is the helper's.
    let (h, size) = unsafe { tracing_record(header, BUFFER_KIND_HIP_RUNTIME_API) }?;
    let call = match layout {
        Layout::V6 if size >= std::mem::size_of::<HipApiRecordV6>() as u64 => {
            // SAFETY: the payload is readable for `size` bytes, at least the record's.
            let r = unsafe { std::ptr::read_unaligned(h.payload.cast::<HipApiRecordV6>()) };
            HipApiCall { operation: r.operation, correlation_internal: r.correlation_internal, thread_id: r.thread_id, start_ns: r.start_timestamp, end_ns: r.end_timestamp }
        }
        Layout::V7 if size >= std::mem::size_of::<HipApiRecordV7>() as u64 => {
            // SAFETY: as above.
            let r = unsafe { std::ptr::read_unaligned(h.payload.cast::<HipApiRecordV7>()) };
            HipApiCall { operation: r.operation, correlation_internal: r.correlation_internal, thread_id: r.thread_id, start_ns: r.start_timestamp, end_ns: r.end_timestamp }
        }
        _ => return Err(DispatchError::Malformed),
    };
    if call.end_ns < call.start_ns {
        return Err(DispatchError::Malformed);
    }
    Ok(call)
}

/// A device kernel symbol registered by a CODE_OBJECT callback (5.6): 72 bytes up to ROCm 6.3,
/// 88 from 6.4; the fields read here never moved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelSymbol {
    pub kernel_id: u64,
    pub code_object_id: u64,
    /// The mangled name, copied (the SDK frees it at unload).
    pub name: Vec<u8>,
}

/// Longest kernel name kept, in bytes (template-heavy names run to a few KiB).
pub const MAX_KERNEL_NAME_BYTES: usize = 16 * 1024;

/// Reads a DEVICE_KERNEL_SYMBOL_REGISTER payload after checking its `size` covers the name.
///
/// # Safety
/// `payload` must be null or a code-object symbol payload valid for the call.
pub unsafe fn kernel_symbol(payload: *const c_void) -> Option<KernelSymbol> {
    // SAFETY: forwarded contract; the three words read are within the first 32 bytes.
    let p = unsafe { marker_payload(payload, 32) }?;
    // SAFETY: the name is null or a C string valid for the call.
    let name = unsafe { c_string_bytes(p.retval, MAX_KERNEL_NAME_BYTES) };
    Some(KernelSymbol { kernel_id: p.arg0, code_object_id: p.arg1, name })
}

/// `rocprofiler_buffer_tracing_cb_t`.
pub type BufferCallback =
    unsafe extern "C" fn(context: u64, buffer: u64, headers: *mut *mut RecordHeader, n: usize, data: *mut c_void, drop_count: u64);

/// The SDK functions kernel tracing needs. Optional as a set: marker capture works without them.
#[derive(Debug, Clone, Copy)]
pub struct KernelApi {
    pub create_buffer: unsafe extern "C" fn(u64, usize, usize, c_int, BufferCallback, *mut c_void, *mut u64) -> Status,
    pub configure_buffer_tracing_service: unsafe extern "C" fn(u64, c_int, *const i32, usize, u64) -> Status,
    pub flush_buffer: unsafe extern "C" fn(u64) -> Status,
    pub get_thread_id: unsafe extern "C" fn(*mut u64) -> Status,
    pub push_external_correlation_id: unsafe extern "C" fn(u64, u64, u64) -> Status,
    pub pop_external_correlation_id: unsafe extern "C" fn(u64, u64, *mut u64) -> Status,
    /// `rocprofiler_iterate_buffer_tracing_kind_operations` (3.6); optional.
    pub iterate_operations: Option<unsafe extern "C" fn(c_int, OperationCallback, *mut c_void) -> Status>,
    /// `rocprofiler_query_buffer_tracing_kind_operation_name` (3.6); optional.
    pub operation_name: Option<unsafe extern "C" fn(c_int, i32, *mut *const c_char, *mut u64) -> Status>,
    /// `rocprofiler_query_available_agents` ([`agents`]); optional.
    pub query_agents: Option<unsafe extern "C" fn(u32, AgentsCallback, usize, *mut c_void) -> Status>,
}

/// The callback of `rocprofiler_iterate_buffer_tracing_kind_operations`: 0 continues.
pub type OperationCallback = unsafe extern "C" fn(kind: c_int, operation: i32, data: *mut c_void) -> c_int;

impl KernelApi {
    /// The operations of buffer-tracing `kind` whose names `keep` accepts; `None` when the SDK
    /// cannot list or name them (then the caller traces every operation).
    pub fn operations_named(&self, kind: c_int, keep: impl Fn(&str) -> bool) -> Option<Vec<i32>> {
        unsafe extern "C" fn collect(_kind: c_int, operation: i32, data: *mut c_void) -> c_int {
            // SAFETY: `data` is the Vec passed below, alive for the iteration.
            let ops = unsafe { &mut *data.cast::<Vec<i32>>() };
            if ops.len() < 1 << 16 {
                ops.push(operation);
            }
            0
        }
        let (iterate, name) = (self.iterate_operations?, self.operation_name?);
        let mut all: Vec<i32> = Vec::new();
        // SAFETY: a callback of the iteration's signature and a Vec that outlives the call.
        if unsafe { iterate(kind, collect, (&mut all as *mut Vec<i32>).cast()) } != 0 {
            return None;
        }
        let named = |op: i32| {
            let mut text: *const c_char = std::ptr::null();
            // SAFETY: valid out-pointers; the SDK returns a static string (3.5, 3.6).
            let ok = unsafe { name(kind, op, &mut text, std::ptr::null_mut()) } == 0 && !text.is_null();
            // SAFETY: a non-null static C string from the SDK.
            ok.then(|| unsafe { std::ffi::CStr::from_ptr(text) }.to_string_lossy().into_owned())
        };
        Some(all.into_iter().filter(|&op| named(op).is_some_and(|n| keep(&n))).collect())
    }
}

impl SdkApi {
    /// Binds the kernel-tracing functions; the error names the first one missing.
    pub fn kernel_api(&self) -> Result<KernelApi, String> {
        let library = &self._library;
        let location = &self.location;
        macro_rules! bind {
            ($name:literal) => {{
                // SAFETY: the field type is the C signature of that SDK function (3.6-3.8).
                let symbol = unsafe { library.get(concat!($name, "\0").as_bytes()) };
                *symbol.map_err(|_| format!("{location} lacks {}", $name))?
            }};
        }
        Ok(KernelApi {
            create_buffer: bind!("rocprofiler_create_buffer"),
            configure_buffer_tracing_service: bind!("rocprofiler_configure_buffer_tracing_service"),
            flush_buffer: bind!("rocprofiler_flush_buffer"),
            get_thread_id: bind!("rocprofiler_get_thread_id"),
            push_external_correlation_id: bind!("rocprofiler_push_external_correlation_id"),
            pop_external_correlation_id: bind!("rocprofiler_pop_external_correlation_id"),
            // SAFETY: the C signatures of those SDK functions (3.6).
            iterate_operations: unsafe { library.get(b"rocprofiler_iterate_buffer_tracing_kind_operations\0") }.ok().map(|s| *s),
            // SAFETY: as above.
            operation_name: unsafe { library.get(b"rocprofiler_query_buffer_tracing_kind_operation_name\0") }.ok().map(|s| *s),
            // SAFETY: the C signature of rocprofiler_query_available_agents (agent.h).
            query_agents: unsafe { library.get(b"rocprofiler_query_available_agents\0") }.ok().map(|s| *s),
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Agents (agent.h): what XProf's device capabilities need of each GPU.
// ---------------------------------------------------------------------------------------------

/// `rocprofiler_query_available_agents_cb_t`: `agents` is an array of `n` pointers to the SDK's
/// own `rocprofiler_agent_v0_t`s (each of the SDK's size, which its `size` field gives).
pub type AgentsCallback = unsafe extern "C" fn(version: u32, agents: *const *const c_void, n: usize, data: *mut c_void) -> Status;

/// `ROCPROFILER_AGENT_INFO_VERSION_0`.
pub const AGENT_INFO_VERSION_0: u32 = 1;
/// `ROCPROFILER_AGENT_TYPE_GPU`.
pub const AGENT_TYPE_GPU: u32 = 2;

/// The prefix of `rocprofiler_agent_v0_t` that every SDK from ROCm 6.2 to 7.1 lays out the same
/// (offsets 0..292; later versions only append: `runtime_visibility` in the padding at 292, a
/// `uuid` at 296, sizes 296, 304, 312). Only the fields read here are named; the rest is kept as
/// padding of the right size.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AgentPrefix {
    pub size: u64,
    pub id: u64,
    pub kind: u32,
    _cpu_cores_count: u32,
    pub simd_count: u32,
    pub mem_banks_count: u32,
    _counts_to_wave_front: [u32; 9],
    pub num_xcc: u32,
    pub cu_count: u32,
    _array_to_max_slots: [u32; 6],
    pub gfx_target_version: u32,
    _pci_to_clk_ccompute: [u32; 9],
    pub max_engine_clk_fcompute: u32,
    _fw_to_grid: [u32; 8],
    _local_mem_hive_gpu: [u64; 3],
    _dims: [u32; 6],
    pub mem_banks: *const MemBank,
    _caches: *const c_void,
    _io_links: *const c_void,
    pub name: *const c_char,
    _vendor_name: *const c_char,
    pub product_name: *const c_char,
    _model_name: *const c_char,
    pub node_id: u32,
    pub logical_node_id: i32,
    pub logical_node_type_id: i32,
}

const _: () = {
    use std::mem::offset_of;
    assert!(offset_of!(AgentPrefix, id) == 8);
    assert!(offset_of!(AgentPrefix, kind) == 16);
    assert!(offset_of!(AgentPrefix, simd_count) == 24);
    assert!(offset_of!(AgentPrefix, mem_banks_count) == 28);
    assert!(offset_of!(AgentPrefix, num_xcc) == 68);
    assert!(offset_of!(AgentPrefix, cu_count) == 72);
    assert!(offset_of!(AgentPrefix, gfx_target_version) == 100);
    assert!(offset_of!(AgentPrefix, max_engine_clk_fcompute) == 140);
    assert!(offset_of!(AgentPrefix, mem_banks) == 224);
    assert!(offset_of!(AgentPrefix, name) == 248);
    assert!(offset_of!(AgentPrefix, product_name) == 264);
    assert!(offset_of!(AgentPrefix, node_id) == 280);
    assert!(offset_of!(AgentPrefix, logical_node_type_id) == 288);
    // 292 bytes of fields, padded to 296: the 6.2 struct's size, the smallest any SDK has.
    assert!(std::mem::size_of::<AgentPrefix>() == 296);
};

/// `rocprofiler_agent_mem_bank_t` (24 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct MemBank {
    /// `HSA_HEAPTYPE`: 1 and 2 are the frame buffer (VRAM).
    pub heap_type: u32,
    pub flags: u32,
    /// Bus width, bits.
    pub width: u32,
    /// Max memory clock, MHz.
    pub mem_clk_max: u32,
    pub size_in_bytes: u64,
}

const _: () = {
    assert!(std::mem::offset_of!(MemBank, size_in_bytes) == 16);
    assert!(std::mem::size_of::<MemBank>() == 24);
};

/// What the SDK says of one GPU agent.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GpuAgent {
    /// The handle dispatch records carry as `agent_id`.
    pub id: u64,
    /// `gfx942`: the agent's `name`, or rebuilt from `gfx_target_version` when the SDK could
    /// not open the device to read it (the last digit is hex: 90010 is `gfx90a`).
    pub arch: String,
    /// `AMD Instinct MI300X` (empty when unknown).
    pub product_name: String,
    /// Compute units (all XCCs).
    pub cu_count: u32,
    /// Max shader clock, MHz.
    pub max_clock_mhz: u32,
    /// VRAM: the frame-buffer banks' sizes, bytes.
    pub memory_bytes: u64,
    /// `gfx_target_version`'s major and minor.
    pub gfx_version: (u32, u32),
}

/// The GPU agents of the SDK, through `rocprofiler_query_available_agents` (callable at any
/// time after the SDK loaded). An SDK older than 0.6 (ROCm 6.2, 6.3) throws a C++ exception out
/// of that call where the machine has no KFD topology, so there it is called only when
/// `/sys/class/kfd/kfd/topology/nodes` exists.
pub fn gpu_agents(k: &KernelApi, sdk_version: u32) -> Result<Vec<GpuAgent>, String> {
    unsafe extern "C" fn collect(version: u32, agents: *const *const c_void, n: usize, data: *mut c_void) -> Status {
        // SAFETY: `data` is the Vec below, alive for the synchronous call.
        let out = unsafe { &mut *data.cast::<Vec<GpuAgent>>() };
        if version != AGENT_INFO_VERSION_0 || agents.is_null() {
            return 0;
        }
        for i in 0..n.min(4096) {
            // SAFETY: the SDK passes `n` pointers, valid for the call.
            let p = unsafe { *agents.add(i) }.cast::<AgentPrefix>();
            if p.is_null() {
                continue;
            }
            // SAFETY: an agent of the SDK; its first 8 bytes are its size.
            let size = unsafe { std::ptr::read_unaligned(p.cast::<u64>()) };
            if size < 292 {
                continue; // not a layout we know: read nothing of it
            }
            // SAFETY: at least 292 bytes, the prefix's fields (its 4 bytes of padding are a
            // field of every SDK's struct: the 6.2 one is 296 bytes).
            let a = unsafe { std::ptr::read_unaligned(p) };
            if a.kind != AGENT_TYPE_GPU {
                continue;
            }
            let text = |s: *const c_char| {
                // SAFETY: a C string the SDK keeps until finalization, or null.
                (!s.is_null()).then(|| unsafe { c_string_bytes(s as usize as u64, 256) }).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default()
            };
            let mut memory_bytes = 0u64;
            if !a.mem_banks.is_null() {
                for b in 0..a.mem_banks_count.min(64) as usize {
                    // SAFETY: `mem_banks_count` banks at `mem_banks`.
                    let bank = unsafe { std::ptr::read_unaligned(a.mem_banks.add(b)) };
                    if matches!(bank.heap_type, 1 | 2) {
                        memory_bytes = memory_bytes.saturating_add(bank.size_in_bytes);
                    }
                }
            }
            let v = a.gfx_target_version;
            let (major, minor, step) = ((v / 10000) % 100, (v / 100) % 100, v % 100);
            let name = text(a.name);
            out.push(GpuAgent {
                id: a.id,
                arch: if name.is_empty() && v != 0 { format!("gfx{major}{minor}{step:x}") } else { name },
                product_name: text(a.product_name),
                cu_count: a.cu_count,
                max_clock_mhz: a.max_engine_clk_fcompute,
                memory_bytes,
                gfx_version: (major, minor),
            });
        }
        0
    }
    let query = k.query_agents.ok_or("the SDK has no rocprofiler_query_available_agents")?;
    if sdk_version < 600 && !std::path::Path::new("/sys/class/kfd/kfd/topology/nodes").is_dir() {
        return Err("no KFD topology (/sys/class/kfd): this SDK version would throw out of rocprofiler_query_available_agents".to_owned());
    }
    let mut out: Vec<GpuAgent> = Vec::new();
    // SAFETY: version 0, our callback, the smallest agent size every SDK accepts, and a Vec that
    // outlives the synchronous call.
    let status = unsafe { query(AGENT_INFO_VERSION_0, collect, std::mem::size_of::<AgentPrefix>(), (&mut out as *mut Vec<GpuAgent>).cast()) };
    if status != 0 {
        return Err(format!("rocprofiler_query_available_agents returned {status}"));
    }
    Ok(out)
}
