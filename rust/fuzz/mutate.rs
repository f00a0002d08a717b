//! The bounded, deterministic fuzz loop the `tests/fuzz_*.rs` targets share (see
//! `rust/fuzz/README.md`). Not a crate: each target pulls it in with
//! `#[path = "../../fuzz/mutate.rs"] mod mutate;`, so no manifest, lock file or Bazel vendoring
//! changes for it.
//!
//! - [`Rng`]: xorshift64*, seeded from the target's name, the seed file's name and
//!   `ROCTX_FUZZ_SEED`, so every run of a given build executes exactly the same inputs;
//! - [`mutate`]: a stack of 1-4 byte-level mutations (bit flip, interesting bytes, truncation,
//!   slice duplication and deletion, splicing with another corpus entry, protobuf varint
//!   boundaries, 8-byte integer extremes);
//! - [`run`]: every file of a corpus directory, then `ROCTX_FUZZ_ITERS` (else the target's
//!   default) mutations of each, each input in its own `catch_unwind`; panics are collected
//!   (seed, iteration, message, location, input as hex) and written under
//!   `target/fuzz-failures/<target>/` so they can be copied into the corpus.
#![allow(dead_code)]

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Once;
use std::time::{Duration, Instant};

/// Mutations per seed when `ROCTX_FUZZ_ITERS` is unset come from the target; this raises them.
pub const ITERS_VAR: &str = "ROCTX_FUZZ_ITERS";
/// Changes the random stream (default 0), to explore new inputs in long local runs.
pub const SEED_VAR: &str = "ROCTX_FUZZ_SEED";
/// A time budget in seconds for the whole run, shared equally by the seeds: each seed is
/// mutated until its share is spent (or `ROCTX_FUZZ_ITERS` is reached, if also set). Inputs
/// stay reproducible (seed, iteration, stream); only how many run depends on the machine.
pub const SECONDS_VAR: &str = "ROCTX_FUZZ_SECONDS";

/// xorshift64* (Vigna): small, fast, and the same sequence on every platform.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        // splitmix64 of the seed, so that nearby seeds give unrelated streams; never 0.
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        Rng((z ^ (z >> 31)) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform-ish in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// True once in `n` times.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    pub fn byte(&mut self) -> u8 {
        (self.next_u64() >> 56) as u8
    }
}

/// FNV-1a, to derive a stable RNG seed from names.
pub fn fnv(parts: &[&[u8]]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for part in parts {
        for &b in *part {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h ^= 0xff;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Bytes that sit on a boundary: zero, sign bit, all ones.
pub const INTERESTING_BYTES: [u8; 4] = [0x00, 0x7f, 0x80, 0xff];

/// 64-bit values that break arithmetic on ids and timestamps.
pub const INTERESTING_I64: [i64; 10] = [
    i64::MIN,
    i64::MAX,
    -1,
    0,
    1,
    i64::MIN + 1,
    i64::MAX - 1,
    u32::MAX as i64,
    1 << 32,       // XLA's first remapped NVTX line id
    (2 << 32) - 1, // just below the first remapped ROCTX line id
];

/// LEB128 of `v`, as protobuf writes varints.
pub fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(10);
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}

/// Varints at every length boundary, negative int64s (10 bytes), and malformed ones: an
/// 11-byte varint, a continuation byte with nothing after it, a non-minimal zero.
pub fn varint_boundaries() -> Vec<Vec<u8>> {
    let values = [
        0u64,
        0x7f,
        0x80,
        0x3fff,
        0x4000,
        0x1f_ffff,
        0x20_0000,
        u64::from(u32::MAX),
        1 << 32,
        2 << 32,
        i64::MAX as u64,
        i64::MIN as u64,
        u64::MAX,
    ];
    let mut out: Vec<Vec<u8>> = values.iter().map(|&v| varint(v)).collect();
    out.push([[0xff; 10].as_slice(), &[0x01]].concat());
    out.push(vec![0x80]);
    out.push(vec![0x80, 0x80, 0x00]);
    out
}

/// Applies one to four random mutations to `input`; `corpus` supplies splice partners.
/// The result is at most `max_len` bytes.
pub fn mutate(rng: &mut Rng, input: &[u8], corpus: &[Vec<u8>], max_len: usize) -> Vec<u8> {
    let mut data = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        mutate_once(rng, &mut data, corpus);
        data.truncate(max_len);
    }
    data
}

fn mutate_once(rng: &mut Rng, data: &mut Vec<u8>, corpus: &[Vec<u8>]) {
    let len = data.len();
    // Structure-aware, half the time on protobuf targets: a field's value, or a whole field,
    // changed with every enclosing length prefix rewritten, so the result still decodes.
    if protobuf_aware() && rng.one_in(2) {
        if let Some(out) = protobuf_mutation(rng, data) {
            *data = out;
            return;
        }
    }
    match rng.below(11) {
        // Bit flip.
        0 if len > 0 => {
            let at = rng.below(len);
            data[at] ^= 1 << rng.below(8);
        }
        // A byte set to an interesting value.
        1 if len > 0 => {
            let at = rng.below(len);
            data[at] = *rng.pick(&INTERESTING_BYTES);
        }
        // A random byte.
        2 if len > 0 => {
            let at = rng.below(len);
            data[at] = rng.byte();
        }
        // Truncate.
        3 if len > 0 => data.truncate(rng.below(len)),
        // Duplicate a slice in place (repeated fields, repeated lines).
        4 if len > 0 => {
            let start = rng.below(len);
            let end = start + 1 + rng.below((len - start).min(256));
            let copy = data[start..end].to_vec();
            let at = rng.below(len + 1);
            data.splice(at..at, copy);
        }
        // Delete a slice.
        5 if len > 0 => {
            let start = rng.below(len);
            let end = start + 1 + rng.below((len - start).min(64));
            data.drain(start..end);
        }
        // Splice: our prefix, another entry's suffix.
        6 if !corpus.is_empty() => {
            let other = rng.pick(corpus);
            let keep = rng.below(len + 1);
            let from = rng.below(other.len() + 1);
            data.truncate(keep);
            data.extend_from_slice(&other[from..]);
        }
        // Insert (or overwrite with) a varint boundary.
        7 => {
            let v = rng.pick(&varint_boundaries()).clone();
            let at = rng.below(len + 1);
            if rng.one_in(2) || at + v.len() > len {
                data.splice(at..at, v);
            } else {
                data[at..at + v.len()].copy_from_slice(&v);
            }
        }
        // Overwrite 8 bytes with an integer extreme.
        8 if len >= 8 => {
            let at = rng.below(len - 7);
            data[at..at + 8].copy_from_slice(&rng.pick(&INTERESTING_I64).to_le_bytes());
        }
        // Overwrite 4 bytes with a 32-bit extreme (versions, sizes, kinds).
        9 if len >= 4 => {
            let at = rng.below(len - 3);
            let v = *rng.pick(&[0u32, 1, 0x7f, 0x80, 0xff, 0x7fff_ffff, 0x8000_0000, u32::MAX]);
            data[at..at + 4].copy_from_slice(&v.to_le_bytes());
        }
        // Insert a few random bytes.
        _ => {
            let at = rng.below(len + 1);
            let n = 1 + rng.below(8);
            let bytes: Vec<u8> = (0..n).map(|_| rng.byte()).collect();
            data.splice(at..at, bytes);
        }
    }
}

thread_local! {
    static PROTOBUF: Cell<bool> = const { Cell::new(false) };
}

/// Whether [`mutate`] also applies structure-aware protobuf mutations on this thread.
fn protobuf_aware() -> bool {
    PROTOBUF.with(Cell::get)
}

/// Turns the structure-aware protobuf mutations on (for this thread's runs).
fn set_protobuf_aware(on: bool) {
    PROTOBUF.with(|p| p.set(on));
}

/// One protobuf field as found on the wire: its key and value.
#[derive(Debug, Clone)]
struct PbField {
    field: u64,
    value: PbValue,
}

#[derive(Debug, Clone)]
enum PbValue {
    Varint(u64),
    Fixed64([u8; 8]),
    Fixed32([u8; 4]),
    /// Length-delimited: a nested message when its bytes parse as one, else opaque bytes.
    Bytes(Vec<u8>, Option<Vec<PbField>>),
}

fn read_varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// Parses `bytes` as a protobuf message, all of it, or `None`.
fn pb_parse(bytes: &[u8], depth: usize) -> Option<Vec<PbField>> {
    let mut at = 0;
    let mut out = Vec::new();
    while at < bytes.len() {
        let key = read_varint(bytes, &mut at)?;
        let (field, wire) = (key >> 3, key & 7);
        if field == 0 {
            return None;
        }
        let value = match wire {
            0 => PbValue::Varint(read_varint(bytes, &mut at)?),
            1 => {
                let v = bytes.get(at..at + 8)?.try_into().ok()?;
                at += 8;
                PbValue::Fixed64(v)
            }
            5 => {
                let v = bytes.get(at..at + 4)?.try_into().ok()?;
                at += 4;
                PbValue::Fixed32(v)
            }
            2 => {
                let len = usize::try_from(read_varint(bytes, &mut at)?).ok()?;
                let body = bytes.get(at..at.checked_add(len)?)?.to_vec();
                at += len;
                let nested = if depth < 16 && !body.is_empty() { pb_parse(&body, depth + 1) } else { None };
                PbValue::Bytes(body, nested)
            }
            _ => return None,
        };
        out.push(PbField { field, value });
    }
    Some(out)
}

fn pb_write(fields: &[PbField]) -> Vec<u8> {
    let mut out = Vec::new();
    for f in fields {
        let wire = match f.value {
            PbValue::Varint(_) => 0,
            PbValue::Fixed64(_) => 1,
            PbValue::Fixed32(_) => 5,
            PbValue::Bytes(..) => 2,
        };
        out.extend(varint(f.field << 3 | wire));
        match &f.value {
            PbValue::Varint(v) => out.extend(varint(*v)),
            PbValue::Fixed64(b) => out.extend_from_slice(b),
            PbValue::Fixed32(b) => out.extend_from_slice(b),
            PbValue::Bytes(body, nested) => {
                let body = nested.as_ref().map_or_else(|| body.clone(), |n| pb_write(n));
                out.extend(varint(body.len() as u64));
                out.extend(body);
            }
        }
    }
    out
}

/// Number of fields in the tree (every nesting level).
fn pb_count(fields: &[PbField]) -> usize {
    fields.iter().map(|f| 1 + if let PbValue::Bytes(_, Some(n)) = &f.value { pb_count(n) } else { 0 }).sum()
}

/// Varint values that break ids, timestamps, offsets and lengths.
const PB_VARINTS: [u64; 12] = [
    0,
    1,
    0x7f,
    0x80,
    u32::MAX as u64,
    1 << 32,
    2 << 32,
    i64::MAX as u64,
    i64::MIN as u64,
    u64::MAX,
    (i64::MAX - 1) as u64,
    (i64::MIN + 1) as u64,
];

/// Mutates field number `target` (pre-order) of the tree; `seen` counts fields visited.
fn pb_mutate_at(rng: &mut Rng, fields: &mut Vec<PbField>, target: usize, seen: &mut usize) -> bool {
    let mut i = 0;
    while i < fields.len() {
        if *seen == target {
            match rng.below(6) {
                // Duplicate the field (one more line, event, plane, map entry...).
                0 => {
                    let copy = fields[i].clone();
                    fields.insert(i + rng.below(fields.len() - i + 1), copy);
                }
                // Drop it.
                1 => {
                    fields.remove(i);
                }
                // Move it to the end (order-dependent merges; a repeated scalar field).
                2 => {
                    let f = fields.remove(i);
                    fields.push(f);
                }
                _ => match &mut fields[i].value {
                    PbValue::Varint(v) => {
                        *v = match rng.below(4) {
                            0 => v.wrapping_add(1),
                            1 => v.wrapping_sub(1),
                            _ => *rng.pick(&PB_VARINTS),
                        }
                    }
                    PbValue::Fixed64(b) => *b = rng.pick(&INTERESTING_I64).to_le_bytes(),
                    PbValue::Fixed32(b) => *b = (rng.next_u64() as u32).to_le_bytes(),
                    PbValue::Bytes(body, nested) => {
                        // Same-named things (planes, lines, metadata) collide by name: take
                        // another string's bytes, or empty it, or change a byte.
                        *nested = None;
                        match rng.below(3) {
                            0 => body.clear(),
                            1 if !body.is_empty() => {
                                let at = rng.below(body.len());
                                body[at] = body[at].wrapping_add(1);
                            }
                            _ => body.push(b'/'),
                        }
                    }
                },
            }
            return true;
        }
        *seen += 1;
        if let PbValue::Bytes(_, Some(nested)) = &mut fields[i].value {
            if pb_mutate_at(rng, nested, target, seen) {
                return true;
            }
        }
        i += 1;
    }
    false
}

/// A structure-aware mutation of `data` if it parses as protobuf.
fn protobuf_mutation(rng: &mut Rng, data: &[u8]) -> Option<Vec<u8>> {
    let mut fields = pb_parse(data, 0)?;
    let n = pb_count(&fields);
    if n == 0 {
        return None;
    }
    let target = rng.below(n);
    pb_mutate_at(rng, &mut fields, target, &mut 0);
    Some(pb_write(&fields))
}

/// `bytes` as lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// The inverse of [`hex`] (whitespace ignored), for pasting a reported input into a test.
pub fn unhex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).expect("ascii"), 16).expect("hex digit"))
        .collect()
}

/// Overrides where the corpora are (`<dir>/<target>`): for a test binary run away from its
/// checkout.
pub const CORPUS_VAR: &str = "ROCTX_FUZZ_CORPUS";

/// `rust/fuzz/corpus/<target>` of the workspace that includes this file, or
/// `$ROCTX_FUZZ_CORPUS/<target>`.
pub fn corpus_dir(manifest_dir: &str, target: &str) -> PathBuf {
    match std::env::var_os(CORPUS_VAR) {
        Some(dir) => PathBuf::from(dir).join(target),
        None => Path::new(manifest_dir).join("../fuzz/corpus").join(target),
    }
}

/// Where failing inputs are written: `$CARGO_TARGET_DIR` or the workspace's `target/`.
pub fn failure_dir(manifest_dir: &str, target: &str) -> PathBuf {
    let root = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| Path::new(manifest_dir).join("../target"), PathBuf::from);
    root.join("fuzz-failures").join(target)
}

/// Every regular file of `dir` (not recursive; dot files and `*.md` skipped), sorted by name.
pub fn load_corpus(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("corpus {}: {e}", dir.display()));
    let mut out: Vec<(String, Vec<u8>)> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with('.') && !name.ends_with(".md"))
        .map(|name| {
            let bytes = std::fs::read(dir.join(&name)).unwrap_or_else(|e| panic!("{name}: {e}"));
            (name, bytes)
        })
        .collect();
    out.sort();
    out
}

/// One target's settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// Short name: the corpus directory and the failure directory are named after it.
    pub name: &'static str,
    /// `env!("CARGO_MANIFEST_DIR")` of the including crate.
    pub manifest_dir: &'static str,
    /// Mutations per seed when `ROCTX_FUZZ_ITERS` is unset (sized for ~10 s in a debug build).
    pub mutations_per_seed: usize,
    /// Mutated inputs are cut to this length.
    pub max_len: usize,
    /// Inputs are protobuf messages: also mutate them field by field (values at the varint
    /// boundaries, fields duplicated, dropped or moved), re-encoding the length prefixes.
    pub protobuf: bool,
    /// Panics tolerated while a reported bug is open: `(source file suffix, message substring)`.
    /// Each is counted and listed, not failed; the bug's own `#[ignore]`d test fails instead.
    pub known_bugs: &'static [(&'static str, &'static str)],
}

/// One panicking input.
#[derive(Debug, Clone)]
pub struct Failure {
    pub seed: String,
    /// 0 is the seed itself; n > 0 the n-th mutation of it.
    pub iteration: usize,
    pub message: String,
    pub location: String,
    pub input: Vec<u8>,
    pub saved_to: Option<PathBuf>,
}

/// What a run did.
#[derive(Debug, Default)]
pub struct Outcome {
    pub seeds: usize,
    pub inputs: u64,
    pub elapsed: Duration,
    /// New failures (fail the test).
    pub failures: Vec<Failure>,
    /// Failures matching `known_bugs`, by location (count, first input as hex).
    pub known: BTreeMap<String, (u64, String)>,
}

thread_local! {
    static CAPTURING: Cell<bool> = const { Cell::new(false) };
    static LAST_PANIC: RefCell<Option<(String, String)>> = const { RefCell::new(None) };
}

/// Installs (once) a panic hook that, on a thread running [`run`], records the message and
/// location quietly instead of printing a backtrace per input; other threads keep the default.
fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if CAPTURING.with(Cell::get) {
                let message = if let Some(s) = info.payload().downcast_ref::<&str>() {
                    (*s).to_owned()
                } else if let Some(s) = info.payload().downcast_ref::<String>() {
                    s.clone()
                } else {
                    "<non-string panic payload>".to_owned()
                };
                let location = info.location().map_or_else(|| "<unknown>".to_owned(), |l| format!("{}:{}:{}", l.file(), l.line(), l.column()));
                LAST_PANIC.with(|p| *p.borrow_mut() = Some((message, location)));
            } else {
                previous(info);
            }
        }));
    });
}

/// Runs `target` on one input, returning the panic (message, location) if it panicked.
pub fn run_one(target: &dyn Fn(&[u8]), input: &[u8]) -> Option<(String, String)> {
    install_hook();
    CAPTURING.with(|c| c.set(true));
    let result = panic::catch_unwind(AssertUnwindSafe(|| target(input)));
    CAPTURING.with(|c| c.set(false));
    match result {
        Ok(()) => None,
        Err(_) => Some(LAST_PANIC.with(|p| p.borrow_mut().take()).unwrap_or_else(|| ("<no message>".to_owned(), "<unknown>".to_owned()))),
    }
}

/// Mutations per seed: `ROCTX_FUZZ_ITERS` if set, else `default`.
pub fn mutations_per_seed(default: usize) -> usize {
    match std::env::var(ITERS_VAR) {
        Ok(v) => v.trim().parse().unwrap_or_else(|_| panic!("{ITERS_VAR}={v:?} is not a count")),
        Err(_) => default,
    }
}

/// The fuzz loop: each seed of the target's corpus, then its mutations.
pub fn run(config: &Config, target: &dyn Fn(&[u8])) -> Outcome {
    let dir = corpus_dir(config.manifest_dir, config.name);
    let corpus = load_corpus(&dir);
    assert!(!corpus.is_empty(), "empty corpus {}", dir.display());
    let all: Vec<Vec<u8>> = corpus.iter().map(|(_, b)| b.clone()).collect();
    let budget = std::env::var(SECONDS_VAR).ok().map(|v| v.trim().parse::<f64>().unwrap_or_else(|_| panic!("{SECONDS_VAR}={v:?} is not seconds")));
    let per_seed = match (budget, std::env::var_os(ITERS_VAR)) {
        (Some(_), None) => usize::MAX - 1,
        _ => mutations_per_seed(config.mutations_per_seed),
    };
    let seed_budget = budget.map(|b| Duration::from_secs_f64(b / corpus.len() as f64));
    let stream = std::env::var(SEED_VAR).ok().and_then(|v| v.trim().parse::<u64>().ok()).unwrap_or(0);
    let failure_dir = failure_dir(config.manifest_dir, config.name);
    let mut outcome = Outcome { seeds: corpus.len(), ..Outcome::default() };
    let mut per_location: BTreeMap<String, usize> = BTreeMap::new();
    set_protobuf_aware(config.protobuf);
    let started = Instant::now();
    for (name, seed) in &corpus {
        let mut rng = Rng::new(fnv(&[config.name.as_bytes(), name.as_bytes(), &stream.to_le_bytes()]));
        let seed_started = Instant::now();
        for iteration in 0..=per_seed {
            if iteration % 64 == 63 && seed_budget.is_some_and(|b| seed_started.elapsed() >= b) {
                break;
            }
            let input = if iteration == 0 { seed.clone() } else { mutate(&mut rng, seed, &all, config.max_len) };
            outcome.inputs += 1;
            let Some((message, location)) = run_one(target, &input) else { continue };
            if config.known_bugs.iter().any(|(file, text)| location.contains(file) && message.contains(text)) {
                let entry = outcome.known.entry(format!("{location}: {message}")).or_insert((0, hex(&input)));
                entry.0 += 1;
                continue;
            }
            // Keep (and save) the first few inputs per panic site; count the rest.
            let seen = per_location.entry(location.clone()).or_default();
            *seen += 1;
            if *seen > 3 {
                continue;
            }
            let saved_to = std::fs::create_dir_all(&failure_dir).ok().and_then(|()| {
                let path = failure_dir.join(format!("{name}-{iteration}-{stream}.bin"));
                std::fs::write(&path, &input).ok().map(|()| path)
            });
            outcome.failures.push(Failure { seed: name.clone(), iteration, message, location, input, saved_to });
        }
    }
    outcome.elapsed = started.elapsed();
    let mutations = match seed_budget {
        Some(b) => format!("{:.1} s of mutations", b.as_secs_f64()),
        None => format!("{per_seed} mutations"),
    };
    println!(
        "fuzz {}: {} inputs ({} seeds x (1 + {})) in {:.2} s, {} new failure site(s), {} known-bug panic(s)",
        config.name,
        outcome.inputs,
        outcome.seeds,
        mutations,
        outcome.elapsed.as_secs_f64(),
        per_location.len(),
        outcome.known.values().map(|(n, _)| n).sum::<u64>(),
    );
    for (site, (n, first)) in &outcome.known {
        println!("  known bug, {n} input(s): {site}\n    first input: {}", shorten(first));
    }
    outcome
}

fn shorten(hex: &str) -> &str {
    &hex[..hex.len().min(8192)]
}

/// Fails with every new failure: seed, iteration, panic, location, input as hex and its file.
pub fn assert_clean(config: &Config, outcome: &Outcome) {
    if outcome.failures.is_empty() {
        return;
    }
    let mut report = String::new();
    for f in &outcome.failures {
        let _ = writeln!(
            report,
            "seed {:?} iteration {}: panicked at {}: {}\n  input ({} bytes): {}{}\n  saved to: {}",
            f.seed,
            f.iteration,
            f.location,
            f.message,
            f.input.len(),
            shorten(&hex(&f.input)),
            if f.input.len() > 4096 { " ..." } else { "" },
            f.saved_to.as_ref().map_or_else(|| "<not saved>".to_owned(), |p| p.display().to_string()),
        );
    }
    panic!(
        "fuzz {}: {} failing input(s) (reproduce: copy a saved file into rust/fuzz/corpus/{}/ and rerun)\n{report}",
        config.name,
        outcome.failures.len(),
        config.name
    );
}

/// Runs the named corpus files alone, without mutations or known-bug filtering (what a bug's
/// `#[ignore]`d test does), and fails if any panics.
pub fn replay(config: &Config, files: &[&str], target: &dyn Fn(&[u8])) {
    let dir = corpus_dir(config.manifest_dir, config.name);
    let mut failures = Vec::new();
    for name in files {
        let input = std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{}/{name}: {e}", dir.display()));
        if let Some((message, location)) = run_one(target, &input) {
            failures.push(format!("{name}: panicked at {location}: {message}\n  input: {}", shorten(&hex(&input))));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
