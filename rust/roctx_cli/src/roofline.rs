//! `roctx roofline`: reads a ggml roofline report, resolves the peaks (report device,
//! `--device`, `--peak-bw`/`--peak-flops`), prints the op groups as a table or JSON and
//! optionally writes the SVG plot. Owns the peak resolution messages and the table layout; the
//! numbers come from [`roctx_roofline`].

use std::fmt::Write as _;
use std::path::PathBuf;

use roctx_roofline::peaks::known_devices;
use roctx_roofline::{analyse, svg, Analysis, Ceiling, Device, Group, Peaks, Report};

use crate::args::RooflineArgs;
use crate::input::{self, Hints};
use crate::messages::{self, one_line, print, text_line, Failure, Status};
use crate::output;

/// Groups shown in the table without `--top`.
const DEFAULT_TOP: usize = 25;

const REPORT_HINTS: Hints = Hints {
    not_regular: "roctx roofline reads the JSON file GGML_ROOFLINE_OUT named; save it to a regular file first",
    too_large: "the report is parsed whole; a report this large is not one roofline profile",
};

/// Runs `roctx roofline`.
pub(crate) fn run(args: &RooflineArgs) -> Result<Status, Failure> {
    if let Some(out) = &args.svg {
        output::check(out, args.inputs.iter().map(PathBuf::as_path))?;
    }
    refuse_twice(&args.inputs)?;
    let mut reports = Vec::new();
    for path in &args.inputs {
        let bytes = input::read_bytes(path, REPORT_HINTS)?;
        let report = Report::from_slice(&bytes).map_err(|err| {
            Failure::new(format!("reading {}: {err}", path.display()))
                .hint("roctx roofline reads the JSON report of a GGML_ROOFLINE_OUT run (schema in docs/roofline.md)")
        })?;
        if let Some(why) = &report.cut_short {
            messages::print_err(&format!("note: {}: {}\n", path.display(), one_line(why)));
        }
        reports.push(report);
    }
    let report = join(reports, &args.inputs)?;
    let peaks = resolve_peaks(args, &report)?;
    let mut analysis = analyse(&report, peaks.as_ref());
    if let Some(out) = &args.svg {
        output::write(out, svg::render(&analysis).as_bytes())?;
    }
    let shown = match args.top {
        Some(0) => usize::MAX,
        Some(n) => n,
        None if args.json => usize::MAX,
        None => DEFAULT_TOP,
    };
    let hidden = analysis.groups.len().saturating_sub(shown);
    analysis.groups.truncate(shown);
    if args.json {
        let text = serde_json::to_string_pretty(&analysis).map_err(|err| Failure::new(format!("writing JSON: {err}")))?;
        print(&format!("{text}\n"))?;
    } else {
        print(&table(&args.inputs, &analysis, hidden))?;
    }
    if let Some(out) = &args.svg {
        messages::print_err(&format!("wrote {}\n", out.display()));
    }
    Ok(Status::Clean)
}

/// Refuses a report named twice (however spelled, or through a link): its rows would count
/// twice in the joined report (issue 40).
fn refuse_twice(paths: &[PathBuf]) -> Result<(), Failure> {
    use std::os::unix::fs::MetadataExt;
    let mut seen: Vec<((u64, u64), &PathBuf)> = Vec::new();
    for path in paths {
        let Ok(meta) = std::fs::metadata(path) else { continue }; // reading it says why
        let id = (meta.dev(), meta.ino());
        if let Some((_, first)) = seen.iter().find(|(other, _)| *other == id) {
            let same = if *first == path { String::new() } else { format!(" (as {} and {})", first.display(), path.display()) };
            return Err(Failure::new(format!("{} is given twice{same}: its ops would count twice", first.display()))
                .hint("name each report once (a process's, its fork children's report.pid<N>.json, a job's ranks)"));
        }
        seen.push((id, path));
    }
    Ok(())
}

/// One report of several (a process's and its `fork()` children's, `report.pid<N>.json`, or the
/// ranks of a job): their rows together, their GPU time summed. They must name one device (the
/// peaks judge them all).
fn join(reports: Vec<Report>, paths: &[PathBuf]) -> Result<Report, Failure> {
    let mut reports = reports.into_iter().zip(paths);
    let Some((mut joined, first)) = reports.next() else { return Err(Failure::new("no report given")) };
    for (r, path) in reports {
        if !r.device.is_empty() && !joined.device.is_empty() && r.device != joined.device {
            return Err(Failure::new(format!("{} is from device {:?}, {} from {:?}: one roofline judges one device", path.display(), r.device, first.display(), joined.device))
                .hint("run roctx roofline on each device's reports apart"));
        }
        if joined.device.is_empty() {
            joined.device = r.device;
        }
        joined.total_gpu_time_us += r.total_gpu_time_us;
        joined.rows.extend(r.rows);
        joined.cut_short = joined.cut_short.or(r.cut_short);
    }
    Ok(joined)
}

/// The peaks to judge the report by, or `None` (with a warning) when there are none.
fn resolve_peaks(args: &RooflineArgs, report: &Report) -> Result<Option<Peaks>, Failure> {
    let overrides = args.peak_bw.is_some() && args.peak_flops.is_some();
    let device = match &args.device {
        Some(name) => match Device::lookup(name) {
            Some(d) => Some(d),
            None if overrides => None,
            None => {
                return Err(Failure::new(format!("unknown device {name:?}; the peak table has {}", known_devices()))
                    .hint("for another GPU pass --peak-bw GBPS and --peak-flops TFLOPS (datasheet figures)"));
            }
        },
        None => Device::lookup(&report.device),
    };
    if let Some(peaks) = Peaks::with_overrides(device, args.peak_bw, args.peak_flops) {
        return Ok(Some(peaks));
    }
    let device_name = args.device.as_deref().unwrap_or(&report.device);
    if args.peak_bw.is_some() || args.peak_flops.is_some() {
        let (given, missing) = if args.peak_bw.is_some() { ("--peak-bw", "--peak-flops") } else { ("--peak-flops", "--peak-bw") };
        return Err(Failure::new(format!("{given} alone is not enough: device {device_name:?} is not in the peak table, so {missing} is needed too"))
            .hint(format!("pass both, or --device with one of: {}", known_devices())));
    }
    let why = if device_name.is_empty() { "the report names no device".to_owned() } else { format!("device {device_name:?} is not in the peak table") };
    messages::warning(&format!(
        "{why} ({}); showing times, bytes, FLOPs and arithmetic intensity without percentages. Pass --device ARCH, or --peak-bw GBPS and --peak-flops TFLOPS",
        known_devices()
    ));
    Ok(None)
}

fn fixed(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{v:.decimals$}"))
}

/// `%FLOPs` of a group: one number, or `dual/single` for RDNA fp32 vector work.
fn pct_flops(g: &Group) -> String {
    let Some(r) = &g.roof else { return "-".to_owned() };
    match &r.single_issue {
        Some(s) => format!("{}/{}", fixed(r.pct_of_peak_flops, 2), fixed(s.pct_of_peak_flops, 2)),
        None => fixed(r.pct_of_peak_flops, 2),
    }
}

fn bound(g: &Group) -> String {
    let Some(r) = &g.roof else { return "-".to_owned() };
    let label = |b: Option<roctx_roofline::Bound>| b.map_or("-", |b| b.label());
    match &r.single_issue {
        Some(s) if s.bound != r.bound => format!("{}/{}", label(r.bound), label(s.bound)),
        _ => label(r.bound).to_owned(),
    }
}

/// The text report: header, then one line per group.
fn table(paths: &[PathBuf], a: &Analysis, hidden: usize) -> String {
    let mut out = String::new();
    let schema = a.schema_version.map_or_else(|| "llama.cpp reference format".to_owned(), |v| format!("schema {v}"));
    let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let joined = if paths.len() > 1 { ", joined" } else { "" };
    let _ = text_line!(out, "report: {} ({schema}{joined})", shown.join(" + "));
    let device = if a.device.is_empty() { "(not set)".to_owned() } else { a.device.clone() };
    match &a.peaks {
        Some(p) => {
            let _ = text_line!(out, "device: {device}, peaks of {}", p.name);
            let ceilings: Vec<String> = p.ceilings.iter().map(|c| format!("{} {:.1} TFLOP/s (ridge {:.1})", c.ceiling, c.flops / 1e12, c.flops / p.mem_bw)).collect();
            let _ = text_line!(out, "peaks: memory {:.0} GB/s; {}", p.mem_bw / 1e9, ceilings.join(", "));
            let _ = text_line!(out, "source: {}", p.source);
        }
        None => {
            let _ = text_line!(out, "device: {device}, no peaks");
        }
    }
    let _ = text_line!(out, "total GPU time: {} us ({} rows analysed, {} us; {} left out)", a.total_gpu_time_us, a.rows, a.analysed_time_us, a.rows_excluded);
    for note in &a.notes {
        let _ = text_line!(out, "note: {note}");
    }
    let _ = writeln!(out);
    let header = ["op", "shapes/types", "count", "total_us", "avg_us", "GB/s", "GFLOP/s", "AI", "%peakBW", "%peakFLOPs", "%roofline", "bound", "ceiling"];
    let mut rows: Vec<[String; 13]> = vec![header.map(str::to_owned)];
    for g in &a.groups {
        let roof = g.roof.as_ref();
        // How the MoE rows counted their experts, beside the op: `MUL_MAT_ID [analytic]`, or
        // each way with its rows when a group mixes them.
        let op = match g.moe_accounting.len() {
            0 => g.op.clone(),
            1 => format!("{} [{}]", g.op, g.moe_accounting.keys().next().map_or("", String::as_str)),
            _ => format!("{} [{}]", g.op, g.moe_accounting.iter().map(|(a, n)| format!("{n} {a}")).collect::<Vec<_>>().join(", ")),
        };
        rows.push([
            op,
            g.shapes.clone(),
            g.count.to_string(),
            format!("{:.1}", g.total_time_us),
            format!("{:.2}", g.avg_time_us),
            fixed(g.bytes_per_s.map(|b| b / 1e9), 1),
            fixed(g.flops_per_s.map(|f| f / 1e9), 1),
            fixed(g.arithmetic_intensity, 2),
            fixed(roof.and_then(|r| r.pct_of_peak_bw), 1),
            pct_flops(g),
            fixed(roof.and_then(|r| r.pct_of_roofline), 1),
            bound(g),
            roof.map_or_else(|| "-".to_owned(), |r| r.ceiling.label().to_owned()),
        ]);
    }
    for cell in rows.iter_mut().flatten() {
        *cell = one_line(cell);
    }
    let mut widths = [0usize; 13];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in &rows {
        let mut line = String::new();
        for (i, (cell, w)) in row.iter().zip(widths).enumerate() {
            let pad = w - cell.chars().count();
            if i > 0 {
                line.push_str("  ");
            }
            // Text columns left-aligned, numbers right-aligned.
            if matches!(i, 0 | 1 | 11 | 12) {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            } else {
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            }
        }
        let _ = text_line!(out, "{}", line.trim_end());
    }
    if hidden > 0 {
        let _ = text_line!(out, "... {hidden} more group(s); --top 0 shows all");
    }
    if a.groups.iter().any(|g| g.roof.as_ref().is_some_and(|r| r.single_issue.is_some())) {
        let _ = writeln!(
            out,
            "\n%peakFLOPs a/b and bound a/b: against the {} peak (dual issue: VOPD or wave64) / the {} peak; compilers often do not dual-issue (spec roofline.md §7.4)",
            Ceiling::Fp32Vector,
            Ceiling::Fp32VectorSingleIssue
        );
    }
    out
}
