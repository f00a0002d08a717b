//! The harness: a scratch [`Dir`] per test and a [`TestCommand`] that runs the `roctx` binary in
//! it, capturing exit code, stdout and stderr. Plus the trace fixtures the tests share.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

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
        let out = self.process().output().expect("run roctx");
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
    let range = |tid, start_ns, end_ns, label| Event { kind: EventKind::Range, tid, end_tid: tid, start_ns, end_ns, label, depth: 0 };
    t.events.push(range(4242, 1_005_000, 1_085_000, outer));
    t.events.push(range(4242, 1_015_000, 1_045_000, inner));
    t.events.push(range(4242, 1_050_000, 1_060_000, inner));
    t.events.push(Event { kind: EventKind::Mark, tid: 4242, end_tid: 4242, start_ns: 1_070_000, end_ns: 1_070_000, label: mark, depth: 0 });
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

/// Path as a `&str`, for argument lists.
pub fn s(path: &Path) -> &str {
    path.to_str().expect("utf-8 test path")
}
