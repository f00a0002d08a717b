//! State-machine tests. The collector is process-global, so tests take a lock and run each
//! scenario on fresh threads (fresh thread-local buffers).
use super::*;

static SERIAL: parking_lot::Mutex<()> = parking_lot::const_mutex(());

fn opts(max_events: usize) -> SessionOptions {
    SessionOptions { max_events_per_thread: max_events, ..SessionOptions::default() }
}

fn on_thread<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    std::thread::spawn(f).join().expect("scenario thread panicked")
}

fn labels(s: &Snapshot) -> Vec<String> {
    s.events.iter().map(|e| s.label(e).to_owned()).collect()
}

#[test]
fn push_pop_records_one_range_with_label_tid_and_order() {
    let _g = SERIAL.lock();
    start(opts(1000), CaptureMode::InProcess).unwrap();
    let tid = on_thread(|| {
        let tid = current_tid();
        push(b"outer", 10, tid);
        push(b"inner", 20, tid);
        pop(30, tid);
        pop(40, tid);
        tid
    });
    let s = stop().unwrap();
    assert_eq!(labels(&s), ["outer", "inner"]);
    assert_eq!((s.events[0].start_ns, s.events[0].end_ns, s.events[0].depth), (10, 40, 0));
    assert_eq!((s.events[1].start_ns, s.events[1].end_ns, s.events[1].depth), (20, 30, 1));
    assert!(s.events.iter().all(|e| e.tid == tid && e.kind == EventKind::Range));
    assert_eq!(s.stats.recorded, 2);
}

#[test]
fn marks_are_instants_and_empty_labels_are_counted_but_keep_nesting() {
    let _g = SERIAL.lock();
    start(opts(1000), CaptureMode::InProcess).unwrap();
    on_thread(|| {
        let tid = current_tid();
        mark(b"checkpoint", 5, tid);
        mark(b"", 6, tid);
        push(b"outer", 10, tid);
        push(b"", 11, tid); // null/empty inner
        pop(12, tid);
        pop(13, tid);
    });
    let s = stop().unwrap();
    assert_eq!(labels(&s), ["checkpoint", "outer"]);
    assert_eq!(s.events[0].kind, EventKind::Mark);
    assert_eq!(s.events[0].start_ns, s.events[0].end_ns);
    assert_eq!((s.events[1].start_ns, s.events[1].end_ns), (10, 13));
    assert_eq!(s.stats.dropped_empty_label, 2);
}

#[test]
fn unmatched_pop_is_ignored_and_counted() {
    let _g = SERIAL.lock();
    start(opts(1000), CaptureMode::InProcess).unwrap();
    on_thread(|| {
        let tid = current_tid();
        pop(1, tid);
        push(b"a", 2, tid);
        pop(3, tid);
    });
    let s = stop().unwrap();
    assert_eq!(labels(&s), ["a"]);
    assert_eq!(s.stats.unmatched_pops, 1);
}

#[test]
fn cap_of_8_keeps_8_of_25_and_counts_17() {
    let _g = SERIAL.lock();
    start(opts(8), CaptureMode::InProcess).unwrap();
    on_thread(|| {
        let tid = current_tid();
        for i in 0..25 {
            mark(format!("m{i}").as_bytes(), i, tid);
        }
    });
    let s = stop().unwrap();
    assert_eq!(s.events.len(), 8);
    assert_eq!(s.stats.dropped_event_cap, 17);
    assert_eq!(labels(&s)[..3], ["m0", "m1", "m2"]); // the oldest are kept
}

#[test]
fn a_pop_roctx_says_was_open_but_whose_push_was_unseen_is_begun_outside_not_unmatched() {
    let _g = SERIAL.lock();
    start(opts(1000), CaptureMode::Sdk).unwrap();
    on_thread(|| {
        let tid = current_tid();
        pop_of_open_range(1, tid); // its push came while the SDK context was stopped
        push(b"a", 2, tid);
        pop_of_open_range(3, tid); // an ordinary match still records
        pop(4, tid); // roctx returned -1: truly unmatched
    });
    let s = stop().unwrap();
    assert_eq!(labels(&s), ["a"]);
    assert_eq!(s.stats.begun_outside_session, 1);
    assert_eq!(s.stats.unmatched_pops, 1);
}

#[test]
fn ranges_from_an_earlier_session_never_leak_into_a_later_one() {
    let _g = SERIAL.lock();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let (back_tx, back_rx) = std::sync::mpsc::channel::<()>();
    start(opts(1000), CaptureMode::InProcess).unwrap();
    let worker = std::thread::spawn(move || {
        let tid = current_tid();
        push(b"spans_sessions", 1, tid);
        back_tx.send(()).unwrap();
        rx.recv().unwrap(); // session 1 stops, session 2 starts
        pop(100, tid);
        push(b"fresh", 101, tid);
        pop(102, tid);
    });
    back_rx.recv().unwrap();
    let s1 = stop().unwrap();
    assert!(s1.events.is_empty());
    assert_eq!(s1.stats.open_at_stop, 1);
    start(opts(1000), CaptureMode::InProcess).unwrap();
    tx.send(()).unwrap();
    worker.join().unwrap();
    let s2 = stop().unwrap();
    assert_eq!(labels(&s2), ["fresh"]);
    assert_eq!(s2.stats.begun_outside_session, 1);
    assert_eq!(s2.stats.unmatched_pops, 0);
    assert!(s2.session > s1.session);
}

#[test]
fn process_ranges_cross_threads_by_id() {
    let _g = SERIAL.lock();
    start(opts(1000), CaptureMode::InProcess).unwrap();
    let a = on_thread(|| {
        range_start(42, b"load_weights", 10, current_tid());
        current_tid()
    });
    let b = on_thread(|| {
        range_stop(42, 50, current_tid());
        range_stop(43, 51, current_tid()); // never started
        current_tid()
    });
    let s = stop().unwrap();
    assert_eq!(labels(&s), ["load_weights"]);
    let e = &s.events[0];
    assert_eq!((e.kind, e.tid, e.end_tid, e.start_ns, e.end_ns), (EventKind::ProcessRange, a, b, 10, 50));
    assert_eq!(s.stats.unmatched_stops, 1);
}

#[test]
fn pause_suppresses_and_resume_restores() {
    let _g = SERIAL.lock();
    start(opts(1000), CaptureMode::InProcess).unwrap();
    on_thread(|| {
        let tid = current_tid();
        pause(0);
        mark(b"hidden", 1, tid);
        push(b"hidden_range", 2, tid);
        pop(3, tid);
        resume(0);
        pause(tid);
        mark(b"hidden_thread", 4, tid);
        resume(tid);
        mark(b"visible", 5, tid);
    });
    let s = stop().unwrap();
    assert_eq!(labels(&s), ["visible"]);
    assert_eq!(s.stats.paused, 3);
}

#[test]
fn thread_names_are_kept_and_open_ranges_at_exit_are_counted() {
    let _g = SERIAL.lock();
    start(opts(1000), CaptureMode::InProcess).unwrap();
    let tid = on_thread(|| {
        let tid = current_tid();
        name_thread(tid, b"xla_gpu_exec_0");
        push(b"never_closed", 1, tid);
        tid
    });
    let s = stop().unwrap();
    assert_eq!(s.thread_names.get(&tid).map(String::as_str), Some("xla_gpu_exec_0"));
    assert_eq!(s.stats.open_at_thread_exit, 1);
    assert_eq!(s.stats.open_at_stop, 0);
}

#[test]
fn deep_nesting_is_capped_but_stays_balanced() {
    let _g = SERIAL.lock();
    start(opts(100_000), CaptureMode::InProcess).unwrap();
    on_thread(|| {
        let tid = current_tid();
        for i in 0..(buffer::MAX_DEPTH + 10) {
            push(format!("d{i}").as_bytes(), i as u64, tid);
        }
        for i in 0..(buffer::MAX_DEPTH + 10) {
            pop(1000 + i as u64, tid);
        }
        push(b"after", 5000, tid);
        pop(5001, tid);
    });
    let s = stop().unwrap();
    assert_eq!(s.stats.dropped_too_deep, 10);
    assert_eq!(s.stats.recorded as usize, buffer::MAX_DEPTH + 1);
    assert_eq!(s.stats.unmatched_pops, 0);
    assert!(labels(&s).contains(&"after".to_owned()));
}

#[test]
fn label_bytes_cap_drops_new_labels_but_reuses_stored_ones() {
    let _g = SERIAL.lock();
    start(SessionOptions { max_events_per_thread: 1000, max_label_bytes_per_thread: 10 }, CaptureMode::InProcess).unwrap();
    on_thread(|| {
        let tid = current_tid();
        mark(b"0123456789", 1, tid); // exactly fills the cap
        mark(b"0123456789", 2, tid); // same label: stored once, recorded again
        mark(b"x", 3, tid);
    });
    let s = stop().unwrap();
    assert_eq!(s.events.len(), 2);
    assert_eq!(s.stats.dropped_label_cap, 1);
}

#[test]
fn many_threads_account_for_every_event() {
    let _g = SERIAL.lock();
    const THREADS: usize = 8;
    const PAIRS: usize = 5000;
    start(opts(PAIRS * 2), CaptureMode::InProcess).unwrap();
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            std::thread::spawn(move || {
                let tid = current_tid();
                for i in 0..PAIRS {
                    push(format!("t{t}_op{}", i % 7).as_bytes(), now_ns(), tid);
                    mark(b"tick", now_ns(), tid);
                    pop(now_ns(), tid);
                }
            })
        })
        .collect();
    handles.into_iter().for_each(|h| h.join().unwrap());
    let s = stop().unwrap();
    assert_eq!(s.events.len(), THREADS * PAIRS * 2);
    assert_eq!(s.stats.recorded as usize, THREADS * PAIRS * 2);
    assert_eq!(s.stats.dropped(), 0);
    for w in s.events.windows(2) {
        assert!(w[0].tid <= w[1].tid);
    }
    assert!(s.events.iter().filter(|e| e.kind == EventKind::Range).all(|e| e.end_ns >= e.start_ns));
}

#[test]
fn start_twice_and_stop_twice_are_errors() {
    let _g = SERIAL.lock();
    start(opts(10), CaptureMode::InProcess).unwrap();
    assert_eq!(start(opts(10), CaptureMode::InProcess), Err(SessionError::AlreadyRunning));
    stop().unwrap();
    assert_eq!(stop().unwrap_err(), SessionError::NotRunning);
}

#[test]
fn current_label_is_the_innermost_open_range_and_empty_after_pop() {
    let _g = SERIAL.lock();
    start(opts(100), CaptureMode::InProcess).unwrap();
    on_thread(|| {
        let tid = current_tid();
        assert_eq!(current_label(), "");
        push(b"outer", 1, tid);
        assert_eq!(current_label(), "outer");
        push(b"inner", 2, tid);
        let view = current_label();
        push(b"innermost", 3, tid); // the earlier copy stays valid after more roctx calls
        assert_eq!(view, "inner");
        pop(4, tid);
        pop(5, tid);
        assert_eq!(current_label(), "outer");
        pop(6, tid);
        assert_eq!(current_label(), "");
    });
    stop().unwrap();
}

#[test]
fn a_capped_start_stop_range_is_counted_once() {
    // It was counted as dropped_event_cap at its start and again as unmatched at its stop.
    let _g = SERIAL.lock();
    start(opts(1 << 20), CaptureMode::InProcess).unwrap();
    on_thread(|| {
        let tid = current_tid();
        let n = MAX_OPEN_PROCESS_RANGES as u64 + 1;
        for id in 1..=n {
            range_start(id, b"r", id, tid);
        }
        for id in 1..=n {
            range_stop(id, n + id, tid);
        }
        range_stop(n + 7, 3 * n, tid); // a genuinely unknown id still counts
    });
    let s = stop().unwrap();
    assert_eq!(s.stats.recorded, MAX_OPEN_PROCESS_RANGES as u64);
    assert_eq!(s.stats.dropped_open_range_cap, 1);
    assert_eq!(s.stats.dropped_event_cap, 0);
    assert_eq!(s.stats.unmatched_stops, 1);
}

#[test]
fn never_stopped_ranges_do_not_starve_later_sessions() {
    // 65,536 ranges never stopped used to fill the table for every later session.
    let _g = SERIAL.lock();
    start(opts(1 << 20), CaptureMode::InProcess).unwrap();
    on_thread(|| {
        for id in 1..=MAX_OPEN_PROCESS_RANGES as u64 {
            range_start(id, b"leaked", id, current_tid());
        }
    });
    let s = stop().unwrap();
    assert_eq!(s.stats.process_ranges_open_at_stop, MAX_OPEN_PROCESS_RANGES as u64);

    start(opts(1 << 20), CaptureMode::InProcess).unwrap();
    on_thread(|| {
        let tid = current_tid();
        range_start(1_000_000, b"fresh", 10, tid);
        range_stop(1_000_000, 20, tid);
        range_stop(5, 30, tid); // left open by the previous session: begun outside, not unknown
    });
    let s = stop().unwrap();
    assert_eq!(labels(&s), ["fresh"]);
    assert_eq!((s.stats.dropped_open_range_cap, s.stats.unmatched_stops, s.stats.begun_outside_session), (0, 0, 1));
    assert_eq!(s.stats.process_ranges_open_at_stop, 0);
}

#[test]
fn a_cut_label_is_counted() {
    let _g = SERIAL.lock();
    start(opts(1000), CaptureMode::InProcess).unwrap();
    on_thread(|| {
        let tid = current_tid();
        let long = vec![b'x'; MAX_LABEL_BYTES + 10];
        push(&long, 1, tid);
        pop(2, tid);
        mark(&long, 3, tid);
        range_start(9, &long, 4, tid);
        range_stop(9, 5, tid);
        push(&long[..MAX_LABEL_BYTES], 6, tid); // exactly the limit: not cut
        pop(7, tid);
    });
    let s = stop().unwrap();
    assert_eq!(s.stats.recorded, 4);
    assert_eq!(s.stats.truncated_labels, 3);
    assert!(s.events.iter().all(|e| s.label(e).len() == MAX_LABEL_BYTES));
}

#[test]
fn events_from_thread_local_destructors_after_ours_are_counted() {
    // A thread_local whose destructor is registered before the collector's runs after it (C++
    // thread_local objects constructed before the thread's first range do the same).
    struct EmitsOnDrop;
    impl Drop for EmitsOnDrop {
        fn drop(&mut self) {
            let tid = current_tid();
            push(b"in teardown", 100, tid);
            pop(101, tid);
            mark(b"teardown mark", 102, tid);
        }
    }
    thread_local! {
        static EARLY: EmitsOnDrop = const { EmitsOnDrop };
    }
    let _g = SERIAL.lock();
    start(opts(1000), CaptureMode::InProcess).unwrap();
    on_thread(|| {
        EARLY.with(|_| {}); // its destructor is registered first, so it runs last
        let tid = current_tid();
        push(b"body", 1, tid);
        pop(2, tid);
    });
    let s = stop().unwrap();
    assert_eq!(labels(&s), ["body"]);
    assert_eq!(s.stats.after_thread_exit, 2, "{:?}", s.stats);
}

/// The sink's fast path (`HOT`) records what the general path would, and gives way at every
/// change it skips checking: many ranges across chunk boundaries, a pause and a resume of the
/// process and of this very thread, a label's memory reused for other bytes, the event cap, and a
/// new session while ranges are open. A second thread shows that another thread's pause or
/// resume reaches a thread already on the fast path.
#[test]
fn the_sinks_fast_path_records_what_the_general_path_does_and_yields_to_every_change() {
    use crate::sink::{Sink, IN_PROCESS};
    static OUTER: &[u8] = b"Thunk:#hlo_op=fusion.3,unique_hlo_op_id=7#";
    let _g = SERIAL.lock();
    start(opts(1 << 20), CaptureMode::InProcess).unwrap();
    let (tid, pausing_tid) = on_thread(|| {
        let tid = current_tid();
        let mut reused = *b"step 0";
        for i in 0..5_000u32 {
            // Nested, so the seq of the innermost range comes back from each pop.
            let outer = IN_PROCESS.push(OUTER);
            reused[5] = b'0' + (i % 2) as u8; // the same address, other bytes every other time
            let inner = IN_PROCESS.push(&reused);
            assert_eq!(inner, outer.wrapping_add(1));
            assert_eq!(IN_PROCESS.pop(), outer, "the outer range is innermost again");
            assert_eq!(IN_PROCESS.pop(), 0);
        }
        pause(0);
        IN_PROCESS.push(b"paused");
        IN_PROCESS.pop();
        resume(0);
        IN_PROCESS.push(b"resumed");
        IN_PROCESS.pop();
        // Another thread pauses this one, then resumes it.
        let me = tid;
        std::thread::spawn(move || pause(me)).join().unwrap();
        IN_PROCESS.push(b"this thread paused");
        IN_PROCESS.pop();
        let other = std::thread::spawn(move || {
            resume(me);
            current_tid()
        })
        .join()
        .unwrap();
        IN_PROCESS.push(b"this thread resumed");
        IN_PROCESS.pop();
        (tid, other)
    });
    let s = stop().unwrap();
    assert_ne!(tid, pausing_tid);
    let n = 5_000 * 2 + 2;
    assert_eq!(s.events.len(), n, "{:?}", s.stats);
    assert_eq!(s.stats.recorded, n as u64);
    assert_eq!(s.stats.paused, 2, "one range while the process was paused, one while the thread was");
    assert!(s.events.iter().all(|e| e.tid == tid && e.kind == EventKind::Range && e.start_ns <= e.end_ns));
    let got = labels(&s);
    assert_eq!(got.iter().filter(|l| l.as_bytes() == OUTER).count(), 5_000);
    assert_eq!(got.iter().filter(|l| *l == "step 0").count(), 2_500, "a reused address is compared, not trusted");
    assert_eq!(got.iter().filter(|l| *l == "step 1").count(), 2_500);
    assert_eq!(&got[got.len() - 2..], ["resumed", "this thread resumed"]);
    let depths: Vec<u16> = s.events.iter().take(4).map(|e| e.depth).collect();
    assert_eq!(depths, [0, 1, 0, 1]);

    // The cap and a new session, with ranges open across it.
    start(opts(100), CaptureMode::InProcess).unwrap();
    on_thread(|| {
        for _ in 0..300 {
            IN_PROCESS.push(OUTER);
            IN_PROCESS.pop();
        }
        IN_PROCESS.push(b"open across the sessions");
        IN_PROCESS.push(OUTER);
        let s = stop().unwrap();
        assert_eq!((s.stats.recorded, s.stats.dropped_event_cap), (100, 200), "{:?}", s.stats);
        assert_eq!(s.stats.open_at_stop, 2);
        start(opts(100), CaptureMode::InProcess).unwrap();
        IN_PROCESS.pop();
        IN_PROCESS.pop();
        IN_PROCESS.push(b"new session");
        IN_PROCESS.pop();
    });
    let s = stop().unwrap();
    assert_eq!(labels(&s), ["new session"]);
    assert_eq!(s.stats.begun_outside_session, 2, "{:?}", s.stats);
}

/// A registered string (`Sink::push_registered`) is recorded by its text, known by its handle on
/// the fast path from its second push in a session, and never taken for another range's label:
/// not for a push past the depth limit (which records nothing), nor in a later session (whose
/// label ids start over).
#[test]
fn registered_strings_are_known_by_handle_and_recorded_by_their_text() {
    use crate::sink::{Sink, IN_PROCESS};
    use roctx_sys::CText;
    static A: &std::ffi::CStr = c"registered A";
    static B: &std::ffi::CStr = c"registered B";
    static DEEP: &std::ffi::CStr = c"past the depth limit";
    let _g = SERIAL.lock();
    start(opts(1 << 16), CaptureMode::InProcess).unwrap();
    on_thread(|| {
        for i in 0..1_000 {
            IN_PROCESS.push_registered(CText::from_c_str(if i % 2 == 0 { A } else { B }));
            IN_PROCESS.push(b"plain");
            IN_PROCESS.pop();
            IN_PROCESS.pop();
        }
        for _ in 0..MAX_DEPTH {
            IN_PROCESS.push(b"deep");
        }
        assert_eq!(IN_PROCESS.push_registered(CText::from_c_str(DEEP)), 0, "past the depth limit");
        IN_PROCESS.pop();
        for _ in 0..MAX_DEPTH {
            IN_PROCESS.pop();
        }
        IN_PROCESS.push_registered(CText::from_c_str(DEEP));
        IN_PROCESS.pop();
        IN_PROCESS.push_registered(CText::from_c_str(DEEP));
        IN_PROCESS.pop();
    });
    let s = stop().unwrap();
    let got = labels(&s);
    let count = |l: &str| got.iter().filter(|g| *g == l).count();
    assert_eq!((count("registered A"), count("registered B"), count("plain")), (500, 500, 1_000));
    assert_eq!((count("deep"), count("past the depth limit")), (MAX_DEPTH, 2));
    assert_eq!(s.stats.dropped_too_deep, 1);
    start(opts(16), CaptureMode::InProcess).unwrap();
    on_thread(|| {
        IN_PROCESS.push(b"first label of the session");
        IN_PROCESS.pop();
        for _ in 0..2 {
            IN_PROCESS.push_registered(CText::from_c_str(B));
            IN_PROCESS.pop();
        }
    });
    let s = stop().unwrap();
    assert_eq!(labels(&s), ["first label of the session", "registered B", "registered B"]);
}

/// The in-process sink's stamps (TSC ticks where the machine allows, module docs) come out of a
/// snapshot as CLOCK_BOOTTIME nanoseconds, between BOOTTIME reads taken around them, and in the
/// same buffer as SDK-style nanosecond stamps, each converted by its own kind.
#[test]
fn sink_stamps_come_out_as_boottime_nanoseconds_next_to_sdk_stamps() {
    use crate::sink::{Sink, IN_PROCESS};
    let _g = SERIAL.lock();
    start(opts(1000), CaptureMode::InProcess).unwrap();
    let (before, after, tid) = on_thread(|| {
        let tid = current_tid();
        let before = now_ns();
        IN_PROCESS.push(b"sink range");
        std::thread::sleep(std::time::Duration::from_millis(20));
        IN_PROCESS.mark(b"sink mark");
        IN_PROCESS.pop();
        let after = now_ns();
        push(b"sdk range", after + 1_000, tid); // an SDK record: BOOTTIME ns as given
        pop(after + 2_000, tid);
        (before, after, tid)
    });
    let s = stop().unwrap();
    assert_eq!(labels(&s), ["sink range", "sink mark", "sdk range"]);
    assert!(s.events.iter().all(|e| e.tid == tid));
    let (range, mark, sdk) = (&s.events[0], &s.events[1], &s.events[2]);
    // Not a timing bound: 1 ms is far above the conversion error (half a pair window, tens of
    // ns, BENCHMARKS.md) and BOOTTIME's slewing over this test; only a wrong unit or a wrong
    // calibration lands outside it.
    const SLACK: u64 = 1_000_000;
    for (what, t) in [("range start", range.start_ns), ("mark", mark.start_ns), ("range end", range.end_ns)] {
        assert!(t + SLACK >= before && t <= after + SLACK, "{what} {t} not within [{before}, {after}] ({:?})", roctx_sys::clock::source());
    }
    assert!(range.start_ns <= mark.start_ns && mark.start_ns <= range.end_ns);
    assert!(range.end_ns - range.start_ns >= 19_000_000, "the 20 ms sleep measured {} ns", range.end_ns - range.start_ns);
    assert_eq!((sdk.start_ns, sdk.end_ns), (after + 1_000, after + 2_000));
}

/// The address-keyed label cache only skips the hash: text changed in place at the same address
/// (a reused buffer) is recorded as the new text, whatever its length.
#[test]
fn a_label_rewritten_at_the_same_address_is_recorded_as_its_new_text() {
    let _g = SERIAL.lock();
    start(opts(1000), CaptureMode::InProcess).unwrap();
    on_thread(|| {
        let tid = current_tid();
        let mut buf = b"alpha-label".to_vec();
        for (i, text) in [&b"alpha-label"[..], b"bravo-label", b"bravo-label", b"charlie"].iter().enumerate() {
            buf.clear();
            buf.extend_from_slice(text);
            let ts = 10 * i as u64;
            push(&buf, ts, tid);
            pop(ts + 1, tid);
        }
    });
    let s = stop().unwrap();
    assert_eq!(labels(&s), ["alpha-label", "bravo-label", "bravo-label", "charlie"]);
}

#[test]
fn long_ranges_backwards_ranges_and_foreign_thread_ids_round_trip_through_two_slots() {
    let _g = SERIAL.lock();
    start(opts(100_000), CaptureMode::InProcess).unwrap();
    let own = on_thread(|| {
        let tid = current_tid();
        // Around a chunk boundary (4096 slots), so a two-slot event straddles one.
        for i in 0..4100u64 {
            let start = i * 10;
            push(b"short", start, tid);
            pop(start + 5, tid);
            if i % 1000 == 999 || i == 4094 {
                push(b"long", start, tid);
                pop(start + 10_000_000_000, tid); // 10 s: the duration does not fit in 32 bits
                push(b"backwards", start + 100, tid);
                pop(start, tid);
                push(b"foreign", start, 4242); // a record naming another thread
                pop(start + 1, 4242);
            }
        }
        tid
    });
    let s = stop().unwrap();
    assert_eq!(s.stats.recorded, 4100 + 5 * 3);
    assert_eq!(s.events.len(), 4100 + 5 * 3);
    let by = |l: &str| s.events.iter().filter(|e| s.label(e) == l).collect::<Vec<_>>();
    assert!(by("short").iter().all(|e| e.end_ns - e.start_ns == 5 && e.tid == own && e.end_tid == own));
    assert_eq!(by("long").len(), 5);
    assert!(by("long").iter().all(|e| e.end_ns - e.start_ns == 10_000_000_000 && e.tid == own));
    assert!(by("backwards").iter().all(|e| e.start_ns == e.end_ns + 100 && e.tid == own));
    assert!(by("foreign").iter().all(|e| e.end_ns - e.start_ns == 1 && e.tid == 4242 && e.end_tid == 4242));
    let mut seqs: Vec<u32> = s.events.iter().map(|e| e.seq).collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (1..=4115).collect::<Vec<u32>>(), "every range kept its push number");
}

#[test]
fn snapshots_taken_while_a_thread_records_see_whole_events_only() {
    let _g = SERIAL.lock();
    const PAIRS: u64 = 200_000;
    start(opts(PAIRS as usize + 10), CaptureMode::InProcess).unwrap();
    let writer = std::thread::spawn(|| {
        let tid = current_tid();
        for i in 0..PAIRS {
            // Every 7th is a two-slot event, so a torn read would show as a wrong duration.
            let label = format!("op{}", i % 13);
            push(label.as_bytes(), i * 100, tid);
            pop(i * 100 + if i % 7 == 0 { 1 << 33 } else { 7 }, tid);
        }
    });
    let mut last = 0;
    while !writer.is_finished() {
        let s = snapshot();
        assert!(s.events.len() >= last, "a snapshot never loses what an earlier one saw");
        last = s.events.len();
        assert_eq!(s.stats.recorded as usize, s.events.len());
        for e in &s.events {
            let i = e.start_ns / 100;
            assert_eq!(s.label(e), format!("op{}", i % 13));
            assert_eq!(e.end_ns - e.start_ns, if i % 7 == 0 { 1 << 33 } else { 7 });
        }
    }
    writer.join().unwrap();
    let s = stop().unwrap();
    assert_eq!(s.events.len() as u64, PAIRS);
    assert_eq!(s.stats.dropped(), 0);
}

#[test]
fn recorded_so_far_counts_this_sessions_events_without_reading_them() {
    // Issue 43: `roctx record`'s progress line.
    let _g = SERIAL.lock();
    assert_eq!(recorded_so_far(), 0, "no session");
    start(opts(1000), CaptureMode::InProcess).unwrap();
    on_thread(|| {
        let tid = current_tid();
        push(b"a", 10, tid);
        pop(20, tid);
        mark(b"m", 25, tid);
        push(b"open", 30, tid); // not recorded until its pop
    });
    on_thread(|| {
        let tid = current_tid();
        push(b"b", 10, tid);
        pop(20, tid);
    });
    assert_eq!(recorded_so_far(), 3);
    let s = stop().unwrap();
    assert_eq!(s.events.len(), 3, "the count is what the snapshot holds");
    assert_eq!(recorded_so_far(), 0, "stopped");
    start(opts(1000), CaptureMode::InProcess).unwrap();
    assert_eq!(recorded_so_far(), 0, "an earlier session's events are not this one's");
    stop().unwrap();
}

mod windows {
    use super::*;
    use crate::window::{self, Change, CloseReason, Opener, Plan, RangeTrigger};

    static CHANGES: std::sync::Mutex<Vec<Change>> = std::sync::Mutex::new(Vec::new());

    fn observe(change: Change) {
        CHANGES.lock().unwrap().push(change);
    }

    fn take() -> Vec<Change> {
        std::mem::take(&mut *CHANGES.lock().unwrap())
    }

    fn plan(range: Option<(&str, Option<&str>)>, profiler_api: bool, max_windows: Option<u32>) -> Plan {
        let range = range.map(|(name, domain)| RangeTrigger { name: name.as_bytes().into(), domain: domain.map(|d| d.as_bytes().into()) });
        Plan { range, profiler_api, max_windows, options: opts(1000), mode: CaptureMode::InProcess }
    }

    /// The closed windows' labels, in order.
    fn closed(changes: &[Change]) -> Vec<(u32, CloseReason, Vec<String>)> {
        changes
            .iter()
            .filter_map(|c| match c {
                Change::Closed { window, why, snapshot } => Some((*window, *why, labels(snapshot))),
                Change::Opened { .. } => None,
            })
            .collect()
    }

    #[test]
    fn a_trigger_matches_its_name_in_any_domain_or_in_the_one_named() {
        let any = RangeTrigger { name: (*b"step").into(), domain: None };
        let jax = RangeTrigger { name: (*b"step").into(), domain: Some((*b"jax").into()) };
        for (label, a, j) in [("step", true, false), ("jax: step", true, true), ("torch: step", true, false), ("mystep", false, false), ("step 2", false, false), ("xjax: step", true, false)] {
            assert_eq!((any.matches(label.as_bytes()), jax.matches(label.as_bytes())), (a, j), "{label}");
        }
    }

    #[test]
    fn a_range_opens_a_window_at_its_push_and_closes_it_at_its_pop() {
        let _g = SERIAL.lock();
        take();
        window::configure(plan(Some(("step", None)), false, Some(2)), observe);
        let (open_tx, open_rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let (started_tx, started_rx) = std::sync::mpsc::channel::<()>();
        // Another thread with a range open when the window ends, and one open across its start.
        let other = std::thread::spawn(move || {
            let tid = current_tid();
            push(b"across_start", now_ns(), tid);
            started_tx.send(()).unwrap(); // before the window opens
            open_rx.recv().unwrap();
            push(b"open_at_end", now_ns(), tid);
            mark(b"inside", now_ns(), tid);
            done_tx.send(()).unwrap();
            open_rx.recv().unwrap(); // held open until the window closed
            pop(now_ns(), tid);
            pop(now_ns(), tid);
        });
        started_rx.recv().unwrap();
        let main_tid = on_thread(move || {
            let tid = current_tid();
            push(b"outer", now_ns(), tid); // before the window: never recorded
            mark(b"before", now_ns(), tid);
            assert!(!active());
            push(b"jax: step", now_ns(), tid);
            assert!(active(), "the trigger's push opened the window");
            push(b"inner", now_ns(), tid);
            pop(now_ns(), tid);
            open_tx.send(()).unwrap();
            done_rx.recv().unwrap();
            pop(now_ns(), tid); // the trigger's pop: closes window 1
            assert!(!active());
            open_tx.send(()).unwrap();
            mark(b"between", now_ns(), tid);
            push(b"step", now_ns(), tid); // window 2
            pop(now_ns(), tid);
            push(b"step", now_ns(), tid); // past repeat:2: no window
            pop(now_ns(), tid);
            pop(now_ns(), tid); // "outer"
            tid
        });
        other.join().unwrap();
        let changes = take();
        window::reset();
        let windows = closed(&changes);
        assert_eq!(windows.len(), 2, "{changes:?}");
        let (n, why, mut got) = windows[0].clone();
        got.sort();
        assert_eq!((n, why), (1, CloseReason::RangeEnded));
        assert_eq!(got, ["capture window ended: 1 open range closed here", "inner", "inside", "jax: step", "open_at_end"]);
        assert_eq!((windows[1].0, &windows[1].2[..]), (2, &["step".to_owned()][..]));
        let Some(Change::Closed { snapshot, .. }) = changes.iter().find(|c| matches!(c, Change::Closed { window: 1, .. })) else { unreachable!() };
        let step = snapshot.events.iter().find(|e| snapshot.label(e) == "jax: step").unwrap();
        assert!(step.tid == main_tid && snapshot.start_ns <= step.start_ns && step.start_ns < step.end_ns, "{step:?}");
        let cut = snapshot.events.iter().find(|e| snapshot.label(e) == "open_at_end").unwrap();
        assert_eq!((cut.end_ns, cut.kind), (snapshot.stop_ns, EventKind::Range));
        assert!(cut.start_ns > step.start_ns);
        assert_eq!(snapshot.stats.open_at_stop, 0, "closed, not lost");
        assert_eq!(snapshot.start_ns, step.start_ns, "the window begins with its trigger");
        assert!(matches!(changes[0], Change::Opened { window: 1, by: Opener::Range }));
    }

    #[test]
    fn the_sink_keeps_nothing_between_windows_and_a_window_starts_with_an_empty_stack() {
        use crate::sink::{Sink, IN_PROCESS};
        let _g = SERIAL.lock();
        take();
        window::configure(plan(None, true, None), observe);
        on_thread(|| {
            IN_PROCESS.push(b"outer"); // between windows: not even a frame
            IN_PROCESS.mark(b"unseen");
            assert!(window::open(Opener::Api));
            IN_PROCESS.push(b"inner");
            assert_eq!(IN_PROCESS.pop(), 0);
            IN_PROCESS.pop(); // "outer": begun before the window, not an unmatched pop
            assert!(window::close(CloseReason::Api));
            IN_PROCESS.pop(); // nothing left, between windows: not counted anywhere
        });
        window::configure(plan(Some(("step", None)), false, None), observe);
        on_thread(|| {
            IN_PROCESS.push(b"steps"); // ends like the name, is not it
            IN_PROCESS.push(b"step");
            assert!(active());
            IN_PROCESS.pop();
            assert!(!active());
            IN_PROCESS.pop();
        });
        let changes = take();
        window::reset();
        let windows: Vec<_> = changes.iter().filter_map(|c| if let Change::Closed { snapshot, .. } = c { Some(snapshot) } else { None }).collect();
        assert_eq!(windows.len(), 2);
        assert_eq!(labels(windows[0]), ["inner"]);
        assert_eq!((windows[0].stats.begun_outside_session, windows[0].stats.unmatched_pops), (1, 0));
        assert_eq!(labels(windows[1]), ["step"]);
    }

    #[test]
    fn sixteen_threads_under_windows_opening_and_closing_keep_every_window_well_formed() {
        use crate::sink::{Sink, IN_PROCESS};
        use std::sync::atomic::AtomicBool;
        use std::sync::Arc;
        let _g = SERIAL.lock();
        take();
        window::configure(plan(None, true, None), observe);
        let stop = Arc::new(AtomicBool::new(false));
        let workers: Vec<_> = (0..16)
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        IN_PROCESS.push(b"a");
                        IN_PROCESS.push(b"b");
                        IN_PROCESS.mark(b"m");
                        IN_PROCESS.pop();
                        IN_PROCESS.pop();
                        std::thread::yield_now(); // let the window thread in (valgrind runs one thread at a time)
                    }
                })
            })
            .collect();
        for _ in 0..20 {
            window::open(Opener::Api);
            std::thread::sleep(std::time::Duration::from_micros(300));
            window::close(CloseReason::Api);
        }
        stop.store(true, Ordering::Relaxed);
        for w in workers {
            w.join().unwrap();
        }
        let changes = take();
        window::reset();
        let mut recorded = 0;
        for c in &changes {
            let Change::Closed { snapshot: s, .. } = c else { continue };
            assert_eq!(s.stats.unmatched_pops, 0, "a window's stack starts empty; LIFO keeps it so");
            for e in &s.events {
                let label = s.label(e);
                assert!(e.start_ns <= e.end_ns && e.start_ns >= s.start_ns && e.end_ns <= s.stop_ns, "{label} {e:?} outside {}..{}", s.start_ns, s.stop_ns);
                match e.kind {
                    EventKind::Range => assert!(label == "a" || label == "b", "{label}"),
                    EventKind::Mark => assert!(label == "m" || label.starts_with(window::CLOSED_MARK), "{label}"),
                    EventKind::ProcessRange => panic!("none were started"),
                }
                recorded += 1;
            }
        }
        assert_eq!(closed(&changes).len(), 20);
        assert!(recorded > 0);
    }

    #[test]
    fn the_profiler_api_opens_and_closes_windows_and_each_is_a_session() {
        let _g = SERIAL.lock();
        take();
        window::configure(plan(None, true, None), observe);
        on_thread(|| {
            let tid = current_tid();
            mark(b"before", now_ns(), tid);
            resume(0); // roctxProfilerResume(0)
            push(b"first", now_ns(), tid);
            pop(now_ns(), tid);
            pause(0);
            mark(b"between", now_ns(), tid);
            assert!(window::open(Opener::Api)); // roctx_utils_capture_start
            assert!(!window::open(Opener::Api), "one window at a time");
            mark(b"second", now_ns(), tid);
            assert!(window::close(CloseReason::Api));
            assert!(!window::close(CloseReason::Api));
        });
        let changes = take();
        window::reset();
        let windows = closed(&changes);
        assert_eq!(windows, [(1, CloseReason::Api, vec!["first".to_owned()]), (2, CloseReason::Api, vec!["second".to_owned()])]);
        let sessions: Vec<u32> = changes.iter().filter_map(|c| if let Change::Closed { snapshot, .. } = c { Some(snapshot.session) } else { None }).collect();
        assert!(sessions[1] > sessions[0]);
        // Without windows, pause and resume are pauses again.
        start(opts(10), CaptureMode::InProcess).unwrap();
        on_thread(|| {
            pause(0);
            mark(b"hidden", 1, current_tid());
            resume(0);
        });
        assert_eq!(stop().unwrap().stats.paused, 1);
    }
}

#[test]
fn a_gone_threads_chunks_serve_the_next_thread_and_hold_only_its_events() {
    let _g = SERIAL.lock();
    start(opts(100_000), CaptureMode::InProcess).unwrap();
    // 10,000 ranges: three chunks, every slot written.
    on_thread(|| {
        let tid = current_tid();
        for i in 0..10_000u64 {
            push(b"first thread", 1_000 + 2 * i, tid);
            pop(1_001 + 2 * i, tid);
        }
    });
    assert_eq!(stop().unwrap().stats.recorded, 10_000);
    // The next start releases the gone thread's buffer: its chunks are pooled, not freed.
    let before = buffer::pooled_chunks();
    start(opts(100_000), CaptureMode::InProcess).unwrap();
    let pooled = buffer::pooled_chunks();
    assert!(pooled >= before + 3, "pooled {before} -> {pooled}");
    // A new thread records fewer events, some of them LONG (two slots), into pooled chunks:
    // the snapshot holds its events, and nothing of the first thread's left in those slots.
    let tid = on_thread(|| {
        let tid = current_tid();
        for i in 0..5_000u64 {
            push(b"second thread", 50_000 + 3 * i, tid);
            let end = if i % 100 == 0 { 50_000 + 3 * i + 10_000_000_000 } else { 50_001 + 3 * i };
            pop(end, tid);
        }
        mark(b"second mark", 70_000, tid);
        tid
    });
    assert_eq!(buffer::pooled_chunks(), pooled - 2, "5,051 slots take two chunks, both from the pool");
    let s = stop().unwrap();
    assert_eq!(s.stats.recorded, 5_001);
    let ranges: Vec<&Event> = s.events.iter().filter(|e| e.kind == EventKind::Range).collect();
    assert_eq!(ranges.len(), 5_000);
    for (i, e) in ranges.iter().enumerate() {
        let i = i as u64;
        let end = if i % 100 == 0 { 50_000 + 3 * i + 10_000_000_000 } else { 50_001 + 3 * i };
        assert_eq!((s.label(e), e.start_ns, e.end_ns, e.tid, e.depth), ("second thread", 50_000 + 3 * i, end, tid, 0));
    }
    assert_eq!(s.events.iter().filter(|e| s.label(e) == "second mark").count(), 1);
    assert!(s.events.iter().all(|e| s.label(e) != "first thread"));
}

#[test]
fn the_chunk_pool_is_bounded() {
    let _g = SERIAL.lock();
    // More chunks than the bound, let go of at once: the pool keeps the bound, no more.
    let many = buffer::POOL_MAX_CHUNKS + 5 - buffer::pooled_chunks().min(buffer::POOL_MAX_CHUNKS);
    buffer::recycle_for_test(many);
    assert_eq!(buffer::pooled_chunks(), buffer::POOL_MAX_CHUNKS);
    buffer::recycle_for_test(1);
    assert_eq!(buffer::pooled_chunks(), buffer::POOL_MAX_CHUNKS);
    buffer::pool_lock().clear();
    assert_eq!(buffer::pooled_chunks(), 0);
}
