//! Chrome trace-event JSON (`chrome://tracing`, Perfetto's legacy importer) from any XSpace,
//! for users without TensorBoard. One process per rendered plane, one thread per line (tid =
//! XProf's row key, so rows match what XProf shows), complete (`X`) events in microseconds with
//! their stats as args; zero-length events become instants (`i`).
//!
//! Owns the trace-event layout. [`write_xspace`] streams it: each event is serialized straight
//! to the writer and dropped, so converting takes the decoded XSpace plus a constant, however
//! many events there are (one `serde_json::Value` per event cost ~2 KB each, 9.6 GB for a 10 MB
//! file of 5 M events).

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};

use serde::Serialize;
use serde_json::Value;

use crate::xplane::{row_key, FLOW_CONSUMER_STAT, FLOW_PRODUCER_STAT};
use crate::xplane_proto::{x_stat, XPlane, XSpace, XStat};

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
pub fn write_xspace<W: Write>(space: &XSpace, mut out: W) -> io::Result<u64> {
    let producers = flow_producers(space);
    let mut events = Events { out: &mut out, count: 0 };
    let mut flow_ids = 0u64;
    events.out.write_all(b"{\"traceEvents\":[")?;
    for (index, plane) in space.planes.iter().enumerate() {
        if plane.lines.iter().all(|l| l.events.is_empty()) {
            continue;
        }
        let pid = index as u64 + 1;
        events.push(&TraceEvent::meta("process_name", pid, None, Args::Name { name: &plane.name }))?;
        events.push(&TraceEvent::meta("process_sort_index", pid, None, Args::SortIndex { sort_index: pid }))?;
        for line in plane.lines.iter().filter(|l| !l.events.is_empty()) {
            let tid = row_key(line);
            let name = if line.display_name.is_empty() { &line.name } else { &line.display_name };
            events.push(&TraceEvent::meta("thread_name", pid, Some(tid), Args::Name { name }))?;
            events.push(&TraceEvent::meta("thread_sort_index", pid, Some(tid), Args::SortIndex { sort_index: u64::from(tid) }))?;
            for e in &line.events {
                let meta = plane.event_metadata.get(&e.metadata_id);
                let name = meta.map_or("", |m| if m.display_name.is_empty() { &m.name } else { &m.display_name });
                // ns + ps -> us, as f64 with ns precision kept for sub-ms traces.
                let ts_us = line.timestamp_ns as f64 / 1e3 + e.offset_ps() as f64 / 1e6;
                let mut args = BTreeMap::new();
                for s in meta.map(|m| m.stats.as_slice()).unwrap_or_default().iter().chain(&e.stats) {
                    if let Some((k, v)) = stat_arg(plane, s) {
                        args.insert(k, v);
                    }
                }
                let (ph, dur, scope) = if e.duration_ps == 0 { ("i", None, Some("t")) } else { ("X", Some(e.duration_ps as f64 / 1e6), None) };
                events.push(&TraceEvent { ph, name, pid, tid: Some(tid), ts: Some(ts_us), dur, s: scope, args: Args::Stats(args), ..TraceEvent::NONE })?;
                // A kernel whose launching range is in this space: an arrow from the range.
                if let Some(&(p_pid, p_tid, p_ts)) = flow_id(plane, &e.stats, FLOW_CONSUMER_STAT).and_then(|id| producers.get(&id)) {
                    flow_ids += 1;
                    let arrow = |ph, pid, tid, ts, bp| TraceEvent { ph, name: "launch", cat: Some("launch"), id: Some(flow_ids), bp, pid, tid: Some(tid), ts: Some(ts), args: Args::None {}, ..TraceEvent::NONE };
                    events.push(&arrow("s", p_pid, p_tid, p_ts, None))?;
                    events.push(&arrow("f", pid, tid, ts_us, Some("e")))?;
                }
            }
        }
    }
    let count = events.count;
    out.write_all(b"],\"displayTimeUnit\":\"ns\",\"otherData\":")?;
    let other = OtherData { hostnames: &space.hostnames, warnings: &space.warnings, producer: "roctx_utils" };
    serde_json::to_writer(&mut out, &other)?;
    out.write_all(b"}")?;
    Ok(count)
}

/// The `traceEvents` array being written: commas between entries, and their count.
struct Events<'w, W: Write> {
    out: &'w mut W,
    count: u64,
}

impl<W: Write> Events<'_, W> {
    fn push(&mut self, event: &TraceEvent<'_>) -> io::Result<()> {
        if self.count > 0 {
            self.out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *self.out, event)?;
        self.count += 1;
        Ok(())
    }
}

/// The flow id an event's `stat_name` stat carries, if any.
fn flow_id(plane: &XPlane, stats: &[XStat], stat_name: &str) -> Option<u64> {
    stats.iter().find_map(|s| match (plane.stat_metadata.get(&s.metadata_id), &s.value) {
        (Some(m), Some(x_stat::Value::Uint64Value(v))) if m.name == stat_name => Some(*v),
        _ => None,
    })
}

/// Where each flow producer (a ROCTX range that launched kernels) is drawn: (pid, tid, ts us).
/// Memory proportional to the ranges that launched kernels.
fn flow_producers(space: &XSpace) -> HashMap<u64, (u64, u32, f64)> {
    let mut out = HashMap::new();
    for (index, plane) in space.planes.iter().enumerate() {
        if !plane.stat_metadata.values().any(|m| m.name == FLOW_PRODUCER_STAT) {
            continue;
        }
        for line in &plane.lines {
            for e in &line.events {
                if let Some(id) = flow_id(plane, &e.stats, FLOW_PRODUCER_STAT) {
                    let ts_us = line.timestamp_ns as f64 / 1e3 + e.offset_ps() as f64 / 1e6;
                    out.insert(id, (index as u64 + 1, row_key(line), ts_us));
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
