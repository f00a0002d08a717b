/*!
ROCTX traces out of the process: XSpace for TensorBoard/XProf, Chrome/Perfetto JSON.

# Brief overview

- [`Trace`] is what a capture session produced: the collector's [`Event`]s (labelled ranges,
  marks and cross-thread ranges per OS thread, `CLOCK_BOOTTIME` timestamps), thread names and
  the session's [`warnings`] (drops and caps), built from a collector [`Snapshot`] by
  [`Trace::from_snapshot`]. Nothing here needs ROCm, so the `roctx` CLI uses this crate alone.
- [`xplane`] turns a trace into a transient `/host:ROCTX` plane with one line per thread
  (`Host Threads/<tid>/ROCTX`, `nvtx_range` stats), merges it into `/host:CPU` exactly as XLA's
  post-processing does, and then numbers rows so XProf draws every line in its own row, each
  ROCTX row directly below its thread (XProf keys rows by the low 32 bits of
  `display_id`-or-`id`, and silently merges lines that share them).
- [`logdir`] writes and finds `<logdir>/plugins/profile/<run>/<host>.xplane.pb`.
- [`output`] is how every file is written: whole or not at all, replacing only regular files
  ([`output::replace_regular`]) or never replacing anything ([`output::write_new`]).
- [`chrome`] converts any XSpace into Chrome trace-event JSON (`chrome://tracing`, Perfetto),
  streamed to a writer.
- [`inspect`] summarizes an XSpace as XProf will draw it (rows, nesting, problems), for the CLI.

# Example

```
use roctx_export::{Trace, Event, EventKind, xplane, chrome};
let mut trace = Trace::new("myhost", 1_000, 2_000);
let outer = trace.label("outer");
let inner = trace.label("inner");
trace.events.push(Event { kind: EventKind::Range, tid: 42, end_tid: 42, start_ns: 1_100, end_ns: 1_900, label: outer, depth: 0, seq: 0 });
trace.events.push(Event { kind: EventKind::Range, tid: 42, end_tid: 42, start_ns: 1_200, end_ns: 1_300, label: inner, depth: 0, seq: 0 });
let space = xplane::standalone_xspace(&trace);
assert_eq!(space.planes[0].name, "/host:CPU");
assert_eq!(space.planes[0].lines[0].name, "Host Threads/42/ROCTX");
let json = chrome::from_xspace(&space);
assert!(json.to_string().contains("\"nvtx_range\":\"inner\""));
```
*/
#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

pub mod chrome;
pub mod hlo;
pub mod inspect;
pub mod logdir;
mod model;
pub use roctx_sys::output;
pub mod stats;
pub mod xplane;
pub mod xplane_proto;

pub use model::{warnings, DeviceCaps, Event, EventKind, KernelEvent, OpCost, Snapshot, Stats, Trace};
