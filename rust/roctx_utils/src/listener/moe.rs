//! The routing of `MUL_MAT_ID` ops (roofline.md 5.4), read back without blocking the stream or
//! the host (issue 28): at the op's `begin_op`, before its kernels are enqueued, the ids tensor
//! is copied on a side stream into a slot of a ring of pinned host buffers, between an event
//! recorded on the op's stream (`ready`: the ids are produced) and one after the copy (`done`).
//! The op's kernels run meanwhile; the op's stream waits for `done` only before the next op of
//! the thread is enqueued ([`before_op`]), so a later op cannot overwrite the ids before they
//! are copied, and the wait costs the device nothing once the copy is done. With CUDA these
//! calls are the driver API's where the process has it (`roctx_sys::ggml::AsyncCopy`).
//!
//! The routings are counted by a thread of ours (`roctx-moe`), not the host's launching
//! thread: every [`POLL`] while copies are in flight it retires those done (a stream's newest
//! copy done means all of its copies are: one query for the lot) and counts them outside the
//! ring's lock; it parks when none is in flight. Counting a 512-token op's 4,096 ids on the
//! launching thread, half a ring at a time, cost the H200 8-11 % of that op (the host runs
//! only a graph ahead of the GPU). A flush ([`resolve_all`]: a roofline reset or write, an
//! XSpace write, exit) waits for the copies in flight and the worker's batch.
//!
//! One copy serves the ops of a thread that read the same ids, when the ids are a graph node's
//! output and no op of the thread wrote over them since ([`wrote`]): llama.cpp's MoE layer
//! reads one top-k view three times (gate, up, down). While the copy is in flight they join its
//! job; once it is counted they take its routing (one read-back per ids tensor per graph).
//!
//! Bounded: [`SLOTS`] copies in flight, each slot's pinned buffer kept for reuse (taken 64 at a
//! time from one allocation, never freed: that would synchronize the device). Past that, or
//! when a runtime call fails, or the ids read back are out of range, the op keeps
//! no routing (the report counts its experts analytically), and the count is reported ([`losses`]). The
//! blocking read-back (stream synchronize and copy) remains only for a runtime without these
//! calls.
//!
//! Locks: the ring's, taken on the `MUL_MAT_ID` path (ggml-cuda computes a graph on one thread
//! per device) and briefly by the worker; the per-op part ([`before_op`]) is a thread-local
//! check.

use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use roctx_config::log;
use roctx_sys::ggml::{AsyncCopy, CallError, Queues};

/// Copies in flight at most: the host enqueues a whole graph ahead of the GPU (H200,
/// `test-backend-ops perf` of a 512-token MUL_MAT_ID: 64 were not enough for 42 of 74,047 ops).
pub const SLOTS: usize = 1024;
/// A slot's pinned buffer: ids of up to 4,096 elements (512 tokens of a top-8 MoE), handed out
/// from chunks of [`CHUNK_SLOTS`] per allocation; larger ids get a buffer of their own.
const SLOT_BYTES: usize = 16 << 10;
/// Slots per pinned allocation: pinning is slow (one allocation per slot cost the first 1,024
/// MoE ops of a 512-token run 40 us each on the H200).
const CHUNK_SLOTS: usize = 64;

/// Where the ids' elements are in their bytes: `ggml_tensor`'s `ne` and `nb` (dimension 0
/// fastest), the byte count to copy, and the expert count of the op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdsLayout {
    /// Elements per dimension.
    pub ne: [u64; 4],
    /// Byte stride per dimension.
    pub nb: [u64; 4],
    /// Bytes to copy (`ggml_nbytes`).
    pub bytes: usize,
    /// The op's experts: an id must be below it.
    pub n_experts: u64,
}

/// Tokens routed to each expert, from the ids' bytes: `None` if any id is out of range (the
/// bytes are not this op's routing) or an element lies outside `host`.
///
/// Row by row (dimensions 1 to 3), each row's dimension-0 elements read in one pass: a 512-token
/// top-8 routing is 4,096 ids, and the ring resolves a graph's worth of them between two of the
/// host's launches (the H200's `perf` loop, issue 28), so per element is all it may cost.
pub fn routing_from_ids(host: &[u8], layout: &IdsLayout) -> Option<Vec<u64>> {
    let mut routing = vec![0u64; usize::try_from(layout.n_experts).ok()?];
    let [n0, n1, n2, n3] = layout.ne;
    let [b0, b1, b2, b3] = layout.nb;
    if n0 == 0 || n1 == 0 || n2 == 0 || n3 == 0 {
        return Some(routing);
    }
    // Every offset below is at most this one, the last element's: checked once.
    let last = [(n0 - 1, b0), (n1 - 1, b1), (n2 - 1, b2), (n3 - 1, b3)].iter().try_fold(0u64, |acc, &(i, b)| acc.checked_add(i.checked_mul(b)?))?;
    usize::try_from(last).ok()?.checked_add(4).filter(|&end| end <= host.len())?;
    let (n0, b0) = (usize::try_from(n0).ok()?, usize::try_from(b0).ok()?);
    // A negative id reads as a huge u32: out of range too.
    let id = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
    for i3 in 0..n3 {
        for i2 in 0..n2 {
            for i1 in 0..n1 {
                // Within `last` (checked above), so neither overflows nor leaves `host`.
                let row = (i3 * b3 + i2 * b2 + i1 * b1) as usize;
                if b0 == 4 {
                    // Packed (the usual ids): one slice, no offsets per element.
                    for b in host[row..row + 4 * n0].chunks_exact(4) {
                        *routing.get_mut(id(b))? += 1;
                    }
                } else {
                    for o in (0..n0).map(|i0| row + i0 * b0) {
                        *routing.get_mut(id(&host[o..o + 4]))? += 1;
                    }
                }
            }
        }
    }
    Some(routing)
}

/// Counts `host` (the ids the ops `invocations` read) into the kernel stage, or those ops as
/// `invalid`. Returns the routing counted (`None`: invalid), for the ops that read the same ids
/// later in the graph ([`start`]).
pub fn record_routing(invocations: &[u32], host: &[u8], layout: &IdsLayout) -> Option<Arc<[u64]>> {
    let routing: Option<Arc<[u64]>> = routing_from_ids(host, layout).map(Arc::from);
    record_counted(invocations, routing.as_ref());
    routing
}

/// Records an already counted routing (or its invalidity) for `invocations`.
fn record_counted(invocations: &[u32], routing: Option<&Arc<[u64]>>) {
    match routing {
        Some(routing) => {
            for &invocation in invocations {
                roctx_kernels::set_expert_routing(invocation, Arc::clone(routing));
            }
        }
        None => {
            INVALID.fetch_add(invocations.len() as u64, Ordering::Relaxed);
        }
    }
}

/// What the read-back could not count, by cause.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Losses {
    /// Ops while every slot was in flight.
    pub ring_full: u64,
    /// Ops whose copy could not be enqueued or completed (a runtime call failed).
    pub failed: u64,
    /// Ops whose ids read back were out of range.
    pub invalid: u64,
}

static RING_FULL: AtomicU64 = AtomicU64::new(0);
static FAILED: AtomicU64 = AtomicU64::new(0);
static INVALID: AtomicU64 = AtomicU64::new(0);

/// What the read-back has lost since the process started.
pub fn losses() -> Losses {
    Losses { ring_full: RING_FULL.load(Ordering::Relaxed), failed: FAILED.load(Ordering::Relaxed), invalid: INVALID.load(Ordering::Relaxed) }
}

struct Slot {
    device: i32,
    /// The stream the copy was enqueued on: copies on one stream complete in its order.
    stream: usize,
    ready: *mut c_void,
    done: *mut c_void,
    host: *mut u8,
    cap: usize,
    /// The ops whose ids are in flight into `host`.
    job: Option<Job>,
    /// Jobs the slot has had: a thread's [`Last`] names the slot's job by it.
    generation: u32,
    /// The routing of the slot's last job once counted (`Some(None)`: invalid ids), until the
    /// slot takes another: an op of the graph reading the same unwritten ids after the count
    /// takes it instead of copying again (one read-back per ids tensor per graph).
    counted: Option<Option<Arc<[u64]>>>,
}

/// Most ops one copy counts for: llama.cpp's MoE layer reads one ids tensor three times (gate,
/// up, down), a model with shared experts a few more.
const MAX_SHARERS: usize = 8;

/// What one copy's ids are counted for: the ops that read them, and their layout.
#[derive(Debug, Clone, Copy)]
struct Job {
    invocations: [u32; MAX_SHARERS],
    n: usize,
    layout: IdsLayout,
}

impl Job {
    fn invocations(&self) -> &[u32] {
        &self.invocations[..self.n]
    }
}

/// A thread's last copy of ids a graph node computed: the next `MUL_MAT_ID` reading the same
/// bytes shares it while no op of the thread has written over them ([`wrote`]) and it is in
/// flight.
#[derive(Debug, Clone, Copy)]
struct Last {
    src: usize,
    layout: IdsLayout,
    slot: usize,
    generation: u32,
}

struct Ring {
    copy: AsyncCopy,
    slots: Vec<Slot>,
    /// Slots with no copy in flight and none being counted.
    free: Vec<usize>,
    /// Slots in flight, oldest first.
    pending: VecDeque<usize>,
    /// A side stream per device.
    side: HashMap<i32, usize>,
    /// The pinned chunk slots take their buffers from, and how many pieces it has left.
    chunk: *mut u8,
    chunk_left: usize,
}

// SAFETY: the raw pointers are runtime handles and pinned buffers owned by the ring, used only
// under its lock (a slot being counted outside it is in neither `free` nor `pending`).
unsafe impl Send for Ring {}

static COPY: OnceLock<Option<AsyncCopy>> = OnceLock::new();
/// Set in a `fork()` child: the ring is left alone there ([`fork_child`]).
static FORKED: AtomicBool = AtomicBool::new(false);
static RING: Mutex<Option<Ring>> = Mutex::new(None);
/// Held while routings are counted (by the worker, or a flush): a flush waits for the worker's
/// batch. Taken before [`RING`], never after.
static COUNTING: Mutex<()> = Mutex::new(());
/// The worker is parked with nothing in flight: the next read-back wakes it.
static IDLE: AtomicBool = AtomicBool::new(false);
/// Set at exit: the runtime is going away; the worker stops touching it.
static STOPPED: AtomicBool = AtomicBool::new(false);
static WORKER: OnceLock<Option<std::thread::Thread>> = OnceLock::new();
/// How often the worker looks for copies done while any is in flight.
const POLL: std::time::Duration = std::time::Duration::from_micros(500);
/// Polls with nothing in flight before the worker parks (20 ms).
const LINGER: u32 = 40;

thread_local! {
    /// The (stream, `done` event) the thread's next op must wait for; (0, 0): none.
    static WAIT: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
    static LAST: Cell<Option<Last>> = const { Cell::new(None) };
}

/// Whether the process's GPU runtime has what the non-blocking read-back needs.
pub fn available() -> bool {
    COPY.get_or_init(AsyncCopy::find).is_some()
}

fn warn_once((call, status): CallError) {
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| log::warn(format_args!("roofline: MoE read-back: {call} returned {status}; those MUL_MAT_ID rows count their experts analytically (min(M*top_k, n_experts))")));
}

/// A read-back whose runtime call failed (this ring's, or the blocking read-back's): counted,
/// and said once.
pub fn failed(error: CallError) {
    lost(error, 1);
}

/// `ops` lost to a failed runtime call: counted, and the call said once.
fn lost(error: CallError, ops: usize) {
    FAILED.fetch_add(ops as u64, Ordering::Relaxed);
    warn_once(error);
}

/// Before an op's kernels are enqueued on this thread: the stream of the last read-back's ids
/// waits for its copy (a no-op on the device once the copy is done).
pub fn before_op() {
    if FORKED.load(Ordering::Relaxed) {
        return;
    }
    let Ok((stream, event)) = WAIT.try_with(|w| w.replace((0, 0))) else { return };
    if event == 0 {
        return;
    }
    let Some(copy) = COPY.get().copied().flatten() else { return };
    // SAFETY: a stream the host gave us with a `done` event of the ring, recorded on the
    // stream's device.
    if let Err(error) = unsafe { copy.wait(stream as *mut c_void, event as *mut c_void) } {
        // Not a lost routing: that op's copy was enqueued.
        warn_once(error);
    }
}

/// Starts the read-back of `invocation`'s ids (`src`, laid out as `layout`), produced on
/// `stream`. Returns false if it could not start (and counts why). `shareable`: the ids are a
/// graph node's output (no input the host sets), so an op of the thread reading the same bytes
/// later shares this copy unless an op of the thread wrote over them in between ([`wrote`]).
///
/// # Safety
/// `stream` is a stream of the process's runtime on the current device, `src` device memory
/// readable for `layout.bytes`, and nothing overwrites it before the thread's next op.
pub unsafe fn start(invocation: u32, stream: *mut c_void, src: *const c_void, layout: IdsLayout, shareable: bool) -> bool {
    if FORKED.load(Ordering::Relaxed) {
        // The parent's ring is not the child's (its lock may be held by a thread that does not
        // exist here, its streams and events are the parent's): the row is counted analytically.
        FAILED.fetch_add(1, Ordering::Relaxed);
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| log::warn(format_args!("roofline: MoE read-back: none in a fork() child (the GPU runtime's streams are the parent's); its MUL_MAT_ID rows count their experts analytically")));
        return false;
    }
    let Some(copy) = COPY.get_or_init(AsyncCopy::find).as_ref().copied() else { return false };
    // The read-backs still in flight at exit are counted before the GPU runtime tears down
    // (its events and pinned memory go with it: `cudaErrorCudartUnloading` on the H200 when
    // they were counted by the report's own exit hook, registered before the runtime's).
    // Registered now, after the runtime's, so it runs before it.
    static AT_EXIT: std::sync::Once = std::sync::Once::new();
    AT_EXIT.call_once(|| roctx_sys::os::at_exit(resolve_at_exit));
    // Whether this op already waited for the worker to finish counting the copy it would share.
    let mut waited = false;
    let started = loop {
        let mut guard = RING.lock().unwrap_or_else(PoisonError::into_inner);
        let ring = guard.get_or_insert_with(|| Ring { copy, slots: Vec::new(), free: Vec::new(), pending: VecDeque::new(), side: HashMap::new(), chunk: std::ptr::null_mut(), chunk_left: 0 });
        if matches!(WORKER.get(), Some(None)) && ring.pending.len() >= SLOTS / 2 {
            // No worker thread could be started: this thread counts, half a ring at a time.
            for i in ring.take_done(false) {
                ring.retire(i);
            }
        }
        if shareable {
            if let Ok(Some(last)) = LAST.try_with(Cell::get) {
                if last.src == src as usize && last.layout == layout {
                    let s = &mut ring.slots[last.slot];
                    if s.generation == last.generation {
                        if let Some(job) = s.job.as_mut().filter(|j| j.n < MAX_SHARERS) {
                            job.invocations[job.n] = invocation;
                            job.n += 1;
                            return true;
                        }
                        if let Some(routing) = s.counted.clone() {
                            // Counted already (the copy was done before this op began): the
                            // same bytes, unwritten since, so the same routing; no copy.
                            drop(guard);
                            record_counted(&[invocation], routing.as_ref());
                            return true;
                        }
                        if !waited && !ring.free.contains(&last.slot) && !ring.pending.contains(&last.slot) {
                            // The worker is counting this very copy (its job taken out, in
                            // neither list): wait for that count, which holds COUNTING (taken
                            // before RING, never after), then share it. A new copy of the same
                            // bytes would cost the runtime calls sharing saves, and under load
                            // the worker can be descheduled mid-count for a whole time slice.
                            drop(guard);
                            waited = true;
                            drop(COUNTING.lock().unwrap_or_else(PoisonError::into_inner));
                            continue;
                        }
                    }
                }
            }
        }
        let _ = LAST.try_with(|l| l.set(None));
        let Some(slot) = ring.free_slot() else {
            RING_FULL.fetch_add(1, Ordering::Relaxed);
            return false;
        };
        // SAFETY: per contract.
        break match unsafe { ring.enqueue(slot, stream, src, layout) } {
            Ok(done) => {
                let mut invocations = [0; MAX_SHARERS];
                invocations[0] = invocation;
                let s = &mut ring.slots[slot];
                s.job = Some(Job { invocations, n: 1, layout });
                s.counted = None;
                s.generation = s.generation.wrapping_add(1);
                let last = shareable.then_some(Last { src: src as usize, layout, slot, generation: s.generation });
                let _ = LAST.try_with(|l| l.set(last));
                ring.pending.push_back(slot);
                let _ = WAIT.try_with(|w| w.set((stream as usize, done as usize)));
                true
            }
            Err(error) => {
                ring.free.push(slot);
                failed(error);
                false
            }
        };
    };
    if started {
        wake_worker();
    }
    started
}

/// An op of this thread writes `[start, end)` of device memory (its output): a later op no
/// longer shares the thread's last copy of ids there. One thread-local check per op.
pub fn wrote(start: usize, end: usize) {
    let _ = LAST.try_with(|l| {
        if let Some(last) = l.get() {
            if start < last.src.saturating_add(last.layout.bytes) && last.src < end {
                l.set(None);
            }
        }
    });
}

/// Counts every read-back in flight into the kernel stage, waiting for those not done (a
/// flush: a roofline reset or write, an XSpace write).
pub fn resolve_all() {
    if FORKED.load(Ordering::Relaxed) {
        return;
    }
    let _counting = COUNTING.lock().unwrap_or_else(PoisonError::into_inner);
    let mut guard = RING.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(ring) = guard.as_mut() {
        for i in ring.take_done(true) {
            ring.retire(i);
        }
    }
}

extern "C" fn resolve_at_exit() {
    roctx_sys::guard((), || {
        STOPPED.store(true, Ordering::Relaxed);
        resolve_all();
    });
}

/// After `fork()`, in the child: the ring is never touched there. A fork child has none of the
/// parent's streams or events, and the ring's lock may be held by a thread that does not exist
/// in it (a fork while another thread was starting a read-back).
pub fn fork_child() {
    FORKED.store(true, Ordering::Relaxed);
    let _ = WAIT.try_with(|w| w.set((0, 0)));
    let _ = LAST.try_with(|l| l.set(None));
}

/// Wakes the worker if it sleeps with nothing in flight, starting it the first time. A thread
/// of ours counts the routings, not the host's launching thread: counting a 512-token op's ids
/// is microseconds the GPU would wait for (the host runs only a graph ahead).
fn wake_worker() {
    let worker = WORKER.get_or_init(|| match roctx_sys::os::with_signals_blocked(|| std::thread::Builder::new().name("roctx-moe".into()).spawn(work)) {
        Ok(handle) => Some(handle.thread().clone()),
        Err(e) => {
            log::warn(format_args!("roofline: MoE read-back: no worker thread ({e}); the launching thread counts the routings"));
            None
        }
    });
    if let Some(worker) = worker {
        if IDLE.load(Ordering::Relaxed) && IDLE.swap(false, Ordering::AcqRel) {
            worker.unpark();
        }
    }
}

/// The worker: counts the copies done every [`POLL`]; parks after [`LINGER`] polls found none in
/// flight (between tokens the ring empties: parking then would cost the next op a wake-up).
fn work() {
    let mut empty = 0;
    loop {
        let in_flight = roctx_sys::guard(false, count_done);
        empty = if in_flight { 0 } else { empty + 1 };
        if empty < LINGER {
            std::thread::sleep(POLL);
            continue;
        }
        empty = 0;
        IDLE.store(true, Ordering::SeqCst);
        // A read-back started between the count and IDLE: it saw IDLE false, so look again.
        let any = RING.lock().unwrap_or_else(PoisonError::into_inner).as_ref().is_some_and(|r| !r.pending.is_empty());
        if any {
            IDLE.store(false, Ordering::SeqCst);
        } else {
            std::thread::park();
        }
    }
}

/// Counts the slots whose copy is done, outside the ring's lock; returns whether any is still
/// in flight.
fn count_done() -> bool {
    let _counting = COUNTING.lock().unwrap_or_else(PoisonError::into_inner);
    if STOPPED.load(Ordering::Relaxed) || FORKED.load(Ordering::Relaxed) {
        return false;
    }
    let batch: Vec<(usize, Option<Job>, usize)> = {
        let mut guard = RING.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(ring) = guard.as_mut() else { return false };
        let done = ring.take_done(false);
        // The jobs are taken out under the lock: an op that would share one being counted
        // (its thread's `Last` still names the slot) finds none and makes its own copy, rather
        // than joining a job already read and losing its routing.
        done.into_iter().map(|i| (i, ring.slots[i].job.take(), ring.slots[i].host as usize)).collect()
    };
    let counted: Vec<Option<Option<Arc<[u64]>>>> = batch
        .iter()
        .map(|(_, job, host)| {
            let job = job.as_ref()?;
            // SAFETY: the slot's copy is done, and the slot is in neither `free` nor `pending`
            // until it is handed back below: nothing writes its pinned bytes meanwhile.
            Some(record_routing(job.invocations(), unsafe { std::slice::from_raw_parts(*host as *const u8, job.layout.bytes) }, &job.layout))
        })
        .collect();
    let mut guard = RING.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(ring) = guard.as_mut() else { return false };
    for (&(i, ..), routing) in batch.iter().zip(counted) {
        ring.slots[i].counted = routing;
        ring.free.push(i);
    }
    !ring.pending.is_empty()
}

impl Ring {
    /// A slot with no copy in flight: a free one, or a new one while under [`SLOTS`].
    fn free_slot(&mut self) -> Option<usize> {
        if let Some(i) = self.free.pop() {
            return Some(i);
        }
        if self.slots.len() < SLOTS {
            self.slots.push(Slot { device: -1, stream: 0, ready: std::ptr::null_mut(), done: std::ptr::null_mut(), host: std::ptr::null_mut(), cap: 0, job: None, generation: 0, counted: None });
            return Some(self.slots.len() - 1);
        }
        None
    }

    /// Readies slot `i` for this device and size, then enqueues the copy; returns its `done`.
    ///
    /// # Safety
    /// As [`start`].
    unsafe fn enqueue(&mut self, i: usize, stream: *mut c_void, src: *const c_void, layout: IdsLayout) -> Result<*mut c_void, CallError> {
        let copy = self.copy;
        let device = copy.device()?;
        let slot = &mut self.slots[i];
        if slot.device != device {
            // Events belong to the device they were created on; a slot's old ones are left to
            // the runtime (a process uses few devices).
            slot.ready = copy.event()?;
            slot.done = copy.event()?;
            slot.device = device;
        }
        if self.slots[i].cap < layout.bytes {
            // A slot's old buffer is never freed: freeing pinned memory synchronizes the device.
            // Bounded: 1,024 slots, each growing by powers of two.
            let (host, cap) = if layout.bytes <= SLOT_BYTES {
                (self.chunk_slot()?, SLOT_BYTES)
            } else {
                let cap = layout.bytes.next_power_of_two();
                (copy.host_alloc(cap)?, cap)
            };
            self.slots[i].host = host;
            self.slots[i].cap = cap;
        }
        let side = match self.side.get(&device) {
            Some(&s) => s as *mut c_void,
            None => {
                let s = copy.stream()?;
                self.side.insert(device, s as usize);
                s
            }
        };
        let slot = &self.slots[i];
        let queues = Queues { stream, ready: slot.ready, side, done: slot.done };
        // SAFETY: events and side stream of this device, a pinned buffer of `cap` bytes; the
        // source per contract.
        unsafe { copy.enqueue(&queues, slot.host, src, layout.bytes) }?;
        let done = slot.done;
        self.slots[i].stream = side as usize;
        Ok(done)
    }

    /// A [`SLOT_BYTES`] piece of the current pinned chunk, allocating the next chunk when it is
    /// used up.
    fn chunk_slot(&mut self) -> Result<*mut u8, CallError> {
        if self.chunk_left == 0 {
            self.chunk = self.copy.host_alloc(SLOT_BYTES * CHUNK_SLOTS)?;
            self.chunk_left = CHUNK_SLOTS;
        }
        self.chunk_left -= 1;
        // SAFETY: within the chunk: piece `CHUNK_SLOTS - 1 - chunk_left` of `CHUNK_SLOTS`.
        Ok(unsafe { self.chunk.add((CHUNK_SLOTS - 1 - self.chunk_left) * SLOT_BYTES) })
    }

    /// Takes out of `pending` every slot whose copy is done, oldest first: until the first not
    /// done, or (`wait`) all of them. A slot whose runtime call failed is counted and freed.
    fn take_done(&mut self, wait: bool) -> Vec<usize> {
        let copy = self.copy;
        let mut done = Vec::new();
        if !wait {
            // Copies on one stream complete in its order: once the newest is done, all of
            // that stream's are (one query for the lot).
            if let Some(&newest) = self.pending.back() {
                // SAFETY: an event of the ring.
                if let Ok(true) = unsafe { copy.done(self.slots[newest].done) } {
                    let stream = self.slots[newest].stream;
                    let (now, left): (VecDeque<usize>, VecDeque<usize>) = self.pending.iter().partition(|&&i| self.slots[i].stream == stream);
                    done.extend(now);
                    self.pending = left;
                }
            }
        }
        while let Some(&i) = self.pending.front() {
            let event = self.slots[i].done;
            let finished = if wait {
                // SAFETY: an event of the ring.
                unsafe { copy.finish(event) }.map(|()| true)
            } else {
                // SAFETY: as above.
                unsafe { copy.done(event) }
            };
            match finished {
                Ok(false) => break,
                Ok(true) => done.push(i),
                Err(error) => {
                    // Every op sharing the copy loses its routing.
                    let ops = self.slots[i].job.take().map_or(1, |j| j.n);
                    self.free.push(i);
                    lost(error, ops);
                }
            }
            self.pending.pop_front();
        }
        done
    }

    /// Counts the routing copied into slot `i`, whose copy is done, and frees the slot.
    fn retire(&mut self, i: usize) {
        let slot = &mut self.slots[i];
        if let Some(job) = slot.job.take() {
            // SAFETY: the copy into the slot's `cap` (>= bytes) pinned bytes is done.
            slot.counted = Some(record_routing(job.invocations(), unsafe { std::slice::from_raw_parts(slot.host, job.layout.bytes) }, &job.layout));
        }
        self.free.push(i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(ne: [u64; 4], n_experts: u64) -> IdsLayout {
        let nb = [4, 4 * ne[0], 4 * ne[0] * ne[1], 4 * ne[0] * ne[1] * ne[2]];
        IdsLayout { ne, nb, bytes: (4 * ne.iter().product::<u64>()) as usize, n_experts }
    }

    fn bytes(ids: &[i32]) -> Vec<u8> {
        ids.iter().flat_map(|i| i.to_le_bytes()).collect()
    }

    #[test]
    fn routing_counts_tokens_per_expert_and_refuses_ids_out_of_range() {
        // top_k 2, 5 tokens, 8 experts: 0 three times, 3 four, 5 twice, 7 once.
        let ids = [0, 3, 3, 5, 0, 3, 5, 0, 3, 7];
        assert_eq!(routing_from_ids(&bytes(&ids), &layout([2, 5, 1, 1], 8)), Some(vec![3, 0, 0, 4, 0, 2, 0, 1]));
        assert_eq!(routing_from_ids(&bytes(&[0, 8]), &layout([2, 1, 1, 1], 8)), None, "8 is no expert of 8");
        assert_eq!(routing_from_ids(&bytes(&[0, -1]), &layout([2, 1, 1, 1], 8)), None);
        assert_eq!(routing_from_ids(&bytes(&[0]), &layout([2, 1, 1, 1], 8)), None, "an element past the bytes");
        // A strided view: every other i32 of the bytes.
        let strided = IdsLayout { ne: [2, 1, 1, 1], nb: [8, 16, 16, 16], bytes: 16, n_experts: 4 };
        assert_eq!(routing_from_ids(&bytes(&[1, 99, 2, 99]), &strided), Some(vec![0, 1, 1, 0]));
        // llama.cpp's ids: the top-2 columns of 4-wide argsort rows, 3 tokens (the other
        // columns are other experts' ranks, not routed).
        let view = IdsLayout { ne: [2, 3, 1, 1], nb: [4, 16, 48, 48], bytes: 40, n_experts: 4 };
        let rows = [3, 1, 0, 2, 0, 1, 3, 2, 2, 3, 1, 0];
        assert_eq!(routing_from_ids(&bytes(&rows), &view), Some(vec![1, 2, 1, 2]));
        assert_eq!(routing_from_ids(&bytes(&rows[..9]), &view), None, "the last row's second id past the bytes");
        // A 3-d ids tensor, and an empty one.
        assert_eq!(routing_from_ids(&bytes(&[0, 1, 1, 1]), &layout([1, 2, 2, 1], 2)), Some(vec![1, 3]));
        assert_eq!(routing_from_ids(&[], &layout([8, 0, 1, 1], 2)), Some(vec![0, 0]));
    }
}
