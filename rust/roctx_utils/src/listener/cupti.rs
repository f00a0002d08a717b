//! Kernel tracing on NVIDIA GPUs through CUPTI's activity API (nvidia_sources.md C), into the
//! same kernel stage ([`roctx_kernels`]) as rocprofiler-sdk's dispatches, so kernel rows, the
//! roofline report and op scopes work unchanged.
//!
//! - **No subscriber**: only the activity API (a `cuptiSubscribe` would make XLA's own tracer
//!   fail, C.9). Kinds CONCURRENT_KERNEL, MEMCPY, MEMCPY2, MEMSET (the GPU's work), RUNTIME and DRIVER
//!   (cudart and driver calls: the launches, C.8).
//! - **Graphs**: a kernel, copy or set run by a CUDA graph (an XLA command buffer) carries the
//!   `cudaGraphLaunch`/`cuGraphLaunch` call's correlation id, so it joins that launch like any
//!   kernel; its `graphId`/`graphNodeId` are kept (docs/kernels.md says what CUPTI does not give).
//! - **Sharing CUPTI** with another profiler (XLA's tracer under `jax.profiler`, Kineto): its
//!   `cuptiActivityRegisterCallbacks` takes the delivery of every buffer, ours included (the
//!   buffer CUPTI is filling goes to it, measured on CUDA 13.0), and its `cuptiFinalize` drops
//!   our callbacks, kinds and clock, and starts correlation ids over. CUPTI says nothing to us
//!   when it happens. What is at stake is the buffer CUPTI is filling: [`BUFFER_BYTES`] is small
//!   (64 KiB kept 565 and 897 of the 1,530 activities of 5 JAX steps before a jax.profiler.trace,
//!   4 MiB none, at the same step cost: docs/kernels.md), and a watch thread that asks for
//!   completed records every [`FLUSH_PERIOD`] and checks every [`WATCH_PERIOD`] that CUPTI's
//!   clock is still ours: when it is not, another client has
//!   finalized CUPTI, and the thread sets it up again and says once, at warning level, what
//!   happened and how many API calls it did not see ([`roctx_kernels::KernelStats::not_seen`],
//!   when the correlation ids tell).
//! - **One clock**: a timestamp callback returning `CLOCK_BOOTTIME` ns, registered before any
//!   kind is enabled, puts kernels and API calls on the clock of our ranges (if CUPTI refuses
//!   it, its `CLOCK_REALTIME` stamps are shifted by the offset measured at start-up).
//! - **Attribution** is a join ([`roctx_kernels::join`]), with no CUPTI call per range or op: a
//!   kernel record names its launching API record by `correlationId`; that record gives the
//!   thread and the call's interval. CUPTI's `threadId` is the low 32 bits of `pthread_self()`:
//!   each annotating thread notes both its ids once ([`note_thread`]), so the join speaks OS
//!   thread ids, as the ranges and op logs do.
//! - **Buffers**: 64 KiB, at most [`MAX_BUFFERS`] handed out at once (past that CUPTI drops and
//!   counts); records read with `cuptiActivityGetNextRecord` on CUPTI's thread; flushed (forced)
//!   at session stop, at a roofline reset or write, and at exit.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use roctx_config::log;
use roctx_kernels::{Direction, GraphNode, Launch, MemCopy, MemSet, MemoryKind, RawDispatch, Work};
use roctx_sys::cupti::{self, Activity, Api};

/// Bytes of one activity buffer.
pub const BUFFER_BYTES: usize = 64 << 10;
/// Most buffers handed to CUPTI and not yet returned.
pub const MAX_BUFFERS: usize = 4096;
/// How often the watch thread checks that CUPTI is still set up for us (one `cuptiGetTimestamp`).
pub const WATCH_PERIOD: Duration = Duration::from_millis(5);
/// How often the watch thread asks CUPTI for the records it holds complete.
pub const FLUSH_PERIOD: Duration = Duration::from_millis(100);
/// CUPTI's clock farther than this from `CLOCK_BOOTTIME` is no longer our timestamp callback.
const CLOCK_LOST_NS: u64 = 1_000_000_000;
/// Threads whose ids are kept for the join (a process creating more annotating threads than
/// this keeps CUPTI's ids for the newest).
const MAX_THREADS: usize = 1 << 16;

static API: OnceLock<Api> = OnceLock::new();
/// 0: not set up, 1: tracing, 2: unavailable.
static STATE: AtomicU8 = AtomicU8::new(0);
static OUTSTANDING: AtomicUsize = AtomicUsize::new(0);
static DECLINED: AtomicU64 = AtomicU64::new(0);

/// The buffers we handed CUPTI, by address (0: a free slot). CUPTI delivers to whichever
/// completion callback is registered *now*: after a hand-over it can give us another client's
/// buffer (another size, another allocator; freeing it as ours corrupted the heap under Kineto,
/// measured). Only a buffer found here is read and freed; another is left to its owner. A slot
/// array, not a lock: the callbacks run on CUPTI's threads, also across `fork()`.
static OURS: [AtomicUsize; MAX_BUFFERS] = [const { AtomicUsize::new(0) }; MAX_BUFFERS];
/// Buffers of another client that CUPTI handed to our callback (left alone).
static FOREIGN: AtomicU64 = AtomicU64::new(0);

/// Counts the flushes begun; each slot of [`OURS`] notes the count when it was claimed. A
/// buffer still out after a flush that was claimed before the flush began never came back (a
/// buffer requested since, by threads that go on launching, is not one of those). No
/// allocation: the watch thread flushes, and a fork() while it allocated could leave a child's
/// allocator locked (ASan's is not fork-safe).
static FLUSH_EPOCH: AtomicU64 = AtomicU64::new(0);
static CLAIMED_AT: [AtomicU64; MAX_BUFFERS] = [const { AtomicU64::new(0) }; MAX_BUFFERS];

fn claim_slot(address: usize) -> bool {
    match OURS.iter().position(|slot| slot.compare_exchange(0, address, Ordering::AcqRel, Ordering::Relaxed).is_ok()) {
        Some(i) => {
            CLAIMED_AT[i].store(FLUSH_EPOCH.load(Ordering::Acquire), Ordering::Release);
            true
        }
        None => false,
    }
}

fn release_slot(address: usize) -> bool {
    OURS.iter().any(|slot| slot.compare_exchange(address, 0, Ordering::AcqRel, Ordering::Relaxed).is_ok())
}

/// Our buffers out now that were claimed before flush `epoch` began.
fn out_since_before(epoch: u64) -> usize {
    OURS.iter().zip(&CLAIMED_AT).filter(|(slot, at)| slot.load(Ordering::Acquire) != 0 && at.load(Ordering::Acquire) < epoch).count()
}

/// Buffers of ours are known to be kept by another client (since the last resume).
static KEPT_KNOWN: AtomicBool = AtomicBool::new(false);

/// How long a flush waits for a buffer of ours that another thread is delivering (a flush
/// there, or CUPTI's own worker), so that what it delivers is in what the flush returns, before
/// it takes the buffer for kept by another client.
const DELIVERY_GRACE: std::time::Duration = std::time::Duration::from_millis(500);
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
    let set_up_first = |api: &'static Api| {
        register_clock(api);
        set_up(api)
    };
    match Api::open(explicit).and_then(|api| set_up_first(API.get_or_init(|| api))) {
        Ok(()) => {
            roctx_kernels::start_clock(); // before the first scope change can be stamped
            STATE.store(1, Ordering::Release);
            if let Some(api) = API.get() {
                log::info(format_args!("CUPTI {} from {}: tracing kernels, memory copies and sets", api.version, api.location));
            }
            start_watch();
            // Set up after capture windows were armed and while none is open: off until one
            // opens (`window_resume`).
            if roctx_collector::window::none_open() {
                window_pause();
            }
        }
        Err(why) => {
            STATE.store(2, Ordering::Release);
            log::warn(format_args!("CUPTI: kernels will not be traced: {why}"));
        }
    }
}

/// At start-up, before any kind is enabled: our clock in CUPTI, else the shift of CUPTI's own.
fn register_clock(api: &Api) {
    if let Some(register) = api.register_timestamp_callback {
        // SAFETY: a plain function; before any kind is enabled (C.7).
        let r = unsafe { register(timestamp) };
        if r != cupti::SUCCESS {
            // Another client's clock, or CUPTI's own (CLOCK_REALTIME): shifted by what it reads
            // now against CLOCK_BOOTTIME, whichever it is.
            CLOCK_SHIFT.store(measured_shift(api).unwrap_or_else(realtime_minus_boottime), Ordering::Release);
            log::warn(format_args!(
                "CUPTI: cuptiActivityRegisterTimestampCallback returned {}; CUPTI's own stamps are shifted to CLOCK_BOOTTIME",
                api.result_name(r)
            ));
        }
    } else {
        CLOCK_SHIFT.store(realtime_minus_boottime(), Ordering::Release);
    }
}

/// Our callbacks and kinds. The clock is set before: by [`register_clock`] at start-up, and by
/// [`take_back_if_idle`] before a resume.
fn set_up(api: &Api) -> Result<(), String> {
    let check = |what: &str, r: cupti::CuptiResult| if r == cupti::SUCCESS { Ok(()) } else { Err(format!("{what} returned {}", api.result_name(r))) };
    // SAFETY: our callbacks have CUPTI's signatures and live forever.
    check("cuptiActivityRegisterCallbacks", unsafe { (api.register_callbacks)(buffer_requested, buffer_completed) })?;
    for (kind, name) in our_named_kinds() {
        // SAFETY: an activity kind of this CUPTI version.
        check(&format!("cuptiActivityEnable({name})"), unsafe { (api.enable)(kind) })?;
    }
    if roctx_config::get().cupti_api == roctx_config::CuptiApi::Launches {
        filter_api_records(api);
    }
    Ok(())
}

/// The (domain, callback id) of the API functions whose records we turned off, to turn them
/// on again before another profiler traces (CUPTI's per-function switch is process-wide).
static FILTERED: Mutex<Vec<(u32, u32)>> = Mutex::new(Vec::new());

/// Highest callback id asked about; CUDA 13.0 has under 1,000 per domain.
const MAX_CBID: u32 = 4096;

/// Keeps RUNTIME and DRIVER records for the functions that enqueue GPU work only
/// ([`cupti::enqueues_gpu_work`]): the join needs no other, and a record per call of every
/// runtime and driver function (ggml-cuda makes a dozen per op) was most of what tracing cost
/// a launch-bound op. Where CUPTI cannot (before 12.5), every call is recorded, as before.
fn filter_api_records(api: &Api) {
    let switches = [(cupti::DOMAIN_RUNTIME_API, api.enable_runtime_api, "runtime"), (cupti::DOMAIN_DRIVER_API, api.enable_driver_api, "driver")];
    let mut filtered = FILTERED.lock().unwrap_or_else(PoisonError::into_inner);
    let mut kept = Vec::new();
    for (domain, enable, what) in switches {
        let (Some(enable), Some(_)) = (enable, api.get_callback_name) else {
            log::info(format_args!("CUPTI {}: no per-function switch for {what} API records (CUPTI 12.5+ has one): every {what} call is recorded", api.version));
            continue;
        };
        let (mut known, mut launches, mut misses) = (0u32, 0u32, 0u32);
        for cbid in 1..MAX_CBID {
            let Some(name) = api.callback_name(domain, cbid) else {
                misses += 1;
                if misses > 64 && known > 0 {
                    break;
                }
                continue;
            };
            misses = 0;
            known += 1;
            if cupti::enqueues_gpu_work(&name) {
                launches += 1;
                continue;
            }
            // SAFETY: a callback id of this domain, just named by CUPTI.
            if unsafe { enable(cbid, 0) } == cupti::SUCCESS {
                filtered.push((domain, cbid));
            }
        }
        kept.push(format!("{launches} of {known} {what} functions"));
    }
    if !kept.is_empty() {
        log::info(format_args!("CUPTI: API records for the functions that enqueue GPU work only ({}); ROCTX_UTILS_CUPTI_API=all records every call", kept.join(", ")));
    }
}

/// Turns every API record we turned off back on, before another profiler traces.
fn unfilter_api_records(api: &Api) {
    let mut filtered = FILTERED.lock().unwrap_or_else(PoisonError::into_inner);
    for (domain, cbid) in filtered.drain(..) {
        let enable = if domain == cupti::DOMAIN_RUNTIME_API { api.enable_runtime_api } else { api.enable_driver_api };
        if let Some(enable) = enable {
            // SAFETY: a callback id CUPTI named when we turned it off.
            unsafe { enable(cbid, 1) };
        }
    }
}

/// The activity kinds we enable, with their names.
fn our_named_kinds() -> impl Iterator<Item = (i32, &'static str)> {
    let copies: &[(i32, &str)] = if roctx_config::get().copies {
        &[(cupti::kind::MEMCPY, "MEMCPY"), (cupti::kind::MEMCPY2, "MEMCPY2"), (cupti::kind::MEMSET, "MEMSET")]
    } else {
        &[]
    };
    let kinds: &[(i32, &str)] = &[(cupti::kind::CONCURRENT_KERNEL, "CONCURRENT_KERNEL"), (cupti::kind::RUNTIME, "RUNTIME"), (cupti::kind::DRIVER, "DRIVER")];
    kinds.iter().chain(copies).copied()
}

fn our_kinds() -> impl Iterator<Item = i32> {
    our_named_kinds().map(|(kind, _)| kind)
}

unsafe extern "C" fn timestamp() -> u64 {
    roctx_sys::os::boottime_ns()
}

/// CUPTI's clock minus CLOCK_BOOTTIME, read now (None without `cuptiGetTimestamp`).
fn measured_shift(api: &Api) -> Option<i64> {
    let get = api.get_timestamp?;
    let mut t = 0u64;
    let boot = roctx_sys::os::boottime_ns();
    // SAFETY: a valid out-pointer.
    if unsafe { get(&mut t) } != cupti::SUCCESS {
        return None;
    }
    // CAST: both clocks count ns since 1970 or since boot; their difference fits i64.
    Some(t as i64 - boot as i64)
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
    let epoch = FLUSH_EPOCH.fetch_add(1, Ordering::AcqRel) + 1;
    // SAFETY: CUPTI_ACTIVITY_FLAG_FLUSH_FORCED; synchronous, calls buffer_completed.
    let r = unsafe { (api.flush_all)(1) };
    if r != cupti::SUCCESS {
        log::warn(format_args!("cuptiActivityFlushAll returned {}; records still in CUPTI are not in this trace", api.result_name(r)));
    }
    let (kernels, launches) = (SEEN[0].load(Ordering::Relaxed), SEEN[1].load(Ordering::Relaxed));
    let stats = roctx_kernels::stats();
    log::info(format_args!(
        "CUPTI: {kernels} kernels, copies and sets and {launches} API calls so far; since the last reset {} not matched to their launch, {} API calls not seen (another profiler held CUPTI)",
        stats.unjoined, stats.not_seen
    ));
    // A forced flush returns every buffer CUPTI holds to whoever it delivers to: one of ours out
    // before it and still out after means that is another client now. Not one requested since
    // (other threads go on launching), nor one another thread is delivering at this moment
    // (issue 40: 26-33 of 100 exits said so falsely): those are waited for, a little.
    // Once buffers are known kept, later flushes (snapshots) do not wait again for them, until
    // a resume forgets them.
    static SAID: AtomicBool = AtomicBool::new(false);
    let grace = if KEPT_KNOWN.load(Ordering::Acquire) { std::time::Duration::ZERO } else { DELIVERY_GRACE };
    let deadline = std::time::Instant::now() + grace;
    let mut kept = out_since_before(epoch);
    while kept > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
        kept = out_since_before(epoch);
    }
    if kept > 0 {
        KEPT_KNOWN.store(true, Ordering::Release);
    }
    if kept > 0 && !SAID.swap(true, Ordering::AcqRel) {
        log::warn(format_args!(
            "CUPTI: another profiler holds CUPTI's activity API and has not released it (no cuptiFinalize yet): {kept} of our buffers went to it, and what the GPU did since it took over is not in this trace"
        ));
    }
}

// ---- sharing CUPTI with another profiler ----

/// The highest API correlation id delivered to us.
static LAST_CORRELATION: AtomicU32 = AtomicU32::new(0);
/// Set up again after another client's finalize; the next API records say how many we missed.
static RESUMED_AFTER: AtomicU64 = AtomicU64::new(NOT_RESUMED);
const NOT_RESUMED: u64 = u64::MAX;
/// When the last resume happened, and when the last record before it was delivered to us.
static RESUMED_AT: AtomicU64 = AtomicU64::new(0);
static LAST_DELIVERY: AtomicU64 = AtomicU64::new(0);

fn start_watch() {
    if CLOCK_SHIFT.load(Ordering::Acquire) != 0 {
        // Without our clock in CUPTI there is no sign of another client's finalize.
        log::info(format_args!("CUPTI: our timestamp callback was refused: a profiler that takes CUPTI over will not be followed by a resume"));
    }
    let spawned = roctx_sys::os::with_signals_blocked(|| std::thread::Builder::new().name("roctx-cupti".into()).spawn(|| {
        let mut last_flush = std::time::Instant::now();
        while !WATCH_STOP.load(Ordering::Acquire) {
            std::thread::sleep(WATCH_PERIOD);
            if WATCH_STOP.load(Ordering::Acquire) {
                break;
            }
            let flush = last_flush.elapsed() >= FLUSH_PERIOD;
            if flush {
                last_flush = std::time::Instant::now();
            }
            roctx_sys::guard((), || watch_once(flush));
        }
    }));
    match spawned {
        Ok(handle) => *WATCH_THREAD.lock().unwrap_or_else(PoisonError::into_inner) = Some((std::process::id(), handle)),
        Err(e) => {
            log::warn(format_args!("CUPTI: no watch thread ({e}): records are delivered only when full or at a flush, and a profiler that takes CUPTI over is not followed"));
            return;
        }
    }
    // Registered after libcupti was loaded, so it runs before libcupti's destructors.
    roctx_sys::os::at_exit(stop_watch);
}

/// The watch thread stops at exit.
static WATCH_STOP: AtomicBool = AtomicBool::new(false);
/// The watch thread, with the pid of the process that started it (a fork child has none).
static WATCH_THREAD: Mutex<Option<(u32, std::thread::JoinHandle<()>)>> = Mutex::new(None);

/// At exit: stops the watch thread and waits for it (at most a tick), so that no CUPTI call is
/// in flight when libcupti's own destructors run. Joined, so that sanitizers see the order too.
extern "C" fn stop_watch() {
    roctx_sys::guard((), || {
        WATCH_STOP.store(true, Ordering::Release);
        let Ok(mut slot) = WATCH_THREAD.try_lock() else { return };
        if let Some((pid, handle)) = slot.take() {
            // A fork child inherits the slot but not the thread.
            if pid == std::process::id() {
                let _ = handle.join();
            }
        }
    });
}

/// One tick: hand completed records over (to whoever CUPTI delivers to now), and set CUPTI up
/// again if another client finalized it.
fn watch_once(flush: bool) {
    let Some(api) = API.get() else { return };
    if !active() {
        return;
    }
    if HELD.load(Ordering::Acquire) {
        // The host handed CUPTI to another profiler and has not said it is done.
    } else if CLOCK_SHIFT.load(Ordering::Acquire) == 0 && !clock_is_ours(api) {
        // CUPTI's clock is not ours any more: another client finalized CUPTI (its clock falls
        // back to CLOCK_REALTIME) or set a clock of its own to trace with (Kineto does, without
        // a finalize: correlation ids go on, measured). Refused: the other profiler is at
        // work; ask again next tick, never taking CUPTI from under it. Its API records must
        // not miss the functions we had turned off.
        unfilter_api_records(api);
        take_back_if_idle(api, Release::Released);
        return;
    }
    if flush {
        // SAFETY: flag 0: only records already complete; synchronous, calls the completion
        // callback.
        unsafe { (api.flush_all)(0) };
    }
    note_device_attributes();
}

/// CUDA device ordinals (below 64) that kernels, copies or sets ran on.
static SEEN_DEVICES: AtomicU64 = AtomicU64::new(0);
/// Those the driver has answered for.
static ASKED_DEVICES: AtomicU64 = AtomicU64::new(0);
/// What the CUDA driver said of each device, asked on the watch thread while the process
/// runs: at exit, when the log directory is written, the driver is already shut down
/// (`CUDA_ERROR_DEINITIALIZED` on the H200).
static DEVICE_ATTRIBUTES: Mutex<BTreeMap<u32, roctx_sys::cuda::DeviceAttributes>> = Mutex::new(BTreeMap::new());

/// Asks the driver about the devices seen since the last tick (never in a CUPTI callback).
fn note_device_attributes() {
    let new = SEEN_DEVICES.load(Ordering::Relaxed) & !ASKED_DEVICES.load(Ordering::Relaxed);
    if new == 0 {
        return;
    }
    let library = roctx_config::get().cuda_library.as_deref().map(std::path::Path::new);
    for ordinal in (0..64u32).filter(|o| new & (1 << o) != 0) {
        if let Ok(a) = roctx_sys::cuda::device_attributes(ordinal, library) {
            DEVICE_ATTRIBUTES.lock().unwrap_or_else(PoisonError::into_inner).insert(ordinal, a);
        }
        // Asked once, answered or not: a driver that is not loaded will not be.
        ASKED_DEVICES.fetch_or(1 << ordinal, Ordering::Relaxed);
    }
}

/// What the CUDA driver said of the devices kernels ran on, by ordinal (asked on the watch
/// thread; empty without CUPTI or before its first tick after the first kernels). Never waits:
/// a fork child may hold the lock as its parent's watch thread left it.
pub fn device_attributes() -> BTreeMap<u32, roctx_sys::cuda::DeviceAttributes> {
    match DEVICE_ATTRIBUTES.try_lock() {
        Ok(map) => map.clone(),
        Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner().clone(),
        Err(std::sync::TryLockError::WouldBlock) => BTreeMap::new(),
    }
}

/// Whether CUPTI still stamps with our callback (another client's `cuptiFinalize` drops it,
/// and CUPTI falls back to `CLOCK_REALTIME`, 1.7e18 ns away from `CLOCK_BOOTTIME`).
fn clock_is_ours(api: &Api) -> bool {
    let Some(get) = api.get_timestamp else { return true };
    let mut t = 0u64;
    // SAFETY: a valid out-pointer.
    if unsafe { get(&mut t) } != cupti::SUCCESS {
        return true;
    }
    t.abs_diff(roctx_sys::os::boottime_ns()) < CLOCK_LOST_NS
}

/// How another client gave CUPTI's activity API back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Release {
    /// Seen by the watch: CUPTI's clock was not ours, and CUPTI took ours again (no activity
    /// kind enabled: the other client finalized CUPTI, as XLA's tracer does, or stopped with
    /// every kind off).
    Released,
    /// Its host told us it had stopped ([`reclaim`]), with kinds still enabled or our clock
    /// still CUPTI's (a client that never showed itself to the watch).
    Stopped,
}

impl Release {
    /// For the resume's info line.
    fn how(self) -> &'static str {
        match self {
            Release::Released => "finalized, or every activity kind off",
            Release::Stopped => "stopped, on request",
        }
    }

    /// For the warning the first records after the resume give.
    fn words(self) -> &'static str {
        match self {
            Release::Released => "when it released CUPTI (cuptiFinalize, or every activity kind off)",
            Release::Stopped => "when its host said it had stopped (roctx_utils_kernels_reclaim)",
        }
    }

    /// The last resume's.
    fn last() -> Release {
        if LAST_RELEASE.load(Ordering::Acquire) == Release::Stopped as u8 { Release::Stopped } else { Release::Released }
    }
}

static LAST_RELEASE: AtomicU8 = AtomicU8::new(Release::Released as u8);

/// Held while CUPTI is being set up again: the watch and a host's [`reclaim`] may both try.
static RESUMING: AtomicBool = AtomicBool::new(false);

/// Another client gave CUPTI back: set it up for us again. Kernels still waiting for a launch
/// are settled and the launch window emptied (after a finalize old ids come back for new
/// launches).
fn resume(api: &Api, how: Release) -> bool {
    if RESUMING.swap(true, Ordering::AcqRel) {
        return false;
    }
    // Whatever CUPTI still holds goes to whoever is registered now: ours, if the hand-over
    // never happened, come back to us here and are read; the rest went to the other client.
    // SAFETY: CUPTI_ACTIVITY_FLAG_FLUSH_FORCED; synchronous.
    unsafe { (api.flush_all)(1) };
    roctx_kernels::source_restarted();
    // Our buffers that the other client received were freed by it; none will come back.
    OUTSTANDING.store(0, Ordering::Release);
    for slot in &OURS {
        slot.store(0, Ordering::Release);
    }
    KEPT_KNOWN.store(false, Ordering::Release);
    // The last id before the first of back-to-back resumes (no record in between: the highest
    // id seen since is 0, and would make every id look missed).
    let last = u64::from(LAST_CORRELATION.load(Ordering::Acquire));
    let _ = RESUMED_AFTER.compare_exchange(NOT_RESUMED, last, Ordering::AcqRel, Ordering::Acquire);
    // Measured on CUDA 13.0: ids start over at 1 after a finalize, and go on without one. The
    // highest id is counted again from the first records after the resume, which after_resume
    // compares with the last one before it.
    LAST_CORRELATION.store(0, Ordering::Release);
    LAST_RELEASE.store(how as u8, Ordering::Release);
    RESUMED_AT.store(roctx_sys::os::boottime_ns(), Ordering::Release);
    let ok = match set_up(api) {
        Ok(()) => {
            log::info(format_args!(
                "CUPTI: another profiler released CUPTI ({}); tracing again from {} ns (CLOCK_BOOTTIME)",
                how.how(),
                RESUMED_AT.load(Ordering::Acquire)
            ));
            true
        }
        Err(why) => {
            STATE.store(2, Ordering::Release);
            log::warn(format_args!("CUPTI: another profiler released CUPTI, but tracing could not start again: {why}"));
            false
        }
    };
    RESUMING.store(false, Ordering::Release);
    ok
}

/// Set between capture windows: our kinds are off (our clock stays registered, so the watch
/// sees nothing to take back).
static WINDOW_PAUSED: AtomicBool = AtomicBool::new(false);

/// Capture windows: a window closed (or none is open yet). What CUPTI holds of ours is
/// delivered, then our activity kinds are turned off; the per-function API-record switches stay
/// as they are (turning them on and off again walks every callback id). Whether CUPTI was ours
/// and tracing.
pub fn window_pause() -> bool {
    let (Some(api), true) = (API.get(), active()) else { return false };
    if HELD.load(Ordering::Acquire) || WINDOW_PAUSED.swap(true, Ordering::AcqRel) {
        return false;
    }
    flush();
    for kind in our_kinds() {
        // SAFETY: an activity kind of this CUPTI version.
        unsafe { (api.disable)(kind) };
    }
    true
}

/// Capture windows: a window opened; our activity kinds are turned on again, unless another
/// profiler was handed CUPTI meanwhile (then [`reclaim`] brings them back). Whether CUPTI
/// traces ours now.
pub fn window_resume() -> bool {
    if !WINDOW_PAUSED.swap(false, Ordering::AcqRel) {
        return active() && !HELD.load(Ordering::Acquire);
    }
    let Some(api) = API.get() else { return false };
    if HELD.load(Ordering::Acquire) {
        return false;
    }
    for (kind, name) in our_named_kinds() {
        // SAFETY: an activity kind of this CUPTI version.
        let r = unsafe { (api.enable)(kind) };
        if r != cupti::SUCCESS {
            log::warn(format_args!("capture windows: cuptiActivityEnable({name}) returned {}; this window's {name} records are missing", api.result_name(r)));
        }
    }
    true
}

/// Set by [`handover`], cleared by [`reclaim`]: another profiler has CUPTI; the watch waits.
static HELD: AtomicBool = AtomicBool::new(false);

/// The host is about to let another profiler take CUPTI's activity API (the Python package
/// calls this before `jax.profiler.start_trace` and before `torch.profiler` prepares): every
/// record CUPTI holds for us is delivered now, our activity kinds are turned off, and the watch
/// leaves CUPTI alone until [`reclaim`]. Nothing of ours is left for the other profiler to
/// receive, and we never take CUPTI from under it. Returns whether CUPTI was ours to hand over.
pub fn handover() -> bool {
    let (Some(api), true) = (API.get(), active()) else { return false };
    HELD.store(true, Ordering::Release);
    flush();
    unfilter_api_records(api);
    for kind in our_kinds() {
        // SAFETY: an activity kind of this CUPTI version.
        unsafe { (api.disable)(kind) };
    }
    log::info(format_args!("CUPTI: handed over to another profiler at the host's request; waiting for it to finish"));
    true
}

/// The profiler the host handed CUPTI to has stopped: the watch looks again, and CUPTI is ours
/// as soon as nobody traces (CUPTI accepts our clock only while no activity kind is enabled):
/// now, or when the other profiler's finalize comes (XLA's comes up to 85 ms after
/// `stop_trace` returns, measured). Returns whether kernels are traced through CUPTI now.
pub fn reclaim() -> bool {
    let (Some(api), true) = (API.get(), active()) else { return false };
    HELD.store(false, Ordering::Release);
    // Refused: someone still traces, and the watch takes CUPTI back when it is done.
    take_back_if_idle(api, Release::Stopped)
}

/// Sets CUPTI up for us again if nobody traces now. CUPTI takes a timestamp callback only while
/// no activity kind is enabled, so ours being taken is that sign (and our clock is in place for
/// the resume). Whether we trace again.
fn take_back_if_idle(api: &Api, how: Release) -> bool {
    let Some(register) = api.register_timestamp_callback else { return false };
    // SAFETY: a plain function; CUPTI refuses it while a kind is enabled.
    let taken = unsafe { register(timestamp) } == cupti::SUCCESS;
    taken && resume(api, how)
}

/// The first API records after a resume: how many calls were never seen, said once.
fn after_resume(first: u32) {
    let after = RESUMED_AFTER.swap(NOT_RESUMED, Ordering::AcqRel);
    if after == NOT_RESUMED {
        return;
    }
    static SAID: AtomicBool = AtomicBool::new(false);
    let missed = u64::from(first).checked_sub(after + 1);
    if let Some(n) = missed {
        roctx_kernels::count_not_seen(n);
    }
    let gap_ms = RESUMED_AT.load(Ordering::Acquire).saturating_sub(LAST_DELIVERY.load(Ordering::Acquire)) as f64 / 1e6;
    let how_many = match missed {
        Some(n) => format!("{n} CUDA API calls (correlation ids {} to {}) and the kernels, copies and sets they launched", after + 1, u64::from(first) - 1),
        None => format!(
            "the CUDA API calls, kernels, copies and sets of up to {gap_ms:.1} ms before the resume (how many is unknown: CUPTI's finalize started its correlation ids over)"
        ),
    };
    let message = format_args!(
        "CUPTI: another profiler (XLA's tracer under jax.profiler, Kineto, ...) took CUPTI's activity API; {how_many} went to it, not to this trace; tracing resumed {}",
        Release::last().words()
    );
    if SAID.swap(true, Ordering::AcqRel) {
        log::info(message);
    } else {
        log::warn(message);
    }
}

/// Whether this thread's two ids are in the join's map (a slot of the static-TLS block,
/// `roctx_sys::tls`: read at every range and op scope).
// SAFETY: the only slot with this word.
static NOTED: roctx_sys::tls::Slot<Cell<bool>, { roctx_sys::tls::SlotId::CuptiNoted as usize }> =
    unsafe { roctx_sys::tls::Slot::new(|| Cell::new(false)) };

/// Records the calling thread's two ids for the join, once per thread (the first range or op
/// scope it opens; retried at the next while the join's lock is busy). Never waits.
#[inline]
pub fn note_thread() {
    if !NOTED.with(Cell::get).unwrap_or(true) && note_ids() {
        let _ = NOTED.with(|n| n.set(true));
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
    // Never block here (a launching thread): a few tries, yielding to the reader that holds the
    // lock for one buffer (the watch thread's flush every 100 ms; a fork child never inherits it
    // held, the fork handlers take it). A thread still not noted keeps CUPTI's id, which the join
    // falls back to: one try alone lost a note under ASan's slowness.
    let Some(mut guard) = (0..64).find_map(|_| JOINS.try_lock().ok().or_else(|| {
        std::thread::yield_now();
        None
    })) else {
        return false;
    };
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
        let mut memory = if granted {
            // 8-byte aligned, as CUPTI requires.
            Box::into_raw(vec![0u64; BUFFER_BYTES / 8].into_boxed_slice()).cast::<u8>()
        } else {
            std::ptr::null_mut()
        };
        if !memory.is_null() && !claim_slot(memory as usize) {
            // Every slot taken (buffers the other client kept, not yet forgotten): decline.
            // SAFETY: allocated just above, never handed out.
            drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(memory.cast::<u64>(), BUFFER_BYTES / 8)) });
            memory = std::ptr::null_mut();
        }
        if memory.is_null() {
            OUTSTANDING.fetch_sub(1, Ordering::AcqRel);
            DECLINED.fetch_add(1, Ordering::Relaxed);
        }
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

thread_local! {
    /// The join lock, from [`fork_prepare`] to [`fork_parent`]/[`fork_child`] (the forking thread).
    static FORK_HELD: std::cell::RefCell<Option<std::sync::MutexGuard<'static, Option<Joins>>>> = const { std::cell::RefCell::new(None) };
}

/// Before `fork()`: takes the join lock, which a buffer callback holds while it reads (and calls
/// the kernel stage under, so it is taken before the kernel stage's lock). A child that
/// inherited it held by a parent's thread hung forever in its exit-time flush.
pub(crate) fn fork_prepare() {
    let held = JOINS.lock().unwrap_or_else(PoisonError::into_inner);
    let _ = FORK_HELD.try_with(|h| *h.borrow_mut() = Some(held));
}

/// After `fork()`, in the parent.
pub(crate) fn fork_parent() {
    let _ = FORK_HELD.try_with(|h| h.borrow_mut().take());
}

/// After `fork()`, in the child: the parent's thread-id notes are not the child's threads.
pub(crate) fn fork_child() {
    let _ = FORK_HELD.try_with(|h| {
        if let Some(mut held) = h.borrow_mut().take() {
            *held = None;
        }
    });
}

unsafe extern "C" fn buffer_completed(_context: *mut std::ffi::c_void, _stream: u32, buffer: *mut u8, _size: usize, valid: usize) {
    if buffer.is_null() {
        return;
    }
    // Ours is released only once read: a flush on another thread waits for a buffer of ours
    // until then (its records belong in what that flush returns).
    if !OURS.iter().any(|slot| slot.load(Ordering::Acquire) == buffer as usize) {
        // Another client's buffer, delivered to us because our callback is registered now: its
        // records are its own, and so is its memory.
        if FOREIGN.fetch_add(1, Ordering::Relaxed) == 0 {
            log::warn(format_args!(
                "CUPTI: another profiler's activity buffer was delivered to us (CUPTI hands buffers to whoever is registered when they complete); left to it, unread"
            ));
        }
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
    // Not found: a resume forgot it meanwhile; it is ours all the same.
    let _ = release_slot(buffer as usize);
    // SAFETY: the buffer buffer_requested allocated, returned to us.
    drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(buffer.cast::<u64>(), BUFFER_BYTES / 8)) });
    // Saturating: a resume forgot the buffers the other client took, and one may yet come back.
    let _ = OUTSTANDING.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| Some(n.saturating_sub(1)));
}

/// # Safety
/// `buffer` holds `valid` bytes of CUPTI activity records.
unsafe fn read_buffer(api: &Api, buffer: *mut u8, valid: usize) {
    let mut guard = JOINS.lock().unwrap_or_else(PoisonError::into_inner);
    let joins = guard.get_or_insert_with(Joins::default);
    let mut batch = Vec::new();
    let mut launches = Vec::new();
    let mut rejected = 0u64;
    let (mut first_api, mut last_api) = (u32::MAX, 0u32);
    let mut record: *mut u8 = std::ptr::null_mut();
    // SAFETY: CUPTI's iteration over its own buffer, which we hold.
    while unsafe { (api.get_next_record)(buffer, valid, &mut record) } == cupti::SUCCESS && !record.is_null() {
        // SAFETY: a record CUPTI just returned from the buffer we hold.
        match unsafe { cupti::activity(record) } {
            Activity::Api(a) => {
                first_api = first_api.min(a.correlation_id);
                last_api = last_api.max(a.correlation_id);
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
                    work: Work::Kernel,
                    graph: GraphNode { graph_id: k.graph_id, node_id: k.graph_node_id },
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
            Activity::Copy(c) => {
                let work = Work::Copy(MemCopy {
                    bytes: c.bytes,
                    direction: direction(c.copy_kind),
                    src: MemoryKind::from_cupti(c.src_kind.into()),
                    dst: MemoryKind::from_cupti(c.dst_kind.into()),
                    is_async: c.flags & 1 != 0,
                });
                batch.push(moved(work, c.start, c.end, c.device_id, c.stream_id, c.correlation_id, GraphNode { graph_id: c.graph_id, node_id: c.graph_node_id }));
            }
            Activity::Set(m) => {
                let work = Work::Set(MemSet { bytes: m.bytes, value: m.value, memory: MemoryKind::from_cupti(m.memory_kind.into()), is_async: m.flags & 1 != 0 });
                batch.push(moved(work, m.start, m.end, m.device_id, m.stream_id, m.correlation_id, GraphNode { graph_id: m.graph_id, node_id: m.graph_node_id }));
            }
            Activity::Untimed => rejected += 1,
            _ => {}
        }
    }
    drop(guard);
    if last_api != 0 {
        after_resume(first_api);
        LAST_CORRELATION.fetch_max(last_api, Ordering::AcqRel);
    }
    if !batch.is_empty() || last_api != 0 {
        LAST_DELIVERY.store(roctx_sys::os::boottime_ns(), Ordering::Release);
    }
    SEEN[0].fetch_add(batch.len() as u64, Ordering::Relaxed);
    SEEN[1].fetch_add(launches.len() as u64, Ordering::Relaxed);
    roctx_kernels::count_rejected(rejected);
    // Launches first: a buffer's kernels join its own API records at once, whatever the order.
    roctx_kernels::record_launches(launches);
    // The GPUs this batch ran on, for the watch thread to ask the driver about (once each).
    let devices = batch.iter().filter(|d| d.agent_id < 64).fold(0u64, |m, d| m | 1 << d.agent_id);
    if devices != 0 {
        SEEN_DEVICES.fetch_or(devices, Ordering::Relaxed);
    }
    roctx_kernels::record_dispatch(batch);
}

/// A copy or set record, joined by its launching call like a kernel.
fn moved(work: Work, start: u64, end: u64, device: u32, stream: u32, correlation: u32, graph: GraphNode) -> RawDispatch {
    RawDispatch {
        work,
        graph,
        start_ns: boottime(start),
        end_ns: boottime(end),
        by_launch: true,
        agent_id: u64::from(device),
        queue_id: u64::from(stream),
        dispatch_id: u64::from(correlation),
        correlation_id: u64::from(correlation),
        ..RawDispatch::default()
    }
}

/// CUPTI's `CUpti_ActivityMemcpyKind` as XLA's tracer maps it (arrays and host-to-host are
/// "other").
fn direction(copy_kind: u8) -> Direction {
    match copy_kind {
        1 => Direction::HostToDevice,
        2 => Direction::DeviceToHost,
        8 => Direction::DeviceToDevice,
        10 => Direction::PeerToPeer,
        _ => Direction::Other,
    }
}
