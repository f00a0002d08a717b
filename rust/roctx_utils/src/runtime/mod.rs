//! Start-up and shutdown, in one place (NVTX's `nvtxInit` shape: one first-call sequence, then
//! a latch). Owns what the emitter may ask of the rest of the pipeline: the bound roctx, the
//! installed event [`sink`], thread names; and the session lifecycle: explicit sessions, the
//! automatic `ROCTX_UTILS_XSPACE_OUT` session and the write at exit.
//!
//! # The first call
//!
//! Whatever the host calls first that needs the pipeline (a range, a mark, a naming call, a
//! session, a roctx query) runs [`get`]'s slow path, once per process, in this order:
//!
//! 1. **read the configuration**: every environment variable, once ([`roctx_config::get`]);
//! 2. **configure rocprofiler-sdk, if sessions will use it** (`ROCTX_UTILS_CAPTURE=sdk`, or
//!    `auto` with emission on): the SDK only sees roctx calls made after a tool exists, because
//!    roctx registers its dispatch tables once, at its first call, which step 3 enables;
//! 3. **bind roctx** ([`roctx`]: the search order, and refusing a library whose first call would
//!    make rocprofiler-register abort);
//! 4. **start the automatic session** when `ROCTX_UTILS_XSPACE_OUT` is set and no explicit
//!    session came first, and register the exit hook that stops and writes it;
//! 5. **signals and snapshots** ([`signals`]): with an output set, the thread that writes what
//!    was captured at SIGINT/SIGTERM/SIGHUP, on SIGUSR1, and every `ROCTX_UTILS_FLUSH_EVERY`.
//!
//! Concurrent first callers wait for the sequence, so their first range already sees the
//! automatic session. Every later call is one acquire load of the latch. Nothing in the
//! sequence calls back into [`get`].
//!
//! # Shutdown
//!
//! With `ROCTX_UTILS_XSPACE_OUT` set, an `atexit` hook stops the running session, which writes
//! it ([`stop_session`] hands every stopped session to the exporter). A process ended by a
//! signal runs no `atexit` hook: [`signals`] writes before the signal takes effect.
//!
//! # Fork
//!
//! Start-up registers `pthread_atfork` handlers ([`fork`]): the session lock, then the
//! collector's locks, are held across `fork()`, so a child never inherits a lock some other
//! thread held; the child keeps capturing in a session of its own (its events only), written
//! under its own pid at its exit.

mod roctx;

mod chunks;
mod fork;
pub mod roofline;
pub mod progress;
pub mod signals;
pub mod xprof;
pub mod tool_library;
pub mod window;

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use roctx_collector::sink::{Sink, IN_PROCESS};
use roctx_collector::{CaptureMode, SessionError, SessionOptions, Snapshot};
use roctx_config::{log, CaptureRequest, Config};
use roctx_sys::roctx::{Flavor, Roctx};

use crate::{export, listener};

/// What start-up produced, for the process's lifetime.
#[derive(Debug)]
pub struct Runtime {
    roctx: Option<Roctx>,
}

impl Runtime {
    /// The bound roctx, or `None` when no library could be used.
    #[inline(always)]
    pub fn roctx(&self) -> Option<&Roctx> {
        self.roctx.as_ref()
    }

    /// SDK or legacy, when bound.
    pub fn roctx_flavor(&self) -> Option<Flavor> {
        self.roctx.as_ref().map(Roctx::flavor)
    }
}

static RUNTIME: OnceLock<Runtime> = OnceLock::new();

/// The runtime, running the start-up sequence (module docs) on the first call.
#[inline(always)]
pub fn get() -> &'static Runtime {
    match RUNTIME.get() {
        Some(runtime) => runtime,
        None => start(),
    }
}

/// The start-up sequence, steps 1 to 4 of the module docs. Out of line, so that [`get`] stays
/// one load and a branch.
#[cold]
#[inline(never)]
fn start() -> &'static Runtime {
    RUNTIME.get_or_init(|| {
        roctx_sys::os::note_start_pid();
        fork::register_handlers();
        let config = roctx_config::get(); // 1.
        if tool_mode_wanted(config) {
            listener::prepare_tool(); // 2.
        }
        nvidia_kernels(config); // 2b.
        let runtime = Runtime { roctx: roctx::bind(config) }; // 3.
        auto_session(config, runtime.roctx_flavor()); // 4.
        roofline_at_exit(config);
        signals::start(config); // 5.
        progress::start(config);
        runtime
    })
}

/// Set by the NVTX injection's init: this is an NVIDIA process.
static NVTX_CLIENT: AtomicBool = AtomicBool::new(false);

/// The NVTX3 injection was initialized by a client library: at start-up, kernels are traced
/// with CUPTI. Only records the fact (the loader's init lock is held).
pub fn note_nvtx_client() {
    NVTX_CLIENT.store(true, Ordering::Release);
}

/// Step 2b: on NVIDIA (the NVTX injection is in use, or `NVTX_INJECTION64_PATH` names this
/// library and something else called first, e.g. Python's `roctx_utils.annotate` before JAX
/// initialised its GPU; a libcupti is already loaded; or a roofline report is wanted and
/// rocprofiler-sdk is not there), kernels come from CUPTI.
fn nvidia_kernels(config: &Config) {
    if !config.kernels && config.roofline_out.is_none() || listener::kernels::active() {
        return;
    }
    let injected = || config.nvtx_injection.as_deref().is_some_and(roctx_sys::nvtx::is_this_library);
    if NVTX_CLIENT.load(Ordering::Acquire)
        || config.roofline_out.is_some()
        || roctx_sys::cupti::loaded_in_process()
        || injected()
    {
        listener::cupti::start();
    }
}

/// The calling thread's innermost range changed to push number `seq`: kernels it launches
/// next carry it (a no-op unless kernels are traced).
#[inline]
pub fn range_changed(seq: u32) {
    listener::kernels::range_changed(seq);
}

fn tool_mode_wanted(config: &Config) -> bool {
    if config.roofline_out.is_some() && config.capture != CaptureRequest::Off {
        return true; // the report needs the SDK's kernel records
    }
    match config.capture {
        CaptureRequest::Sdk => true,
        CaptureRequest::Auto => config.enable_roctx,
        _ => false,
    }
}

// ---- the event sink ----

const NO_SINK: u8 = 0;
const IN_PROCESS_SINK: u8 = 1;

/// Which sink the emitter records through. Set when a session starts (in-process mode installs
/// the collector's sink, any other mode removes it) and kept after it stops, so per-thread
/// stacks stay balanced between sessions. Before the first in-process session, nobody
/// listening costs the emitter this one relaxed load.
static SINK: AtomicU8 = AtomicU8::new(NO_SINK);

/// The installed sink, if any.
#[inline(always)]
pub fn sink() -> Option<&'static dyn Sink> {
    match SINK.load(Ordering::Relaxed) {
        NO_SINK => None,
        _ => Some(&IN_PROCESS),
    }
}

fn install_sink(mode: CaptureMode) {
    let sink = if mode == CaptureMode::InProcess { IN_PROCESS_SINK } else { NO_SINK };
    SINK.store(sink, Ordering::Relaxed);
    chunks::start(); // a session starts: its buffers grow on the threads that record
}

/// Names the calling OS thread for export, whatever the capture mode: names are rare and make
/// rows readable.
pub fn name_current_thread(name: &[u8]) {
    roctx_collector::name_thread(roctx_collector::current_tid(), name);
}

/// Names OS thread `tid` for export (NVTX's `nvtxNameOsThread` names any thread by id).
pub fn name_thread(tid: u64, name: &[u8]) {
    roctx_collector::name_thread(tid, name);
}

// ---- sessions ----

/// Serializes session start and stop (never taken on the hot path). A `std` mutex for the same
/// reason as the collector's: the fork child releases it ([`fork`]).
static SESSIONS: Mutex<()> = Mutex::new(());

fn sessions() -> std::sync::MutexGuard<'static, ()> {
    SESSIONS.lock().unwrap_or_else(PoisonError::into_inner)
}
/// Set once the automatic session started, or an explicit one made it unnecessary.
static AUTO_DONE: AtomicBool = AtomicBool::new(false);
static EXIT_HOOK: AtomicBool = AtomicBool::new(false);

/// Starts a capture session. `requested = None` uses `ROCTX_UTILS_CAPTURE`. Returns the mode
/// actually used; fallbacks are logged with the reason. An explicit session supersedes the
/// automatic one; with `ROCTX_UTILS_XSPACE_OUT` set it is still written at stop, or at exit if
/// never stopped.
pub fn start_session(options: SessionOptions, requested: Option<CaptureRequest>) -> Result<CaptureMode, SessionError> {
    // Before start-up, so that start-up does not begin an automatic session of its own.
    AUTO_DONE.store(true, Ordering::Release);
    let config = roctx_config::get();
    if config.xspace_out.is_some() {
        ensure_exit_hook();
    }
    let roctx = get().roctx_flavor();
    start_session_with(config, options, requested, roctx)
}

fn start_session_with(
    config: &Config,
    options: SessionOptions,
    requested: Option<CaptureRequest>,
    roctx: Option<Flavor>,
) -> Result<CaptureMode, SessionError> {
    fork::register_handlers();
    let _serial = sessions();
    if roctx_collector::active() {
        return Err(SessionError::AlreadyRunning);
    }
    let mode = listener::resolve(requested.unwrap_or(config.capture), roctx);
    // The sink goes in before the session goes live, so that no range of the session can miss
    // it; the listener may still fall back to in-process, which then gets the sink too.
    install_sink(mode);
    let mode = listener::start(options, mode)?;
    install_sink(mode);
    if mode == CaptureMode::InProcess {
        log_clock_once();
    }
    Ok(mode)
}

/// Says once which clock in-process capture stamps with, and why (`roctx_sys::clock`).
fn log_clock_once() {
    static SAID: AtomicBool = AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        let (source, why) = roctx_sys::clock::choose();
        log::info(format_args!("capture clock: {source:?}: {why}"));
    }
}

/// Stops the session and returns its events; with `ROCTX_UTILS_XSPACE_OUT` set they are
/// written there first.
pub fn stop_session() -> Result<Snapshot, SessionError> {
    let _serial = sessions();
    let snapshot = listener::stop()?;
    write_to_xspace_out(&snapshot);
    Ok(snapshot)
}

/// The automatic session's caps per thread (`ROCTX_UTILS_MAX_EVENTS_PER_THREAD`,
/// `ROCTX_UTILS_MAX_LABEL_BYTES_PER_THREAD`).
pub(super) fn auto_options(config: &Config) -> SessionOptions {
    SessionOptions { max_events_per_thread: config.max_events_per_thread, max_label_bytes_per_thread: config.max_label_bytes_per_thread }
}

/// Start-up step 4: with `ROCTX_UTILS_XSPACE_OUT` set and no session running, start one and
/// arrange for it to be stopped and written at exit: tracing with no code changes.
fn auto_session(config: &Config, roctx: Option<Flavor>) {
    if config.xspace_out.is_none() || AUTO_DONE.swap(true, Ordering::AcqRel) {
        return;
    }
    if window::wanted(config) {
        // Capture set up as for the session, the session itself only inside windows.
        let mode = listener::resolve(config.capture, roctx);
        install_sink(mode);
        let mode = listener::start_capture_only(mode);
        install_sink(mode);
        if mode == CaptureMode::InProcess {
            log_clock_once();
        }
        ensure_exit_hook();
        window::start(config, mode);
        return;
    }
    match start_session_with(config, auto_options(config), None, roctx) {
        Ok(mode) => {
            let job = &config.job;
            let run = job.run_name.as_ref().map_or_else(|| "the write's UTC time".to_owned(), |(name, var)| format!("{name:?} (from {var})"));
            let rank = job.rank.map_or_else(|| "none: the file is named by the pid".to_owned(), |(n, var)| format!("{n} (from {var})"));
            log::info(format_args!("{} is set: capture session started ({mode:?}); run {run}, rank {rank}", roctx_config::XSPACE_OUT));
            ensure_exit_hook();
        }
        Err(e) => log::warn(format_args!("{} is set but no session could start: {e}", roctx_config::XSPACE_OUT)),
    }
}

/// With a roofline path configured: the report at exit.
fn roofline_at_exit(config: &Config) {
    static REGISTERED: AtomicBool = AtomicBool::new(false);
    if config.roofline_out.is_none() || REGISTERED.swap(true, Ordering::AcqRel) {
        return;
    }
    if !listener::kernels::active() {
        log::warn(format_args!(
            "a roofline report path is set, but kernel dispatches are not traced (rocprofiler-sdk is unavailable; ROCTX_UTILS_LOG=info says why): the report will have no rows"
        ));
    }
    roctx_sys::os::at_exit(roofline::write_at_exit);
}

fn ensure_exit_hook() {
    if !EXIT_HOOK.swap(true, Ordering::AcqRel) {
        roctx_sys::os::at_exit(stop_at_exit);
    }
}

/// The exit hook of the automatic session: stops it and writes it, unless it holds nothing at
/// all (no range, mark or GPU activity): nobody asked for an empty file, and a process's helper
/// children (data loaders, compile workers) would each leave one.
extern "C" fn stop_at_exit() {
    roctx_sys::guard((), || {
        if window::at_exit() {
            return;
        }
        if !roctx_collector::active() {
            return;
        }
        let _serial = sessions();
        let Ok(snapshot) = listener::stop() else { return };
        if snapshot.events.is_empty() && roctx_kernels::stats().dispatches == 0 {
            if roctx_config::get().xspace_out.is_some() {
                log::info(format_args!("nothing was recorded in this process: no trace written"));
            }
            return;
        }
        write_to_xspace_out(&snapshot);
    })
}

/// Writes a stopped session to `ROCTX_UTILS_XSPACE_OUT`, when it is set, with its op scopes
/// ([`xprof::trace`]).
fn write_to_xspace_out(snapshot: &roctx_collector::Snapshot) {
    if roctx_config::get().xspace_out.is_some() {
        export::write_to_xspace_out(snapshot, &xprof::trace(snapshot));
    }
}
