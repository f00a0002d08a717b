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
    listener::moe::resolve_all();
    roctx_kernels::reset();
}

/// Flushes and writes the report to `path`, replacing only a regular file; prints the
/// llama.cpp summary line, or what failed with the path and the reason. Returns whether it wrote.
pub fn write(path: &Path) -> bool {
    write_marked(path, None, false, true)
}

/// [`write`], the report marked as holding only part of the run (`cut_short`: why) when given;
/// `quiet` says so only at info (a periodic snapshot: one line every few seconds would drown
/// the run's). `last`: the run ends with this write (kernels still waiting for their launch
/// record are kept unjoined; a snapshot leaves them waiting).
pub fn write_marked(path: &Path, cut_short: Option<&str>, quiet: bool, last: bool) -> bool {
    if last {
        listener::kernels::flush_final();
    } else {
        listener::kernels::flush();
    }
    listener::moe::resolve_all();
    let snapshot = roctx_kernels::snapshot();
    let mut report = roctx_roofline::build::report(&snapshot);
    report.cut_short = cut_short.map(str::to_owned);
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
    let line = format!(
        "roofline: wrote {} ({} invocations, {} unique ops, {:.1} us GPU time{}{})",
        path.display(),
        report.rows.len(),
        unique.len(),
        report.total_gpu_time_us,
        losses(&snapshot.stats),
        cut_short.map_or_else(String::new, |why| format!("; {why}"))
    );
    if quiet {
        log::info(format_args!("{line}"));
    } else {
        log::result(format_args!("{line}"));
    }
    true
}

/// The path this process writes its report to: the configured one, or beside it in a `fork()`
/// child ([`child_report`]).
pub fn own_path() -> Option<std::path::PathBuf> {
    let path = roctx_config::get().roofline_out.as_ref()?;
    Some(if roctx_sys::os::is_fork_child() { child_path(path, std::process::id()) } else { path.clone() })
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
        (s.invocations_over_cap, "ops over the op cap since the last reset"),
    ];
    let moe = listener::moe::losses();
    let moe_lost = [
        (moe.ring_full, "MUL_MAT_ID routings not read (all read-back slots in flight: those rows count their experts analytically)"),
        (moe.failed, "MUL_MAT_ID routings not read (a GPU runtime call failed)"),
        (moe.invalid, "MUL_MAT_ID routings not read (ids out of range)"),
    ];
    let parts: Vec<String> = lost.iter().chain(&moe_lost).filter(|(n, _)| *n > 0).map(|(n, what)| format!("{n} {what}")).collect();
    // Kept, but in no op: a launch through an API call CUPTI or the SDK did not record.
    let unjoined = if s.unjoined > 0 { format!("; {} kernels not matched to their launch call (in no op)", s.unjoined) } else { String::new() };
    if parts.is_empty() { unjoined } else { format!("{unjoined}; LOST: {}", parts.join(", ")) }
}

/// The exit hook: writes the report to the configured path, once (the tool library's finalize
/// and the exit hook both ask; whichever runs first writes).
pub(super) extern "C" fn write_at_exit() {
    static WRITTEN: AtomicBool = AtomicBool::new(false);
    roctx_sys::guard((), || {
        if let Some(path) = &roctx_config::get().roofline_out {
            if !WRITTEN.swap(true, Ordering::AcqRel) {
                if roctx_sys::os::is_fork_child() {
                    child_report(path);
                } else {
                    write(path);
                }
            }
        }
    })
}

/// A `fork()` child inherited its parent's report path: it never replaces the parent's report.
/// It writes its own beside it (`report.pid<pid>.json`), and nothing when it recorded nothing.
fn child_report(path: &Path) {
    listener::kernels::flush_final();
    // The child's own: the kernel stage forgot the parent's at the fork.
    let mine = roctx_kernels::snapshot();
    if mine.dispatches.is_empty() && mine.invocations.is_empty() {
        return;
    }
    write(&child_path(path, std::process::id()));
}

/// `dir/report.json` -> `dir/report.pid<pid>.json` (`report` -> `report.pid<pid>`).
fn child_path(path: &Path, pid: u32) -> std::path::PathBuf {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let name = match path.extension() {
        Some(ext) => format!("{stem}.pid{pid}.{}", ext.to_string_lossy()),
        None => format!("{stem}.pid{pid}"),
    };
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_child_report_is_named_beside_the_parents() {
        let p = |s: &str| std::path::PathBuf::from(s);
        assert_eq!(super::child_path(&p("/r/roofline.json"), 42), p("/r/roofline.pid42.json"));
        assert_eq!(super::child_path(&p("report"), 7), p("report.pid7"));
    }

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
