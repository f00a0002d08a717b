//! The external-correlation value a launching thread carries, and what a dispatch record's
//! value says about the op and the range that launched it.
//!
//! rocprofiler-sdk (and CUPTI) copy the top of the launching thread's external-correlation stack
//! into every kernel record at enqueue time, so one 64-bit value has to name both attributions:
//! the low 32 bits are the op invocation (llama.cpp's ids: from 1, 0 = no op), the next 30 bits
//! the innermost ROCTX range's instance (0 = none), the top two are flags (below). With no range
//! open the low half is the invocation id itself, as in the llama.cpp reference design.
//!
//! rocprofiler-sdk gives a thread that has no stack of its own (it never pushed, or its stack
//! is empty) its "default data": the latest value its default thread (the one that loaded the
//! SDK) pushed or popped to, in any context, ours or another tool's. A worker's kernels
//! launched before its first range or op would so carry the main thread's op, and a range
//! number that names one of the worker's own later ranges. Every value of ours is therefore
//! marked ([`OURS`]), the default thread's are flagged besides ([`FROM_DEFAULT_THREAD`]), and
//! [`resolve`] keeps a value only on a record of a thread that could have pushed it.

/// Set in every value the SDK's default thread pushes.
pub const FROM_DEFAULT_THREAD: u64 = 1 << 63;

/// Set in every value roctx_utils pushes: another tool's value, inherited from the default
/// thread, names nothing of ours.
pub const OURS: u64 = 1 << 62;

/// The highest range instance a value can name (the two flags take the top bits); a thread's
/// later ranges are pushed as none.
pub const MAX_RANGE: u32 = (1 << 30) - 1;

/// The value to push for `invocation` inside range instance `range` (0 for none of either;
/// at most [`MAX_RANGE`]).
pub fn encode(invocation: u32, range: u32) -> u64 {
    debug_assert!(range <= MAX_RANGE);
    OURS | (u64::from(range & MAX_RANGE) << 32) | u64::from(invocation)
}

/// [`encode`], flagged when the pushing thread is the SDK's default thread.
pub fn encode_on(invocation: u32, range: u32, default_thread: bool) -> u64 {
    encode(invocation, range) | if default_thread { FROM_DEFAULT_THREAD } else { 0 }
}

/// What a record launched on a thread (the default thread or not) really carries: 0 (nothing)
/// for a value that is not ours, or the default thread's on another thread's record (inherited,
/// not pushed there).
pub fn resolve(value: u64, launched_on_default_thread: bool) -> u64 {
    if value & OURS == 0 || (value & FROM_DEFAULT_THREAD != 0 && !launched_on_default_thread) {
        0
    } else {
        value
    }
}

/// `(invocation, range)` of a record's external correlation value (flags ignored).
pub fn decode(value: u64) -> (u32, u32) {
    // CAST: the two halves of the value, by construction of `encode`.
    (value as u32, (value >> 32) as u32 & MAX_RANGE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_names_both_the_invocation_and_the_range() {
        assert_eq!(encode(7, 0), OURS | 7, "without a range it is llama.cpp's id, marked");
        assert_eq!(decode(encode(7, 3)), (7, 3));
        assert_eq!(decode(encode(u32::MAX, MAX_RANGE)), (u32::MAX, MAX_RANGE));
        assert_eq!(decode(0), (0, 0));
    }

    #[test]
    fn an_inherited_value_names_nothing_on_the_thread_that_inherited_it() {
        let on_main = encode_on(7, 3, true);
        assert_eq!(decode(resolve(on_main, true)), (7, 3), "the default thread's own record");
        assert_eq!(resolve(on_main, false), 0, "a stack-less worker's record");
        let on_worker = encode_on(9, 1, false);
        assert_eq!(decode(resolve(on_worker, false)), (9, 1));
        assert_eq!(decode(resolve(on_worker, true)), (9, 1), "a worker's own value is its own anywhere");
        assert_eq!(resolve(9, false), 0, "another tool's value names nothing of ours");
        assert_eq!(resolve(9 | FROM_DEFAULT_THREAD, true), 0);
    }
}
