//! Bounded fuzzing of the CUPTI activity-record reader (`roctx_sys::cupti::activity`): what a
//! completed CUPTI buffer hands the NVIDIA kernel source. Deterministic; runs in `cargo test`.
//! See rust/fuzz/README.md.
//!
//! An input is one record. It is placed so that it ends exactly at a `PROT_NONE` guard page and
//! holds exactly what the contract makes readable for its kind: the 208-byte kernel prefix for
//! CONCURRENT_KERNEL (Kernel9/10/13 share it), 24 bytes for EXTERNAL_CORRELATION, 40 for the
//! RUNTIME/DRIVER API records, the 4-byte kind for any other (shorter inputs are zero-padded).
//! The oracle reads every field at the spec's offset (nvidia_sources.md C.4, C.5) and checks the
//! kernel timing rule (start and end non-zero, end not before start, else "untimed").

use roctx_sys::cupti::{self, Activity};

#[path = "../../fuzz/guard.rs"]
mod guard;
#[path = "../../fuzz/mutate.rs"]
mod mutate;

use guard::Guarded;

const CUPTI: mutate::Config = mutate::Config {
    name: "cupti",
    manifest_dir: env!("CARGO_MANIFEST_DIR"),
    mutations_per_seed: 60_000,
    max_len: 256,
    protobuf: false,
    known_bugs: &[],
};

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn i32_at(b: &[u8], at: usize) -> i32 {
    i32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

fn readable(kind: u32) -> usize {
    match kind as i32 {
        cupti::kind::CONCURRENT_KERNEL => 208,
        cupti::kind::EXTERNAL_CORRELATION => 24,
        cupti::kind::RUNTIME | cupti::kind::DRIVER => 40,
        cupti::kind::MEMCPY | cupti::kind::MEMSET => 80,
        cupti::kind::MEMCPY2 => 88,
        _ => 4,
    }
}

fn target(g: &Guarded, input: &[u8]) {
    let _running = guard::running(input);
    let mut bytes = input.to_vec();
    bytes.resize(bytes.len().max(4), 0);
    let kind = u32_at(&bytes, 0);
    bytes.resize(readable(kind), 0);
    // 8-aligned placement, as CUPTI's records are.
    let ptr = g.place(&bytes);
    // SAFETY: `bytes.len()` bytes are readable at `ptr`: what the contract promises for `kind`.
    match unsafe { cupti::activity(ptr) } {
        Activity::Kernel(k) => {
            assert_eq!(kind as i32, cupti::kind::CONCURRENT_KERNEL);
            let (start, end) = (u64_at(&bytes, 16), u64_at(&bytes, 24));
            assert!(start != 0 && end != 0 && end >= start, "timing {start}..{end} accepted");
            assert_eq!((k.start, k.end), (start, end));
            assert_eq!((k.device_id, k.stream_id, k.correlation_id), (u32_at(&bytes, 40), u32_at(&bytes, 48), u32_at(&bytes, 92)));
            assert_eq!(k.grid, [i32_at(&bytes, 52), i32_at(&bytes, 56), i32_at(&bytes, 60)]);
            assert_eq!(k.block, [i32_at(&bytes, 64), i32_at(&bytes, 68), i32_at(&bytes, 72)]);
            assert_eq!(k.name as usize as u64, u64_at(&bytes, 104));
        }
        Activity::Copy(c) if kind as i32 == cupti::kind::MEMCPY2 => {
            let (start, end) = (u64_at(&bytes, 16), u64_at(&bytes, 24));
            assert!(start != 0 && end != 0 && end >= start, "timing {start}..{end} accepted");
            assert_eq!((c.bytes, c.start, c.end, c.copy_kind), (u64_at(&bytes, 8), start, end, bytes[4]));
            assert_eq!((c.device_id, c.stream_id, c.correlation_id), (u32_at(&bytes, 32), u32_at(&bytes, 40), u32_at(&bytes, 60)));
            assert_eq!((c.graph_node_id, c.graph_id), (u64_at(&bytes, 72), u32_at(&bytes, 80)));
        }
        Activity::Copy(c) => {
            assert_eq!(kind as i32, cupti::kind::MEMCPY);
            let (start, end) = (u64_at(&bytes, 16), u64_at(&bytes, 24));
            assert!(start != 0 && end != 0 && end >= start, "timing {start}..{end} accepted");
            assert_eq!((c.copy_kind, c.src_kind, c.dst_kind), (bytes[4], bytes[5], bytes[6]));
            assert_eq!((c.bytes, c.start, c.end), (u64_at(&bytes, 8), start, end));
            assert_eq!((c.device_id, c.stream_id, c.correlation_id), (u32_at(&bytes, 32), u32_at(&bytes, 40), u32_at(&bytes, 44)));
            assert_eq!((c.graph_node_id, c.graph_id), (u64_at(&bytes, 64), u32_at(&bytes, 72)));
        }
        Activity::Set(m) => {
            assert_eq!(kind as i32, cupti::kind::MEMSET);
            let (start, end) = (u64_at(&bytes, 16), u64_at(&bytes, 24));
            assert!(start != 0 && end != 0 && end >= start, "timing {start}..{end} accepted");
            assert_eq!((m.value, m.bytes, m.start, m.end), (u32_at(&bytes, 4), u64_at(&bytes, 8), start, end));
            assert_eq!((m.stream_id, m.correlation_id, m.memory_kind), (u32_at(&bytes, 40), u32_at(&bytes, 44), u16::from_le_bytes([bytes[50], bytes[51]])));
            assert_eq!((m.graph_node_id, m.graph_id), (u64_at(&bytes, 64), u32_at(&bytes, 72)));
        }
        Activity::Untimed => {
            assert!(matches!(kind as i32, cupti::kind::CONCURRENT_KERNEL | cupti::kind::MEMCPY | cupti::kind::MEMCPY2 | cupti::kind::MEMSET));
            let (start, end) = (u64_at(&bytes, 16), u64_at(&bytes, 24));
            assert!(start == 0 || end == 0 || end < start, "timing {start}..{end} refused");
        }
        Activity::External(e) => {
            assert_eq!(kind as i32, cupti::kind::EXTERNAL_CORRELATION);
            assert_eq!((e.external_kind, e.external_id, e.correlation_id), (i32_at(&bytes, 4), u64_at(&bytes, 8), u32_at(&bytes, 16)));
        }
        Activity::Api(a) => {
            assert!(matches!(kind as i32, cupti::kind::RUNTIME | cupti::kind::DRIVER));
            assert_eq!((a.cbid, a.thread_id, a.correlation_id), (u32_at(&bytes, 4), u32_at(&bytes, 28), u32_at(&bytes, 32)));
        }
        Activity::Other(k) => {
            assert_eq!(k, kind);
            assert!(readable(kind) == 4, "kind {kind} has a reader");
        }
    }
}

fn kernel(start: u64, end: u64) -> Vec<u8> {
    let mut r = vec![0u8; 216]; // Kernel10: the prefix plus isDeviceLaunched and padding
    r[0..4].copy_from_slice(&10u32.to_le_bytes());
    r[16..24].copy_from_slice(&start.to_le_bytes());
    r[24..32].copy_from_slice(&end.to_le_bytes());
    for (at, v) in [(40, 0u32), (48, 7), (52, 256), (56, 1), (60, 1), (64, 128), (68, 1), (72, 1), (92, 4242)] {
        r[at..at + 4].copy_from_slice(&v.to_le_bytes());
    }
    r[104..112].copy_from_slice(&0x7f00_dead_beefu64.to_le_bytes());
    r
}

fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut external = vec![0u8; 24];
    external[0..4].copy_from_slice(&39u32.to_le_bytes());
    external[4..8].copy_from_slice(&5i32.to_le_bytes());
    external[8..16].copy_from_slice(&((2u64 << 32) | 5).to_le_bytes());
    external[16..20].copy_from_slice(&4242u32.to_le_bytes());
    let api = |kind: u32| {
        let mut r = vec![0u8; 40];
        r[0..4].copy_from_slice(&kind.to_le_bytes());
        r[4..8].copy_from_slice(&211u32.to_le_bytes());
        r[28..32].copy_from_slice(&0x8765_4321u32.to_le_bytes());
        r[32..36].copy_from_slice(&4242u32.to_le_bytes());
        r
    };
    // Memcpy6 (96 bytes) and Memset4 (88), as CUDA 13.0 writes them from a graph launch.
    let copy = |kind: u32, start: u64, end: u64, len: usize| {
        let mut r = vec![0u8; len];
        r[0..4].copy_from_slice(&kind.to_le_bytes());
        r[4..8].copy_from_slice(&[8, 3, 3, 0]);
        r[8..16].copy_from_slice(&4_194_304u64.to_le_bytes());
        r[16..24].copy_from_slice(&start.to_le_bytes());
        r[24..32].copy_from_slice(&end.to_le_bytes());
        for (at, v) in [(40, 13u32), (44, 142), (72, 2)] {
            r[at..at + 4].copy_from_slice(&v.to_le_bytes());
        }
        r[50..52].copy_from_slice(&3u16.to_le_bytes());
        r[64..72].copy_from_slice(&((2u64 << 32) | 1).to_le_bytes());
        r
    };
    vec![
        ("memcpy6_graph.bin", copy(1, 1_000, 2_000, 96)),
        ("memcpy_untimed.bin", copy(1, 0, 0, 96)),
        ("memset4_graph.bin", copy(2, 1_000, 2_000, 88)),
        ("memcpy_ptop4.bin", {
            let mut r = copy(22, 1_000, 2_000, 96);
            r[4] = 10;
            r[60..64].copy_from_slice(&142u32.to_le_bytes());
            r
        }),
        ("memset_backwards.bin", copy(2, 2_000, 1_000, 88)),
        ("kernel10.bin", kernel(1_000, 2_000)),
        ("kernel_untimed.bin", kernel(0, 0)),
        ("kernel_backwards.bin", kernel(2_000, 1_000)),
        ("kernel_prefix_only.bin", kernel(1_000, 2_000)[..208].to_vec()),
        ("kernel_short.bin", kernel(1_000, 2_000)[..100].to_vec()),
        ("external_custom2.bin", external),
        ("api_runtime.bin", api(5)),
        ("api_driver.bin", api(4)),
        ("memcpy_kind.bin", 1u32.to_le_bytes().to_vec()),
        ("kind_max.bin", u32::MAX.to_le_bytes().to_vec()),
        ("empty.bin", Vec::new()),
    ]
}

#[test]
fn fuzz_cupti_records() {
    guard::install_segv_reporter();
    let guarded = Guarded::new();
    let outcome = mutate::run(&CUPTI, &|input: &[u8]| target(&guarded, input));
    mutate::assert_clean(&CUPTI, &outcome);
}

/// Rewrites the generated seeds (other files are kept):
/// `cargo test -p roctx_sys --test fuzz_cupti -- --ignored regenerate_corpus`.
#[test]
#[ignore = "writes rust/fuzz/corpus/cupti; run by hand after a layout change"]
fn regenerate_corpus() {
    let dir = mutate::corpus_dir(CUPTI.manifest_dir, CUPTI.name);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, bytes) in seeds() {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}
