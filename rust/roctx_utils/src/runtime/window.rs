//! Capture windows of the automatic session (`ROCTX_UTILS_CAPTURE_RANGE`, `_RANGE_END`,
//! `_DELAY`, `_DURATION`; `roctx record --capture-range`, `--delay`, `--duration`): instead of
//! one session from start-up to exit, sessions that open and close while the process runs
//! ([docs/record.md](../../../../docs/record.md), "Capture windows").
//!
//! The collector decides when a window opens and closes (`roctx_collector::window`: it sees every
//! push and pop, from the emitter's sink or the SDK's callbacks); this module arms it with the
//! configuration, opens and closes windows for the profiler API and the timers, and does what a
//! window's edges mean for the rest of the pipeline, through the observer it hands down:
//!
//! - **kernels**: CUPTI's activity kinds are turned on when a window opens, on the thread that
//!   opened it, before the push that opened it is recorded, and off (after a flush) when it
//!   closes; rocprofiler-sdk's kernel context is started the same way, except when the window
//!   opens inside the SDK's own marker callback (a range trigger, `roctxProfilerResume`): the
//!   `roctx-window` thread starts it then; it stops it at a window's end, in order;
//! - **writing**: each closed window is written as its own session: a run directory of its
//!   own, `<run>-window<N>` ([`crate::export::set_window`]), by the `roctx-window` thread, or at
//!   exit by the exit hook (a window still open then is closed first);
//! - **time**: the delay (windows are armed only after it), the duration (a window closes at
//!   most that long after it opened; without a capture range, the one window opens after the
//!   delay and closes after the duration).
use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use roctx_collector::window::{self as windows, Change, CloseReason, Opener, Plan, RangeTrigger};
use roctx_collector::CaptureMode;
use roctx_config::{log, CaptureRange, Config};

use crate::{export, listener};

/// Window changes waiting for the `roctx-window` thread (or the exit hook), in order, and the
/// open window's deadline.
struct Queue {
    changes: VecDeque<Change>,
    deadline: Option<(u32, Instant)>,
}

static QUEUE: Mutex<Queue> = Mutex::new(Queue { changes: VecDeque::new(), deadline: None });
static WAKE: Condvar = Condvar::new();
/// Held while changes are acted on, so the thread and the exit hook never write at once.
static WRITING: Mutex<()> = Mutex::new(());

fn queue() -> std::sync::MutexGuard<'static, Queue> {
    QUEUE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether the configuration asks for windows (and there is an output to write them to).
pub(super) fn wanted(config: &Config) -> bool {
    config.xspace_out.is_some() && !config.window.whole_run()
}

/// Start-up step 4 with windows: capture is set up as for the automatic session (the SDK's
/// marker context started, or the in-process sink installed) but no session runs until a window
/// opens. With no delay, windows are armed before this returns (the first push may be the
/// trigger); with one, by the `roctx-window` thread once it has passed.
pub(super) fn start(config: &Config, mode: CaptureMode) {
    let w = &config.window;
    let range = match &w.range {
        CaptureRange::Range { name, domain } => Some(RangeTrigger { name: name.as_bytes().into(), domain: domain.as_ref().map(|d| d.as_bytes().into()) }),
        _ => None,
    };
    let plan = Plan {
        range,
        profiler_api: w.range == CaptureRange::ProfilerApi,
        max_windows: w.max_windows(),
        options: super::auto_options(config),
        mode,
    };
    let what = match &w.range {
        CaptureRange::None => "a window".to_owned(),
        CaptureRange::Range { name, domain: None } => format!("windows from a push of the range {name:?} (any domain) to its pop"),
        CaptureRange::Range { name, domain: Some(d) } => format!("windows from a push of the range {name:?} of domain {d:?} to its pop"),
        CaptureRange::ProfilerApi => "windows between the profiler API's start and stop calls".to_owned(),
    };
    log::info(format_args!(
        "capture windows: {what}{}{}; nothing is recorded outside them",
        if w.delay.is_zero() { String::new() } else { format!(", after {:?}", w.delay) },
        w.duration.map_or_else(String::new, |d| format!(", each at most {d:?}"))
    ));
    // Kernels are traced only inside windows.
    listener::kernels::window_pause_cupti();
    listener::kernels::window_pause_sdk();
    let delay = w.delay;
    let armed_later = if delay.is_zero() {
        arm(plan);
        None
    } else {
        Some(plan)
    };
    let spawned = roctx_sys::os::with_signals_blocked(|| {
        std::thread::Builder::new().name("roctx-window".into()).spawn(move || {
            if let Some(plan) = armed_later {
                std::thread::sleep(delay);
                arm(plan);
            }
            run();
        })
    });
    if let Err(e) = spawned {
        log::warn(format_args!("capture windows: no roctx-window thread ({e}): windows are written at exit only, and durations are not kept"));
    }
}

/// Arms the collector; without a capture range or the profiler API, opens the one window now.
fn arm(plan: Plan) {
    let timed = plan.range.is_none() && !plan.profiler_api;
    windows::configure(plan, observe);
    if timed {
        windows::open(Opener::Caller);
    }
}

/// The collector's observer: runs on the thread that opened or closed the window, under the
/// windows' lock (module docs).
fn observe(change: Change) {
    let duration = roctx_config::get().window.duration;
    match &change {
        Change::Opened { window, by } => {
            export::set_window(*window);
            listener::kernels::window_resume_cupti();
            // rocprofiler-sdk's kernel context now too, unless this is the SDK's own marker
            // callback (a range trigger, roctxProfilerResume): then the roctx-window thread
            // starts it, and the window's first kernels may be missed.
            if listener::kernels::sdk_context_calls_allowed() {
                listener::kernels::window_resume_sdk();
            }
            log::info(format_args!("capture window {window} opened ({by:?})"));
        }
        Change::Closed { .. } => {
            listener::kernels::window_pause_cupti();
        }
    }
    let mut q = queue();
    match &change {
        Change::Opened { window, .. } => q.deadline = duration.map(|d| (*window, Instant::now() + d)),
        Change::Closed { window, .. } if q.deadline.is_some_and(|(w, _)| w == *window) => q.deadline = None,
        Change::Closed { .. } => {}
    }
    q.changes.push_back(change);
    drop(q);
    WAKE.notify_all();
}

/// The `roctx-window` thread: acts on changes in order, and closes a window at its deadline.
fn run() {
    loop {
        let expired = {
            let mut q = queue();
            loop {
                if !q.changes.is_empty() {
                    break None;
                }
                match q.deadline {
                    Some((w, at)) if Instant::now() >= at => {
                        q.deadline = None;
                        break Some(w);
                    }
                    Some((_, at)) => q = WAKE.wait_timeout(q, at.saturating_duration_since(Instant::now())).unwrap_or_else(PoisonError::into_inner).0,
                    None => q = WAKE.wait_timeout(q, Duration::from_secs(3600)).unwrap_or_else(PoisonError::into_inner).0,
                }
            }
        };
        if let Some(window) = expired {
            if windows::count().1 == Some(window) {
                roctx_sys::guard((), || {
                    windows::close(CloseReason::Duration);
                });
            }
        }
        roctx_sys::guard((), || drain(true));
    }
}

/// Acts on every queued change: the SDK's kernel context (`sdk`: not at exit, where the SDK
/// finalizes by itself), and the closed windows' files.
fn drain(sdk: bool) {
    let _one = WRITING.lock().unwrap_or_else(PoisonError::into_inner);
    loop {
        let Some(change) = queue().changes.pop_front() else { return };
        match change {
            Change::Opened { .. } => {
                if sdk {
                    listener::kernels::window_resume_sdk();
                }
            }
            Change::Closed { window, why, snapshot } => {
                // What CUPTI or the SDK still holds of the window's kernels.
                listener::kernels::flush();
                if sdk {
                    listener::kernels::window_pause_sdk();
                }
                let mut t = super::xprof::trace(&snapshot);
                // The kernel stage keeps every window's kernels (and those traced between a
                // window's end and the pause): outside this window is where they belong, not a loss.
                t.warnings.retain(|w| !w.ends_with("ran outside the session window and are not shown"));
                t.warnings.push(format!("capture window {window}: closed because {}", why.words()));
                export::write_window(&snapshot, &t, window);
            }
        }
    }
}

/// At exit: no more windows; the open one (if any) is closed and every closed one written, on
/// this thread. Whether windows were in use.
pub(super) fn at_exit() -> bool {
    // Never configured without it.
    if !wanted(roctx_config::get()) {
        return false;
    }
    windows::disarm();
    windows::close(CloseReason::Exit);
    drain(false);
    true
}

/// Whether the profiler API's windows are configured (with an output to write them to).
pub fn api_armed() -> bool {
    let config = roctx_config::get();
    wanted(config) && config.window.range == CaptureRange::ProfilerApi
}

/// `roctx_utils_capture_start()`, `cudaProfilerStart`, `hipProfilerStart`: opens a window when
/// the profiler API's windows are armed. Whether one opened.
pub fn api_start() -> bool {
    api_armed() && {
        super::get();
        windows::open(Opener::Api)
    }
}

/// `roctx_utils_capture_stop()`, `cudaProfilerStop`, `hipProfilerStop`: closes the open window.
pub fn api_stop() -> bool {
    api_armed() && windows::close(CloseReason::Api)
}
