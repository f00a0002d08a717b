//! Chrome trace-event JSON (`chrome://tracing`, Perfetto's legacy importer) from any XSpace,
//! for users without TensorBoard. One process per rendered plane, one thread per line (tid =
//! XProf's row key, so rows match what XProf shows), complete (`X`) events in microseconds with
//! their stats as args; zero-length events become instants (`i`).

use serde_json::{json, Map, Value};

use crate::xplane::row_key;
use crate::xplane_proto::{x_stat, XPlane, XSpace, XStat};

/// The trace-event document for `space`. `otherData` carries the hostnames and warnings.
pub fn from_xspace(space: &XSpace) -> Value {
    let mut events = Vec::new();
    for (index, plane) in space.planes.iter().enumerate() {
        if plane.lines.iter().all(|l| l.events.is_empty()) {
            continue;
        }
        let pid = index as u64 + 1;
        events.push(json!({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": plane.name}}));
        events.push(json!({"ph": "M", "name": "process_sort_index", "pid": pid, "args": {"sort_index": pid}}));
        for line in plane.lines.iter().filter(|l| !l.events.is_empty()) {
            let tid = row_key(line);
            let name = if line.display_name.is_empty() { &line.name } else { &line.display_name };
            events.push(json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}}));
            events.push(json!({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": tid}}));
            for e in &line.events {
                let meta = plane.event_metadata.get(&e.metadata_id);
                let name = meta.map_or("", |m| if m.display_name.is_empty() { &m.name } else { &m.display_name });
                // ns + ps -> us, as f64 with ns precision kept for sub-ms traces.
                let ts_us = line.timestamp_ns as f64 / 1e3 + e.offset_ps() as f64 / 1e6;
                let mut args = Map::new();
                for s in meta.map(|m| m.stats.as_slice()).unwrap_or_default().iter().chain(&e.stats) {
                    if let Some((k, v)) = stat_arg(plane, s) {
                        args.insert(k, v);
                    }
                }
                let mut ev = json!({"name": name, "pid": pid, "tid": tid, "ts": ts_us, "args": args});
                if e.duration_ps == 0 {
                    ev["ph"] = json!("i");
                    ev["s"] = json!("t");
                } else {
                    ev["ph"] = json!("X");
                    ev["dur"] = json!(e.duration_ps as f64 / 1e6);
                }
                events.push(ev);
            }
        }
    }
    json!({
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {"hostnames": space.hostnames, "warnings": space.warnings, "producer": "roctx_utils"},
    })
}

/// A stat as a JSON arg; refs resolve to the referenced metadata's name, as XProf shows them.
fn stat_arg(plane: &XPlane, stat: &XStat) -> Option<(String, Value)> {
    let key = plane.stat_metadata.get(&stat.metadata_id)?.name.clone();
    let value = match stat.value.as_ref()? {
        x_stat::Value::DoubleValue(v) => json!(v),
        x_stat::Value::Uint64Value(v) => json!(v),
        x_stat::Value::Int64Value(v) => json!(v),
        x_stat::Value::StrValue(v) => json!(v),
        // CAST: metadata ids are non-negative.
        x_stat::Value::RefValue(r) => json!(plane.stat_metadata.get(&(*r as i64)).map_or("", |m| m.name.as_str())),
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
        t.events.push(Event { kind: EventKind::Range, tid: 5, end_tid: 5, start_ns: 2_000, end_ns: 6_000, label: outer, depth: 0 });
        t.events.push(Event { kind: EventKind::Mark, tid: 5, end_tid: 5, start_ns: 3_000, end_ns: 3_000, label: mark, depth: 0 });
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
}
