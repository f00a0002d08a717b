//! The external-correlation value a launching thread carries, and what a dispatch record's
//! value says about the op and the range that launched it.
//!
//! rocprofiler-sdk (and CUPTI) copy the top of the launching thread's external-correlation stack
//! into every kernel record at enqueue time, so one 64-bit value has to name both attributions:
//! the low 32 bits are the op invocation (llama.cpp's ids: from 1, 0 = no op), the high 32 bits
//! the innermost ROCTX range's instance (0 = none). With no range open the value is the
//! invocation id itself, as in the llama.cpp reference design.

/// The value to push for `invocation` inside range instance `range` (0 for none of either).
pub fn encode(invocation: u32, range: u32) -> u64 {
    (u64::from(range) << 32) | u64::from(invocation)
}

/// `(invocation, range)` of a record's external correlation value.
pub fn decode(value: u64) -> (u32, u32) {
    // CAST: the two halves of the value, by construction of `encode`.
    (value as u32, (value >> 32) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_names_both_the_invocation_and_the_range() {
        assert_eq!(encode(7, 0), 7, "without a range it is llama.cpp's id");
        assert_eq!(decode(encode(7, 3)), (7, 3));
        assert_eq!(decode(encode(u32::MAX, u32::MAX)), (u32::MAX, u32::MAX));
        assert_eq!(decode(0), (0, 0));
    }
}
