//! Chrome trace-event JSON (`chrome://tracing`, Perfetto's legacy importer) from any XSpace,
//! for users without TensorBoard. One process per rendered plane, one thread per line (tid =
//! XProf's row key, so rows match what XProf shows), complete (`X`) events in microseconds with
//! their stats as args; zero-length events become instants (`i`).
//!
//! Owns the trace-event layout. [`write_xspace`] streams it: each event is serialized straight
//! to the writer and dropped, so converting takes the decoded XSpace plus a constant, however
//! many events there are (one `serde_json::Value` per event cost ~2 KB each, 9.6 GB for a 10 MB
//! file of 5 M events). [`RunWriter`] does the same for the files of a multi-process run, one
//! space at a time, as one document whose processes are grouped and named by file.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};

use serde::Serialize;
use serde_json::Value;

use crate::xplane::{self, row_key, time_base, FLOW_CONSUMER_STAT, FLOW_PRODUCER_STAT};
use crate::xplane_proto::{x_stat, XLine, XPlane, XSpace, XStat};

/// The trace-event document for `space`, as a JSON value. `otherData` carries the hostnames and
/// warnings. Holds the whole document in memory: for files, use [`write_xspace`].
pub fn from_xspace(space: &XSpace) -> Value {
    let mut bytes = Vec::new();
    // Writing into a Vec cannot fail, and what write_xspace writes is JSON.
    let _ = write_xspace(space, &mut bytes);
    serde_json::from_slice(&bytes).unwrap_or(Value::Null)
}

/// Writes the trace-event document for `space` (see [`from_xspace`]) to `out`, one event at a
/// time, and returns how many entries `traceEvents` got. Pass a buffered writer.
pub fn write_xspace<W: Write>(space: &XSpace, out: W) -> io::Result<u64> {
    let mut events = Events::start(out)?;
    events.space(space, &Placement { pid_base: 0, prefix: "", shift_ns: 0 })?;
    events.finish(&OtherData { hostnames: &space.hostnames, warnings: &space.warnings, producer: PRODUCER, processes: &[] })
}

/// Pids of the k-th process of a [`RunWriter`] start at `k * PID_STRIDE + 1` (more planes than
/// that take several strides), so a rank's pids read as its number.
pub const PID_STRIDE: u64 = 100_000;

/// One trace-event document for several XSpaces, one per process of a job (the files of a run),
/// written as they are added, so that only one of them needs to be decoded at a time: each
/// space's planes become processes as in [`write_xspace`], named `<process> <plane>`
/// (`h_rank3 /host:CPU`), with pids from `k * PID_STRIDE + 1` for the k-th space, and line
/// times moved onto the first session start known ([`time_base`], as
/// [`xplane::merge_spaces`](crate::xplane::merge_spaces) aligns spaces). `otherData` has the
/// union of the hostnames, each space's warnings behind `<process>: `, and the process names.
///
/// [`RunWriter::finish`] ends the document; a writer dropped before that leaves it unfinished.
#[derive(Debug)]
pub struct RunWriter<W: Write> {
    events: Events<W>,
    next_pid_base: u64,
    base: Option<i64>,
    hostnames: Vec<String>,
    /// The hostnames' set (a linear search made 160,000 hostnames take 22 s).
    seen_hosts: std::collections::HashSet<String>,
    warnings: Vec<String>,
    processes: Vec<String>,
}

impl<W: Write> RunWriter<W> {
    /// Starts the document on `out` (pass a buffered writer).
    pub fn new(out: W) -> io::Result<RunWriter<W>> {
        let events = Events::start(out)?;
        Ok(RunWriter { events, next_pid_base: 0, base: None, hostnames: Vec::new(), seen_hosts: Default::default(), warnings: Vec::new(), processes: Vec::new() })
    }

    /// Writes `space`'s events as those of process `name` (e.g. the file's stem).
    pub fn add(&mut self, name: &str, space: &XSpace) -> io::Result<()> {
        let raw = time_base(space);
        // Files are read one at a time: the first plausible start is the base; a start that is
        // negative or a week away from it is damage and moves nothing.
        let from = raw.filter(|&b| xplane::plausible_base(b, self.base));
        if let (Some(start), None) = (raw, from) {
            self.warnings.push(format!("{name}: {}", xplane::implausible_base_warning(start)));
        }
        if self.base.is_none() {
            self.base = from;
        }
        let shift_ns = match (from, self.base) {
            (Some(from), Some(to)) => from.saturating_sub(to),
            _ => 0,
        };
        let pid_base = self.next_pid_base;
        // CAST: a plane count fits u64.
        let strides = space.planes.len() as u64 / PID_STRIDE + 1;
        self.next_pid_base = pid_base.saturating_add(strides.saturating_mul(PID_STRIDE));
        self.events.space(space, &Placement { pid_base, prefix: name, shift_ns })?;
        for h in &space.hostnames {
            if self.seen_hosts.insert(h.clone()) {
                self.hostnames.push(h.clone());
            }
        }
        self.warnings.extend(space.warnings.iter().map(|w| format!("{name}: {w}")));
        self.processes.push(name.to_owned());
        Ok(())
    }

    /// Ends the document and returns how many entries `traceEvents` got.
    pub fn finish(self) -> io::Result<u64> {
        let other = OtherData { hostnames: &self.hostnames, warnings: &self.warnings, producer: PRODUCER, processes: &self.processes };
        self.events.finish(&other)
    }
}

/// `otherData.producer`.
const PRODUCER: &str = "roctx_utils";

/// Where one space's planes go in the document.
struct Placement<'a> {
    /// Plane `i` is process `pid_base + i + 1`.
    pid_base: u64,
    /// Process names are `<prefix> <plane name>`; just the plane name when empty.
    prefix: &'a str,
    /// Added to every line's timestamp, to put the space on the document's time base.
    shift_ns: i64,
}

/// The `traceEvents` array being written: commas between entries, their count, and the flow
/// (arrow) ids given out so far.
#[derive(Debug)]
struct Events<W: Write> {
    out: W,
    count: u64,
    flow_ids: u64,
}

impl<W: Write> Events<W> {
    fn start(mut out: W) -> io::Result<Events<W>> {
        out.write_all(b"{\"traceEvents\":[")?;
        Ok(Events { out, count: 0, flow_ids: 0 })
    }

    fn push(&mut self, event: &TraceEvent<'_>) -> io::Result<()> {
        if self.count > 0 {
            self.out.write_all(b",")?;
        }
        serde_json::to_writer(&mut self.out, event)?;
        self.count += 1;
        Ok(())
    }

    /// One process per plane with events, one thread per line.
    fn space(&mut self, space: &XSpace, at: &Placement<'_>) -> io::Result<()> {
        let producers = flow_producers(space, at);
        for (index, plane) in space.planes.iter().enumerate() {
            if plane.lines.iter().all(|l| l.events.is_empty()) {
                continue;
            }
            let pid = pid(at, index);
            let process = if at.prefix.is_empty() { Cow::Borrowed(plane.name.as_str()) } else { Cow::Owned(format!("{} {}", at.prefix, plane.name)) };
            self.push(&TraceEvent::meta("process_name", pid, None, Args::Name { name: &process }))?;
            self.push(&TraceEvent::meta("process_sort_index", pid, None, Args::SortIndex { sort_index: pid }))?;
            for line in plane.lines.iter().filter(|l| !l.events.is_empty()) {
                let tid = row_key(line);
                let name = if line.display_name.is_empty() { &line.name } else { &line.display_name };
                self.push(&TraceEvent::meta("thread_name", pid, Some(tid), Args::Name { name }))?;
                self.push(&TraceEvent::meta("thread_sort_index", pid, Some(tid), Args::SortIndex { sort_index: u64::from(tid) }))?;
                for e in &line.events {
                    let meta = plane.event_metadata.get(&e.metadata_id);
                    let name = meta.map_or("", |m| if m.display_name.is_empty() { &m.name } else { &m.display_name });
                    let ts_us = ts_us(line, at, e.offset_ps());
                    let mut args = BTreeMap::new();
                    for s in meta.map(|m| m.stats.as_slice()).unwrap_or_default().iter().chain(&e.stats) {
                        if let Some((k, v)) = stat_arg(plane, s) {
                            args.insert(k, v);
                        }
                    }
                    let (ph, dur, scope) = if e.duration_ps == 0 { ("i", None, Some("t")) } else { ("X", Some(e.duration_ps as f64 / 1e6), None) };
                    self.push(&TraceEvent { ph, name, pid, tid: Some(tid), ts: Some(ts_us), dur, s: scope, args: Args::Stats(args), ..TraceEvent::NONE })?;
                    // A kernel whose launching range is in this space: an arrow from the range.
                    if let Some(&(p_pid, p_tid, p_ts)) = flow_id(plane, &e.stats, FLOW_CONSUMER_STAT).and_then(|id| producers.get(&id)) {
                        self.flow_ids += 1;
                        let id = self.flow_ids;
                        let arrow = |ph, pid, tid, ts, bp| TraceEvent { ph, name: "launch", cat: Some("launch"), id: Some(id), bp, pid, tid: Some(tid), ts: Some(ts), args: Args::None {}, ..TraceEvent::NONE };
                        self.push(&arrow("s", p_pid, p_tid, p_ts, None))?;
                        self.push(&arrow("f", pid, tid, ts_us, Some("e")))?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Ends the document with `other` and returns the entry count.
    fn finish(mut self, other: &OtherData<'_>) -> io::Result<u64> {
        self.out.write_all(b"],\"displayTimeUnit\":\"ns\",\"otherData\":")?;
        serde_json::to_writer(&mut self.out, other)?;
        self.out.write_all(b"}")?;
        Ok(self.count)
    }
}

/// The pid of plane `index` of a space placed `at`.
fn pid(at: &Placement<'_>, index: usize) -> u64 {
    // CAST: an index into a Vec fits u64.
    at.pid_base.saturating_add(index as u64 + 1)
}

/// Where an event at `offset_ps` on `line` is, in us on the document's time base: ns + ps -> us,
/// as f64 with ns precision kept for sub-ms traces.
fn ts_us(line: &XLine, at: &Placement<'_>, offset_ps: i64) -> f64 {
    line.timestamp_ns.saturating_add(at.shift_ns) as f64 / 1e3 + offset_ps as f64 / 1e6
}

/// The flow id an event's `stat_name` stat carries, if any.
fn flow_id(plane: &XPlane, stats: &[XStat], stat_name: &str) -> Option<u64> {
    stats.iter().find_map(|s| match (plane.stat_metadata.get(&s.metadata_id), &s.value) {
        (Some(m), Some(x_stat::Value::Uint64Value(v))) if m.name == stat_name => Some(*v),
        _ => None,
    })
}

/// Where each flow producer (a ROCTX range that launched kernels) of a space placed `at` is
/// drawn: (pid, tid, ts us). Memory proportional to the ranges that launched kernels.
fn flow_producers(space: &XSpace, at: &Placement<'_>) -> HashMap<u64, (u64, u32, f64)> {
    let mut out = HashMap::new();
    for (index, plane) in space.planes.iter().enumerate() {
        if !plane.stat_metadata.values().any(|m| m.name == FLOW_PRODUCER_STAT) {
            continue;
        }
        for line in &plane.lines {
            for e in &line.events {
                if let Some(id) = flow_id(plane, &e.stats, FLOW_PRODUCER_STAT) {
                    out.insert(id, (pid(at, index), row_key(line), ts_us(line, at, e.offset_ps())));
                }
            }
        }
    }
    out
}

/// One entry of `traceEvents`.
#[derive(Serialize)]
struct TraceEvent<'a> {
    ph: &'static str,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    cat: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bp: Option<&'static str>,
    pid: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    tid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ts: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    s: Option<&'static str>,
    args: Args<'a>,
}

impl<'a> TraceEvent<'a> {
    const NONE: TraceEvent<'static> =
        TraceEvent { ph: "", name: "", cat: None, id: None, bp: None, pid: 0, tid: None, ts: None, dur: None, s: None, args: Args::None {} };

    /// A metadata (`M`) event: a process or thread name or sort index.
    fn meta(name: &'static str, pid: u64, tid: Option<u32>, args: Args<'a>) -> TraceEvent<'a> {
        TraceEvent { ph: "M", name, pid, tid, args, ..TraceEvent::NONE }
    }
}

#[derive(Serialize)]
#[serde(untagged)]
enum Args<'a> {
    /// No args (`{}`).
    None {},
    Name { name: &'a str },
    SortIndex { sort_index: u64 },
    Stats(BTreeMap<&'a str, Arg<'a>>),
}

/// A stat's value as an arg.
#[derive(Serialize)]
#[serde(untagged)]
enum Arg<'a> {
    Double(f64),
    Unsigned(u64),
    Signed(i64),
    Text(&'a str),
}

#[derive(Serialize)]
struct OtherData<'a> {
    hostnames: &'a [String],
    warnings: &'a [String],
    producer: &'static str,
    /// The processes of a [`RunWriter`]; left out for one space, whose document it does not
    /// change.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    processes: &'a [String],
}

/// A stat as a JSON arg; refs resolve to the referenced metadata's name, as XProf shows them.
fn stat_arg<'a>(plane: &'a XPlane, stat: &'a XStat) -> Option<(&'a str, Arg<'a>)> {
    let key = plane.stat_metadata.get(&stat.metadata_id)?.name.as_str();
    let value = match stat.value.as_ref()? {
        x_stat::Value::DoubleValue(v) => Arg::Double(*v),
        x_stat::Value::Uint64Value(v) => Arg::Unsigned(*v),
        x_stat::Value::Int64Value(v) => Arg::Signed(*v),
        x_stat::Value::StrValue(v) => Arg::Text(v),
        // A ref past i64::MAX names no metadata: it shows as "", like any dangling ref.
        x_stat::Value::RefValue(r) => Arg::Text(i64::try_from(*r).ok().and_then(|r| plane.stat_metadata.get(&r)).map_or("", |m| m.name.as_str())),
        x_stat::Value::BytesValue(_) | x_stat::Value::CompressedStrValue(_) => return None,
    };
    Some((key, value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{xplane, Event, EventKind, Trace};

    #[test]
    fn ranges_become_complete_events_with_nvtx_range_args_and_marks_instants() {
        let mut t = Trace::new("h", 1_000, 9_000);
        let outer = t.label("outer");
        let mark = t.label("tick");
        t.events.push(Event { kind: EventKind::Range, tid: 5, end_tid: 5, start_ns: 2_000, end_ns: 6_000, label: outer, depth: 0, seq: 0 });
        t.events.push(Event { kind: EventKind::Mark, tid: 5, end_tid: 5, start_ns: 3_000, end_ns: 3_000, label: mark, depth: 0, seq: 0 });
        t.thread_names.insert(5, "worker".into());
        t.warnings.push("w".into());
        let doc = from_xspace(&xplane::standalone_xspace(&t));
        let evs = doc["traceEvents"].as_array().unwrap();
        let x = evs.iter().find(|e| e["name"] == "outer").unwrap();
        assert_eq!(x["ph"], "X");
        assert_eq!(x["ts"], 1.0); // us since the session start (1_000 ns)
        assert_eq!(x["dur"], 4.0);
        assert_eq!(x["args"]["nvtx_range"], "outer");
        let i = evs.iter().find(|e| e["name"] == "tick").unwrap();
        assert_eq!(i["ph"], "i");
        let thread = evs.iter().find(|e| e["name"] == "thread_name").unwrap();
        assert_eq!(thread["args"]["name"], "Host Threads/5/ROCTX (worker)");
        assert_eq!(doc["otherData"]["warnings"][0], "w");
    }

    #[test]
    fn the_streamed_document_is_the_json_value_and_counts_its_entries() {
        let mut t = Trace::new("h", 1_000, 9_000);
        let a = t.label("a");
        for i in 0..10 {
            t.events.push(Event { kind: EventKind::Range, tid: 5 + i % 2, end_tid: 5 + i % 2, start_ns: 2_000 + i * 10, end_ns: 2_005 + i * 10, label: a, depth: 0, seq: 0 });
        }
        let space = xplane::standalone_xspace(&t);
        let mut bytes = Vec::new();
        let count = write_xspace(&space, &mut bytes).unwrap();
        let doc: Value = serde_json::from_slice(&bytes).unwrap();
        // 2 process entries, 2 per thread, 10 events.
        assert_eq!(count, 2 + 2 * 2 + 10);
        assert_eq!(doc["traceEvents"].as_array().unwrap().len() as u64, count);
        assert_eq!(doc, from_xspace(&space));
        assert_eq!(doc["displayTimeUnit"], "ns");
        assert_eq!(doc["otherData"]["producer"], "roctx_utils");
        let thread = doc["traceEvents"].as_array().unwrap().iter().find(|e| e["name"] == "thread_sort_index").unwrap();
        assert_eq!((thread["ph"].as_str(), thread["tid"].as_u64(), thread["args"]["sort_index"].as_u64()), (Some("M"), Some(1), Some(1)));
        assert!(thread.get("ts").is_none());
    }

    /// Rank `rank` of a job: the same threads as every rank, its session started `rank` us
    /// later, and a kernel launched by its first range.
    fn rank_space(rank: u64) -> XSpace {
        let mut t = Trace::new(&format!("node{}", rank / 2), 1_000, 9_000);
        t.realtime_offset_ns = 1_000_000 + 1_000 * rank as i64;
        let a = t.label("step");
        t.events.push(Event { kind: EventKind::Range, tid: 5, end_tid: 5, start_ns: 2_000, end_ns: 4_000, label: a, depth: 0, seq: 0 });
        t.kernels.push(crate::model::KernelEvent { start_ns: 2_500, end_ns: 3_000, gpu: 0, stream: 1, name: "k".into(), launched_by: Some(0), ..Default::default() });
        t.warnings.push("w".into());
        xplane::standalone_xspace(&t)
    }

    #[test]
    fn a_run_of_several_processes_is_one_document_with_a_process_group_per_file() {
        let mut bytes = Vec::new();
        let mut run = RunWriter::new(&mut bytes).unwrap();
        for rank in 0..3 {
            run.add(&format!("h_rank{rank}"), &rank_space(rank)).unwrap();
        }
        let count = run.finish().unwrap();
        let doc: Value = serde_json::from_slice(&bytes).unwrap();
        let events = doc["traceEvents"].as_array().unwrap();
        assert_eq!(events.len() as u64, count);
        let named = |kind: &str| -> Vec<(u64, String)> {
            events.iter().filter(|e| e["name"] == kind).map(|e| (e["pid"].as_u64().unwrap(), e["args"]["name"].as_str().unwrap().to_owned())).collect()
        };
        let processes = named("process_name");
        let expected: Vec<(u64, String)> = (0..3u64)
            .flat_map(|k| [(k * PID_STRIDE + 1, format!("h_rank{k} /host:CPU")), (k * PID_STRIDE + 2, format!("h_rank{k} /device:GPU:0"))])
            .collect();
        assert_eq!(processes, expected);
        // The same thread in every rank, each in its own process.
        let threads: Vec<u64> = named("thread_name").iter().filter(|(_, n)| n == "Host Threads/5/ROCTX").map(|(pid, _)| *pid).collect();
        assert_eq!(threads, [1, PID_STRIDE + 1, 2 * PID_STRIDE + 1]);
        // On rank 0's time base: each later rank's range 1 us later.
        let steps: Vec<(u64, f64)> = events.iter().filter(|e| e["name"] == "step").map(|e| (e["pid"].as_u64().unwrap(), e["ts"].as_f64().unwrap())).collect();
        assert_eq!(steps, [(1, 1.0), (PID_STRIDE + 1, 2.0), (2 * PID_STRIDE + 1, 3.0)]);
        // Each kernel's arrow starts at its own rank's range; arrow ids never repeat.
        let arrows: Vec<(&str, u64, u64)> = events.iter().filter(|e| e["cat"] == "launch").map(|e| (e["ph"].as_str().unwrap(), e["id"].as_u64().unwrap(), e["pid"].as_u64().unwrap())).collect();
        let expected: Vec<(&str, u64, u64)> = (0..3u64).flat_map(|k| [("s", k + 1, k * PID_STRIDE + 1), ("f", k + 1, k * PID_STRIDE + 2)]).collect();
        assert_eq!(arrows, expected);
        assert_eq!(doc["otherData"]["hostnames"], serde_json::json!(["node0", "node1"]));
        assert_eq!(doc["otherData"]["warnings"], serde_json::json!(["h_rank0: w", "h_rank1: w", "h_rank2: w"]));
        assert_eq!(doc["otherData"]["processes"], serde_json::json!(["h_rank0", "h_rank1", "h_rank2"]));
    }

    #[test]
    fn a_run_of_files_with_many_hostnames_keeps_each_once_in_order() {
        // Issue 25, item 9: the union was a linear search per hostname (160,000 took 22 s).
        let mut a = rank_space(0);
        a.hostnames = (0..100_000).map(|i| format!("h{i}")).collect();
        let mut b = rank_space(1);
        b.hostnames = (50_000..150_000).map(|i| format!("h{i}")).collect();
        let mut bytes = Vec::new();
        let mut run = RunWriter::new(&mut bytes).unwrap();
        run.add("a", &a).unwrap();
        run.add("b", &b).unwrap();
        assert_eq!(run.hostnames.len(), 150_000);
        assert!(run.hostnames.iter().zip(0..).all(|(h, i)| *h == format!("h{i}")));
        run.finish().unwrap();
    }

    #[test]
    fn a_damaged_first_file_does_not_move_the_run() {
        // Issue 25, item 15: a start of -1 became the base, and every later file's times moved
        // by 1.76e18 ns (negative timestamps after conversion).
        let mut damaged = rank_space(0);
        for p in damaged.planes.iter_mut().filter(|p| p.name == crate::xplane::TASK_ENV_PLANE) {
            for s in &mut p.stats {
                s.value = Some(x_stat::Value::Int64Value(-1));
            }
        }
        let mut bytes = Vec::new();
        let mut run = RunWriter::new(&mut bytes).unwrap();
        run.add("bad", &damaged).unwrap();
        run.add("h_rank1", &rank_space(1)).unwrap();
        run.finish().unwrap();
        let doc: Value = serde_json::from_slice(&bytes).unwrap();
        let steps: Vec<f64> = doc["traceEvents"].as_array().unwrap().iter().filter(|e| e["name"] == "step").map(|e| e["ts"].as_f64().unwrap()).collect();
        assert!(steps.iter().all(|&ts| (0.0..1e6).contains(&ts)), "{steps:?}");
        assert!(doc["otherData"]["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().starts_with("bad: session start -1 ns")), "{}", doc["otherData"]);
    }

    #[test]
    fn a_single_space_document_has_no_process_list_or_prefix() {
        let doc = from_xspace(&rank_space(0));
        assert!(doc["otherData"].get("processes").is_none(), "{doc}");
        let names: Vec<&str> = doc["traceEvents"].as_array().unwrap().iter().filter(|e| e["name"] == "process_name").map(|e| e["args"]["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["/host:CPU", "/device:GPU:0"]);
    }

    #[test]
    fn a_failing_writer_stops_the_conversion_with_its_error() {
        struct Full(usize);
        impl Write for Full {
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                if self.0 < buf.len() {
                    return Err(io::Error::other("disk full"));
                }
                self.0 -= buf.len();
                Ok(buf.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut t = Trace::new("h", 0, 100);
        let a = t.label("a");
        t.events.push(Event { kind: EventKind::Range, tid: 1, end_tid: 1, start_ns: 1, end_ns: 2, label: a, depth: 0, seq: 0 });
        let err = write_xspace(&xplane::standalone_xspace(&t), Full(100)).unwrap_err();
        assert_eq!(err.to_string(), "disk full");
    }
}
