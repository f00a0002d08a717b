//! Writing a large XSpace fast. prost builds an `XEvent` (and its one-element `stats` vector)
//! per event and, on encode, measures each nested message again at every level above it; at
//! ten million events that was most of an export (BENCHMARKS.md). Here the ROCTX events go
//! from the trace straight to wire bytes, once each, with no allocation per event; everything
//! else (metadata, GPU planes, the task environment) is still prost's.
//!
//! The bytes are the message [`super::standalone_xspace`] builds, field for field; only the
//! order of fields inside a plane and a line differs (`lines` after a plane's other fields,
//! `events` after a line's), which protobuf parsers accept by specification: fields may come
//! in any order and repeated ones keep theirs. A test decodes both and compares.

use prost::Message;

use super::{EventFields as Fields, RoctxEvents};
use crate::model::Trace;
use crate::xplane_proto::{XLine, XSpace};

/// Wire keys: (field number << 3) | wire type (0 varint, 2 length-delimited).
const SPACE_PLANES: u8 = (1 << 3) | 2;
const PLANE_LINES: u8 = (3 << 3) | 2;
const LINE_EVENTS: u8 = (4 << 3) | 2;
const EVENT_METADATA_ID: u8 = 1 << 3;
const EVENT_OFFSET_PS: u8 = 2 << 3;
const EVENT_DURATION_PS: u8 = 3 << 3;
const EVENT_STATS: u8 = (4 << 3) | 2;
const STAT_METADATA_ID: u8 = 1 << 3;
const STAT_UINT64: u8 = 3 << 3;
const STAT_REF: u8 = 7 << 3;

/// Longest event: room for its key and length (11), then five 10-byte varints, two stats of two,
/// and their keys and lengths.
const MAX_EVENT: usize = 11 + 96;

/// Encodes `space`, whose first plane's lines get the events `events` holds for them.
pub(crate) fn space_with_roctx_events(mut space: XSpace, trace: &Trace, events: &RoctxEvents) -> Vec<u8> {
    // About 21 bytes per event (BENCHMARKS.md) plus metadata.
    let mut out = Vec::with_capacity(trace.events.len() * 24 + trace.kernels.len() * 96 + 4096);
    let mut header = Vec::new();
    let (nvtx_stat, flow_stat) = events.stat_ids();
    let stats = StatPrefix { nvtx: id_bytes(nvtx_stat), flow: id_bytes(flow_stat) };
    let mut scratch = Scratch::new();
    for (p, plane) in space.planes.iter_mut().enumerate() {
        let lines = std::mem::take(&mut plane.lines);
        // Only the first plane (the host's) takes ROCTX events.
        let ids = |line: &XLine| events.of_line(line.id).take(if p == 0 { usize::MAX } else { 0 });
        // Lengths first (a length-delimited field's length precedes it), so that every byte
        // is written once, straight into `out`: no buffer per line, no copy of the plane.
        let sizes: Vec<usize> = lines
            .iter()
            .map(|line| line.encoded_len() + ids(line).map(|i| event_len(&events.fields(trace, i), &stats)).sum::<usize>())
            .collect();
        header.clear();
        plane.encode_raw(&mut header);
        let len = header.len() + sizes.iter().map(|&size| 1 + prost::encoding::encoded_len_varint(size as u64) + size).sum::<usize>();
        put_head(SPACE_PLANES, len, &mut out);
        out.extend_from_slice(&header);
        for (line, &size) in lines.iter().zip(&sizes) {
            put_head(PLANE_LINES, size, &mut out);
            let at = out.len();
            line.encode_raw(&mut out);
            for i in ids(line) {
                put_event(&events.fields(trace, i), &stats, &mut scratch);
                scratch.append_to(&mut out);
            }
            debug_assert_eq!(out.len() - at, size, "a line's length as computed and as written");
        }
    }
    space.planes.clear();
    space.encode_raw(&mut out); // errors, warnings, hostnames
    out
}

/// A stat's `metadata_id` field, written once per export (empty for id 0: proto3 leaves it out).
fn id_bytes(id: i64) -> Vec<u8> {
    let mut s = Scratch::new();
    s.int(STAT_METADATA_ID, id as u64); // CAST: int64 is written as its u64 bits
    s.bytes().to_vec()
}

/// The `metadata_id` bytes of the two stats a ROCTX event carries.
struct StatPrefix {
    nvtx: Vec<u8>,
    flow: Vec<u8>,
}

/// One ROCTX event as `XLine.events` entry: [`RoctxEvents::xevent`]'s fields, in prost's order,
/// key and length first.
#[inline]
fn put_event(fields: &Fields, stats: &StatPrefix, out: &mut Scratch) {
    let &(metadata_id, offset_ps, duration_ps, label_ref, flow) = fields;
    // The body goes after room for its key and length (at most 11 bytes), which are then
    // written right before it.
    const HEAD: usize = 11;
    out.len = HEAD;
    // proto3 leaves zero scalars out; a oneof member (the offset, the stat values) is always
    // written.
    out.int(EVENT_METADATA_ID, metadata_id as u64); // CAST: int64 is written as its u64 bits
    out.key_varint(EVENT_OFFSET_PS, offset_ps as u64); // CAST: as above
    out.int(EVENT_DURATION_PS, duration_ps as u64); // CAST: as above
    out.stat(&stats.nvtx, STAT_REF, label_ref);
    if let Some(flow) = flow {
        out.stat(&stats.flow, STAT_UINT64, flow);
    }
    let body = out.len - HEAD;
    let mut head = [0u8; HEAD];
    head[0] = LINE_EVENTS;
    let n = 1 + put_varint(&mut head[1..], body as u64);
    out.start = HEAD - n;
    out.buf[out.start..HEAD].copy_from_slice(&head[..n]);
}

/// The bytes [`put_event`] writes for `fields`.
#[inline]
fn event_len(fields: &Fields, stats: &StatPrefix) -> usize {
    let &(metadata_id, offset_ps, duration_ps, label_ref, flow) = fields;
    let int = |v: i64| if v == 0 { 0 } else { 1 + varint_len(v as u64) }; // CAST: u64 bits
    let stat = |id: &[u8], v: u64| 2 + id.len() + 1 + varint_len(v);
    let body = int(metadata_id) + 1 + varint_len(offset_ps as u64) + int(duration_ps) + stat(&stats.nvtx, label_ref) // CAST: u64 bits
        + flow.map_or(0, |f| stat(&stats.flow, f));
    1 + varint_len(body as u64) + body
}

#[inline]
fn varint_len(v: u64) -> usize {
    prost::encoding::encoded_len_varint(v)
}

/// Writes `v` as a varint at the start of `buf`; returns its length.
#[inline]
fn put_varint(buf: &mut [u8], mut v: u64) -> usize {
    let mut n = 0;
    while v >= 0x80 {
        buf[n] = (v as u8) | 0x80; // CAST: the low 7 bits
        n += 1;
        v >>= 7;
    }
    buf[n] = v as u8; // CAST: below 0x80
    n + 1
}

/// `key` and `len`, the head of a length-delimited field.
fn put_head(key: u8, len: usize, out: &mut Vec<u8>) {
    let mut head = [0u8; 11];
    head[0] = key;
    let n = 1 + put_varint(&mut head[1..], len as u64);
    out.extend_from_slice(&head[..n]);
}

/// An event's bytes on the stack, appended to the output at once: `buf[start..len]`.
struct Scratch {
    buf: [u8; MAX_EVENT],
    start: usize,
    len: usize,
}

impl Scratch {
    #[inline]
    fn new() -> Scratch {
        Scratch { buf: [0; MAX_EVENT], start: 0, len: 0 }
    }

    #[inline]
    fn bytes(&self) -> &[u8] {
        &self.buf[self.start..self.len]
    }

    /// `out += self.bytes()`. Most events are under 32 bytes: those are copied as a fixed
    /// 32-byte block and the tail cut off again, which compiles to two moves instead of a
    /// `memcpy` call (measured: 53 instructions per event less).
    #[inline]
    fn append_to(&self, out: &mut Vec<u8>) {
        let (start, len) = (self.start, self.len - self.start);
        match self.buf.get(start..start + 32) {
            Some(block) if len <= 32 => {
                let at = out.len();
                let block: &[u8; 32] = block.try_into().expect("32 bytes");
                out.extend_from_slice(block);
                out.truncate(at + len);
            }
            _ => out.extend_from_slice(self.bytes()),
        }
    }

    #[inline]
    fn key_varint(&mut self, key: u8, v: u64) {
        self.buf[self.len] = key;
        self.len += 1 + put_varint(&mut self.buf[self.len + 1..], v);
    }

    /// A proto3 scalar: left out when zero.
    #[inline]
    fn int(&mut self, key: u8, v: u64) {
        if v != 0 {
            self.key_varint(key, v);
        }
    }

    /// An `XStat`: its `metadata_id` bytes, then a varint value (`value_key`: which member of
    /// its oneof).
    #[inline]
    fn stat(&mut self, id: &[u8], value_key: u8, value: u64) {
        let len = id.len() + 1 + prost::encoding::encoded_len_varint(value);
        self.buf[self.len] = EVENT_STATS;
        self.buf[self.len + 1] = len as u8; // CAST: at most 11 + 1 + 10 bytes, one varint byte
        self.len += 2;
        self.buf[self.len..self.len + id.len()].copy_from_slice(id);
        self.len += id.len();
        self.key_varint(value_key, value);
    }
}
