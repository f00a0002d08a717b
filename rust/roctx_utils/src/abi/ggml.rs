//! The llama.cpp drop-in: the five `ggml_cuda_roofline_*` entry points of the `GGML_HIP_ROOFLINE`
//! profiler (roofline.md 1, 3), with its exact contracts, over the same kernel stage as the op
//! scopes of `roofline.h`. `integrations/llama.cpp/` wires them into upstream llama.cpp.
//!
//! - `init`: call-once; inactive unless `GGML_ROOFLINE_OUT` (or `ROCTX_UTILS_ROOFLINE_OUT`) is
//!   set and non-empty; sets `GGML_CUDA_DISABLE_GRAPHS=1` (per-op attribution needs eager
//!   launches) and `GGML_CUDA_PDL=0` (per-op device times must not overlap) unless the user set
//!   them; configures rocprofiler-sdk (start-up), which registers
//!   the report writer at exit.
//! - `set_device(arch)`: the report's `device`.
//! - `reset()`: flush, then discard; names and the invocation counter are kept.
//! - `begin_op(node, stream)`: a fresh invocation for `node` on this thread, replacing the
//!   previous one (pop, then push): every kernel the thread launches until the next `begin_op`
//!   is the node's. A `MUL_MAT_ID`'s experts are counted as `GGML_ROOFLINE_MOE` says: by
//!   default (`analytic`) from its shapes alone, `min(M·top_k, n_experts)`, when the report is
//!   written (no runtime call, no copy: exact at one token, an upper bound above). With
//!   `exact`, for a `MUL_MAT_ID` with a stream and an `i32` ids tensor, the MoE read-back of
//!   roofline.md 5.4 (`listener::moe`: copied without a sync, counted later) under the
//!   sentinel invocation 0 (any copy kernel that lowers to is no op's); then `experts_used`
//!   and `tokens_per_expert` from them. Every node's output range is told to the read-back
//!   (a copy of ids is shared by later ops until one writes over them). Without the HIP/CUDA
//!   runtime in the process, or on any failure, the row falls back to the analytic count (the
//!   loss is counted and reported). The row's `moe_accounting` says which it got.
//! - `fuse_ops(graph, node_idx, node_count)`: re-points the current invocation at the fused
//!   group of nodes `[node_idx, node_idx + node_count)`, with the group's external traffic
//!   (roofline.md 5.3); ignored for fewer than two nodes or without a current invocation.
//!
//! Tensors are read through `roctx_sys::ggml`'s mirror of `ggml_tensor`, names and byte counts
//! through the host's own ggml functions. Every entry point is a no-op while inactive.
#![allow(clippy::missing_safety_doc)]

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::ffi::{c_char, c_int, c_void};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Once, OnceLock};

use roctx_config::log;
use roctx_kernels::{GeometryKey, OpDescriptor};
use roctx_sys::ggml::{Api, DeviceCopy, Tensor, MAX_SRC};

use super::guard;
use crate::listener::{kernels, moe};
use crate::runtime;

static ACTIVE: AtomicBool = AtomicBool::new(false);
/// `GGML_ROOFLINE_MOE=exact`: `MUL_MAT_ID` routings are read back.
static EXACT_MOE: AtomicBool = AtomicBool::new(false);
static GGML: OnceLock<Api> = OnceLock::new();
static DEVICE_COPY: OnceLock<Option<DeviceCopy>> = OnceLock::new();
/// Most ids bytes copied for one read-back, and most ids read (a larger tensor is no MoE
/// routing a step produces; it is counted analytically).
const MAX_IDS_BYTES: usize = 64 << 20;
const MAX_IDS: u64 = 16 << 20;
/// Most experts counted per op.
const MAX_EXPERTS: u64 = 1 << 16;

/// `ggml_cuda_roofline_init`.
#[no_mangle]
pub extern "C" fn ggml_cuda_roofline_init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| guard((), init));
}

fn init() {
    let config = roctx_config::get();
    let Some(path) = &config.roofline_out else { return };
    // Before any stream exists or kernel is launched (the contract of this call); the backend
    // reads both lazily.
    roctx_config::disable_cuda_graphs();
    roctx_config::disable_cuda_pdl();
    let api = match Api::find() {
        Ok(api) => api,
        Err(why) => {
            log::warn(format_args!("roofline ({}): inactive: {why}", path.display()));
            return;
        }
    };
    let _ = GGML.set(api);
    if config.moe_accounting == roctx_config::MoeAccounting::Exact {
        // Only the exact accounting touches the GPU runtime (the analytic one is the shapes').
        let copy = DeviceCopy::find();
        if copy.is_none() && !moe::available() {
            log::warn(format_args!("roofline: GGML_ROOFLINE_MOE=exact but no HIP or CUDA runtime in the process; MUL_MAT_ID rows count their experts analytically"));
        }
        let _ = DEVICE_COPY.set(copy);
        EXACT_MOE.store(true, Ordering::Relaxed);
    }
    runtime::get();
    if !kernels::active() {
        return; // start-up already said why, and the report at exit will say it has no rows
    }
    ACTIVE.store(true, Ordering::Release);
}

fn active() -> Option<&'static Api> {
    if ACTIVE.load(Ordering::Acquire) { GGML.get() } else { None }
}

/// `ggml_cuda_roofline_set_device`.
#[no_mangle]
pub unsafe extern "C" fn ggml_cuda_roofline_set_device(arch: *const c_char) {
    guard((), || {
        if active().is_some() {
            // SAFETY: null or a C string valid for the call.
            roctx_kernels::set_device(&unsafe { Api::text(arch) });
        }
    })
}

/// `ggml_cuda_roofline_reset`.
#[no_mangle]
pub extern "C" fn ggml_cuda_roofline_reset() {
    guard((), || {
        if active().is_some() {
            runtime::roofline::reset();
        }
    })
}

/// `ggml_cuda_roofline_begin_op`.
#[no_mangle]
pub unsafe extern "C" fn ggml_cuda_roofline_begin_op(node: *const Tensor, stream: *mut c_void) {
    guard((), || {
        let Some(api) = active() else { return };
        let exact = EXACT_MOE.load(Ordering::Relaxed);
        if exact {
            // The last read-back's copy before anything of this op is enqueued.
            moe::before_op();
            // SAFETY: a node of the graph being computed, valid for the call (contract).
            if let Some(t) = unsafe { node.as_ref() } {
                wrote(t);
            }
        }
        let (_, range) = kernels::current_scope();
        // SAFETY: a node of the graph being computed, valid for the call (contract).
        let Some((id, moe)) = (unsafe { begin(api, node, range) }) else { return };
        if let (true, Some(n_experts), false, true) = (exact, moe, stream.is_null(), id != 0) {
            // The sentinel first: what the read-back enqueues belongs to no op.
            kernels::set_scope(0, range);
            // SAFETY: the node, its sources and `stream` are the backend's, valid for the call.
            unsafe { read_routing(api, node, stream, n_experts, id) };
            kernels::set_scope(id, range);
        }
    })
}

/// The geometries of the node layouts a thread has begun, by the bytes that decide a node's
/// descriptor ([`node_key`]): a node seen before (every node of every token after the first)
/// skips reading its tensors through ggml's functions, building the descriptor's strings and
/// hashing it in the store (most of what an op scope cost on the host: `perf`, issue 28).
struct GeometryCache {
    map: HashMap<Box<[u8]>, Remembered, BuildHasherDefault<WordHasher>>,
    /// The last layout begun at each node address, checked by comparing its bytes: a graph's
    /// nodes keep their addresses from token to token, so a hit costs a one-word hash and a
    /// compare instead of hashing the ~350-byte key (issue 42).
    by_node: HashMap<usize, (Box<[u8]>, Remembered), BuildHasherDefault<WordHasher>>,
    key: Vec<u8>,
    /// A node's key while a fused group's is built.
    scratch: Vec<u8>,
}

/// A layout's geometry, and its expert count if it is a `MUL_MAT_ID`.
type Remembered = (GeometryKey, Option<u64>);

/// Layouts kept per thread; past it the cache starts over.
const CACHE_LAYOUTS: usize = 4096;

/// A slot of the static-TLS block (`roctx_sys::tls`): reached at every node without
/// `__tls_get_addr` (the hook library is a shared object).
// SAFETY: the only slot with this word.
static CACHE: roctx_sys::tls::Slot<RefCell<GeometryCache>, { roctx_sys::tls::SlotId::GgmlCache as usize }> = unsafe {
    roctx_sys::tls::Slot::new(|| {
        RefCell::new(GeometryCache {
            map: HashMap::default(),
            by_node: HashMap::default(),
            key: Vec::with_capacity(1024),
            scratch: Vec::with_capacity(1024),
        })
    })
};

/// An FxHash-style hasher over 8-byte words (the keys are our own bytes, not an attacker's).
#[derive(Default)]
struct WordHasher(u64);

impl Hasher for WordHasher {
    fn write(&mut self, bytes: &[u8]) {
        // Whole words read in place: a word assembled in a zeroed stack buffer cost a store
        // forwarding stall per word (a third of `begin_op` in `perf`, issue 28).
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            self.mix(u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.mix(u64::from_le_bytes(w));
        }
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

impl WordHasher {
    fn mix(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

/// The bytes of `t` that decide its descriptor: its type, shape, strides, op and op params
/// (ggml's op name reads them: UNARY, GLU), name, and each source's type, shape and strides.
/// Copied as the struct's few contiguous byte runs (`ne` through `op_params` is one run of
/// 132 bytes with no padding, the offsets asserted in `roctx_sys::ggml`): element by element
/// the key cost a third of `begin_op` (issue 42).
///
/// # Safety
/// `t`'s sources are null or valid tensors.
unsafe fn node_key(t: &Tensor, out: &mut Vec<u8>) {
    out.clear();
    // SAFETY: per contract.
    unsafe {
        key_runs(t, |run| {
            out.extend_from_slice(run);
            true
        })
    };
}

/// Whether `key` is [`node_key`] of `t`, compared run by run in place: a node seen before is
/// recognised without copying its ~350 key bytes first (issue 42).
///
/// # Safety
/// As [`node_key`].
unsafe fn key_matches(t: &Tensor, key: &[u8]) -> bool {
    let mut rest = key;
    // SAFETY: per contract.
    let same = unsafe {
        key_runs(t, |run| match rest.split_at_checked(run.len()) {
            Some((head, tail)) if head == run => {
                rest = tail;
                true
            }
            _ => false,
        })
    };
    same && rest.is_empty()
}

/// Hands [`node_key`]'s byte runs of `t` to `f` in order, until `f` returns false; whether all
/// were taken.
///
/// # Safety
/// As [`node_key`].
unsafe fn key_runs(t: &Tensor, mut f: impl FnMut(&[u8]) -> bool) -> bool {
    /// `type_` (4 bytes), then `ne`, `nb`, `op` and `op_params` (offsets 16 to 148), `name`
    /// (256 to 320); a source's `type_` and `ne`, `nb` (16 to 80). Padding (4 to 8) is never read.
    const TYPE: std::ops::Range<usize> = 0..4;
    const SHAPE_OP: std::ops::Range<usize> = 16..148;
    const SHAPE: std::ops::Range<usize> = 16..80;
    const NAME: std::ops::Range<usize> = 256..320;
    const _: () = assert!(std::mem::size_of::<Tensor>() >= 320 && std::mem::offset_of!(Tensor, name) == 256);
    fn raw(t: &Tensor) -> *const u8 {
        (t as *const Tensor).cast()
    }
    // SAFETY: every range lies within the tensor's initialized fields (offsets above), which
    // live as long as `t`.
    let run = |t: &Tensor, r: std::ops::Range<usize>| unsafe { std::slice::from_raw_parts(raw(t).add(r.start), r.len()) };
    if !(f(run(t, TYPE)) && f(run(t, SHAPE_OP)) && f(run(t, NAME))) {
        return false;
    }
    // SAFETY: per contract.
    unsafe { sources(t) }.iter().all(|&s| {
        // SAFETY: per contract.
        match unsafe { s.as_ref() } {
            None => f(&[0]),
            Some(st) => f(&[1]) && f(run(st, TYPE)) && f(run(st, SHAPE)),
        }
    })
}

/// Begins the invocation of `node` and makes it the thread's op scope (`range`: the thread's
/// current range, for the external-correlation path): (its id, the expert count if it is a
/// `MUL_MAT_ID`), or `None` for a null node.
///
/// # Safety
/// `node` must be null or a valid tensor whose sources are valid tensors.
unsafe fn begin(api: &Api, node: *const Tensor, range: u32) -> Option<(u32, Option<u64>)> {
    // SAFETY: per contract.
    let t = unsafe { node.as_ref() }?;
    let cached = CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let c = &mut *c;
        let at = node as usize;
        if let Some((bytes, remembered)) = c.by_node.get(&at) {
            // SAFETY: per contract.
            if unsafe { key_matches(t, bytes) } {
                return Some(*remembered);
            }
        }
        // SAFETY: per contract.
        unsafe { node_key(t, &mut c.key) };
        let remembered = c.map.get(c.key.as_slice()).copied()?;
        if c.by_node.len() >= CACHE_LAYOUTS {
            c.by_node.clear();
        }
        c.by_node.insert(at, (c.key.as_slice().into(), remembered));
        Some(remembered)
    });
    if let Some(Some((key, moe))) = cached {
        if let Some(id) = kernels::begin_scope_at(key, range) {
            return Some((id, moe));
        }
    }
    // SAFETY: per contract.
    let desc = unsafe { describe(api, node) }?;
    let moe = (desc.op == "MUL_MAT_ID").then_some(desc.n_experts);
    let (id, key) = roctx_kernels::begin_invocation_keyed(desc);
    if let Some(key) = key {
        let _ = CACHE.with(|c| {
            let mut c = c.borrow_mut();
            if c.map.len() >= CACHE_LAYOUTS {
                c.map.clear();
                c.by_node.clear();
            }
            // The key again: a hit at the node's address left another node's key here.
            // SAFETY: per contract.
            unsafe { node_key(t, &mut c.key) };
            let bytes: Box<[u8]> = c.key.as_slice().into();
            // The node's address now names this geometry (a reset made the one it had stale).
            if c.by_node.len() >= CACHE_LAYOUTS {
                c.by_node.clear();
            }
            c.by_node.insert(node as usize, (bytes.clone(), (key, moe)));
            c.map.insert(bytes, (key, moe));
        });
    }
    kernels::set_scope(id, range);
    Some((id, moe))
}

/// `ggml_cuda_roofline_fuse_ops`.
#[no_mangle]
pub unsafe extern "C" fn ggml_cuda_roofline_fuse_ops(graph: *mut c_void, node_idx: c_int, node_count: c_int) {
    guard((), || {
        let Some(api) = active() else { return };
        let (invocation, _) = kernels::current_scope();
        if invocation == 0 || node_count < 2 || node_idx < 0 || graph.is_null() {
            return;
        }
        let (Some(node_at), Some(n_nodes)) = (api.graph_node, api.graph_n_nodes) else { return };
        // SAFETY: the graph being computed (contract).
        let n = unsafe { n_nodes(graph) };
        let end = node_idx.saturating_add(node_count);
        if end > n {
            return;
        }
        // SAFETY: indices within the graph's nodes.
        let node = |i: c_int| unsafe { node_at(graph, i) }.cast_const();
        if EXACT_MOE.load(Ordering::Relaxed) {
            // SAFETY: the graph's nodes are valid for the call.
            (node_idx..end).filter_map(|i| unsafe { node(i).as_ref() }).for_each(wrote);
        }
        // The same group every token: its geometry is remembered by the bytes of its nodes and
        // their wiring, and the invocation re-pointed through the thread's op log (no stage lock,
        // no descriptor built: issue 42).
        // Some(Ok(found)) with the group's key left in the cache's `key`; Err: no key for this group.
        let cached = CACHE.with(|c| {
            let mut c = c.borrow_mut();
            let c = &mut *c;
            // SAFETY: the graph's nodes and their sources are valid for the call.
            unsafe { group_key((node_idx..end).map(node), &mut c.key, &mut c.scratch) }.ok_or(())?;
            Ok::<_, ()>(c.map.get(c.key.as_slice()).map(|r| r.0))
        });
        let keyed = matches!(cached, Some(Ok(_)));
        if let Some(Ok(Some(key))) = cached {
            if roctx_kernels::fuse_invocation_at(invocation, key) {
                return;
            }
        }
        let nodes: Vec<*const Tensor> = (node_idx..end).map(node).collect();
        // SAFETY: the graph's nodes are valid for the call.
        let Some(group) = (unsafe { describe_group(api, &nodes) }) else { return };
        let Some(key) = roctx_kernels::group_geometry(group) else { return };
        roctx_kernels::fuse_invocation_at(invocation, key);
        if keyed {
            // The key computed above is still in `key` (describing the group does not touch the
            // cache).
            let _ = CACHE.with(|c| {
                let mut c = c.borrow_mut();
                let c = &mut *c;
                if c.map.len() >= CACHE_LAYOUTS {
                    c.map.clear();
                    c.by_node.clear();
                }
                c.map.insert(c.key.as_slice().into(), (key, None));
            });
        }
    })
}

/// The bytes that decide a fused group's descriptor: a marker no node key starts with, then
/// each node's [`node_key`], then the group's wiring: for each source of each node, whether it
/// is null, one of the group's nodes (which), or an external tensor (which, counting each once:
/// the group's external bytes count a tensor read twice once). `None` for a null node.
///
/// # Safety
/// The nodes and their sources are null or valid tensors.
unsafe fn group_key(nodes: impl Iterator<Item = *const Tensor> + Clone, out: &mut Vec<u8>, scratch: &mut Vec<u8>) -> Option<()> {
    if nodes.clone().count() > 64 {
        return None; // a group this large is described every time
    }
    out.clear();
    out.extend_from_slice(&[0xff; 4]); // a node key starts with its type (< 256, little-endian)
    let mut externals: [*const Tensor; 32] = [std::ptr::null(); 32];
    let mut n_externals = 0usize;
    for n in nodes.clone() {
        // SAFETY: per contract.
        let t = unsafe { n.as_ref() }?;
        // SAFETY: per contract.
        unsafe { node_key(t, scratch) };
        out.extend_from_slice(&(scratch.len() as u32).to_le_bytes());
        out.extend_from_slice(scratch);
    }
    for n in nodes.clone() {
        // SAFETY: checked non-null above; per contract.
        for &src in unsafe { sources(&*n) } {
            if src.is_null() {
                out.push(0);
            } else if let Some(k) = nodes.clone().position(|m| m == src) {
                out.extend_from_slice(&[1, k as u8]); // CAST: at most 64 nodes
            } else {
                let k = match externals[..n_externals].iter().position(|&e| e == src) {
                    Some(k) => k,
                    None if n_externals < externals.len() => {
                        externals[n_externals] = src;
                        n_externals += 1;
                        n_externals - 1
                    }
                    None => return None, // a group this wide is described every time
                };
                out.extend_from_slice(&[2, k as u8]); // CAST: below 32
            }
        }
    }
    Some(())
}

/// Reads the routing of `invocation`, a `MUL_MAT_ID` node: its ids tensor (`src[2]`, `i32`,
/// `[top_k, n_tokens]`) as `stream` produces it, counted into the kernel stage per expert. Never
/// blocking where the runtime allows ([`moe`]: a copy on a side stream, counted later), else
/// synchronizing the stream and copying. Nothing when there are no ids or they are not `i32`;
/// a runtime failure is counted and said once ([`moe::failed`]): the row is counted analytically.
///
/// # Safety
/// `node` must be a valid tensor whose sources are valid tensors, and `stream` a stream of the
/// process's GPU runtime.
unsafe fn read_routing(api: &Api, node: *const Tensor, stream: *mut c_void, n_experts: u64, invocation: u32) {
    // SAFETY: per contract.
    let Some(ids_ptr) = (unsafe { node.as_ref() }).map(|n| n.src[2]) else { return };
    // SAFETY: per contract (a null source is no ids).
    let Some(ids) = (unsafe { ids_ptr.as_ref() }) else { return };
    // SAFETY: ggml's function on a valid type id returns a static string.
    if unsafe { Api::text((api.type_name)(ids.type_)) } != "i32" || ids.data.is_null() || n_experts == 0 || n_experts > MAX_EXPERTS {
        return;
    }
    let ne = ids.ne.map(|n| u64::try_from(n).unwrap_or(0));
    if ne.iter().try_fold(1u64, |acc, &n| acc.checked_mul(n)).filter(|&c| c > 0 && c <= MAX_IDS).is_none() {
        return;
    }
    // SAFETY: per contract.
    let bytes = unsafe { (api.nbytes)(ids_ptr) };
    if bytes == 0 || bytes > MAX_IDS_BYTES {
        return;
    }
    let layout = moe::IdsLayout { ne, nb: ids.nb.map(|b| b as u64), bytes, n_experts };
    if moe::available() {
        // SAFETY: the ids' device memory spans `ggml_nbytes` bytes and is produced on `stream`;
        // the next op of this thread waits for the copy before anything can overwrite it.
        unsafe { moe::start(invocation, stream, ids.data, layout, computed(api, ids)) };
        return;
    }
    let Some(copy) = DEVICE_COPY.get().copied().flatten() else { return };
    // SAFETY: the ids' device memory spans `ggml_nbytes` bytes; `stream` per contract.
    match unsafe { copy.read(stream, ids.data, bytes) } {
        Ok(host) => {
            moe::record_routing(&[invocation], &host, &layout);
        }
        Err(error) => moe::failed(error),
    }
}

/// Tells the MoE read-back that `t`'s output is being written: the bytes from its data to the
/// end of its last element, bounded above by `sum(ne[i] * nb[i])` (no type traits needed).
fn wrote(t: &Tensor) {
    let start = t.data as usize;
    if start == 0 {
        return;
    }
    let extent = t.ne.iter().zip(t.nb).fold(0usize, |acc, (&n, b)| acc.saturating_add(usize::try_from(n).unwrap_or(usize::MAX).saturating_mul(b)));
    moe::wrote(start, start.saturating_add(extent));
}

/// Whether `ids` holds what a node of the graph computed (directly or through views), so only
/// nodes write it: not a leaf or an input the host sets between graphs. Views are followed up
/// to 16 deep.
///
/// # Safety
/// `ids` and its `view_src` chain are valid tensors.
unsafe fn computed(api: &Api, ids: &Tensor) -> bool {
    let mut root = ids;
    for _ in 0..16 {
        // SAFETY: per contract.
        match unsafe { root.view_src.as_ref() } {
            Some(v) => root = v,
            None => break,
        }
    }
    // GGML_TENSOR_FLAG_INPUT.
    const INPUT: i32 = 1;
    if !root.view_src.is_null() || root.flags & INPUT != 0 {
        return false;
    }
    // SAFETY: ggml's function on a valid tensor returns a static string (or null).
    let op = unsafe { (api.op_desc)(root) };
    // SAFETY: a non-null C string of ggml's.
    !op.is_null() && unsafe { std::ffi::CStr::from_ptr(op) }.to_bytes() != b"NONE"
}

/// The sources of `t`, up to the last non-null one (null slots kept as null).
///
/// # Safety
/// `t` must be a valid tensor.
unsafe fn sources(t: &Tensor) -> &[*const Tensor] {
    let n = t.src.iter().rposition(|s| !s.is_null()).map_or(0, |i| i + 1);
    &t.src[..n.min(MAX_SRC)]
}

/// One node as an op descriptor (roofline.md 5.2), or `None` for a null node.
///
/// # Safety
/// `node` must be null or a valid tensor whose sources are valid tensors.
unsafe fn describe(api: &Api, node: *const Tensor) -> Option<OpDescriptor> {
    // SAFETY: per contract.
    let t = unsafe { node.as_ref() }?;
    // SAFETY: ggml's functions on a valid tensor return static or tensor-owned strings.
    let (op, dtype) = unsafe { (Api::text((api.op_desc)(node)), Api::text((api.type_name)(t.type_))) };
    // SAFETY: per contract.
    let srcs = unsafe { sources(t) };
    let mut d = OpDescriptor { op, dtype, ne: t.ne, op_params: t.op_params.to_vec(), ..OpDescriptor::default() };
    // SAFETY: per contract.
    d.dst_bytes = unsafe { (api.nbytes)(node) } as u64;
    d.bytes = d.dst_bytes;
    d.name = String::from_utf8_lossy(&t.name.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect::<Vec<u8>>()).into_owned();
    for &s in srcs {
        // SAFETY: non-null sources are valid tensors (contract).
        match unsafe { s.as_ref() } {
            Some(st) => {
                // SAFETY: as above.
                let bytes = unsafe { (api.nbytes)(s) } as u64;
                d.src_ne.push(st.ne);
                // SAFETY: as above.
                d.src_types.push(unsafe { Api::text((api.type_name)(st.type_)) });
                d.src_bytes.push(bytes);
                d.bytes = d.bytes.saturating_add(bytes);
            }
            None => {
                d.src_ne.push([0; 4]);
                d.src_types.push(String::new());
                d.src_bytes.push(0);
            }
        }
    }
    d.quant = d.src_types.first().cloned().unwrap_or_default();
    let ne = |i: usize, j: usize| u64::try_from(d.src_ne.get(i).map_or(0, |s| s[j])).unwrap_or(0);
    match d.op.as_str() {
        "MUL_MAT" => (d.k, d.n, d.m) = (ne(0, 0), ne(0, 1), ne(1, 1)),
        "MUL_MAT_ID" => {
            (d.k, d.n, d.m) = (ne(0, 0), ne(0, 1), ne(1, 2));
            d.n_experts = ne(0, 2);
            d.top_k = if srcs.len() > 2 && !srcs[2].is_null() { ne(2, 0) } else { ne(1, 1) };
        }
        _ => {}
    }
    Some(d)
}

/// A fused group (roofline.md 5.3): the head's row, each node's geometry, and the group's
/// external traffic: reads of tensors produced outside the group (each tensor once) plus the
/// final output; intermediates are counted neither as writes nor as reads.
///
/// # Safety
/// Every node must be a valid tensor (see [`describe`]).
unsafe fn describe_group(api: &Api, nodes: &[*const Tensor]) -> Option<OpDescriptor> {
    let mut fused = Vec::with_capacity(nodes.len());
    for &n in nodes {
        // SAFETY: per contract.
        fused.push(unsafe { describe(api, n) }?);
    }
    let produced: HashSet<*const Tensor> = nodes.iter().copied().collect();
    let mut read: HashSet<*const Tensor> = HashSet::new();
    let mut external: u64 = 0;
    for &n in nodes {
        // SAFETY: per contract.
        for &s in unsafe { sources(&*n) } {
            if !s.is_null() && !produced.contains(&s) && read.insert(s) {
                // SAFETY: a valid source tensor.
                external = external.saturating_add(unsafe { (api.nbytes)(s) } as u64);
            }
        }
    }
    let last = *nodes.last()?;
    // SAFETY: per contract.
    let out = unsafe { (api.nbytes)(last) } as u64;
    let mut group = fused[0].clone();
    group.bytes = external.saturating_add(out);
    group.dst_bytes = out;
    group.fused_ops = fused;
    Some(group)
}
