//! `roctx record [-o LOGDIR] [--roofline FILE] [--no-kernels] -- COMMAND [ARGS...]`: runs a
//! command with roctx_utils attached, as `nsys profile` and `rocprofv3 --` do, then says what was
//! captured.
//!
//! 1. **Before the command starts**, everything that can fail does: the platform
//!    ([`platform`]), the library for it next to this binary (`<prefix>/lib`, or `--lib-dir`),
//!    the log directory (created, and a file written and removed in it) and the report's
//!    directory. Each failure is one message and exit 2; the command never starts half-attached.
//! 2. **The environment** the command gets: on ROCm `ROCP_TOOL_LIBRARIES` (ours appended to any
//!    list already there, ended with `:`, which the SDK's parser needs to keep the last entry)
//!    and `ROCPROFILER_REGISTER_LIBRARY` (the SDK found, so rocprofiler-register never looks
//!    for an unversioned `librocprofiler-sdk.so` that release installs lack); on NVIDIA
//!    `NVTX_INJECTION64_PATH`. Then `ROCTX_UTILS_XSPACE_OUT`, `ROCTX_UTILS_RUN_NAME` (one run
//!    directory for every process the command starts), `ROCTX_UTILS_PYTHON_HOOKS=1` and the
//!    Python start-up hook on `PYTHONPATH` (so `jax.profiler.TraceAnnotation`s become ranges);
//!    `ROCTX_UTILS_KERNELS=0` with `--no-kernels`, `ROCTX_UTILS_ROOFLINE_OUT` with
//!    `--roofline`. A value the user set already is kept.
//! 3. **While it runs**: the command is in our process group, so a terminal's Ctrl-C reaches it
//!    directly (and is not sent twice); a signal sent to `roctx` itself (`kill`, `timeout`, a
//!    job scheduler) is forwarded to it, so it can finish its files. A signal the process
//!    ignored when `roctx record` started (`nohup`'s SIGHUP) stays ignored, for us and for the
//!    command. Every process the command starts inherits one end of a pipe of ours (the
//!    lifeline), so we can tell when they have all ended.
//! 4. **Afterwards** (when the command ends, or with `--wait all` when every process it started
//!    has): the summary (processes, ranges, marks, kernels, copies, what the traces say was
//!    lost, the files this run wrote, processes still running, the `xprof --logdir` line) on
//!    stderr, and the command's own exit: its code, or the same signal raised on ourselves.
//!
//! Without `--run-name` (or `ROCTX_UTILS_RUN_NAME`) each run gets a directory of its own: the
//! start time, as XProf names runs, and `_2`, `_3`, ... when another run took that name in the
//! same second (the directory is created here, so two runs can never share it).

use std::ffi::OsString;
use std::fs;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use roctx_config::launch::LaunchEnv;
use roctx_export::xplane_proto::XSpace;
use signal_hook::consts::signal::{SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2};
use signal_hook::iterator::exfiltrator::WithOrigin;
use signal_hook::iterator::SignalsInfo;
use signal_hook::low_level::siginfo::Cause;

use crate::args::{RecordArgs, Wait};
use crate::input;
use crate::messages::{Failure, Status};
use crate::platform::{self, Found};
use crate::progress::Progress;

/// A line on stderr, on one line whatever its paths, names and warnings hold
/// ([`crate::messages::one_line`]).
macro_rules! say {
    ($($t:tt)*) => {
        crate::messages::print_err(&format!("{}\n", crate::messages::one_line(&format!($($t)*))))
    };
}

/// The tool library, for ROCm.
pub(crate) const TOOL_LIBRARY: &str = "libroctx_utils_tool.so";
/// The NVTX injection library, for NVIDIA.
pub(crate) const NVTX_LIBRARY: &str = "libroctx_utils_nvtx.so";

/// Signals forwarded to the command when they are sent to `roctx` itself.
const FORWARDED: [i32; 6] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2];

/// Runs `roctx record`.
pub(crate) fn run(args: &RecordArgs) -> Result<Status, Failure> {
    let started = SystemTime::now();
    let env = LaunchEnv::current();
    let found = platform::detect(args.platform, &env)?;
    let lib_dir = lib_dir(args)?;
    let library = library(&lib_dir, &found)?;
    let logdir = prepare_dir(&args.output, "-o")?;
    let roofline = args.roofline.as_deref().map(prepare_report).transpose()?;
    let (run, run_dir_name) = match args.run_name.clone().or_else(|| env.run_name.clone()) {
        // The directory the library will write into for that name (the same mapping).
        Some(run) => {
            let dir = roctx_config::job::run_dir_name(&run)
                .ok_or_else(|| Failure::new(format!("the run name {run:?} names no directory")).hint("pass --run-name with a usable name"))?;
            (run, dir)
        }
        None => reserve_run(&logdir, started)?,
    };
    let mut command = Command::new(&args.command[0]);
    command.args(&args.command[1..]);
    let no_kernels = args.no_kernels || matches!(found, Found::CpuOnly(_));
    let windows = windows(args)?;
    environment(&mut command, &env, &found, &library, &lib_dir, &logdir, &run, roofline.as_ref().map(|r| r.path.as_path()), no_kernels)?;
    windows.apply(&mut command, &library, &env);

    if let Found::CpuOnly(Some(why)) = &found {
        say!("roctx record: {why}");
    }
    let what = match &found {
        Found::Rocm(sdk) => format!("ROCm (rocprofiler-sdk {})", sdk.display()),
        Found::Nvidia(Some(cuda)) => format!("NVIDIA ({})", cuda.display()),
        Found::Nvidia(None) => "NVIDIA".to_owned(),
        Found::CpuOnly(_) => "CPU-only (no GPU stack, no kernels)".to_owned(),
    };
    let run_dir = logdir.join("plugins/profile").join(&run_dir_name);
    say!("roctx record: {what}: {} attached; writing {}", library.display(), run_dir.display());
    let progress = Progress::start(args.progress, &run_dir);
    if let Some(p) = &progress {
        command.env(roctx_config::PROGRESS_DIR, p.dir());
    }

    // Before the spawn, so that no signal sent in between kills us instead of reaching the
    // command. A signal ignored now (nohup's SIGHUP) is left ignored: the command inherits that.
    let mut signals = SignalsInfo::<WithOrigin>::new(forwardable())
        .map_err(|e| Failure::new(format!("could not install signal handlers: {e}")))?;
    let handle = signals.handle();
    let mut lifeline = Lifeline::new().map_err(|e| Failure::new(format!("could not make a pipe: {e}")))?;
    let mut child = command.spawn().map_err(|e| {
        Failure::new(format!("could not start {}: {e}", args.command[0].to_string_lossy())).hint("check the command's name and that it is executable")
    })?;
    lifeline.drop_ours();
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    let forwarded = Arc::new(AtomicBool::new(false));
    // Set once the command is reaped (its pid may then be another process's), and by a signal
    // that comes after: it ends `--wait all`'s wait.
    let reaped = Arc::new(AtomicBool::new(false));
    let stop_waiting = Arc::new(AtomicBool::new(false));
    let forwarder = {
        let (forwarded, reaped, stop_waiting) = (Arc::clone(&forwarded), Arc::clone(&reaped), Arc::clone(&stop_waiting));
        std::thread::spawn(move || {
            for info in signals.forever() {
                if reaped.load(Ordering::Acquire) {
                    stop_waiting.store(true, Ordering::Release);
                    continue;
                }
                // A terminal's Ctrl-C (and ^\) comes from the kernel to the whole foreground
                // process group: the command has it already.
                if matches!(info.cause, Cause::Kernel) {
                    continue;
                }
                if let Ok(signal) = nix::sys::signal::Signal::try_from(info.signal) {
                    forwarded.store(true, Ordering::Relaxed);
                    let _ = nix::sys::signal::kill(pid, signal);
                }
            }
        })
    };
    let status = child.wait().map_err(|e| Failure::new(format!("waiting for the command: {e}")));
    reaped.store(true, Ordering::Release);
    if status.is_ok() && args.wait == Wait::All && lifeline.held() {
        say!("roctx record: the command ended; waiting for the processes it started (--wait all; Ctrl-C stops waiting)");
        lifeline.wait(&stop_waiting);
    }
    handle.close();
    let _ = forwarder.join();
    if let Some(p) = progress {
        p.finish();
    }
    let status = status?;

    let still_running = lifeline.held();
    summary(&Outcome { logdir: &logdir, run_dir: &run_dir, started, roofline: roofline.as_ref(), status, forwarded: forwarded.load(Ordering::Relaxed), still_running });
    Ok(exit_like(status))
}

/// [`FORWARDED`] but for the signals the process ignores now: `nohup roctx record -- job &`
/// must survive the hang-up, and so must the job (`exec` keeps an ignored disposition).
fn forwardable() -> Vec<i32> {
    FORWARDED.iter().copied().filter(|&sig| !roctx_sys::signals::ignored(sig)).collect()
}

/// A pipe whose write end the command, and every process it starts, inherits (unless one closes
/// the file descriptors it was given, as a daemon may): end of file on the read end means they
/// have all ended. Our own copy of the write end is closed once the command is started.
struct Lifeline {
    read: OwnedFd,
    write: Option<OwnedFd>,
}

impl Lifeline {
    fn new() -> nix::Result<Lifeline> {
        use nix::fcntl::{fcntl, FcntlArg, FdFlag, OFlag};
        // The write end is left inheritable on purpose; the read end is ours alone.
        let (read, write) = nix::unistd::pipe()?;
        fcntl(read.as_raw_fd(), FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
        fcntl(read.as_raw_fd(), FcntlArg::F_SETFL(OFlag::O_NONBLOCK))?;
        Ok(Lifeline { read, write: Some(write) })
    }

    fn drop_ours(&mut self) {
        self.write = None;
    }

    /// Whether some process still holds the write end: nothing is ever written to the pipe, so
    /// a read says end of file once no writer is left, and "would block" while one is.
    fn held(&self) -> bool {
        let mut byte = [0u8; 1];
        matches!(nix::unistd::read(self.read.as_raw_fd(), &mut byte), Err(nix::errno::Errno::EAGAIN))
    }

    /// Until no process holds the write end, or `stop` is set.
    fn wait(&self, stop: &AtomicBool) {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        while self.held() && !stop.load(Ordering::Acquire) {
            // POLLHUP comes back when the last writer goes.
            let _ = poll(&mut [PollFd::new(self.read.as_fd(), PollFlags::POLLIN)], PollTimeout::from(200u16));
        }
    }
}

/// A run name of its own for this run: the start time, as XProf names runs, or that with `_2`,
/// `_3`, ... when a run started in the same second has it. Its directory is created here, so
/// that no other run can take it meanwhile.
fn reserve_run(logdir: &Path, started: SystemTime) -> Result<(String, String), Failure> {
    let base = roctx_export::logdir::run_name(started);
    let runs = logdir.join("plugins/profile");
    fs::create_dir_all(&runs).map_err(|e| Failure::io("creating", &runs, e))?;
    for n in 1..=1000 {
        let run = if n == 1 { base.clone() } else { format!("{base}_{n}") };
        let Some(dir) = roctx_config::job::run_dir_name(&run) else { break };
        match fs::create_dir(runs.join(&dir)) {
            Ok(()) => return Ok((run, dir)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(Failure::io("creating", &runs.join(&dir), e)),
        }
    }
    Err(Failure::new(format!("{}: no free run directory for {base}", runs.display())).hint("pass --run-name"))
}

/// `--lib-dir`, else `<dir of this binary>/../lib` (the release layout), else the binary's own
/// directory.
fn lib_dir(args: &RecordArgs) -> Result<PathBuf, Failure> {
    if let Some(dir) = &args.lib_dir {
        return Ok(absolute(dir));
    }
    let exe = std::env::current_exe().map_err(|e| Failure::new(format!("cannot tell where roctx is installed: {e}")).hint("pass --lib-dir"))?;
    let bin = exe.parent().unwrap_or(Path::new("/"));
    let lib = bin.parent().map(|p| p.join("lib")).unwrap_or_default();
    Ok(if lib.join(TOOL_LIBRARY).is_file() || lib.join(NVTX_LIBRARY).is_file() { lib } else { bin.to_owned() })
}

fn library(lib_dir: &Path, found: &Found) -> Result<PathBuf, Failure> {
    let name = match found {
        Found::Rocm(_) => TOOL_LIBRARY,
        Found::Nvidia(_) | Found::CpuOnly(_) => NVTX_LIBRARY,
    };
    let path = lib_dir.join(name);
    if path.is_file() {
        return Ok(path);
    }
    Err(Failure::new(format!("{} does not exist: roctx record needs {name} next to it", path.display()))
        .hint("use the release tarball's bin/roctx (its lib/ holds both libraries), or pass --lib-dir DIR"))
}

/// Creates the log directory and proves it writable, before the command runs for hours.
fn prepare_dir(dir: &Path, flag: &str) -> Result<PathBuf, Failure> {
    let dir = absolute(dir);
    if dir.exists() && !dir.is_dir() {
        return Err(Failure::new(format!("{flag} {}: not a directory", dir.display())).hint("the log directory is the one given to `xprof --logdir`"));
    }
    fs::create_dir_all(&dir).map_err(|e| Failure::io("creating", &dir, e))?;
    let probe = dir.join(format!(".roctx_record_probe_{}", std::process::id()));
    fs::write(&probe, b"").map_err(|e| Failure::io(&format!("{flag}: cannot write in"), &dir, e))?;
    let _ = fs::remove_file(&probe);
    Ok(dir)
}

/// The roofline report `--roofline` names, and what was at its path before the run.
struct Report {
    path: PathBuf,
    before: Option<Identity>,
}

/// A file's identity and contents' age: the library replaces the report by renaming a new file
/// over it, so a report this run wrote has a new inode (and time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Identity {
    dev: u64,
    ino: u64,
    mtime_ns: i128,
    len: u64,
}

fn identity(path: &Path) -> Option<Identity> {
    use std::os::unix::fs::MetadataExt;
    let m = fs::symlink_metadata(path).ok()?;
    Some(Identity { dev: m.dev(), ino: m.ino(), mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()), len: m.len() })
}

/// The roofline report's path: absolute (the command may change directory), its directory
/// writable, and nothing there or a regular file: the same check the library makes when it
/// writes (a directory, FIFO, socket, device or symbolic link is never replaced), made before
/// the command starts.
fn prepare_report(path: &Path) -> Result<Report, Failure> {
    let path = absolute(path);
    match roctx_export::output::existing_kind(&path) {
        Ok(None | Some(roctx_export::output::FileKind::Regular)) => {}
        Ok(Some(kind)) => {
            return Err(Failure::new(format!("--roofline {}: is {}; only a regular file is ever replaced", path.display(), kind.describe()))
                .hint("--roofline takes the name of a new or regular file, such as roofline.json"));
        }
        Err(e) => return Err(Failure::io("--roofline: cannot look at", &path, e)),
    }
    let parent = path.parent().unwrap_or(Path::new("/"));
    prepare_dir(parent, "--roofline")?;
    let before = identity(&path);
    Ok(Report { path, before })
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

/// `--delay`, `--duration`, `--capture-range`, `--capture-range-end`, checked before the command
/// starts, as the library's variables (`ROCTX_UTILS_CAPTURE_*`, the library's grammar).
#[derive(Debug, Default)]
pub(crate) struct Windows {
    vars: Vec<(&'static str, String)>,
    /// The profiler API: the library is preloaded, so the program's cudaProfilerStart/Stop and
    /// hipProfilerStart/Stop reach it.
    preload: bool,
}

pub(crate) fn windows(args: &RecordArgs) -> Result<Windows, Failure> {
    let mut w = Windows::default();
    let bad = |flag: &str, value: &str, want: &str| Failure::new(format!("{flag} {value:?} is not {want}")).hint("see roctx record --help");
    if let Some(range) = &args.capture_range {
        let parsed = roctx_config::CaptureRange::parse(range).ok_or_else(|| bad("--capture-range", range, "one of none, profiler-api, range:NAME, range:NAME@DOMAIN"))?;
        w.preload = parsed == roctx_config::CaptureRange::ProfilerApi;
        w.vars.push((roctx_config::CAPTURE_RANGE, range.clone()));
    }
    if let Some(end) = &args.capture_range_end {
        roctx_config::RangeEnd::parse(end).ok_or_else(|| bad("--capture-range-end", end, "one of stop, repeat, repeat:N (N from 1)"))?;
        w.vars.push((roctx_config::CAPTURE_RANGE_END, end.clone()));
    }
    for (flag, var, value, zero_ok) in [("--delay", roctx_config::CAPTURE_DELAY, &args.delay, true), ("--duration", roctx_config::CAPTURE_DURATION, &args.duration, false)] {
        if let Some(value) = value {
            let secs = value.trim().parse::<f64>().ok().filter(|s| s.is_finite() && (if zero_ok { *s >= 0.0 } else { *s > 0.0 }) && *s <= roctx_config::MAX_WINDOW_SECONDS);
            if secs.is_none() {
                return Err(bad(flag, value, if zero_ok { "a number of seconds from 0 to 1000000" } else { "a number of seconds above 0, up to 1000000" }));
            }
            w.vars.push((var, value.trim().to_owned()));
        }
    }
    Ok(w)
}

impl Windows {
    fn apply(&self, command: &mut Command, library: &Path, env: &LaunchEnv) {
        for (var, value) in &self.vars {
            command.env(var, value);
        }
        if self.preload {
            let mut preload = library.as_os_str().to_owned();
            if let Some(old) = env.ld_preload.as_ref().filter(|v| !v.is_empty()) {
                preload.push(":");
                preload.push(old);
            }
            command.env("LD_PRELOAD", preload);
        }
    }
}

/// Step 2 of the module docs.
#[allow(clippy::too_many_arguments)]
fn environment(
    command: &mut Command,
    env: &LaunchEnv,
    found: &Found,
    library: &Path,
    lib_dir: &Path,
    logdir: &Path,
    run: &str,
    roofline: Option<&Path>,
    no_kernels: bool,
) -> Result<(), Failure> {
    match found {
        Found::Rocm(sdk) => {
            command.env("ROCP_TOOL_LIBRARIES", tool_list(env.tool_libraries.clone(), library));
            if env.register_library.is_none() {
                command.env("ROCPROFILER_REGISTER_LIBRARY", sdk);
            }
        }
        Found::Nvidia(_) | Found::CpuOnly(_) => {
            if let Some(other) = &env.nvtx_injection {
                let same = fs::canonicalize(other).ok() == fs::canonicalize(library).ok();
                if !same {
                    return Err(Failure::new(format!(
                        "NVTX_INJECTION64_PATH is already set to {}: NVTX loads one injection library per process",
                        Path::new(other).display()
                    ))
                    .hint("unset it (is the command already under nsys or another NVTX tool?)"));
                }
            }
            command.env("NVTX_INJECTION64_PATH", library);
        }
    }
    command.env("ROCTX_UTILS_XSPACE_OUT", logdir);
    command.env("ROCTX_UTILS_RUN_NAME", run);
    if env.python_hooks.is_none() {
        command.env("ROCTX_UTILS_PYTHON_HOOKS", "1");
    }
    let bootstrap = lib_dir.parent().map(|p| p.join("python/bootstrap")).filter(|p| p.join("sitecustomize.py").is_file());
    if let Some(bootstrap) = bootstrap {
        let mut paths = vec![bootstrap];
        if let Some(old) = &env.python_path {
            paths.extend(std::env::split_paths(old));
        }
        if let Ok(joined) = std::env::join_paths(paths) {
            command.env("PYTHONPATH", joined);
        }
    }
    if no_kernels {
        command.env("ROCTX_UTILS_KERNELS", "0");
    }
    if let Some(report) = roofline {
        command.env("ROCTX_UTILS_ROOFLINE_OUT", report);
    }
    Ok(())
}

/// `ROCP_TOOL_LIBRARIES` with `library` added last, ended with `:` when there is more than one
/// entry (the SDK keeps only the pieces a `:` ends once the value holds a `:`).
pub(crate) fn tool_list(existing: Option<OsString>, library: &Path) -> OsString {
    let ours = library.as_os_str();
    let mut entries: Vec<OsString> = existing
        .map(|v| std::env::split_paths(&v).filter(|p| !p.as_os_str().is_empty()).map(PathBuf::into_os_string).collect())
        .unwrap_or_default();
    entries.retain(|e| e.as_os_str() != ours);
    if entries.is_empty() {
        return ours.to_owned();
    }
    entries.push(ours.to_owned());
    let mut out = OsString::new();
    for e in entries {
        out.push(e);
        out.push(":");
    }
    out
}

/// What the traces of the run hold.
#[derive(Debug, Default, PartialEq, Eq)]
struct Counts {
    processes: usize,
    ranges: u64,
    marks: u64,
    kernels: u64,
    copies: u64,
    warnings: Vec<String>,
    unreadable: Vec<String>,
}

fn count(files: &[PathBuf]) -> Counts {
    let mut c = Counts { processes: files.len(), ..Counts::default() };
    for file in files {
        match input::read(file) {
            Ok(space) => add(&mut c, &space),
            Err(_) => c.unreadable.push(file.display().to_string()),
        }
    }
    c
}

fn add(c: &mut Counts, space: &XSpace) {
    for plane in &space.planes {
        let gpu = plane.name.starts_with("/device:GPU:");
        for line in &plane.lines {
            let roctx = !gpu && line.name.ends_with("/ROCTX");
            for event in &line.events {
                if roctx {
                    if event.duration_ps > 0 {
                        c.ranges += 1;
                    } else {
                        c.marks += 1;
                    }
                } else if gpu {
                    let name = plane.event_metadata.get(&event.metadata_id).map_or("", |m| m.name.as_str());
                    if name.starts_with("Memcpy") || name.starts_with("Memset") {
                        c.copies += 1;
                    } else {
                        c.kernels += 1;
                    }
                }
            }
        }
    }
    c.warnings.extend(space.warnings.iter().cloned());
}

/// What [`summary`] reports on.
struct Outcome<'a> {
    logdir: &'a Path,
    run_dir: &'a Path,
    started: SystemTime,
    roofline: Option<&'a Report>,
    status: ExitStatus,
    forwarded: bool,
    /// Processes the command started still hold the lifeline.
    still_running: bool,
}

fn summary(o: &Outcome<'_>) {
    use std::os::unix::process::ExitStatusExt;
    let (logdir, run_dir, status, forwarded) = (o.logdir, o.run_dir, o.status, o.forwarded);
    let (files, older) = this_runs(xspaces(run_dir), o.started);
    let c = count(&files);
    let windows = window_dirs(run_dir).len();
    let ended = match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with {code}"),
        (None, Some(sig)) => format!("was killed by {}", signal_name(sig)),
        _ => "ended".to_owned(),
    };
    say!("roctx record: the command {ended}{}", if forwarded { " (signals sent to roctx were passed on to it)" } else { "" });
    if o.still_running {
        say!(
            "roctx record: processes the command started are still running: their traces land in {} when they end, after this summary (roctx record --wait all waits for them)",
            run_dir.display()
        );
    }
    if older > 0 {
        say!("roctx record: {older} older trace file{} in {} left out (not written by this run)", if older == 1 { "" } else { "s" }, run_dir.display());
    }
    if files.is_empty() && o.still_running {
        say!("roctx record: no trace in {} yet", run_dir.display());
    } else if files.is_empty() {
        let why = match status.signal() {
            Some(9) => "SIGKILL gives a process no chance to write: everything it captured is lost (ROCTX_UTILS_FLUSH_EVERY=<seconds> keeps a snapshot that survives it)".to_owned(),
            Some(_) => "it died of a signal before writing (a fatal signal's own handler never ran ours)".to_owned(),
            None => "nothing was captured: did the command use the GPU or make an annotation? (ROCTX_UTILS_LOG=info says what happened at start-up)".to_owned(),
        };
        say!("roctx record: no trace was written to {}: {why}", run_dir.display());
    } else {
        say!(
            "roctx record: {} {}, {} ranges, {} marks, {} kernels, {} memory copies",
            c.processes,
            if c.processes == 1 { "process" } else { "processes" },
            c.ranges,
            c.marks,
            c.kernels,
            c.copies
        );
        if windows > 0 {
            say!("roctx record: {windows} capture window{}, each a run of its own ({}-window<N>)", if windows == 1 { "" } else { "s" }, run_dir.display());
        }
        // A snapshot's mark (written at a signal, or while the run went on) is not a loss of
        // the capture's: it says where the file stops.
        let (marks, lost): (Vec<&String>, Vec<&String>) =
            c.warnings.iter().partition(|w| w.starts_with("cut short by") || w.starts_with("snapshot ") || w.starts_with("capture window "));
        if lost.is_empty() && c.unreadable.is_empty() {
            say!("roctx record: nothing was dropped");
        }
        for w in &lost {
            say!("roctx record: LOST: {w}");
        }
        for w in &marks {
            say!("roctx record: {w}");
        }
        if status.signal() == Some(9) && !marks.is_empty() {
            say!("roctx record: SIGKILL ended the command after its last snapshot: what it did since then is lost");
        }
        for f in &c.unreadable {
            say!("roctx record: {f} could not be read (cut short?)");
        }
        for f in &files {
            say!("  {}", f.display());
        }
    }
    if let Some(report) = o.roofline {
        let path = report.path.as_path();
        let now = identity(path);
        let regular = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file());
        if regular && now.is_some() && now != report.before {
            say!("roctx record: roofline report {} (roctx roofline {} --svg roofline.svg)", path.display(), path.display());
        } else if now.is_some() {
            say!("roctx record: no roofline report was written by this run: what is at {} is from before, left as it was", path.display());
        } else {
            say!("roctx record: no roofline report at {}", path.display());
        }
    }
    if !files.is_empty() {
        // With capture windows the runs are the windows' directories.
        let inspect = files.first().and_then(|f| f.parent()).filter(|_| windows > 0).unwrap_or(run_dir);
        say!("roctx record: view with: xprof --logdir {}   (or tensorboard --logdir {}); summary: roctx inspect {}", logdir.display(), logdir.display(), inspect.display());
    }
}

/// The files this run wrote (changed since it started; a second of slack for coarse file
/// times), and how many older ones were left out (a run name used before).
fn this_runs(files: Vec<PathBuf>, started: SystemTime) -> (Vec<PathBuf>, usize) {
    let since = started.checked_sub(std::time::Duration::from_secs(1)).unwrap_or(started);
    let (new, old): (Vec<PathBuf>, Vec<PathBuf>) =
        files.into_iter().partition(|f| fs::metadata(f).and_then(|m| m.modified()).map_or(true, |t| t >= since));
    (new, old.len())
}

/// The run directory's trace files, and those of its capture windows (`<run>-window<N>`
/// beside it, in window order), sorted (also the progress line's count).
pub(crate) fn xspaces(run_dir: &Path) -> Vec<PathBuf> {
    let files = |dir: &Path| -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = fs::read_dir(dir)
            .map(|d| d.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.to_string_lossy().ends_with(".xplane.pb")).collect())
            .unwrap_or_default();
        out.sort();
        out
    };
    let mut out = files(run_dir);
    for (_, dir) in window_dirs(run_dir) {
        out.extend(files(&dir));
    }
    out
}

/// The capture windows' run directories beside `run_dir`, by window number.
pub(crate) fn window_dirs(run_dir: &Path) -> Vec<(u32, PathBuf)> {
    let (Some(parent), Some(name)) = (run_dir.parent(), run_dir.file_name().and_then(|n| n.to_str())) else { return Vec::new() };
    let prefix = format!("{name}-window");
    let mut dirs: Vec<(u32, PathBuf)> = fs::read_dir(parent)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter_map(|e| {
                    let n = e.file_name().to_str()?.strip_prefix(&prefix)?.parse::<u32>().ok()?;
                    e.path().is_dir().then(|| (n, e.path()))
                })
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs
}

fn signal_name(sig: i32) -> String {
    signal_hook::low_level::signal_name(sig).map_or_else(|| format!("signal {sig}"), str::to_owned)
}

/// The command's exit, as ours: its code, or its signal raised on ourselves (after our own
/// handlers are gone), so that a shell or a job scheduler sees what it would have seen.
fn exit_like(status: ExitStatus) -> Status {
    use std::os::unix::process::ExitStatusExt;
    if let Some(code) = status.code() {
        return Status::Exit(u8::try_from(code).unwrap_or(1));
    }
    let sig = status.signal().unwrap_or(0);
    let _ = signal_hook::low_level::emulate_default_handler(sig);
    Status::Exit(u8::try_from(128 + sig).unwrap_or(255))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_library_is_appended_and_the_list_ended_with_a_colon() {
        let ours = Path::new("/r/lib/libroctx_utils_tool.so");
        assert_eq!(tool_list(None, ours), OsString::from("/r/lib/libroctx_utils_tool.so"));
        assert_eq!(tool_list(Some("/opt/rocm/lib/rocprofiler-sdk/librocprofiler-sdk-tool.so".into()), ours), OsString::from("/opt/rocm/lib/rocprofiler-sdk/librocprofiler-sdk-tool.so:/r/lib/libroctx_utils_tool.so:"));
        assert_eq!(tool_list(Some("a.so:b.so:".into()), ours), OsString::from("a.so:b.so:/r/lib/libroctx_utils_tool.so:"));
        // Already listed: not twice.
        assert_eq!(tool_list(Some("/r/lib/libroctx_utils_tool.so".into()), ours), OsString::from("/r/lib/libroctx_utils_tool.so"));
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("roctx_record_{name}_{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn runs_started_in_the_same_second_get_a_directory_each() {
        let logdir = scratch("reserve");
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_790_000_000);
        let (a, da) = reserve_run(&logdir, t).unwrap();
        let (b, db) = reserve_run(&logdir, t).unwrap();
        let (c, _) = reserve_run(&logdir, t).unwrap();
        assert_eq!(b, format!("{a}_2"));
        assert_eq!(c, format!("{a}_3"));
        assert_ne!(da, db);
        assert!(logdir.join("plugins/profile").join(&da).is_dir() && logdir.join("plugins/profile").join(&db).is_dir());
        let _ = fs::remove_dir_all(&logdir);
    }

    #[test]
    fn only_the_files_this_run_wrote_are_counted() {
        let dir = scratch("this_runs");
        let old = dir.join("old.xplane.pb");
        fs::write(&old, b"").unwrap();
        let file = fs::File::options().write(true).open(&old).unwrap();
        file.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000)).unwrap();
        let new = dir.join("new.xplane.pb");
        fs::write(&new, b"").unwrap();
        let (files, older) = this_runs(vec![new.clone(), old], SystemTime::now() - std::time::Duration::from_secs(5));
        assert_eq!((files, older), (vec![new], 1));
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_lifeline_is_held_until_every_process_that_inherited_it_ends() {
        let mut lifeline = Lifeline::new().unwrap();
        let mut child = Command::new("/bin/sh").args(["-c", "sleep 0.3"]).spawn().unwrap();
        lifeline.drop_ours();
        assert!(lifeline.held(), "the child holds the write end");
        child.wait().unwrap();
        assert!(!lifeline.held(), "nobody holds it once the child ended");
        let stop = AtomicBool::new(true);
        lifeline.wait(&stop); // returns at once
    }
}
