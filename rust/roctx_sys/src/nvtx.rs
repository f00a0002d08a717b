//! NVTX3's injection interface (nvidia_sources.md A): the export tables a client's loader hands
// The slot constants and fields are NVTX's, named as in its headers (nvidia_sources.md A.3-A.5).
#![allow(missing_docs)]
//! `InitializeInjectionNvtx2`, the callback modules and slot indices, and
//! `nvtxEventAttributes_t`, as `#[repr(C)]` layouts with the spec's sizes and offsets asserted.
//! Decoding reads an attribute struct's `size` first and no field that ends past it.

use std::ffi::{c_char, c_int, c_void};

/// `NvtxGetExportTable`: an export table by id, null for an unknown one.
pub type GetExportTable = unsafe extern "C" fn(export_table_id: u32) -> *const c_void;

/// `NVTX_ETID_CALLBACKS`.
pub const ETID_CALLBACKS: u32 = 1;
/// `NVTX_ETID_VERSIONINFO`.
pub const ETID_VERSIONINFO: u32 = 3;

/// A slot of a module's function table: where the loader calls through.
pub type Slot = *mut Option<unsafe extern "C" fn()>;

/// `NvtxExportTableCallbacks` (16 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ExportTableCallbacks {
    pub struct_size: usize,
    /// `(module, out_table, out_size) -> 1`, or 0 for a module the client does not know.
    pub get_module_function_table: Option<unsafe extern "C" fn(module: c_int, out_table: *mut *mut Slot, out_size: *mut u32) -> c_int>,
}

/// `NvtxExportTableVersionInfo` (24 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ExportTableVersionInfo {
    pub struct_size: usize,
    /// The client's `NVTX_VERSION` (3 for NVTX3 headers).
    pub version: u32,
    pub reserved0: u32,
    pub set_injection_nvtx_version: Option<unsafe extern "C" fn(version: u32)>,
}

const _: () = {
    assert!(std::mem::size_of::<ExportTableCallbacks>() == 16);
    assert!(std::mem::offset_of!(ExportTableCallbacks, get_module_function_table) == 8);
    assert!(std::mem::size_of::<ExportTableVersionInfo>() == 24);
    assert!(std::mem::offset_of!(ExportTableVersionInfo, version) == 8);
    assert!(std::mem::offset_of!(ExportTableVersionInfo, set_injection_nvtx_version) == 16);
};

/// Callback modules (`NVTX_CB_MODULE_*`) and their table sizes (`…_SIZE`: the slot count
/// including index 0).
pub mod module {
    /// `NVTX_CB_MODULE_CORE`.
    pub const CORE: i32 = 1;
    /// `NVTX_CB_MODULE_CUDA`.
    pub const CUDA: i32 = 2;
    /// `NVTX_CB_MODULE_CUDART`.
    pub const CUDART: i32 = 4;
    /// `NVTX_CB_MODULE_CORE2`.
    pub const CORE2: i32 = 5;
}

/// Slot indices of `NVTX_CB_MODULE_CORE` (A.3).
pub mod core {
    pub const MARK_EX: usize = 1;
    pub const MARK_A: usize = 2;
    pub const MARK_W: usize = 3;
    pub const RANGE_START_EX: usize = 4;
    pub const RANGE_START_A: usize = 5;
    pub const RANGE_START_W: usize = 6;
    pub const RANGE_END: usize = 7;
    pub const RANGE_PUSH_EX: usize = 8;
    pub const RANGE_PUSH_A: usize = 9;
    pub const RANGE_PUSH_W: usize = 10;
    pub const RANGE_POP: usize = 11;
    pub const NAME_CATEGORY_A: usize = 12;
    pub const NAME_CATEGORY_W: usize = 13;
    pub const NAME_OS_THREAD_A: usize = 14;
    pub const NAME_OS_THREAD_W: usize = 15;
}

/// Slot indices of `NVTX_CB_MODULE_CORE2` (A.3).
pub mod core2 {
    pub const DOMAIN_MARK_EX: usize = 1;
    pub const DOMAIN_RANGE_START_EX: usize = 2;
    pub const DOMAIN_RANGE_END: usize = 3;
    pub const DOMAIN_RANGE_PUSH_EX: usize = 4;
    pub const DOMAIN_RANGE_POP: usize = 5;
    pub const DOMAIN_REGISTER_STRING_A: usize = 10;
    pub const DOMAIN_REGISTER_STRING_W: usize = 11;
    pub const DOMAIN_CREATE_A: usize = 12;
    pub const DOMAIN_CREATE_W: usize = 13;
    pub const DOMAIN_DESTROY: usize = 14;
}

/// Slot indices of `NVTX_CB_MODULE_CUDA` (driver handles).
pub mod cuda {
    pub const NAME_CU_DEVICE_A: usize = 1;
    pub const NAME_CU_DEVICE_W: usize = 2;
    pub const NAME_CU_STREAM_A: usize = 5;
    pub const NAME_CU_STREAM_W: usize = 6;
}

/// Slot indices of `NVTX_CB_MODULE_CUDART` (runtime handles).
pub mod cudart {
    pub const NAME_CUDA_DEVICE_A: usize = 1;
    pub const NAME_CUDA_DEVICE_W: usize = 2;
    pub const NAME_CUDA_STREAM_A: usize = 3;
    pub const NAME_CUDA_STREAM_W: usize = 4;
}

/// `NVTX_NO_PUSH_POP_TRACKING`: what push/pop return when nobody tracks depth.
pub const NO_PUSH_POP_TRACKING: c_int = -2;

/// `nvtxEventAttributes_t` (`nvtxEventAttributes_v2`, 48 bytes, A.5).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct EventAttributes {
    pub version: u16,
    pub size: u16,
    pub category: u32,
    pub color_type: i32,
    pub color: u32,
    pub payload_type: i32,
    pub reserved0: i32,
    pub payload: u64,
    pub message_type: i32,
    pub padding: u32,
    pub message: *const c_void,
}

const _: () = {
    assert!(std::mem::size_of::<EventAttributes>() == 48);
    assert!(std::mem::align_of::<EventAttributes>() == 8);
    assert!(std::mem::offset_of!(EventAttributes, size) == 2);
    assert!(std::mem::offset_of!(EventAttributes, category) == 4);
    assert!(std::mem::offset_of!(EventAttributes, payload_type) == 16);
    assert!(std::mem::offset_of!(EventAttributes, payload) == 24);
    assert!(std::mem::offset_of!(EventAttributes, message_type) == 32);
    assert!(std::mem::offset_of!(EventAttributes, message) == 40);
};

/// `NVTX_MESSAGE_TYPE_ASCII`.
pub const MESSAGE_ASCII: i32 = 1;
/// `NVTX_MESSAGE_TYPE_UNICODE` (`wchar_t`, 4 bytes on Linux).
pub const MESSAGE_UNICODE: i32 = 2;
/// `NVTX_MESSAGE_TYPE_REGISTERED`: a handle from `nvtxDomainRegisterString*`.
pub const MESSAGE_REGISTERED: i32 = 3;

/// The message of an event, as the attributes give it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message {
    /// No message (unknown type, null, or a `size` that does not cover it).
    None,
    /// A NUL-terminated narrow string.
    Ascii(*const c_char),
    /// A NUL-terminated `wchar_t` (UTF-32) string.
    Unicode(*const u32),
    /// A registered-string handle.
    Registered(*const c_void),
}

/// The message of `attr` (null: none), reading `size` first and nothing past it.
///
/// # Safety
/// `attr` must be null or point at readable memory of at least the `size` it declares (at
/// least its first 4 bytes).
pub unsafe fn message(attr: *const EventAttributes) -> Message {
    if attr.is_null() {
        return Message::None;
    }
    // SAFETY: the first four bytes (version, size) are readable per contract.
    let size = usize::from(unsafe { std::ptr::addr_of!((*attr).size).read_unaligned() });
    if size < std::mem::size_of::<EventAttributes>() {
        return Message::None; // `message` ends at byte 48
    }
    // SAFETY: `size` covers the whole struct.
    let a = unsafe { attr.read_unaligned() };
    if a.message.is_null() {
        return Message::None;
    }
    match a.message_type {
        MESSAGE_ASCII => Message::Ascii(a.message.cast()),
        MESSAGE_UNICODE => Message::Unicode(a.message.cast()),
        MESSAGE_REGISTERED => Message::Registered(a.message),
        _ => Message::None,
    }
}

/// A `wchar_t` string as UTF-8 (invalid code points become U+FFFD), at most `max` bytes of
/// output; null reads as empty.
///
/// # Safety
/// `p` must be null or a NUL-terminated array of `u32` valid for the call.
pub unsafe fn wide_to_utf8(p: *const u32, max: usize) -> Vec<u8> {
    let mut out = Vec::new();
    if p.is_null() {
        return out;
    }
    for i in 0.. {
        // SAFETY: NUL-terminated per contract, and we stop at the NUL.
        let unit = unsafe { p.add(i).read_unaligned() };
        if unit == 0 {
            break;
        }
        let c = char::from_u32(unit).unwrap_or(char::REPLACEMENT_CHARACTER);
        if out.len() + c.len_utf8() > max {
            break;
        }
        let mut buf = [0u8; 4];
        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
    }
    out
}

/// Whether `injection` (`NVTX_INJECTION64_PATH`) is the very object this code is linked into,
/// compared by device and inode (a symlink or a relative path still matches). Then the process
/// is an NVTX-injected one even before any NVTX client initialised us: a Python annotation may
/// load this library first, through the same path.
pub fn is_this_library(injection: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;
    // SAFETY: Dl_info is plain data; dladdr fills it for an address in our own code and only
    // reads the loader's tables.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: as above; the address is a function of this object.
    let found = unsafe { libc::dladdr(is_this_library as *const c_void, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return false;
    }
    // SAFETY: dladdr returned a NUL-terminated name owned by the loader, valid while we are loaded.
    let ours = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    let ours = std::path::Path::new(std::ffi::OsStr::from_bytes(ours.to_bytes()));
    match (std::fs::metadata(ours), std::fs::metadata(injection)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(size: u16, message_type: i32, message: *const c_void) -> EventAttributes {
        EventAttributes {
            version: 3,
            size,
            category: 0,
            color_type: 0,
            color: 0,
            payload_type: 0,
            reserved0: 0,
            payload: 0,
            message_type,
            padding: 0,
            message,
        }
    }

    #[test]
    fn the_message_is_read_only_when_size_covers_it() {
        let text = c"step";
        let a = attr(48, MESSAGE_ASCII, text.as_ptr().cast());
        // SAFETY: a valid struct.
        assert_eq!(unsafe { message(&a) }, Message::Ascii(text.as_ptr()));
        let short = attr(40, MESSAGE_ASCII, text.as_ptr().cast());
        // SAFETY: a valid struct (larger than its size says).
        assert_eq!(unsafe { message(&short) }, Message::None);
        let unknown = attr(48, 77, text.as_ptr().cast());
        // SAFETY: as above.
        assert_eq!(unsafe { message(&unknown) }, Message::None);
        let null = attr(48, MESSAGE_ASCII, std::ptr::null());
        // SAFETY: as above.
        assert_eq!(unsafe { message(&null) }, Message::None);
        // SAFETY: null is allowed.
        assert_eq!(unsafe { message(std::ptr::null()) }, Message::None);
    }

    #[test]
    fn wide_strings_become_utf8_and_bad_code_points_a_replacement() {
        let wide: Vec<u32> = "Grüße 🎉".chars().map(u32::from).chain([0xD800, 0x11_0000, 0]).collect();
        // SAFETY: NUL-terminated.
        assert_eq!(String::from_utf8(unsafe { wide_to_utf8(wide.as_ptr(), 100) }).unwrap(), "Grüße 🎉\u{fffd}\u{fffd}");
        // SAFETY: as above; the cap never splits a character.
        assert_eq!(unsafe { wide_to_utf8(wide.as_ptr(), 4) }, b"Gr\xc3\xbc");
        // SAFETY: null is allowed.
        assert!(unsafe { wide_to_utf8(std::ptr::null(), 10) }.is_empty());
    }
}
