//! Kernel tracing in tool mode: a second rocprofiler-sdk context of ours, created in the SDK's
//! `initialize` beside the marker context and started there, never stopped by sessions (the
//! roofline report and op scopes live for the whole process). It subscribes
//!
//! - buffer tracing of KERNEL_DISPATCH into one LOSSLESS buffer ([`BUFFER_BYTES`], delivered at a
//!   [`WATERMARK_BYTES`] watermark on the SDK's own thread), decoded record by record (`size`
//!   checked, larger sizes read as newer) into [`roctx_kernels`];
//! - callback tracing of CODE_OBJECT, for the kernel symbols' names (optional: without it
//!   kernels have empty names);
//! - buffer tracing of HIP_RUNTIME_API, restricted to the calls that enqueue work (by name, since
//!   the operation ids differ between HIP versions), into the same buffer: the launch calls.
//!
//! The SDK never flushes by itself: [`flush`] is called at session stop, at a reset and at exit.
//!
//! **Attribution** is a join, with no SDK call on the range or op path ([`roctx_kernels::join`]):
//! a dispatch names its launch call by internal correlation id; the call's record gives the
//! thread and the host interval; the thread's op-scope log ([`set_scope`]) and, at export, its
//! recorded ranges say what was open then. Only when the SDK refuses HIP API tracing does the
//! old path remain: each launching thread keeps one external-correlation entry of ours, the value
//! [`roctx_kernels::attribution::encode`]`(invocation, range)`, replaced (pop, then push) at every
//! range or op change, and dispatches copy it at enqueue time; a value a thread inherited
//! from the SDK's default thread (it had no stack yet) is recognised by its flag and names
//! nothing ([`roctx_kernels::attribution::resolve`]).

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::OnceLock;

use roctx_config::log;
use roctx_kernels::{Direction, MemCopy, MemoryKind, Work, Launch, RawDispatch};
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
/// The SDK refused HIP API tracing: ranges and ops reach dispatches through the external
/// correlation stack, a pop and a push per change.
static BY_EXTERNAL: AtomicBool = AtomicBool::new(false);
/// The record layout of the SDK in use (HIP API records differ between 6.x and 7.x).
static LAYOUT_V7: AtomicBool = AtomicBool::new(false);
/// The GPU agents the SDK listed at initialize (XProf's device capabilities).
static GPU_AGENTS: OnceLock<Vec<rocprofiler::GpuAgent>> = OnceLock::new();

/// The GPU agents rocprofiler-sdk listed (empty without the SDK, or where it could not say).
pub fn gpu_agents() -> &'static [rocprofiler::GpuAgent] {
    GPU_AGENTS.get().map_or(&[], Vec::as_slice)
}

/// The SDK's "default" thread, whose top a thread without an external-correlation stack
/// inherits: the thread that loaded the SDK, which is the one that configures and initializes
/// its tools (registration runs synchronously inside that load).
static DEFAULT_TID: AtomicU64 = AtomicU64::new(0);

/// HIP runtime calls that enqueue work on a device, picked from the names the SDK gives its
/// HIP_RUNTIME_API operations (which differ by release): kernel launches of every flavour, graph
/// launches, the copies and fills that may run as blit kernels, and the stream memory
/// operations (`hipStreamWriteValue32/64`, `hipStreamWaitValue32/64`, ROCm 7's
/// `hipStreamBatchMemOp`), which clr also runs as blit kernels. A kernel whose call is not
/// traced has no launch record to join: it keeps no range and no op (issue 40).
fn enqueues(name: &str) -> bool {
    ["Launch", "Memcpy", "Memset", "MemPrefetch", "StreamWriteValue", "StreamWaitValue", "StreamBatchMemOp"].iter().any(|w| name.contains(w))
}

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
    DEFAULT_TID.store(roctx_sys::os::current_tid(), Ordering::Release);
    let config = roctx_config::get();
    if !config.kernels && config.roofline_out.is_none() {
        STATE.store(2, Ordering::Release);
        return;
    }
    match set_up(api, layout) {
        Ok(()) => {
            roctx_kernels::start_clock(); // before the first scope change can be stamped
            STATE.store(1, Ordering::Release);
            log::info(format_args!("rocprofiler-sdk: tracing kernel dispatches"));
            if let Some(k) = KERNEL_API.get() {
                match rocprofiler::gpu_agents(k, api.version().unwrap_or(0)) {
                    Ok(agents) => {
                        let _ = GPU_AGENTS.set(agents);
                    }
                    Err(why) => log::info(format_args!("rocprofiler-sdk: no GPU capabilities for XProf's peaks: {why}")),
                }
            }
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
    // Memory copies beside the kernels (unless turned off); without them kernels are still traced.
    let status = if roctx_config::get().copies {
        // SAFETY: all operations of MEMORY_COPY into our buffer.
        unsafe { (k.configure_buffer_tracing_service)(context, rocprofiler::BUFFER_KIND_MEMORY_COPY, std::ptr::null(), 0, buffer) }
    } else {
        0
    };
    if status != 0 {
        log::warn(format_args!("rocprofiler-sdk: MEMORY_COPY tracing refused ({}); memory copies will not be recorded", api.status_name(status)));
    }
    LAYOUT_V7.store(layout == Layout::V7, Ordering::Release);
    // The launch calls, for the join; every HIP call if the SDK cannot name its operations.
    let ops = k.operations_named(rocprofiler::BUFFER_KIND_HIP_RUNTIME_API, enqueues).unwrap_or_default();
    // SAFETY: a list of `ops.len()` operation ids of that kind (or none: all), into our buffer.
    let status = unsafe {
        (k.configure_buffer_tracing_service)(context, rocprofiler::BUFFER_KIND_HIP_RUNTIME_API, ops.as_ptr(), ops.len(), buffer)
    };
    if status != 0 {
        BY_EXTERNAL.store(true, Ordering::Release);
        log::warn(format_args!(
            "rocprofiler-sdk: HIP API tracing refused ({}); kernels are attributed through external correlation, two SDK calls per range",
            api.status_name(status)
        ));
    }
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

/// The host lets another profiler take the vendor's activity API: ours is flushed and stepped
/// back (only CUPTI is shared; rocprofiler-sdk gives every tool its own context). Whether
/// kernels were traced through CUPTI.
pub fn handover() -> bool {
    super::cupti::handover()
}

/// That profiler has stopped: the API is ours again as soon as nobody traces. Whether kernels
/// are traced through CUPTI now.
pub fn reclaim() -> bool {
    super::cupti::reclaim()
}

/// Capture windows: CUPTI stops tracing ours between windows (what it holds is delivered first).
/// Safe on any thread outside CUPTI's own callbacks. Whether it was tracing.
pub fn window_pause_cupti() -> bool {
    super::cupti::window_pause()
}

/// Capture windows: CUPTI traces ours again (a window opened). Whether it does now.
pub fn window_resume_cupti() -> bool {
    super::cupti::window_resume()
}

/// Capture windows: rocprofiler-sdk's kernel context stops between windows (its buffer is
/// flushed first). Never from inside the SDK's callbacks. Whether the SDK traces kernels here.
pub fn window_pause_sdk() -> bool {
    window_sdk(false)
}

/// Capture windows: the kernel context starts again (a window opened).
pub fn window_resume_sdk() -> bool {
    window_sdk(true)
}

/// Whether the calling thread may start or stop an SDK context now: not from inside one of our
/// marker callbacks.
pub fn sdk_context_calls_allowed() -> bool {
    !super::tool::in_callback()
}

/// The kernel context is stopped for capture windows (so a resume starts only what a pause
/// stopped, whenever the SDK's initialize came).
static SDK_WINDOW_PAUSED: AtomicBool = AtomicBool::new(false);

fn window_sdk(start: bool) -> bool {
    let (Some(api), true) = (super::tool::sdk_api(), sdk_active()) else { return false };
    if SDK_WINDOW_PAUSED.swap(!start, Ordering::AcqRel) != start {
        return true; // already so
    }
    let context = CONTEXT.load(Ordering::Acquire);
    if !start {
        flush_sources();
    }
    // SAFETY: our kernel context, created in initialize.
    let status = unsafe { if start { (api.start_context)(context) } else { (api.stop_context)(context) } };
    if status != 0 {
        log::warn(format_args!(
            "capture windows: rocprofiler_{}_context(kernels) returned {}; kernels {}",
            if start { "start" } else { "stop" },
            api.status_name(status),
            if start { "of this window are not traced" } else { "are traced between windows too (only those inside a window are written)" }
        ));
    }
    true
}

/// Delivers every dispatch the SDK (or CUPTI) holds now (neither flushes by itself).
/// Synchronous. A dispatch whose launch call is still running on its thread stays joinable
/// ([`roctx_kernels::settle`]); see [`flush_final`].
pub fn flush() {
    flush_sources();
    // Everything delivered: a dispatch whose launch record can no longer come has none.
    roctx_kernels::settle();
}

/// [`flush`] for the last time (exit, the session's stop, a signal that ends the run, a fork
/// child's report): every dispatch still waiting for its launch is kept, unjoined.
pub fn flush_final() {
    flush_sources();
    roctx_kernels::settle_all();
}

fn flush_sources() {
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

/// This thread's op invocation, and its entry on the SDK's external-correlation stack where
/// that path is in use: (pushed, invocation, range). A slot of the static-TLS block
/// (`roctx_sys::tls`): read at every range and op scope, with no `__tls_get_addr`.
// SAFETY: the only slot with this word.
static SCOPE: roctx_sys::tls::Slot<Cell<(bool, u32, u32)>, { roctx_sys::tls::SlotId::KernelScope as usize }> =
    unsafe { roctx_sys::tls::Slot::new(|| Cell::new((false, 0, 0))) };

/// The calling thread's current op invocation and (external-correlation path only) innermost
/// range instance.
pub fn current_scope() -> (u32, u32) {
    SCOPE.with(|s| {
        let (_, i, r) = s.get();
        (i, r)
    })
    .unwrap_or((0, 0))
}

/// Makes `invocation` (0: none) the op scope of the calling thread's next launches: one entry
/// in the thread's op log ([`roctx_kernels::scope_changed`], stamped now with the capture clock,
/// `roctx_sys::clock::now`: a `rdtsc` where the TSC is trusted, converted to `CLOCK_BOOTTIME`,
/// the clock of the launch records, when the stage merges the log). `range` matters only on the external-correlation path.
/// Returns false if nothing traces kernels (or the SDK refused the entry).
pub fn set_scope(invocation: u32, range: u32) -> bool {
    let Some((pushed, old_i, _)) = SCOPE.with(Cell::get) else { return false };
    if !active() {
        return false;
    }
    if old_i != invocation || !pushed {
        roctx_kernels::scope_changed(roctx_sys::os::current_tid(), roctx_sys::clock::now(), invocation);
    }
    apply_scope(invocation, range)
}

/// Begins an invocation of the geometry `key` and makes it the calling thread's op scope, as
/// [`roctx_kernels::begin_invocation_at`] then [`set_scope`] would, under one acquisition of the
/// kernel stage's lock instead of two (llama.cpp's `begin_op`, once per node: issue 42).
/// `None` when a reset has cleared `key` (nothing begun, the scope unchanged).
pub fn begin_scope_at(key: roctx_kernels::GeometryKey, range: u32) -> Option<u32> {
    if !active() || SCOPE.with(Cell::get).is_none() {
        let id = roctx_kernels::begin_invocation_at(key)?;
        set_scope(id, range);
        return Some(id);
    }
    let id = roctx_kernels::begin_invocation_at_scoped(key, roctx_sys::os::current_tid(), roctx_sys::clock::now())?;
    apply_scope(id, range);
    Some(id)
}

/// The part of [`set_scope`] after the op log: CUPTI's thread note, the SDK's external
/// correlation entry, the thread's scope.
fn apply_scope(invocation: u32, range: u32) -> bool {
    let Some((pushed, old_i, old_r)) = SCOPE.with(Cell::get) else { return false };
    if super::cupti::active() {
        super::cupti::note_thread();
    }
    let ok = if by_external() {
        if pushed && (old_i, old_r) == (invocation, range) {
            return true;
        }
        replace_entry(pushed, invocation, range)
    } else {
        true
    };
    let _ = SCOPE.with(|s| s.set((ok, if ok { invocation } else { 0 }, if ok { range } else { 0 })));
    ok
}

fn by_external() -> bool {
    sdk_active() && BY_EXTERNAL.load(Ordering::Relaxed)
}

/// The SDK side of [`set_scope`] on the external-correlation path: pops this thread's entry if
/// `pushed`, pushes the value for `(invocation, range)`.
fn replace_entry(pushed: bool, invocation: u32, range: u32) -> bool {
    use roctx_kernels::attribution::{encode_on, MAX_RANGE};
    let Some(k) = KERNEL_API.get() else { return false };
    let context = CONTEXT.load(Ordering::Acquire);
    let tid = roctx_sys::os::current_tid();
    let range = if range <= MAX_RANGE {
        range
    } else {
        static SAID: AtomicBool = AtomicBool::new(false);
        if !SAID.swap(true, Ordering::Relaxed) {
            log::warn(format_args!("a thread opened more than {MAX_RANGE} ROCTX ranges: its kernels from now on are attributed to ops only, not to ranges (the SDK's external correlation value has no room for more)"));
        }
        0
    };
    let value = encode_on(invocation, range, tid == DEFAULT_TID.load(Ordering::Acquire));
    if pushed {
        // SAFETY: our context, a Linux tid, a nullable out-pointer.
        let _ = unsafe { (k.pop_external_correlation_id)(context, tid, std::ptr::null_mut()) };
    }
    // SAFETY: our context and a Linux tid; the value is passed by value.
    unsafe { (k.push_external_correlation_id)(context, tid, value) == 0 }
}

/// What a record's external correlation value says of its launching `thread`: nothing, where
/// the thread had no stack yet and the SDK gave it the default thread's top
/// ([`roctx_kernels::attribution::resolve`]).
fn own_external(value: u64, thread: u64) -> u64 {
    roctx_kernels::attribution::resolve(value, thread == DEFAULT_TID.load(Ordering::Relaxed))
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

/// The calling thread's innermost ROCTX range changed to push number `seq` (0: none). The join
/// needs nothing here: ranges are recorded with their times anyway. Two SDK calls on the
/// external-correlation path; on CUPTI, the thread notes its ids once.
#[inline]
pub fn range_changed(seq: u32) {
    if by_external() {
        let (invocation, _) = current_scope();
        set_scope(invocation, seq);
    } else if super::cupti::active() {
        super::cupti::note_thread();
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
        let mut launches = Vec::new();
        let layout = if LAYOUT_V7.load(Ordering::Acquire) { Layout::V7 } else { Layout::V6 };
        let by_launch = !BY_EXTERNAL.load(Ordering::Acquire);
        for i in 0..n {
            // SAFETY: the SDK passes `n` header pointers, valid for the call.
            let header = unsafe { *headers.add(i) };
            // SAFETY: a header from the SDK (or null, which is rejected).
            match unsafe { rocprofiler::kernel_dispatch(header) } {
                Ok(d) => batch.push(RawDispatch {
                    start_ns: d.start_ns,
                    end_ns: d.end_ns,
                    kernel_id: d.kernel_id,
                    external: own_external(d.correlation_external, d.thread_id),
                    by_launch,
                    thread_id: d.thread_id,
                    agent_id: d.agent_id,
                    queue_id: d.queue_id,
                    dispatch_id: d.dispatch_id,
                    correlation_id: d.correlation_internal,
                    workgroup: [d.workgroup_size.x, d.workgroup_size.y, d.workgroup_size.z],
                    grid: [d.grid_size.x, d.grid_size.y, d.grid_size.z],
                    ..RawDispatch::default()
                }),
                // SAFETY: as above.
                Err(rocprofiler::DispatchError::OtherKind) => match unsafe { rocprofiler::memory_copy(header) } {
                    Ok(c) => batch.push(copy(&c, by_launch)),
                    // SAFETY: as above; a HIP API record of the layout the SDK's version has.
                    Err(rocprofiler::DispatchError::OtherKind) => match unsafe { rocprofiler::hip_api_call(header, layout) } {
                        Ok(c) => launches.push(Launch { correlation_id: c.correlation_internal, thread_id: c.thread_id, start_ns: c.start_ns, end_ns: c.end_ns }),
                        Err(rocprofiler::DispatchError::OtherKind) => {}
                        Err(rocprofiler::DispatchError::Malformed) => rejected += 1,
                    },
                    Err(rocprofiler::DispatchError::Malformed) => rejected += 1,
                },
                Err(rocprofiler::DispatchError::Malformed) => rejected += 1,
            }
        }
        // Launches first: a batch's dispatches join its own launch records at once.
        roctx_kernels::record_launches(launches);
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

/// A MEMORY_COPY record as the stage's activity. The SDK names no stream for a copy (it runs on
/// a DMA engine, not a HIP queue): copies go on stream 0 of the GPU end of the copy.
fn copy(c: &rocprofiler::MemoryCopy, by_launch: bool) -> RawDispatch {
    use rocprofiler::memory_copy as op;
    let (direction, gpu) = match c.operation {
        op::HOST_TO_DEVICE => (Direction::HostToDevice, c.dst_agent_id),
        op::DEVICE_TO_HOST => (Direction::DeviceToHost, c.src_agent_id),
        op::DEVICE_TO_DEVICE if c.src_agent_id != c.dst_agent_id => (Direction::PeerToPeer, c.src_agent_id),
        op::DEVICE_TO_DEVICE => (Direction::DeviceToDevice, c.src_agent_id),
        _ => (Direction::Other, c.dst_agent_id),
    };
    let memory = |device: bool| if device { MemoryKind::Device } else { MemoryKind::Unknown };
    let device_src = matches!(direction, Direction::DeviceToHost | Direction::DeviceToDevice | Direction::PeerToPeer);
    let device_dst = matches!(direction, Direction::HostToDevice | Direction::DeviceToDevice | Direction::PeerToPeer);
    RawDispatch {
        work: Work::Copy(MemCopy { bytes: c.bytes, direction, src: memory(device_src), dst: memory(device_dst), is_async: false }),
        start_ns: c.start_ns,
        end_ns: c.end_ns,
        external: own_external(c.correlation_external, c.thread_id),
        by_launch,
        thread_id: c.thread_id,
        agent_id: gpu,
        correlation_id: c.correlation_internal,
        ..RawDispatch::default()
    }
}

#[cfg(test)]
mod tests {
    use super::enqueues;

    /// The HIP runtime functions as releases name them (ROCm 6.2 to 7.x), each with whether it
    /// enqueues GPU work; the fake SDK models a subset of each version's set.
    #[test]
    fn the_calls_that_enqueue_gpu_work_are_traced_and_no_others() {
        let yes = [
            "hipLaunchKernel", "hipLaunchKernel_spt", "hipExtLaunchKernel", "hipModuleLaunchKernel", "hipExtModuleLaunchKernel",
            "hipHccModuleLaunchKernel", "hipLaunchCooperativeKernel", "hipLaunchCooperativeKernelMultiDevice",
            "hipExtLaunchMultiKernelMultiDevice", "hipLaunchKernelExC", "hipDrvLaunchKernelEx", "hipGraphLaunch", "hipGraphLaunch_spt",
            "hipMemcpy", "hipMemcpyAsync", "hipMemcpy2DAsync", "hipMemcpyPeerAsync", "hipMemcpyHtoDAsync", "hipMemcpyBatchAsync",
            "hipDrvMemcpy3DAsync", "hipMemset", "hipMemsetAsync", "hipMemsetD32Async", "hipMemPrefetchAsync",
            "hipStreamWriteValue32", "hipStreamWriteValue64", "hipStreamWaitValue32", "hipStreamWaitValue64", "hipStreamBatchMemOp",
        ];
        let no = [
            "hipGetDevice", "hipSetDevice", "hipMalloc", "hipFree", "hipStreamSynchronize", "hipDeviceSynchronize", "hipEventRecord",
            "hipGetLastError", "hipStreamCreate", "hipEventSynchronize", "hipMemGetInfo", "hipGraphInstantiate", "hipStreamGetPriority",
        ];
        for name in yes {
            assert!(enqueues(name), "{name} enqueues GPU work");
        }
        for name in no {
            assert!(!enqueues(name), "{name} enqueues nothing");
        }
    }
}
