//! The synthetic capture both kernel-stage benches feed the store with (also included by
//! `roctx_roofline/benches/report.rs` through `#[path]`, so the two measure the same workload).
//! In `common/mod.rs`, not `benches/*.rs`, so cargo does not take it for a bench target.
//!
//! Shaped like a llama.cpp decode as the listener sees it: op scopes of 16 geometries (8 op
//! kinds x 2 layer shapes), 1-3 kernels per op, one in ten ops followed by a kernel outside any
//! op (invocation 0), ROCTX ranges spanning 8 ops with one op in 16 outside every range (range
//! 0), two launching threads on their own queues, 48 kernels with mangled names.
#![allow(dead_code)] // each bench uses its own part

use roctx_kernels::{attribution, begin_invocation, register_kernel_symbol, scope_changed, Launch, OpDescriptor, RawDispatch};

/// Records per delivered batch: the listener's 4 MiB watermark over 184-byte records.
pub const BATCH: usize = (4 << 20) / 184;

/// Distinct kernels.
pub const KERNELS: u64 = 48;

const OPS: [&str; 8] = ["MUL_MAT", "ADD", "RMS_NORM", "MUL", "ROPE", "SOFT_MAX", "GLU", "CPY"];

/// Registers the kernels' mangled names (demangled at the first snapshot, as in a capture).
pub fn register_kernels() {
    for id in 1..=KERNELS {
        let name = format!("{}_kernel_{id}", OPS[(id % 8) as usize].to_lowercase());
        register_kernel_symbol(id, format!("_Z{}{name}ILi256EEvPKvS1_Pfi", name.len()).as_bytes());
    }
}

/// Geometry `g` of 16.
pub fn op(g: usize) -> OpDescriptor {
    let ne0 = if g < 8 { 4096 } else { 14336 };
    let matmul = g % 8 == 0;
    OpDescriptor {
        op: OPS[g % 8].into(),
        name: format!("blk.{g}.{}", OPS[g % 8].to_lowercase()),
        dtype: "f32".into(),
        quant: if matmul { "q4_K" } else { "f32" }.into(),
        ne: [ne0, 1, 1, 1],
        src_ne: vec![[4096, ne0, 1, 1], [4096, 1, 1, 1]],
        src_types: vec![if matmul { "q4_K" } else { "f32" }.into(), "f32".into()],
        bytes: 4096 * ne0 as u64,
        dst_bytes: 4 * ne0 as u64,
        src_bytes: vec![4096 * ne0 as u64, 4 * 4096],
        m: u64::from(matmul),
        n: if matmul { ne0 as u64 } else { 0 },
        k: if matmul { 4096 } else { 0 },
        ..OpDescriptor::default()
    }
}

/// A generator of dispatches; op `i` and its clock continue across calls.
#[derive(Debug, Default)]
pub struct Capture {
    ops: u64,
    clock_ns: u64,
    host_ns: u64,
    correlation: u64,
}

impl Capture {
    /// Begins op scopes (real invocations of the store) until `n` records are made for them;
    /// returns the records in launch order (the order the SDK delivers them in).
    pub fn dispatches(&mut self, n: usize) -> Vec<RawDispatch> {
        let mut out = Vec::with_capacity(n + 4);
        while out.len() < n {
            let i = self.ops;
            self.ops += 1;
            let invocation = begin_invocation(op((i % 16) as usize));
            let range = if i % 16 == 15 { 0 } else { (i / 8 + 1) as u32 };
            let thread = 1000 + (i % 2);
            for k in 0..=(i % 3) {
                out.push(self.record(attribution::encode(invocation, range), (i * 3 + k) % KERNELS + 1, thread));
            }
            if i % 10 == 9 {
                out.push(self.record(attribution::encode(0, range), i % KERNELS + 1, thread));
            }
        }
        out.truncate(n);
        out
    }

    /// As [`Capture::dispatches`], attributed the way both sources now are: each op scope logs
    /// its change on its thread ([`scope_changed`], untimed here, as the op's own caller pays
    /// it), each kernel has a launch call record, and the records of a batch come as the
    /// listener hands them over (launches, then kernels). Returns `(launches, kernels)`.
    pub fn joined(&mut self, n: usize) -> (Vec<Launch>, Vec<RawDispatch>) {
        let mut launches = Vec::with_capacity(n + 4);
        let mut out = Vec::with_capacity(n + 4);
        while out.len() < n {
            let i = self.ops;
            self.ops += 1;
            let invocation = begin_invocation(op((i % 16) as usize));
            let thread = 1000 + (i % 2);
            self.host_ns += 1_000;
            scope_changed(thread, self.host_ns, invocation);
            for k in 0..=(i % 3) {
                let kernel = (i * 3 + k) % KERNELS + 1;
                out.push(self.launched(&mut launches, kernel, thread));
            }
            if i % 10 == 9 {
                self.host_ns += 1_000;
                scope_changed(thread, self.host_ns, 0);
                out.push(self.launched(&mut launches, i % KERNELS + 1, thread));
            }
        }
        out.truncate(n);
        (launches, out)
    }

    fn launched(&mut self, launches: &mut Vec<Launch>, kernel_id: u64, thread_id: u64) -> RawDispatch {
        self.correlation += 1;
        self.host_ns += 100;
        launches.push(Launch { correlation_id: self.correlation, thread_id, start_ns: self.host_ns, end_ns: self.host_ns + 50 });
        let mut d = self.record(0, kernel_id, thread_id);
        d.by_launch = true;
        d.thread_id = 0; // CUPTI's kernel records name no thread: the launch gives it
        d.correlation_id = self.correlation;
        d
    }

    fn record(&mut self, external: u64, kernel_id: u64, thread_id: u64) -> RawDispatch {
        let start_ns = self.clock_ns;
        let end_ns = start_ns + 2_000 + (kernel_id * 997) % 48_000;
        self.clock_ns = end_ns + 500;
        RawDispatch {
            start_ns,
            end_ns,
            kernel_id,
            external,
            by_launch: false,
            thread_id,
            agent_id: 1,
            queue_id: thread_id - 999,
            dispatch_id: start_ns,
            correlation_id: start_ns / 7,
            workgroup: [256, 1, 1],
            grid: [65536, 1, 1],
            ..RawDispatch::default()
        }
    }
}
