//! `roctx inspect`: prints [`roctx_export::inspect::Summary`] of each input file, as text or as
//! one JSON document. Owns only the layout; the summary itself is computed by the library.

use std::fmt::Write as _;
use std::path::Path;

use roctx_export::inspect::{LineSummary, PlaneSummary, Severity, Summary};
use serde_json::{json, Value};

use crate::args::InspectArgs;
use crate::input;
use crate::messages::{print, Failure, Status};

/// Runs `roctx inspect`.
pub(crate) fn run(args: &InspectArgs) -> Result<Status, Failure> {
    let reports: Vec<(String, Summary)> =
        input::load(&args.input)?.into_iter().map(|i| (i.path.display().to_string(), Summary::of(&i.space))).collect();
    let text = if args.json { to_json(&reports) } else { to_text(&reports) };
    print(&text)?;
    Ok(if reports.iter().all(|(_, s)| s.is_valid()) { Status::Clean } else { Status::Invalid })
}

/// `{"files": [{"path", <Summary fields>}], "error_count", "warning_count"}`, pretty-printed.
fn to_json(reports: &[(String, Summary)]) -> String {
    let files: Vec<Value> = reports
        .iter()
        .map(|(path, summary)| {
            let mut v = serde_json::to_value(summary).unwrap_or(Value::Null);
            if let Some(obj) = v.as_object_mut() {
                obj.insert("path".to_owned(), json!(path));
            }
            v
        })
        .collect();
    let count = |severity| reports.iter().map(|(_, s)| s.count(severity)).sum::<usize>();
    let doc = json!({
        "files": files,
        "error_count": count(Severity::Error),
        "warning_count": count(Severity::Warning),
    });
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}

fn to_text(reports: &[(String, Summary)]) -> String {
    let mut out = String::new();
    for (i, (path, s)) in reports.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        write_summary(&mut out, Path::new(path), s);
    }
    out
}

fn write_summary(out: &mut String, path: &Path, s: &Summary) {
    // Writing to a String cannot fail.
    let _ = writeln!(out, "{}", path.display());
    let hosts = if s.hostnames.is_empty() { "(none)".to_owned() } else { s.hostnames.join(", ") };
    let _ = writeln!(out, "  hostnames: {hosts}");
    for w in &s.xspace_warnings {
        let _ = writeln!(out, "  xspace warning: {w}");
    }
    for e in &s.xspace_errors {
        let _ = writeln!(out, "  xspace error: {e}");
    }
    for plane in &s.planes {
        write_plane(out, plane);
    }
    let (errors, warnings) = (s.count(Severity::Error), s.count(Severity::Warning));
    if errors + warnings == 0 {
        let _ = writeln!(out, "  validation: ok");
    } else {
        let _ = writeln!(out, "  validation: {}, {}", plural(errors, "error"), plural(warnings, "warning"));
        for issue in &s.issues {
            let label = match issue.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
            };
            let _ = writeln!(out, "    {label}: {}", issue.message);
        }
    }
}

fn write_plane(out: &mut String, p: &PlaneSummary) {
    let shown = if p.rendered { "rendered by XProf" } else { "NOT rendered by XProf" };
    let _ = writeln!(out, "  plane {:?} (id {}): {}, {}, {shown}", p.name, p.id, plural(p.line_count, "line"), plural(p.event_count, "event"));
    if p.lines.is_empty() {
        return;
    }
    let width = |header: &str, cell: &dyn Fn(&LineSummary) -> String| p.lines.iter().map(|l| cell(l).len()).chain([header.len()]).max().unwrap_or(0);
    let row_w = width("row", &|l| l.row.to_string());
    let id_w = width("id", &|l| l.id.to_string());
    let name_w = width("line", &line_label);
    let _ = writeln!(out, "    {:>row_w$}  {:>id_w$}  events  depth  {:<name_w$}  first events", "row", "id", "line");
    for l in &p.lines {
        let _ = writeln!(
            out,
            "    {:>row_w$}  {:>id_w$}  {:>6}  {:>5}  {:<name_w$}  {}",
            l.row,
            l.id,
            l.event_count,
            l.depth,
            line_label(l),
            l.event_names.join(", ")
        );
    }
}

/// The line's name, and what XProf shows instead when `display_name` is set.
fn line_label(l: &LineSummary) -> String {
    if l.display_name.is_empty() {
        l.name.clone()
    } else {
        format!("{} (shown as {:?})", l.name, l.display_name)
    }
}

fn plural(n: usize, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}
