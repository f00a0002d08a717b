//! Kernel tracing in tool mode: a second rocprofiler-sdk context of ours, created in the SDK's
//! `initialize` beside the marker context and started there, never stopped by sessions (the
//! roofline report and op scopes live for the whole process). It subscribes
//!
//! - buffer tracing of KERNEL_DISPATCH into one LOSSLESS buffer ([`BUFFER_BYTES`], delivered at a
//!   [`WATERMARK_BYTES`] watermark on the SDK's own thread), decoded record by record (`size`
//!   checked, larger sizes read as newer) into [`roctx_kernels`];
//! - callback tracing of CODE_OBJECT, for the kernel symbols' names (optional: without it
//!   kernels have empty names).
//!
//! The SDK never flushes by itself: [`flush`] is called at session stop, at a reset and at exit.
//!
//! **Attribution** goes through the SDK's external-correlation stack of this context: each
//! launching thread keeps exactly one entry of ours on it, the value
//! [`roctx_kernels::attribution::encode`]`(invocation, range)`, replaced (pop, then push) when
//! the thread's op or innermost range changes. Dispatches copy it at enqueue time.

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::OnceLock;

use roctx_config::log;
use roctx_kernels::RawDispatch;
use roctx_sys::rocprofiler::{self, CallbackRecordV6, CallbackRecordV7, KernelApi, Layout, Record, RecordHeader, SdkApi};

/// Bytes of the dispatch buffer (the SDK allocates it twice for LOSSLESS): about 365,000
/// records of 184 bytes between deliveries.
pub const BUFFER_BYTES: usize = 64 << 20;
/// Delivery watermark: batches of about 22,800 records.
pub const WATERMARK_BYTES: usize = 4 << 20;

static KERNEL_API: OnceLock<KernelApi> = OnceLock::new();
static CONTEXT: AtomicU64 = AtomicU64::new(0);
static BUFFER: AtomicU64 = AtomicU64::new(0);
/// 0: not set up, 1: tracing, 2: unavailable.
static STATE: AtomicU8 = AtomicU8::new(0);

/// Whether kernel dispatches are being traced, by rocprofiler-sdk or (NVIDIA) by CUPTI.
pub fn active() -> bool {
    sdk_active() || super::cupti::active()
}

fn sdk_active() -> bool {
    STATE.load(Ordering::Acquire) == 1
}

/// Inside the SDK's `initialize`: sets up kernel tracing if the configuration wants it. A
/// failure is logged with its reason and leaves marker capture as it is.
pub(super) fn initialize(api: &SdkApi, layout: Layout) {
    let config = roctx_config::get();
    if !config.kernels && config.roofline_out.is_none() {
        STATE.store(2, Ordering::Release);
        return;
    }
    match set_up(api, layout) {
        Ok(()) => {
            STATE.store(1, Ordering::Release);
            log::info(format_args!("rocprofiler-sdk: tracing kernel dispatches"));
        }
        Err(why) => {
            STATE.store(2, Ordering::Release);
            log::warn(format_args!("rocprofiler-sdk: kernel dispatches will not be traced: {why}"));
        }
    }
}

fn set_up(api: &SdkApi, layout: Layout) -> Result<(), String> {
    let k = api.kernel_api()?;
    let k = KERNEL_API.get_or_init(|| k);
    let mut context = 0u64;
    // SAFETY: a valid out-pointer, inside initialize.
    check(api, "rocprofiler_create_context", unsafe { (api.create_context)(&mut context) })?;
    let mut buffer = 0u64;
    // SAFETY: our context; the callback has the buffer-tracing signature and lives forever.
    check(api, "rocprofiler_create_buffer", unsafe {
        (k.create_buffer)(context, BUFFER_BYTES, WATERMARK_BYTES, rocprofiler::BUFFER_POLICY_LOSSLESS, on_buffer, std::ptr::null_mut(), &mut buffer)
    })?;
    // SAFETY: all operations of KERNEL_DISPATCH into our buffer.
    check(api, "rocprofiler_configure_buffer_tracing_service(KERNEL_DISPATCH)", unsafe {
        (k.configure_buffer_tracing_service)(context, rocprofiler::BUFFER_KIND_KERNEL_DISPATCH, std::ptr::null(), 0, buffer)
    })?;
    let callback: *const c_void = match layout {
        Layout::V6 => on_code_object_v6 as *const c_void,
        Layout::V7 => on_code_object_v7 as *const c_void,
    };
    // SAFETY: all operations; the callback matches the layout's record type.
    let status = unsafe {
        (api.configure_callback_tracing_service)(context, rocprofiler::CALLBACK_KIND_CODE_OBJECT, std::ptr::null(), 0, callback, std::ptr::null_mut())
    };
    if status != 0 {
        log::warn(format_args!("rocprofiler-sdk: subscribing CODE_OBJECT failed ({}); kernels will have no names", api.status_name(status)));
    }
    // SAFETY: our context.
    check(api, "rocprofiler_start_context(kernels)", unsafe { (api.start_context)(context) })?;
    CONTEXT.store(context, Ordering::Release);
    BUFFER.store(buffer, Ordering::Release);
    Ok(())
}

fn check(api: &SdkApi, what: &str, status: rocprofiler::Status) -> Result<(), String> {
    if status == 0 { Ok(()) } else { Err(format!("{what} returned {}", api.status_name(status))) }
}

/// Delivers every dispatch the SDK (or CUPTI) holds now (neither flushes by itself).
/// Synchronous.
pub fn flush() {
    super::cupti::flush();
    let Some(k) = KERNEL_API.get() else { return };
    if !sdk_active() {
        return;
    }
    // SAFETY: our buffer.
    let status = unsafe { (k.flush_buffer)(BUFFER.load(Ordering::Acquire)) };
    if status != 0 {
        log::warn(format_args!("rocprofiler_flush_buffer returned status {status}; dispatches still in the SDK's buffer are not in this report"));
    }
}

thread_local! {
    /// This thread's entry on the tracing source's external-correlation stack (the SDK's, or
    /// CUPTI's CUSTOM2 one): (pushed, invocation, range).
    static SCOPE: Cell<(bool, u32, u32)> = const { Cell::new((false, 0, 0)) };
}

/// The calling thread's current op invocation and innermost range instance.
pub fn current_scope() -> (u32, u32) {
    SCOPE.try_with(|s| {
        let (_, i, r) = s.get();
        (i, r)
    })
    .unwrap_or((0, 0))
}

/// Makes `(invocation, range)` the value the calling thread's next dispatches carry: pops this
/// thread's previous entry, if any, and pushes the new one (one entry of ours per thread, the
/// llama.cpp hygiene). Returns false if the source refused (then dispatches keep the old
/// value) or nothing traces kernels.
pub fn set_scope(invocation: u32, range: u32) -> bool {
    let Ok((pushed, old_i, old_r)) = SCOPE.try_with(Cell::get) else { return false };
    if pushed && (old_i, old_r) == (invocation, range) {
        return true;
    }
    let value = roctx_kernels::attribution::encode(invocation, range);
    let ok = if sdk_active() {
        replace_entry(pushed, value)
    } else if super::cupti::active() {
        super::cupti::replace_entry(pushed, value)
    } else {
        return false;
    };
    let _ = SCOPE.try_with(|s| s.set((ok, if ok { invocation } else { 0 }, if ok { range } else { 0 })));
    ok
}

/// The SDK side of [`set_scope`]: pops this thread's entry if `pushed`, pushes `value`.
fn replace_entry(pushed: bool, value: u64) -> bool {
    let Some(k) = KERNEL_API.get() else { return false };
    let context = CONTEXT.load(Ordering::Acquire);
    let tid = roctx_sys::os::current_tid();
    if pushed {
        // SAFETY: our context, a Linux tid, a nullable out-pointer.
        let _ = unsafe { (k.pop_external_correlation_id)(context, tid, std::ptr::null_mut()) };
    }
    // SAFETY: our context and a Linux tid; the value is passed by value.
    unsafe { (k.push_external_correlation_id)(context, tid, value) == 0 }
}

/// Runs a callback's work inside the panic fence; a batch or symbol lost to a panic is counted.
fn fenced(f: impl FnOnce()) {
    if !roctx_sys::guard(false, || {
        f();
        true
    }) {
        roctx_kernels::count_rejected(1);
    }
}

/// The calling thread's innermost ROCTX range changed to push number `seq` (0: none): its
/// next kernels carry it. Two SDK calls while kernels are traced, nothing otherwise.
#[inline]
pub fn range_changed(seq: u32) {
    if active() {
        let (invocation, _) = current_scope();
        set_scope(invocation, seq);
    }
}

/// `rocprofiler_buffer_tracing_cb_t`: one batch of records on the SDK's thread.
unsafe extern "C" fn on_buffer(_context: u64, _buffer: u64, headers: *mut *mut RecordHeader, n: usize, _data: *mut c_void, drop_count: u64) {
    fenced(|| {
        roctx_kernels::count_sdk_dropped(drop_count);
        if headers.is_null() {
            roctx_kernels::count_rejected(u64::try_from(n).unwrap_or(u64::MAX));
            return;
        }
        let mut rejected = 0u64;
        let mut batch = Vec::with_capacity(n.min(1 << 16));
        for i in 0..n {
            // SAFETY: the SDK passes `n` header pointers, valid for the call.
            let header = unsafe { *headers.add(i) };
            // SAFETY: a header from the SDK (or null, which is rejected).
            match unsafe { rocprofiler::kernel_dispatch(header) } {
                Ok(d) => batch.push(RawDispatch {
                    start_ns: d.start_ns,
                    end_ns: d.end_ns,
                    kernel_id: d.kernel_id,
                    external: d.correlation_external,
                    thread_id: d.thread_id,
                    agent_id: d.agent_id,
                    queue_id: d.queue_id,
                    dispatch_id: d.dispatch_id,
                    correlation_id: d.correlation_internal,
                    workgroup: [d.workgroup_size.x, d.workgroup_size.y, d.workgroup_size.z],
                    grid: [d.grid_size.x, d.grid_size.y, d.grid_size.z],
                }),
                Err(rocprofiler::DispatchError::OtherKind) => {}
                Err(rocprofiler::DispatchError::Malformed) => rejected += 1,
            }
        }
        roctx_kernels::record_dispatch(batch);
        roctx_kernels::count_rejected(rejected);
    });
}

unsafe extern "C" fn on_code_object_v6(record: CallbackRecordV6, _user_data: *mut c_void, _cb_data: *mut c_void) {
    // SAFETY: the SDK's payload is valid for the callback.
    fenced(|| unsafe { on_code_object(&record.into()) });
}

unsafe extern "C" fn on_code_object_v7(record: CallbackRecordV7, _user_data: *mut c_void, _cb_data: *mut c_void) {
    // SAFETY: the SDK's payload is valid for the callback.
    fenced(|| unsafe { on_code_object(&record.into()) });
}

/// # Safety
/// `record.payload` must be null or valid for the call.
unsafe fn on_code_object(record: &Record) {
    if (record.kind, record.operation, record.phase)
        != (rocprofiler::CALLBACK_KIND_CODE_OBJECT, rocprofiler::CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER, rocprofiler::PHASE_LOAD)
    {
        return; // code-object loads and unloads: nothing to keep
    }
    // SAFETY: a symbol-register payload (checked above), valid for the call (contract).
    match unsafe { rocprofiler::kernel_symbol(record.payload) } {
        Some(symbol) => roctx_kernels::register_kernel_symbol(symbol.kernel_id, &symbol.name),
        None => roctx_kernels::count_rejected(1),
    }
}
