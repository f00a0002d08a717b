//! The exit-time trace of `ROCTX_UTILS_XSPACE_OUT` is never overwritten by a later session: a
//! host `atexit` handler that runs after ours and starts and stops a (nearly empty) session used
//! to replace the file with its empty trace (same second-granular run directory, same name).


use roctx_utils::collector::sink::{Sink, IN_PROCESS};
use roctx_utils::collector::SessionOptions;
use roctx_utils::config::CaptureRequest;
use roctx_utils::runtime;

extern "C" fn host_handler_after_ours() {
    let _ = runtime::start_session(SessionOptions::default(), Some(CaptureRequest::InProcess));
    let _ = runtime::stop_session();
}

mod common;
use common::files_under;

#[test]
fn a_session_stopped_after_the_exit_write_gets_its_own_file() {
    let dir = std::env::temp_dir().join(format!("roctx_exit_write_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // SAFETY: the child runs the scenario and leaves through exit(); the parent waits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // Registered before our hook, so it runs after it (atexit is last in, first out).
        // SAFETY: a plain extern "C" fn.
        unsafe { libc::atexit(host_handler_after_ours) };
        std::env::set_var("ROCTX_UTILS_XSPACE_OUT", &dir);
        std::env::set_var("ROCTX_UTILS_CAPTURE", "self");
        runtime::get(); // start-up: the automatic session and our exit hook
        IN_PROCESS.push(b"recorded before exit");
        IN_PROCESS.pop();
        // SAFETY: runs the atexit handlers: ours writes, then the host's.
        unsafe { libc::exit(0) };
    }
    let mut status = 0;
    // SAFETY: our own child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "child status {status}");
    let files = files_under(&dir);
    let names: Vec<String> = files.iter().map(|f| f.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(files.len(), 2, "{names:?}");
    let with_ranges = files.iter().filter(|f| {
        let bytes = std::fs::read(f).unwrap();
        bytes.windows(b"recorded before exit".len()).any(|w| w == b"recorded before exit")
    });
    assert_eq!(with_ranges.count(), 1, "the exit-time trace was overwritten: {names:?}");
    // Both in one run directory as `<stem>` and `<stem>-2`, or (across a second boundary) in two.
    let stem = runtime_stem(pid);
    assert!(names.iter().all(|n| n.starts_with(&stem)), "{names:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn runtime_stem(pid: i32) -> String {
    let host = roctx_utils::export::logdir::safe_host(&roctx_utils::sys::os::hostname());
    format!("{host}_pid{pid}")
}

#[test]
fn processes_writing_in_the_same_second_each_keep_their_file() {
    // The file name was the host alone: the second writer of a run directory replaced the first.
    let dir = std::env::temp_dir().join(format!("roctx_same_second_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut children = Vec::new();
    for n in 0..4 {
        // SAFETY: as above.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            std::env::set_var("ROCTX_UTILS_XSPACE_OUT", &dir);
            std::env::set_var("ROCTX_UTILS_CAPTURE", "self");
            runtime::get();
            IN_PROCESS.push(format!("process {n}").as_bytes());
            IN_PROCESS.pop();
            // SAFETY: runs our exit hook.
            unsafe { libc::exit(0) };
        }
        children.push(pid);
    }
    for pid in children {
        let mut status = 0;
        // SAFETY: our own child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    }
    let files = files_under(&dir);
    assert_eq!(files.len(), 4, "{files:?}");
    for n in 0..4 {
        let label = format!("process {n}");
        let holders = files.iter().filter(|f| {
            let bytes = std::fs::read(f).unwrap();
            bytes.windows(label.len()).any(|w| w == label.as_bytes())
        });
        assert_eq!(holders.count(), 1, "{label} lost");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_relative_log_directory_is_where_the_process_started_even_after_a_chdir() {
    // Issue 25, item 4: resolved at exit, a relative ROCTX_UTILS_XSPACE_OUT followed the
    // process's chdir() and the message named the relative path.
    let base = std::env::temp_dir().join(format!("roctx_exit_chdir_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(base.join("start")).unwrap();
    std::fs::create_dir_all(base.join("elsewhere")).unwrap();
    // SAFETY: the child runs the scenario and leaves through exit(); the parent waits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        std::env::set_current_dir(base.join("start")).unwrap();
        std::env::set_var("ROCTX_UTILS_XSPACE_OUT", "logs");
        std::env::set_var("ROCTX_UTILS_CAPTURE", "self");
        runtime::get();
        IN_PROCESS.push(b"before the chdir");
        IN_PROCESS.pop();
        std::env::set_current_dir(base.join("elsewhere")).unwrap();
        // SAFETY: runs the atexit handlers, ours writes.
        unsafe { libc::exit(0) };
    }
    let mut status = 0;
    // SAFETY: our own child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "child status {status}");
    assert_eq!(files_under(&base.join("start/logs")).len(), 1);
    assert!(!base.join("elsewhere/logs").exists());
    std::fs::remove_dir_all(&base).unwrap();
}
