//! Writes the XSpace that makes XProf merge rows if anything is wrong (xspace_and_xprof.md
//! section 8, cases B and U2), for `tests/xprof/check_xprof.py` to render with the real
//! consumer:
//!
//! - an XLA-like capture: `/host:CPU` with thread lines whose ids *are* the ROCTX tids
//!   (`Host Threads/4242`, `Host Threads/4243`, each with events, one of them also named like a
//!   ROCTX range) and a `python` line with a 64-bit id whose low 32 bits are 0, plus a
//!   `/host:NVTX-CUPTI` plane whose `Host Threads/4242/NVTX` line collides with thread 4242;
//! - our ROCTX output for threads 4242 and 4243 (both collide) and 4300 (does not), with
//!   nested ranges and marks;
//! - kernels on `/device:GPU:0` (two queues), launched inside ROCTX ranges of threads 4242
//!   and 4243 and once outside any range;
//! - both merged by `xplane::merge_spaces` (XLA's remap puts NVTX at `1<<32` and the first
//!   ROCTX line at `2<<32`: the same uint32 row 0 unless rows are renumbered) and written as
//!   `<out_logdir>/plugins/profile/<run>/fixture-host.xplane.pb`.
//!
//! Usage: `cargo run --release -p roctx_export --example xprof_fixture -- <out_logdir>
//! [--unsafe-rows]`. Prints the written path and the host plane's lines; exits 1 if
//! `xplane::validate` finds an error (the checker then asserts what XProf actually draws).
//!
//! `--unsafe-rows` is the negative control: it clears every `display_id` after the merge, so
//! rows fall back to `uint32(id)` and the NVTX line (`1<<32`), the first ROCTX line (`2<<32`)
//! and the `python` line all land in row 0, which the checker must report. It writes the file
//! anyway and exits 0.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::SystemTime;

use roctx_export::xplane_proto::{x_event, x_stat, XEvent, XEventMetadata, XLine, XPlane, XSpace, XStat, XStatMetadata};
use roctx_export::{logdir, xplane, Event, EventKind, Trace};
use roctx_kernels::{Dispatch, KernelSnapshot};

const HOST: &str = "fixture-host";
/// Wall-clock ns of the XLA session start (the lines' `timestamp_ns`).
const WALL_START_NS: i64 = 1_732_000_000_000_000_000;
/// `CLOCK_BOOTTIME` ns of the same instant, as our capture saw it.
const BOOT_START_NS: u64 = 5_000_000_000;

/// Builds one plane by hand, as an XLA collector would: event metadata by name, one `tf_op`
/// stat kind.
struct PlaneBuilder {
    plane: XPlane,
    by_name: HashMap<String, i64>,
}

impl PlaneBuilder {
    fn new(name: &str) -> PlaneBuilder {
        let mut plane = XPlane { id: 0, name: name.to_owned(), ..XPlane::default() };
        plane.stat_metadata.insert(1, XStatMetadata { id: 1, name: "tf_op".to_owned(), description: String::new() });
        PlaneBuilder { plane, by_name: HashMap::new() }
    }

    /// A line `id`/`name` holding `(event name, start us, end us)` events, offsets from
    /// [`WALL_START_NS`].
    fn line(&mut self, id: i64, name: &str, events: &[(&str, i64, i64)]) {
        let mut line = XLine { id, name: name.to_owned(), timestamp_ns: WALL_START_NS, ..XLine::default() };
        for &(event, start_us, end_us) in events {
            let next = self.by_name.len() as i64 + 1;
            let metadata_id = *self.by_name.entry(event.to_owned()).or_insert(next);
            self.plane
                .event_metadata
                .entry(metadata_id)
                .or_insert_with(|| XEventMetadata { id: metadata_id, name: event.to_owned(), ..XEventMetadata::default() });
            line.events.push(XEvent {
                metadata_id,
                data: Some(x_event::Data::OffsetPs(start_us * 1_000_000)),
                duration_ps: (end_us - start_us) * 1_000_000,
                stats: vec![XStat { metadata_id: 1, value: Some(x_stat::Value::StrValue("train_step".to_owned())) }],
            });
        }
        line.duration_ps = line.events.iter().map(|e| e.offset_ps() + e.duration_ps).max().unwrap_or(0);
        self.plane.lines.push(line);
    }
}

/// What an XLA GPU capture of the same run holds, before post-processing.
fn xla_capture() -> XSpace {
    let mut cpu = PlaneBuilder::new(xplane::HOST_PLANE);
    // Host API threads: line id = OS tid, exactly the ids our ROCTX lines start from. Thread
    // 4242 also has an XLA annotation named like one of our ranges (both come from the same
    // ScopedAnnotation in a real run).
    cpu.line(4242, "Host Threads/4242", &[("jit_train_step", 4, 95), ("ExecuteThunks", 6, 90), ("hipLaunchKernel", 16, 20)]);
    cpu.line(4243, "Host Threads/4243", &[("ExecuteThunks", 2, 88), ("hipMemcpyAsync", 30, 34)]);
    // A real XLA line id: 64-bit, negative, and 0 in its low 32 bits (XProf row 0 when drawn as
    // is, where a remapped marker line would land too).
    cpu.line(-0x6000_0000_0000_0000, "python", &[("$train.py:10 train_step", 0, 99), ("$train.py:20 update", 40, 60)]);

    let mut nvtx = PlaneBuilder::new(xplane::NVTX_PLANE);
    nvtx.line(4242, "Host Threads/4242/NVTX", &[("NVTX:outer", 5, 85), ("NVTX:inner", 15, 45)]);

    XSpace { planes: vec![cpu.plane, nvtx.plane], hostnames: vec![HOST.to_owned()], ..XSpace::default() }
}

/// Our capture of the same run: ranges per thread, marks, thread names.
fn roctx_capture() -> Trace {
    use EventKind::{Mark, Range};
    let mut trace = Trace::new(HOST, BOOT_START_NS, BOOT_START_NS + 100_000);
    trace.realtime_offset_ns = WALL_START_NS - BOOT_START_NS as i64;
    let us = |t: u64| BOOT_START_NS + t * 1_000;
    // `seq` numbers each thread's pushes in order, as the collector does; kernels name their
    // launching range by (thread, seq).
    let add = |trace: &mut Trace, kind: EventKind, tid: u64, label: &str, start_us: u64, end_us: u64| {
        let label = trace.label(label);
        let seq = if kind == Range { 1 + trace.events.iter().filter(|e| e.tid == tid && e.kind == Range).count() as u32 } else { 0 };
        trace.events.push(Event { kind, tid, end_tid: tid, start_ns: us(start_us), end_ns: us(end_us), label, depth: 0, seq });
    };
    // Thread 4242 (named): module > thunk > kernel, a second thunk, a mark.
    add(&mut trace, Range, 4242, "jit_train_step", 5, 85);
    add(&mut trace, Range, 4242, "Thunk:#hlo_op=fusion.3,unique_hlo_op_id=7#", 10, 60);
    add(&mut trace, Range, 4242, "loop_fusion_3_kernel", 15, 45);
    add(&mut trace, Range, 4242, "Thunk:#hlo_op=fusion.4,unique_hlo_op_id=8#", 62, 80);
    add(&mut trace, Mark, 4242, "step_marker", 90, 90);
    // Thread 4243 (unnamed): module > thunk > kernel.
    add(&mut trace, Range, 4243, "jit_train_step", 5, 80);
    add(&mut trace, Range, 4243, "Thunk:#hlo_op=custom-call.1,unique_hlo_op_id=12#", 10, 50);
    add(&mut trace, Range, 4243, "gemm_custom_call_1", 12, 40);
    // Thread 4300 (named, no XLA line): a range and a mark; keeps its tid as row id upstream.
    add(&mut trace, Range, 4300, "host_callback", 20, 40);
    add(&mut trace, Mark, 4300, "checkpoint", 50, 50);
    trace.thread_names.insert(4242, "xla_gpu_exec_0".to_owned());
    trace.thread_names.insert(4300, "xla_gpu_exec_2".to_owned());
    // Kernels: two launched inside fusion.3 on thread 4242 (push 2), one inside custom-call.1
    // on thread 4243 (push 2) on another queue, one launched with no range open.
    let kernel = |start_us: u64, end_us: u64, kernel_id: u64, thread_id: u64, queue_id: u64, range: u32| Dispatch {
        work: Default::default(),
        graph: Default::default(),
        start_ns: us(start_us),
        end_ns: us(end_us),
        kernel_id,
        invocation: 0,
        range,
        thread_id,
        launch_ns: 0,
        agent_id: 0x7f00,
        queue_id,
        dispatch_id: start_us,
        correlation_id: start_us,
        workgroup: [256, 1, 1],
        grid: [1 << 20, 1, 1],
    };
    trace.add_kernels(&KernelSnapshot {
        dispatches: vec![
            kernel(16, 30, 1, 4242, 0x10, 2),
            kernel(31, 44, 1, 4242, 0x10, 2),
            kernel(14, 38, 2, 4243, 0x20, 2),
            kernel(92, 95, 3, 4300, 0x10, 0),
        ],
        names: [(1, "loop_fusion_3".into()), (2, "Cijk_Alik_Bljk_HHS_BH_MT128x128x32".into()), (3, "memset_kernel".into())].into_iter().collect(),
        ..KernelSnapshot::default()
    });
    trace
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let unsafe_rows = args.iter().any(|a| a == "--unsafe-rows");
    let positional: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let (Some(out), 1) = (positional.first().map(PathBuf::from), positional.len()) else {
        eprintln!("usage: xprof_fixture <out_logdir> [--unsafe-rows]");
        return ExitCode::from(2);
    };
    // What `roctx merge` does with XLA's capture and a roctx_utils log directory of one run.
    let mut space = xplane::merge_spaces(vec![xla_capture(), xplane::standalone_xspace(&roctx_capture())]);
    if unsafe_rows {
        for line in space.planes.iter_mut().flat_map(|p| p.lines.iter_mut()) {
            line.display_id = 0;
        }
    }
    let path = match logdir::write(&out, &logdir::run_name(SystemTime::now()), HOST, &space) {
        Ok(path) => path,
        Err(e) => {
            eprintln!("xprof_fixture: cannot write under {}: {e}", out.display());
            return ExitCode::FAILURE;
        }
    };
    println!("wrote {}", path.display());
    for plane in &space.planes {
        println!("plane {:?}", plane.name);
        for line in &plane.lines {
            println!(
                "  row {:>3}  id {:>20}  {:>2} events  {}",
                xplane::row_key(line),
                line.id,
                line.events.len(),
                if line.display_name.is_empty() { &line.name } else { &line.display_name }
            );
        }
    }
    let issues = xplane::validate(&space);
    for issue in &issues {
        println!("{}: {}", if issue.error { "error" } else { "warning" }, issue.message);
    }
    if issues.iter().any(|i| i.error) && !unsafe_rows { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}
