//! The C header against the Rust mirrors: same structs, same fields in the same order, and the
//! header's static asserts (which the C compiler checks) state the sizes and offsets Rust has.
use std::collections::BTreeMap;
use std::mem::{offset_of, size_of};

use super::*;

/// A Rust mirror's size and (field, offset) list.
type Layout = (usize, Vec<(&'static str, usize)>);

/// The [`Layout`] of a Rust mirror.
macro_rules! layout {
    ($ty:ty: $($field:ident),+) => {
        (size_of::<$ty>(), vec![$((stringify!($field), offset_of!($ty, $field))),+])
    };
}

fn header() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../include/roctx_utils/roctx_utils.h");
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

/// `typedef struct NAME { ... } NAME;` -> field names in order (comments stripped).
fn header_structs(text: &str) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    let mut rest = text;
    while let Some(at) = rest.find("typedef struct ") {
        rest = &rest[at + "typedef struct ".len()..];
        let Some(open) = rest.find('{') else { break };
        let name = rest[..open].trim().to_owned();
        let close = rest.find('}').expect("a closing brace");
        if open > close || name.contains(' ') || name.contains(';') {
            continue; // a forward declaration
        }
        let body = &rest[open + 1..close];
        let fields = body
            .lines()
            .map(|l| l.split("/*").next().unwrap_or_default().trim())
            .filter(|l| l.ends_with(';'))
            .map(|l| l.trim_end_matches(';').rsplit([' ', '*']).next().unwrap_or_default().to_owned())
            .collect();
        out.insert(name, fields);
        rest = &rest[close..];
    }
    out
}

/// The values of `ROCTX_UTILS_ASSERT_SIZE(NAME, N)` and `ROCTX_UTILS_ASSERT_OFFSET(NAME, f, N)`.
fn header_asserts(text: &str) -> (BTreeMap<String, usize>, BTreeMap<(String, String), usize>) {
    let (mut sizes, mut offsets) = (BTreeMap::new(), BTreeMap::new());
    for line in text.lines().map(str::trim) {
        let args = |prefix: &str| {
            line.strip_prefix(prefix)
                .and_then(|r| r.strip_suffix(");"))
                .map(|r| r.split(',').map(|a| a.trim().to_owned()).collect::<Vec<_>>())
        };
        if let Some(a) = args("ROCTX_UTILS_ASSERT_SIZE(") {
            sizes.insert(a[0].clone(), a[1].parse().expect("a size"));
        } else if let Some(a) = args("ROCTX_UTILS_ASSERT_OFFSET(") {
            offsets.insert((a[0].clone(), a[1].clone()), a[2].parse().expect("an offset"));
        }
    }
    (sizes, offsets)
}

#[test]
fn header_matches_the_mirrors() {
    let text = header();
    let structs = header_structs(&text);
    let (sizes, offsets) = header_asserts(&text);
    let mirrors: [(&str, Layout); 5] = [
        (
            "roctx_utils_counters",
            layout!(CountersC: struct_size, strings_interned, string_pool_bytes, strings_truncated, strings_rejected, null_streams, panics_caught),
        ),
        ("roctx_utils_session_options", layout!(SessionOptionsC: struct_size, mode, _reserved, max_events_per_thread, max_label_bytes_per_thread)),
        ("roctx_utils_event", layout!(EventC: struct_size, kind, depth, tid, end_tid, start_ns, end_ns, label, label_len)),
        ("roctx_utils_capture_stats", (size_of::<CaptureStatsC>(), capture_stats_layout())),
        ("roctx_utils_buffer", layout!(BufferC: struct_size, data, len)),
    ];
    let mut checked_structs: Vec<_> = mirrors.iter().map(|(name, _)| name.to_string()).collect();
    checked_structs.sort();
    assert_eq!(structs.keys().cloned().collect::<Vec<_>>(), checked_structs, "every struct of the header has a mirror here");
    for (c_name, (size, fields)) in &mirrors {
        let header_fields = &structs[*c_name];
        let rust_fields: Vec<_> = fields.iter().map(|(f, _)| f.trim_start_matches('_')).collect();
        assert_eq!(header_fields, &rust_fields, "{c_name}: field order");
        assert_eq!(sizes.get(*c_name), Some(size), "{c_name}: the header's size assert");
        for (field, offset) in fields {
            let key = (c_name.to_string(), field.trim_start_matches('_').to_string());
            assert_eq!(offsets.get(&key), Some(offset), "{c_name}.{field}: the header's offset assert");
        }
    }
    assert_eq!(offsets.len(), mirrors.iter().map(|(_, (_, f))| f.len()).sum::<usize>(), "no assert for a field that does not exist");
}

/// `struct_size`, then every counter of [`Stats`] in its declaration order.
fn capture_stats_layout() -> Vec<(&'static str, usize)> {
    let base = offset_of!(CaptureStatsC, stats);
    std::iter::once(("struct_size", 0)).chain(Stats::FIELDS.iter().enumerate().map(|(i, f)| (*f, base + 8 * i))).collect()
}

#[test]
fn sized_writes_stop_at_the_callers_struct_size() {
    let mut old = [0u64; 3]; // a caller compiled when counters had two fields
    old[0] = 24;
    let counters = CountersC { struct_size: 56, strings_interned: 7, string_pool_bytes: 9, strings_truncated: 11, ..CountersC::default() };
    // SAFETY: `old` starts with its size and has that many writable bytes.
    assert_eq!(unsafe { write_sized(old.as_mut_ptr().cast::<CountersC>(), counters, 16) }, STATUS_OK);
    assert_eq!(old, [24, 7, 9]);
    let mut short = [8u64, 0];
    // SAFETY: as above.
    assert_eq!(unsafe { write_sized(short.as_mut_ptr().cast::<CountersC>(), counters, 16) }, STATUS_INVALID_ARGUMENT);
    assert_eq!(short, [8, 0]);
    // SAFETY: null is allowed.
    assert_eq!(unsafe { write_sized(std::ptr::null_mut::<CountersC>(), counters, 16) }, STATUS_INVALID_ARGUMENT);
}
