//! Kernel tracing on NVIDIA GPUs through CUPTI's activity API (nvidia_sources.md C), into the
//! same kernel stage ([`roctx_kernels`]) as rocprofiler-sdk's dispatches, so kernel rows, the
//! roofline report and op scopes work unchanged.
//!
//! - **No subscriber**: only the activity API (a `cuptiSubscribe` would make XLA's own tracer
//!   fail, C.9). Kinds CONCURRENT_KERNEL, RUNTIME and DRIVER (cudart launches and driver
//!   launches, C.8).
//! - **One clock**: a timestamp callback returning `CLOCK_BOOTTIME` ns, registered before any
//!   kind is enabled, puts kernels and API calls on the clock of our ranges (if CUPTI refuses
//!   it, its `CLOCK_REALTIME` stamps are shifted by the offset measured at start-up).
//! - **Attribution** is a join ([`roctx_kernels::join`]), with no CUPTI call per range or op: a
//!   kernel record names its launching API record by `correlationId`; that record gives the
//!   thread and the call's interval. CUPTI's `threadId` is the low 32 bits of `pthread_self()`:
//!   each annotating thread notes both its ids once ([`note_thread`]), so the join speaks OS
//!   thread ids, as the ranges and op logs do.
//! - **Buffers**: 4 MiB, at most [`MAX_BUFFERS`] handed out at once (past that CUPTI drops and
//!   counts); records read with `cuptiActivityGetNextRecord` on CUPTI's thread; flushed (forced)
//!   at session stop, at a roofline reset or write, and at exit.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::ffi::CStr;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use roctx_config::log;
use roctx_kernels::{Launch, RawDispatch};
use roctx_sys::cupti::{self, Activity, Api};

/// Bytes of one activity buffer.
pub const BUFFER_BYTES: usize = 4 << 20;
/// Most buffers handed to CUPTI and not yet returned.
pub const MAX_BUFFERS: usize = 64;
/// Threads whose ids are kept for the join (a process creating more annotating threads than
/// this keeps CUPTI's ids for the newest).
const MAX_THREADS: usize = 1 << 16;

static API: OnceLock<Api> = OnceLock::new();
/// 0: not set up, 1: tracing, 2: unavailable.
static STATE: AtomicU8 = AtomicU8::new(0);
static OUTSTANDING: AtomicUsize = AtomicUsize::new(0);
static DECLINED: AtomicU64 = AtomicU64::new(0);
/// Subtracted from CUPTI's timestamps: 0 with our timestamp callback, `CLOCK_REALTIME` minus
/// `CLOCK_BOOTTIME` when CUPTI refused it and kept its default clock (C.7).
static CLOCK_SHIFT: AtomicI64 = AtomicI64::new(0);

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
            CLOCK_SHIFT.store(realtime_minus_boottime(), Ordering::Release);
            log::warn(format_args!(
                "CUPTI: cuptiActivityRegisterTimestampCallback returned {}; its CLOCK_REALTIME stamps are shifted to CLOCK_BOOTTIME",
                api.result_name(r)
            ));
        }
    } else {
        CLOCK_SHIFT.store(realtime_minus_boottime(), Ordering::Release);
    }
    // SAFETY: our callbacks have CUPTI's signatures and live forever.
    check("cuptiActivityRegisterCallbacks", unsafe { (api.register_callbacks)(buffer_requested, buffer_completed) })?;
    for (kind, name) in [
        (cupti::kind::CONCURRENT_KERNEL, "CONCURRENT_KERNEL"),
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

fn realtime_minus_boottime() -> i64 {
    let boot = roctx_sys::os::boottime_ns();
    // CAST: BOOTTIME ns since boot fits i64 for centuries.
    roctx_sys::os::realtime_ns() - boot as i64
}

/// A CUPTI timestamp on `CLOCK_BOOTTIME`.
fn boottime(t: u64) -> u64 {
    t.saturating_add_signed(-CLOCK_SHIFT.load(Ordering::Relaxed))
}

/// Delivers every record CUPTI holds now, the kernels still running included (as untimed).
pub fn flush() {
    let (Some(api), true) = (API.get(), active()) else { return };
    // SAFETY: CUPTI_ACTIVITY_FLAG_FLUSH_FORCED; synchronous, calls buffer_completed.
    let r = unsafe { (api.flush_all)(1) };
    if r != cupti::SUCCESS {
        log::warn(format_args!("cuptiActivityFlushAll returned {}; records still in CUPTI are not in this trace", api.result_name(r)));
    }
    // Everything delivered: a kernel still waiting for its API record has none.
    roctx_kernels::settle();
    let (kernels, launches) = (SEEN[0].load(Ordering::Relaxed), SEEN[1].load(Ordering::Relaxed));
    let unjoined = roctx_kernels::stats().unjoined;
    log::info(format_args!("CUPTI: {kernels} kernels and {launches} API calls so far; {unjoined} kernels since the last reset not matched to their launch"));
}

thread_local! {
    /// Whether this thread's two ids are in the join's map.
    static NOTED: Cell<bool> = const { Cell::new(false) };
}

/// Records the calling thread's two ids for the join, once per thread (the first range or op
/// scope it opens; retried at the next while the join's lock is busy). Never waits.
#[inline]
pub fn note_thread() {
    if !NOTED.try_with(Cell::get).unwrap_or(true) && note_ids() {
        let _ = NOTED.try_with(|n| n.set(true));
    }
}

/// CUPTI's `threadId` in API records is not the thread's OS id (on CUDA 13 it is the low 32
/// bits of `pthread_self()`, which a new thread can reuse after another exits): each noted id
/// keeps the time it was noted, and a record takes the newest noting not after its call.
fn note_ids() -> bool {
    // SAFETY: pthread_self has no preconditions.
    let pthread = unsafe { libc_pthread_self() } as u32; // CAST: CUPTI keeps the low 32 bits
    let tid = roctx_sys::os::current_tid();
    let now = roctx_sys::os::boottime_ns();
    // Never wait here (a launching thread, maybe a fork child whose parent's CUPTI thread held
    // the lock): a thread not noted keeps CUPTI's id, which the join falls back to.
    let Ok(mut guard) = JOINS.try_lock() else { return false };
    let joins = guard.get_or_insert_with(Joins::default);
    if joins.thread_ids.len() < MAX_THREADS || joins.thread_ids.contains_key(&pthread) {
        let notes = joins.thread_ids.entry(pthread).or_default();
        if notes.len() < 64 {
            notes.push((now, tid));
        }
    }
    true
}

extern "C" {
    #[link_name = "pthread_self"]
    fn libc_pthread_self() -> usize;
}

/// Kernel records and API records seen (for the log line at each flush).
static SEEN: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];

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

/// The listener's side of the join: which kernel names are registered, and CUPTI's thread ids.
#[derive(Default)]
struct Joins {
    named: HashSet<u64>,
    /// Low 32 bits of `pthread_self()` -> (when noted, OS thread id), oldest first.
    thread_ids: HashMap<u32, Vec<(u64, u64)>>,
}

impl Joins {
    /// The OS id of CUPTI's thread `id` for a call that started at `at`; CUPTI's own id when
    /// the thread never noted itself.
    fn os_thread(&self, id: u32, at: u64) -> u64 {
        match self.thread_ids.get(&id).map(Vec::as_slice) {
            Some([only]) => only.1,
            Some(notes @ [first, ..]) => notes.iter().rev().find(|&&(since, _)| since <= at).unwrap_or(first).1,
            _ => u64::from(id),
        }
    }
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
    let mut launches = Vec::new();
    let mut rejected = 0u64;
    let mut record: *mut u8 = std::ptr::null_mut();
    // SAFETY: CUPTI's iteration over its own buffer, which we hold.
    while unsafe { (api.get_next_record)(buffer, valid, &mut record) } == cupti::SUCCESS && !record.is_null() {
        // SAFETY: a record CUPTI just returned from the buffer we hold.
        match unsafe { cupti::activity(record) } {
            Activity::Api(a) => {
                let start_ns = boottime(a.start);
                launches.push(Launch { correlation_id: u64::from(a.correlation_id), thread_id: joins.os_thread(a.thread_id, start_ns), start_ns, end_ns: boottime(a.end) });
            }
            Activity::Kernel(k) => {
                let kernel_id = k.name as u64;
                if !k.name.is_null() && joins.named.insert(kernel_id) {
                    // SAFETY: CUPTI's kernel name, shared by the kernel's records, valid while
                    // the module is loaded (now).
                    let name = unsafe { CStr::from_ptr(k.name) }.to_bytes();
                    roctx_kernels::register_kernel_symbol(kernel_id, &name[..name.len().min(16 << 10)]);
                }
                let work_items = |g: i32, b: i32| u32::try_from(i64::from(g) * i64::from(b)).unwrap_or(u32::MAX);
                batch.push(RawDispatch {
                    start_ns: boottime(k.start),
                    end_ns: boottime(k.end),
                    kernel_id,
                    external: 0,
                    by_launch: true,
                    thread_id: 0,
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
    drop(guard);
    SEEN[0].fetch_add(batch.len() as u64, Ordering::Relaxed);
    SEEN[1].fetch_add(launches.len() as u64, Ordering::Relaxed);
    roctx_kernels::count_rejected(rejected);
    // Launches first: a buffer's kernels join its own API records at once, whatever the order.
    roctx_kernels::record_launches(launches);
    roctx_kernels::record_dispatch(batch);
}
