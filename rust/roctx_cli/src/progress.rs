//! `roctx record`'s progress line (issue 43): what a long recording has captured so far, as
//! `nsys` users watch a run go by. Each recording process rewrites one line in a directory of
//! ours every second (`ROCTX_UTILS_PROGRESS_DIR`; the library's `runtime::progress`:
//! `events gpu_activities`); a thread here sums them with the trace files the run has written
//! (snapshots, `ROCTX_UTILS_FLUSH_EVERY`) and shows
//!
//! ```text
//! roctx record: 0:05:12, 2 processes, 18233 ranges and marks, 120455 GPU activities, 3 trace files
//! ```
//!
//! rewritten in place on a terminal (cleared before the summary), one line a second elsewhere
//! with `--progress always`, nothing with `never` or when stderr is not a terminal (`auto`).
use std::fs;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::args::Progress as Mode;

/// How often the line is drawn.
const PERIOD: Duration = Duration::from_secs(1);

/// A running progress line; [`Progress::finish`] ends it.
#[derive(Debug)]
pub(crate) struct Progress {
    dir: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    tty: bool,
}

impl Progress {
    /// Starts the line as `mode` says, counting the files of `run_dir`; `None` when it is off
    /// (or its directory cannot be made: the run goes on without it).
    pub(crate) fn start(mode: Mode, run_dir: &Path) -> Option<Progress> {
        let tty = std::io::stderr().is_terminal();
        if mode == Mode::Never || (mode == Mode::Auto && !tty) {
            return None;
        }
        let dir = std::env::temp_dir().join(format!("roctx-progress-{}-{}", std::process::id(), nanos()));
        {
            use std::os::unix::fs::DirBuilderExt;
            fs::DirBuilder::new().mode(0o700).create(&dir).ok()?;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (dir, run_dir, stop) = (dir.clone(), run_dir.to_owned(), Arc::clone(&stop));
            let started = Instant::now();
            std::thread::Builder::new()
                .name("roctx-progress".into())
                .spawn(move || {
                    while !stop.load(Ordering::Acquire) {
                        std::thread::park_timeout(PERIOD);
                        if stop.load(Ordering::Acquire) {
                            break;
                        }
                        let text = render(started.elapsed(), &count(&dir), crate::record::xspaces(&run_dir).len());
                        let mut err = std::io::stderr().lock();
                        let _ = if tty { write!(err, "\r\x1b[K{text}") } else { writeln!(err, "{text}") };
                        let _ = err.flush();
                    }
                })
                .ok()
        };
        Some(Progress { dir, stop, thread, tty })
    }

    /// The directory the recording processes write to.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Stops the line, clears it on a terminal and removes its directory.
    pub(crate) fn finish(mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
        if self.tty {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

fn nanos() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos())
}

/// What the processes' lines add up to.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Counts {
    pub(crate) processes: u64,
    pub(crate) events: u64,
    pub(crate) gpu: u64,
}

/// Sums the lines in `dir` (a line that is not two numbers, a file being replaced, is skipped).
pub(crate) fn count(dir: &Path) -> Counts {
    let mut c = Counts::default();
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let Ok(text) = fs::read_to_string(entry.path()) else { continue };
        let mut fields = text.split_whitespace().map(str::parse::<u64>);
        if let (Some(Ok(events)), Some(Ok(gpu))) = (fields.next(), fields.next()) {
            c.processes += 1;
            c.events = c.events.saturating_add(events);
            c.gpu = c.gpu.saturating_add(gpu);
        }
    }
    c
}

/// The line: `roctx record: H:MM:SS, N processes, ...`.
pub(crate) fn render(elapsed: Duration, c: &Counts, files: usize) -> String {
    let s = elapsed.as_secs();
    let plural = |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    format!(
        "roctx record: {}:{:02}:{:02}, {}, {} ranges and marks, {} GPU activities, {}",
        s / 3600,
        s / 60 % 60,
        s % 60,
        plural(c.processes, "process", "processes"),
        c.events,
        c.gpu,
        plural(files as u64, "trace file", "trace files")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_sums_every_process_and_skips_a_torn_file() {
        let dir = std::env::temp_dir().join(format!("roctx_progress_test_{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("100"), "12 3\n").unwrap();
        fs::write(dir.join("101"), "30 0\n").unwrap();
        fs::write(dir.join("102"), "").unwrap(); // being replaced
        let c = count(&dir);
        assert_eq!(c, Counts { processes: 2, events: 42, gpu: 3 });
        assert_eq!(
            render(Duration::from_secs(3725), &c, 1),
            "roctx record: 1:02:05, 2 processes, 42 ranges and marks, 3 GPU activities, 1 trace file"
        );
        assert_eq!(render(Duration::ZERO, &Counts { processes: 1, ..Counts::default() }, 0), "roctx record: 0:00:00, 1 process, 0 ranges and marks, 0 GPU activities, 0 trace files");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn never_and_auto_off_a_terminal_start_nothing() {
        assert!(Progress::start(Mode::Never, Path::new("/nonexistent")).is_none());
        if !std::io::stderr().is_terminal() {
            assert!(Progress::start(Mode::Auto, Path::new("/nonexistent")).is_none());
        }
    }
}
