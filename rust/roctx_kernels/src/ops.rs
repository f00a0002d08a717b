//! Op descriptors and their geometry records (stored once per distinct geometry).

/// What an op scope says about its op: the fields of a roofline report row (roofline.md 5.2)
/// that do not depend on timing. Strings are the host's own names (ggml's `ggml_op_desc`,
/// `ggml_type_name`), never derived from enum values of another version.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct OpDescriptor {
    /// Op name (`MUL_MAT`, `ADD`, a unary/GLU sub-op name, or any name an op scope gives).
    pub op: String,
    /// Node name (ggml's tensor name; the head node's for fused groups).
    pub name: String,
    /// Destination type name.
    pub dtype: String,
    /// `src[0]`'s type name (the weight quantisation for matmuls); empty without a source.
    pub quant: String,
    /// Destination shape.
    pub ne: [i64; 4],
    /// Source shapes, up to the last non-null source.
    pub src_ne: Vec<[i64; 4]>,
    /// Source type names (empty for a null slot).
    pub src_types: Vec<String>,
    /// Raw op parameters (at most 16 int32).
    pub op_params: Vec<i32>,
    /// HBM traffic in bytes: destination plus sources (for a fused group, its external traffic).
    pub bytes: u64,
    /// Destination bytes (a fused group's final output).
    pub dst_bytes: u64,
    /// Bytes per source (the head node's sources for a fused group).
    pub src_bytes: Vec<u64>,
    /// Matmul M (0 for other ops).
    pub m: u64,
    /// Matmul N.
    pub n: u64,
    /// Matmul K.
    pub k: u64,
    /// `MUL_MAT_ID`: number of experts.
    pub n_experts: u64,
    /// `MUL_MAT_ID`: experts routed per token.
    pub top_k: u64,
    /// The nodes of a fused group, in graph order (empty for an unfused op).
    pub fused_ops: Vec<OpDescriptor>,
}

/// Index of a stored geometry in a [`crate::KernelSnapshot`].
pub type Geometry = u32;

/// Longest op or type name kept, in bytes.
pub(crate) const MAX_NAME_BYTES: usize = 256;
/// Most sources, op parameters and fused nodes kept per op.
pub(crate) const MAX_SOURCES: usize = 16;
pub(crate) const MAX_OP_PARAMS: usize = 16;
pub(crate) const MAX_FUSED: usize = 64;

impl OpDescriptor {
    /// The descriptor cut to the documented limits (names, source and parameter counts, fused
    /// nodes); whether anything was cut.
    pub(crate) fn bounded(mut self) -> (OpDescriptor, bool) {
        let mut cut = false;
        for s in [&mut self.op, &mut self.name, &mut self.dtype, &mut self.quant].into_iter().chain(self.src_types.iter_mut()) {
            cut |= clip(s);
        }
        cut |= self.src_ne.len() > MAX_SOURCES || self.src_types.len() > MAX_SOURCES || self.src_bytes.len() > MAX_SOURCES;
        self.src_ne.truncate(MAX_SOURCES);
        self.src_types.truncate(MAX_SOURCES);
        self.src_bytes.truncate(MAX_SOURCES);
        cut |= self.op_params.len() > MAX_OP_PARAMS || self.fused_ops.len() > MAX_FUSED;
        self.op_params.truncate(MAX_OP_PARAMS);
        self.fused_ops.truncate(MAX_FUSED);
        let fused = std::mem::take(&mut self.fused_ops);
        for mut f in fused {
            cut |= !f.fused_ops.is_empty(); // one level: a fused node is not itself a group
            f.fused_ops.clear();
            let (f, c) = f.bounded();
            cut |= c;
            self.fused_ops.push(f);
        }
        (self, cut)
    }
}

/// Cuts `s` to [`MAX_NAME_BYTES`] on a character boundary; whether it was cut.
fn clip(s: &mut String) -> bool {
    if s.len() <= MAX_NAME_BYTES {
        return false;
    }
    let mut end = MAX_NAME_BYTES;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    true
}
