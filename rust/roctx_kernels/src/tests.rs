use std::sync::Mutex;

use super::*;
use crate::join::Launch;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    let g = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    reset();
    crate::store::forget_launches();
    g
}

fn op(name: &str, ne0: i64) -> OpDescriptor {
    OpDescriptor { op: name.into(), dtype: "f32".into(), ne: [ne0, 1, 1, 1], bytes: 4 * ne0 as u64, ..Default::default() }
}

fn dispatch(start: u64, end: u64, kernel: u64, invocation: u32, range: u32) -> RawDispatch {
    RawDispatch { start_ns: start, end_ns: end, kernel_id: kernel, external: attribution::encode(invocation, range), thread_id: 7, ..Default::default() }
}

#[test]
fn kernels_are_attributed_to_the_invocation_and_range_their_value_names() {
    let _g = serial();
    let a = begin_invocation(op("MUL_MAT", 896));
    let b = begin_invocation(op("ADD", 896));
    assert!(a > 0 && b == a + 1, "ids count up from 1: {a} {b}");
    register_kernel_symbol(1, b"_Z13quantize_q8_1v.kd");
    // Delivered out of order, one outside any op.
    record_dispatch([dispatch(300, 350, 2, b, 0), dispatch(100, 150, 1, a, 5), dispatch(200, 260, 2, a, 5), dispatch(50, 60, 3, 0, 0)]);
    let s = snapshot();
    let order: Vec<_> = s.dispatches.iter().map(|d| (d.start_ns, d.invocation, d.range)).collect();
    assert_eq!(order, [(50, 0, 0), (100, a, 5), (200, a, 5), (300, b, 0)], "device start order");
    assert_eq!(s.name(1), "quantize_q8_1() [clone .kd]");
    assert_eq!(s.name(2), "", "never registered");
    let ga = s.invocations[&a].geometry as usize;
    assert_eq!(s.geometries[ga].op, "MUL_MAT");
    assert_eq!(s.stats.dispatches, 4);
}

#[test]
fn identical_geometries_are_stored_once_and_different_ones_apart() {
    let _g = serial();
    let ids: Vec<u32> = (0..100).map(|i| begin_invocation(op("ADD", 1 + (i % 2)))).collect();
    let s = snapshot();
    assert_eq!(s.geometries.len(), 2);
    assert_eq!(s.invocations.len(), 100);
    assert_ne!(s.invocations[&ids[0]].geometry, s.invocations[&ids[1]].geometry);
    assert_eq!(s.invocations[&ids[0]].geometry, s.invocations[&ids[2]].geometry);
}

#[test]
fn a_fused_group_repoints_the_invocation_and_the_head_record_stays() {
    let _g = serial();
    let head = op("MUL_MAT", 896);
    let id = begin_invocation(head.clone());
    let group = OpDescriptor { fused_ops: vec![head.clone(), op("ADD", 896)], ..head.clone() };
    assert!(!fuse_invocation(id, OpDescriptor { fused_ops: vec![head.clone()], ..head.clone() }), "one node is no group");
    assert!(!fuse_invocation(id + 1000, group.clone()), "unknown invocation");
    assert!(fuse_invocation(id, group));
    let s = snapshot();
    let g = &s.geometries[s.invocations[&id].geometry as usize];
    assert_eq!(g.fused_ops.iter().map(|f| f.op.as_str()).collect::<Vec<_>>(), ["MUL_MAT", "ADD"]);
    assert_eq!(s.geometries.len(), 2, "the provisional head-only record is kept");
}

#[test]
fn reset_discards_captures_but_keeps_names_and_the_counter() {
    let _g = serial();
    register_kernel_symbol(9, b"warm");
    let warm = begin_invocation(op("ADD", 4));
    record_dispatch([dispatch(1, 2, 9, warm, 0)]);
    set_device("gfx942");
    reset();
    let s = snapshot();
    assert!(s.dispatches.is_empty() && s.invocations.is_empty() && s.geometries.is_empty());
    assert_eq!(s.name(9), "warm");
    assert_eq!(s.device, "gfx942");
    let next = begin_invocation(op("ADD", 4));
    assert!(next > warm, "the counter is monotonic across reset");
    // A late warm-up record is discarded and counted; the new invocation's is kept.
    record_dispatch([dispatch(5, 6, 9, warm, 0), dispatch(7, 8, 9, next, 0), dispatch(9, 10, 9, 0, 0)]);
    let s = snapshot();
    assert_eq!(s.dispatches.iter().map(|d| d.invocation).collect::<Vec<_>>(), [next, 0]);
    assert_eq!(s.stats.before_reset, 1);
}

#[test]
fn over_the_dispatch_cap_the_newest_are_counted_not_kept() {
    let _g = serial();
    record_dispatch((0..MAX_DISPATCHES as u64 + 3).map(|i| dispatch(i, i + 1, 1, 0, 0)));
    let s = snapshot();
    assert_eq!(s.dispatches.len(), MAX_DISPATCHES);
    assert_eq!(s.stats.dropped_cap, 3);
    assert_eq!(s.dispatches.last().map(|d| d.start_ns), Some(MAX_DISPATCHES as u64 - 1));
    count_rejected(2);
    count_sdk_dropped(5);
    let s = snapshot();
    assert_eq!((s.stats.rejected_records, s.stats.sdk_dropped), (2, 5));
}

#[test]
fn hostile_descriptors_are_cut_to_the_limits_and_counted() {
    let _g = serial();
    let big = OpDescriptor {
        op: "é".repeat(1000),
        src_ne: vec![[1; 4]; 100],
        src_types: vec!["f32".into(); 100],
        src_bytes: vec![1; 100],
        op_params: vec![0; 100],
        fused_ops: vec![OpDescriptor { fused_ops: vec![op("X", 1)], ..op("Y", 1) }; 100],
        ..Default::default()
    };
    let id = begin_invocation(big);
    let s = snapshot();
    let g = &s.geometries[s.invocations[&id].geometry as usize];
    assert!(g.op.len() <= 256 && g.op.chars().all(|c| c == 'é'));
    assert_eq!((g.src_ne.len(), g.src_types.len(), g.src_bytes.len(), g.op_params.len()), (16, 16, 16, 16));
    assert_eq!(g.fused_ops.len(), 64);
    assert!(g.fused_ops.iter().all(|f| f.fused_ops.is_empty()));
    assert_eq!(s.stats.cut_descriptors, 1);
}

#[test]
fn experts_used_is_kept_per_invocation() {
    let _g = serial();
    let id = begin_invocation(op("MUL_MAT_ID", 8));
    set_experts_used(id, 3);
    set_experts_used(id + 99, 3); // unknown: ignored
    assert_eq!(snapshot().invocations[&id].experts_used, 3);
    // A read-back routing sets experts_used to the experts with any token, and a reset forgets it.
    set_expert_routing(id, vec![3, 0, 0, 4, 0, 2, 0, 1]);
    set_expert_routing(id + 99, vec![1]); // unknown: ignored
    let s = snapshot();
    assert_eq!(s.invocations[&id].experts_used, 4);
    assert_eq!(&*s.tokens_per_expert[&id], &[3, 0, 0, 4, 0, 2, 0, 1]);
    assert_eq!(s.tokens_per_expert.len(), 1);
    reset();
    assert!(snapshot().tokens_per_expert.is_empty());
}

// ---- the launch join (join.rs) ----

fn joined(start: u64, kernel: u64, correlation: u64) -> RawDispatch {
    RawDispatch { start_ns: start, end_ns: start + 10, kernel_id: kernel, by_launch: true, correlation_id: correlation, thread_id: 0, ..Default::default() }
}

fn launch(correlation: u64, thread: u64, start: u64, end: u64) -> Launch {
    Launch { correlation_id: correlation, thread_id: thread, start_ns: start, end_ns: end }
}

#[test]
fn a_kernel_gets_the_op_open_on_its_thread_at_the_middle_of_its_launch_call() {
    let _g = serial();
    let a = begin_invocation(op("MUL_MAT", 8));
    let b = begin_invocation(op("ADD", 8));
    // Thread 7: op a over [1000, 2000), nothing until 3000, then b. Thread 8: b from 0.
    scope_changed(7, 1000, a);
    scope_changed(7, 2000, 0);
    scope_changed(7, 3000, b);
    scope_changed(8, 0, b);
    record_launches([
        launch(1, 7, 1000, 1400), // starts at the begin: inside
        launch(2, 7, 1600, 2000), // ends at the end: inside (its middle is 1800)
        launch(3, 7, 2000, 2400), // starts at the end: outside
        launch(4, 7, 2600, 3000), // ends at the next begin: outside
        launch(5, 7, 2999, 3001), // straddles the begin: its middle (3000) is the begin's stamp
        launch(6, 8, 1500, 1600), // another thread at the same time: its own op
    ]);
    record_dispatch((1..=6).map(|c| joined(10 * c, 1, c)));
    let got: Vec<_> = snapshot().dispatches.iter().map(|d| (d.correlation_id, d.thread_id, d.invocation, d.launch_ns)).collect();
    assert_eq!(got, [(1, 7, a, 1200), (2, 7, a, 1800), (3, 7, 0, 2200), (4, 7, 0, 2800), (5, 7, b, 3000), (6, 8, b, 1550)]);
    assert_eq!(stats().unjoined, 0);
}

#[test]
fn a_kernel_that_arrives_before_its_launch_waits_for_it_and_settle_ends_the_wait() {
    let _g = serial();
    let a = begin_invocation(op("MUL_MAT", 8));
    scope_changed(3, 100, a);
    scope_changed(3, 900, 0);
    record_dispatch([joined(5000, 1, 41), joined(5100, 1, 42)]); // the short kernels ended first
    assert_eq!(stats().dispatches, 0, "waiting, not lost and not guessed");
    record_launches([launch(41, 3, 200, 300)]);
    let s = snapshot();
    assert_eq!(s.dispatches.len(), 1);
    assert_eq!((s.dispatches[0].correlation_id, s.dispatches[0].invocation), (41, a));
    settle(); // the flush is over: 42's launch record will not come (an HSA-direct enqueue)
    let s = snapshot();
    assert_eq!(s.dispatches.len(), 2, "kept");
    assert_eq!((s.dispatches[1].invocation, s.dispatches[1].launch_ns), (0, 0));
    assert_eq!(s.stats.unjoined, 1, "and counted");
}

#[test]
fn every_kernel_of_one_launch_call_is_joined_to_it() {
    let _g = serial();
    let a = begin_invocation(op("ADD", 8));
    scope_changed(9, 0, a);
    record_launches([launch(77, 9, 10, 20)]); // a graph launch, or a copy split in blits
    record_dispatch([joined(100, 1, 77), joined(200, 2, 77), joined(300, 3, 77)]);
    let s = snapshot();
    assert!(s.dispatches.iter().all(|d| d.invocation == a && d.thread_id == 9), "{:?}", s.dispatches);
    assert_eq!(s.dispatches.len(), 3);
}

#[test]
fn copies_and_sets_of_a_graph_launch_join_it_like_its_kernels_and_keep_what_they_did() {
    let _g = serial();
    let a = begin_invocation(op("ADD", 8));
    scope_changed(9, 0, a);
    record_launches([launch(142, 9, 10, 20)]); // one cudaGraphLaunch
    let node = |i: u64| GraphNode { graph_id: 2, node_id: (2 << 32) | i };
    let copy = Work::Copy(MemCopy { bytes: 4096, direction: Direction::DeviceToDevice, src: MemoryKind::Device, dst: MemoryKind::Device, is_async: true });
    let set = Work::Set(MemSet { bytes: 4096, value: 0, memory: MemoryKind::Device, is_async: true });
    record_dispatch([
        RawDispatch { graph: node(0), ..joined(100, 1, 142) },
        RawDispatch { work: copy, graph: node(1), kernel_id: 0, ..joined(200, 0, 142) },
        RawDispatch { work: set, graph: node(2), kernel_id: 0, ..joined(300, 0, 142) },
    ]);
    let s = snapshot();
    let got: Vec<_> = s.dispatches.iter().map(|d| (d.work, d.graph.node_id & 0xffff_ffff, d.invocation, d.thread_id)).collect();
    assert_eq!(got, [(Work::Kernel, 0, a, 9), (copy, 1, a, 9), (set, 2, a, 9)]);
    assert_eq!((s.stats.dispatches, s.stats.unjoined), (3, 0), "copies and sets are counted with the kernels");
}

#[test]
fn a_source_restart_settles_waiting_kernels_and_forgets_old_launches() {
    let _g = serial();
    record_launches([launch(5, 1, 10, 20)]);
    record_dispatch([joined(100, 1, 6)]); // waits for launch 6
    source_restarted(); // another profiler finalized CUPTI: ids may start over
    assert_eq!(stats().unjoined, 1, "the waiting kernel is kept, unjoined");
    record_dispatch([joined(200, 1, 5)]); // a new call reusing id 5 must not match the old launch
    settle();
    let s = snapshot();
    assert_eq!(s.dispatches.len(), 2);
    assert!(s.dispatches.iter().all(|d| d.launch_ns == 0), "{:?}", s.dispatches);
    count_not_seen(7);
    assert_eq!(stats().not_seen, 7);
}

#[test]
fn the_join_keeps_the_reset_rule_and_the_external_path_still_works() {
    let _g = serial();
    let warm = begin_invocation(op("ADD", 8));
    scope_changed(4, 10, warm);
    record_launches([launch(1, 4, 20, 30)]);
    reset(); // the warm-up kernel arrives after the reset
    record_dispatch([joined(1000, 1, 1)]);
    assert_eq!(stats().before_reset, 1);
    let real = begin_invocation(op("ADD", 8));
    scope_changed(4, 40, real);
    record_launches([launch(2, 4, 50, 60)]);
    record_dispatch([joined(2000, 1, 2), dispatch(3000, 3010, 1, real, 5)]);
    let s = snapshot();
    let got: Vec<_> = s.dispatches.iter().map(|d| (d.invocation, d.range, d.launch_ns)).collect();
    assert_eq!(got, [(real, 0, 55), (real, 5, 0)], "joined, then carried by its external value");
}

/// Issue 40: a synchronous copy's record comes before its call's (written at the call's exit);
/// a flush from another thread in between used to settle it unjoined for good. It waits until
/// its thread delivers a later launch, the window passes its id, or the final settle.
#[test]
fn a_record_whose_call_is_still_running_stays_joinable_across_a_flush() {
    let _g = serial();
    let scope = begin_invocation(op("CPY", 8));
    scope_changed(9, 100, scope);
    let copy = |start, correlation| RawDispatch { thread_id: 9, ..joined(start, 1, correlation) };
    record_dispatch([copy(150, 7)]); // the copy completed inside hipMemcpy (call 7)
    settle(); // another thread flushed
    assert_eq!(stats().unjoined, 0, "call 7 is still running on thread 9: its record may come");
    record_launches([launch(7, 9, 120, 200)]); // hipMemcpy returned: its record arrives
    let s = snapshot();
    assert_eq!((s.stats.unjoined, s.dispatches.len()), (0, 1));
    assert_eq!((s.dispatches[0].invocation, s.dispatches[0].launch_ns), (scope, 160), "joined to its own call");

    // A launch record that never comes: the thread's later call settles it.
    record_dispatch([copy(300, 8)]);
    record_launches([launch(9, 9, 400, 410)]);
    settle();
    assert_eq!(stats().unjoined, 1, "thread 9's call 9 came back, so call 8's record never will");
    // The final settle keeps whatever still waits.
    record_dispatch([copy(500, 20)]);
    settle();
    assert_eq!(stats().unjoined, 1);
    settle_all();
    assert_eq!(stats().unjoined, 2);
}

#[test]
fn waiting_is_bounded_and_what_is_pushed_out_is_counted() {
    let _g = serial();
    record_dispatch((0..join::MAX_WAITING as u64 + 5).map(|c| joined(c, 1, c + 1)));
    let s = stats();
    assert_eq!((s.dispatches, s.unjoined), (5, 5), "the five oldest kept with no attribution");
    settle();
    assert_eq!(stats().unjoined, join::MAX_WAITING as u64 + 5);
}

#[test]
fn records_no_device_could_have_produced_are_rejected_and_counted() {
    // Issue 25, item 13: an end at u64::MAX was kept as a 584-year dispatch.
    let _g = serial();
    let now = roctx_sys::os::boottime_ns();
    let id = begin_invocation(op("ADD", 16));
    record_dispatch([
        dispatch(100, u64::MAX, 1, id, 0),                    // ends 584 years later
        dispatch(500, 400, 1, id, 0),                         // ends before it starts
        dispatch(1_000, 1_000 + MAX_DISPATCH_NS + 1, 1, id, 0), // runs over 6 hours
        dispatch(now, now + 3_600_000_000_000, 1, id, 0),     // ends an hour after delivery
        dispatch(now - 50_000, now - 40_000, 1, id, 0),       // a real one: 10 us, just ended
    ]);
    let s = snapshot();
    assert_eq!(s.stats.rejected_records, 4, "{:?}", s.stats);
    assert_eq!(s.dispatches.len(), 1);
    assert_eq!(s.dispatches[0].end_ns - s.dispatches[0].start_ns, 10_000);
}

#[test]
fn a_name_that_demangles_past_the_limit_stays_mangled_and_is_counted() {
    // Issue 25, item 6: one symbol whose templates nest through back-references demangled to
    // 54 MB, repeated in every report row. This 272-byte one demangles to about 104 KiB.
    let _g = serial();
    let mut huge = String::from("_Z1fI1A1BIS_S_E");
    let subs = ["S1_", "S2_", "S3_", "S4_", "S5_", "S6_", "S7_", "S8_", "S9_", "SA_", "SB_", "SC_", "SD_", "SE_", "SF_", "SG_", "SH_", "SI_", "SJ_", "SK_", "SL_", "SM_", "SN_"];
    for s in subs {
        huge.push_str(&format!("S0_I{s}{s}E"));
    }
    huge.push_str("EvT_");
    assert!(roctx_sys::demangle::cxa(huge.as_bytes()).is_some_and(|d| d.len() > MAX_DEMANGLED_NAME));
    // Names outlive resets: ids no other test uses.
    let before = snapshot().stats.names_too_long;
    register_kernel_symbol(9_001, huge.as_bytes());
    register_kernel_symbol(9_002, b"_Z3fooi");
    let s = snapshot();
    assert_eq!(s.name(9_001), huge, "kept mangled");
    assert_eq!(s.name(9_002), "foo(int)");
    assert_eq!(s.stats.names_too_long, before + 1);
}

#[test]
fn op_scopes_past_the_cap_are_counted_and_attributed_to_no_op_until_a_reset() {
    // Issue 25, item 7: every op scope was kept (about 41 bytes each), 16 M of them 645 MB.
    let _g = serial();
    // The real cap is 2 Mi (12 s here, minutes under valgrind): the same code with 1,000.
    crate::store::INVOCATION_CAP_FOR_TESTS.store(1_000, std::sync::atomic::Ordering::Relaxed);
    let add = op("ADD", 8);
    for _ in 0..1_000 {
        assert_ne!(begin_invocation(add.clone()), 0);
    }
    assert_eq!(begin_invocation(add.clone()), 0, "past the cap: no op");
    assert_eq!(begin_invocation(add.clone()), 0);
    let s = stats();
    assert_eq!(s.invocations_over_cap, 2);
    reset();
    assert_ne!(begin_invocation(add), 0, "a reset makes room again");
    crate::store::INVOCATION_CAP_FOR_TESTS.store(0, std::sync::atomic::Ordering::Relaxed);
}

#[test]
fn a_remembered_geometry_begins_invocations_until_a_reset_clears_it() {
    let _g = serial();
    reset();
    let (first, key) = begin_invocation_keyed(op("MUL_MAT", 4096));
    let key = key.expect("a geometry");
    let second = begin_invocation_at(key).expect("valid until a reset");
    assert!(second > first);
    let s = snapshot();
    assert_eq!(s.invocations[&first].geometry, s.invocations[&second].geometry, "the same geometry, not described again");
    assert_eq!(s.geometries.len(), 1);
    reset();
    assert_eq!(begin_invocation_at(key), None, "the reset cleared the table: the caller describes the op again");
    let (third, again) = begin_invocation_keyed(op("MUL_MAT", 4096));
    assert!(third > second && again.is_some() && again != Some(key));
}

/// Issue 42: a launching thread's op scope never waits for the stage's lock, which the source's
/// thread holds while it joins a delivered buffer.
#[test]
fn op_scopes_begin_while_the_stage_is_locked_and_reach_it_in_their_threads_order() {
    let _g = serial();
    let (_, key) = begin_invocation_keyed(op("ADD", 4096));
    let key = key.expect("a geometry");
    let held = crate::store::lock_for_tests();
    let (tx, rx) = std::sync::mpsc::channel();
    let t = std::thread::spawn(move || {
        let a = begin_invocation_at_scoped(key, 41, 100).expect("a current key");
        scope_changed(41, 200, 0);
        let b = begin_invocation_at_scoped(key, 41, 300).expect("a current key");
        tx.send((a, b)).expect("the test waits");
    });
    let (a, b) = rx.recv_timeout(std::time::Duration::from_secs(20)).expect("begun while the stage's lock is held");
    t.join().expect("no panic");
    drop(held);
    // The thread has exited: its log is merged all the same, in its order.
    let mut launches = Vec::new();
    let mut kernels = Vec::new();
    for (i, at) in [(1u64, 150u64), (2, 250), (3, 350)] {
        launches.push(Launch { correlation_id: i, thread_id: 41, start_ns: at, end_ns: at });
        kernels.push(RawDispatch { start_ns: 1000 + i, end_ns: 1001 + i, kernel_id: 1, by_launch: true, correlation_id: i, ..Default::default() });
    }
    record_launches(launches);
    record_dispatch(kernels);
    let s = snapshot();
    let ops: Vec<_> = s.dispatches.iter().map(|d| d.invocation).collect();
    assert_eq!(ops, [a, 0, b], "each kernel in the scope open at its launch");
    assert_eq!(s.invocations[&a].geometry, s.invocations[&b].geometry);
    assert_eq!(s.stats.unjoined, 0);
}

#[test]
fn a_full_op_log_is_merged_by_its_own_thread() {
    let _g = serial();
    // The merger thread kept out, as when it is late or could not be started.
    let _off = crate::merger::Off::new();
    for i in 0..crate::oplog::PENDING as u64 {
        scope_changed(42, i + 1, (i % 2) as u32);
    }
    assert!(crate::oplog::pending_here() < crate::oplog::PENDING, "the thread that filled its log merged it");
    scope_changed(42, u64::MAX, 0);
    assert_eq!(crate::oplog::pending_here(), 1, "appended, not merged");
}

#[test]
fn a_half_full_op_log_is_merged_by_the_merger_thread_not_its_own() {
    let _g = serial();
    // A thread that changes its scope a few hundred times a millisecond with no reader coming
    // by (llama.cpp's launching thread between CUPTI's deliveries): the merger moves its log
    // into the stage once it is half full; the thread itself never merges.
    let base = invocations_started();
    let (_, key) = begin_invocation_keyed(op("ADD", 64));
    let key = key.expect("a geometry");
    std::thread::spawn(move || {
        let half = crate::oplog::PENDING / 2;
        for i in 0..half as u64 {
            assert!(begin_invocation_at_scoped(key, 77, i + 1).is_some(), "begun through the log");
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while crate::oplog::pending_here() >= half && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(crate::oplog::pending_here() < half, "merged by another thread while this one waited");
    })
    .join()
    .expect("the logging thread");
    assert_eq!(invocations_started() - base, 1 + crate::oplog::PENDING as u64 / 2, "every invocation begun");
    assert!(snapshot().invocations.len() > crate::oplog::PENDING / 2, "and each in the stage");
}

#[test]
fn a_begin_logged_across_a_reset_keeps_its_kernels_as_no_ops() {
    let _g = serial();
    let (_, key) = begin_invocation_keyed(op("ADD", 64));
    let key = key.expect("a geometry");
    // The race: another thread's reset lands after this thread checked the key, before its
    // entry is merged. The entry still names the old table.
    let stale = crate::oplog::Entry { thread: 43, at_ns: 100, what: crate::oplog::What::Begin { id: 1 << 30, geometry: 0, resets: crate::store::resets_of(key) } };
    reset();
    let _ = begin_invocation_keyed(op("MUL_MAT", 64)); // geometry 0 of the new table: another op
    assert_eq!(crate::oplog::push(stale), Ok(crate::oplog::Fill::Room));
    record_launches([Launch { correlation_id: 1, thread_id: 43, start_ns: 150, end_ns: 150 }]);
    record_dispatch([RawDispatch { start_ns: 200, end_ns: 201, kernel_id: 1, by_launch: true, correlation_id: 1, ..Default::default() }]);
    let s = snapshot();
    assert!(!s.invocations.contains_key(&(1 << 30)), "not attributed to the new table's geometry 0");
    assert_eq!(s.dispatches.iter().map(|d| d.invocation).collect::<Vec<_>>(), [0], "kept, as no op's");
}

#[test]
fn a_remembered_fused_group_repoints_its_invocation_without_the_lock_until_a_reset() {
    let _g = serial();
    let (_, key) = begin_invocation_keyed(op("RMS_NORM", 4096));
    let key = key.expect("a geometry");
    let id = begin_invocation_at_scoped(key, 44, 10).expect("a current key");
    let group = OpDescriptor { fused_ops: vec![op("RMS_NORM", 4096), op("MUL", 4096)], ..op("RMS_NORM", 4096) };
    assert_eq!(group_geometry(op("RMS_NORM", 8)), None, "fewer than two nodes");
    let fused = group_geometry(group.clone()).expect("a group geometry");
    assert!(fuse_invocation_at(id, fused));
    assert!(!fuse_invocation_at(0, fused), "no invocation");
    let s = snapshot();
    let fused_ops: Vec<_> = s.geometries[s.invocations[&id].geometry as usize].fused_ops.iter().map(|o| o.op.clone()).collect();
    assert_eq!(fused_ops, ["RMS_NORM", "MUL"]);
    reset();
    assert!(!fuse_invocation_at(id, fused), "the reset cleared the table: the caller describes the group again");
}

#[test]
fn op_log_entries_arrive_once_and_in_order_while_a_reader_drains_and_their_threads_exit() {
    use crate::oplog::{drain, push, Entry, What};
    let _g = serial();
    // Four appending threads, each exiting right after its last entry, against one reader that
    // drains in a loop (the stage's lock makes it one in the library): every entry once, each
    // thread's in order, none left behind with an exited thread. A full ring refuses the entry
    // (the writer here waits for the reader instead of merging itself).
    // More than a ring holds (PENDING), so a writer meets a full ring; few enough for valgrind.
    const PER_THREAD: u64 = 6_000;
    let writers: Vec<_> = (0..4u64)
        .map(|t| {
            std::thread::spawn(move || {
                for i in 0..PER_THREAD {
                    let entry = Entry { thread: 9_000 + t, at_ns: i + 1, what: What::Scope { invocation: (i % 5) as u32 } };
                    while push(entry).is_err() {
                        std::thread::yield_now();
                    }
                }
            })
        })
        .collect();
    let mut seen = [0u64; 4];
    let mut check = |e: Entry| {
        if (9_000..9_004).contains(&e.thread) {
            let t = (e.thread - 9_000) as usize;
            assert_eq!(e.at_ns, seen[t] + 1, "thread {t}: entries in order, none lost or repeated");
            assert_eq!(e.what, What::Scope { invocation: (seen[t] % 5) as u32 });
            seen[t] = e.at_ns;
        }
    };
    while !writers.iter().all(|w| w.is_finished()) {
        drain(&mut check);
    }
    for w in writers {
        w.join().expect("a writer");
    }
    drain(&mut check);
    assert_eq!(seen, [PER_THREAD; 4], "every entry of every exited thread");
}

#[test]
fn an_entry_appended_just_before_its_thread_exits_is_kept_by_a_reader_that_was_reading_its_log() {
    use crate::oplog::{drain, push, Entry, What, AFTER_READ};
    use std::sync::mpsc::channel;
    let _g = serial();
    // The flake of issue 42 (ALargeRoutingIsReadBackWholeToo): the MoE worker was merging the
    // launching thread's log when that thread made its last scope change and exited (the
    // process's exit runs thread-local destructors before the report). The reader, resumed,
    // saw the log held by nobody and forgot it with the change unread.
    let entry = |at_ns| Entry { thread: 9_100, at_ns, what: What::Scope { invocation: at_ns as u32 } };
    let (ready_tx, ready_rx) = channel();
    let (go_tx, go_rx) = channel::<()>();
    let writer = std::thread::spawn(move || {
        assert_eq!(push(entry(1)), Ok(crate::oplog::Fill::Room));
        ready_tx.send(()).expect("the test waits");
        go_rx.recv().expect("the test says go");
        assert_eq!(push(entry(2)), Ok(crate::oplog::Fill::Room));
    });
    ready_rx.recv().expect("the writer's first entry");
    let mut writer = Some(writer);
    AFTER_READ.with(|hook| {
        *hook.borrow_mut() = Some(Box::new(move |last: Option<Entry>| {
            // Right after this drain read the writer's first entry: it appends and exits.
            if last.is_some_and(|e| e.thread == 9_100) {
                if let Some(w) = writer.take() {
                    go_tx.send(()).expect("the writer waits");
                    w.join().expect("the writer");
                }
            }
        }))
    });
    let mut got = Vec::new();
    drain(|e| got.extend((e.thread == 9_100).then_some(e.at_ns)));
    AFTER_READ.with(|hook| hook.borrow_mut().take());
    assert_eq!(got, [1]);
    drain(|e| got.extend((e.thread == 9_100).then_some(e.at_ns)));
    assert_eq!(got, [1, 2], "the exited thread's last entry is merged by the next reader");
}

#[test]
fn scope_changes_stamped_in_tsc_ticks_join_the_launches_stamped_in_boottime_between_them() {
    let _g = serial();
    if roctx_sys::clock::source() != roctx_sys::clock::Source::Tsc {
        return; // ticks only where the capture clock is the TSC (nothing to convert elsewhere)
    }
    // The launching thread stamps its scope changes with `rdtsc` (issue 42); launch records
    // carry BOOTTIME. Launches a few µs apart, each after one change: each kernel joins the op
    // open at its launch, across two merges (the second converts with two pairs).
    start_clock();
    let (_, key) = begin_invocation_keyed(op("ADD", 64));
    let key = key.expect("a geometry");
    let spin = |us: u64| {
        let until = roctx_sys::os::boottime_ns() + us * 1000;
        while roctx_sys::os::boottime_ns() < until {}
    };
    let mut expected = Vec::new();
    let mut corr = 0;
    for round in 0..2 {
        let mut launches = Vec::new();
        let mut kernels = Vec::new();
        for _ in 0..50 {
            let id = begin_invocation_at_scoped(key, 77, roctx_sys::clock::now()).expect("a current key");
            spin(3);
            let start = roctx_sys::os::boottime_ns();
            spin(1);
            let end = roctx_sys::os::boottime_ns();
            corr += 1;
            launches.push(Launch { correlation_id: corr, thread_id: 77, start_ns: start, end_ns: end });
            kernels.push(RawDispatch { start_ns: corr * 10, end_ns: corr * 10 + 1, kernel_id: 1, by_launch: true, correlation_id: corr, ..Default::default() });
            expected.push(id);
            spin(3);
        }
        record_launches(launches);
        record_dispatch(kernels);
        if round == 0 {
            spin(11_000); // past CLOCK_PAIR_NS: the next merge keeps a second pair
        }
    }
    let s = snapshot();
    let got: Vec<_> = s.dispatches.iter().map(|d| d.invocation).collect();
    assert_eq!(got, expected, "each kernel in the op begun just before its launch");
}
