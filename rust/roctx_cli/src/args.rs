//! The command line, as clap derive types. Owns flag names, help text and exit-status docs;
//! never touches files.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Inspect, merge and convert the XSpace traces (`.xplane.pb`) that roctx_utils and XLA write.
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
