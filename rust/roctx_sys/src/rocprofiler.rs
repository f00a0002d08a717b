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
