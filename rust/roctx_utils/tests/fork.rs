//! fork() while capturing, with every lock of the pipeline busy on other threads: the child
//! must neither hang nor crash, and must be able to keep capturing (its own events only).
//! Before the atfork handlers, 9 of 10 children hung on the thread-registry lock and some
//! crashed in `collector::stop`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use roctx_utils::collector::sink::{Sink, IN_PROCESS};
use roctx_utils::collector::{self, SessionOptions};
use roctx_utils::config::CaptureRequest;
use roctx_kernels::{OpDescriptor, RawDispatch};
use roctx_utils::{emitter, runtime};

const FORKS: usize = 60;

/// What the child does; returns its exit code (0: all good). Runs in a single-threaded child:
/// only async-signal-tolerant work after this point would be strictly portable, but glibc makes
/// malloc usable after fork, and that is what hosts rely on too.
fn in_child() -> i32 {
    // A hang must fail the test, not stall it.
    // SAFETY: alarm has no preconditions.
    unsafe { libc::alarm(5) };
    for _ in 0..3 {
        IN_PROCESS.push(b"child range");
        IN_PROCESS.pop();
    }
    IN_PROCESS.range_start(7, b"child start/stop");
    IN_PROCESS.range_stop(7);
    let handle = emitter::intern::register(b"registered in the child");
    if handle.is_null() {
        return 3;
    }
    let Ok(snapshot) = runtime::stop_session() else { return 4 };
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() } as u64;
    let labels: Vec<&str> = snapshot.events.iter().map(|e| snapshot.label(e)).collect();
    if labels.iter().filter(|l| **l == "child range").count() != 3 || !labels.contains(&"child start/stop") {
        eprintln!("child: unexpected events {labels:?}");
        return 5;
    }
    if labels.len() != 4 || snapshot.events.iter().any(|e| e.tid != pid) {
        eprintln!("child: parent events leaked into the child's session: {labels:?}");
        return 6;
    }
    // The kernel stage: the parent's dispatches and op invocations stayed with the parent, and
    // the child records its own.
    let before = roctx_kernels::snapshot();
    if !before.dispatches.is_empty() || !before.invocations.is_empty() {
        eprintln!("child: {} parent dispatches leaked into the child", before.dispatches.len());
        return 10;
    }
    let op = roctx_kernels::begin_invocation(OpDescriptor { op: "CHILD_OP".into(), ..OpDescriptor::default() });
    roctx_kernels::record_dispatch([RawDispatch { start_ns: 1, end_ns: 2, external: u64::from(op), ..RawDispatch::default() }]);
    let after = roctx_kernels::snapshot();
    if after.dispatches.len() != 1 || after.dispatches[0].invocation != op || op == 0 {
        eprintln!("child: kernel stage unusable after fork: {:?}", after.dispatches);
        return 11;
    }
    // And a new session works.
    if runtime::start_session(SessionOptions::default(), Some(CaptureRequest::InProcess)).is_err() {
        return 7;
    }
    IN_PROCESS.push(b"again");
    IN_PROCESS.pop();
    match runtime::stop_session() {
        Ok(s) if s.events.len() == 1 => 0,
        _ => 8,
    }
}

#[test]
fn a_child_forked_while_every_lock_is_busy_never_hangs_and_keeps_capturing() {
    // Small buffers keep each busy snapshot short (a fork waits for a snapshot in progress).
    let options = SessionOptions { max_events_per_thread: 2000, ..SessionOptions::default() };
    runtime::start_session(options, Some(CaptureRequest::InProcess)).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let mut busy = Vec::new();
    // Each thread keeps one of the pipeline's locks hot: its own buffer, the registry (new
    // threads), snapshots (session + registry + every buffer), start/stop ranges, names,
    // RegisterString's pool, the kernel stage (op scopes, dispatch batches, snapshots).
    for kind in 0..7 {
        let stop = Arc::clone(&stop);
        busy.push(std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                match kind {
                    0 | 1 => {
                        IN_PROCESS.push(b"busy");
                        IN_PROCESS.mark(b"tick");
                        IN_PROCESS.pop();
                    }
                    2 => {
                        let _ = collector::snapshot();
                    }
                    3 => {
                        IN_PROCESS.range_start(1_000_000 + i, b"cross");
                        IN_PROCESS.range_stop(1_000_000 + i);
                    }
                    4 => {
                        std::thread::spawn(|| {
                            IN_PROCESS.push(b"short-lived");
                            IN_PROCESS.pop();
                        })
                        .join()
                        .unwrap();
                        runtime::name_current_thread(format!("namer {i}").as_bytes());
                    }
                    6 => {
                        let op = roctx_kernels::begin_invocation(OpDescriptor { op: "MUL_MAT".into(), ..OpDescriptor::default() });
                        let batch = (0..64).map(|k| RawDispatch { start_ns: i * 100 + k, end_ns: i * 100 + k + 1, external: u64::from(op), ..RawDispatch::default() });
                        roctx_kernels::record_dispatch(batch);
                        if i % 64 == 0 {
                            let _ = roctx_kernels::snapshot();
                            roctx_kernels::reset();
                        }
                    }
                    _ => {
                        emitter::intern::register(format!("string {}", i % 1000).as_bytes());
                    }
                }
            }
        }));
    }
    std::thread::sleep(Duration::from_millis(50));
    let mut failures = Vec::new();
    for n in 0..FORKS {
        // SAFETY: the child only runs `in_child` and then _exit; the parent waits for it.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let code = std::panic::catch_unwind(in_child).unwrap_or(9);
            // SAFETY: _exit skips the parent's atexit handlers and the test harness's state.
            unsafe { libc::_exit(code) };
        }
        assert!(pid > 0, "fork failed");
        let mut status = 0;
        // SAFETY: waiting for our own child.
        let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
        assert_eq!(waited, pid);
        if libc::WIFSIGNALED(status) {
            let sig = libc::WTERMSIG(status);
            failures.push(format!("fork {n}: child killed by signal {sig}{}", if sig == libc::SIGALRM { " (hung)" } else { "" }));
        } else if libc::WEXITSTATUS(status) != 0 {
            failures.push(format!("fork {n}: child exited {}", libc::WEXITSTATUS(status)));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    stop.store(true, Ordering::Relaxed);
    for t in busy {
        t.join().unwrap();
    }
    // The parent's session is untouched by its children.
    let parent = runtime::stop_session().unwrap();
    assert!(parent.events.iter().any(|e| parent.label(e) == "busy"));
    assert!(parent.events.iter().all(|e| parent.label(e) != "child range"));
    let kernels = roctx_kernels::snapshot();
    assert!(kernels.geometries.iter().all(|g| g.op != "CHILD_OP"), "a child's op reached the parent");
    assert!(failures.is_empty(), "{} of {FORKS} children failed:\n{}", failures.len(), failures.join("\n"));
}
