//! The record types: what the collector hands out and every exporter reads. Defined once; the
//! C mirror of [`Stats`] in `roctx_utils.h` is checked against [`Stats::FIELDS`] by a test.

use std::collections::BTreeMap;

/// What kind of event a record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum EventKind {
    /// A push/pop range on one thread.
    Range = 0,
    /// An instant (`start_ns == end_ns`).
    Mark = 1,
    /// A start/stop range, possibly ended on another thread (`end_tid`).
    ProcessRange = 2,
}

/// One recorded event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Range, mark or process range.
    pub kind: EventKind,
    /// OS thread id that opened it (`gettid`, the SDK's `thread_id`); its row is
    /// `Host Threads/<tid>/ROCTX`.
    pub tid: u64,
    /// OS thread id that closed it (differs from `tid` only for process ranges).
    pub end_tid: u64,
    /// `CLOCK_BOOTTIME` ns.
    pub start_ns: u64,
    /// `CLOCK_BOOTTIME` ns; equals `start_ns` for marks.
    pub end_ns: u64,
    /// Index into the labels of the [`Snapshot`] (or trace) the event belongs to.
    pub label: u32,
    /// Nesting depth on its thread when it was pushed (0 = outermost); 0 for marks and process
    /// ranges.
    pub depth: u16,
    /// A push/pop range's push number on its thread (from 1; 0 for marks and process ranges):
    /// kernels launched inside it carry it, which is how they find their range.
    pub seq: u32,
}

/// Declares [`Stats`] from one list: each counter's doc, name and, for the counters that mean
/// something was lost or ignored, the words an exporter shows the user.
macro_rules! stats {
    ($( $(#[doc = $doc:literal])+ $field:ident $(=> $warning:literal)?, )+) => {
        /// Counters of one session. Every event the collector saw and did not record is in
        /// exactly one of them, besides `recorded` (`truncated_labels` counts events that were
        /// kept, with a cut label). `#[repr(C)]`, all `u64`, in the order of
        /// `roctx_utils_capture_stats` after its `struct_size`.
        #[repr(C)]
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct Stats {
            $( $(#[doc = $doc])+ pub $field: u64, )+
        }

        impl Stats {
            /// The counters' names, in declaration order (the C struct's field order).
            pub const FIELDS: &'static [&'static str] = &[$(stringify!($field)),+];

            /// Each counter as (name, value, what a non-zero value means for the trace, if it
            /// means a loss), in declaration order.
            pub fn entries(&self) -> impl Iterator<Item = (&'static str, u64, Option<&'static str>)> {
                [$( (stringify!($field), self.$field, stats!(@warning $($warning)?)) ),+].into_iter()
            }

            /// Adds `other`'s counters to these.
            pub fn add(&mut self, other: &Stats) {
                $( self.$field += other.$field; )+
            }
        }

        stats!(@atomic $( $field )+);
    };
    (@atomic $( $field:ident )+) => {
        /// [`Stats`] as relaxed atomics: a thread buffer's owner counts into them without a
        /// lock and a snapshot reads them (`recorded` is not used: the snapshot counts what it
        /// reads).
        #[derive(Debug, Default)]
        pub(crate) struct AtomicStats {
            $( pub(crate) $field: std::sync::atomic::AtomicU64, )+
        }

        impl AtomicStats {
            pub(crate) fn load(&self) -> Stats {
                Stats { $( $field: self.$field.load(std::sync::atomic::Ordering::Relaxed), )+ }
            }

            pub(crate) fn reset(&self) {
                $( self.$field.store(0, std::sync::atomic::Ordering::Relaxed); )+
            }
        }
    };
    (@warning $warning:literal) => { Some($warning) };
    (@warning) => { None };
}

stats! {
    /// Events recorded.
    recorded,
    /// Events dropped because the thread's event cap was reached.
    dropped_event_cap => "events dropped: the per-thread event cap was reached (raise ROCTX_UTILS_MAX_EVENTS_PER_THREAD, or a session's max_events_per_thread)",
    /// Events dropped because the thread's label bytes cap was reached.
    dropped_label_cap => "events dropped: the per-thread label bytes cap was reached (raise ROCTX_UTILS_MAX_LABEL_BYTES_PER_THREAD, or a session's max_label_bytes_per_thread)",
    /// Ranges nested deeper than [`crate::MAX_DEPTH`] (not recorded; nesting stays balanced).
    dropped_too_deep => "ranges not recorded: nested deeper than 256",
    /// Ranges and marks with an empty or null label.
    dropped_empty_label,
    /// Pops with no open range.
    unmatched_pops => "pops without a matching push (ignored)",
    /// `roctxRangeStop` for an id that was never started (or started outside the session).
    unmatched_stops => "range stops for unknown ids (ignored)",
    /// Ranges whose push happened before this session started (not an error).
    begun_outside_session,
    /// Ranges and marks suppressed by `roctxProfilerPause`.
    paused,
    /// Push/pop ranges still open when the session stopped.
    open_at_stop => "ranges still open when the session stopped (not recorded)",
    /// Start/stop ranges still open when the session stopped.
    process_ranges_open_at_stop => "start/stop ranges still open when the session stopped (not recorded)",
    /// Ranges open when their thread exited.
    open_at_thread_exit => "ranges still open when their thread exited (not recorded)",
    /// Malformed or unsupported SDK/host records rejected by the listener.
    rejected_records => "marker records rejected as malformed or unsupported",
    /// Start/stop ranges not recorded because [`crate::MAX_OPEN_PROCESS_RANGES`] were already
    /// open (their stops are not counted again).
    dropped_open_range_cap => "start/stop ranges dropped: 65536 were already open (ranges started and never stopped?)",
    /// Ranges and marks from a thread whose buffer was already torn down (C++ `thread_local`
    /// destructors running after ours).
    after_thread_exit => "events not recorded: emitted during thread teardown, after the thread's buffer was gone",
    /// Events whose label was cut to [`crate::MAX_LABEL_BYTES`] bytes.
    truncated_labels => "labels cut to their first 4096 bytes",
}

const _: () = assert!(std::mem::size_of::<Stats>() == 16 * 8);

impl Stats {
    /// Events seen but not kept because of a cap (what a user must raise a limit for).
    pub fn dropped(&self) -> u64 {
        self.dropped_event_cap + self.dropped_label_cap + self.dropped_too_deep + self.dropped_open_range_cap
    }
}

/// How events reach the collector in a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum CaptureMode {
    /// Nothing is captured.
    Off = 0,
    /// rocprofiler-sdk MARKER callbacks, configured by us (tool mode).
    Sdk = 1,
    /// Records fed by the host's own tracer (`roctx_utils_listener_feed`).
    Host = 2,
    /// The emitter records its own ranges through the in-process sink (no SDK needed).
    InProcess = 3,
}

impl CaptureMode {
    pub(crate) fn from_u8(v: u8) -> CaptureMode {
        match v {
            1 => CaptureMode::Sdk,
            2 => CaptureMode::Host,
            3 => CaptureMode::InProcess,
            _ => CaptureMode::Off,
        }
    }
}

/// Session configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionOptions {
    /// Events kept per thread per session; more are dropped and counted.
    pub max_events_per_thread: usize,
    /// Label bytes kept per thread per session (labels repeat, and are stored once per thread).
    pub max_label_bytes_per_thread: usize,
}

impl Default for SessionOptions {
    fn default() -> SessionOptions {
        SessionOptions { max_events_per_thread: 1 << 20, max_label_bytes_per_thread: 16 << 20 }
    }
}

/// Everything one session captured, for the exporters. Events are sorted by (tid, start, -end).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Recorded events.
    pub events: Vec<Event>,
    /// Distinct labels; events refer to them by index.
    pub labels: Vec<String>,
    /// Names given with `roctxNameOsThread`/`NameCurrentThread`, by OS thread id.
    pub thread_names: BTreeMap<u64, String>,
    /// What was not recorded, and why.
    pub stats: Stats,
    /// How events reached the collector.
    pub mode: Option<CaptureMode>,
    /// Session number (1 for the first session of the process).
    pub session: u32,
    /// `CLOCK_BOOTTIME` ns at start and at stop (or at the snapshot, while running).
    pub start_ns: u64,
    /// See `start_ns`.
    pub stop_ns: u64,
}

impl Snapshot {
    /// The label text of `event`.
    pub fn label(&self, event: &Event) -> &str {
        self.labels.get(event.label as usize).map_or("", String::as_str)
    }
}

/// Why a session could not start or stop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionError {
    /// `start` while a session is running.
    AlreadyRunning,
    /// `stop` with no session running.
    NotRunning,
}

impl std::fmt::Display for SessionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SessionError::AlreadyRunning => "a capture session is already running",
            SessionError::NotRunning => "no capture session is running",
        })
    }
}

impl std::error::Error for SessionError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_field_list_and_the_struct_agree() {
        assert_eq!(Stats::FIELDS.len() * 8, std::mem::size_of::<Stats>());
        let s = Stats { recorded: 1, truncated_labels: 16, ..Stats::default() };
        let names: Vec<_> = s.entries().map(|(name, _, _)| name).collect();
        assert_eq!(names, Stats::FIELDS);
        let values: Vec<_> = s.entries().map(|(_, v, _)| v).collect();
        assert_eq!(values.first(), Some(&1));
        assert_eq!(values.last(), Some(&16));
    }

    #[test]
    fn add_sums_every_counter() {
        let one = Stats { recorded: 1, dropped_event_cap: 2, open_at_thread_exit: 3, rejected_records: 4, ..Stats::default() };
        let mut sum = one;
        sum.add(&one);
        assert!(sum.entries().zip(one.entries()).all(|((_, a, _), (_, b, _))| a == 2 * b));
    }

    #[test]
    fn only_losses_carry_words_for_the_user() {
        let lossless: Vec<_> = Stats::default().entries().filter(|(_, _, w)| w.is_none()).map(|(n, _, _)| n).collect();
        assert_eq!(lossless, ["recorded", "dropped_empty_label", "begun_outside_session", "paused"]);
    }
}
