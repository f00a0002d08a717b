//! The command line, as clap derive types. Owns flag names, help text and exit-status docs;
//! never touches files.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Inspect, merge and convert the XSpace traces (`.xplane.pb`) that roctx_utils and XLA write;
/// analyse ggml roofline reports.
///
/// An INPUT is a `.xplane.pb` file, or a TensorBoard log directory (the one given to
/// `tensorboard --logdir`, holding `plugins/profile/<run>/<host>.xplane.pb`), which stands for
/// the files of its newest run.
#[derive(Debug, Parser)]
#[command(name = "roctx", version)]
#[command(after_help = "Limits: an INPUT file must be a regular file of at most 1 GiB (a FIFO or device is refused); memory is ~30x (convert), ~40x (inspect) or ~55x (merge) the input size at worst. A problem repeated on many events is reported once per kind and plane, with its count. -o only ever replaces a regular file: a directory, FIFO, socket, device or symbolic link there is refused.\n\nExit status: 0 success; 1 the trace has validation errors (inspect, merge); 2 bad usage, or an input could not be read or written.")]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Summarize an XSpace: planes, XProf rows, nesting depth, and what XProf would draw wrong.
    Inspect(InspectArgs),
    /// Merge XSpaces (e.g. XLA's capture and a roctx_utils log directory) into one file.
    Merge(MergeArgs),
    /// Convert an XSpace to another trace format.
    Convert(ConvertArgs),
    /// Per-op GPU roofline of a ggml/llama.cpp roofline report (GGML_ROOFLINE_OUT).
    Roofline(RooflineArgs),
}

/// `roctx inspect`.
#[derive(Debug, Args)]
#[command(after_help = "Exit status: 0 no validation errors (warnings allowed); 1 validation errors; 2 bad usage or unreadable input.")]
pub(crate) struct InspectArgs {
    /// A .xplane.pb file or a TensorBoard log directory (every host of its newest run).
    #[arg(value_name = "INPUT")]
    pub(crate) input: PathBuf,
    /// Print one JSON document (stable keys) instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `roctx merge`.
#[derive(Debug, Args)]
#[command(after_help = "Lines of the same host thread from several inputs end up in one /host:CPU plane, each ROCTX row directly below its thread's row.\n\nExit status: 0 merged, no validation errors; 1 merged, but the result has validation errors; 2 bad usage, or an input could not be read or the output written.")]
pub(crate) struct MergeArgs {
    /// .xplane.pb files or log directories (every host of each one's newest run).
    #[arg(value_name = "INPUT", required = true)]
    pub(crate) inputs: Vec<PathBuf>,
    /// Where to write the merged XSpace (parent directories are created; never an input).
    #[arg(short, long, value_name = "OUT.xplane.pb")]
    pub(crate) output: PathBuf,
}

/// `roctx convert`.
#[derive(Debug, Args)]
pub(crate) struct ConvertArgs {
    /// Output format.
    #[arg(long, value_enum)]
    pub(crate) format: Format,
    /// A .xplane.pb file, or a log directory whose newest run has a single host.
    #[arg(value_name = "INPUT")]
    pub(crate) input: PathBuf,
    /// Output file (default: stdout); a name ending in .gz is gzip-compressed.
    #[arg(short, long, value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
}

/// What `roctx convert` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// Chrome trace-event JSON, for chrome://tracing and ui.perfetto.dev.
    Chrome,
}

/// `roctx roofline`.
#[derive(Debug, Args)]
#[command(after_help = "Peaks come from the report's device (a gfx arch) or --device: mi300x (gfx942), mi250x-gcd (gfx90a), mi250x, mi250, rx7900xtx (gfx1100), strix-halo (gfx1151), h200. For any other GPU give both --peak-bw and --peak-flops; without peaks the table has no percentages. Percentages are of datasheet peaks, not measured ones.\n\nExit status: 0 success; 2 bad usage, an unknown --device, or a report that could not be read or parsed (the message names the JSON path of the bad value).")]
pub(crate) struct RooflineArgs {
    /// The JSON report the profiler wrote (GGML_ROOFLINE_OUT).
    #[arg(value_name = "REPORT.json")]
    pub(crate) input: PathBuf,
    /// Take the peaks of this device instead of the report's: a gfx arch or a table key.
    #[arg(long, value_name = "ARCH")]
    pub(crate) device: Option<String>,
    /// Peak memory bandwidth in GB/s (10^9 B/s), replacing the device's.
    #[arg(long, value_name = "GBPS", value_parser = positive)]
    pub(crate) peak_bw: Option<f64>,
    /// Peak compute in TFLOP/s, replacing every compute ceiling of the device.
    #[arg(long, value_name = "TFLOPS", value_parser = positive)]
    pub(crate) peak_flops: Option<f64>,
    /// Also write the roofline plot as an SVG file (parent directories are created).
    #[arg(long, value_name = "FILE")]
    pub(crate) svg: Option<PathBuf>,
    /// Print the analysis as one JSON document instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
    /// Show the N groups with the most time (default: 25 in the table, all with --json; 0: all).
    #[arg(long, value_name = "N")]
    pub(crate) top: Option<usize>,
}

/// A finite number above 0.
fn positive(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("expected a number above 0, got {text:?}")),
    }
}
