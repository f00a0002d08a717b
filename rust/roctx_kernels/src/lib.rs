/*!
The kernel stage: GPU kernel dispatches (device start/end timestamps), the names of the
kernels they ran, and the op invocations that launched them. It sits beside the collector, below
every exporter and the roofline report, which only read the [`KernelSnapshot`] it hands out; the
sources above it (rocprofiler-sdk buffer tracing in the listener, the op-scope C ABI) feed it.

# Brief overview

- [`join`]: how a kernel finds the op scope open on its launching thread: the source's launch
  call records ([`record_launches`]) give thread and instant, each thread's op log
  ([`scope_changed`]) the op; no vendor call per range or op. The range half is the exporter's.
- [`attribution`]: the external-correlation value a launching thread carries where the join
  cannot work (rocprofiler-sdk refused HIP API tracing). Its low 32 bits are the op
  **invocation** (from 1; 0 is the sentinel "no op", exactly llama.cpp's ids when no ROCTX range
  is open), its high 32 bits the innermost ROCTX **range** open at launch.
- [`OpDescriptor`]: what an op scope says about its op (name, types, shapes, bytes, M/N/K, the
  fused nodes); stored once per distinct geometry.
- [`begin_invocation`], [`fuse_invocation`], [`set_experts_used`]: op scopes.
- [`register_kernel_symbol`]: kernel id -> demangled name, exactly as `c++filt` prints it
  (libstdc++'s `__cxa_demangle` through `roctx_sys::demangle`; a ` [clone .kd]` suffix is kept,
  as the llama.cpp report shows it).
- [`record_dispatch`], [`record_launches`], [`settle`], [`settle_all`], [`count_rejected`],
  [`count_sdk_dropped`]: what the sources deliver.
- [`reset`] (llama.cpp's warm-up reset), [`snapshot`], [`KernelStats`].
- [`Work`]: what each recorded activity did. Memory copies and sets ([`MemCopy`], [`MemSet`])
  are recorded, joined, bounded and counted exactly as kernels are; [`GraphNode`] says which
  graph node ran an activity launched from a CUDA or HIP graph.

# Rules

- Nothing is lost silently: dispatches over [`MAX_DISPATCHES`] are counted
  ([`KernelStats::dropped_cap`]), malformed records are counted ([`KernelStats::rejected_records`]),
  and what the SDK itself dropped is added ([`KernelStats::sdk_dropped`]).
- Device timestamps only; host-side timing is never mixed in (it overstated GPU time 1.7-3x in
  the llama.cpp work).
- [`reset`] discards dispatches, invocations and geometries, but keeps the kernel names (code
  objects are not loaded again) and the invocation counter (a late warm-up record can never
  collide with a later invocation).
- Not on a per-range hot path, and no stage lock per op: an op scope begun with a cached
  geometry ([`begin_invocation_at_scoped`]), a scope change ([`scope_changed`]) and a cached
  fused group ([`fuse_invocation_at`]) go to the calling thread's own log, which whatever reads
  the stage merges first; dispatches and launches arrive in batches on the source's thread.
- Bounded: the join keeps a fixed launch window, a capped wait list and capped op logs; what
  cannot be joined is kept unattributed and counted ([`KernelStats::unjoined`]).
*/
// Denied, not forbidden: the one allowed use is claiming a word of the static-TLS block
// (`roctx_sys::tls::Slot::new`, whose contract is that no other slot claims it).
#![deny(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

pub mod attribution;
pub mod join;
mod merger;
mod names;
mod oplog;
mod ops;
mod store;
mod work;

pub use names::{demangle, MAX_DEMANGLED_NAME};
pub use ops::{Geometry, OpDescriptor};
pub use store::{
    begin_invocation, begin_invocation_at, begin_invocation_at_scoped, begin_invocation_keyed, count_not_seen, count_rejected, count_sdk_dropped, fork_child, fork_parent, fork_prepare, fuse_invocation, fuse_invocation_at, group_geometry, GeometryKey, invocations_started, kernel_name,
    record_dispatch, record_launches, register_kernel_symbol, reset, scope_changed, set_device, set_expert_routing, set_experts_used, settle, settle_all, source_restarted, snapshot, start_clock,
    stats, Dispatch, Invocation, KernelSnapshot, KernelStats, RawDispatch, FUTURE_SLACK_NS, MAX_DISPATCHES, MAX_DISPATCH_NS, MAX_GEOMETRIES, MAX_INVOCATIONS, MAX_KERNEL_NAMES,
};
pub use join::Launch;
pub use work::{Direction, GraphNode, MemCopy, MemSet, MemoryKind, Work};

#[cfg(test)]
mod tests;
