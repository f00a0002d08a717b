/*!
`roctx`: inspect, merge and convert the XSpace traces (`.xplane.pb`) that roctx_utils and XLA
write, without TensorBoard.

```text
roctx inspect run/                         planes, XProf rows, nesting; exit 1 on validation errors
roctx inspect --json host.xplane.pb        the same as one JSON document
roctx merge xla_run/ roctx_run/ -o all.xplane.pb
roctx convert --format chrome run/ -o trace.json.gz
```

A thin binary over `roctx_export`: each subcommand module reads inputs through [`input`],
calls the library, and prints; [`messages`] owns the `roctx:` errors and exit codes.
*/
#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

mod args;
mod convert;
mod input;
mod inspect;
mod merge;
mod messages;

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
