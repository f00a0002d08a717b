//! The harness: a scratch [`Dir`] per test and a [`TestCommand`] that runs the `roctx` binary in
//! it, capturing exit code, stdout and stderr. Plus the trace fixtures the tests share.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use prost::Message;
use roctx_export::xplane_proto::{x_event, XEvent, XEventMetadata, XLine, XPlane, XSpace};
use roctx_export::{xplane, Event, EventKind, Trace};

/// A scratch directory, empty at the start of the test and removed at its end.
#[derive(Debug)]
pub struct Dir {
    root: PathBuf,
}

impl Dir {
    /// `<tmp>/roctx_cli_tests/<name>.<pid>`; `name` should be the test's name.
    pub fn new(name: &str) -> Dir {
        let root = std::env::temp_dir().join("roctx_cli_tests").join(format!("{name}.{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(&root).expect("create test dir");
        Dir { root }
    }

    /// `rel` under the directory.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Writes `bytes` to `rel` (creating parents) and returns its path.
    pub fn write(&self, rel: &str, bytes: &[u8]) -> PathBuf {
        let path = self.path(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, bytes).unwrap();
        path
    }

    /// Writes `space` as a `.xplane.pb` file at `rel`.
    pub fn write_space(&self, rel: &str, space: &XSpace) -> PathBuf {
        self.write(rel, &space.encode_to_vec())
    }

    /// Every name in the directory (not below it), sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(&self.root).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    }

    /// Makes a FIFO at `rel`.
    pub fn mkfifo(&self, rel: &str) -> PathBuf {
        let path = self.path(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        assert!(Command::new("mkfifo").arg(&path).status().expect("mkfifo").success());
        path
    }

    /// A character device to point `-o` at: a copy of /dev/null's node in this directory when
    /// we may make one (root), so that a regression replaces the copy and not the system's
    /// /dev/null; else /dev/null itself, which a non-root process cannot replace anyway.
    pub fn char_device(&self) -> PathBuf {
        let path = self.path("null");
        let made = Command::new("mknod").arg(&path).args(["c", "1", "3"]).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
        if made { path } else { PathBuf::from("/dev/null") }
    }

    /// A `roctx` command running in this directory.
    pub fn command(&self) -> TestCommand {
        TestCommand { dir: self.root.clone(), args: Vec::new() }
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

/// `roctx <args>` in a test [`Dir`].
#[derive(Debug)]
pub struct TestCommand {
    dir: PathBuf,
    args: Vec<String>,
}

impl TestCommand {
    /// Appends arguments; paths are passed as given (relative ones resolve in the test dir).
    pub fn args<S: AsRef<std::ffi::OsStr>>(&mut self, args: impl IntoIterator<Item = S>) -> &mut TestCommand {
        self.args.extend(args.into_iter().map(|a| a.as_ref().to_string_lossy().into_owned()));
        self
    }

    /// The underlying process command.
    pub fn process(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_roctx"));
        cmd.args(&self.args).current_dir(&self.dir).stdin(Stdio::null());
        cmd
    }

    /// Runs to completion.
    pub fn run(&self) -> Run {
        self.finish(self.process().output().expect("run roctx"))
    }

    /// Runs under `sh -c '<setup>; exec roctx <args>'`, for limits only a shell sets
    /// (`ulimit -f`, ignored signals).
    pub fn run_after(&self, setup: &str) -> Run {
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(format!("{setup}; exec \"$0\" \"$@\"")).arg(env!("CARGO_BIN_EXE_roctx"));
        cmd.args(&self.args).current_dir(&self.dir).stdin(Stdio::null());
        self.finish(cmd.output().expect("run sh"))
    }

    /// Runs, and fails the test if it has not finished within `limit` (killing it) or its
    /// exit code is not `code`: for what used to hang. Its output must fit a pipe buffer.
    pub fn expect_within(&self, limit: Duration, code: i32) -> Run {
        let mut child = self.process().stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("run roctx");
        let start = Instant::now();
        while child.try_wait().expect("wait for roctx").is_none() {
            if start.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                panic!("roctx {} did not finish within {limit:?}", self.args.join(" "));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let run = self.finish(child.wait_with_output().expect("wait for roctx"));
        assert_eq!(run.code, code, "roctx {}\n--- stdout\n{}\n--- stderr\n{}", run.args, run.stdout, run.stderr);
        run
    }

    fn finish(&self, out: std::process::Output) -> Run {
        Run {
            args: self.args.join(" "),
            code: out.status.code().expect("roctx killed by a signal"),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Runs, and fails the test unless the exit code is `code`.
    pub fn expect(&self, code: i32) -> Run {
        let run = self.run();
        assert_eq!(run.code, code, "roctx {}\n--- stdout\n{}\n--- stderr\n{}", run.args, run.stdout, run.stderr);
        assert!(!run.stderr.contains("panicked"), "roctx {} panicked:\n{}", run.args, run.stderr);
        run
    }
}

/// What a finished `roctx` said.
#[derive(Debug)]
pub struct Run {
    /// The arguments, for messages.
    pub args: String,
    /// Exit code.
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Run {
    /// stdout as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("roctx {}: stdout is not JSON ({e}):\n{}", self.args, self.stdout))
    }
}

/// A roctx_utils capture on host0: thread 4242 ("main") has `outer` > `inner`, a second `inner`
/// and a `mark`; thread 4300 has one `inner`.
pub fn sample_trace() -> Trace {
    let mut t = Trace::new("host0", 1_000_000, 2_000_000);
    let outer = t.label("outer");
    let inner = t.label("inner");
    let mark = t.label("mark");
    let range = |tid, start_ns, end_ns, label| Event { kind: EventKind::Range, tid, end_tid: tid, start_ns, end_ns, label, depth: 0, seq: 0 };
    t.events.push(range(4242, 1_005_000, 1_085_000, outer));
    t.events.push(range(4242, 1_015_000, 1_045_000, inner));
    t.events.push(range(4242, 1_050_000, 1_060_000, inner));
    t.events.push(Event { kind: EventKind::Mark, tid: 4242, end_tid: 4242, start_ns: 1_070_000, end_ns: 1_070_000, label: mark, depth: 0, seq: 0 });
    t.events.push(range(4300, 1_100_000, 1_200_000, inner));
    t.thread_names.insert(4242, "main".to_owned());
    t.warnings.push("roctx_utils: 3 events dropped".to_owned());
    t
}

/// [`sample_trace`] as roctx_utils stores it.
pub fn sample_space() -> XSpace {
    xplane::standalone_xspace(&sample_trace())
}

/// A plane whose lines each hold `n` events named `event` (ids and names as given).
pub fn plane(name: &str, event: &str, lines: &[(i64, &str, usize)]) -> XPlane {
    let mut p = XPlane { name: name.to_owned(), ..XPlane::default() };
    p.event_metadata.insert(1, XEventMetadata { id: 1, name: event.to_owned(), ..XEventMetadata::default() });
    for &(id, line_name, n) in lines {
        p.lines.push(XLine {
            id,
            name: line_name.to_owned(),
            timestamp_ns: 1_000_000,
            events: (0..n).map(|i| XEvent { metadata_id: 1, data: Some(x_event::Data::OffsetPs(i as i64 * 1_000_000)), duration_ps: 500_000, stats: vec![] }).collect(),
            ..XLine::default()
        });
    }
    p
}

/// What an XLA capture of the same run looks like: host threads named by the thread (ids are
/// tids) and a GPU plane.
pub fn xla_space() -> XSpace {
    XSpace {
        planes: vec![
            plane("/host:CPU", "ThunkExecute", &[(4242, "python3", 3), (4300, "tf_XLACpu/4300", 2)]),
            plane("/device:GPU:0", "gemm_kernel", &[(1, "Stream #1", 4)]),
        ],
        hostnames: vec!["host0".to_owned()],
        ..XSpace::default()
    }
}

/// A valid XSpace of `events` tiny events on one `/host:CPU` line, the worst case for memory and
/// for per-event output: all but every 1000th are empty `XEvent`s (2 bytes on the wire; metadata
/// id 0, which no metadata has, so validation finds a problem on each), every 1000th is a real
/// 1 us event of metadata 1. 5 M events make a 10 MB file.
pub fn many_events(events: usize) -> XSpace {
    let mut p = XPlane { name: "/host:CPU".to_owned(), ..XPlane::default() };
    p.event_metadata.insert(1, XEventMetadata { id: 1, name: "real".to_owned(), ..XEventMetadata::default() });
    let event = |i: usize| match i % 1000 {
        0 => XEvent { metadata_id: 1, data: Some(x_event::Data::OffsetPs(i as i64 * 1000)), duration_ps: 1_000_000, stats: vec![] },
        _ => XEvent::default(),
    };
    p.lines.push(XLine { id: 1, name: "Host Threads/1".to_owned(), timestamp_ns: 1_000, events: (0..events).map(event).collect(), ..XLine::default() });
    XSpace { planes: vec![p], hostnames: vec!["big".to_owned()], ..XSpace::default() }
}

/// `labels` ranges on one thread's ROCTX line, each with a label of its own (its own event
/// metadata, about 33 bytes a range): what `roctx stats` took 1.19 GB for at 1 M (issue 40).
pub fn many_labels(labels: usize) -> XSpace {
    let mut p = XPlane { name: "/host:CPU".to_owned(), ..XPlane::default() };
    let mut events = Vec::with_capacity(labels);
    for i in 0..labels {
        let id = i as i64 + 1;
        p.event_metadata.insert(id, XEventMetadata { id, name: format!("label_{i:07}"), ..XEventMetadata::default() });
        events.push(XEvent { metadata_id: id, data: Some(x_event::Data::OffsetPs(i as i64 * 2000)), duration_ps: 1000, stats: vec![] });
    }
    p.lines.push(XLine { id: 1, name: "Host Threads/1/ROCTX".to_owned(), timestamp_ns: 1_000, events, ..XLine::default() });
    XSpace { planes: vec![p], hostnames: vec!["labels".to_owned()], ..XSpace::default() }
}

/// `lines` unnamed lines with one 1 ns event each on `/host:CPU` (ids 1..=lines, 13 bytes a
/// line): what `merge` spent 28 s on at 100 k lines (1.3 MB) when it was quadratic.
pub fn many_lines(lines: usize) -> XSpace {
    let mut p = XPlane { name: "/host:CPU".to_owned(), ..XPlane::default() };
    p.event_metadata.insert(1, XEventMetadata { id: 1, name: "work".to_owned(), ..XEventMetadata::default() });
    let event = XEvent { metadata_id: 1, data: None, duration_ps: 1000, stats: vec![] };
    p.lines = (1..=lines as i64).map(|id| XLine { id, events: vec![event.clone()], ..XLine::default() }).collect();
    XSpace { planes: vec![p], ..XSpace::default() }
}

/// `threads` named thread lines on `/host:CPU` and a `/host:ROCTX` plane with a line for every
/// other thread, which must each land right below their thread (the row placement was
/// quadratic too).
pub fn many_threads(threads: usize) -> XSpace {
    let host: Vec<(i64, String, usize)> = (1..=threads as i64).map(|i| (i, format!("Host Threads/{i}"), 1)).collect();
    let host: Vec<(i64, &str, usize)> = host.iter().map(|(i, n, c)| (*i, n.as_str(), *c)).collect();
    let roctx: Vec<(i64, String, usize)> = (1..=threads as i64).step_by(2).map(|i| (i, xplane::roctx_line_name(i as u64), 1)).collect();
    let roctx: Vec<(i64, &str, usize)> = roctx.iter().map(|(i, n, c)| (*i, n.as_str(), *c)).collect();
    XSpace { planes: vec![plane("/host:CPU", "work", &host), plane(xplane::ROCTX_PLANE, "range", &roctx)], ..XSpace::default() }
}

/// Path as a `&str`, for argument lists.
pub fn s(path: &Path) -> &str {
    path.to_str().expect("utf-8 test path")
}
