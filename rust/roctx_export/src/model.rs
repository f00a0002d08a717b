//! The exporters' input: one capture session, independent of how it was captured.

use std::collections::BTreeMap;

/// Kind of a trace event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// A push/pop range on one thread.
    Range,
    /// An instant (`start_ns == end_ns`).
    Mark,
    /// A start/stop range, possibly ended on another thread (`end_tid`).
    ProcessRange,
}

/// One event. Timestamps are `CLOCK_BOOTTIME` ns, like rocprofiler-sdk's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Range, mark or process range.
    pub kind: EventKind,
    /// OS thread that opened it; its line is `Host Threads/<tid>/ROCTX`.
    pub tid: u64,
    /// OS thread that closed it.
    pub end_tid: u64,
    /// Start, ns.
    pub start_ns: u64,
    /// End, ns (equal to `start_ns` for marks).
    pub end_ns: u64,
    /// Index into [`Trace::labels`].
    pub label: u32,
}

/// A capture session, ready to export.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Trace {
    /// Host name, used for `XSpace.hostnames` and the log directory file name.
    pub hostname: String,
    /// Session start and stop, `CLOCK_BOOTTIME` ns.
    pub start_ns: u64,
    /// See `start_ns`.
    pub stop_ns: u64,
    /// Wall clock minus `CLOCK_BOOTTIME` at capture, ns: XLA's host planes use wall-clock
    /// times, so exported timestamps are shifted by this much to line up with them.
    pub realtime_offset_ns: i64,
    /// Events, in any order.
    pub events: Vec<Event>,
    /// Distinct labels.
    pub labels: Vec<String>,
    /// Thread names by OS thread id.
    pub thread_names: BTreeMap<u64, String>,
    /// What was dropped or capped during capture, in words (ends up in `XSpace.warnings`).
    pub warnings: Vec<String>,
}

impl Trace {
    /// An empty trace of a session on `hostname` from `start_ns` to `stop_ns`.
    pub fn new(hostname: &str, start_ns: u64, stop_ns: u64) -> Trace {
        Trace { hostname: hostname.to_owned(), start_ns, stop_ns, ..Trace::default() }
    }

    /// Interns `text` and returns its label index.
    pub fn label(&mut self, text: &str) -> u32 {
        match self.labels.iter().position(|l| l == text) {
            Some(i) => i as u32, // CAST: label counts fit u32 (the collector interns with u32 ids)
            None => {
                self.labels.push(text.to_owned());
                (self.labels.len() - 1) as u32
            }
        }
    }

    /// The text of `event`'s label.
    pub fn label_of(&self, event: &Event) -> &str {
        self.labels.get(event.label as usize).map_or("", String::as_str)
    }
}
