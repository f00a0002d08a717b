//! What an XSpace holds and how XProf will draw it, as `roctx inspect` reports it.
//!
//! Owns the [`Summary`] of one XSpace: planes (and whether XProf renders them), lines in stored
//! order with their XProf row key and nesting depth, the XSpace's own warnings and errors, and
//! the [`xplane::validate`] findings. Pure computation over a decoded XSpace: never reads
//! files, never prints (the CLI does both). Serializes with stable keys (field order) for
//! `roctx inspect --json`.
//!
//! Size: one [`LineSummary`] per line and one [`Finding`] per kind of problem and plane (a
//! problem repeated on every event is one finding with its `count`), so a summary is
//! proportional to the lines, not the events.

use std::borrow::Cow;
use std::io::{self, Write};

use serde::Serialize;

use crate::xplane;
use crate::xplane_proto::{XLine, XPlane, XSpace};

/// How many distinct event names a [`LineSummary`] keeps, in order of first appearance.
pub const EVENT_NAME_SAMPLES: usize = 3;

/// One XSpace, summarized.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// `XSpace.hostnames`.
    pub hostnames: Vec<String>,
    /// Planes in stored order.
    pub planes: Vec<PlaneSummary>,
    /// `XSpace.warnings` (what the producer dropped or capped).
    pub xspace_warnings: Vec<String>,
    /// `XSpace.errors`.
    pub xspace_errors: Vec<String>,
    /// What [`xplane::validate`] found, plus a warning for a space with no planes: one finding
    /// per kind of problem and plane.
    pub issues: Vec<Finding>,
}

/// One plane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlaneSummary {
    /// `XPlane.name`.
    pub name: String,
    /// `XPlane.id`.
    pub id: i64,
    /// Number of lines, with or without events.
    pub line_count: usize,
    /// Number of events over all lines.
    pub event_count: usize,
    /// Whether XProf's trace viewer shows this plane at all (see [`is_rendered`]).
    pub rendered: bool,
    /// Lines in stored order.
    pub lines: Vec<LineSummary>,
}

/// One line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineSummary {
    /// XProf's row key ([`xplane::row_key`]): lines with events that share it are drawn as one row.
    pub row: u32,
    /// `XLine.id`.
    pub id: i64,
    /// `XLine.display_id` (0: unset).
    pub display_id: i64,
    /// `XLine.name`.
    pub name: String,
    /// `XLine.display_name` (empty: unset; XProf then shows `name`).
    pub display_name: String,
    /// Number of events.
    pub event_count: usize,
    /// Nesting depth by time containment ([`xplane::nesting_depth`]; 0 for no events).
    pub depth: usize,
    /// The first [`EVENT_NAME_SAMPLES`] distinct event names, as XProf shows them.
    pub event_names: Vec<String>,
}

/// How bad a [`Finding`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// XProf would show wrong data (row collisions, missing metadata, ...).
    Error,
    /// Structural, or a surprise worth a look (an unrendered plane, no planes at all).
    Warning,
}

/// One validation finding: a kind of problem in one plane, with how often it occurs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Error or warning.
    pub severity: Severity,
    /// What and where (for a repeated problem: how often, and where first).
    pub message: String,
    /// How many occurrences the finding stands for (1 for a single one).
    pub count: usize,
}

impl Summary {
    /// Summarizes `space`.
    pub fn of(space: &XSpace) -> Summary {
        let mut issues = Vec::new();
        if space.planes.is_empty() {
            issues.push(Finding { severity: Severity::Warning, message: "no planes (an empty file, or not written by a profiler)".to_owned(), count: 1 });
        }
        issues.extend(xplane::validate(space).into_iter().map(|i| Finding {
            severity: if i.error { Severity::Error } else { Severity::Warning },
            message: i.message,
            count: i.count,
        }));
        Summary {
            hostnames: space.hostnames.clone(),
            planes: space.planes.iter().map(|p| plane_summary(space, p)).collect(),
            xspace_warnings: space.warnings.clone(),
            xspace_errors: space.errors.clone(),
            issues,
        }
    }

    /// Number of problems of `severity`: occurrences, not findings (a finding of 5 missing
    /// metadata counts 5).
    pub fn count(&self, severity: Severity) -> usize {
        self.issues.iter().filter(|i| i.severity == severity).map(|i| i.count).sum()
    }

    /// Whether validation found no errors (warnings allowed).
    pub fn is_valid(&self) -> bool {
        self.count(Severity::Error) == 0
    }

    /// Lines over all planes.
    pub fn line_count(&self) -> usize {
        self.planes.iter().map(|p| p.line_count).sum()
    }

    /// Events over all planes.
    pub fn event_count(&self) -> usize {
        self.planes.iter().map(|p| p.event_count).sum()
    }
}

/// The files of one run (a multi-process job: one file per process), as an inspect report names
/// them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// The run directory's name (`<logdir>/plugins/profile/<run>`).
    pub name: String,
    /// Each file's process, in the report's file order: its name without `.xplane.pb`, which
    /// XProf shows as the host.
    pub processes: Vec<String>,
}

/// Writes `roctx inspect --json`'s document for `files` (path, summary) to `out`, pretty-printed
/// and streamed (no intermediate JSON value, which cost ~10x the summary):
/// `{"error_count", "files": [{"path", <Summary fields>}], "warning_count"}`.
pub fn write_json_report<W: Write>(files: &[(String, Summary)], out: W) -> io::Result<()> {
    write_json_run_report(None, files, out)
}

/// [`write_json_report`], and with `run` (the files are the processes of one run) two more keys
/// between `"files"` and `"warning_count"`: `"processes"` (the process of each file, in file
/// order) and `"run"` (its name). Without `run` the document is [`write_json_report`]'s.
pub fn write_json_run_report<W: Write>(run: Option<&Run>, files: &[(String, Summary)], out: W) -> io::Result<()> {
    #[derive(Serialize)]
    struct File<'a> {
        path: &'a str,
        #[serde(flatten)]
        summary: &'a Summary,
    }
    #[derive(Serialize)]
    struct Report<'a> {
        error_count: usize,
        files: Vec<File<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        processes: Option<&'a [String]>,
        #[serde(skip_serializing_if = "Option::is_none")]
        run: Option<&'a str>,
        warning_count: usize,
    }
    let count = |severity| files.iter().map(|(_, s)| s.count(severity)).sum::<usize>();
    let report = Report {
        error_count: count(Severity::Error),
        files: files.iter().map(|(path, summary)| File { path, summary }).collect(),
        processes: run.map(|r| r.processes.as_slice()),
        run: run.map(|r| r.name.as_str()),
        warning_count: count(Severity::Warning),
    };
    serde_json::to_writer_pretty(out, &report).map_err(io::Error::from)
}

/// Whether XProf's trace viewer shows `plane` of `space` (xspace_and_xprof.md 7.1): planes named
/// `/host:CPU*`, `/device:GPU:*`, `/device:CUSTOM:*`, and TPU planes when there is no GPU plane.
/// Every other plane, an unmerged `/host:ROCTX` included, is silently invisible.
pub fn is_rendered(space: &XSpace, plane: &XPlane) -> bool {
    let gpu = |name: &str| name.starts_with("/device:GPU:");
    let name = plane.name.as_str();
    name.starts_with(xplane::HOST_PLANE)
        || gpu(name)
        || name.starts_with("/device:CUSTOM:")
        || (name.starts_with("/device:TPU:") && !space.planes.iter().any(|p| gpu(&p.name)))
}

fn plane_summary(space: &XSpace, plane: &XPlane) -> PlaneSummary {
    PlaneSummary {
        name: plane.name.clone(),
        id: plane.id,
        line_count: plane.lines.len(),
        event_count: plane.lines.iter().map(|l| l.events.len()).sum(),
        rendered: is_rendered(space, plane),
        lines: plane.lines.iter().map(|l| line_summary(plane, l)).collect(),
    }
}

fn line_summary(plane: &XPlane, line: &XLine) -> LineSummary {
    let mut event_names: Vec<String> = Vec::new();
    let mut previous = None;
    for e in &line.events {
        if event_names.len() == EVENT_NAME_SAMPLES {
            break;
        }
        // Runs of one metadata id (a line of millions of the same event) cost a compare each,
        // not a name lookup and a String.
        if previous.replace(e.metadata_id) == Some(e.metadata_id) {
            continue;
        }
        let name = match plane.event_metadata.get(&e.metadata_id) {
            Some(m) if !m.display_name.is_empty() => m.display_name.clone(),
            Some(m) => m.name.clone(),
            None => format!("<missing metadata {}>", e.metadata_id),
        };
        if !event_names.contains(&name) {
            event_names.push(name);
        }
    }
    LineSummary {
        row: xplane::row_key(line),
        id: line.id,
        display_id: line.display_id,
        name: line.name.clone(),
        display_name: line.display_name.clone(),
        event_count: line.events.len(),
        depth: xplane::nesting_depth(&without_overflow(line)),
        event_names,
    }
}

/// `line`, with durations clamped where `offset + duration` would overflow i64 (only in
/// damaged or hostile files), so that [`xplane::nesting_depth`] cannot overflow on it.
fn without_overflow(line: &XLine) -> Cow<'_, XLine> {
    let overflows = |e: &crate::xplane_proto::XEvent| e.offset_ps().checked_add(e.duration_ps).is_none();
    if !line.events.iter().any(overflows) {
        return Cow::Borrowed(line);
    }
    let mut copy = line.clone();
    for e in copy.events.iter_mut().filter(|e| overflows(e)) {
        // The sum saturates to MAX (both large positive) or MIN (both large negative);
        // subtracting the offset from the saturated end cannot overflow in either case.
        e.duration_ps = e.offset_ps().saturating_add(e.duration_ps) - e.offset_ps();
    }
    Cow::Owned(copy)
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;
    use crate::xplane_proto::{x_event, XEvent, XEventMetadata};
    use crate::{Event, EventKind, Trace};

    fn sample_space() -> XSpace {
        let mut t = Trace::new("host0", 1_000_000, 2_000_000);
        let outer = t.label("outer");
        let inner = t.label("inner");
        let mark = t.label("mark");
        t.events.push(Event { kind: EventKind::Range, tid: 4242, end_tid: 4242, start_ns: 1_005_000, end_ns: 1_085_000, label: outer, depth: 0, seq: 0 });
        t.events.push(Event { kind: EventKind::Range, tid: 4242, end_tid: 4242, start_ns: 1_015_000, end_ns: 1_045_000, label: inner, depth: 0, seq: 0 });
        t.events.push(Event { kind: EventKind::Range, tid: 4242, end_tid: 4242, start_ns: 1_050_000, end_ns: 1_060_000, label: inner, depth: 0, seq: 0 });
        t.events.push(Event { kind: EventKind::Mark, tid: 4242, end_tid: 4242, start_ns: 1_070_000, end_ns: 1_070_000, label: mark, depth: 0, seq: 0 });
        t.events.push(Event { kind: EventKind::Range, tid: 7, end_tid: 7, start_ns: 1_100_000, end_ns: 1_200_000, label: inner, depth: 0, seq: 0 });
        t.thread_names.insert(4242, "main".to_owned());
        t.warnings.push("roctx_utils: 3 events dropped".to_owned());
        xplane::standalone_xspace(&t)
    }

    fn event(metadata_id: i64, offset_ps: i64, duration_ps: i64) -> XEvent {
        XEvent { metadata_id, data: Some(x_event::Data::OffsetPs(offset_ps)), duration_ps, stats: vec![] }
    }

    #[test]
    fn a_standalone_space_summarizes_rows_depths_and_names_in_stored_order() {
        let s = Summary::of(&sample_space());
        assert_eq!(s.hostnames, ["host0"]);
        assert_eq!(s.xspace_warnings, ["roctx_utils: 3 events dropped"]);
        assert!(s.xspace_errors.is_empty());
        assert_eq!(s.issues, []);
        assert!(s.is_valid());
        assert_eq!(s.planes.len(), 2); // /host:CPU and Task Environment (session start/stop)
        assert_eq!((s.planes[1].name.as_str(), s.planes[1].line_count, s.planes[1].rendered), ("Task Environment", 0, false));
        let p = &s.planes[0];
        assert_eq!((p.name.as_str(), p.line_count, p.event_count, p.rendered), ("/host:CPU", 2, 5, true));
        assert_eq!((s.line_count(), s.event_count()), (2, 5));
        let l = &p.lines[0];
        assert_eq!((l.row, l.id, l.display_id), (1, 4242, 1));
        assert_eq!(l.name, "Host Threads/4242/ROCTX");
        assert_eq!(l.display_name, "Host Threads/4242/ROCTX (main)");
        assert_eq!((l.event_count, l.depth), (4, 2));
        assert_eq!(l.event_names, ["outer", "inner", "mark"]);
        let l = &p.lines[1];
        assert_eq!((l.row, l.name.as_str(), l.display_name.as_str(), l.depth), (2, "Host Threads/7/ROCTX", "", 1));
        assert_eq!(l.event_names, ["inner"]);
    }

    #[test]
    fn event_names_are_distinct_capped_and_prefer_display_names() {
        let mut p = XPlane { name: "/host:CPU".into(), ..XPlane::default() };
        for (id, name, display) in [(1, "a", ""), (2, "b_long", "b"), (3, "c", ""), (4, "d", "")] {
            p.event_metadata.insert(id, XEventMetadata { id, name: name.into(), display_name: display.into(), ..XEventMetadata::default() });
        }
        let ids = [1, 1, 2, 9, 3, 4];
        p.lines.push(XLine { id: 1, name: "t".into(), events: ids.iter().enumerate().map(|(i, &m)| event(m, i as i64 * 10, 5)).collect(), ..XLine::default() });
        let s = Summary::of(&XSpace { planes: vec![p], ..XSpace::default() });
        assert_eq!(s.planes[0].lines[0].event_names, ["a", "b", "<missing metadata 9>"]);
        assert_eq!(s.planes[0].lines[0].depth, 1);
        assert_eq!(s.count(Severity::Error), 1, "{:?}", s.issues);
    }

    #[test]
    fn a_row_collision_is_an_error() {
        let mut p = XPlane { name: "/host:CPU".into(), ..XPlane::default() };
        p.event_metadata.insert(1, XEventMetadata { id: 1, name: "e".into(), ..XEventMetadata::default() });
        p.lines.push(XLine { id: 5, name: "thread".into(), events: vec![event(1, 0, 10)], ..XLine::default() });
        p.lines.push(XLine { id: (1 << 32) + 5, name: "thread/NVTX".into(), events: vec![event(1, 0, 10)], ..XLine::default() });
        let s = Summary::of(&XSpace { planes: vec![p], ..XSpace::default() });
        assert_eq!(s.planes[0].lines.iter().map(|l| l.row).collect::<Vec<_>>(), [5, 5]);
        assert!(!s.is_valid());
        assert!(s.issues.iter().any(|i| i.severity == Severity::Error && i.message.contains("share XProf row 5")), "{:?}", s.issues);
    }

    #[test]
    fn a_problem_on_every_event_is_one_finding_with_its_count() {
        let mut p = XPlane { name: "/host:CPU".into(), ..XPlane::default() };
        p.event_metadata.insert(1, XEventMetadata { id: 1, name: "ok".into(), ..XEventMetadata::default() });
        let mut events: Vec<XEvent> = (0..100_000).map(|i| event(7, i, 5)).collect();
        events[500] = event(1, 500, 5);
        p.lines.push(XLine { id: 1, name: "busy".into(), events, ..XLine::default() });
        p.lines.push(XLine { id: 2, name: "quiet".into(), events: vec![event(1, 0, -1)], ..XLine::default() });
        let s = Summary::of(&XSpace { planes: vec![p], ..XSpace::default() });
        let messages: Vec<(&str, usize)> = s.issues.iter().map(|i| (i.message.as_str(), i.count)).collect();
        assert_eq!(
            messages,
            [
                ("/host:CPU: 99,999 events on line \"busy\" reference event metadata that does not exist (first: missing metadata 7 on line \"busy\" at offset 0 ps)", 99_999),
                ("/host:CPU/quiet: negative duration", 1),
            ]
        );
        assert_eq!((s.count(Severity::Error), s.count(Severity::Warning)), (100_000, 0));
        assert_eq!(s.planes[0].lines[0].event_names, ["<missing metadata 7>", "ok"]);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["issues"][0]["count"], 99_999);
    }

    #[test]
    fn the_json_report_has_the_files_and_the_counts() {
        let files = vec![("a.xplane.pb".to_owned(), Summary::of(&sample_space())), ("b.xplane.pb".to_owned(), Summary::of(&XSpace::default()))];
        let mut bytes = Vec::new();
        write_json_report(&files, &mut bytes).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!((v["error_count"].as_u64(), v["warning_count"].as_u64()), (Some(0), Some(1)));
        assert_eq!(v["files"][1]["path"], "b.xplane.pb");
        assert_eq!(v["files"][0]["planes"][0]["lines"][0]["depth"], 2);
        assert_eq!(v["files"][0], {
            let mut expected = serde_json::to_value(&files[0].1).unwrap();
            expected["path"] = "a.xplane.pb".into();
            expected
        });
    }

    #[test]
    fn a_run_report_adds_its_processes_and_name_and_nothing_else() {
        let files = vec![("r/a.xplane.pb".to_owned(), Summary::of(&sample_space())), ("r/b.xplane.pb".to_owned(), Summary::of(&sample_space()))];
        let run = Run { name: "r".to_owned(), processes: vec!["a".to_owned(), "b".to_owned()] };
        let (mut plain, mut with_run) = (Vec::new(), Vec::new());
        write_json_report(&files, &mut plain).unwrap();
        write_json_run_report(Some(&run), &files, &mut with_run).unwrap();
        let mut none = Vec::new();
        write_json_run_report(None, &files, &mut none).unwrap();
        assert_eq!(none, plain);
        let mut v: serde_json::Value = serde_json::from_slice(&with_run).unwrap();
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["error_count", "files", "processes", "run", "warning_count"]);
        assert_eq!(v["processes"], serde_json::json!(["a", "b"]));
        assert_eq!(v["run"], "r");
        let object = v.as_object_mut().unwrap();
        object.remove("processes");
        object.remove("run");
        assert_eq!(v, serde_json::from_slice::<serde_json::Value>(&plain).unwrap());
    }

    #[test]
    fn an_empty_space_is_a_warning_not_an_error() {
        let s = Summary::of(&XSpace::decode(&b""[..]).unwrap());
        assert!(s.is_valid());
        assert_eq!(s.count(Severity::Warning), 1);
        assert!(s.issues[0].message.starts_with("no planes"));
    }

    #[test]
    fn only_planes_xprof_draws_are_rendered() {
        let plane = |name: &str| XPlane { name: name.into(), ..XPlane::default() };
        let names = ["/host:CPU", "/host:ROCTX", "/device:GPU:0", "/device:CUSTOM:x", "/device:TPU:0", "Task Environment"];
        let space = XSpace { planes: names.iter().map(|n| plane(n)).collect(), ..XSpace::default() };
        let rendered: Vec<bool> = space.planes.iter().map(|p| is_rendered(&space, p)).collect();
        assert_eq!(rendered, [true, false, true, true, false, false]);
        let tpu_only = XSpace { planes: vec![plane("/device:TPU:0")], ..XSpace::default() };
        assert!(is_rendered(&tpu_only, &tpu_only.planes[0]));
    }

    #[test]
    fn json_keys_are_stable() {
        let v = serde_json::to_value(Summary::of(&sample_space())).unwrap();
        let keys = |v: &serde_json::Value| {
            let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
            k.sort();
            k
        };
        assert_eq!(keys(&v), ["hostnames", "issues", "planes", "xspace_errors", "xspace_warnings"]);
        assert_eq!(keys(&v["planes"][0]), ["event_count", "id", "line_count", "lines", "name", "rendered"]);
        assert_eq!(keys(&v["planes"][0]["lines"][0]), ["depth", "display_id", "display_name", "event_count", "event_names", "id", "name", "row"]);
        assert_eq!(v["planes"][0]["lines"][0]["depth"], 2);
        let bad = Summary::of(&XSpace::default());
        assert_eq!(serde_json::to_value(&bad).unwrap()["issues"][0]["severity"], "warning");
    }

    #[test]
    fn damaged_input_never_panics() {
        // Truncations of a real file, and a tiny deterministic fuzz of random buffers: whatever
        // decodes must summarize.
        let bytes = sample_space().encode_to_vec();
        let mut decoded = 0;
        for cut in 0..bytes.len() {
            if let Ok(space) = XSpace::decode(&bytes[..cut]) {
                Summary::of(&space);
                decoded += 1;
            }
        }
        assert!(decoded > 0);
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for len in (0..2000).map(|i| i % 97) {
            let buf: Vec<u8> = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    (seed >> 24) as u8
                })
                .collect();
            if let Ok(space) = XSpace::decode(buf.as_slice()) {
                Summary::of(&space);
            }
        }
        // Offsets and durations at the i64 limits.
        let mut p = XPlane { name: "/host:CPU".into(), ..XPlane::default() };
        p.lines.push(XLine { id: 1, events: vec![event(1, i64::MAX, i64::MAX), event(1, i64::MIN, i64::MIN), event(1, 0, -5)], ..XLine::default() });
        let s = Summary::of(&XSpace { planes: vec![p], ..XSpace::default() });
        assert!(!s.is_valid());
    }
}
