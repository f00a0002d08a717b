//! The chunk filler (issue 44), in a process of its own: it is global, and the unit tests count
//! the pool's chunks.
use std::time::{Duration, Instant};

use roctx_collector::sink::{Sink, IN_PROCESS};
use roctx_collector::{CaptureMode, SessionOptions};

fn wait_for(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}; {} chunks pooled", roctx_collector::pooled_chunks());
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn the_filler_keeps_spare_chunks_while_a_session_records_and_every_event_is_kept() {
    std::thread::spawn(|| roctx_collector::run_chunk_filler());
    // No session: nothing to fill for, however long it waits.
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(roctx_collector::pooled_chunks(), 0, "filled with no session recording");

    let options = SessionOptions { max_events_per_thread: 1 << 20, ..SessionOptions::default() };
    roctx_collector::start(options, CaptureMode::InProcess).unwrap();
    // A thread's growing buffer takes chunks; the first one taken wakes the filler.
    let per_thread = 3 * 4096 + 17;
    let record = move || {
        for _ in 0..per_thread {
            IN_PROCESS.push(b"filler test range");
            IN_PROCESS.pop();
        }
    };
    std::thread::spawn(record).join().unwrap();
    // It filled up to SPARE_CHUNKS while the thread took its 4 (and refills under half).
    let spare = roctx_collector::SPARE_CHUNKS;
    wait_for("the filler to fill the pool", || roctx_collector::pooled_chunks() >= spare - 4);
    assert!(roctx_collector::pooled_chunks() <= spare, "more than its spare chunks");

    // Threads that grow now take the filler's chunks, and it tops the pool up again.
    let threads: Vec<_> = (0..8).map(|_| std::thread::spawn(record)).collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    // They took 32 between them, as many as the pool held at most: what it holds now (gone
    // threads' chunks go to the pool only at the next session start) the filler put there.
    wait_for("the filler to top the pool up", || roctx_collector::pooled_chunks() >= spare / 2);
    assert!(roctx_collector::pooled_chunks() <= spare, "more than its spare chunks");

    let snapshot = roctx_collector::stop().unwrap();
    assert_eq!(snapshot.events.len(), 9 * per_thread, "every range of the nine threads, none lost or doubled");
    assert_eq!(snapshot.stats.dropped_event_cap, 0);
    assert!(snapshot.labels.iter().all(|l| l == "filler test range"), "{:?}", snapshot.labels);
    let mut seqs: Vec<(u64, u32)> = snapshot.events.iter().map(|e| (e.tid, e.seq)).collect();
    seqs.sort_unstable();
    seqs.dedup();
    assert_eq!(seqs.len(), 9 * per_thread, "each event once: a pooled chunk held nothing that was published");

    // Stopped: the filler no longer fills when chunks are taken.
    let before = roctx_collector::pooled_chunks();
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(roctx_collector::pooled_chunks(), before);
}
