//! The grammars values are parsed with: one for our booleans, rocprofiler-register's looser one
//! for its own variables, tsl's stricter one where the variable is XLA's, and byte counts.
//! Pure functions, so they are tested without touching the process environment.

/// Booleans: `1`/`true`/`yes`/`on` and `0`/`false`/`no`/`off`, ASCII case-insensitive, nothing
/// else (no trimming); `None` for anything else.
pub fn parse_bool(raw: &str) -> Option<bool> {
    const TRUE: [&str; 4] = ["1", "true", "yes", "on"];
    const FALSE: [&str; 4] = ["0", "false", "no", "off"];
    if TRUE.iter().any(|t| raw.eq_ignore_ascii_case(t)) {
        Some(true)
    } else if FALSE.iter().any(|f| raw.eq_ignore_ascii_case(f)) {
        Some(false)
    } else {
        None
    }
}

/// rocprofiler-register's grammar: anything but `0`/`false`/`no`/`off`/`n`/`f` (ASCII
/// case-insensitive) is true. Looser than [`parse_bool`] on purpose: the abort guard must see
/// `ROCPROFILER_REGISTER_FORCE_LOAD=2` or `=enabled` as register does, or it would let roctx's
/// first call reach a forced tool scan it meant to refuse.
pub fn parse_bool_register(raw: &str) -> bool {
    const FALSE: [&str; 6] = ["0", "false", "no", "off", "n", "f"];
    !FALSE.iter().any(|f| raw.eq_ignore_ascii_case(f))
}

/// tsl::ReadBoolFromEnvVar's grammar, for `XLA_ROCM_ENABLE_ROCTX`: `0`/`false`/`1`/`true`, ASCII
/// case-insensitive, nothing else (no trimming, no `yes`/`on`, and the empty string is an
/// error).
pub fn parse_bool_tsl(raw: &std::ffi::OsStr) -> Option<bool> {
    match raw.to_str() {
        Some(s) if s == "0" || s.eq_ignore_ascii_case("false") => Some(false),
        Some(s) if s == "1" || s.eq_ignore_ascii_case("true") => Some(true),
        _ => None,
    }
}

/// A byte count: a decimal integer with an optional `k`, `m` or `g` suffix (binary multiples,
/// case-insensitive), surrounding whitespace ignored.
pub fn parse_bytes(raw: &str) -> Option<usize> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn bool_grammar_matches_tsl() {
        for ok in ["1", "true", "TRUE", "True", "tRuE"] {
            assert_eq!(parse_bool_tsl(OsStr::new(ok)), Some(true), "{ok}");
        }
        for ok in ["0", "false", "FALSE", "False"] {
            assert_eq!(parse_bool_tsl(OsStr::new(ok)), Some(false), "{ok}");
        }
        for bad in ["", "yes", "on", " 1", "1 ", "2", "01", "truee", "no"] {
            assert_eq!(parse_bool_tsl(OsStr::new(bad)), None, "{bad:?}");
        }
    }

    #[test]
    fn our_bool_grammar_takes_yes_and_on_but_nothing_vague() {
        for t in ["1", "true", "YES", "On"] {
            assert_eq!(parse_bool(t), Some(true), "{t}");
        }
        for f in ["0", "False", "no", "OFF"] {
            assert_eq!(parse_bool(f), Some(false), "{f}");
        }
        for bad in ["", " 1", "2", "y", "n", "enable"] {
            assert_eq!(parse_bool(bad), None, "{bad:?}");
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
