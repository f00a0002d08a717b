/*!
`roctx`: inspect, merge and convert the XSpace traces (`.xplane.pb`) that roctx_utils and XLA
write, without TensorBoard; and the per-op roofline of a ggml roofline report.

```text
roctx inspect run/                         planes, XProf rows, nesting; exit 1 on validation errors
roctx inspect --json host.xplane.pb        the same as one JSON document
roctx merge xla_run/ roctx_run/ -o all.xplane.pb   two captures of one process
roctx merge --per-process logs/ -o job.xplane.pb   a run's processes (one file each), kept apart
roctx convert --format chrome run/ -o trace.json.gz  several files: a process group per file
roctx roofline report.json --svg roofline.svg  per-op roofline of a ggml GGML_ROOFLINE_OUT report
roctx stats logs/ --report kernels,range_gpu   nsys-stats-style summaries (table, CSV or JSON)
roctx record -o logs -- python train.py     run a command with roctx_utils attached (ROCm or NVIDIA)
```

An input is a file, a run directory (`<logdir>/plugins/profile/<run>`: one file per process of
a job, e.g. `<host>_rank3.xplane.pb`) or a log directory (its newest run). `inspect` of several
files lists the run's processes first.

A thin binary over `roctx_export` and `roctx_roofline`: each subcommand module reads inputs through [`input`],
calls the library, writes through [`output`] and prints; [`messages`] owns the `roctx:` errors
and exit codes.

# Limits

- **Inputs** are regular files (or log directories of them) of at most 1 GiB
  ([`input::MAX_INPUT_BYTES`]); anything else (a FIFO, a device such as `/dev/zero`) is refused
  by type before it is opened, a larger file by size before it is read.
- **Memory** is proportional to the input: each input is decoded whole. Peak RSS measured on
  the worst case, a 10 MB file of 5 M two-byte events (a 56-byte `XEvent` each in memory):
  `convert` 286 MB (~29 bytes per input byte, [`input::MEMORY_PER_INPUT_BYTE`]: the decoded
  XSpace, the JSON is streamed; a run's files are decoded one at a time), `inspect` and `inspect --json` 393 MB (~39x: one decoded file
  at a time, plus 16 bytes per event of the line whose nesting depth is measured; the summary
  is proportional to lines), `merge` 550 MB (~55x:
  the inputs and the result). Ordinary traces, whose events carry offsets, durations and
  stats, take less per byte. At the 1 GiB input limit that is up to ~30-55 GiB.
- **Findings**: a problem repeated on many events (missing metadata, negative durations,
  dangling refs, shared rows, reused line ids) is reported once per kind and plane, with its
  count and first occurrence, so output is proportional to the distinct problems, not to the
  events. Error counts (`error_count`, "N errors", the exit status) count occurrences.
- **Time**: `merge` is O(n log n) in lines, events and planes.
- **Outputs** (`-o`) are written to a temporary file next to the destination and renamed into
  place, and only ever replace a regular file that is not an input; a directory, FIFO, socket,
  device or symbolic link there is refused (exit 2). The temporary file is removed on every
  failure, a full disk included.
*/
#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

mod args;
mod convert;
mod input;
mod inspect;
mod merge;
mod messages;
mod output;
mod platform;
mod progress;
mod record;
mod roofline;
mod stats;

use std::process::ExitCode;

use clap::Parser;

use crate::args::{Cli, Command};
use crate::messages::FAILED;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return ExitCode::from(usage(&err)),
    };
    let result = match &cli.command {
        Command::Inspect(args) => inspect::run(args),
        Command::Merge(args) => merge::run(args),
        Command::Convert(args) => convert::run(args),
        Command::Roofline(args) => roofline::run(args),
        Command::Stats(args) => stats::run(args),
        Command::Record(args) => record::run(args),
    };
    ExitCode::from(match result {
        Ok(status) => status.code(),
        Err(failure) => failure.report(),
    })
}

/// `--help` and `--version` print to stdout and exit 0; a bare `roctx` prints the help to stderr
/// and exits 2; usage errors get clap's text behind the `roctx:` prefix and exit 2.
fn usage(err: &clap::Error) -> u8 {
    if !err.use_stderr() {
        // A closed stdout while printing help is nobody's problem.
        let _ = err.print();
        return 0;
    }
    if err.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        let _ = err.print();
        return FAILED;
    }
    let text = err.render().to_string();
    let text = text.strip_prefix("error: ").unwrap_or(&text);
    messages::error(text.trim_end());
    FAILED
}
