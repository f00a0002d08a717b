//! roctx_utils' own messages to stderr, at the `ROCTX_UTILS_LOG` level. Never panics; messages
//! come from setup and error paths only, never from a hot call's success path.

use std::fmt::Arguments;
use std::io::Write;

use crate::LogLevel;

fn level() -> LogLevel {
    crate::get().log
}

fn emit(tag: &str, args: Arguments<'_>) {
    // One write per message so lines from several threads do not interleave.
    let line = format!("roctx_utils: {tag}: {args}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// A warning the user should act on.
pub fn warn(args: Arguments<'_>) {
    if level() >= LogLevel::Warn {
        emit("warning", args);
    }
}

/// Something worth knowing when debugging a setup (which library loaded, and so on).
pub fn info(args: Arguments<'_>) {
    if level() >= LogLevel::Info {
        emit("info", args);
    }
}

/// A result the user asked for (e.g. where a trace was written): shown unless logging is off.
pub fn result(args: Arguments<'_>) {
    if level() >= LogLevel::Warn {
        emit("info", args);
    }
}

/// `warn_once!(FLAG, "...")`: the first caller that flips the `AtomicBool` `FLAG` logs; later
/// ones stay silent.
#[macro_export]
macro_rules! warn_once {
    ($flag:expr, $($arg:tt)+) => {{
        if !$flag.swap(true, ::std::sync::atomic::Ordering::Relaxed) {
            $crate::log::warn(format_args!($($arg)+));
        }
    }};
}
