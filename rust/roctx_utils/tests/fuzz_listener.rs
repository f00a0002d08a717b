//! Bounded fuzzing of host-fed marker records end to end: `listener::feed` (what
//! `roctx_utils_listener_feed` runs) decodes a raw callback record of either SDK layout, reads
//! its marker payload and message, drives the collector's state machine with the record's
//! thread ids and range ids, and the session's snapshot is exported. Deterministic; runs in
//! `cargo test`. See rust/fuzz/README.md.
//!
//! Record, payload and message each end at a guard page (rust/fuzz/guard.rs), so an over-read
//! kills the test after printing the input. Properties, per input (one session each):
//! - an unknown SDK version, a record length other than the layout's, or an unknown marker kind
//!   is `Rejected`; a push whose payload `size` is below the 16 bytes it reads is `Rejected`;
//!   a known kind with a full (32-byte) payload is `Accepted`;
//! - the snapshot counts exactly the rejected records, `recorded` equals the events returned,
//!   every event ends at or after its start, names an existing label, and marks are instants;
//! - the snapshot's XSpace validates without errors and keeps every event.
//!
//! Input: `version: u32 LE`, `options: u8` (per-thread event cap 4, 64 or 2^20), then 40-byte
//! records (see `Rec::parse`).

use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};

use roctx_export::{xplane, Trace};
use roctx_utils::collector::{self, CaptureMode, SessionOptions, MAX_DEPTH};
use roctx_utils::listener::{self, FeedStatus};
use roctx_utils::sys::rocprofiler::Layout;

#[path = "../../fuzz/guard.rs"]
mod guard;
#[path = "../../fuzz/mutate.rs"]
mod mutate;

use guard::Guarded;

const LISTENER: mutate::Config = mutate::Config {
    name: "listener",
    manifest_dir: env!("CARGO_MANIFEST_DIR"),
    mutations_per_seed: 15_000,
    max_len: 5 + 40 * 24,
    protobuf: false,
    known_bugs: &[],
};

const KIND_CORE: i32 = 7;
const KIND_CONTROL: i32 = 8;
const KIND_NAME: i32 = 9;
const KIND_CORE_RANGE: i32 = 21;
const KNOWN_KINDS: [i32; 4] = [KIND_CORE, KIND_CONTROL, KIND_NAME, KIND_CORE_RANGE];

/// Labels a record's message can be: ordinary, empty, not UTF-8, with a NUL inside, and one
/// longer than the collector keeps (flag bit 7).
const LABELS: [&[u8]; 6] = [b"jit_train_step", b"Thunk:#hlo_op=fusion.3#", b"", b"\xff\xfe not utf-8", b"a\0b", b"x"];
const LONG_LABEL_BYTES: usize = 5000;

/// One record of the input, 40 bytes:
/// - 0: kind (`b % 8` picks 7, 7, 7, 21, 21, 8, 9, or `(b >> 3) - 8`, which spans unknown kinds)
/// - 1: operation `b % 8 - 1`; 2: phase `b % 4 - 1`
/// - 3: flags: bit 0 null payload, bit 1 null message, bits 2-3 record length (exact, one
///   short, one long, the other layout's), bit 4 raw thread id, bit 5 raw range/correlation
///   ids, bit 6 raw payload size (else 32), bit 7 the long label
/// - 4..12 thread id (else 1000 + `raw % 4`), 12..20 correlation id, 20..28 payload size,
///   28..36 range id (else `raw % 4 + 1`; the argument of stop/pause/resume, the return value
///   of roctxRangeStartA), 36 label index
#[derive(Debug, Clone, Copy)]
struct Rec {
    kind: i32,
    operation: i32,
    phase: i32,
    flags: u8,
    tid: u64,
    correlation: u64,
    size: u64,
    id: u64,
    label: usize,
}

impl Rec {
    const LEN: usize = 40;

    fn parse(b: &[u8]) -> Rec {
        let word = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
        let flags = b[3];
        let small = |raw: u64, bit: u8, f: fn(u64) -> u64| if flags & bit != 0 { raw } else { f(raw) };
        Rec {
            kind: match b[0] % 8 {
                0..=2 => KIND_CORE,
                3 | 4 => KIND_CORE_RANGE,
                5 => KIND_CONTROL,
                6 => KIND_NAME,
                _ => i32::from(b[0] >> 3) - 8,
            },
            operation: i32::from(b[1] % 8) - 1,
            phase: i32::from(b[2] % 4) - 1,
            flags,
            tid: small(word(4), 0x10, |r| 1000 + r % 4),
            correlation: small(word(12), 0x20, |r| r % 4 + 1),
            size: small(word(20), 0x40, |_| 32),
            id: small(word(28), 0x20, |r| r % 4 + 1),
            label: usize::from(b[36]),
        }
    }

    fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; Rec::LEN];
        let kind_byte = match self.kind {
            KIND_CORE => 0,
            KIND_CORE_RANGE => 3,
            KIND_CONTROL => 5,
            KIND_NAME => 6,
            k => ((k + 8) as u8) << 3 | 7,
        };
        b[0] = kind_byte;
        b[1] = (self.operation + 1) as u8;
        b[2] = (self.phase + 1) as u8;
        b[3] = self.flags;
        // What `parse` turns back into these values (raw when the flag says so).
        let raw_ids = self.flags & 0x20 != 0;
        let tid = if self.flags & 0x10 != 0 { self.tid } else { self.tid - 1000 };
        b[4..12].copy_from_slice(&tid.to_le_bytes());
        b[12..20].copy_from_slice(&(if raw_ids { self.correlation } else { self.correlation - 1 }).to_le_bytes());
        b[20..28].copy_from_slice(&self.size.to_le_bytes());
        b[28..36].copy_from_slice(&(if raw_ids { self.id } else { self.id - 1 }).to_le_bytes());
        b[36] = self.label as u8;
        b
    }

    /// Whether arg0 of the payload is an id (stop, pause, resume) rather than a message.
    fn arg0_is_id(&self) -> bool {
        matches!((self.kind, self.operation, self.phase), (KIND_CORE, 4, 1) | (KIND_CONTROL, 0 | 1, 1))
    }
}

/// The callback record bytes of `layout` (rocprofiler_abi.md 5.1), payload pointer included.
fn record_bytes(layout: Layout, r: &Rec, payload: u64) -> Vec<u8> {
    let (kind, operation, phase, payload_at) = match layout {
        Layout::V6 => (32, 36, 40, 48),
        Layout::V7 => (40, 44, 48, 56),
    };
    let mut b = vec![0u8; layout.record_size()];
    b[0..8].copy_from_slice(&1u64.to_le_bytes());
    b[8..16].copy_from_slice(&r.tid.to_le_bytes());
    b[16..24].copy_from_slice(&r.correlation.to_le_bytes());
    b[kind..kind + 4].copy_from_slice(&r.kind.to_le_bytes());
    b[operation..operation + 4].copy_from_slice(&r.operation.to_le_bytes());
    b[phase..phase + 4].copy_from_slice(&r.phase.to_le_bytes());
    b[payload_at..payload_at + 8].copy_from_slice(&payload.to_le_bytes());
    b
}

/// What the run exercised (printed at the end, so a harness that stopped reaching the state
/// machine shows).
static ACCEPTED: AtomicU64 = AtomicU64::new(0);
static REJECTED: AtomicU64 = AtomicU64::new(0);
static EVENTS: AtomicU64 = AtomicU64::new(0);

struct Buffers {
    record: Guarded,
    payload: Guarded,
    message: Guarded,
}

fn version_of(input: &[u8]) -> u32 {
    u32::from_le_bytes([0, 1, 2, 3].map(|i| input.get(i).copied().unwrap_or(0)))
}

fn target(buffers: &Buffers, input: &[u8]) {
    let _running = guard::running(input);
    let version = version_of(input);
    let cap = [4, 64, 1 << 20][usize::from(input.get(4).copied().unwrap_or(0) % 3)];
    let layout = Layout::for_version(version);
    let records: Vec<Rec> = input.get(5..).unwrap_or_default().chunks_exact(Rec::LEN).map(Rec::parse).collect();

    // A clean slate: no pause left by an earlier input, and (two sessions) no start/stop range
    // of an earlier input still known.
    collector::resume(0);
    for _ in 0..2 {
        collector::start(SessionOptions::default(), CaptureMode::Host).expect("no session running");
        collector::stop().expect("session running");
    }
    let options = SessionOptions { max_events_per_thread: cap, ..SessionOptions::default() };
    collector::start(options, CaptureMode::Host).expect("no session running");

    let mut rejected = 0u64;
    for r in &records {
        // The message, NUL-terminated and ending at a guard page.
        let mut text = if r.flags & 0x80 != 0 { vec![b'L'; LONG_LABEL_BYTES] } else { LABELS[r.label % LABELS.len()].to_vec() };
        text.push(0);
        let message = if r.flags & 0x02 != 0 { 0 } else { buffers.message.place(&text) as usize as u64 };
        // The payload: `size` promises what is readable (the size field always; past 32 bytes
        // nothing more is read).
        let arg0 = if r.arg0_is_id() { r.id } else { message };
        let mut payload = [r.size, arg0, 0, r.id].iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>();
        payload.truncate(usize::try_from(r.size).map_or(32, |s| s.clamp(8, 32)));
        let payload_ptr = if r.flags & 0x01 != 0 { 0 } else { buffers.payload.place(&payload) as usize as u64 };
        // The record, `len` bytes at a guard page.
        let bytes = record_bytes(layout.unwrap_or(Layout::V7), r, payload_ptr);
        let other = match layout {
            Some(Layout::V6) => Layout::V7.record_size(),
            _ => Layout::V6.record_size(),
        };
        let len = match (r.flags >> 2) & 3 {
            0 => bytes.len(),
            1 => bytes.len() - 1,
            2 => bytes.len() + 1,
            _ => other,
        };
        let mut placed = bytes.clone();
        placed.resize(len, 0);
        let ptr = buffers.record.place(&placed);
        // SAFETY: `len` readable bytes; the payload and its message stay valid for the call.
        let status = unsafe { listener::feed(ptr.cast::<c_void>(), len, version) };

        let well_formed = layout.is_some() && len == bytes.len();
        if !well_formed || !KNOWN_KINDS.contains(&r.kind) {
            assert_eq!(status, FeedStatus::Rejected, "{r:?} (len {len}, version {version})");
        }
        if well_formed && KNOWN_KINDS.contains(&r.kind) && payload_ptr != 0 && r.size >= 32 {
            assert_eq!(status, FeedStatus::Accepted, "{r:?}");
        }
        let push = matches!((r.kind, r.operation, r.phase), (KIND_CORE | KIND_CORE_RANGE, 1, 1));
        if well_formed && push && (payload_ptr == 0 || r.size < 16) {
            assert_eq!(status, FeedStatus::Rejected, "a push whose payload is short or null: {r:?}");
        }
        assert_ne!(status, FeedStatus::NotCapturing);
        rejected += u64::from(status == FeedStatus::Rejected);
        let counter = if status == FeedStatus::Accepted { &ACCEPTED } else { &REJECTED };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    let snapshot = collector::stop().expect("session running");
    assert_eq!(snapshot.stats.rejected_records, rejected, "rejected records are counted exactly");
    assert_eq!(snapshot.stats.recorded, snapshot.events.len() as u64, "recorded == events returned");
    for e in &snapshot.events {
        assert!(e.end_ns >= e.start_ns, "{e:?}");
        assert!((e.label as usize) < snapshot.labels.len(), "{e:?} names no label");
        assert!(usize::from(e.depth) <= MAX_DEPTH, "{e:?}");
        if e.kind == collector::EventKind::Mark {
            assert_eq!(e.start_ns, e.end_ns, "{e:?}");
        }
    }
    let trace = Trace::from_snapshot(&snapshot, "fuzz-host", 0);
    let space = xplane::standalone_xspace(&trace);
    let issues = xplane::validate(&space);
    assert!(!issues.iter().any(|i| i.error), "the snapshot's XSpace does not validate: {issues:?}");
    let exported: usize = space.planes.iter().flat_map(|p| &p.lines).map(|l| l.events.len()).sum();
    assert_eq!(exported, snapshot.events.len(), "export lost or invented events");
    EVENTS.fetch_add(exported as u64, Ordering::Relaxed);

    // Outside a session nothing is recorded.
    if let Some(r) = records.first() {
        let bytes = record_bytes(layout.unwrap_or(Layout::V7), r, 0);
        let ptr = buffers.record.place(&bytes);
        // SAFETY: as above (no payload: it is not read when not capturing).
        assert_eq!(unsafe { listener::feed(ptr.cast::<c_void>(), bytes.len(), version) }, FeedStatus::NotCapturing);
    }
}

// ---------------------------------------------------------------------------------------------
// Seeds.

fn rec(kind: i32, operation: i32, phase: i32) -> Rec {
    Rec { kind, operation, phase, flags: 0, tid: 1000, correlation: 1, size: 32, id: 1, label: 0 }
}

fn seed(version: u32, cap: u8, records: &[Rec]) -> Vec<u8> {
    let mut out = version.to_le_bytes().to_vec();
    out.push(cap);
    for r in records {
        out.extend(r.encode());
    }
    out
}

fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let push = |tid: u64, label: usize| Rec { tid, label, ..rec(KIND_CORE, 1, 1) };
    let pop = |tid: u64| Rec { tid, ..rec(KIND_CORE, 2, 2) };
    let nested = [push(1000, 0), push(1000, 1), rec(KIND_CORE, 0, 1), pop(1000), pop(1000), push(1001, 0), pop(1001)];
    let start_stop = [
        Rec { id: 2, ..rec(KIND_CORE, 3, 2) },
        Rec { tid: 1001, id: 2, ..rec(KIND_CORE, 4, 1) },
        Rec { id: 3, ..rec(KIND_CORE, 4, 1) },
    ];
    let core_range_7x = [
        rec(KIND_CORE_RANGE, 1, 1),
        rec(KIND_CORE_RANGE, 1, 2),
        Rec { correlation: 2, ..rec(KIND_CORE_RANGE, 2, 1) },
        Rec { correlation: 2, tid: 1002, ..rec(KIND_CORE_RANGE, 2, 2) },
        rec(KIND_CORE_RANGE, 0, 1),
    ];
    let control = [
        Rec { id: 1000, flags: 0x20, ..rec(KIND_CONTROL, 0, 1) },
        push(1000, 0),
        pop(1000),
        Rec { id: 1000, flags: 0x20, ..rec(KIND_CONTROL, 1, 1) },
        push(1000, 1),
        pop(1000),
        Rec { label: 1, ..rec(KIND_NAME, 0, 1) },
    ];
    let malformed = [
        Rec { size: 8, flags: 0x40, ..push(1000, 0) },
        Rec { size: 15, flags: 0x40, ..rec(KIND_CORE, 3, 2) },
        Rec { flags: 0x01, ..push(1000, 0) },
        Rec { flags: 0x02, ..push(1000, 0) },
        Rec { flags: 0x04, ..push(1000, 0) },
        Rec { flags: 0x08, ..push(1000, 0) },
        Rec { flags: 0x0c, ..push(1000, 0) },
        rec(3, 0, 1),
        rec(22, 0, 1),
        pop(1000),
        Rec { flags: 0x80, ..push(1000, 0) },
        Rec { label: 2, ..push(1000, 0) },
        Rec { size: u64::MAX, flags: 0x40, ..push(1000, 0) },
    ];
    let deep: Vec<Rec> = (0..20).map(|i| push(1000, i % 2)).collect();
    vec![
        ("v6_nested_push_pop_mark.bin", seed(600, 1, &nested)),
        ("v7_nested_push_pop_mark.bin", seed(10_000, 1, &nested)),
        ("v6_start_stop_cross_thread.bin", seed(400, 2, &start_stop)),
        ("v7_start_stop_cross_thread.bin", seed(10_401, 2, &start_stop)),
        ("v7_core_range_api.bin", seed(10_000, 1, &core_range_7x)),
        ("v6_pause_resume_name.bin", seed(600, 1, &control)),
        ("v7_malformed_payloads_and_lengths.bin", seed(10_000, 1, &malformed)),
        ("v6_malformed_payloads_and_lengths.bin", seed(600, 1, &malformed)),
        ("v7_deep_over_cap.bin", seed(10_000, 0, &deep)),
        ("future_sdk_2.0.bin", seed(20_000, 1, &nested)),
        ("old_sdk_0.3.bin", seed(300, 1, &nested)),
        ("no_records.bin", seed(10_000, 1, &[])),
    ]
}

// ---------------------------------------------------------------------------------------------
// Tests.

#[test]
fn fuzz_listener_feed() {
    guard::install_segv_reporter();
    let buffers = Buffers { record: Guarded::new(), payload: Guarded::new(), message: Guarded::with_pages(2) };
    let outcome = mutate::run(&LISTENER, &|input: &[u8]| {
        // A panic inside a session would leave it running for the next input.
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| target(&buffers, input)));
        let _ = collector::stop();
        if let Err(panic) = result {
            std::panic::resume_unwind(panic);
        }
    });
    println!(
        "  records accepted {}, rejected {}; events recorded and exported {}",
        ACCEPTED.load(Ordering::Relaxed),
        REJECTED.load(Ordering::Relaxed),
        EVENTS.load(Ordering::Relaxed)
    );
    assert!(ACCEPTED.load(Ordering::Relaxed) > 0 && EVENTS.load(Ordering::Relaxed) > 0, "the harness never reached the state machine");
    mutate::assert_clean(&LISTENER, &outcome);
}

/// Rewrites the generated seeds (other files are kept):
/// `cargo test -p roctx_utils --test fuzz_listener -- --ignored regenerate_corpus`.
#[test]
#[ignore = "writes rust/fuzz/corpus/listener; run by hand after a format change"]
fn regenerate_corpus() {
    let dir = mutate::corpus_dir(LISTENER.manifest_dir, LISTENER.name);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, bytes) in seeds() {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

/// The seed encoder and the input parser agree, so the seeds mean what their names say.
#[test]
fn seeds_parse_back_to_the_records_they_encode() {
    let push = Rec { flags: 0x80, label: 3, ..rec(KIND_CORE, 1, 1) };
    for r in [push, Rec { id: 1000, flags: 0x20, correlation: 9, ..rec(KIND_CONTROL, 0, 1) }, rec(22, 5, -1), rec(-8, -1, 2)] {
        let back = Rec::parse(&r.encode());
        assert_eq!(format!("{back:?}"), format!("{r:?}"));
    }
}
