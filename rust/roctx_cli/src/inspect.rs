//! `roctx inspect`: prints [`roctx_export::inspect::Summary`] of each input file, as text or as
//! one JSON document; for the files of a multi-process run, first the run and its processes.
//! Owns only the layout; the summary itself is computed by the library.
//!
//! Each file is decoded, summarized and dropped before the next is read, and the output is
//! streamed to stdout: memory is one decoded file plus the summaries (proportional to lines;
//! a problem repeated on every event is one finding with a count).

use std::io::{self, BufWriter, Write};
use std::path::Path;

use roctx_export::inspect::{self, LineSummary, PlaneSummary, Run, Severity, Summary};

use crate::args::InspectArgs;
use crate::input;
use crate::messages::{plural, printable, text_line, Failure, Status};

/// Runs `roctx inspect`.
pub(crate) fn run(args: &InspectArgs) -> Result<Status, Failure> {
    let files = input::files(&args.input)?;
    // Several files are the processes of one run (XProf lists each as a host): say which.
    let run = (files.len() > 1).then(|| Run { name: input::run_name(&files[0]), processes: files.iter().map(|f| input::process_name(f)).collect() });
    let mut reports: Vec<(String, Summary)> = Vec::new();
    for path in files {
        let space = input::read(&path)?;
        reports.push((path.display().to_string(), Summary::of(&space)));
    }
    let mut out = BufWriter::new(io::stdout().lock());
    let written = if args.json {
        inspect::write_json_run_report(run.as_ref(), &reports, &mut out).and_then(|()| out.write_all(b"\n"))
    } else {
        // Names, hostnames and paths come from the files: no escape sequence reaches the terminal.
        let mut text = Vec::new();
        to_text(run.as_ref(), &reports, &mut text).and_then(|()| out.write_all(printable(&String::from_utf8_lossy(&text)).as_bytes()))
    };
    written.and_then(|()| out.flush()).map_err(Failure::stdout)?;
    Ok(if reports.iter().all(|(_, s)| s.is_valid()) { Status::Clean } else { Status::Invalid })
}

fn to_text(run: Option<&Run>, reports: &[(String, Summary)], out: &mut impl Write) -> io::Result<()> {
    if let Some(run) = run {
        text_line!(out, "run {}: {}: {}", run.name, plural(run.processes.len() as u64, "process", "processes"), run.processes.join(", "))?;
        writeln!(out)?;
    }
    for (i, (path, s)) in reports.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        write_summary(out, Path::new(path), s)?;
    }
    Ok(())
}

fn write_summary(out: &mut impl Write, path: &Path, s: &Summary) -> io::Result<()> {
    text_line!(out, "{}", path.display())?;
    let hosts = if s.hostnames.is_empty() { "(none)".to_owned() } else { s.hostnames.join(", ") };
    text_line!(out, "  hostnames: {hosts}")?;
    for w in &s.xspace_warnings {
        text_line!(out, "  xspace warning: {w}")?;
    }
    for e in &s.xspace_errors {
        text_line!(out, "  xspace error: {e}")?;
    }
    for plane in &s.planes {
        write_plane(out, plane)?;
    }
    let (errors, warnings) = (s.count(Severity::Error), s.count(Severity::Warning));
    if errors + warnings == 0 {
        return text_line!(out, "  validation: ok");
    }
    text_line!(out, "  validation: {}, {}", plural(errors as u64, "error", "errors"), plural(warnings as u64, "warning", "warnings"))?;
    for issue in &s.issues {
        let label = match issue.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        text_line!(out, "    {label}: {}", issue.message)?;
    }
    Ok(())
}

fn write_plane(out: &mut impl Write, p: &PlaneSummary) -> io::Result<()> {
    let shown = if p.rendered { "rendered by XProf" } else { "NOT rendered by XProf" };
    text_line!(out, "  plane {:?} (id {}): {}, {}, {shown}", p.name, p.id, plural(p.line_count as u64, "line", "lines"), plural(p.event_count as u64, "event", "events"))?;
    if p.lines.is_empty() {
        return Ok(());
    }
    let width = |header: &str, cell: &dyn Fn(&LineSummary) -> usize| p.lines.iter().map(cell).chain([header.len()]).max().unwrap_or(0);
    let row_w = width("row", &|l| l.row.to_string().len());
    let id_w = width("id", &|l| l.id.to_string().len());
    let name_w = width("line", &|l| line_label(l).len());
    text_line!(out, "    {:>row_w$}  {:>id_w$}  events  depth  {:<name_w$}  first events", "row", "id", "line")?;
    for l in &p.lines {
        writeln!(
            out,
            "    {:>row_w$}  {:>id_w$}  {:>6}  {:>5}  {:<name_w$}  {}",
            l.row,
            l.id,
            l.event_count,
            l.depth,
            line_label(l),
            l.event_names.join(", ")
        )?;
    }
    Ok(())
}

/// The line's name, and what XProf shows instead when `display_name` is set.
fn line_label(l: &LineSummary) -> String {
    if l.display_name.is_empty() {
        l.name.clone()
    } else {
        format!("{} (shown as {:?})", l.name, l.display_name)
    }
}

