//! Environment parsing for the emitter. Owns the `XLA_ROCM_ENABLE_ROCTX` latch and the string
//! pool cap. Pure parsing is split from the latches so it can be unit-tested without touching
//! the process environment.
#![forbid(unsafe_code)]

use std::ffi::OsStr;
use std::sync::OnceLock;

/// Upstream's name: the emitter is a drop-in for XLA's ROCm backend.
pub(crate) const ENABLE_VAR: &str = "XLA_ROCM_ENABLE_ROCTX";
/// Cap on RegisterString's pool, in bytes.
pub(crate) const POOL_VAR: &str = "ROCTX_UTILS_STRING_POOL_BYTES";

/// tsl::ReadBoolFromEnvVar's grammar: `0`/`false`/`1`/`true`, ASCII case-insensitive, nothing
/// else (no trimming, no `yes`/`on`, and the empty string is an error). `Err` carries the raw
/// value for the warning.
pub(crate) fn parse_bool(raw: &OsStr) -> Result<bool, String> {
    match raw.to_str() {
        Some(s) if s == "0" || s.eq_ignore_ascii_case("false") => Ok(false),
        Some(s) if s == "1" || s.eq_ignore_ascii_case("true") => Ok(true),
        _ => Err(raw.to_string_lossy().into_owned()),
    }
}

/// Whether range emission is on. Read once, at the first call, and latched for the process: a
/// later `setenv` in either direction has no effect (callers read the domain separately at push
/// and pop, so it must never change).
pub fn emission_enabled() -> bool {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    *ENABLED.get_or_init(|| match std::env::var_os(ENABLE_VAR) {
        None => false,
        Some(raw) => parse_bool(&raw).unwrap_or_else(|raw| {
            crate::log::warn(format_args!(
                "{ENABLE_VAR} is set to an unrecognised value; expected one of 0/false/1/true. \
                 ROCTX emission stays disabled. Failed to parse the env-var {ENABLE_VAR} into \
                 bool: {raw:?}. Use the default value: false"
            ));
            false
        }),
    })
}

/// Parses a byte count: a decimal integer with an optional `k`, `m` or `g` suffix (binary
/// multiples, case-insensitive).
pub(crate) fn parse_bytes(raw: &str) -> Option<usize> {
    let s = raw.trim();
    let (digits, shift) = match s.as_bytes().last()?.to_ascii_lowercase() {
        b'k' => (&s[..s.len() - 1], 10),
        b'm' => (&s[..s.len() - 1], 20),
        b'g' => (&s[..s.len() - 1], 30),
        _ => (s, 0),
    };
    let n: usize = digits.parse().ok()?;
    n.checked_mul(1usize << shift)
}

/// The pool cap from the environment, or `default` (with a warning for a bad value).
pub(crate) fn pool_cap(default: usize) -> usize {
    match std::env::var(POOL_VAR) {
        Err(std::env::VarError::NotPresent) => default,
        Ok(raw) if parse_bytes(&raw).is_some() => parse_bytes(&raw).unwrap_or(default),
        Ok(raw) => {
            crate::log::warn(format_args!(
                "{POOL_VAR}={raw:?} is not a byte count (e.g. 67108864, 64m); using the default {default}"
            ));
            default
        }
        Err(std::env::VarError::NotUnicode(raw)) => {
            crate::log::warn(format_args!(
                "{POOL_VAR}={raw:?} is not a byte count; using the default {default}"
            ));
            default
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bool_grammar_matches_tsl() {
        for ok in ["1", "true", "TRUE", "True", "tRuE"] {
            assert_eq!(parse_bool(OsStr::new(ok)), Ok(true), "{ok}");
        }
        for ok in ["0", "false", "FALSE", "False"] {
            assert_eq!(parse_bool(OsStr::new(ok)), Ok(false), "{ok}");
        }
        for bad in ["", "yes", "on", " 1", "1 ", "2", "01", "truee", "no"] {
            assert_eq!(parse_bool(OsStr::new(bad)), Err(bad.to_string()), "{bad:?}");
        }
    }

    #[test]
    fn byte_counts_accept_suffixes_and_reject_junk() {
        assert_eq!(parse_bytes("4096"), Some(4096));
        assert_eq!(parse_bytes("64m"), Some(64 << 20));
        assert_eq!(parse_bytes("2K"), Some(2048));
        assert_eq!(parse_bytes("1g"), Some(1 << 30));
        assert_eq!(parse_bytes("0"), Some(0));
        for bad in ["", "m", "-1", "1.5m", "lots", "99999999999999999999999g"] {
            assert_eq!(parse_bytes(bad), None, "{bad:?}");
        }
    }
}
