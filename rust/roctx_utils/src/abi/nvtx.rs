//! NVTX3 injection (nvidia_sources.md A): `InitializeInjectionNvtx2`, which an NVTX3 client's
//! loader calls once per instrumented library when `NVTX_INJECTION64_PATH` names the shared
//! library `//:roctx_utils_nvtx`, and the handlers it installs. Every handler runs inside
//! [`guard`] and returns NVTX's neutral value on a panic.
//!
//! The slots are filled as complete sets (A, W and Ex of mark, push, start; pop; end) for the
//! core and the domain (CORE2) modules, the naming slots of the CUDA driver and runtime modules
//! too, so a client never sees depths drift between an attached A and an unattached W. Init
//! calls nothing of the client's but its export tables and starts nothing (no NVTX, CUDA or
//! start-up: the loader holds its init lock): start-up runs at the first handler call.
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, c_void};

use roctx_sys::nvtx::{self, EventAttributes, ExportTableCallbacks, ExportTableVersionInfo, GetExportTable, Message, Slot};
use roctx_sys::CText;

use super::guard;
use crate::emitter::nvtx as source;

/// The NVTX version we implement (`SetInjectionNvtxVersion`).
const INJECTION_VERSION: u32 = 3;
/// Cap on names from the naming slots.
const MAX_NAME: usize = 4096;

/// `InitializeInjectionNvtx2`: fills the client's slot tables. Non-zero is success; 0 would
/// have the loader unload us, so it is returned only when the client gives no callback table.
///
/// # Safety
/// `get_export_table` must be the client loader's `nvtxGetExportTable`.
#[no_mangle]
pub unsafe extern "C" fn InitializeInjectionNvtx2(get_export_table: Option<GetExportTable>) -> c_int {
    guard(0, || {
        let Some(get) = get_export_table else { return 0 };
        // SAFETY: the loader's own function; ids it does not know return null.
        let callbacks = unsafe { get(nvtx::ETID_CALLBACKS) }.cast::<ExportTableCallbacks>();
        // SAFETY: null or the client's table, readable for its struct_size.
        let Some(table) = (unsafe { read_sized(callbacks) }) else { return 0 };
        let Some(get_module) = table.get_module_function_table else { return 0 };
        // SAFETY: as above.
        if let Some(version) = unsafe { read_sized(get(nvtx::ETID_VERSIONINFO).cast::<ExportTableVersionInfo>()) } {
            if let Some(set) = version.set_injection_nvtx_version {
                // SAFETY: the client's function; it only records the number.
                unsafe { set(INJECTION_VERSION) };
            }
        }
        for (module, handlers) in [
            (nvtx::module::CORE, core_handlers()),
            (nvtx::module::CORE2, core2_handlers()),
            (nvtx::module::CUDA, cuda_handlers()),
            (nvtx::module::CUDART, cudart_handlers()),
        ] {
            // SAFETY: the client's function and its own table.
            unsafe { install(get_module, module, &handlers) };
        }
        crate::runtime::note_nvtx_client();
        1
    })
}

/// A client struct that starts with its `struct_size`, if that covers all of `T` (an older,
/// smaller table is not read past its size: it is ignored).
///
/// # Safety
/// `p` must be null or readable for the `usize` at its start and for that many bytes.
unsafe fn read_sized<T: Copy>(p: *const T) -> Option<T> {
    if p.is_null() {
        return None;
    }
    // SAFETY: per contract.
    let size = unsafe { p.cast::<usize>().read_unaligned() };
    // SAFETY: `size` covers `T`.
    (size >= std::mem::size_of::<T>()).then(|| unsafe { p.read_unaligned() })
}

type Handler = (usize, unsafe extern "C" fn());

/// Writes `handlers` into module `module`'s slots, bounded by the client's table size.
///
/// # Safety
/// `get_module` must be the client's `GetModuleFunctionTable`.
unsafe fn install(
    get_module: unsafe extern "C" fn(c_int, *mut *mut Slot, *mut u32) -> c_int,
    module: c_int,
    handlers: &[Handler],
) {
    let mut table: *mut Slot = std::ptr::null_mut();
    let mut size = 0u32;
    // SAFETY: valid out-pointers.
    if unsafe { get_module(module, &mut table, &mut size) } == 0 || table.is_null() {
        return; // a module this client does not have
    }
    for &(index, handler) in handlers {
        // Index 0 is INVALID and `size` counts it; an older client's table may be shorter.
        if index == 0 || index >= size as usize {
            continue;
        }
        // SAFETY: `index < size` entries are the client's slot pointers.
        let slot = unsafe { *table.add(index) };
        if !slot.is_null() {
            // SAFETY: the client's slot, written before its loader publishes init complete.
            unsafe { slot.write(Some(handler)) };
        }
    }
}

/// Erases a handler's signature for its slot (the client calls it with the slot's signature).
macro_rules! handler {
    ($index:expr, $f:expr, $sig:ty) => {
        // SAFETY: function pointers of any signature share one representation; the client
        // calls the slot with exactly `$sig`, the signature of `$f`.
        ($index, unsafe { std::mem::transmute::<$sig, unsafe extern "C" fn()>($f) })
    };
}

type AttrFn = unsafe extern "C" fn(*const EventAttributes);
type AttrIntFn = unsafe extern "C" fn(*const EventAttributes) -> c_int;
type AttrIdFn = unsafe extern "C" fn(*const EventAttributes) -> u64;
type TextFn = unsafe extern "C" fn(*const c_char);
type TextIntFn = unsafe extern "C" fn(*const c_char) -> c_int;
type TextIdFn = unsafe extern "C" fn(*const c_char) -> u64;
type WideFn = unsafe extern "C" fn(*const u32);
type WideIntFn = unsafe extern "C" fn(*const u32) -> c_int;
type WideIdFn = unsafe extern "C" fn(*const u32) -> u64;

fn core_handlers() -> Vec<Handler> {
    use nvtx::core::*;
    vec![
        handler!(MARK_EX, mark_ex, AttrFn),
        handler!(MARK_A, mark_a, TextFn),
        handler!(MARK_W, mark_w, WideFn),
        handler!(RANGE_START_EX, range_start_ex, AttrIdFn),
        handler!(RANGE_START_A, range_start_a, TextIdFn),
        handler!(RANGE_START_W, range_start_w, WideIdFn),
        handler!(RANGE_END, range_end, unsafe extern "C" fn(u64)),
        handler!(RANGE_PUSH_EX, range_push_ex, AttrIntFn),
        handler!(RANGE_PUSH_A, range_push_a, TextIntFn),
        handler!(RANGE_PUSH_W, range_push_w, WideIntFn),
        handler!(RANGE_POP, range_pop, unsafe extern "C" fn() -> c_int),
        handler!(NAME_CATEGORY_A, name_category_a, unsafe extern "C" fn(u32, *const c_char)),
        handler!(NAME_CATEGORY_W, name_category_w, unsafe extern "C" fn(u32, *const u32)),
        handler!(NAME_OS_THREAD_A, name_os_thread_a, unsafe extern "C" fn(u32, *const c_char)),
        handler!(NAME_OS_THREAD_W, name_os_thread_w, unsafe extern "C" fn(u32, *const u32)),
    ]
}

type Dom = *mut c_void;

fn core2_handlers() -> Vec<Handler> {
    use nvtx::core2::*;
    vec![
        handler!(DOMAIN_MARK_EX, domain_mark_ex, unsafe extern "C" fn(Dom, *const EventAttributes)),
        handler!(DOMAIN_RANGE_START_EX, domain_range_start_ex, unsafe extern "C" fn(Dom, *const EventAttributes) -> u64),
        handler!(DOMAIN_RANGE_END, domain_range_end, unsafe extern "C" fn(Dom, u64)),
        handler!(DOMAIN_RANGE_PUSH_EX, domain_range_push_ex, unsafe extern "C" fn(Dom, *const EventAttributes) -> c_int),
        handler!(DOMAIN_RANGE_POP, domain_range_pop, unsafe extern "C" fn(Dom) -> c_int),
        handler!(DOMAIN_REGISTER_STRING_A, domain_register_string_a, unsafe extern "C" fn(Dom, *const c_char) -> *mut c_void),
        handler!(DOMAIN_REGISTER_STRING_W, domain_register_string_w, unsafe extern "C" fn(Dom, *const u32) -> *mut c_void),
        handler!(DOMAIN_CREATE_A, domain_create_a, unsafe extern "C" fn(*const c_char) -> Dom),
        handler!(DOMAIN_CREATE_W, domain_create_w, unsafe extern "C" fn(*const u32) -> Dom),
        handler!(DOMAIN_DESTROY, domain_destroy, unsafe extern "C" fn(Dom)),
    ]
}

type NameHandle = unsafe extern "C" fn(*mut c_void, *const c_char);
type NameHandleW = unsafe extern "C" fn(*mut c_void, *const u32);
type NameDevice = unsafe extern "C" fn(c_int, *const c_char);
type NameDeviceW = unsafe extern "C" fn(c_int, *const u32);

fn cuda_handlers() -> Vec<Handler> {
    use nvtx::cuda::*;
    vec![
        handler!(NAME_CU_DEVICE_A, name_device_a, NameDevice),
        handler!(NAME_CU_DEVICE_W, name_device_w, NameDeviceW),
        handler!(NAME_CU_STREAM_A, name_stream_a, NameHandle),
        handler!(NAME_CU_STREAM_W, name_stream_w, NameHandleW),
    ]
}

fn cudart_handlers() -> Vec<Handler> {
    use nvtx::cudart::*;
    vec![
        handler!(NAME_CUDA_DEVICE_A, name_device_a, NameDevice),
        handler!(NAME_CUDA_DEVICE_W, name_device_w, NameDeviceW),
        handler!(NAME_CUDA_STREAM_A, name_stream_a, NameHandle),
        handler!(NAME_CUDA_STREAM_W, name_stream_w, NameHandleW),
    ]
}

// ---- decoding ----

/// Runs `f` with the domain key, the domain's label prefix and the message's text.
///
/// # Safety
/// `domain` is null or a handle from `source::domain_create`; the message's pointers are valid
/// C strings (registered ones are our pool's) or wide strings for the call.
///
/// `f` is called from one place, so that it is inlined here (called from each arm, it was kept
/// out of line: 14 instructions per NVTX pair, callgrind, issue 44).
#[inline(always)]
unsafe fn with_text<R>(domain: Dom, message: Message, f: impl FnOnce(usize, Option<&[u8]>, &[u8]) -> R) -> R {
    // SAFETY: a non-null domain is one of our leaked boxes (contract).
    let prefix = unsafe { domain.cast::<source::Domain>().as_ref() }.and_then(source::Domain::prefix);
    let key = domain as usize;
    let wide;
    let text: &[u8] = match message {
        // SAFETY: a C string valid for the call (contract).
        Message::Ascii(p) => unsafe { CText::from_ptr_or_empty(p) }.to_bytes(),
        // SAFETY: our pool handles are NUL-terminated strings that live for the process.
        Message::Registered(h) => unsafe { CText::from_ptr_or_empty(h.cast::<c_char>()) }.to_bytes(),
        Message::Unicode(p) => {
            // SAFETY: a wide string valid for the call (contract); rare, so it may allocate.
            wide = unsafe { nvtx::wide_to_utf8(p, MAX_NAME) };
            &wide
        }
        Message::None => b"",
    };
    f(key, prefix, text)
}

fn ascii(p: *const c_char) -> Message {
    if p.is_null() { Message::None } else { Message::Ascii(p) }
}

fn wide(p: *const u32) -> Message {
    if p.is_null() { Message::None } else { Message::Unicode(p) }
}

/// # Safety
/// See [`with_text`].
unsafe fn push(domain: Dom, message: Message) -> c_int {
    guard(nvtx::NO_PUSH_POP_TRACKING, || {
        if let Message::Registered(handle) = message {
            // SAFETY: a non-null domain is one of our leaked boxes (contract).
            let prefixed = unsafe { domain.cast::<source::Domain>().as_ref() }.and_then(source::Domain::prefix).is_some();
            if !handle.is_null() && !prefixed {
                // XLA's way (the TSL domain, registered titles): the label is the handle's text,
                // our pool's, which lives unchanged for the process.
                // SAFETY: our pool handles are NUL-terminated strings that live for the process.
                let text = unsafe { CText::from_ptr_or_empty(handle.cast::<c_char>()) };
                return source::range_push_registered(domain as usize, text);
            }
        }
        // SAFETY: per contract.
        unsafe { with_text(domain, message, source::range_push) }
    })
}

/// # Safety
/// See [`with_text`].
unsafe fn mark(domain: Dom, message: Message) {
    // SAFETY: per contract.
    guard((), || unsafe { with_text(domain, message, |_, prefix, text| source::mark(prefix, text)) })
}

/// # Safety
/// See [`with_text`].
unsafe fn start(domain: Dom, message: Message) -> u64 {
    // SAFETY: per contract.
    guard(0, || unsafe { with_text(domain, message, |_, prefix, text| source::range_start(prefix, text)) })
}

const DEFAULT: Dom = std::ptr::null_mut();

// ---- handlers: the default domain ----

unsafe extern "C" fn mark_ex(attr: *const EventAttributes) {
    // SAFETY: the client's attributes, read by their size.
    unsafe { mark(DEFAULT, nvtx::message(attr)) }
}
unsafe extern "C" fn mark_a(msg: *const c_char) {
    // SAFETY: the client's C string.
    unsafe { mark(DEFAULT, ascii(msg)) }
}
unsafe extern "C" fn mark_w(msg: *const u32) {
    // SAFETY: the client's wide string.
    unsafe { mark(DEFAULT, wide(msg)) }
}
unsafe extern "C" fn range_start_ex(attr: *const EventAttributes) -> u64 {
    // SAFETY: as in mark_ex.
    unsafe { start(DEFAULT, nvtx::message(attr)) }
}
unsafe extern "C" fn range_start_a(msg: *const c_char) -> u64 {
    // SAFETY: as in mark_a.
    unsafe { start(DEFAULT, ascii(msg)) }
}
unsafe extern "C" fn range_start_w(msg: *const u32) -> u64 {
    // SAFETY: as in mark_w.
    unsafe { start(DEFAULT, wide(msg)) }
}
unsafe extern "C" fn range_end(id: u64) {
    guard((), || source::range_end(id))
}
unsafe extern "C" fn range_push_ex(attr: *const EventAttributes) -> c_int {
    // SAFETY: as in mark_ex.
    unsafe { push(DEFAULT, nvtx::message(attr)) }
}
unsafe extern "C" fn range_push_a(msg: *const c_char) -> c_int {
    // PyTorch's `torch.cuda.nvtx.range_push` and most C callers: the default domain (no
    // prefix) and a C string, straight to the emitter without `push`'s decoding of every kind
    // of message (a jump table, a call and their saved registers: 40 instructions per pair,
    // callgrind, issue 44).
    // SAFETY: the client's C string, valid for the call (null: an empty label, as in `ascii`).
    guard(nvtx::NO_PUSH_POP_TRACKING, || source::range_push(0, None, unsafe { CText::from_ptr_or_empty(msg) }.to_bytes()))
}
unsafe extern "C" fn range_push_w(msg: *const u32) -> c_int {
    // SAFETY: as in mark_w.
    unsafe { push(DEFAULT, wide(msg)) }
}
unsafe extern "C" fn range_pop() -> c_int {
    guard(nvtx::NO_PUSH_POP_TRACKING, || source::range_pop(0))
}
// Categories name colour groups in Nsight; nothing of ours shows them.
unsafe extern "C" fn name_category_a(_category: u32, _name: *const c_char) {}
unsafe extern "C" fn name_category_w(_category: u32, _name: *const u32) {}

/// # Safety
/// A NUL-terminated narrow string or null.
unsafe fn narrow_name(p: *const c_char) -> Vec<u8> {
    // SAFETY: per contract.
    let bytes = unsafe { CText::from_ptr_or_empty(p) }.to_bytes();
    bytes[..bytes.len().min(MAX_NAME)].to_vec()
}

unsafe extern "C" fn name_os_thread_a(tid: u32, name: *const c_char) {
    // SAFETY: the client's C string.
    guard((), || source::name_os_thread(tid, &unsafe { narrow_name(name) }))
}
unsafe extern "C" fn name_os_thread_w(tid: u32, name: *const u32) {
    // SAFETY: the client's wide string.
    guard((), || source::name_os_thread(tid, &unsafe { nvtx::wide_to_utf8(name, MAX_NAME) }))
}

// ---- handlers: domains (CORE2) ----

unsafe extern "C" fn domain_mark_ex(domain: Dom, attr: *const EventAttributes) {
    // SAFETY: our domain handle (or null) and the client's attributes.
    unsafe { mark(domain, nvtx::message(attr)) }
}
unsafe extern "C" fn domain_range_start_ex(domain: Dom, attr: *const EventAttributes) -> u64 {
    // SAFETY: as above.
    unsafe { start(domain, nvtx::message(attr)) }
}
unsafe extern "C" fn domain_range_end(_domain: Dom, id: u64) {
    guard((), || source::range_end(id))
}
unsafe extern "C" fn domain_range_push_ex(domain: Dom, attr: *const EventAttributes) -> c_int {
    // SAFETY: as above.
    unsafe { push(domain, nvtx::message(attr)) }
}
unsafe extern "C" fn domain_range_pop(domain: Dom) -> c_int {
    guard(nvtx::NO_PUSH_POP_TRACKING, || source::range_pop(domain as usize))
}
unsafe extern "C" fn domain_register_string_a(_domain: Dom, text: *const c_char) -> *mut c_void {
    // SAFETY: the client's C string.
    guard(std::ptr::null_mut(), || source::register_string(unsafe { CText::from_ptr_or_empty(text) }.to_bytes()))
}
unsafe extern "C" fn domain_register_string_w(_domain: Dom, text: *const u32) -> *mut c_void {
    // SAFETY: the client's wide string; the pool cuts what is longer than its limit anyway.
    guard(std::ptr::null_mut(), || source::register_string(&unsafe { nvtx::wide_to_utf8(text, 1 << 16) }))
}
unsafe extern "C" fn domain_create_a(name: *const c_char) -> Dom {
    // SAFETY: the client's C string.
    guard(std::ptr::null_mut(), || source::domain_create(unsafe { CText::from_ptr_or_empty(name) }.to_bytes()))
}
unsafe extern "C" fn domain_create_w(name: *const u32) -> Dom {
    // SAFETY: the client's wide string.
    guard(std::ptr::null_mut(), || source::domain_create(&unsafe { nvtx::wide_to_utf8(name, 256) }))
}
// Handles live for the process: XLA keeps them in executables, and ranges may still be open.
unsafe extern "C" fn domain_destroy(_domain: Dom) {}

// ---- handlers: CUDA driver and runtime naming ----
//
// Installed so the naming slots form complete sets, and dropped: CUPTI's kernel records name
// streams by a numeric id, not by the handle NVTX is given, so no row could carry these names.

unsafe extern "C" fn name_device_a(_device: c_int, _name: *const c_char) {}
unsafe extern "C" fn name_device_w(_device: c_int, _name: *const u32) {}
unsafe extern "C" fn name_stream_a(_stream: *mut c_void, _name: *const c_char) {}
unsafe extern "C" fn name_stream_w(_stream: *mut c_void, _name: *const u32) {}
