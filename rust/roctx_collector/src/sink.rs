//! The sink contract: what an instrumentation layer (the emitter) hands to whoever is
//! collecting, kept small on purpose (tracing's `Subscriber`, reduced to ROCTX's verbs). The
//! emitter never calls the collector's functions; it calls the sink `roctx_utils::runtime`
//! installed, or nothing when none is.

use roctx_sys::CText;

/// Receives the calling thread's ranges and marks. Implementations timestamp and attribute the
/// event themselves (the calling thread, now), so instrumentation carries no clock.
pub trait Sink: Sync {
    /// A range named `label` opens on the calling thread (`roctxRangePushA`). Returns its push
    /// number on the thread ([`crate::Event::seq`]), what kernels launched inside it carry.
    fn push(&self, label: &[u8]) -> u32;
    /// [`Sink::push`] of a registered string (RegisterString's and NVTX's handles): `text` lives
    /// and never changes for the rest of the process, so a sink may know it by its address alone.
    fn push_registered(&self, text: CText<'static>) -> u32 {
        self.push(text.to_bytes())
    }
    /// The calling thread's innermost range closes (`roctxRangePop`). Returns the push number of
    /// the range now innermost (0: none).
    fn pop(&self) -> u32;
    /// An instant named `label` (`roctxMarkA`).
    fn mark(&self, label: &[u8]);
    /// A range `id` named `label` opens and may close on another thread (`roctxRangeStartA`).
    fn range_start(&self, id: u64, label: &[u8]);
    /// Range `id` closes, on whichever thread calls this (`roctxRangeStop`).
    fn range_stop(&self, id: u64);
}

/// The collector's own sink: in-process capture, no SDK involved.
#[derive(Debug)]
pub struct InProcess;

/// The one [`InProcess`] sink.
pub static IN_PROCESS: InProcess = InProcess;

// #[inline] here and on `crate::push`/`pop`/`mark`: across the crate boundary, a call per event
// measured 32 more instructions per captured pair than the inlined path (BENCHMARKS.md).
//
// Between capture windows (`crate::window`) ranges and marks stop here, before the clock and the
// thread's buffer: nothing is recorded there, and a window starts with an empty stack on every
// thread, which LIFO order keeps consistent (a range pushed before the window can only pop after
// every range pushed inside it).
//
// Ranges and marks are stamped with the capture clock (roctx_sys::clock: TSC ticks converted at
// snapshot time, where the machine allows); start/stop ranges, rare and cross-thread, with
// CLOCK_BOOTTIME directly.
//
// The common case, a thread recording its own ranges in a plain session, takes the fast path
// (`crate::HOT`): one thread-local, one load and one compare for everything the general path
// checks, then the stamp and the buffer. Anything else (no session, a new one, a pause, a
// window, a label not seen at that address, a full chunk) goes the general way, which also
// decides when the fast path may be taken again.
impl Sink for InProcess {
    #[inline(always)]
    fn push(&self, label: &[u8]) -> u32 {
        let flags = crate::window::flags();
        if flags != 0 {
            // Windows configured: never the fast path.
            if crate::window::between_windows_push(flags, label) {
                return 0;
            }
            return push_general(label);
        }
        match crate::fast_push(label) {
            Some(seq) => seq,
            None => push_general(label),
        }
    }

    #[inline(always)]
    fn push_registered(&self, text: CText<'static>) -> u32 {
        if crate::window::flags() == 0 {
            if let Some(seq) = crate::fast_push_handle(text.as_ptr() as usize) {
                return seq;
            }
        }
        push_registered_general(text)
    }

    #[inline(always)]
    fn pop(&self) -> u32 {
        let flags = crate::window::flags();
        if flags != 0 {
            if crate::window::between_windows(flags) {
                return 0;
            }
            return pop_general();
        }
        match crate::fast_pop() {
            Some(innermost) => innermost,
            None => pop_general(),
        }
    }

    #[inline]
    fn mark(&self, label: &[u8]) {
        let flags = crate::window::flags();
        if flags != 0 && crate::window::between_windows(flags) {
            return;
        }
        crate::mark(label, crate::stamp(), crate::current_tid());
    }

    fn range_start(&self, id: u64, label: &[u8]) {
        crate::range_start(id, label, crate::now_ns(), crate::current_tid());
    }

    fn range_stop(&self, id: u64) {
        crate::range_stop(id, crate::now_ns(), crate::current_tid());
    }
}

/// A registered string not known by its handle yet (or windows configured): pushed by its
/// bytes, then known by its handle for the rest of the session.
#[inline(never)]
fn push_registered_general(text: CText<'static>) -> u32 {
    let seq = IN_PROCESS.push(text.to_bytes());
    if seq != 0 {
        crate::note_handle(text.as_ptr() as usize, seq);
    }
    seq
}

// The general paths, out of line so that the fast path saves no registers for them. `HOT` is read
// first: what the buffer then finds plain holds for that value.
#[inline(never)]
fn push_general(label: &[u8]) -> u32 {
    let hot = crate::HOT.load(std::sync::atomic::Ordering::Acquire);
    let flags = crate::window::flags();
    if flags != 0 && crate::window::between_windows_push(flags, label) {
        return 0;
    }
    crate::push_with(label, crate::stamp(), crate::current_tid(), flags, hot)
}

#[inline(never)]
fn pop_general() -> u32 {
    let hot = crate::HOT.load(std::sync::atomic::Ordering::Acquire);
    let flags = crate::window::flags();
    if flags != 0 && crate::window::between_windows(flags) {
        return 0;
    }
    crate::pop_with(crate::stamp(), crate::current_tid(), false, flags, hot)
}
