//! The trace a session is exported as, with what only the roofline layer knows: each op
//! invocation's group, FLOPs and bytes (the roofline report's own numbers), and the GPU's peaks
//! from its table. The exporter turns them into op events XProf's op statistics and Roofline
//! Model read, and device plane stats (`roctx_export::xplane`, "ops").

use std::collections::HashMap;

use roctx_collector::Snapshot;
use roctx_export::{DeviceCaps, OpCost, Trace};
use roctx_kernels::KernelSnapshot;
use roctx_roofline::analysis::{group_key, group_label, group_op, row_bytes, row_flops};
use roctx_roofline::{Ceiling, Device};

use crate::export;

/// The exportable trace of `snapshot`, with the kernels of the kernel stage and their op costs.
pub fn trace(snapshot: &Snapshot) -> Trace {
    // The op costs use each MUL_MAT_ID's routing: count the read-backs still in flight.
    crate::listener::moe::resolve_all();
    let kernels = roctx_kernels::snapshot();
    let mut t = export::trace_with_kernels(snapshot, &kernels);
    add_op_costs(&mut t, &kernels);
    add_driver_caps(&mut t, &kernels, &crate::listener::cupti::device_attributes(), roctx_config::get().cuda_library.as_deref().map(std::path::Path::new));
    add_agent_caps(&mut t, &kernels, crate::listener::kernels::gpu_agents());
    t
}

/// Fills in what rocprofiler-sdk's agents say of the GPUs, under what the peak table gave: CU
/// count, shader clock, VRAM, the gfx version, and for a GPU the table does not know, the
/// table entry of its arch (a report with no `device` still gets its peaks). No agent field
/// gives the memory bandwidth (the memory clock's transfers per cycle are not exposed).
pub fn add_agent_caps(t: &mut Trace, kernels: &KernelSnapshot, agents: &[roctx_sys::rocprofiler::GpuAgent]) {
    if agents.is_empty() {
        return;
    }
    for (gpu, id) in shown_gpus(t, kernels) {
        let Some(a) = agents.iter().find(|a| a.id == id) else { continue };
        let caps = t.devices.entry(gpu).or_insert_with(|| Device::lookup(&a.arch).map(caps).unwrap_or_default());
        caps.vendor.get_or_insert_with(|| "AMD".to_owned());
        if a.max_clock_mhz > 0 {
            caps.clock_rate_khz.get_or_insert(u64::from(a.max_clock_mhz) * 1000);
        }
        if a.cu_count > 0 {
            caps.core_count.get_or_insert(u64::from(a.cu_count));
        }
        if a.memory_bytes > 0 {
            caps.memory_size.get_or_insert(a.memory_bytes);
        }
        if a.gfx_version != (0, 0) {
            caps.compute_cap.get_or_insert(a.gfx_version);
        }
    }
}

/// The GPUs `t` shows, as (index, the agent id or device ordinal of its dispatches): the index
/// is the agent's rank among the snapshot's, as `Trace::add_kernels` numbers them.
fn shown_gpus(t: &Trace, kernels: &KernelSnapshot) -> Vec<(u32, u64)> {
    let mut agents: Vec<u64> = kernels.dispatches.iter().map(|d| d.agent_id).collect();
    agents.sort_unstable();
    agents.dedup();
    let shown: std::collections::BTreeSet<u32> = t.kernels.iter().map(|k| k.gpu).collect();
    // CAST: GPU indices are bounded by the dispatch count.
    agents.into_iter().enumerate().map(|(gpu, agent)| (gpu as u32, agent)).filter(|(gpu, _)| shown.contains(gpu)).collect()
}

/// Fills in what the GPUs' driver says of them, under what the peak table gave (so XProf's
/// roofs stay `roctx roofline`'s where the table knows the device): NVIDIA's SM clock and
/// count, memory size, compute capability and (for a device the table does not know) the
/// bus's memory bandwidth. Only from a CUDA driver the process loaded and initialised; a GPU
/// that is not a CUDA device (a rocprofiler-sdk agent handle) is left alone.
///
/// `known` holds what the driver said while the process ran (the CUPTI listener asks on its
/// watch thread: at exit the driver is shut down); a device not in it is asked now.
pub fn add_driver_caps(t: &mut Trace, kernels: &KernelSnapshot, known: &std::collections::BTreeMap<u32, roctx_sys::cuda::DeviceAttributes>, cuda_library: Option<&std::path::Path>) {
    for (gpu, agent) in shown_gpus(t, kernels) {
        // CUDA ordinals are small; rocprofiler-sdk's agent handles are not.
        let Some(ordinal) = u32::try_from(agent).ok().filter(|&o| o < 1024) else { continue };
        let a = match known.get(&ordinal).cloned().map_or_else(|| roctx_sys::cuda::device_attributes(ordinal, cuda_library), Ok) {
            Ok(a) => a,
            Err(why) => {
                roctx_config::log::info(format_args!("GPU {gpu}: no device capabilities from the CUDA driver for XProf: {why}"));
                continue;
            }
        };
        let table = t.devices.contains_key(&gpu);
        let caps = t.devices.entry(gpu).or_insert_with(|| Device::named(&a.name).map(caps).unwrap_or_default());
        caps.vendor.get_or_insert_with(|| "Nvidia".to_owned());
        caps.clock_rate_khz = caps.clock_rate_khz.or(a.clock_khz);
        caps.core_count = caps.core_count.or(a.multiprocessors);
        caps.memory_size = caps.memory_size.or(a.total_memory);
        caps.compute_cap = caps.compute_cap.or(a.compute_capability);
        if !table {
            caps.memory_bandwidth = caps.memory_bandwidth.or_else(|| a.memory_bandwidth());
        }
    }
}

/// Sets `t`'s op costs (one per invocation that launched a kernel, as the roofline report has
/// its rows) and, for a GPU the report's `device` names in the peak table, its capabilities.
pub fn add_op_costs(t: &mut Trace, kernels: &KernelSnapshot) {
    if kernels.invocations.is_empty() {
        return;
    }
    let report = roctx_roofline::build::report(kernels);
    // One label per group: a label two groups would share gets ` #2`, ... for the later one.
    let mut labels: HashMap<String, String> = HashMap::new();
    let mut taken: HashMap<String, u32> = HashMap::new();
    for row in &report.rows {
        let Some(invocation) = row.invocation.and_then(|i| u32::try_from(i).ok()).filter(|&i| i != 0) else { continue };
        let label = labels
            .entry(group_key(row))
            .or_insert_with(|| {
                let base = group_label(row);
                let n = taken.entry(base.clone()).or_insert(0);
                *n += 1;
                if *n == 1 { base } else { format!("{base} #{n}") }
            })
            .clone();
        let (bytes, _) = row_bytes(row);
        t.op_costs.insert(invocation, OpCost { group: label, op_type: group_op(row), flops: whole(row_flops(row)), bytes: whole(bytes) });
    }
    if let Some(device) = Device::lookup(&report.device) {
        let caps = caps(device);
        for k in &t.kernels {
            t.devices.entry(k.gpu).or_insert_with(|| caps.clone());
        }
    }
}

/// A non-negative count as a whole number (XProf reads `flops` and `bytes_accessed` as
/// integers).
fn whole(x: f64) -> u64 {
    // CAST: rounded, clamped at 0; a count past u64::MAX saturates.
    if x.is_finite() && x > 0.0 { x.round() as u64 } else { 0 }
}

/// A table device's capabilities as XProf reads them. XProf has one FLOP roof per device: the
/// FP16 matrix peak (the ceiling of f16/bf16 matmuls, and of quantised ones where no int8 rate
/// is cited), else the device's highest; `roctx roofline` judges each op against its own
/// ceiling ([`roctx_roofline::Peaks::ceiling_for`]).
pub fn caps(device: &Device) -> DeviceCaps {
    let flops = device.peak_flops(Ceiling::Fp16Matrix).or_else(|| device.rates.iter().filter_map(|(c, _)| device.peak_flops(*c)).reduce(f64::max));
    DeviceCaps {
        vendor: Some(if device.gpu.starts_with("NVIDIA") { "Nvidia" } else { "AMD" }.to_owned()),
        // CAST: GHz to kHz, a few million.
        clock_rate_khz: device.clock_ghz.map(|ghz| (ghz * 1e6).round() as u64),
        core_count: device.compute_units.map(u64::from),
        // CAST: B/s, below 2^53.
        memory_bandwidth: Some(device.mem_bw().round() as u64),
        memory_size: None,
        compute_cap: None,
        peak_tflops: flops.map(|f| f / 1e12),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_device_gives_xprof_its_bandwidth_and_fp16_matrix_peak() {
        let h200 = caps(Device::lookup("h200").unwrap());
        assert_eq!(h200.vendor.as_deref(), Some("Nvidia"));
        assert_eq!(h200.memory_bandwidth, Some(4_800_000_000_000));
        assert_eq!(h200.peak_tflops, Some(989.0));
        let mi300x = caps(Device::lookup("gfx942").unwrap());
        assert_eq!(mi300x.vendor.as_deref(), Some("AMD"));
        assert_eq!((mi300x.core_count, mi300x.clock_rate_khz), (Some(304), Some(2_100_000)));
        assert_eq!(whole(-1.0), 0);
        assert_eq!(whole(f64::NAN), 0);
        assert_eq!(whole(2.6), 3);
    }

    #[test]
    fn an_agent_fills_in_under_the_table_and_finds_the_table_by_its_arch() {
        use roctx_kernels::{Dispatch, Work};
        use roctx_sys::rocprofiler::GpuAgent;
        let d = Dispatch { work: Work::Kernel, graph: Default::default(), start_ns: 10, end_ns: 20, kernel_id: 1, invocation: 0, range: 0, thread_id: 1, launch_ns: 0, agent_id: 0x600, queue_id: 1, dispatch_id: 1, correlation_id: 1, workgroup: [1; 3], grid: [1; 3] };
        let kernels = KernelSnapshot { dispatches: vec![d], ..KernelSnapshot::default() };
        let mut t = Trace::new("h", 0, 100);
        t.add_kernels(&kernels);
        let agent = GpuAgent { id: 0x600, arch: "gfx942".into(), product_name: "AMD Instinct MI300X".into(), cu_count: 304, max_clock_mhz: 2100, memory_bytes: 192 << 30, gfx_version: (9, 4) };
        add_agent_caps(&mut t, &kernels, &[GpuAgent { id: 0x700, ..agent.clone() }]);
        assert!(t.devices.is_empty(), "another agent's");
        add_agent_caps(&mut t, &kernels, &[agent]);
        let caps = &t.devices[&0];
        assert_eq!(caps.memory_bandwidth, Some(5_300_000_000_000), "the table's, found by the agent's arch");
        assert_eq!((caps.memory_size, caps.compute_cap), (Some(192 << 30), Some((9, 4))), "the agent's");
    }

    #[test]
    fn without_a_cuda_driver_no_gpu_gets_driver_caps() {
        let mut t = Trace::default();
        add_driver_caps(&mut t, &KernelSnapshot::default(), &Default::default(), Some(std::path::Path::new("/nonexistent/libcuda.so")));
        assert!(t.devices.is_empty());
    }
}
