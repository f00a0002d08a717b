//! Op scopes in XProf's op statistics and Roofline Model, and the device plane's capabilities.
//!
//! XProf's device op database (`ConvertDeviceTraceXPlaneToOpMetricsDb`) reads every event of
//! every non-derived line of a `/device:GPU:<n>` plane, whatever the line's name: an event with
//! an `hlo_op` stat is an op, kept if the module its `program_id` names (in `/host:metadata`)
//! holds an instruction of that name, with the event's integer `flops` and `bytes_accessed`;
//! an event with neither `hlo_op` nor `tf_op` (our kernels) is no op, and only spans the
//! device's busy time. So each op invocation is written once, as one event on an op line of
//! its first kernel's stream, and the kernels stay plain: nothing is counted twice.
//!
//! The event starts with the invocation's first kernel and lasts as long as its kernels ran
//! together (the sum of their durations), which is the time XProf divides the FLOPs by, as
//! `roctx roofline` does. Contiguous events of one group on a line are merged by XProf into one
//! occurrence (times and counts summed): the totals, and so every ratio, are unchanged.

use std::collections::{BTreeMap, HashMap};

use super::{x_stat, XEvent, XEventMetadata, XLine, XPlane, XSpace, XStat, XStatMetadata};
use crate::hlo::{instruction_name, OpInstruction, OpModule, HLO_PROTO_STAT};
use crate::model::{DeviceCaps, Trace};

/// XLA's `kMetadataPlaneName`: where XProf looks for modules.
pub const METADATA_PLANE: &str = "/host:metadata";

/// Line ids of the op lines: one per stream, from here. Below XProf's derived line ids
/// (`kThreadIdDerivedMin`, 0xdeadbeef), whose events its op database skips, and far from CUDA's
/// small stream ids.
pub const OP_LINE_BASE: i64 = 0x6F70_0000;

/// An op line's name: `Op scopes (Stream #<id>)`.
pub fn op_line_name(stream: i64) -> String {
    format!("Op scopes (Stream #{stream})")
}

/// Whether `line` is one of our op lines.
pub fn is_op_line(line: &XLine) -> bool {
    line.name.starts_with("Op scopes (Stream #")
}

/// The module of a trace's op groups and each group's instruction name, if any invocation with
/// a cost launched a kernel in the trace.
pub(crate) struct OpScopes {
    pub(crate) module: OpModule,
    names: HashMap<String, String>,
}

impl OpScopes {
    pub(crate) fn of(trace: &Trace) -> Option<OpScopes> {
        let mut groups: BTreeMap<&str, &str> = BTreeMap::new();
        for k in trace.kernels.iter().filter(|k| k.work == roctx_kernels::Work::Kernel) {
            if let Some(cost) = trace.op_costs.get(&k.invocation) {
                groups.entry(cost.group.as_str()).or_insert(cost.op_type.as_str());
            }
        }
        if groups.is_empty() {
            return None;
        }
        let mut taken: HashMap<String, u32> = HashMap::new();
        let mut names = HashMap::new();
        let mut ops = Vec::with_capacity(groups.len());
        for (label, op_type) in groups {
            let base = instruction_name(label);
            // Two labels that sanitize alike still get two instructions.
            let n = taken.entry(base.clone()).or_insert(0);
            *n += 1;
            let name = if *n == 1 { base } else { format!("{base}.{n}") };
            names.insert(label.to_owned(), name.clone());
            ops.push(OpInstruction { name, op_type: op_type.to_owned(), op_name: format!("{op_type}/{label}") });
        }
        Some(OpScopes { module: OpModule::new(&ops), names })
    }
}

/// Stat names of the op events and the device plane (XLA's xplane schema).
const HLO_OP: &str = "hlo_op";
const HLO_MODULE: &str = "hlo_module";
const PROGRAM_ID: &str = "program_id";
const FLOPS: &str = "flops";
const BYTES_ACCESSED: &str = "bytes_accessed";
const TF_OP: &str = "tf_op";

/// Adds one op event per costed invocation to `planes` (the trace's GPU planes, by GPU index):
/// on the op line of its first kernel's stream, from that kernel's start for the sum of its
/// kernels' durations, with `hlo_op`, `hlo_module`, `program_id`, `flops`, `bytes_accessed` and
/// `tf_op`. Times as the kernels' (`start_ns` the trace's, `line_ts` the lines' timestamp).
pub(crate) fn add_op_events(trace: &Trace, scopes: &OpScopes, planes: &mut BTreeMap<u32, XPlane>, line_ts: i64) {
    // (gpu, stream, first start, Σ duration) per invocation, in the kernels' start order.
    let mut spans: BTreeMap<u32, (u32, u64, u64, u64)> = BTreeMap::new();
    for k in trace.kernels.iter().filter(|k| k.work == roctx_kernels::Work::Kernel && trace.op_costs.contains_key(&k.invocation)) {
        let span = spans.entry(k.invocation).or_insert((k.gpu, k.stream, k.start_ns, 0));
        span.2 = span.2.min(k.start_ns);
        span.3 = span.3.saturating_add(k.end_ns.saturating_sub(k.start_ns));
    }
    let mut order: Vec<(u32, (u32, u64, u64, u64))> = spans.into_iter().collect();
    order.sort_by_key(|&(inv, (_, _, start, _))| (start, inv));
    let program_id = scopes.module.program_id;
    // Per plane: the stats' ids and the module name's ref; per group: its event metadata and
    // the refs of its two strings, resolved once (a plane's metadata is looked up by a scan,
    // and a run has hundreds of thousands of invocations). The strings are written as
    // `ref_value`s, as XLA writes its `tf_op`s: inline, they were three quarters of the bytes.
    let mut stat_ids: HashMap<u32, [i64; 7]> = HashMap::new();
    let mut group_ids: HashMap<(u32, &str), [i64; 3]> = HashMap::new();
    for (invocation, (gpu, stream, start, busy)) in order {
        let (Some(plane), Some(cost)) = (planes.get_mut(&gpu), trace.op_costs.get(&invocation)) else { continue };
        let Some(name) = scopes.names.get(&cost.group) else { continue };
        let ids = *stat_ids.entry(gpu).or_insert_with(|| {
            [HLO_OP, HLO_MODULE, PROGRAM_ID, FLOPS, BYTES_ACCESSED, TF_OP, scopes.module.name.as_str()].map(|stat| stat_id(plane, stat))
        });
        let [meta, hlo_op, tf_op] = *group_ids.entry((gpu, name.as_str())).or_insert_with(|| {
            [event_id(plane, name), stat_id(plane, name), stat_id(plane, &format!("{}/{}:{}", cost.op_type, cost.group, cost.op_type))]
        });
        // CAST: a stream handle past i64::MAX wraps, as its kernels' line id does.
        let line_name = op_line_name(stream as i64);
        let line = match plane.lines.iter().position(|l| l.name == line_name) {
            Some(at) => &mut plane.lines[at],
            None => {
                let taken: std::collections::HashSet<i64> = plane.lines.iter().map(|l| l.id).collect();
                let id = (OP_LINE_BASE..).find(|id| !taken.contains(id)).unwrap_or(OP_LINE_BASE);
                plane.lines.push(XLine { id, name: line_name, timestamp_ns: line_ts, ..XLine::default() });
                plane.lines.last_mut().expect("just pushed")
            }
        };
        let offset_ps = super::ns_between(start, trace.start_ns).saturating_mul(1000);
        let duration_ps = super::ns(busy).saturating_mul(1000);
        line.duration_ps = line.duration_ps.max(offset_ps.saturating_add(duration_ps));
        let value = |v: x_stat::Value| Some(v);
        line.events.push(XEvent {
            metadata_id: meta,
            data: Some(super::x_event::Data::OffsetPs(offset_ps)),
            duration_ps,
            stats: vec![
                XStat { metadata_id: ids[0], value: value(ref_value(hlo_op)) },
                XStat { metadata_id: ids[1], value: value(ref_value(ids[6])) },
                XStat { metadata_id: ids[2], value: value(x_stat::Value::Uint64Value(program_id)) },
                XStat { metadata_id: ids[3], value: value(x_stat::Value::Uint64Value(cost.flops)) },
                XStat { metadata_id: ids[4], value: value(x_stat::Value::Uint64Value(cost.bytes)) },
                XStat { metadata_id: ids[5], value: value(ref_value(tf_op)) },
            ],
        });
    }
}

/// A `ref_value` to stat metadata `id` (ids are positive).
fn ref_value(id: i64) -> x_stat::Value {
    // CAST: stat metadata ids are positive.
    x_stat::Value::RefValue(id as u64)
}

/// The id of stat metadata `name` in `plane`, added if missing.
fn stat_id(plane: &mut XPlane, name: &str) -> i64 {
    if let Some(m) = plane.stat_metadata.values().find(|m| m.name == name) {
        return m.id;
    }
    let id = plane.stat_metadata.keys().copied().max().unwrap_or(0).saturating_add(1);
    plane.stat_metadata.insert(id, XStatMetadata { id, name: name.to_owned(), description: String::new() });
    id
}

/// The id of event metadata `name` in `plane`, added if missing.
fn event_id(plane: &mut XPlane, name: &str) -> i64 {
    if let Some(m) = plane.event_metadata.values().find(|m| m.name == name) {
        return m.id;
    }
    let id = plane.event_metadata.keys().copied().max().unwrap_or(0).saturating_add(1);
    plane.event_metadata.insert(id, XEventMetadata { id, name: name.to_owned(), ..XEventMetadata::default() });
    id
}

/// Writes `caps` as the plane stats XProf's `GetPerfEnvFromXPlane` reads (`clock_rate` kHz,
/// `core_count`, `memory_bandwidth` B/s, `memory_size`, `compute_cap_major` / `_minor`,
/// `device_vendor`, `peak_teraflops_per_second`); what is unknown is left out.
pub(crate) fn add_device_caps(plane: &mut XPlane, caps: &DeviceCaps) {
    let put = |plane: &mut XPlane, name: &str, value: x_stat::Value| {
        let id = stat_id(plane, name);
        plane.stats.retain(|s| s.metadata_id != id);
        plane.stats.push(XStat { metadata_id: id, value: Some(value) });
    };
    if let Some(v) = &caps.vendor {
        put(plane, "device_vendor", x_stat::Value::StrValue(v.clone()));
    }
    for (name, value) in [("clock_rate", caps.clock_rate_khz), ("core_count", caps.core_count), ("memory_bandwidth", caps.memory_bandwidth), ("memory_size", caps.memory_size)] {
        if let Some(v) = value {
            put(plane, name, x_stat::Value::Uint64Value(v));
        }
    }
    if let Some((major, minor)) = caps.compute_cap {
        put(plane, "compute_cap_major", x_stat::Value::Int64Value(i64::from(major)));
        put(plane, "compute_cap_minor", x_stat::Value::Int64Value(i64::from(minor)));
    }
    if let Some(t) = caps.peak_tflops.filter(|t| t.is_finite() && *t > 0.0) {
        put(plane, "peak_teraflops_per_second", x_stat::Value::DoubleValue(t));
    }
}

/// Adds `module` to `space`'s `/host:metadata` plane (made if missing) as XLA writes one: an
/// event metadata whose id is the program id, named after the module, with the serialized
/// `HloProto` in a bytes stat `Hlo Proto`. A module already there under that id is kept.
pub fn add_module(space: &mut XSpace, module: &OpModule) {
    // CAST: bit 63 is clear (hlo::PROGRAM_ID_BIT).
    add_module_bytes(space, module.program_id as i64, &module.name, &module.hlo_proto);
}

fn add_module_bytes(space: &mut XSpace, program_id: i64, name: &str, bytes: &[u8]) {
    let at = match space.planes.iter().position(|p| p.name == METADATA_PLANE) {
        Some(at) => at,
        None => {
            let id = space.planes.iter().map(|p| p.id).max().unwrap_or(0).saturating_add(1);
            space.planes.push(XPlane { id, name: METADATA_PLANE.to_owned(), ..XPlane::default() });
            space.planes.len() - 1
        }
    };
    let plane = &mut space.planes[at];
    if plane.event_metadata.contains_key(&program_id) {
        return;
    }
    let stat = stat_id(plane, HLO_PROTO_STAT);
    plane.event_metadata.insert(
        program_id,
        XEventMetadata { id: program_id, name: name.to_owned(), stats: vec![XStat { metadata_id: stat, value: Some(x_stat::Value::BytesValue(bytes.to_vec())) }], ..XEventMetadata::default() },
    );
}

/// Gathers every `/host:metadata` plane of `space` into the first one, each module (event
/// metadata) under its own id, its `Hlo Proto` stat re-keyed. XLA's plane merge would drop them:
/// it copies event metadata only for events on lines, and this plane has none.
pub fn unify_metadata_planes(space: &mut XSpace) {
    let count = space.planes.iter().filter(|p| p.name == METADATA_PLANE).count();
    if count < 2 {
        return;
    }
    let mut modules = Vec::new();
    let mut first = true;
    space.planes.retain(|p| {
        if p.name != METADATA_PLANE {
            return true;
        }
        if first {
            first = false;
            return true;
        }
        for m in p.event_metadata.values() {
            let bytes = m.stats.iter().find_map(|s| match (&s.value, p.stat_metadata.get(&s.metadata_id)) {
                (Some(x_stat::Value::BytesValue(b)), Some(meta)) if meta.name == HLO_PROTO_STAT => Some(b.clone()),
                _ => None,
            });
            if let Some(bytes) = bytes {
                modules.push((m.id, m.name.clone(), bytes));
            }
        }
        false
    });
    for (id, name, bytes) in modules {
        add_module_bytes(space, id, &name, &bytes);
    }
}
