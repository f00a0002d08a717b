//! The command line, as clap derive types. Owns flag names, help text and exit-status docs;
//! never touches files.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Inspect, merge and convert the XSpace traces (`.xplane.pb`) that roctx_utils and XLA write;
/// analyse ggml roofline reports.
///
/// An INPUT is a `.xplane.pb` file; a run directory (`<logdir>/plugins/profile/<run>`), which
/// stands for its files, one per process of a job (`<host>_rank3.xplane.pb`, ...); or a
/// TensorBoard log directory (the one given to `tensorboard --logdir`), which stands for the
/// files of its newest run.
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
    /// Merge XSpaces into one file: captures of one process (e.g. XLA's and roctx_utils'), or with
    /// --per-process the processes of a multi-process run.
    Merge(MergeArgs),
    /// Convert an XSpace, or the files of a run, to another trace format.
    Convert(ConvertArgs),
    /// Per-op GPU roofline of a ggml/llama.cpp roofline report (GGML_ROOFLINE_OUT).
    Roofline(RooflineArgs),
    /// Summarize a trace as `nsys stats` does: ranges per label, kernels per name, copies per
    /// direction, and the GPU time each range label launched.
    Stats(StatsArgs),
    /// Run a command with roctx_utils attached (ROCm or NVIDIA) and write its ROCTX ranges,
    /// kernels and copies as an XProf log directory: `roctx record -- python train.py`.
    Record(RecordArgs),
}

/// `roctx record`.
#[derive(Debug, Args)]
#[command(after_help = "ROCm: the tool library (lib/libroctx_utils_tool.so) is added to ROCP_TOOL_LIBRARIES, and rocprofiler-sdk loads it into the command (with any other tool already listed, e.g. rocprofv3's). NVIDIA: NVTX_INJECTION64_PATH names lib/libroctx_utils_nvtx.so, and CUPTI traces the kernels. Both: every process the command starts writes <LOGDIR>/plugins/profile/<run>/<host>_<pid or rank>.xplane.pb at its exit; Python processes get the annotation hooks (ROCTX_UTILS_PYTHON_HOOKS=1).\n\nA signal sent to roctx (kill, timeout, a job scheduler's SIGTERM) is passed on to the command, so it can write its files; a terminal's Ctrl-C reaches the command directly.\n\nExit status: the command's own (a command killed by a signal makes roctx die of the same signal); 2 when roctx could not start it (no platform found, a missing library, an unwritable log directory: all checked before the command starts).")]
pub(crate) struct RecordArgs {
    /// The log directory to write (what `xprof --logdir` and `tensorboard --logdir` take); created
    /// if missing.
    #[arg(short = 'o', long = "output", value_name = "LOGDIR", default_value = "roctx_logs")]
    pub(crate) output: PathBuf,
    /// Also write the per-op roofline report (llama.cpp's GGML_ROOFLINE_OUT format) here.
    #[arg(long, value_name = "FILE")]
    pub(crate) roofline: Option<PathBuf>,
    /// Do not trace kernel dispatches and copies: ROCTX ranges only.
    #[arg(long)]
    pub(crate) no_kernels: bool,
    /// Which GPU stack to attach to (auto: ROCm where rocprofiler-sdk is installed, NVIDIA where
    /// the CUDA driver is, CPU-only where neither is; none: CPU-only, no kernels).
    #[arg(long, value_enum, default_value_t = Platform::Auto)]
    pub(crate) platform: Platform,
    /// The run's name (its directory under plugins/profile/; default: ROCTX_UTILS_RUN_NAME, else
    /// the start time, as XProf names runs).
    #[arg(long, value_name = "NAME")]
    pub(crate) run_name: Option<String>,
    /// Where libroctx_utils_tool.so and libroctx_utils_nvtx.so are (default: ../lib from this
    /// binary, as the release tarball lays them out).
    #[arg(long, value_name = "DIR")]
    pub(crate) lib_dir: Option<PathBuf>,
    /// When to say what was captured: when the command ends (primary), or when every process it
    /// started has ended too (all: background workers, daemons that keep our file descriptor),
    /// as `nsys --wait`.
    #[arg(long, value_enum, default_value_t = Wait::Primary)]
    pub(crate) wait: Wait,
    /// A progress line while the command runs (elapsed time, processes, ranges and marks, GPU
    /// activities, trace files written so far): on a terminal (auto), or always, or never.
    #[arg(long, value_enum, default_value_t = Progress::Auto)]
    pub(crate) progress: Progress,
    /// Record only from this many seconds after the command starts (nsys --delay; with
    /// --capture-range, triggers before then are ignored).
    #[arg(long, value_name = "SEC")]
    pub(crate) delay: Option<String>,
    /// Close each capture window at most this many seconds after it opened (nsys --duration;
    /// without --capture-range, one window from the delay on).
    #[arg(long, value_name = "SEC")]
    pub(crate) duration: Option<String>,
    /// Record only inside capture windows: range:NAME (from the first push of a range labelled
    /// NAME, in any NVTX domain, to its pop, as nsys -c nvtx -p NAME; range:NAME@DOMAIN for one
    /// domain), profiler-api (between cudaProfilerStart/Stop, hipProfilerStart/Stop,
    /// roctxProfilerResume/Pause, roctx_utils.start()/stop()), or none (the whole run). Each
    /// window is written as a run of its own, <run>-window<N>.
    #[arg(long, value_name = "KIND")]
    pub(crate) capture_range: Option<String>,
    /// After a capture window closes: stop (no more windows), repeat (each trigger opens one),
    /// repeat:N (at most N windows), as nsys --capture-range-end.
    #[arg(long, value_name = "END")]
    pub(crate) capture_range_end: Option<String>,
    /// The command and its arguments, after `--`.
    #[arg(value_name = "COMMAND", required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub(crate) command: Vec<OsString>,
}

/// `roctx record --wait`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Wait {
    /// The command itself.
    Primary,
    /// The command and every process it started.
    All,
}

/// `roctx record --progress`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Progress {
    /// When stderr is a terminal: one line, rewritten in place every second.
    Auto,
    /// Always: on a terminal in place, elsewhere a new line every second (logs, tests).
    Always,
    /// Never.
    Never,
}

/// `roctx record --platform`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Platform {
    /// ROCm if rocprofiler-sdk is found, NVIDIA if the CUDA driver is.
    Auto,
    /// AMD ROCm: the rocprofiler-sdk tool library.
    Rocm,
    /// NVIDIA CUDA: the NVTX injection library and CUPTI.
    Nvidia,
    /// No GPU stack: NVTX ranges and Python annotations recorded in-process, no kernels (what
    /// `auto` falls back to where neither stack is installed).
    None,
}

/// `roctx inspect`.
#[derive(Debug, Args)]
#[command(after_help = "Exit status: 0 no validation errors (warnings allowed); 1 validation errors; 2 bad usage or unreadable input.")]
pub(crate) struct InspectArgs {
    /// A .xplane.pb file, a run directory (each of its files), or a TensorBoard log directory
    /// (each file of its newest run). Several files are listed first as the run's processes.
    #[arg(value_name = "INPUT")]
    pub(crate) input: PathBuf,
    /// Print one JSON document (stable keys; for several files also "processes" and "run")
    /// instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `roctx merge`.
#[derive(Debug, Args)]
#[command(after_help = "Without --per-process the inputs are captures of one process (e.g. XLA's capture and a roctx_utils log directory of the same run): lines of the same host thread end up in one /host:CPU plane, each ROCTX row directly below its thread's row, and a GPU plane filled by several inputs is kept once.\n\nWith --per-process each input file is one process of a job (a run directory or log directory stands for its files): each keeps its own planes, named after the file (/host:CPU h_rank3, /device:GPU:0 h_rank3), so XProf shows every process apart in one file; all are moved onto the earliest session start.\n\nExit status: 0 merged, no validation errors; 1 merged, but the result has validation errors; 2 bad usage, or an input could not be read or the output written.")]
pub(crate) struct MergeArgs {
    /// .xplane.pb files, run directories (each of their files) or log directories (each file of
    /// their newest run).
    #[arg(value_name = "INPUT", required = true)]
    pub(crate) inputs: Vec<PathBuf>,
    /// Keep each input file apart as its own process (one file per rank or GPU process) instead
    /// of merging threads and GPUs that share ids: its planes get the file's name appended.
    #[arg(long)]
    pub(crate) per_process: bool,
    /// Where to write the merged XSpace (parent directories are created; never an input).
    #[arg(short, long, value_name = "OUT.xplane.pb")]
    pub(crate) output: PathBuf,
}

/// `roctx convert`.
#[derive(Debug, Args)]
#[command(after_help = "Several files (a run directory, or a log directory whose newest run has several: one file per process) become one trace, read one file at a time: each file's planes are processes named after it (h_rank3 /host:CPU), with pids from k*100000+1 for the k-th file, all on the first file's session start.\n\nExit status: 0 written; 2 bad usage, or an input could not be read or the output written.")]
pub(crate) struct ConvertArgs {
    /// Output format.
    #[arg(long, value_enum)]
    pub(crate) format: Format,
    /// A .xplane.pb file, a run directory or a log directory (its newest run). Several files
    /// (one per process) become one trace: a process group per file, named after it.
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

/// `roctx stats`.
#[derive(Debug, Args)]
#[command(after_help = "Reports:\n  ranges     per ROCTX/NVTX range label: count, total, average, median, min, max, % of the traced time. Every range counts its whole duration, nested ranges included, as nsys's nvtx_sum does: a nested range's time is in its own row and in each enclosing range's.\n  kernels    per kernel name (as the trace carries it): count, total GPU time, average, median, min, max, % of all kernels' time. The events XProf's kernel_stats counts (kernel_details on /device:GPU planes).\n  copies     per kind (memcpy, memset) and direction: count, bytes, total time, GB/s.\n  range_gpu  per range label: the GPU time of the kernels and copies its ranges launched, inclusive and exclusive of nested ranges, and the projection from each range's first GPU start to its last GPU end (nsys's nvtx_gpu_proj_sum).\n\nThe traced time is the session's (profile_start_time to profile_stop_time), summed over the files of a run. Several files are combined unless --per-process. Rows are sorted by total time, longest first. CSV: one table per report, each with its header, separated by a blank line; JSON: one document; docs/stats.md has both schemas. Times in CSV and JSON are ns. Labels and names from the files print on one line (a control character shows as U+FFFD), and a CSV cell starting with = + - @ gets a leading ' (no spreadsheet formula).\n\nBounds: each report keeps 100000 distinct labels (with their group); the events of later ones are summed in one row, \"(other labels)\", and a note says how many. Memory is then about what decoding the input takes (about 13 times its size) and a few tens of MB more.\n\nExit status: 0 success; 2 bad usage, or an input could not be read.")]
pub(crate) struct StatsArgs {
    /// A .xplane.pb file, a run directory (its files) or a log directory (its newest run).
    #[arg(value_name = "INPUT")]
    pub(crate) input: PathBuf,
    /// The reports to print, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "ranges,kernels,copies,range_gpu")]
    pub(crate) report: Vec<StatsReport>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = StatsFormat::Table)]
    pub(crate) format: StatsFormat,
    /// Show the N rows with the most time per table (default: 25 in a table, all in CSV and
    /// JSON; 0: all).
    #[arg(long, value_name = "N")]
    pub(crate) top: Option<usize>,
    /// One set of reports per file of a run (each a process of a job) instead of one combined.
    #[arg(long)]
    pub(crate) per_process: bool,
    /// Ranges and their GPU time per thread; kernels and copies per GPU stream.
    #[arg(long)]
    pub(crate) per_thread: bool,
    /// Count range labels that differ only in an XLA `#...#` payload as one (`Thunk:#hlo_op=a#`
    /// and `Thunk:#hlo_op=b#` are `Thunk:`).
    #[arg(long)]
    pub(crate) fold_payload: bool,
}

/// A report of `roctx stats`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum StatsReport {
    /// Range labels.
    Ranges,
    /// Kernel names.
    Kernels,
    /// Memory copies and sets.
    Copies,
    /// GPU time per range label.
    #[value(name = "range_gpu")]
    RangeGpu,
}

/// How `roctx stats` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum StatsFormat {
    /// Aligned columns, times in us.
    Table,
    /// Comma-separated values, times in ns.
    Csv,
    /// One JSON document, times in ns.
    Json,
}

/// `roctx roofline`.
#[derive(Debug, Args)]
#[command(after_help = "Peaks come from the report's device (a gfx arch) or --device: mi300x (gfx942), mi250x-gcd (gfx90a), mi250x, mi250, rx7900xtx (gfx1100), strix-halo (gfx1151), h200. For any other GPU give both --peak-bw and --peak-flops; without peaks the table has no percentages. Percentages are of datasheet peaks, not measured ones.\n\nExit status: 0 success; 2 bad usage, an unknown --device, or a report that could not be read or parsed (the message names the JSON path of the bad value).")]
pub(crate) struct RooflineArgs {
    /// The JSON report the profiler wrote (GGML_ROOFLINE_OUT); several (a process's and its
    /// fork children's `report.pid<N>.json`, a job's ranks) are joined into one.
    #[arg(value_name = "REPORT.json", required = true, num_args = 1..)]
    pub(crate) inputs: Vec<PathBuf>,
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
