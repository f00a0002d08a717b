//! Kernel tracing on NVIDIA GPUs through CUPTI's activity API (nvidia_sources.md C), into the
//! same kernel stage ([`roctx_kernels`]) as rocprofiler-sdk's dispatches, so kernel rows, the
//! roofline report and op scopes work unchanged.
//!
//! - **No subscriber**: only the activity API (a `cuptiSubscribe` would make XLA's own tracer
//!   fail, C.9). Kinds CONCURRENT_KERNEL, EXTERNAL_CORRELATION, RUNTIME and DRIVER: external
//!   correlation records are emitted per API record, so both launch paths are needed (C.8).
//! - **One clock**: a timestamp callback returning `CLOCK_BOOTTIME` ns, registered before any
//!   kind is enabled, puts kernels on the clock of our ranges.
//! - **Attribution**: each launching thread keeps one CUSTOM2 entry of ours on CUPTI's external
//!   correlation stack (Kineto owns CUSTOM0/1), the value
//!   [`roctx_kernels::attribution::encode`]`(invocation, range)`, replaced at each range or op
//!   change, as with rocprofiler-sdk. A kernel record is joined to it, and to its launching
//!   thread, through the `correlationId` of its API record.
//! - **Buffers**: 4 MiB, at most [`MAX_BUFFERS`] handed out at once (past that CUPTI drops and
//!   counts); records read with `cuptiActivityGetNextRecord` on CUPTI's thread; flushed (forced)
//!   at session stop, at a roofline reset or write, and at exit.

use std::cell::Cell;
use std::collections::{BTreeMap, HashSet};
use std::ffi::CStr;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use roctx_config::log;
use roctx_kernels::RawDispatch;
use roctx_sys::cupti::{self, Activity, Api};

/// Bytes of one activity buffer.
pub const BUFFER_BYTES: usize = 4 << 20;
/// Most buffers handed to CUPTI and not yet returned.
pub const MAX_BUFFERS: usize = 64;
/// Correlation entries kept for records still to be joined (the newest ids).
const JOIN_WINDOW: u32 = 1 << 20;

static API: OnceLock<Api> = OnceLock::new();
/// 0: not set up, 1: tracing, 2: unavailable.
static STATE: AtomicU8 = AtomicU8::new(0);
static OUTSTANDING: AtomicUsize = AtomicUsize::new(0);
static DECLINED: AtomicU64 = AtomicU64::new(0);

/// Whether CUPTI kernel tracing runs.
pub fn active() -> bool {
    STATE.load(Ordering::Acquire) == 1
}

/// Starts CUPTI kernel tracing, once; a failure is logged with its reason. Call outside any
/// loader lock (not from the NVTX injection's init).
pub fn start() {
    if STATE.load(Ordering::Acquire) != 0 {
        return;
    }
    let config = roctx_config::get();
    let explicit = config.cupti_library.as_deref().map(std::path::Path::new);
    match Api::open(explicit).and_then(|api| set_up(API.get_or_init(|| api))) {
        Ok(()) => {
            STATE.store(1, Ordering::Release);
            if let Some(api) = API.get() {
                log::info(format_args!("CUPTI {} from {}: tracing kernels", api.version, api.location));
            }
        }
        Err(why) => {
            STATE.store(2, Ordering::Release);
            log::warn(format_args!("CUPTI: kernels will not be traced: {why}"));
        }
    }
}

fn set_up(api: &Api) -> Result<(), String> {
    let check = |what: &str, r: cupti::CuptiResult| if r == cupti::SUCCESS { Ok(()) } else { Err(format!("{what} returned {}", api.result_name(r))) };
    if let Some(register) = api.register_timestamp_callback {
        // SAFETY: a plain function; before any kind is enabled (C.7).
        let r = unsafe { register(timestamp) };
        if r != cupti::SUCCESS {
            log::warn(format_args!("CUPTI: cuptiActivityRegisterTimestampCallback returned {}; kernel times keep CUPTI's clock", api.result_name(r)));
        }
    }
    // SAFETY: our callbacks have CUPTI's signatures and live forever.
    check("cuptiActivityRegisterCallbacks", unsafe { (api.register_callbacks)(buffer_requested, buffer_completed) })?;
    for (kind, name) in [
        (cupti::kind::CONCURRENT_KERNEL, "CONCURRENT_KERNEL"),
        (cupti::kind::EXTERNAL_CORRELATION, "EXTERNAL_CORRELATION"),
        (cupti::kind::RUNTIME, "RUNTIME"),
        (cupti::kind::DRIVER, "DRIVER"),
    ] {
        // SAFETY: an activity kind of this CUPTI version.
        check(&format!("cuptiActivityEnable({name})"), unsafe { (api.enable)(kind) })?;
    }
    Ok(())
}

unsafe extern "C" fn timestamp() -> u64 {
    roctx_sys::os::boottime_ns()
}

/// Delivers every record CUPTI holds now, the kernels still running included (as untimed).
pub fn flush() {
    let (Some(api), true) = (API.get(), active()) else { return };
    // SAFETY: CUPTI_ACTIVITY_FLAG_FLUSH_FORCED; synchronous, calls buffer_completed.
    let r = unsafe { (api.flush_all)(1) };
    if r != cupti::SUCCESS {
        log::warn(format_args!("cuptiActivityFlushAll returned {}; records still in CUPTI are not in this trace", api.result_name(r)));
    }
    let (kernels, external, thread) = join_counts();
    log::info(format_args!("CUPTI: {kernels} kernels so far, {external} with a range or op of ours, {thread} with their launching thread"));
}

thread_local! {
    /// Whether this thread's two ids are in the join's map.
    static NOTED: Cell<bool> = const { Cell::new(false) };
}

/// CUPTI's side of `kernels::set_scope` (which keeps the thread's entry state): pops this
/// thread's CUSTOM2 entry if `pushed`, pushes `value`. False if CUPTI refused.
pub fn replace_entry(pushed: bool, value: u64) -> bool {
    let (Some(api), true) = (API.get(), active()) else { return false };
    if !NOTED.try_with(Cell::get).unwrap_or(true) && note_thread() {
        let _ = NOTED.try_with(|n| n.set(true));
    }
    if pushed {
        let mut last = 0u64;
        // SAFETY: our kind; a valid out-pointer.
        let _ = unsafe { (api.pop_external_correlation_id)(cupti::EXTERNAL_KIND_CUSTOM2, &mut last) };
    }
    // SAFETY: our kind; the value is passed by value.
    unsafe { (api.push_external_correlation_id)(cupti::EXTERNAL_KIND_CUSTOM2, value) == cupti::SUCCESS }
}

/// CUPTI's `threadId` in API records is not the thread's OS id (on CUDA 13 it is the low 32
/// bits of `pthread_self()`): each launching thread records both forms once (retried at its
/// next range while the lock is busy), so the join maps it back to the id its ranges carry.
fn note_thread() -> bool {
    // SAFETY: pthread_self has no preconditions.
    let pthread = unsafe { libc_pthread_self() } as u32; // CAST: CUPTI keeps the low 32 bits
    let tid = roctx_sys::os::current_tid();
    // Never wait here (a launching thread, maybe a fork child whose parent's CUPTI thread held
    // the lock): a thread not noted keeps CUPTI's id, which the join falls back to.
    let Ok(mut guard) = JOINS.try_lock() else { return false };
    let joins = guard.get_or_insert_with(Joins::default);
    if joins.thread_ids.len() < 1 << 16 {
        joins.thread_ids.insert(pthread, tid);
    }
    true
}

extern "C" {
    #[link_name = "pthread_self"]
    fn libc_pthread_self() -> usize;
}

/// Kernels seen, with an external value of ours, with a known launching thread (for the log
/// line at each flush: how well the join works on this CUDA version).
static SEEN: [AtomicU64; 3] = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];

/// `(kernels, with our external value, with their launching thread)` so far.
fn join_counts() -> (u64, u64, u64) {
    (SEEN[0].load(Ordering::Relaxed), SEEN[1].load(Ordering::Relaxed), SEEN[2].load(Ordering::Relaxed))
}

// ---- buffers ----

unsafe extern "C" fn buffer_requested(buffer: *mut *mut u8, size: *mut usize, max_records: *mut usize) {
    roctx_sys::guard((), || {
        if buffer.is_null() || size.is_null() {
            return;
        }
        let granted = OUTSTANDING.fetch_add(1, Ordering::AcqRel) < MAX_BUFFERS;
        let memory = if granted {
            // 8-byte aligned, as CUPTI requires.
            Box::into_raw(vec![0u64; BUFFER_BYTES / 8].into_boxed_slice()).cast::<u8>()
        } else {
            OUTSTANDING.fetch_sub(1, Ordering::AcqRel);
            DECLINED.fetch_add(1, Ordering::Relaxed);
            std::ptr::null_mut()
        };
        // SAFETY: CUPTI's out-pointers.
        unsafe {
            *buffer = memory;
            *size = if memory.is_null() { 0 } else { BUFFER_BYTES };
            if !max_records.is_null() {
                *max_records = 0;
            }
        }
    })
}

/// What joins a kernel record to its launch: per API correlation id, the launching thread and
/// our external value.
#[derive(Default)]
struct Joins {
    threads: BTreeMap<u32, u32>,
    externals: BTreeMap<u32, u64>,
    named: HashSet<u64>,
    /// Low 32 bits of `pthread_self()` -> OS thread id, for threads that pushed an entry.
    thread_ids: std::collections::HashMap<u32, u64>,
}

static JOINS: Mutex<Option<Joins>> = Mutex::new(None);

unsafe extern "C" fn buffer_completed(_context: *mut std::ffi::c_void, _stream: u32, buffer: *mut u8, _size: usize, valid: usize) {
    if buffer.is_null() {
        return;
    }
    roctx_sys::guard((), || {
        if let Some(api) = API.get() {
            // SAFETY: a buffer CUPTI filled with `valid` bytes of records.
            unsafe { read_buffer(api, buffer, valid) };
            let mut dropped = 0usize;
            // SAFETY: null context and stream 0: all of them (deprecated arguments).
            if unsafe { (api.dropped_records)(std::ptr::null_mut(), 0, &mut dropped) } == cupti::SUCCESS {
                roctx_kernels::count_sdk_dropped(dropped as u64 + DECLINED.swap(0, Ordering::Relaxed));
            }
        }
    });
    // SAFETY: the buffer buffer_requested allocated, returned to us.
    drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(buffer.cast::<u64>(), BUFFER_BYTES / 8)) });
    OUTSTANDING.fetch_sub(1, Ordering::AcqRel);
}

/// # Safety
/// `buffer` holds `valid` bytes of CUPTI activity records.
unsafe fn read_buffer(api: &Api, buffer: *mut u8, valid: usize) {
    let mut guard = JOINS.lock().unwrap_or_else(PoisonError::into_inner);
    let joins = guard.get_or_insert_with(Joins::default);
    let mut batch = Vec::new();
    let mut rejected = 0u64;
    let mut newest = 0u32;
    // Two passes: a buffer's launch records are joinable whatever the order of its records.
    let records = || {
        let mut record: *mut u8 = std::ptr::null_mut();
        std::iter::from_fn(move || {
            // SAFETY: CUPTI's iteration over its own buffer, which we hold.
            let more = unsafe { (api.get_next_record)(buffer, valid, &mut record) } == cupti::SUCCESS && !record.is_null();
            // SAFETY: a record CUPTI just returned from the buffer we hold.
            more.then(|| unsafe { cupti::activity(record) })
        })
    };
    for activity in records() {
        match activity {
            Activity::Api(a) => {
                joins.threads.insert(a.correlation_id, a.thread_id);
                newest = newest.max(a.correlation_id);
            }
            Activity::External(e) if e.external_kind == cupti::EXTERNAL_KIND_CUSTOM2 => {
                joins.externals.insert(e.correlation_id, e.external_id);
            }
            _ => {}
        }
    }
    for activity in records() {
        match activity {
            Activity::Kernel(k) => {
                let kernel_id = k.name as u64;
                if !k.name.is_null() && joins.named.insert(kernel_id) {
                    // SAFETY: CUPTI's kernel name, shared by the kernel's records, valid while
                    // the module is loaded (now).
                    let name = unsafe { CStr::from_ptr(k.name) }.to_bytes();
                    roctx_kernels::register_kernel_symbol(kernel_id, &name[..name.len().min(16 << 10)]);
                }
                let work_items = |g: i32, b: i32| u32::try_from(i64::from(g) * i64::from(b)).unwrap_or(u32::MAX);
                let external = joins.externals.remove(&k.correlation_id).unwrap_or(0);
                let thread = joins.threads.get(&k.correlation_id).copied();
                let thread_id = thread.map_or(0, |t| joins.thread_ids.get(&t).copied().unwrap_or(u64::from(t)));
                SEEN[0].fetch_add(1, Ordering::Relaxed);
                SEEN[1].fetch_add(u64::from(external != 0), Ordering::Relaxed);
                SEEN[2].fetch_add(u64::from(thread.is_some()), Ordering::Relaxed);
                batch.push(RawDispatch {
                    start_ns: k.start,
                    end_ns: k.end,
                    kernel_id,
                    external,
                    thread_id,
                    agent_id: u64::from(k.device_id),
                    queue_id: u64::from(k.stream_id),
                    dispatch_id: u64::from(k.correlation_id),
                    correlation_id: u64::from(k.correlation_id),
                    workgroup: k.block.map(|b| u32::try_from(b).unwrap_or(0)),
                    grid: [work_items(k.grid[0], k.block[0]), work_items(k.grid[1], k.block[1]), work_items(k.grid[2], k.block[2])],
                });
            }
            Activity::UntimedKernel => rejected += 1,
            _ => {}
        }
    }
    // Launches older than the window will not be joined any more: keep memory bounded.
    let floor = newest.saturating_sub(JOIN_WINDOW);
    joins.threads = joins.threads.split_off(&floor);
    joins.externals = joins.externals.split_off(&floor);
    drop(guard);
    roctx_kernels::count_rejected(rejected);
    roctx_kernels::record_dispatch(batch);
}
