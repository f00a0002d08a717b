//! `roctx stats`: [`roctx_export::stats`] of an input, as aligned tables, CSV or one JSON
//! document (docs/stats.md has the schemas). Owns only the layout; the numbers are the
//! library's.
//!
//! Each file is decoded, added and dropped before the next is read: memory is one decoded file
//! plus 8 bytes per range, kernel and copy of the whole input (their durations, for medians).

use std::collections::BTreeMap;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use roctx_export::stats::{CopyRow, KernelRow, Options, RangeGpuRow, RangeRow, Report, Stats, Summary};
use serde_json::json;

use crate::args::{StatsArgs, StatsFormat, StatsReport};
use crate::input;
use crate::messages::{one_line, plural, printable, text_line, Failure, Status};

/// What a table shows without `--top`.
const TABLE_TOP: usize = 25;

/// One set of reports: a process of the run, or the whole input.
struct Part {
    process: String,
    files: Vec<PathBuf>,
    report: Report,
}

/// Runs `roctx stats`.
pub(crate) fn run(args: &StatsArgs) -> Result<Status, Failure> {
    let files = input::files(&args.input)?;
    let options = Options { fold_payload: args.fold_payload, per_thread: args.per_thread };
    let mut parts = Vec::new();
    if args.per_process {
        for path in files {
            let mut stats = Stats::new(options);
            stats.add(&input::read(&path)?);
            parts.push(Part { process: input::process_name(&path), files: vec![path], report: stats.report() });
        }
    } else {
        let mut stats = Stats::new(options);
        for path in &files {
            stats.add(&input::read(path)?);
        }
        let process = if files.len() == 1 { input::process_name(&files[0]) } else { "all".to_owned() };
        parts.push(Part { process, files, report: stats.report() });
    }
    let mut reports: Vec<StatsReport> = Vec::new();
    for r in &args.report {
        if !reports.contains(r) {
            reports.push(*r);
        }
    }
    let top = match (args.top, args.format) {
        (Some(0), _) | (None, StatsFormat::Csv | StatsFormat::Json) => usize::MAX,
        (Some(n), _) => n,
        (None, StatsFormat::Table) => TABLE_TOP,
    };
    let mut out = BufWriter::new(io::stdout().lock());
    let written = match args.format {
        StatsFormat::Table => {
            // Names come from the files: no escape sequence reaches the terminal.
            let mut text = Vec::new();
            write_tables(&parts, &reports, top, &mut text).and_then(|()| out.write_all(printable(&String::from_utf8_lossy(&text)).as_bytes()))
        }
        StatsFormat::Csv => write_csv(&parts, &reports, top, &mut out),
        StatsFormat::Json => write_json(&parts, &reports, top, &mut out),
    };
    written.and_then(|()| out.flush()).map_err(Failure::stdout)?;
    Ok(Status::Clean)
}

/// The name a report has in every format.
fn report_name(r: StatsReport) -> &'static str {
    match r {
        StatsReport::Ranges => "ranges",
        StatsReport::Kernels => "kernels",
        StatsReport::Copies => "copies",
        StatsReport::RangeGpu => "range_gpu",
    }
}

/// The first `top` rows of each group (rows come sorted by group).
fn top_per_group<T>(rows: &[T], group: impl Fn(&T) -> &str, top: usize) -> (Vec<&T>, usize) {
    let mut kept = Vec::new();
    let mut per: BTreeMap<&str, usize> = BTreeMap::new();
    for row in rows {
        let n = per.entry(group(row)).or_default();
        *n += 1;
        if *n <= top {
            kept.push(row);
        }
    }
    let left = rows.len() - kept.len();
    (kept, left)
}

fn us(ns: f64) -> String {
    format!("{:.3}", ns / 1000.0)
}

fn write_tables(parts: &[Part], reports: &[StatsReport], top: usize, out: &mut impl Write) -> io::Result<()> {
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        let r = &part.report;
        let files = if part.files.len() == 1 { part.files[0].display().to_string() } else { format!("{} files combined", part.files.len()) };
        text_line!(out, "{}: {files}; traced {} ms; {}", part.process, us(r.traced_ns as f64 / 1000.0), plural(r.marks, "mark", "marks"))?;
        for note in &r.notes {
            text_line!(out, "note: {note}")?;
        }
        for &report in reports {
            writeln!(out)?;
            match report {
                StatsReport::Ranges => ranges_table(r, top, out)?,
                StatsReport::Kernels => kernels_table(r, top, out)?,
                StatsReport::Copies => copies_table(r, top, out)?,
                StatsReport::RangeGpu => range_gpu_table(r, top, out)?,
            }
        }
    }
    Ok(())
}

/// Writes `rows` as a table: a title, then per group (if any) its name and its rows under
/// `header`, then how many rows `--top` left out.
fn table<T>(out: &mut impl Write, title: &str, rows: &[T], top: usize, group: impl Fn(&T) -> &str, header: &str, line: impl Fn(&T) -> String) -> io::Result<()> {
    text_line!(out, "{title}")?;
    let (kept, left) = top_per_group(rows, &group, top);
    let mut current: Option<&str> = None;
    for row in kept {
        let g = group(row);
        if current != Some(g) {
            if !g.is_empty() {
                text_line!(out, "  [{g}]")?;
            }
            text_line!(out, "{header}")?;
            current = Some(g);
        }
        text_line!(out, "{}", line(row))?;
    }
    if left > 0 {
        text_line!(out, "  ... {} not shown (--top 0 shows all)", plural(left as u64, "row", "rows"))?;
    }
    Ok(())
}

fn summary_columns(s: &Summary) -> String {
    format!("{:>8} {:>12} {:>12} {:>12} {:>12}", s.count, us(s.avg_ns), us(s.median_ns), us(s.min_ns as f64), us(s.max_ns as f64))
}

const SUMMARY_HEADER: &str = "   count       avg_us       med_us       min_us       max_us";

fn ranges_table(r: &Report, top: usize, out: &mut impl Write) -> io::Result<()> {
    if r.ranges.is_empty() {
        return text_line!(out, "ranges: none in this trace (no ROCTX or NVTX range)");
    }
    let title = format!("ranges: {} (whole durations: nested ranges count in every enclosing range)", plural(r.ranges.len() as u64, "row", "rows"));
    let header = format!("    total_us  %traced {SUMMARY_HEADER}  range");
    table(out, &title, &r.ranges, top, |x: &RangeRow| &x.group, &header, |x| {
        format!("{:>12} {:>8.1} {}  {}", us(x.time.total_ns as f64), x.traced_pct, summary_columns(&x.time), x.range)
    })
}

fn kernels_table(r: &Report, top: usize, out: &mut impl Write) -> io::Result<()> {
    if r.kernels.is_empty() {
        return text_line!(out, "kernels: none in this trace (no GPU event with kernel_details)");
    }
    let title = format!("kernels: {}", plural(r.kernels.len() as u64, "row", "rows"));
    let header = format!("    total_us     %gpu {SUMMARY_HEADER}  kernel");
    table(out, &title, &r.kernels, top, |x: &KernelRow| &x.group, &header, |x| {
        format!("{:>12} {:>8.1} {}  {}", us(x.time.total_ns as f64), x.gpu_pct, summary_columns(&x.time), x.kernel)
    })
}

fn copies_table(r: &Report, top: usize, out: &mut impl Write) -> io::Result<()> {
    if r.copies.is_empty() {
        return text_line!(out, "copies: none in this trace (no memcpy_details or Memset_details event: copies are traced by default; ROCTX_UTILS_COPIES=0 turns them off)");
    }
    let title = format!("copies: {}", plural(r.copies.len() as u64, "row", "rows"));
    let header = format!("    total_us         bytes     GB/s {SUMMARY_HEADER}  kind    operation");
    table(out, &title, &r.copies, top, |x: &CopyRow| &x.group, &header, |x| {
        format!("{:>12} {:>13} {:>8.2} {}  {:<7} {}", us(x.time.total_ns as f64), x.bytes, x.gbps, summary_columns(&x.time), x.kind, x.operation)
    })
}

fn range_gpu_table(r: &Report, top: usize, out: &mut impl Write) -> io::Result<()> {
    if r.range_gpu.iter().all(|x| x.gpu_ops == 0) {
        return text_line!(out, "range_gpu: no kernel or copy was launched inside a range ({} without one)", r.gpu_ops_without_range);
    }
    let rows: Vec<RangeGpuRow> = r.range_gpu.iter().filter(|x| x.gpu_ops > 0).cloned().collect();
    let title = format!(
        "range_gpu: {} with GPU work (inclusive: nested ranges' work too; projected: first GPU start to last GPU end per range); {} without a range",
        plural(rows.len() as u64, "label", "labels"),
        plural(r.gpu_ops_without_range, "kernel or copy", "kernels and copies")
    );
    let header = "  gpu_incl_us  gpu_excl_us   gpu_ops  ranges  with_gpu   proj_total_us     proj_avg_us  range_total_us  range";
    table(out, &title, &rows, top, |x: &RangeGpuRow| &x.group, header, |x| {
        format!(
            "{:>13} {:>12} {:>9} {:>7} {:>9} {:>15} {:>15} {:>15}  {}",
            us(x.gpu_inclusive_ns as f64),
            us(x.gpu_exclusive_ns as f64),
            x.gpu_ops,
            x.instances,
            x.instances_with_gpu,
            us(x.projected.total_ns as f64),
            us(x.projected.avg_ns),
            us(x.range_total_ns as f64),
            x.range
        )
    })
}

/// A CSV field from a file's text: on one line with no raw control character ([`one_line`]), a
/// leading `=`, `+`, `-` or `@` (a spreadsheet formula) neutralised with a `'` as OWASP's
/// CSV-injection guidance says, and quoted when it holds a comma or a quote, or was neutralised
/// (RFC 4180).
fn csv_field(text: &str) -> String {
    let text = one_line(text);
    let formula = text.starts_with(['=', '+', '-', '@']);
    let text = if formula { format!("'{text}") } else { text };
    if formula || text.contains([',', '"']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

fn csv_summary(s: &Summary) -> String {
    format!("{},{},{},{},{},{}", s.count, s.total_ns, s.avg_ns, s.median_ns, s.min_ns, s.max_ns)
}

/// The CSV header of each report (docs/stats.md).
fn csv_header(r: StatsReport) -> &'static str {
    match r {
        StatsReport::Ranges => "report,process,group,range,count,total_ns,avg_ns,median_ns,min_ns,max_ns,traced_pct",
        StatsReport::Kernels => "report,process,group,kernel,count,total_ns,avg_ns,median_ns,min_ns,max_ns,gpu_pct",
        StatsReport::Copies => "report,process,group,kind,operation,bytes,count,total_ns,avg_ns,median_ns,min_ns,max_ns,gbps",
        StatsReport::RangeGpu => "report,process,group,range,instances,instances_with_gpu,gpu_ops,gpu_inclusive_ns,gpu_exclusive_ns,projected_count,projected_total_ns,projected_avg_ns,projected_median_ns,projected_min_ns,projected_max_ns,range_total_ns",
    }
}

fn write_csv(parts: &[Part], reports: &[StatsReport], top: usize, out: &mut impl Write) -> io::Result<()> {
    for (i, &report) in reports.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        text_line!(out, "{}", csv_header(report))?;
        for part in parts {
            let r = &part.report;
            let lead = |group: &str| format!("{},{},{}", report_name(report), csv_field(&part.process), csv_field(group));
            match report {
                StatsReport::Ranges => {
                    for x in top_per_group(&r.ranges, |x| &x.group, top).0 {
                        text_line!(out, "{},{},{},{}", lead(&x.group), csv_field(&x.range), csv_summary(&x.time), x.traced_pct)?;
                    }
                }
                StatsReport::Kernels => {
                    for x in top_per_group(&r.kernels, |x| &x.group, top).0 {
                        text_line!(out, "{},{},{},{}", lead(&x.group), csv_field(&x.kernel), csv_summary(&x.time), x.gpu_pct)?;
                    }
                }
                StatsReport::Copies => {
                    for x in top_per_group(&r.copies, |x| &x.group, top).0 {
                        text_line!(out, "{},{},{},{},{},{}", lead(&x.group), x.kind, csv_field(&x.operation), x.bytes, csv_summary(&x.time), x.gbps)?;
                    }
                }
                StatsReport::RangeGpu => {
                    for x in top_per_group(&r.range_gpu, |x| &x.group, top).0 {
                        writeln!(
                            out,
                            "{},{},{},{},{},{},{},{},{}",
                            lead(&x.group),
                            csv_field(&x.range),
                            x.instances,
                            x.instances_with_gpu,
                            x.gpu_ops,
                            x.gpu_inclusive_ns,
                            x.gpu_exclusive_ns,
                            csv_summary(&x.projected),
                            x.range_total_ns
                        )?;
                    }
                }
            }
        }
    }
    Ok(())
}

fn write_json(parts: &[Part], reports: &[StatsReport], top: usize, out: &mut impl Write) -> io::Result<()> {
    let processes: Vec<serde_json::Value> = parts
        .iter()
        .map(|part| {
            let r = &part.report;
            let mut p = json!({
                "process": part.process,
                "files": part.files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>(),
                "traced_ns": r.traced_ns,
                "marks": r.marks,
                "gpu_ops_without_range": r.gpu_ops_without_range,
                "notes": r.notes,
            });
            for &report in reports {
                let rows = match report {
                    StatsReport::Ranges => serde_json::to_value(top_per_group(&r.ranges, |x| &x.group, top).0),
                    StatsReport::Kernels => serde_json::to_value(top_per_group(&r.kernels, |x| &x.group, top).0),
                    StatsReport::Copies => serde_json::to_value(top_per_group(&r.copies, |x| &x.group, top).0),
                    StatsReport::RangeGpu => serde_json::to_value(top_per_group(&r.range_gpu, |x| &x.group, top).0),
                };
                p[report_name(report)] = rows.unwrap_or_default();
            }
            p
        })
        .collect();
    let doc = json!({
        "schema": "roctx.stats",
        "version": 1,
        "reports": reports.iter().map(|&r| report_name(r)).collect::<Vec<_>>(),
        "processes": processes,
    });
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)
}
