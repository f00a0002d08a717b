//! Which roctx to bind: the search order and what the user is told about it. The binding itself
//! (and the rocprofiler-register abort check) is [`roctx_sys::roctx`].
//!
//! Search order (first library that loads and exports `roctxRangePushA`/`roctxRangePop` wins):
//!
//! 1. `$ROCTX_UTILS_ROCTX_LIBRARY` (a path or a soname);
//! 2. `librocprofiler-sdk-roctx.so.1` (ROCm >= 7.0), then `.so.0` (ROCm 6.x), then roctracer's
//!    legacy `libroctx64.so.4` (core functions only); each by soname (the loader's search path),
//!    then under `$ROCM_PATH/lib`, then under `/opt/rocm/lib`.
//!
//! If nothing loads, one message lists what was tried: a warning when emission is on (the user
//! asked for ROCTX ranges), setup detail otherwise.

use roctx_config::{log, Config};
use roctx_sys::roctx::{Refusal, Roctx, LEGACY_SONAME, SDK_SONAMES};

/// Where to look, in order (see the module docs).
pub(crate) fn candidates(config: &Config) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(path) = &config.roctx_library {
        out.push(path.to_string_lossy().into_owned());
    }
    for name in SDK_SONAMES.iter().chain([&LEGACY_SONAME]) {
        out.push((*name).to_owned());
        if let Some(root) = &config.rocm_path {
            out.push(format!("{}/lib/{name}", root.to_string_lossy()));
        }
        out.push(format!("/opt/rocm/lib/{name}"));
    }
    out.dedup();
    out
}

/// Searches and binds roctx once (start-up step 3); `None` when no library could be used.
pub(crate) fn bind(config: &Config) -> Option<Roctx> {
    // rocprofiler-register's variables as they are now: tool-mode configuration (step 2) may
    // have set ROCPROFILER_REGISTER_FORCE_LOAD.
    let register = roctx_config::register_env();
    let mut tried = Vec::new();
    for location in candidates(config) {
        match Roctx::open(&location, &register) {
            Ok(roctx) => {
                log::info(format_args!("bound roctx from {location} ({:?})", roctx.flavor()));
                if !tried.is_empty() {
                    log::info(format_args!("before that, tried: {}", tried.join("; ")));
                }
                return Some(roctx);
            }
            Err(Refusal::Unusable(why)) => tried.push(format!("{location}: {why}")),
            Err(Refusal::WouldAbort(why)) => {
                // Not a search miss: the user's environment asks for a tool that cannot load.
                log::warn(format_args!("skipped librocprofiler-sdk-roctx at {location}: {why}"));
                tried.push(format!("{location}: skipped, see the warning above"));
            }
        }
    }
    // Only worth a warning when the user asked for ROCTX ranges; otherwise (naming calls are
    // ungated) it is setup detail.
    let report = if config.enable_roctx { log::warn } else { log::info };
    report(format_args!(
        "no roctx library could be loaded, so ranges reach AnnotationStack and roctx_utils' own \
         capture only; rocprofv3 and other roctx tools will not see them. Tried, in order: {}. \
         Install rocprofiler-sdk-roctx or set {} to its path.",
        tried.join("; "),
        roctx_config::ROCTX_LIBRARY
    ));
    None
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use super::*;

    #[test]
    fn candidates_follow_the_documented_order() {
        let lookup = |name: &str| match name {
            roctx_config::ROCTX_LIBRARY => Some(OsString::from("/mine/libroctx.so")),
            roctx_config::ROCM_PATH => Some(OsString::from("/rocm")),
            _ => None,
        };
        let c = candidates(&Config::from_lookup(&lookup).0);
        let pos = |s: &str| c.iter().position(|x| x == s).unwrap_or_else(|| panic!("{s} missing from {c:?}"));
        assert_eq!(pos("/mine/libroctx.so"), 0);
        assert!(pos("librocprofiler-sdk-roctx.so.1") < pos("/rocm/lib/librocprofiler-sdk-roctx.so.1"));
        assert!(pos("/rocm/lib/librocprofiler-sdk-roctx.so.1") < pos("/opt/rocm/lib/librocprofiler-sdk-roctx.so.1"));
        assert!(pos("/opt/rocm/lib/librocprofiler-sdk-roctx.so.1") < pos("librocprofiler-sdk-roctx.so.0"));
        assert!(pos("librocprofiler-sdk-roctx.so.0") < pos("libroctx64.so.4"));
        assert_eq!(c.last().map(String::as_str), Some("/opt/rocm/lib/libroctx64.so.4"));
    }
}
