//! Bounded fuzzing of the rocprofiler-sdk record decoders (`roctx_sys::rocprofiler`) for both
//! SDK layouts: what a host hands `roctx_utils_listener_feed` and what the SDK passes our
//! callbacks. Deterministic; runs in `cargo test`. See rust/fuzz/README.md.
//!
//! Every buffer is placed so that it ends exactly at a `PROT_NONE` guard page: a read or write
//! past what the contract makes readable kills the test with SIGSEGV, after a handler has
//! printed the input as hex. The corpus (`rust/fuzz/corpus/rocprofiler/`) holds one input per
//! file; its first byte picks the decoder:
//!
//! - `0` record: `version: u32 LE`, then the record bytes. `Layout::for_version` follows the
//!   version table; `decode` accepts exactly the layout's size (56 or 64), rejects anything
//!   shorter or longer and null, and reads every field at the spec's offset.
//! - `1` marker payload: `needed: u8`, then the payload, starting with its `size: u64 LE`
//!   (zero-padded to 8). Readable bytes are what `size` promises (at least the 8 of the size
//!   field, at most 32 plus what the input holds). `marker_payload` rejects a size smaller than
//!   `needed` and null, and returns exactly the words `size` covers, zeros past it.
//! - `2` C string: `max: u16 LE`, then the bytes, NUL appended. `c_string_bytes` returns the
//!   bytes before the first NUL, capped at `max`; a null pointer reads as empty.
//! - `3` client id: `layout: u8` (even V6, odd V7), then the struct, starting with V7's
//!   `size: u64 LE`. `set_client_name` writes the name pointer only where the layout has it,
//!   and for V7 only when `size` covers it; nothing else changes.
//! - `4` KERNEL_DISPATCH buffer record: `category: u32 LE`, `kind: u32 LE`, then the record,
//!   starting with its `size: u64 LE` (zero-padded to 8). Readable bytes are what `size`
//!   promises (at least 8, at most 184 plus what the input holds). `kernel_dispatch` says
//!   "other kind" exactly when category/kind are not TRACING/KERNEL_DISPATCH, "malformed" for a
//!   null payload, a `size` under 128 or an end before the start, and otherwise returns every
//!   field from the spec's offset (zeros past `size`).
//! - `5` HIP_RUNTIME_API buffer record (the launch calls of the kernel join): `layout: u8`
//!   (even V6, odd V7), `category: u32 LE`, `kind: u32 LE`, then the record as in `4` (at most
//!   56 or 64 readable). `hip_api_call` says "other kind" exactly when category/kind are not
//!   TRACING/HIP_RUNTIME_API, "malformed" for a null payload, a `size` under the layout's record
//!   or an end before the start, and otherwise reads operation, correlation, times and thread
//!   at the layout's offsets.
//! - `6` MEMORY_COPY buffer record: `category: u32 LE`, `kind: u32 LE`, then the record as in
//!   `4` (at most 96 readable: 7.0's size). `memory_copy` says "other kind" exactly when
//!   category/kind are not TRACING/MEMORY_COPY, "malformed" for a null payload, a `size` under
//!   the 80 bytes 6.2 and 7.0 share or an end before the start, and otherwise reads every field
//!   of those 80 bytes at the spec's offset.

use std::ffi::{c_void, CStr};

use roctx_sys::rocprofiler::{self, Layout};

#[path = "../../fuzz/guard.rs"]
mod guard;
#[path = "../../fuzz/mutate.rs"]
mod mutate;

use guard::Guarded;

const ROCPROFILER: mutate::Config = mutate::Config {
    name: "rocprofiler",
    manifest_dir: env!("CARGO_MANIFEST_DIR"),
    mutations_per_seed: 80_000,
    max_len: 512,
    protobuf: false,
    known_bugs: &[],
};

// ---------------------------------------------------------------------------------------------
// Oracles.

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

fn i32_at(bytes: &[u8], at: usize) -> i32 {
    i32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

/// Field offsets of the callback record (rocprofiler_abi.md 5.1): kind, operation, phase and
/// payload move by 8 in 1.x, where `correlation_id` gained `ancestor`.
fn offsets(layout: Layout) -> (usize, usize, usize, usize) {
    match layout {
        Layout::V6 => (32, 36, 40, 48),
        Layout::V7 => (40, 44, 48, 56),
    }
}

fn record(g: &Guarded, body: &[u8]) {
    let version = u32::from_le_bytes([0, 1, 2, 3].map(|i| body.get(i).copied().unwrap_or(0)));
    let bytes = body.get(4..).unwrap_or_default();
    let expected = match version {
        400..=9_999 => Some(Layout::V6),
        10_000..=19_999 => Some(Layout::V7),
        _ => None,
    };
    assert_eq!(Layout::for_version(version), expected, "layout of version {version}");
    for layout in [Layout::V6, Layout::V7] {
        let ptr = g.place(bytes);
        // SAFETY: `bytes.len()` bytes are readable at `ptr`.
        let decoded = unsafe { rocprofiler::decode(ptr.cast(), bytes.len(), layout) };
        assert_eq!(decoded.is_some(), bytes.len() == layout.record_size(), "{layout:?} record of {} bytes", bytes.len());
        if let Some(r) = decoded {
            let (kind, operation, phase, payload) = offsets(layout);
            assert_eq!(r.thread_id, u64_at(bytes, 8));
            assert_eq!(r.correlation_internal, u64_at(bytes, 16));
            assert_eq!((r.kind, r.operation, r.phase), (i32_at(bytes, kind), i32_at(bytes, operation), i32_at(bytes, phase)));
            assert_eq!(r.payload as usize as u64, u64_at(bytes, payload));
        }
        // SAFETY: null is allowed.
        assert!(unsafe { rocprofiler::decode(std::ptr::null(), layout.record_size(), layout) }.is_none());
    }
}

fn payload(g: &Guarded, body: &[u8]) {
    let needed = usize::from(body.first().copied().unwrap_or(0));
    let mut bytes = body.get(1..).unwrap_or_default().to_vec();
    if bytes.len() < 8 {
        bytes.resize(8, 0);
    }
    let size = u64_at(&bytes, 0);
    // What the SDK promises readable: `size` bytes (the size field always). Past 32 the decoder
    // must not read at all, so the input's own length (or 32) is enough there.
    let readable = match usize::try_from(size) {
        Ok(s) if s <= 32 => s.max(8),
        _ => bytes.len().max(32),
    };
    bytes.resize(readable, 0);
    let ptr = g.place(&bytes);
    let covered = |word: usize| if size >= (word as u64 + 1) * 8 { u64_at(&bytes, word * 8) } else { 0 };
    for needed in [needed, 16, 32] {
        // SAFETY: `readable` bytes are valid, which is all `size` promises the decoder may read.
        let got = unsafe { rocprofiler::marker_payload(ptr.cast::<c_void>(), needed) };
        if size < needed as u64 {
            assert!(got.is_none(), "size {size} < needed {needed} accepted");
            continue;
        }
        let p = got.unwrap_or_else(|| panic!("size {size} >= needed {needed} rejected"));
        assert_eq!((p.size, p.arg0, p.arg1, p.retval), (size, covered(1), covered(2), covered(3)), "size {size}");
    }
    // SAFETY: null is allowed.
    assert!(unsafe { rocprofiler::marker_payload(std::ptr::null(), 0) }.is_none());
}

fn c_string(g: &Guarded, body: &[u8]) {
    let max = usize::from(u16::from_le_bytes([0, 1].map(|i| body.get(i).copied().unwrap_or(0))));
    let text = body.get(2..).unwrap_or_default();
    let mut bytes = text.to_vec();
    bytes.push(0);
    let ptr = g.place(&bytes);
    let until_nul = &text[..text.iter().position(|&b| b == 0).unwrap_or(text.len())];
    // SAFETY: a NUL-terminated string.
    let got = unsafe { rocprofiler::c_string_bytes(ptr as usize as u64, max) };
    assert_eq!(got, &until_nul[..until_nul.len().min(max)]);
    // SAFETY: 0 is allowed.
    assert!(unsafe { rocprofiler::c_string_bytes(0, max) }.is_empty());
}

const CLIENT_NAME: &CStr = c"roctx_utils";

fn client_id(g: &Guarded, body: &[u8]) {
    let layout = if body.first().copied().unwrap_or(0) % 2 == 0 { Layout::V6 } else { Layout::V7 };
    let mut bytes = body.get(1..).unwrap_or_default().to_vec();
    if bytes.len() < 8 {
        bytes.resize(8, 0);
    }
    let size = u64_at(&bytes, 0);
    // V6 {name @0; handle @8}: 16 bytes. V7 {size @0; name @8; handle @16}: what `size` covers,
    // in whole words (the struct is 8-aligned), 8 to 24 bytes.
    let len = match layout {
        Layout::V6 => 16,
        Layout::V7 => (usize::try_from(size).unwrap_or(usize::MAX).clamp(8, 24)) / 8 * 8,
    };
    bytes.resize(len, 0);
    let ptr = g.place(&bytes);
    // SAFETY: `len` bytes of the layout's struct, 8-aligned (the page end minus a multiple of 8).
    unsafe { rocprofiler::set_client_name(ptr.cast(), layout, CLIENT_NAME) };
    let after = g.read(ptr, len);
    let mut expected = bytes.clone();
    let name = (CLIENT_NAME.as_ptr() as usize as u64).to_le_bytes();
    match layout {
        Layout::V6 => expected[..8].copy_from_slice(&name),
        Layout::V7 if size >= 16 => expected[8..16].copy_from_slice(&name),
        Layout::V7 => {}
    }
    assert_eq!(after, expected, "{layout:?} client id with size {size}");
    // SAFETY: null is allowed.
    unsafe { rocprofiler::set_client_name(std::ptr::null_mut(), layout, CLIENT_NAME) };
}

fn dispatch(g: &Guarded, body: &[u8]) {
    let word = |at: usize| u32::from_le_bytes([0, 1, 2, 3].map(|i| body.get(at + i).copied().unwrap_or(0)));
    let (category, kind) = (word(0), word(4));
    let mut bytes = body.get(8..).unwrap_or_default().to_vec();
    if bytes.len() < 8 {
        bytes.resize(8, 0);
    }
    let size = u64_at(&bytes, 0);
    const RECORD: usize = 184;
    let readable = match usize::try_from(size) {
        Ok(s) if s <= RECORD => s.max(8),
        _ => bytes.len().max(RECORD),
    };
    bytes.resize(readable, 0);
    let ptr = g.place(&bytes);
    let ours = category == rocprofiler::BUFFER_CATEGORY_TRACING && kind == rocprofiler::BUFFER_KIND_KERNEL_DISPATCH as u32;
    let header = rocprofiler::RecordHeader { category, kind, payload: ptr.cast() };
    // SAFETY: a valid header whose payload is readable for what its `size` promises.
    let got = unsafe { rocprofiler::kernel_dispatch(&header) };
    let mut padded = bytes.clone();
    padded.resize(padded.len().max(RECORD), 0);
    let covered = usize::try_from(size).unwrap_or(usize::MAX).min(RECORD);
    padded[covered.max(8)..].fill(0);
    let u32_at = |at: usize| u32::from_le_bytes(padded[at..at + 4].try_into().unwrap());
    let (start, end) = (u64_at(&padded, 40), u64_at(&padded, 48));
    match got {
        Err(rocprofiler::DispatchError::OtherKind) => assert!(!ours, "category {category} kind {kind} is ours"),
        Err(rocprofiler::DispatchError::Malformed) => {
            assert!(ours, "another kind's record judged malformed");
            assert!(size < rocprofiler::KERNEL_DISPATCH_RECORD_MIN as u64 || end < start, "size {size}, {start}..{end} rejected");
        }
        Ok(d) => {
            assert!(ours && size >= rocprofiler::KERNEL_DISPATCH_RECORD_MIN as u64 && end >= start, "size {size} accepted");
            assert_eq!((d.correlation_internal, d.correlation_external, d.thread_id), (u64_at(&padded, 16), u64_at(&padded, 24), u64_at(&padded, 32)));
            assert_eq!((d.start_ns, d.end_ns), (start, end));
            assert_eq!((d.agent_id, d.queue_id, d.kernel_id, d.dispatch_id), (u64_at(&padded, 64), u64_at(&padded, 72), u64_at(&padded, 80), u64_at(&padded, 88)));
            assert_eq!((d.workgroup_size.x, d.workgroup_size.y, d.workgroup_size.z), (u32_at(104), u32_at(108), u32_at(112)));
            assert_eq!((d.grid_size.x, d.grid_size.y, d.grid_size.z), (u32_at(116), u32_at(120), u32_at(124)));
        }
    }
    let null = rocprofiler::RecordHeader { category, kind, payload: std::ptr::null_mut() };
    // SAFETY: a null payload is allowed.
    let got = unsafe { rocprofiler::kernel_dispatch(&null) };
    assert_eq!(got.err(), Some(if ours { rocprofiler::DispatchError::Malformed } else { rocprofiler::DispatchError::OtherKind }));
    // SAFETY: a null header is allowed.
    assert_eq!(unsafe { rocprofiler::kernel_dispatch(std::ptr::null()) }.err(), Some(rocprofiler::DispatchError::Malformed));
}

/// A HIP runtime API buffer record (the join's launch calls): `[v7][category][kind][record]`,
/// placed with exactly what its `size` promises readable (at least 8 bytes).
fn hip_api(g: &Guarded, body: &[u8]) {
    let layout = if body.first().copied().unwrap_or(0) & 1 == 1 { Layout::V7 } else { Layout::V6 };
    let word = |at: usize| u32::from_le_bytes([0, 1, 2, 3].map(|i| body.get(1 + at + i).copied().unwrap_or(0)));
    let (category, kind) = (word(0), word(4));
    let mut bytes = body.get(9..).unwrap_or_default().to_vec();
    if bytes.len() < 8 {
        bytes.resize(8, 0);
    }
    let size = u64_at(&bytes, 0);
    let full = if layout == Layout::V7 { 64 } else { 56 };
    let readable = match usize::try_from(size) {
        Ok(s) if s <= full => s.max(8),
        _ => bytes.len().max(full),
    };
    bytes.resize(readable, 0);
    let ptr = g.place(&bytes);
    let ours = category == rocprofiler::BUFFER_CATEGORY_TRACING && kind == rocprofiler::BUFFER_KIND_HIP_RUNTIME_API as u32;
    let header = rocprofiler::RecordHeader { category, kind, payload: ptr.cast() };
    // SAFETY: a valid header whose payload is readable for what its `size` promises.
    let got = unsafe { rocprofiler::hip_api_call(&header, layout) };
    let mut padded = bytes.clone();
    padded.resize(padded.len().max(full), 0);
    let at = if layout == Layout::V7 { 40 } else { 32 };
    let (start, end, thread) = (u64_at(&padded, at), u64_at(&padded, at + 8), u64_at(&padded, at + 16));
    match got {
        Err(rocprofiler::DispatchError::OtherKind) => assert!(!ours, "category {category} kind {kind} is ours"),
        Err(rocprofiler::DispatchError::Malformed) => {
            assert!(ours, "another kind's record judged malformed");
            assert!(size < full as u64 || end < start, "{layout:?} size {size}, {start}..{end} rejected");
        }
        Ok(c) => {
            assert!(ours && size >= full as u64 && end >= start, "{layout:?} size {size} accepted");
            assert_eq!((c.operation, c.correlation_internal), (i32_at(&padded, 12), u64_at(&padded, 16)));
            assert_eq!((c.start_ns, c.end_ns, c.thread_id), (start, end, thread));
        }
    }
    let null = rocprofiler::RecordHeader { category, kind, payload: std::ptr::null_mut() };
    // SAFETY: a null payload is allowed.
    let got = unsafe { rocprofiler::hip_api_call(&null, layout) };
    assert_eq!(got.err(), Some(if ours { rocprofiler::DispatchError::Malformed } else { rocprofiler::DispatchError::OtherKind }));
}

/// A MEMORY_COPY buffer record: `[category][kind][record]`, placed with exactly what its `size`
/// promises readable (at least 8 bytes, at most 96).
fn memory_copy(g: &Guarded, body: &[u8]) {
    let word = |at: usize| u32::from_le_bytes([0, 1, 2, 3].map(|i| body.get(at + i).copied().unwrap_or(0)));
    let (category, kind) = (word(0), word(4));
    let mut bytes = body.get(8..).unwrap_or_default().to_vec();
    if bytes.len() < 8 {
        bytes.resize(8, 0);
    }
    let size = u64_at(&bytes, 0);
    let readable = match usize::try_from(size) {
        Ok(s) if s <= 96 => s.max(8),
        _ => bytes.len().max(96),
    };
    bytes.resize(readable, 0);
    let ptr = g.place(&bytes);
    let ours = category == rocprofiler::BUFFER_CATEGORY_TRACING && kind == rocprofiler::BUFFER_KIND_MEMORY_COPY as u32;
    let header = rocprofiler::RecordHeader { category, kind, payload: ptr.cast() };
    // SAFETY: a valid header whose payload is readable for what its `size` promises.
    let got = unsafe { rocprofiler::memory_copy(&header) };
    let mut padded = bytes.clone();
    padded.resize(padded.len().max(80), 0);
    let (start, end) = (u64_at(&padded, 40), u64_at(&padded, 48));
    match got {
        Err(rocprofiler::DispatchError::OtherKind) => assert!(!ours, "category {category} kind {kind} is ours"),
        Err(rocprofiler::DispatchError::Malformed) => {
            assert!(ours, "another kind's record judged malformed");
            assert!(size < 80 || end < start, "size {size}, {start}..{end} rejected");
        }
        Ok(c) => {
            assert!(ours && size >= 80 && end >= start, "size {size} accepted");
            assert_eq!((c.operation, c.correlation_internal, c.correlation_external), (i32_at(&padded, 12), u64_at(&padded, 16), u64_at(&padded, 24)));
            assert_eq!((c.thread_id, c.start_ns, c.end_ns), (u64_at(&padded, 32), start, end));
            assert_eq!((c.dst_agent_id, c.src_agent_id, c.bytes), (u64_at(&padded, 56), u64_at(&padded, 64), u64_at(&padded, 72)));
        }
    }
    let null = rocprofiler::RecordHeader { category, kind, payload: std::ptr::null_mut() };
    // SAFETY: a null payload is allowed.
    let got = unsafe { rocprofiler::memory_copy(&null) };
    assert_eq!(got.err(), Some(if ours { rocprofiler::DispatchError::Malformed } else { rocprofiler::DispatchError::OtherKind }));
}

fn target(g: &Guarded, input: &[u8]) {
    let _running = guard::running(input);
    let body = input.get(1..).unwrap_or_default();
    match input.first().copied().unwrap_or(0) % 7 {
        0 => record(g, body),
        1 => payload(g, body),
        2 => c_string(g, body),
        3 => client_id(g, body),
        4 => dispatch(g, body),
        5 => hip_api(g, body),
        _ => memory_copy(g, body),
    }
}

/// A memory copy record of `size` bytes (96 written: 7.0's layout) with recognizable fields.
fn memory_copy_seed(category: u32, kind: u32, size: u64, start: u64, end: u64) -> Vec<u8> {
    let mut r = [0u8; 96];
    r[0..8].copy_from_slice(&size.to_le_bytes());
    r[8..12].copy_from_slice(&10i32.to_le_bytes());
    r[12..16].copy_from_slice(&4i32.to_le_bytes());
    for (at, v) in [(16, 77u64), (24, 0x0000_0002_0000_0005), (32, 4242), (40, start), (48, end), (56, 0x5000), (64, 0x6000), (72, 1 << 22), (80, 0xdead), (88, 0xbeef)] {
        r[at..at + 8].copy_from_slice(&v.to_le_bytes());
    }
    let cut = usize::try_from(size).unwrap_or(usize::MAX).min(96);
    [&[6u8][..], &category.to_le_bytes(), &kind.to_le_bytes(), &r[..cut.max(8)]].concat()
}

// ---------------------------------------------------------------------------------------------
// Seeds.

/// A callback record of `layout` with recognizable fields: thread 4242, correlation 77, kind
/// MARKER_CORE_API (7), operation 1 (roctxRangePushA), phase ENTER (1), a payload pointer.
fn record_bytes(layout: Layout) -> Vec<u8> {
    let mut r = vec![0u8; layout.record_size()];
    let (kind, operation, phase, payload) = offsets(layout);
    r[0..8].copy_from_slice(&1u64.to_le_bytes());
    r[8..16].copy_from_slice(&4242u64.to_le_bytes());
    r[16..24].copy_from_slice(&77u64.to_le_bytes());
    r[kind..kind + 4].copy_from_slice(&7i32.to_le_bytes());
    r[operation..operation + 4].copy_from_slice(&1i32.to_le_bytes());
    r[phase..phase + 4].copy_from_slice(&1i32.to_le_bytes());
    r[payload..payload + 8].copy_from_slice(&0x7fff_dead_beefu64.to_le_bytes());
    r
}

fn record_seed(version: u32, bytes: &[u8]) -> Vec<u8> {
    [&[0u8][..], &version.to_le_bytes(), bytes].concat()
}

fn payload_seed(needed: u8, size: u64, words: &[u64]) -> Vec<u8> {
    let mut out = vec![1, needed];
    out.extend_from_slice(&size.to_le_bytes());
    for w in words {
        out.extend_from_slice(&w.to_le_bytes());
    }
    out
}

fn c_string_seed(max: u16, text: &[u8]) -> Vec<u8> {
    [&[2u8][..], &max.to_le_bytes(), text].concat()
}

fn client_seed(v7: bool, size: u64) -> Vec<u8> {
    let mut out = vec![3, u8::from(v7)];
    out.extend_from_slice(&size.to_le_bytes());
    out.extend_from_slice(&[0xaa; 16]);
    out
}

/// A dispatch record of `size` bytes (at least 184 written) with recognizable fields.
fn dispatch_seed(category: u32, kind: u32, size: u64, start: u64, end: u64) -> Vec<u8> {
    let mut r = [0u8; 184];
    r[0..8].copy_from_slice(&size.to_le_bytes());
    r[8..12].copy_from_slice(&11i32.to_le_bytes());
    r[12..16].copy_from_slice(&2i32.to_le_bytes());
    for (at, v) in [(16, 77u64), (24, 0x0000_0002_0000_0005), (32, 4242), (40, start), (48, end), (56, 72), (64, 0x5000), (72, 0x10), (80, 21), (88, 9)] {
        r[at..at + 8].copy_from_slice(&v.to_le_bytes());
    }
    for (at, v) in [(104, 256u32), (108, 1), (112, 1), (116, 65_536), (120, 2), (124, 1)] {
        r[at..at + 4].copy_from_slice(&v.to_le_bytes());
    }
    let cut = usize::try_from(size).unwrap_or(usize::MAX).min(184);
    [&[4u8][..], &category.to_le_bytes(), &kind.to_le_bytes(), &r[..cut.max(8)]].concat()
}

/// A HIP API record of `layout` of `size` bytes (the full record written) with recognizable
/// fields: hipLaunchKernel-like operation 43, correlation 77, thread 4242.
fn hip_api_seed(v7: bool, category: u32, kind: u32, size: u64, start: u64, end: u64) -> Vec<u8> {
    let full = if v7 { 64 } else { 56 };
    let mut r = vec![0u8; full];
    r[0..8].copy_from_slice(&size.to_le_bytes());
    r[8..12].copy_from_slice(&5i32.to_le_bytes());
    r[12..16].copy_from_slice(&43i32.to_le_bytes());
    r[16..24].copy_from_slice(&77u64.to_le_bytes());
    let at = if v7 { 40 } else { 32 };
    for (i, v) in [start, end, 4242].into_iter().enumerate() {
        r[at + 8 * i..at + 8 * i + 8].copy_from_slice(&v.to_le_bytes());
    }
    let cut = usize::try_from(size).unwrap_or(usize::MAX).min(full).max(8);
    [&[5u8, u8::from(v7)][..], &category.to_le_bytes(), &kind.to_le_bytes(), &r[..cut]].concat()
}

fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let (v6, v7) = (record_bytes(Layout::V6), record_bytes(Layout::V7));
    let ptr = 0x7fff_0000_1000u64;
    vec![
        ("record_v6_sdk_0.4.0.bin", record_seed(400, &v6)),
        ("record_v6_sdk_0.6.0.bin", record_seed(600, &v6)),
        ("record_v6_last_0.99.99.bin", record_seed(9_999, &v6)),
        ("record_v7_sdk_1.0.0.bin", record_seed(10_000, &v7)),
        ("record_v7_last_1.99.99.bin", record_seed(19_999, &v7)),
        ("record_future_sdk_2.0.0.bin", record_seed(20_000, &[v7.as_slice(), &[0; 8]].concat())),
        ("record_old_sdk_0.3.99.bin", record_seed(399, &v6)),
        ("record_version_max.bin", record_seed(u32::MAX, &v7)),
        ("record_v6_bytes_for_v7.bin", record_seed(10_000, &v6)),
        ("record_v7_bytes_for_v6.bin", record_seed(600, &v7)),
        ("record_one_short.bin", record_seed(10_000, &v7[..63])),
        ("record_empty.bin", record_seed(600, &[])),
        ("payload_push_size_32.bin", payload_seed(16, 32, &[ptr, 0, 0])),
        ("payload_range_start_retval.bin", payload_seed(32, 32, &[ptr, 0, 9])),
        ("payload_size_8_needs_16.bin", payload_seed(16, 8, &[])),
        ("payload_size_15_needs_16.bin", payload_seed(16, 15, &[ptr])),
        ("payload_size_20_partial_word.bin", payload_seed(16, 20, &[ptr, 0x1111_2222])),
        ("payload_size_0.bin", payload_seed(0, 0, &[])),
        ("payload_size_future_48.bin", payload_seed(16, 48, &[ptr, 1, 2, 3, 4])),
        ("payload_size_u64_max.bin", payload_seed(32, u64::MAX, &[ptr, 1, 2])),
        ("payload_size_i64_min.bin", payload_seed(16, i64::MIN as u64, &[ptr])),
        ("payload_truncated_size_field.bin", vec![1, 16, 0x20, 0]),
        ("cstring_label.bin", c_string_seed(4096, b"Thunk:#hlo_op=fusion.3,unique_hlo_op_id=7#")),
        ("cstring_capped.bin", c_string_seed(3, b"abcdef")),
        ("cstring_cap_zero.bin", c_string_seed(0, b"abc")),
        ("cstring_embedded_nul.bin", c_string_seed(100, b"ab\0cd")),
        ("cstring_empty.bin", c_string_seed(10, b"")),
        ("cstring_not_utf8.bin", c_string_seed(u16::MAX, &[0xff, 0xfe, 0xc3, 0x28, 0x80])),
        ("client_v6.bin", client_seed(false, 0)),
        ("client_v7_size_24.bin", client_seed(true, 24)),
        ("client_v7_size_16.bin", client_seed(true, 16)),
        ("client_v7_size_15.bin", client_seed(true, 15)),
        ("client_v7_size_0.bin", client_seed(true, 0)),
        ("client_v7_size_future_u64_max.bin", client_seed(true, u64::MAX)),
        ("dispatch_184.bin", dispatch_seed(1, 11, 184, 1000, 2000)),
        ("dispatch_min_128.bin", dispatch_seed(1, 11, 128, 1000, 2000)),
        ("dispatch_127_short.bin", dispatch_seed(1, 11, 127, 1000, 2000)),
        ("dispatch_future_256.bin", [dispatch_seed(1, 11, 256, 1000, 2000), vec![0xee; 72]].concat()),
        ("dispatch_size_u64_max.bin", dispatch_seed(1, 11, u64::MAX, 1000, 2000)),
        ("dispatch_end_before_start.bin", dispatch_seed(1, 11, 184, 2000, 1000)),
        ("dispatch_memory_copy_kind.bin", dispatch_seed(1, 12, 184, 1000, 2000)),
        ("dispatch_pc_sampling_category.bin", dispatch_seed(2, 11, 184, 1000, 2000)),
        ("dispatch_size_0.bin", dispatch_seed(1, 11, 0, 0, 0)),
        ("memory_copy_v6_80.bin", memory_copy_seed(1, 10, 80, 1000, 2000)),
        ("memory_copy_v7_96.bin", memory_copy_seed(1, 10, 96, 1000, 2000)),
        ("memory_copy_72_short.bin", memory_copy_seed(1, 10, 72, 1000, 2000)),
        ("memory_copy_end_before_start.bin", memory_copy_seed(1, 10, 96, 2000, 1000)),
        ("memory_copy_dispatch_kind.bin", memory_copy_seed(1, 11, 96, 1000, 2000)),
        ("hip_api_v6_56.bin", hip_api_seed(false, 1, 5, 56, 1000, 2000)),
        ("hip_api_v7_64.bin", hip_api_seed(true, 1, 5, 64, 1000, 2000)),
        ("hip_api_v7_record_read_as_v6.bin", hip_api_seed(false, 1, 5, 64, 1000, 2000)),
        ("hip_api_v6_record_read_as_v7_short.bin", hip_api_seed(true, 1, 5, 56, 1000, 2000)),
        ("hip_api_55_short.bin", hip_api_seed(false, 1, 5, 55, 1000, 2000)),
        ("hip_api_ext_larger_96.bin", [hip_api_seed(true, 1, 5, 96, 1000, 2000), vec![0xee; 32]].concat()),
        ("hip_api_end_before_start.bin", hip_api_seed(true, 1, 5, 64, 2000, 1000)),
        ("hip_api_kernel_dispatch_kind.bin", hip_api_seed(false, 1, 11, 56, 1000, 2000)),
        ("hip_api_size_u64_max.bin", hip_api_seed(true, 1, 5, u64::MAX, 1000, 2000)),
    ]
}

// ---------------------------------------------------------------------------------------------
// Tests.

#[test]
fn fuzz_rocprofiler_decoders() {
    guard::install_segv_reporter();
    let guarded = Guarded::new();
    let outcome = mutate::run(&ROCPROFILER, &|input: &[u8]| target(&guarded, input));
    mutate::assert_clean(&ROCPROFILER, &outcome);
}

/// The guard page works and the reporter names the input: in a child process (the fault kills
/// it), a read one byte past a placed buffer must die of SIGSEGV after printing the running
/// input as hex. Without this, a passing decoder test would prove nothing about over-reads.
/// The child is this test binary run again (not a fork of the multithreaded test harness,
/// whose other threads may hold locks the child would then need).
#[test]
fn the_guard_page_catches_a_read_past_the_buffer() {
    const CHILD: &str = "ROCTX_FUZZ_GUARD_PAGE_CHILD";
    if std::env::var_os(CHILD).is_some() {
        let g = Guarded::new();
        guard::install_segv_reporter();
        let input = [0xab, 0xcd, 0x01];
        let _running = guard::running(&input);
        let ptr = g.place(&input);
        // SAFETY: deliberately one past the end: the guard page must fault here.
        let v = unsafe { std::ptr::read_volatile(ptr.add(3)) };
        // SAFETY: only reached if the guard failed.
        unsafe { libc::_exit(i32::from(v) + 10) };
    }
    let exe = std::env::current_exe().unwrap();
    let child = std::process::Command::new(exe)
        .args(["--exact", "the_guard_page_catches_a_read_past_the_buffer", "--test-threads", "1", "--nocapture"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&child.stderr);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(child.status.signal(), Some(libc::SIGSEGV), "status {:?}, stderr {text:?}", child.status);
    assert!(text.contains("SIGSEGV") && text.contains("abcd01"), "reporter output: {text:?}");
}

/// Rewrites the generated seeds (other files are kept):
/// `cargo test -p roctx_sys --test fuzz_rocprofiler -- --ignored regenerate_corpus`.
#[test]
#[ignore = "writes rust/fuzz/corpus/rocprofiler; run by hand after a layout change"]
fn regenerate_corpus() {
    let dir = mutate::corpus_dir(ROCPROFILER.manifest_dir, ROCPROFILER.name);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, bytes) in seeds() {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}
