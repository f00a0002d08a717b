//! roctx_utils' own messages to stderr. Owns the `ROCTX_UTILS_LOG` level; never panics, never
//! allocates on the success path of a hot call (messages come from setup and error paths only).
#![forbid(unsafe_code)]

use std::fmt::Arguments;
use std::io::Write;
use std::sync::OnceLock;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    Off,
    Warn,
    Info,
}

fn level() -> Level {
    static LEVEL: OnceLock<Level> = OnceLock::new();
    *LEVEL.get_or_init(|| match std::env::var("ROCTX_UTILS_LOG").as_deref() {
        Ok("off") | Ok("0") | Ok("quiet") => Level::Off,
        Ok("info") | Ok("debug") => Level::Info,
        _ => Level::Warn,
    })
}

fn emit(tag: &str, args: Arguments<'_>) {
    // One write per message so lines from several threads do not interleave.
    let line = format!("roctx_utils: {tag}: {args}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// A warning the user should act on.
pub(crate) fn warn(args: Arguments<'_>) {
    if level() >= Level::Warn {
        emit("warning", args);
    }
}

/// Something worth knowing when debugging a setup (which library loaded, and so on).
pub(crate) fn info(args: Arguments<'_>) {
    if level() >= Level::Info {
        emit("info", args);
    }
}

/// A result the user asked for (e.g. where a trace was written): shown unless logging is off.
pub(crate) fn warn_or_info(args: Arguments<'_>) {
    if level() >= Level::Warn {
        emit("info", args);
    }
}

/// `warn_once!(FLAG, "...")`: the first caller that flips `FLAG` logs; later ones stay silent.
macro_rules! warn_once {
    ($flag:expr, $($arg:tt)+) => {{
        if !$flag.swap(true, ::std::sync::atomic::Ordering::Relaxed) {
            $crate::log::warn(format_args!($($arg)+));
        }
    }};
}
pub(crate) use warn_once;
