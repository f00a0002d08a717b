//! ggml tensor types and byte counts (spec §8): the block table (elements and bytes per block,
//! from `ggml-common.h`'s static_asserts) and `ggml_nbytes` exactly as `ggml.c` computes it.
//! Owns nothing else; the analysis takes the producer's byte counts and uses this only to
//! explain and check them.

/// One ggml type: `type_name`, block size in elements, and bytes per block (`type_size`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GgmlType {
    /// `ggml_type_name`, as reports write it (`"q4_K"`).
    pub name: &'static str,
    /// Elements per block (`blck_size`); 1 for plain types.
    pub block_elements: u64,
    /// Bytes per block (`type_size`).
    pub block_bytes: u64,
}

impl GgmlType {
    /// Storage per weight in bits: `bytes × 8 / elements` (per-tensor extras excluded).
    pub fn bits_per_weight(&self) -> f64 {
        // CAST: small table constants, exact in f64.
        (self.block_bytes * 8) as f64 / self.block_elements as f64
    }

    /// Whether the type is block-quantised (more than one element per block).
    pub fn is_quantized(&self) -> bool {
        self.block_elements > 1
    }
}

const fn t(name: &'static str, block_elements: u64, block_bytes: u64) -> GgmlType {
    GgmlType { name, block_elements, block_bytes }
}

/// Every type of §8, plus ggml's plain integer and f64 types (the MoE ids tensor is `i32`),
/// whose sizes are their C types'. The last four exist only in newer ggml trees.
pub const TYPES: &[GgmlType] = &[
    t("f32", 1, 4),
    t("f16", 1, 2),
    t("bf16", 1, 2),
    t("f64", 1, 8),
    t("i8", 1, 1),
    t("i16", 1, 2),
    t("i32", 1, 4),
    t("i64", 1, 8),
    t("q4_0", 32, 18),
    t("q4_1", 32, 20),
    t("q5_0", 32, 22),
    t("q5_1", 32, 24),
    t("q8_0", 32, 34),
    t("q8_1", 32, 36),
    t("mxfp4", 32, 17),
    t("nvfp4", 64, 36),
    t("iq4_nl", 32, 18),
    t("q2_K", 256, 84),
    t("q3_K", 256, 110),
    t("q4_K", 256, 144),
    t("q5_K", 256, 176),
    t("q6_K", 256, 210),
    t("q8_K", 256, 292),
    t("iq2_xxs", 256, 66),
    t("iq2_xs", 256, 74),
    t("iq2_s", 256, 82),
    t("iq3_xxs", 256, 98),
    t("iq3_s", 256, 110),
    t("iq1_s", 256, 50),
    t("iq1_m", 256, 56),
    t("iq4_xs", 256, 136),
    t("tq1_0", 256, 54),
    t("tq2_0", 256, 66),
    t("q1_0", 128, 18),
    t("q2_0", 64, 18),
    t("iq2_nl", 32, 10),
    t("iq3_nl", 32, 14),
];

/// The type named `name` (exact, as `ggml_type_name` spells it).
pub fn type_info(name: &str) -> Option<&'static GgmlType> {
    TYPES.iter().find(|t| t.name == name)
}

/// `ggml_nbytes` from shape and strides: 0 if any dimension is empty (as `ggml.c` does);
/// `type_size + Σ (ne[i]−1)·nb[i]` for plain types; `ne[0]·nb[0]/blck_size + Σ_{i≥1}
/// (ne[i]−1)·nb[i]` for block types. A strided view counts the span it covers. `None` on
/// overflow.
pub fn nbytes(ty: &GgmlType, ne: [u64; 4], nb: [u64; 4]) -> Option<u64> {
    if ne.contains(&0) {
        return Some(0);
    }
    let (mut total, first) = if ty.block_elements == 1 {
        (ty.block_bytes, 0)
    } else {
        (ne[0].checked_mul(nb[0])? / ty.block_elements, 1)
    };
    for i in first..4 {
        total = total.checked_add((ne[i] - 1).checked_mul(nb[i])?)?;
    }
    Some(total)
}

/// The strides of a contiguous tensor (`ggml_new_tensor`): `nb[0] = type_size`,
/// `nb[1] = nb[0]·(ne[0]/blck_size)`, `nb[i] = nb[i−1]·ne[i−1]`. `None` on overflow.
pub fn contiguous_strides(ty: &GgmlType, ne: [u64; 4]) -> Option<[u64; 4]> {
    let nb0 = ty.block_bytes;
    let nb1 = nb0.checked_mul(ne[0] / ty.block_elements)?;
    let nb2 = nb1.checked_mul(ne[1])?;
    let nb3 = nb2.checked_mul(ne[2])?;
    Some([nb0, nb1, nb2, nb3])
}

/// `ggml_nbytes` of a contiguous tensor of type `ty` and shape `ne`.
pub fn contiguous_nbytes(ty: &GgmlType, ne: [u64; 4]) -> Option<u64> {
    nbytes(ty, ne, contiguous_strides(ty, ne)?)
}

/// `ggml_row_size`: bytes of `n` consecutive elements, `type_size · n / blck_size`.
pub fn row_bytes(ty: &GgmlType, n: u64) -> Option<u64> {
    Some(ty.block_bytes.checked_mul(n)? / ty.block_elements)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(name: &str) -> &'static GgmlType {
        type_info(name).unwrap()
    }

    #[test]
    fn the_fused_down_projection_of_spec_5_3_counts_its_bytes() {
        // q4_K weight [4864, 896]: 4864/256 blocks × 144 B × 896 rows.
        assert_eq!(contiguous_nbytes(ty("q4_K"), [4864, 896, 1, 1]), Some(2_451_456));
        assert_eq!(contiguous_nbytes(ty("f32"), [4864, 1, 1, 1]), Some(19_456));
        assert_eq!(contiguous_nbytes(ty("f32"), [896, 1, 1, 1]), Some(3_584));
        assert_eq!(2_451_456 + 19_456 + 3_584 + 3_584, 2_478_080);
        assert_eq!(row_bytes(ty("q4_K"), 4864), Some(19 * 144));
    }

    #[test]
    fn bits_per_weight_match_the_spec_table() {
        let expect = [
            ("f32", 32.0), ("f16", 16.0), ("bf16", 16.0), ("q4_0", 4.5), ("q4_1", 5.0), ("q5_0", 5.5), ("q5_1", 6.0), ("q8_0", 8.5), ("q8_1", 9.0),
            ("mxfp4", 4.25), ("nvfp4", 4.5), ("iq4_nl", 4.5), ("q2_K", 2.625), ("q3_K", 3.4375), ("q4_K", 4.5), ("q5_K", 5.5), ("q6_K", 6.5625),
            ("q8_K", 9.125), ("iq2_xxs", 2.0625), ("iq2_xs", 2.3125), ("iq2_s", 2.5625), ("iq3_xxs", 3.0625), ("iq3_s", 3.4375), ("iq1_s", 1.5625),
            ("iq1_m", 1.75), ("iq4_xs", 4.25), ("tq1_0", 1.6875), ("tq2_0", 2.0625), ("q1_0", 1.125), ("q2_0", 2.25), ("iq2_nl", 2.5), ("iq3_nl", 3.5),
        ];
        for (name, bpw) in expect {
            assert_eq!(ty(name).bits_per_weight(), bpw, "{name}");
        }
        assert_eq!(expect.len() + 5, TYPES.len(), "every type has a checked bits-per-weight, or is plain f64/i8/i16/i32/i64");
        assert!(type_info("Q4_K").is_none(), "names are exact");
    }

    #[test]
    fn strided_views_count_the_span_they_cover_and_empty_tensors_none() {
        // Half the columns of an f32 [8, 4] matrix: rows keep the parent's stride of 32 B.
        assert_eq!(nbytes(ty("f32"), [4, 4, 1, 1], [4, 32, 128, 128]), Some(4 + 3 * 4 + 3 * 32));
        // A transposed f16 [3, 5] view: every element once, spanning the whole buffer.
        assert_eq!(nbytes(ty("f16"), [5, 3, 1, 1], [6, 2, 30, 30]), Some(2 + 4 * 6 + 2 * 2));
        assert_eq!(contiguous_nbytes(ty("q8_0"), [64, 0, 1, 1]), Some(0));
        assert_eq!(contiguous_nbytes(ty("q8_0"), [64, 3, 2, 1]), Some(2 * 34 * 6));
        assert_eq!(nbytes(ty("f32"), [u64::MAX, 2, 1, 1], [4, u64::MAX, 1, 1]), None);
    }
}
