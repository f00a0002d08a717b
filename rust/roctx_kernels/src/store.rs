//! The stage's state: one mutex, taken once per op scope and once per delivered batch of
//! dispatch records (never per ROCTX range).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::attribution;
use crate::merger;
use crate::join::{Launch, Launches, ScopeLogs, LAUNCH_WINDOW, MAX_WAITING};
use crate::names::demangle_all;
use crate::oplog::{self, Entry, What};
use crate::ops::{Geometry, OpDescriptor};
use crate::work::{GraphNode, Work};

/// Most dispatches (kernels, copies, sets) kept between two resets (144 bytes each, 288 MiB at
/// most); more are counted.
pub const MAX_DISPATCHES: usize = 1 << 21;
/// Most distinct op geometries kept; an op with a new geometry past it is attributed to no op.
pub const MAX_GEOMETRIES: usize = 1 << 16;
/// Most kernel names kept.
pub const MAX_KERNEL_NAMES: usize = 1 << 20;
/// Most op invocations kept between two resets (about 41 bytes each in the map: 86 MiB at
/// most); an op scope begun past it is attributed to no op, and counted. llama.cpp opens about
/// 1,000 per token, so this is about 2,000 tokens between resets.
pub const MAX_INVOCATIONS: usize = 1 << 21;

/// A smaller cap for this crate's tests (0: none), which also run under valgrind.
#[cfg(test)]
pub(crate) static INVOCATION_CAP_FOR_TESTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn invocation_cap() -> usize {
    #[cfg(test)]
    {
        let cap = INVOCATION_CAP_FOR_TESTS.load(Ordering::Relaxed);
        if cap != 0 {
            return cap;
        }
    }
    MAX_INVOCATIONS
}

/// One GPU activity (a kernel dispatch, a memory copy or set), attributed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dispatch {
    /// What it did.
    pub work: Work,
    /// The graph node it ran from, if a graph launch ran it.
    pub graph: GraphNode,
    /// Device start, `CLOCK_BOOTTIME` ns.
    pub start_ns: u64,
    /// Device end, `CLOCK_BOOTTIME` ns.
    pub end_ns: u64,
    /// The SDK's kernel id (see [`KernelSnapshot::names`]); 0 for copies and sets.
    pub kernel_id: u64,
    /// The op invocation that launched it (0: none).
    pub invocation: u32,
    /// The innermost ROCTX range instance open on the launching thread, when the source carried
    /// it in the external-correlation value (0: none, or attributed by [`Dispatch::launch_ns`]).
    pub range: u32,
    /// The launching thread.
    pub thread_id: u64,
    /// The instant of the launch call ([`Launch::instant`], `CLOCK_BOOTTIME` ns), from which an
    /// exporter finds the range open on [`Dispatch::thread_id`] at launch; 0 when unknown.
    pub launch_ns: u64,
    /// The GPU (agent handle).
    pub agent_id: u64,
    /// The stream it ran on: CUPTI's `streamId`; rocprofiler-sdk's queue handle (0 for its
    /// memory copies, which name no queue).
    pub queue_id: u64,
    /// The SDK's dispatch counter.
    pub dispatch_id: u64,
    /// The SDK's internal correlation id (the launching API call's).
    pub correlation_id: u64,
    /// Work-items per work-group (x, y, z).
    pub workgroup: [u32; 3],
    /// Work-items in the grid (x, y, z; HSA AQL semantics).
    pub grid: [u32; 3],
}

// The memory bound on MAX_DISPATCHES above (and docs/reliability.md) counts on this size.
const _: () = assert!(std::mem::size_of::<Dispatch>() == 144);

/// An op invocation: its geometry and what was measured about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Invocation {
    /// Index into [`KernelSnapshot::geometries`].
    pub geometry: Geometry,
    /// `MUL_MAT_ID`: distinct experts this launch routed (0: unknown).
    pub experts_used: u64,
}

/// The stage's counters; every loss has one. `#[repr(C)]`, all `u64`: the C API's
/// `roctx_utils_kernel_stats` embeds it after its `struct_size`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelStats {
    /// GPU activities kept: kernels, and memory copies and sets.
    pub dispatches: u64,
    /// Dispatches over [`MAX_DISPATCHES`] (lost).
    pub dropped_cap: u64,
    /// Records that were not well-formed dispatches or symbols, or that no device could have
    /// produced (ending before they start, over [`MAX_DISPATCH_NS`] long, or ending past
    /// [`FUTURE_SLACK_NS`] after their delivery; lost).
    pub rejected_records: u64,
    /// Records the SDK reports it dropped itself (its `drop_count`; lost).
    pub sdk_dropped: u64,
    /// Dispatches of an invocation begun before the last [`reset`], delivered after it
    /// (warm-up work, discarded on purpose).
    pub before_reset: u64,
    /// Op scopes whose geometry did not fit [`MAX_GEOMETRIES`] (their kernels count as no op).
    pub geometries_over_cap: u64,
    /// Op descriptors cut to the documented limits (names, sources, parameters, fused nodes).
    pub cut_descriptors: u64,
    /// Op scopes begun after the 32-bit invocation space ran out (their kernels count as no op).
    pub invocations_exhausted: u64,
    /// Kernel symbols not kept over [`MAX_KERNEL_NAMES`].
    pub names_over_cap: u64,
    /// Dispatches whose launch could not be joined ([`crate::join`]): its record never came or
    /// left the window, or its thread's op log no longer reached back to it. Kept, with no op
    /// (and, with no launch record, no range).
    pub unjoined: u64,
    /// Launch calls (API calls, by their correlation ids) made while another profiler held
    /// the vendor's activity API: their kernels, copies and sets never reached us (lost; the
    /// other profiler has them).
    pub not_seen: u64,
    /// Kernel names kept mangled because their demangled form is over
    /// [`MAX_DEMANGLED_NAME`](crate::MAX_DEMANGLED_NAME) (one 167-byte symbol demangles to 54 MB).
    pub names_too_long: u64,
    /// Op scopes begun past [`MAX_INVOCATIONS`] since the last reset (their kernels count as no
    /// op).
    pub invocations_over_cap: u64,
}

/// Everything captured since the last [`reset`], for exporters and the roofline report.
#[derive(Debug, Clone, Default)]
pub struct KernelSnapshot {
    /// GPU architecture from [`set_device`] (e.g. `gfx942`), empty if never set.
    pub device: String,
    /// Dispatches in device start order.
    pub dispatches: Vec<Dispatch>,
    /// Kernel id -> demangled name.
    pub names: HashMap<u64, Arc<str>>,
    /// Invocation id -> its op.
    pub invocations: BTreeMap<u32, Invocation>,
    /// Distinct op geometries.
    pub geometries: Vec<Arc<OpDescriptor>>,
    /// `MUL_MAT_ID` invocations whose routing was read back: (token, slot) routings per expert.
    pub tokens_per_expert: BTreeMap<u32, Arc<[u64]>>,
    /// The counters.
    pub stats: KernelStats,
}

impl KernelSnapshot {
    /// The name of `kernel_id`, empty if its symbol was never registered.
    pub fn name(&self, kernel_id: u64) -> &str {
        self.names.get(&kernel_id).map_or("", |n| n)
    }
}

/// A kernel name: mangled as registered, demangled at the first snapshot that needs it.
enum Name {
    Mangled(Box<[u8]>),
    Demangled(Arc<str>),
}

#[derive(Default)]
struct State {
    device: String,
    names: HashMap<u64, Name>,
    geometries: Vec<Arc<OpDescriptor>>,
    geometry_index: HashMap<Arc<OpDescriptor>, Geometry>,
    invocations: BTreeMap<u32, Invocation>,
    tokens_per_expert: BTreeMap<u32, Arc<[u64]>>,
    dispatches: Vec<Dispatch>,
    stats: KernelStats,
    /// Invocations up to this id were begun before the last reset.
    reset_floor: u64,
    launches: Launches,
    /// Dispatches whose launch has not arrived yet, oldest first.
    waiting: std::collections::VecDeque<RawDispatch>,
    /// The newest launch correlation id delivered, per launching thread (at most
    /// [`MAX_LAUNCH_THREADS`]) and of all: what tells a late launch record from one that will
    /// never come ([`settle`]).
    newest_by_thread: HashMap<u64, u64>,
    newest_launch: u64,
    scopes: ScopeLogs,
    /// (ticks, ns) pairs read at earlier merges, oldest first ([`Stamps`]).
    clock_pairs: std::collections::VecDeque<(u64, u64)>,
}

/// Least BOOTTIME time between two pairs [`Stamps`] keeps, and the most it lets pass without
/// reading one while the stage is read.
const CLOCK_PAIR_NS: u64 = 10_000_000;
/// Pairs kept (the newest ones): stamps older than the oldest (30 ms or more) are extrapolated
/// along a rate measured over at least [`CLOCK_PAIR_NS`].
const CLOCK_PAIRS: usize = 4;

/// Turns the TSC stamps of op-log entries (the launching thread reads `rdtsc`, not the vDSO's
/// BOOTTIME: issue 42) into BOOTTIME nanoseconds at a merge, the clock of the launch records
/// they are joined with: interpolated between the (ticks, ns) pairs the stage read at its
/// recent merges and one read now, without the clock module's calibration lock (the fork
/// handlers take that lock before the stage's, which a merge holds). A stamp in nanoseconds
/// passes as it is. A pair's error is half a `rdtsc` pair's window (tens of ns); a scope change
/// and the launch it precedes are half a launch call (a µs or more) apart.
struct Stamps<'a> {
    pairs: &'a mut std::collections::VecDeque<(u64, u64)>,
    calibration: Option<roctx_sys::clock::Calibration>,
}

impl<'a> Stamps<'a> {
    fn new(pairs: &'a mut std::collections::VecDeque<(u64, u64)>) -> Stamps<'a> {
        Stamps { pairs, calibration: None }
    }

    fn converted(&mut self, mut e: Entry) -> Entry {
        if roctx_sys::clock::is_ticks(e.at_ns) {
            let pairs = &mut *self.pairs;
            let calibration = self.calibration.get_or_insert_with(|| {
                let now = roctx_sys::clock::read_pair();
                let points = pairs.iter().copied().chain([now]).collect();
                keep_pair(pairs, now);
                roctx_sys::clock::Calibration::new(points)
            });
            e.at_ns = calibration.to_ns(e.at_ns);
        }
        e
    }
}

/// Reads the first (ticks, ns) pair the stage converts op-log stamps with ([`Stamps`]). A
/// source calls it before its first scope change can be logged (kernel tracing starting), so
/// that every stamp falls after a pair and is interpolated, never extrapolated along a rate
/// measured over a few hundred ns (the first merge would read its first pair otherwise).
pub fn start_clock() {
    with(|_| ());
}

/// Keeps `pair` if it is [`CLOCK_PAIR_NS`] past the newest kept one.
fn keep_pair(pairs: &mut std::collections::VecDeque<(u64, u64)>, pair: (u64, u64)) {
    if pairs.back().map_or(true, |&(_, ns)| pair.1 >= ns + CLOCK_PAIR_NS) {
        if pairs.len() >= CLOCK_PAIRS {
            pairs.pop_front();
        }
        pairs.push_back(pair);
    }
}

/// Threads whose newest launch is kept for [`settle`]; past it a dispatch of a thread not
/// known waits for the launch window or the final settle.
const MAX_LAUNCH_THREADS: usize = 1 << 16;

static STATE: Mutex<Option<State>> = Mutex::new(None);
/// The last invocation id handed out; monotonic for the process (kept across [`reset`]).
static LAST_INVOCATION: AtomicU64 = AtomicU64::new(0);

/// `std` mutex for the same reason as the collector's: it can be released in a forked child.
fn state() -> MutexGuard<'static, Option<State>> {
    STATE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The stage under its lock, with every thread's pending op-log entries merged in first
/// ([`oplog`]): whatever reads the stage sees every change made before the call.
fn with<R>(f: impl FnOnce(&mut State) -> R) -> R {
    let mut guard = state();
    let s = guard.get_or_insert_with(State::default);
    s.merge_pending();
    f(s)
}

/// Appends `entry` to the calling thread's op log ([`oplog`]): no stage lock, unless the log is
/// full (the thread merges it) or the thread is exiting (applied directly, after what it logged
/// before). A log at half full is handed to the merger thread ([`merger`]).
fn log(entry: Entry) {
    match oplog::push(entry) {
        Ok(oplog::Fill::Room) => {}
        Ok(oplog::Fill::Half) => merger::request(merge_pending_now),
        Ok(oplog::Fill::Full) => merge_pending_now(),
        Err(entry) => with(|s| s.apply_now(entry)),
    }
}

/// Merges every thread's pending op-log entries into the stage.
fn merge_pending_now() {
    with(|_| ());
}

/// Begins an op invocation with `op`'s geometry; returns its id (from 1), or 0 when the op
/// cannot be attributed (counted: geometry table full, or the 32-bit id space exhausted).
pub fn begin_invocation(op: OpDescriptor) -> u32 {
    begin_invocation_keyed(op).0
}

/// A geometry as a caller may cache it: valid until the next [`reset`] (which clears the
/// table), told apart by the reset count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GeometryKey {
    geometry: Geometry,
    resets: u64,
}

/// Resets so far (each clears the geometry table).
static RESETS: AtomicU64 = AtomicU64::new(0);

/// [`begin_invocation`], also returning the geometry it used, for [`begin_invocation_at`]: a
/// caller that knows two ops have the same descriptor (llama.cpp's hook, by the node's bytes)
/// skips building and hashing it again.
pub fn begin_invocation_keyed(op: OpDescriptor) -> (u32, Option<GeometryKey>) {
    let id = LAST_INVOCATION.fetch_add(1, Ordering::Relaxed) + 1;
    with(|s| {
        let Some(id) = s.admit(id) else { return (0, None) };
        match s.geometry(op) {
            Some(geometry) => {
                s.invocations.insert(id, Invocation { geometry, experts_used: 0 });
                (id, Some(GeometryKey { geometry, resets: RESETS.load(Ordering::Relaxed) }))
            }
            None => (0, None),
        }
    })
}

/// Begins an op invocation with a geometry [`begin_invocation_keyed`] returned; `None` if a
/// [`reset`] has cleared it since (the caller begins it with its descriptor instead).
pub fn begin_invocation_at(key: GeometryKey) -> Option<u32> {
    with(|s| s.begin_at(key))
}

/// [`begin_invocation_at`], and `thread`'s op scope changed to the new invocation at `at_ns`
/// (a stamp, as [`scope_changed`]'s), without the store's lock.
pub fn begin_invocation_at_scoped(key: GeometryKey, thread: u64, at_ns: u64) -> Option<u32> {
    // No stage lock (issue 42): the invocation and the scope change go to the thread's op log,
    // merged by the next reader; the cap and a reset racing this call are settled there.
    if key.resets != RESETS.load(Ordering::Acquire) {
        return None;
    }
    let id = LAST_INVOCATION.fetch_add(1, Ordering::Relaxed) + 1;
    let Ok(id) = u32::try_from(id) else {
        with(|s| s.stats.invocations_exhausted += 1);
        scope_changed(thread, at_ns, 0);
        return Some(0);
    };
    log(Entry { thread, at_ns, what: What::Begin { id, geometry: key.geometry, resets: key.resets } });
    Some(id)
}

impl State {
    /// [`begin_invocation_at`] under the lock: a reset cannot slip in between the check and the
    /// insert.
    fn begin_at(&mut self, key: GeometryKey) -> Option<u32> {
        if key.resets != RESETS.load(Ordering::Relaxed) {
            return None;
        }
        let id = LAST_INVOCATION.fetch_add(1, Ordering::Relaxed) + 1;
        let Some(id) = self.admit(id) else { return Some(0) };
        self.invocations.insert(id, Invocation { geometry: key.geometry, experts_used: 0 });
        Some(id)
    }
}

/// Re-points `invocation` at the fused group `group` (llama.cpp's `fuse_ops`); ignored, with
/// `false`, for an unknown invocation or a group of fewer than two nodes.
pub fn fuse_invocation(invocation: u32, group: OpDescriptor) -> bool {
    if invocation == 0 || group.fused_ops.len() < 2 {
        return false;
    }
    with(|s| {
        if !s.invocations.contains_key(&invocation) {
            return false;
        }
        match s.geometry(group) {
            Some(g) => {
                if let Some(inv) = s.invocations.get_mut(&invocation) {
                    inv.geometry = g;
                }
                true
            }
            None => false,
        }
    })
}

/// The geometry of the fused group `group`, stored as [`fuse_invocation`] would store it, as a
/// key a caller may cache for [`fuse_invocation_at`] (llama.cpp's `fuse_ops`, the same groups
/// every token); `None` for fewer than two nodes or a full table (counted).
pub fn group_geometry(group: OpDescriptor) -> Option<GeometryKey> {
    if group.fused_ops.len() < 2 {
        return None;
    }
    with(|s| s.geometry(group).map(|geometry| GeometryKey { geometry, resets: RESETS.load(Ordering::Relaxed) }))
}

/// [`fuse_invocation`] with a geometry [`group_geometry`] returned, without the stage's lock
/// (the calling thread's op log, as [`begin_invocation_at_scoped`]): `false` for invocation 0 or
/// a key a [`reset`] made stale (the caller describes the group again). An invocation unknown
/// by then is left as it is.
pub fn fuse_invocation_at(invocation: u32, key: GeometryKey) -> bool {
    if invocation == 0 || key.resets != RESETS.load(Ordering::Acquire) {
        return false;
    }
    log(Entry { thread: 0, at_ns: 0, what: What::Fuse { id: invocation, geometry: key.geometry, resets: key.resets } });
    true
}

/// Records how many distinct experts `invocation` routed (MoE read-back).
pub fn set_experts_used(invocation: u32, experts: u64) {
    with(|s| {
        if let Some(inv) = s.invocations.get_mut(&invocation) {
            inv.experts_used = experts;
        }
    });
}

/// A `MUL_MAT_ID` invocation's routing, read back from its ids tensor (roofline.md 5.4): the
/// (token, slot) routings per expert. Sets `experts_used` to the experts with any.
pub fn set_expert_routing(invocation: u32, tokens_per_expert: impl Into<Arc<[u64]>>) {
    // One counted routing is shared by the ops that read the same ids (an `Arc`, not a copy).
    let tokens_per_expert = tokens_per_expert.into();
    let used = tokens_per_expert.iter().filter(|&&n| n > 0).count() as u64;
    with(|s| {
        if let Some(inv) = s.invocations.get_mut(&invocation) {
            inv.experts_used = used;
            s.tokens_per_expert.insert(invocation, tokens_per_expert);
        }
    });
}

/// The number of invocation ids handed out so far (the counter [`reset`] keeps).
pub fn invocations_started() -> u64 {
    LAST_INVOCATION.load(Ordering::Relaxed)
}

/// The GPU architecture the report names (`set_device`).
pub fn set_device(arch: &str) {
    let arch: String = arch.chars().take(64).collect();
    with(|s| s.device = arch);
}

/// A code object registered `kernel_id` as `mangled` (copied: the SDK frees it later). It is
/// demangled at the next snapshot, not here on the SDK's thread.
pub fn register_kernel_symbol(kernel_id: u64, mangled: &[u8]) {
    let name = Name::Mangled(mangled.into());
    with(|s| {
        if s.names.len() >= MAX_KERNEL_NAMES && !s.names.contains_key(&kernel_id) {
            s.stats.names_over_cap += 1;
        } else {
            s.names.insert(kernel_id, name);
        }
    });
}

/// The demangled name of `kernel_id`, if registered.
pub fn kernel_name(kernel_id: u64) -> Option<Arc<str>> {
    demangle_pending();
    with(|s| match s.names.get(&kernel_id) {
        Some(Name::Demangled(n)) => Some(Arc::clone(n)),
        Some(Name::Mangled(m)) => Some(String::from_utf8_lossy(m).into()),
        None => None,
    })
}

/// Demangles the names registered since the last call, outside the lock.
fn demangle_pending() {
    let pending: Vec<(u64, Box<[u8]>)> = with(|s| {
        s.names.iter().filter_map(|(&id, n)| if let Name::Mangled(m) = n { Some((id, m.clone())) } else { None }).collect()
    });
    if pending.is_empty() {
        return;
    }
    let (ids, mangled): (Vec<u64>, Vec<Box<[u8]>>) = pending.into_iter().unzip();
    let demangled = demangle_all(mangled.clone());
    with(|s| {
        for ((id, was), (name, too_long)) in ids.into_iter().zip(mangled).zip(demangled) {
            // Only if still the same registration: one made meanwhile is demangled next time.
            if let Some(slot) = s.names.get_mut(&id) {
                if matches!(slot, Name::Mangled(m) if *m == was) {
                    *slot = Name::Demangled(name.into());
                    s.stats.names_too_long += u64::from(too_long);
                }
            }
        }
    });
}

/// One delivered batch of dispatches. A dispatch with `by_launch` is attributed through its
/// launch ([`record_launches`]) and its thread's op scopes ([`scope_changed`]), or waits for its
/// launch; one without carries its attribution in `external` ([`attribution`]).
pub fn record_dispatch<I: IntoIterator<Item = RawDispatch>>(batch: I) {
    // One clock read per batch, not per record.
    let horizon = roctx_sys::os::boottime_ns().saturating_add(FUTURE_SLACK_NS);
    with(|s| {
        for d in batch {
            if implausible(&d, horizon) {
                s.stats.rejected_records += 1;
                continue;
            }
            s.dispatch(d);
        }
        s.scopes.prune();
    });
}

/// The longest a kernel, copy or set may run before its record is taken for garbage: 6 hours.
/// A record that ends at `u64::MAX` would otherwise be a 584-year dispatch and make every total
/// meaningless.
pub const MAX_DISPATCH_NS: u64 = 6 * 3600 * 1_000_000_000;
/// How far past the delivery time a record may end (clock skew between the device and
/// `CLOCK_BOOTTIME`): 60 s.
pub const FUTURE_SLACK_NS: u64 = 60 * 1_000_000_000;

/// A record no device could have produced: it ends before it starts, runs longer than
/// [`MAX_DISPATCH_NS`], or ends after `horizon` (the delivery time plus [`FUTURE_SLACK_NS`]).
/// Counted in [`KernelStats::rejected_records`].
fn implausible(d: &RawDispatch, horizon: u64) -> bool {
    d.end_ns < d.start_ns || d.end_ns - d.start_ns > MAX_DISPATCH_NS || d.end_ns > horizon
}

/// One delivered batch of launch calls (API records). Dispatches that were waiting for one of
/// them are attributed now.
pub fn record_launches<I: IntoIterator<Item = Launch>>(batch: I) {
    with(|s| {
        for l in batch {
            s.launches.insert(&l);
            s.newest_launch = s.newest_launch.max(l.correlation_id);
            if s.newest_by_thread.len() < MAX_LAUNCH_THREADS || s.newest_by_thread.contains_key(&l.thread_id) {
                let newest = s.newest_by_thread.entry(l.thread_id).or_default();
                *newest = (*newest).max(l.correlation_id);
            }
        }
        if !s.waiting.is_empty() {
            for d in std::mem::take(&mut s.waiting) {
                s.dispatch(d);
            }
        }
    });
}

/// The source has delivered everything it held (after a flush): a dispatch still waiting for a
/// launch that can no longer come is kept unattributed ([`KernelStats::unjoined`]). One can
/// still come while its call runs on its thread: a copy's record is written when the copy
/// completes, inside a synchronous `hipMemcpy`, before the call's own record (written at its
/// exit), and a flush from another thread can fall in between (issue 40). So a dispatch waits
/// on until its thread has delivered a later launch (its calls exit in order, their records in
/// that order), the launch window has passed its id, or [`settle_all`]; a source that does not
/// say which thread launched (CUPTI's kernel records) settles at every flush, as before.
pub fn settle() {
    with(|s| s.settle(false));
}

/// [`settle`] for the last time (the process exits, the session stops, a signal ends the run):
/// every waiting dispatch is kept, unjoined.
pub fn settle_all() {
    with(|s| s.settle(true));
}

/// `thread` (an OS thread id) entered op scope `invocation` (0: left every scope) at `at_ns`: a
/// stamp of `roctx_sys::clock::now` (`CLOCK_BOOTTIME` ns, the clock of the sources' launch
/// records, or TSC ticks, converted to it when the stage merges the change). Called by the
/// thread itself, so its changes arrive in order.
pub fn scope_changed(thread: u64, at_ns: u64, invocation: u32) {
    log(Entry { thread, at_ns, what: What::Scope { invocation } });
}

/// A dispatch (or copy, or set) as a source delivers it, before attribution.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RawDispatch {
    /// What it did.
    pub work: Work,
    /// The graph node it ran from (zero: not a graph launch).
    pub graph: GraphNode,
    /// Device start, `CLOCK_BOOTTIME` ns.
    pub start_ns: u64,
    /// Device end, `CLOCK_BOOTTIME` ns (not before `start_ns`: sources reject such records).
    pub end_ns: u64,
    /// The kernel.
    pub kernel_id: u64,
    /// The launching thread's external correlation value ([`attribution`]), when not
    /// `by_launch`.
    pub external: u64,
    /// Attributed by joining with the launch call of `correlation_id` ([`record_launches`])
    /// instead of by `external`.
    pub by_launch: bool,
    /// The launching thread.
    pub thread_id: u64,
    /// The GPU.
    pub agent_id: u64,
    /// The stream ([`Dispatch::queue_id`]).
    pub queue_id: u64,
    /// The SDK's dispatch counter.
    pub dispatch_id: u64,
    /// The source's correlation id of the launching call.
    pub correlation_id: u64,
    /// Work-items per work-group.
    pub workgroup: [u32; 3],
    /// Work-items in the grid.
    pub grid: [u32; 3],
}

/// `n` records a source could not read (counted as lost).
pub fn count_rejected(n: u64) {
    if n > 0 {
        with(|s| s.stats.rejected_records += n);
    }
}

/// The SDK reported dropping `n` records itself.
pub fn count_sdk_dropped(n: u64) {
    if n > 0 {
        with(|s| s.stats.sdk_dropped = s.stats.sdk_dropped.saturating_add(n));
    }
}

/// Discards dispatches, invocations and geometries (llama.cpp's reset after warm-up); keeps the
/// kernel names, the device and the invocation counter. Dispatches of an invocation begun
/// before now that arrive later are discarded and counted ([`KernelStats::before_reset`]).
/// Flushing the source first is the caller's job.
pub fn reset() {
    let floor = LAST_INVOCATION.load(Ordering::Relaxed);
    with(|s| {
        // Cleared, not replaced: the run after a warm-up fills about as much again, and a
        // vector grown anew from empty after every reset copied each record several times.
        s.dispatches.clear();
        s.invocations.clear();
        s.tokens_per_expert.clear();
        s.geometries.clear();
        s.geometry_index.clear();
        RESETS.fetch_add(1, Ordering::Relaxed);
        s.stats = KernelStats::default();
        s.reset_floor = floor;
    });
}

/// The stage's lock, held (tests: what a source's thread holds while it joins a buffer).
#[cfg(test)]
pub(crate) fn lock_for_tests() -> impl Drop {
    state()
}

/// The reset count a key was made under (tests).
#[cfg(test)]
pub(crate) fn resets_of(key: GeometryKey) -> u64 {
    key.resets
}

/// Forgets the join's state too (tests run in one process; [`reset`] keeps it on purpose).
#[cfg(test)]
pub(crate) fn forget_launches() {
    with(State::forget_join);
}

/// The source lost its vendor API to another profiler and started again: its correlation ids
/// may start over, so kernels still waiting for a launch are kept unjoined (counted) and the
/// launch window is emptied (an old launch must never match a new kernel). Op logs are kept.
pub fn source_restarted() {
    with(|s| {
        s.settle(true);
        s.launches.clear();
        s.newest_by_thread.clear();
        s.newest_launch = 0;
    });
}

/// `n` launch calls were made while another profiler held the vendor API
/// ([`KernelStats::not_seen`]).
pub fn count_not_seen(n: u64) {
    if n > 0 {
        with(|s| s.stats.not_seen = s.stats.not_seen.saturating_add(n));
    }
}

/// The counters since the last reset (cheap: no copy of the dispatches).
pub fn stats() -> KernelStats {
    with(|s| s.stats)
}

/// A copy of everything captured since the last reset, dispatches in device start order.
pub fn snapshot() -> KernelSnapshot {
    demangle_pending();
    with(|s| {
        let mut dispatches = s.dispatches.clone();
        // Buffer records arrive unordered (roofline.md 3).
        dispatches.sort_by_key(|d| (d.start_ns, d.end_ns, d.dispatch_id));
        KernelSnapshot {
            device: s.device.clone(),
            dispatches,
            names: s
                .names
                .iter()
                .map(|(&id, n)| match n {
                    Name::Demangled(n) => (id, Arc::clone(n)),
                    Name::Mangled(m) => (id, String::from_utf8_lossy(m).into()),
                })
                .collect(),
            invocations: s.invocations.clone(),
            geometries: s.geometries.clone(),
            tokens_per_expert: s.tokens_per_expert.clone(),
            stats: s.stats,
        }
    })
}

impl State {
    /// Moves every thread's pending op-log entries into the stage.
    fn merge_pending(&mut self) {
        // A pair at least every CLOCK_PAIR_NS while the stage is read (one vDSO read per call
        // otherwise), so the pairs a merge converts between are recent after an idle time too.
        if roctx_sys::clock::source() == roctx_sys::clock::Source::Tsc
            && self.clock_pairs.back().map_or(true, |&(_, ns)| roctx_sys::os::boottime_ns() >= ns + CLOCK_PAIR_NS)
        {
            keep_pair(&mut self.clock_pairs, roctx_sys::clock::read_pair());
        }
        let mut pairs = std::mem::take(&mut self.clock_pairs);
        let mut stamps = Stamps::new(&mut pairs);
        oplog::drain(|e| self.apply(stamps.converted(e)));
        self.clock_pairs = pairs;
    }

    /// One entry that did not go through the op log (its thread is exiting), after the log's.
    fn apply_now(&mut self, e: Entry) {
        let mut pairs = std::mem::take(&mut self.clock_pairs);
        let e = Stamps::new(&mut pairs).converted(e);
        self.clock_pairs = pairs;
        self.apply(e);
    }

    /// One op-log entry, in its thread's order.
    fn apply(&mut self, e: Entry) {
        let current = |resets: u64, geometry: Geometry, s: &Self| resets == RESETS.load(Ordering::Relaxed) && (geometry as usize) < s.geometries.len();
        match e.what {
            What::Scope { invocation } => self.scopes.changed(e.thread, e.at_ns, invocation),
            What::Begin { id, geometry, resets } => {
                // A reset between the caller's check and its id (another thread's reset)
                // cleared the geometry table: the op's kernels are kept, as no op's.
                let admitted = if current(resets, geometry, self) { self.admit(u64::from(id)) } else { None };
                if let Some(id) = admitted {
                    self.invocations.insert(id, Invocation { geometry, experts_used: 0 });
                }
                self.scopes.changed(e.thread, e.at_ns, admitted.unwrap_or(0));
            }
            What::Fuse { id, geometry, resets } => {
                if current(resets, geometry, self) {
                    if let Some(inv) = self.invocations.get_mut(&id) {
                        inv.geometry = geometry;
                    }
                }
            }
        }
    }

    /// Drops the launches, the waiting kernels and the threads' op logs (a fork child's are
    /// its parent's).
    fn forget_join(&mut self) {
        self.launches.clear();
        self.waiting.clear();
        self.newest_by_thread.clear();
        self.newest_launch = 0;
        self.scopes.clear();
    }

    fn dispatch(&mut self, d: RawDispatch) {
        if !d.by_launch {
            let (invocation, range) = attribution::decode(d.external);
            self.keep(&d, d.thread_id, 0, invocation, range);
            return;
        }
        match self.launches.get(d.correlation_id) {
            Some((thread, instant)) => {
                let invocation = self.scopes.at(thread, instant).unwrap_or_else(|| {
                    self.stats.unjoined += 1;
                    0
                });
                self.keep(&d, thread, instant, invocation, 0);
            }
            None => {
                if self.waiting.len() >= MAX_WAITING {
                    if let Some(oldest) = self.waiting.pop_front() {
                        self.keep_unjoined(oldest);
                    }
                }
                self.waiting.push_back(d);
            }
        }
    }

    /// Keeps the waiting dispatches whose launch record will not come (all of them with
    /// `all`) unjoined; see [`settle`].
    fn settle(&mut self, all: bool) {
        for d in std::mem::take(&mut self.waiting) {
            let gone = all
                || d.thread_id == 0
                || self.newest_by_thread.get(&d.thread_id).is_some_and(|&newest| newest > d.correlation_id)
                || self.newest_launch >= d.correlation_id.saturating_add(LAUNCH_WINDOW as u64);
            if gone {
                self.keep_unjoined(d);
            } else {
                self.waiting.push_back(d);
            }
        }
    }

    fn keep_unjoined(&mut self, d: RawDispatch) {
        self.stats.unjoined += 1;
        self.keep(&d, d.thread_id, 0, 0, 0);
    }

    fn keep(&mut self, d: &RawDispatch, thread_id: u64, launch_ns: u64, invocation: u32, range: u32) {
        if invocation != 0 && u64::from(invocation) <= self.reset_floor {
            self.stats.before_reset += 1;
            return;
        }
        if self.dispatches.len() >= MAX_DISPATCHES {
            self.stats.dropped_cap += 1;
            return;
        }
        self.stats.dispatches += 1;
        self.dispatches.push(Dispatch {
            work: d.work,
            graph: d.graph,
            start_ns: d.start_ns,
            end_ns: d.end_ns,
            kernel_id: d.kernel_id,
            invocation,
            range,
            thread_id,
            launch_ns,
            agent_id: d.agent_id,
            queue_id: d.queue_id,
            dispatch_id: d.dispatch_id,
            correlation_id: d.correlation_id,
            workgroup: d.workgroup,
            grid: d.grid,
        });
    }

    /// `id` as an invocation id, if it fits and the op cap allows another (else counted).
    fn admit(&mut self, id: u64) -> Option<u32> {
        let Ok(id) = u32::try_from(id) else {
            self.stats.invocations_exhausted += 1;
            return None;
        };
        if self.invocations.len() >= invocation_cap() {
            self.stats.invocations_over_cap += 1;
            return None;
        }
        Some(id)
    }

    fn geometry(&mut self, op: OpDescriptor) -> Option<Geometry> {
        let (op, cut) = op.bounded();
        if cut {
            self.stats.cut_descriptors += 1;
        }
        if let Some(&g) = self.geometry_index.get(&op) {
            return Some(g);
        }
        if self.geometries.len() >= MAX_GEOMETRIES {
            self.stats.geometries_over_cap += 1;
            return None;
        }
        let g = Geometry::try_from(self.geometries.len()).ok()?;
        let op = Arc::new(op);
        self.geometries.push(Arc::clone(&op));
        self.geometry_index.insert(op, g);
        Some(g)
    }
}

thread_local! {
    static HELD: std::cell::RefCell<Option<MutexGuard<'static, Option<State>>>> = const { std::cell::RefCell::new(None) };
}

/// Before `fork()`: takes the stage's lock (the runtime's `pthread_atfork` handler calls it).
pub fn fork_prepare() {
    let held = state();
    let _ = HELD.try_with(|h| *h.borrow_mut() = Some(held));
    // After the stage's lock (the order of `with`): no reader is draining the op logs now.
    oplog::fork_prepare();
}

/// After `fork()`, in the parent.
pub fn fork_parent() {
    oplog::fork_parent();
    let _ = HELD.try_with(|h| h.borrow_mut().take());
}

/// After `fork()`, in the child: the parent's kernels are the parent's; the child starts empty
/// (names kept: its code objects are the same).
pub fn fork_child() {
    oplog::fork_child();
    let _ = HELD.try_with(|h| {
        if let Some(mut g) = h.borrow_mut().take() {
            if let Some(s) = g.as_mut() {
                s.dispatches = Vec::new();
                s.invocations.clear();
                s.tokens_per_expert.clear();
                s.stats = KernelStats::default();
                s.forget_join();
            }
        }
    });
}
