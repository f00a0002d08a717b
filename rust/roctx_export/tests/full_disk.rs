//! A disk that fills up midway, for the writers of `roctx_export::output`, in a child process:
//! this test runs its own binary again under `ulimit -f` (with SIGXFSZ ignored, so a write past
//! the limit fails with EFBIG instead of killing the process) and the child does the writing.
//! A file size limit cannot be set for one thread, and this crate has no unsafe code to call
//! setrlimit with.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use roctx_export::logdir;
use roctx_export::xplane_proto::{XEvent, XLine, XPlane, XSpace};

/// Set in the child: the log directory to write into.
const CHILD: &str = "ROCTX_FULL_DISK_CHILD";
const RUN: &str = "2030_01_01_00_00_00";

/// An XSpace far over the 512-byte limit the child runs under.
fn big_space() -> XSpace {
    let line = XLine { id: 1, name: "t".into(), events: vec![XEvent { metadata_id: 1, ..XEvent::default() }; 10_000], ..XLine::default() };
    XSpace { planes: vec![XPlane { name: "/host:CPU".into(), lines: vec![line], ..XPlane::default() }], ..XSpace::default() }
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

// logdir::write used to leave `.<host>.xplane.pb.tmp` behind when the write failed.
#[test]
fn a_log_directory_write_that_fills_the_disk_fails_and_leaves_no_temporary_file() {
    if let Some(logs) = std::env::var_os(CHILD) {
        let err = logdir::write(Path::new(&logs), RUN, "host", &big_space()).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(27), "{err}"); // EFBIG
        return;
    }
    let logs = std::env::temp_dir().join(format!("roctx_full_disk.{}", std::process::id()));
    let _ = fs::remove_dir_all(&logs);
    let run = logs.join("plugins/profile").join(RUN);
    fs::create_dir_all(&run).unwrap();
    fs::write(run.join("host.xplane.pb"), b"earlier").unwrap();
    let exe: PathBuf = std::env::current_exe().unwrap();
    let child = Command::new("sh")
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 1; exec \"$0\" --exact a_log_directory_write_that_fills_the_disk_fails_and_leaves_no_temporary_file --test-threads 1")
        .arg(&exe)
        .env(CHILD, &logs)
        .output()
        .unwrap();
    assert!(child.status.success(), "the child failed:\n{}{}", String::from_utf8_lossy(&child.stdout), String::from_utf8_lossy(&child.stderr));
    assert_eq!(names(&run), ["host.xplane.pb"], "a temporary or partial file was left behind");
    assert_eq!(fs::read(run.join("host.xplane.pb")).unwrap(), b"earlier");
    fs::remove_dir_all(&logs).unwrap();
}
