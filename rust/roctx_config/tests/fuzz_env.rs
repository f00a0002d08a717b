//! Bounded fuzzing of the environment parsers: `Config::from_lookup` and `RegisterEnv::from_lookup`
//! with arbitrary values (non-UTF-8, control characters, huge, overflowing numbers) for every
//! variable of `VARS`, and the grammars of `roctx_config::grammar`. Deterministic; runs in
//! `cargo test`. See rust/fuzz/README.md.
//!
//! Each corpus file (`rust/fuzz/corpus/env/`) is one raw value. Every input is given to every
//! variable at once, to each variable alone, and to a mix, and every field of the result is
//! checked against a reference reading of the documented grammar: a bool variable is its
//! parsed value, or the documented default plus exactly one warning naming it; a byte count is
//! exact or refused (never wrapped: anything above `usize::MAX` is refused); paths come back
//! byte for byte. Warnings never contain a raw control character (a value cannot forge a line
//! of roctx_utils' stderr).

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use roctx_config::grammar::{parse_bool, parse_bool_register, parse_bool_tsl, parse_bytes};
use roctx_config::{CaptureRange, RangeEnd, CaptureRequest, ClockRequest, Config, CuptiApi, LogLevel, MoeAccounting, RegisterEnv, When, DEFAULT_STRING_POOL_BYTES, VARS};

#[path = "../../fuzz/mutate.rs"]
mod mutate;

const ENV: mutate::Config = mutate::Config {
    name: "env",
    manifest_dir: env!("CARGO_MANIFEST_DIR"),
    mutations_per_seed: 1000,
    max_len: 4096,
    protobuf: false,
    known_bugs: &[],
};

// ---------------------------------------------------------------------------------------------
// Reference readings of the documented grammars (written from the docs, not the code).

fn ascii_lower(s: &str) -> String {
    s.to_ascii_lowercase()
}

/// `1|true|yes|on` / `0|false|no|off`, ASCII case-insensitive, untrimmed.
fn ref_bool(s: &str) -> Option<bool> {
    match ascii_lower(s).as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// tsl: `0|false|1|true`, ASCII case-insensitive, untrimmed, UTF-8 only.
fn ref_bool_tsl(raw: &OsStr) -> Option<bool> {
    match raw.to_str().map(ascii_lower).as_deref() {
        Some("0" | "false") => Some(false),
        Some("1" | "true") => Some(true),
        _ => None,
    }
}

/// rocprofiler-register: anything but `0|false|no|off|n|f` is true.
fn ref_bool_register(s: &str) -> bool {
    !matches!(ascii_lower(s).as_str(), "0" | "false" | "no" | "off" | "n" | "f")
}

/// A decimal count (one optional leading `+`, as Rust's unsigned parse allows), optional
/// `k|m|g` (binary, case-insensitive), surrounding whitespace ignored; computed in u128, so a
/// value above `usize::MAX` is refused rather than wrapped.
fn ref_bytes(raw: &str) -> Option<usize> {
    let s = raw.trim();
    let (digits, multiplier): (&str, u128) = match s.chars().last()?.to_ascii_lowercase() {
        'k' => (&s[..s.len() - 1], 1 << 10),
        'm' => (&s[..s.len() - 1], 1 << 20),
        'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    let digits = digits.strip_prefix('+').unwrap_or(digits);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut n: u128 = 0;
    for b in digits.bytes() {
        n = n.checked_mul(10)?.checked_add(u128::from(b - b'0'))?;
        if n > u128::from(u64::MAX) {
            return None;
        }
    }
    usize::try_from(n.checked_mul(multiplier)?).ok()
}

fn ref_capture(s: &str) -> Option<CaptureRequest> {
    match ascii_lower(s).as_str() {
        "auto" => Some(CaptureRequest::Auto),
        "sdk" => Some(CaptureRequest::Sdk),
        "self" | "inprocess" | "in-process" => Some(CaptureRequest::InProcess),
        "host" => Some(CaptureRequest::Host),
        "off" => Some(CaptureRequest::Off),
        _ => None,
    }
}

fn ref_log(s: &str) -> Option<LogLevel> {
    match ascii_lower(s).as_str() {
        "warn" | "warning" => Some(LogLevel::Warn),
        "info" | "debug" => Some(LogLevel::Info),
        "quiet" => Some(LogLevel::Off),
        other if ref_bool(other) == Some(false) => Some(LogLevel::Off),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Properties.

fn check_grammars(raw: &OsStr) {
    assert_eq!(parse_bool_tsl(raw), ref_bool_tsl(raw), "parse_bool_tsl({raw:?})");
    let lossy = raw.to_string_lossy();
    let texts: Vec<&str> = raw.to_str().into_iter().chain([lossy.as_ref()]).collect();
    for s in texts {
        assert_eq!(parse_bool(s), ref_bool(s), "parse_bool({s:?})");
        assert_eq!(parse_bool_register(s), ref_bool_register(s), "parse_bool_register({s:?})");
        assert_eq!(CaptureRequest::parse(s), ref_capture(s), "CaptureRequest::parse({s:?})");
        // The value itself, with each suffix, and padded: exact or refused, never wrapped.
        for candidate in [s.to_owned(), format!("{s}k"), format!("{s}M"), format!("{s}g"), format!(" {s}\t")] {
            assert_eq!(parse_bytes(&candidate), ref_bytes(&candidate), "parse_bytes({candidate:?})");
        }
    }
}

/// Reads a `Config` with the variables of `set` holding `raw` and checks every field.
fn check_config(raw: &OsStr, set: &[&str]) {
    let has = |name: &str| set.contains(&name);
    let lookup = |name: &str| has(name).then(|| raw.to_os_string());
    let (config, warnings) = Config::from_lookup(&lookup);
    let text = raw.to_str();
    let mut expected_warnings: Vec<&str> = Vec::new();

    let enable = if has(roctx_config::ENABLE_ROCTX) {
        ref_bool_tsl(raw).unwrap_or_else(|| {
            expected_warnings.push(roctx_config::ENABLE_ROCTX);
            false
        })
    } else {
        false
    };
    assert_eq!(config.enable_roctx, enable, "{}={raw:?}", roctx_config::ENABLE_ROCTX);

    let pool = if has(roctx_config::STRING_POOL_BYTES) {
        text.and_then(ref_bytes).unwrap_or_else(|| {
            expected_warnings.push(roctx_config::STRING_POOL_BYTES);
            DEFAULT_STRING_POOL_BYTES
        })
    } else {
        DEFAULT_STRING_POOL_BYTES
    };
    assert_eq!(config.string_pool_bytes, pool, "{}={raw:?}", roctx_config::STRING_POOL_BYTES);

    let capture = if has(roctx_config::CAPTURE) {
        text.and_then(ref_capture).unwrap_or_else(|| {
            expected_warnings.push(roctx_config::CAPTURE);
            CaptureRequest::Auto
        })
    } else {
        CaptureRequest::Auto
    };
    assert_eq!(config.capture, capture, "{}={raw:?}", roctx_config::CAPTURE);

    let log = if has(roctx_config::LOG) {
        text.and_then(ref_log).unwrap_or_else(|| {
            expected_warnings.push(roctx_config::LOG);
            LogLevel::Warn
        })
    } else {
        LogLevel::Warn
    };
    assert_eq!(config.log, log, "{}={raw:?}", roctx_config::LOG);

    let kernels = if has(roctx_config::KERNELS) {
        text.and_then(ref_bool).unwrap_or_else(|| {
            expected_warnings.push(roctx_config::KERNELS);
            true
        })
    } else {
        true
    };
    assert_eq!(config.kernels, kernels, "{}={raw:?}", roctx_config::KERNELS);

    let copies = if has(roctx_config::COPIES) {
        text.and_then(ref_bool).unwrap_or_else(|| {
            expected_warnings.push(roctx_config::COPIES);
            true
        })
    } else {
        true
    };
    assert_eq!(config.copies, copies, "{}={raw:?}", roctx_config::COPIES);

    let cupti_api = if has(roctx_config::CUPTI_API) {
        text.and_then(|t| match t.to_ascii_lowercase().as_str() {
            "launches" | "" => Some(CuptiApi::Launches),
            "all" => Some(CuptiApi::All),
            _ => None,
        })
        .unwrap_or_else(|| {
            expected_warnings.push(roctx_config::CUPTI_API);
            CuptiApi::Launches
        })
    } else {
        CuptiApi::Launches
    };
    assert_eq!(config.cupti_api, cupti_api, "{}={raw:?}", roctx_config::CUPTI_API);

    let clock = if has(roctx_config::CLOCK) {
        text.and_then(|t| match t.to_ascii_lowercase().as_str() {
            "auto" | "" => Some(ClockRequest::Auto),
            "boottime" => Some(ClockRequest::Boottime),
            _ => None,
        })
        .unwrap_or_else(|| {
            expected_warnings.push(roctx_config::CLOCK);
            ClockRequest::Auto
        })
    } else {
        ClockRequest::Auto
    };
    assert_eq!(config.clock, clock, "{}={raw:?}", roctx_config::CLOCK);

    let signals = if has(roctx_config::SIGNALS) {
        text.and_then(ref_bool).unwrap_or_else(|| {
            expected_warnings.push(roctx_config::SIGNALS);
            true
        })
    } else {
        true
    };
    assert_eq!(config.signals, signals, "{}={raw:?}", roctx_config::SIGNALS);

    // Seconds from 1 to 86400; empty, 0 and off mean none; anything else warns and means none.
    let flush_every = if has(roctx_config::FLUSH_EVERY) {
        match text.map(str::trim) {
            Some("" | "0" | "off") => None,
            t => match t.and_then(|t| t.parse::<f64>().ok()).filter(|s| (1.0..=86_400.0).contains(s)) {
                Some(secs) => Some(std::time::Duration::from_secs_f64(secs)),
                None => {
                    expected_warnings.push(roctx_config::FLUSH_EVERY);
                    None
                }
            },
        }
    } else {
        None
    };
    assert_eq!(config.flush_every, flush_every, "{}={raw:?}", roctx_config::FLUSH_EVERY);

    // The automatic session's caps: a positive count with k/m/g; anything else warns.
    for (name, default, got) in [
        (roctx_config::MAX_EVENTS_PER_THREAD, roctx_config::DEFAULT_MAX_EVENTS_PER_THREAD, config.max_events_per_thread),
        (roctx_config::MAX_LABEL_BYTES_PER_THREAD, roctx_config::DEFAULT_MAX_LABEL_BYTES_PER_THREAD, config.max_label_bytes_per_thread),
    ] {
        let want = if has(name) {
            text.and_then(ref_bytes).filter(|&n| n > 0).unwrap_or_else(|| {
                expected_warnings.push(name);
                default
            })
        } else {
            default
        };
        assert_eq!(got, want, "{name}={raw:?}");
    }

    // analytic or exact, any case, surrounding blanks ignored; empty is the default.
    let moe = if has(roctx_config::GGML_ROOFLINE_MOE) {
        text.and_then(|t| match t.trim().to_ascii_lowercase().as_str() {
            "analytic" | "" => Some(MoeAccounting::Analytic),
            "exact" => Some(MoeAccounting::Exact),
            _ => None,
        })
        .unwrap_or_else(|| {
            expected_warnings.push(roctx_config::GGML_ROOFLINE_MOE);
            MoeAccounting::Analytic
        })
    } else {
        MoeAccounting::Analytic
    };
    assert_eq!(config.moe_accounting, moe, "{}={raw:?}", roctx_config::GGML_ROOFLINE_MOE);

    // Capture windows (docs: README's table): the range kind case-insensitive, the name exact;
    // end stop/repeat/repeat:N; delay 0..=1e6 s; duration above 0 up to 1e6 s (0/off: none).
    let range = if has(roctx_config::CAPTURE_RANGE) {
        text.and_then(|t| {
            let t = t.trim_start();
            let lower = t.to_ascii_lowercase();
            if ["", "none"].contains(&lower.trim_end()) {
                return Some(CaptureRange::None);
            }
            if ["profiler-api", "profilerapi", "cudaprofilerapi", "hipprofilerapi"].contains(&lower.trim_end()) {
                return Some(CaptureRange::ProfilerApi);
            }
            let spec = ["range:", "nvtx:", "roctx:"].iter().find(|p| lower.starts_with(*p)).map(|p| &t[p.len()..])?;
            let (name, domain) = match spec.rfind('@') {
                Some(at) if &spec[at + 1..] == "*" => (&spec[..at], None),
                Some(at) if at + 1 < spec.len() => (&spec[..at], Some(spec[at + 1..].to_owned())),
                _ => (spec, None),
            };
            (!name.is_empty() && name.len() <= 4096).then(|| CaptureRange::Range { name: name.to_owned(), domain })
        })
        .unwrap_or_else(|| {
            expected_warnings.push(roctx_config::CAPTURE_RANGE);
            CaptureRange::None
        })
    } else {
        CaptureRange::None
    };
    assert_eq!(config.window.range, range, "{}={raw:?}", roctx_config::CAPTURE_RANGE);
    let end = if has(roctx_config::CAPTURE_RANGE_END) {
        text.and_then(|t| match t.trim().to_ascii_lowercase().as_str() {
            "" | "stop" => Some(RangeEnd::Stop),
            "repeat" => Some(RangeEnd::Repeat(None)),
            other => other.strip_prefix("repeat:").and_then(|n| n.parse::<u32>().ok()).filter(|&n| n >= 1).map(|n| RangeEnd::Repeat(Some(n))),
        })
        .unwrap_or_else(|| {
            expected_warnings.push(roctx_config::CAPTURE_RANGE_END);
            RangeEnd::Stop
        })
    } else {
        RangeEnd::Stop
    };
    assert_eq!(config.window.end, end, "{}={raw:?}", roctx_config::CAPTURE_RANGE_END);
    let seconds = |t: &str| -> Option<f64> {
        let t = t.trim();
        if t.is_empty() || t.eq_ignore_ascii_case("off") {
            return Some(0.0);
        }
        t.parse::<f64>().ok().filter(|s| s.is_finite() && *s >= 0.0 && *s <= 1e6)
    };
    for (name, got) in [(roctx_config::CAPTURE_DELAY, Some(config.window.delay)), (roctx_config::CAPTURE_DURATION, config.window.duration)] {
        let want = if has(name) {
            match text.and_then(seconds) {
                Some(s) if s > 0.0 => Some(std::time::Duration::from_secs_f64(s)),
                Some(_) => None,
                None => {
                    expected_warnings.push(name);
                    None
                }
            }
        } else {
            None
        };
        let got = got.filter(|d| !d.is_zero());
        assert_eq!(got, want, "{name}={raw:?}");
    }

    // The job identity: the first usable run name and rank win; each unusable one before them
    // warns (every listed variable holds the same raw value here).
    let lossy_value = raw.to_string_lossy();
    let mut expected_run = None;
    for name in std::iter::once(roctx_config::RUN_NAME).chain(roctx_config::JOB_ID_VARS) {
        if !has(name) || raw.is_empty() || (name == "TORCHELASTIC_RUN_ID" && lossy_value == "none") {
            continue;
        }
        match roctx_config::job::run_dir_name(&lossy_value) {
            Some(dir) => {
                expected_run = Some((dir, name));
                break;
            }
            None => expected_warnings.push(name),
        }
    }
    assert_eq!(config.job.run_name.as_ref().map(|(d, n)| (d.as_str(), *n)), expected_run.as_ref().map(|(d, n)| (d.as_str(), *n)));
    if let Some((dir, _)) = &config.job.run_name {
        assert!(!dir.is_empty() && dir.len() <= roctx_config::job::MAX_RUN_NAME && !dir.contains('/') && dir != "." && dir != "..", "{dir:?}");
    }
    let mut expected_rank = None;
    for name in roctx_config::RANK_VARS {
        if !has(name) || raw.is_empty() {
            continue;
        }
        match lossy_value.trim().parse::<u32>().ok().filter(|_| lossy_value.trim().bytes().all(|b| b.is_ascii_digit())) {
            Some(n) => {
                expected_rank = Some((n, name));
                break;
            }
            None => expected_warnings.push(name),
        }
    }
    assert_eq!(config.job.rank, expected_rank, "ranks from {raw:?}");

    let path = |name: &str| (has(name) && !raw.is_empty()).then(|| raw.to_os_string());
    let roofline = path(roctx_config::ROOFLINE_OUT).or_else(|| path(roctx_config::GGML_ROOFLINE_OUT));
    assert_eq!(config.roofline_out.map(OsString::from), roofline);
    assert_eq!(config.roctx_library, path(roctx_config::ROCTX_LIBRARY));
    assert_eq!(config.rocm_path, path(roctx_config::ROCM_PATH));
    assert_eq!(config.rocprofiler_library, path(roctx_config::ROCPROFILER_LIBRARY));
    assert_eq!(config.xspace_out.map(OsString::from), path(roctx_config::XSPACE_OUT));
    assert_eq!(config.progress_dir.map(OsString::from), path(roctx_config::PROGRESS_DIR));

    // One warning per bad value, in variable order, each naming its variable.
    assert_eq!(warnings.len(), expected_warnings.len(), "{raw:?} for {set:?}: {warnings:#?}");
    for (warning, name) in warnings.iter().zip(&expected_warnings) {
        assert!(warning.contains(name), "warning {warning:?} does not name {name}");
        assert!(!warning.chars().any(char::is_control), "warning carries a raw control character: {warning:?}");
    }

    let register = RegisterEnv::from_lookup(&lookup);
    let lossy = (!raw.is_empty()).then(|| raw.to_string_lossy().into_owned());
    let value = |name: &str| lossy.clone().filter(|_| has(name));
    assert_eq!(
        register,
        RegisterEnv {
            tool_libraries: value(roctx_config::ROCP_TOOL_LIBRARIES).is_some(),
            register_library: value(roctx_config::REGISTER_LIBRARY),
            force_load: value(roctx_config::REGISTER_FORCE_LOAD).is_some_and(|v| ref_bool_register(&v)),
            disabled: value(roctx_config::REGISTER_ENABLED).is_some_and(|v| !ref_bool_register(&v)),
        },
        "{raw:?} for {set:?}"
    );
}

fn target(input: &[u8]) {
    let raw = OsString::from_vec(input.to_vec());
    check_grammars(&raw);
    let names: Vec<&str> = VARS.iter().map(|v| v.name).collect();
    check_config(&raw, &names);
    for name in &names {
        check_config(&raw, &[name]);
    }
    // A mix chosen by the input's hash: a bad value next to unset ones.
    let mask = mutate::fnv(&[input]);
    let some: Vec<&str> = names.iter().enumerate().filter(|(i, _)| mask >> i & 1 == 1).map(|(_, n)| *n).collect();
    check_config(&raw, &some);
}

// ---------------------------------------------------------------------------------------------
// Seeds: one file per interesting value.

fn seeds() -> Vec<(String, Vec<u8>)> {
    let text: &[(&str, &str)] = &[
        ("bool_1", "1"),
        ("bool_true_upper", "TRUE"),
        ("bool_true_mixed", "tRuE"),
        ("bool_yes", "yes"),
        ("bool_on", "On"),
        ("bool_0", "0"),
        ("bool_false", "false"),
        ("bool_no", "no"),
        ("bool_off", "OFF"),
        ("bool_n", "n"),
        ("bool_f", "F"),
        ("bool_2", "2"),
        ("bool_padded", " 1"),
        ("bool_trailing_newline", "1\n"),
        ("bool_01", "01"),
        ("bool_enabled", "enabled"),
        ("empty", ""),
        ("bytes_plain", "4096"),
        ("bytes_64m", "64m"),
        ("bytes_2K", "2K"),
        ("bytes_1g", "1g"),
        ("bytes_padded", " \t64M\n"),
        ("bytes_space_before_suffix", "64 m"),
        ("bytes_suffix_only", "m"),
        ("bytes_plus", "+5k"),
        ("bytes_plus_plus", "++5"),
        ("bytes_negative", "-1"),
        ("bytes_negative_zero", "-0"),
        ("bytes_fraction", "1.5m"),
        ("bytes_exponent", "1e3"),
        ("bytes_hex", "0x10"),
        ("bytes_tera", "1t"),
        ("bytes_leading_zeros", "0000000000000000000000000064m"),
        ("bytes_u64_max", "18446744073709551615"),
        ("bytes_u64_max_plus_1", "18446744073709551616"),
        ("bytes_20_nines", "99999999999999999999"),
        ("bytes_g_fits", "17179869183g"),
        ("bytes_g_overflows", "17179869184g"),
        ("bytes_m_overflows", "17592186044416m"),
        ("bytes_k_overflows", "18014398509481984k"),
        ("bytes_fullwidth_digits", "\u{ff16}\u{ff14}"),
        ("bytes_arabic_digits", "\u{661}\u{662}"),
        ("bytes_ideographic_space", "\u{3000}64m\u{3000}"),
        ("bytes_kelvin_sign_suffix", "64\u{212a}"),
        ("capture_auto", "auto"),
        ("capture_sdk", "SDK"),
        ("capture_self", "self"),
        ("capture_in_process", "in-process"),
        ("capture_inprocess", "InProcess"),
        ("capture_host", "host"),
        ("capture_padded", " sdk"),
        ("log_info", "info"),
        ("log_debug", "DEBUG"),
        ("log_warning", "warning"),
        ("log_quiet", "quiet"),
        ("path_rocm", "/opt/rocm-7.0.0"),
        ("path_with_space", "/tmp/x space/out"),
        ("path_relative", "libroctx64.so.4"),
        ("control_newline_injection", "1\nroctx_utils: warning: forged"),
        ("control_escape", "\u{1b}[31mred\u{1b}[0m"),
        ("control_nul_inside", "64m\u{0}junk"),
        ("control_bidi_override", "\u{202e}eurt"),
    ];
    let mut out: Vec<(String, Vec<u8>)> = text.iter().map(|(n, v)| (format!("{n}.txt"), v.as_bytes().to_vec())).collect();
    for (name, bytes) in [
        ("non_utf8_ff", &b"\xff"[..]),
        ("non_utf8_true_then_ff", b"true\xff"),
        ("non_utf8_digits_then_ff", b"64\xffm"),
        ("non_utf8_overlong_slash", b"/opt/\xc0\xafrocm"),
        ("non_utf8_lone_continuation", b"\x80"),
        ("non_utf8_surrogate", b"\xed\xa0\x80"),
    ] {
        out.push((format!("{name}.bin"), bytes.to_vec()));
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Tests.

#[test]
fn fuzz_env_values() {
    let outcome = mutate::run(&ENV, &target);
    mutate::assert_clean(&ENV, &outcome);
}

/// Every seed made huge: repeated past 32 KiB, after 32 Ki leading zeros (a valid count
/// still), after 40 digits of 9 (always too large); and two values of 1 MiB (eight times what
/// Linux lets one environment string be).
#[test]
fn huge_values_parse_or_fall_back() {
    let names: Vec<&str> = VARS.iter().filter(|v| v.when == When::FirstCall).map(|v| v.name).collect();
    let check = |input: &[u8]| {
        let raw = OsString::from_vec(input.to_vec());
        check_grammars(&raw);
        check_config(&raw, &names);
    };
    let mut values: Vec<(String, Vec<u8>)> = Vec::new();
    for (name, seed) in mutate::load_corpus(&mutate::corpus_dir(ENV.manifest_dir, ENV.name)) {
        let repeated: Vec<u8> = seed.iter().copied().cycle().take(if seed.is_empty() { 0 } else { (32 << 10) + 7 }).collect();
        values.push((format!("{name} repeated"), repeated));
        values.push((format!("zeros then {name}"), [vec![b'0'; 32 << 10], seed.clone()].concat()));
        values.push((format!("nines then {name}"), [vec![b'9'; 40], seed.clone()].concat()));
    }
    values.push(("1 MiB of 64m".to_owned(), b"64m".iter().copied().cycle().take(1 << 20).collect()));
    values.push(("1 Mi zeros then 64m".to_owned(), [vec![b'0'; 1 << 20], b"64m".to_vec()].concat()));
    let mut failures = Vec::new();
    for (what, value) in values {
        if let Some((message, location)) = mutate::run_one(&check, &value) {
            failures.push(format!("{what} ({} bytes): {location}: {}", value.len(), message.chars().take(300).collect::<String>()));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Byte counts at the top of the range, for each suffix: the largest count that fits is exact,
/// one more is refused.
#[test]
fn byte_counts_stop_exactly_at_usize_max() {
    for (suffix, shift) in [("", 0), ("k", 10), ("m", 20), ("g", 30)] {
        let max = usize::MAX >> shift;
        assert_eq!(parse_bytes(&format!("{max}{suffix}")), Some(max << shift), "{max}{suffix}");
        assert_eq!(parse_bytes(&format!("{}{suffix}", max as u128 + 1)), None, "{max}+1{suffix}");
    }
    assert_eq!(parse_bytes(&format!("{}", u128::from(u64::MAX) * 10)), None);
}

/// Values are only compared as bytes: a path that is not UTF-8 survives unchanged.
#[test]
fn non_utf8_paths_come_back_byte_for_byte() {
    let raw = OsStr::from_bytes(b"/opt/\xff\xferocm");
    let (config, warnings) = Config::from_lookup(&|name: &str| (name == roctx_config::ROCM_PATH).then(|| raw.to_os_string()));
    assert!(warnings.is_empty());
    assert_eq!(config.rocm_path.as_deref(), Some(raw));
}

/// Rewrites the seeds (other files are kept):
/// `cargo test -p roctx_config --test fuzz_env -- --ignored regenerate_corpus`.
#[test]
#[ignore = "writes rust/fuzz/corpus/env; run by hand to add values"]
fn regenerate_corpus() {
    let dir = mutate::corpus_dir(ENV.manifest_dir, ENV.name);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, bytes) in seeds() {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}
