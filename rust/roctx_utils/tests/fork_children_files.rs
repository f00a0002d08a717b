//! Helper children (data loaders, compile workers) forked by a profiled process inherit its rank
//! and its report path. Issue 25, items 2 and 3: each child that recorded nothing still wrote an
//! empty trace under the parent's rank name (after 999 of them the parent's own write failed),
//! and a child's exit-time roofline report (0 rows) replaced the parent's.

use roctx_utils::collector::sink::{Sink, IN_PROCESS};
use roctx_utils::runtime;

mod common;
use common::files_under;

#[test]
fn helper_children_never_take_the_parents_names_and_empty_ones_write_nothing() {
    let base = std::env::temp_dir().join(format!("roctx_fork_children_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&base).unwrap();
    let logs = base.join("logs");
    let report = base.join("roofline.json");
    // SAFETY: the scenario runs in a child (its own environment and start-up); the test waits.
    let scenario = unsafe { libc::fork() };
    if scenario == 0 {
        std::env::set_var("ROCTX_UTILS_XSPACE_OUT", &logs);
        std::env::set_var("ROCTX_UTILS_CAPTURE", "self");
        std::env::set_var("ROCTX_UTILS_RUN_NAME", "job");
        std::env::set_var("RANK", "3");
        std::env::set_var("GGML_ROOFLINE_OUT", &report);
        runtime::get();
        IN_PROCESS.push(b"parent step");
        IN_PROCESS.pop();
        let mut children = Vec::new();
        for i in 0..6 {
            // SAFETY: each child exits through exit(), running the exit hooks.
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                if i == 0 {
                    IN_PROCESS.push(b"child step"); // one child that does record something
                    IN_PROCESS.pop();
                }
                // SAFETY: runs the atexit handlers.
                unsafe { libc::exit(0) };
            }
            children.push(pid);
        }
        for pid in children {
            let mut status = 0;
            // SAFETY: our own child.
            unsafe { libc::waitpid(pid, &mut status, 0) };
        }
        // SAFETY: runs the atexit handlers: the parent's trace and report.
        unsafe { libc::exit(0) };
    }
    let mut status = 0;
    // SAFETY: our own child.
    assert_eq!(unsafe { libc::waitpid(scenario, &mut status, 0) }, scenario);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "status {status}");
    let names: Vec<String> = files_under(&logs).iter().map(|f| f.file_name().unwrap().to_string_lossy().into_owned()).collect();
    let host = roctx_utils::export::logdir::safe_host(&roctx_utils::sys::os::hostname());
    // The parent's file under its rank; the one child that recorded under its own pid; the
    // five empty children wrote nothing.
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names.contains(&format!("{host}_rank3.xplane.pb")), "{names:?}");
    assert!(names.iter().any(|n| n.starts_with(&format!("{host}_pid")) && !n.contains("-2")), "{names:?}");
    // The parent's report is the parent's (no child with nothing replaced it), and no child wrote
    // one of its own (none traced a kernel).
    assert!(report.exists());
    let reports: Vec<String> = std::fs::read_dir(&base).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.starts_with("roofline")).collect();
    assert_eq!(reports, ["roofline.json"]);
    std::fs::remove_dir_all(&base).unwrap();
}

#[test]
fn a_child_exiting_after_its_parent_never_replaces_the_parents_report() {
    let base = std::env::temp_dir().join(format!("roctx_fork_report_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&base).unwrap();
    let report = base.join("roofline.json");
    // SAFETY: the scenario runs in a child; the test waits for it.
    let scenario = unsafe { libc::fork() };
    if scenario == 0 {
        std::env::set_var("ROCTX_UTILS_CAPTURE", "self");
        std::env::set_var("GGML_ROOFLINE_OUT", &report);
        runtime::get();
        // SAFETY: the helper outlives its parent, then exits through exit().
        if unsafe { libc::fork() } == 0 {
            std::thread::sleep(std::time::Duration::from_millis(1500));
            // SAFETY: runs the atexit handlers.
            unsafe { libc::exit(0) };
        }
        // SAFETY: runs the atexit handlers: the parent's report.
        unsafe { libc::exit(0) };
    }
    let mut status = 0;
    // SAFETY: our own child.
    assert_eq!(unsafe { libc::waitpid(scenario, &mut status, 0) }, scenario);
    assert!(report.exists(), "the parent wrote its report");
    std::fs::write(&report, b"PARENT").unwrap(); // what the helper must not replace
    std::thread::sleep(std::time::Duration::from_millis(3000));
    assert_eq!(std::fs::read(&report).unwrap(), b"PARENT", "the helper replaced its parent's report");
    let others: Vec<String> = std::fs::read_dir(&base).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n != "roofline.json").collect();
    assert!(others.is_empty(), "a helper that recorded nothing wrote {others:?}");
    std::fs::remove_dir_all(&base).unwrap();
}
