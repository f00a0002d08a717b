//! The roofline report's lifecycle: written at exit when `ROCTX_UTILS_ROOFLINE_OUT` (or
//! llama.cpp's `GGML_ROOFLINE_OUT`) is set, or on request; reset after warm-up. Flushing the
//! SDK's buffer first is what makes both exact: rocprofiler-sdk never delivers by itself.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use roctx_config::log;

use crate::listener;

/// Flushes, then discards everything captured (llama.cpp's reset: names and the invocation
/// counter are kept).
pub fn reset() {
    listener::kernels::flush();
    roctx_kernels::reset();
}

/// Flushes and writes the report to `path`, replacing only a regular file; prints the
/// llama.cpp summary line, or what failed with the path and the reason. Returns whether it wrote.
pub fn write(path: &Path) -> bool {
    listener::kernels::flush();
    let snapshot = roctx_kernels::snapshot();
    let report = roctx_roofline::build::report(&snapshot);
    let json = match report.to_json() {
        Ok(json) => json,
        Err(e) => {
            log::warn(format_args!("roofline report {}: not written: {e}", path.display()));
            return false;
        }
    };
    if let Err(e) = roctx_sys::output::replace_regular(path, json.as_bytes()) {
        log::warn(format_args!("roofline report {}: could not write: {e}", path.display()));
        return false;
    }
    let unique: std::collections::BTreeSet<_> = snapshot.invocations.values().map(|i| i.geometry).collect();
    log::result(format_args!(
        "roofline: wrote {} ({} invocations, {} unique ops, {:.1} us GPU time{})",
        path.display(),
        report.rows.len(),
        unique.len(),
        report.total_gpu_time_us,
        losses(&snapshot.stats)
    ));
    true
}

fn losses(s: &roctx_kernels::KernelStats) -> String {
    let lost = [
        (s.dropped_cap, "over the dispatch cap"),
        (s.rejected_records, "malformed or impossible records"),
        (s.sdk_dropped, "dropped by rocprofiler-sdk"),
        (s.geometries_over_cap, "ops over the geometry cap"),
        (s.invocations_exhausted, "ops past the id space"),
        (s.names_over_cap, "kernel names over the name cap (those kernels have no name)"),
        (s.names_too_long, "kernel names kept mangled (demangled, over 64 KiB)"),
    ];
    let parts: Vec<String> = lost.iter().filter(|(n, _)| *n > 0).map(|(n, what)| format!("{n} {what}")).collect();
    if parts.is_empty() { String::new() } else { format!("; LOST: {}", parts.join(", ")) }
}

/// The exit hook: writes the report to the configured path, once (the tool library's finalize
/// and the exit hook both ask; whichever runs first writes).
pub(super) extern "C" fn write_at_exit() {
    static WRITTEN: AtomicBool = AtomicBool::new(false);
    roctx_sys::guard((), || {
        if let Some(path) = &roctx_config::get().roofline_out {
            if !WRITTEN.swap(true, Ordering::AcqRel) {
                write(path);
            }
        }
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_counted_loss_reaches_the_summary_line() {
        // Issue 25, item 12: kernel names past the cap were counted but never said.
        let s = roctx_kernels::KernelStats { names_over_cap: 2, rejected_records: 1, ..Default::default() };
        let text = super::losses(&s);
        assert!(text.contains("2 kernel names over the name cap"), "{text}");
        assert!(text.contains("1 malformed or impossible records"), "{text}");
        assert_eq!(super::losses(&roctx_kernels::KernelStats::default()), "");
    }
}
