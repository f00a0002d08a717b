//! What the user sees when something goes wrong, and the exit statuses. Owns the `roctx:`
//! prefix, hints, and the one place that maps a failure to an exit code; holds no state.
//!
//! One meaning per exit code: 0 success, 1 the trace has validation errors (so scripts can gate
//! on `roctx inspect`), 2 bad usage or an input/output problem. A closed stdout (`| head`) is
//! not an error: the command stops quietly with 0.

use std::fmt::Display;
use std::io::{self, Write};
use std::path::Path;

/// Exit status of a command that ran to the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    /// Done, no validation errors (warnings allowed).
    Clean,
    /// Done, but validation found errors: what XProf would draw wrong.
    Invalid,
    /// `roctx record`: the recorded command's own exit code.
    Exit(u8),
}

impl Status {
    /// The process exit code.
    pub(crate) fn code(self) -> u8 {
        match self {
            Status::Clean => 0,
            Status::Invalid => 1,
            Status::Exit(code) => code,
        }
    }
}

/// Exit code for bad usage and for inputs or outputs that could not be read, decoded or written.
pub(crate) const FAILED: u8 = 2;

/// Why a command stopped early.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Printed as `roctx: <message>`, then `hint: <hint>`; exit [`FAILED`].
    Fatal {
        /// The thing and the cause.
        message: String,
        /// The next step, if there is one worth naming.
        hint: Option<String>,
    },
    /// stdout was closed by its reader: exit 0, print nothing.
    BrokenPipe,
}

impl Failure {
    /// A fatal error without a hint.
    pub(crate) fn new(message: impl Into<String>) -> Failure {
        Failure::Fatal { message: message.into(), hint: None }
    }

    /// Adds the next step to a fatal error.
    pub(crate) fn hint(self, hint: impl Into<String>) -> Failure {
        match self {
            Failure::Fatal { message, .. } => Failure::Fatal { message, hint: Some(hint.into()) },
            other => other,
        }
    }

    /// `<what> <path>: <err>`, e.g. "writing out.json: Permission denied (os error 13)".
    pub(crate) fn io(what: &str, path: &Path, err: impl Display) -> Failure {
        Failure::new(format!("{what} {}: {err}", path.display()))
    }

    /// A failed write to stdout: a closed pipe ends the command quietly.
    pub(crate) fn stdout(err: io::Error) -> Failure {
        if err.kind() == io::ErrorKind::BrokenPipe {
            Failure::BrokenPipe
        } else {
            Failure::new(format!("writing to stdout: {err}"))
        }
    }

    /// Prints the failure (if it has anything to say) and returns the exit code.
    pub(crate) fn report(self) -> u8 {
        match self {
            Failure::BrokenPipe => 0,
            Failure::Fatal { message, hint } => {
                error(&message);
                if let Some(text) = hint {
                    self::hint(&text);
                }
                FAILED
            }
        }
    }
}

/// `text` with every control character but the line break replaced by U+FFFD: names and paths
/// come from files and their names, and none of them may reach a terminal as an escape
/// sequence (C0, DEL and the C1 controls, `ESC [` and its one-character form `CSI` included).
pub(crate) fn printable(text: &str) -> String {
    text.chars().map(|c| if c.is_control() && c != '\n' { '\u{fffd}' } else { c }).collect()
}

/// `text` on one line: every control character, line breaks included, replaced by U+FFFD. For
/// what a file says (a label, a note, a warning, a host or device name): a line break in it would
/// print as a row or a note of its own, one a received file could forge (issue 40).
pub(crate) fn one_line(text: &str) -> String {
    text.chars().map(|c| if c.is_control() { '\u{fffd}' } else { c }).collect()
}

/// `writeln!` for the lines of a report: the line is made [`one_line`] before it is written, so
/// the only line breaks in a report are the ones its code writes.
macro_rules! text_line {
    ($out:expr, $($t:tt)*) => {
        writeln!($out, "{}", $crate::messages::one_line(&format!($($t)*)))
    };
}
pub(crate) use text_line;

/// `roctx: <message>` on stderr. A closed stderr is ignored: there is nobody left to tell.
pub(crate) fn error(message: &str) {
    let _ = writeln!(io::stderr(), "roctx: {}", printable(message));
}

/// `roctx: warning: <message>` on stderr, for what limits the output without stopping it.
pub(crate) fn warning(message: &str) {
    let _ = writeln!(io::stderr(), "roctx: warning: {}", printable(message));
}

/// `hint: <next step>` on stderr, after an error.
pub(crate) fn hint(text: &str) {
    let _ = writeln!(io::stderr(), "hint: {}", printable(text));
}

/// Writes `text` to stderr, control characters made [`printable`]; a closed stderr is ignored.
pub(crate) fn print_err(text: &str) {
    let _ = io::stderr().write_all(printable(text).as_bytes());
}

/// Writes `text` to stdout and flushes it.
pub(crate) fn print(text: &str) -> Result<(), Failure> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush()).map_err(Failure::stdout)
}

/// `n` and the noun for it: `1 kernel`, `3 kernels` (`one` and `many` spelled out: "kernel or
/// copy" / "kernels and copies").
pub(crate) fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
