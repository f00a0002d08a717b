//! The few XLA protos XProf needs to place an op scope in its op statistics and Roofline Model:
//! a module (`xla.HloProto`) with one `custom-call` per op group, written into `/host:metadata`
//! ([`OpModule`]). XProf keeps a device event with an `hlo_op` stat only if the module its
//! `program_id` names holds an instruction of exactly that name; a custom-call of a target XLA
//! does not know has no cost of its own, so XProf takes the event's `flops` and
//! `bytes_accessed`.
//!
//! The messages carry only the fields we write, by the field numbers of `xla/service/hlo.proto`
//! (openxla/xla 0b8fa9f2834ac7c177e5684dcfa587c6bec08b29) and `xla/xla_data.proto` (openxla/xla
//! 011b7582cb7d1ef78d66a0742e528eb50f61e32f); `proto/xla_hlo_subset.proto` lists the same subset
//! as a `.proto` file, and a test holds the two together. prost's derive does the wire format.
#![allow(missing_docs)]

/// `xla.HloProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HloProto {
    #[prost(message, optional, tag = "1")]
    pub hlo_module: Option<HloModuleProto>,
}

/// `xla.HloModuleProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HloModuleProto {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub entry_computation_name: String,
    #[prost(message, repeated, tag = "3")]
    pub computations: Vec<HloComputationProto>,
    #[prost(message, optional, tag = "4")]
    pub host_program_shape: Option<ProgramShapeProto>,
    #[prost(int64, tag = "5")]
    pub id: i64,
    #[prost(int64, tag = "6")]
    pub entry_computation_id: i64,
}

/// `xla.HloComputationProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HloComputationProto {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, repeated, tag = "2")]
    pub instructions: Vec<HloInstructionProto>,
    #[prost(message, optional, tag = "4")]
    pub program_shape: Option<ProgramShapeProto>,
    #[prost(int64, tag = "5")]
    pub id: i64,
    #[prost(int64, tag = "6")]
    pub root_id: i64,
}

/// `xla.HloInstructionProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HloInstructionProto {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub opcode: String,
    #[prost(message, optional, tag = "3")]
    pub shape: Option<ShapeProto>,
    #[prost(message, optional, tag = "7")]
    pub metadata: Option<OpMetadata>,
    #[prost(int64, tag = "9")]
    pub parameter_number: i64,
    #[prost(string, tag = "28")]
    pub custom_call_target: String,
    #[prost(int64, tag = "35")]
    pub id: i64,
    #[prost(int64, repeated, tag = "36")]
    pub operand_ids: Vec<i64>,
}

/// `xla.ShapeProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ShapeProto {
    /// An `xla.PrimitiveType`.
    #[prost(int32, tag = "2")]
    pub element_type: i32,
    #[prost(int64, repeated, tag = "3")]
    pub dimensions: Vec<i64>,
    #[prost(message, repeated, tag = "4")]
    pub tuple_shapes: Vec<ShapeProto>,
}

/// `xla.ProgramShapeProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProgramShapeProto {
    #[prost(message, repeated, tag = "1")]
    pub parameters: Vec<ShapeProto>,
    #[prost(message, optional, tag = "2")]
    pub result: Option<ShapeProto>,
    #[prost(string, repeated, tag = "3")]
    pub parameter_names: Vec<String>,
}

/// `xla.OpMetadata`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct OpMetadata {
    #[prost(string, tag = "1")]
    pub op_type: String,
    #[prost(string, tag = "2")]
    pub op_name: String,
}

/// `xla.PrimitiveType` values used here.
pub const F32: i32 = 11;
/// See [`F32`].
pub const TUPLE: i32 = 13;

/// The name of the stat on a `/host:metadata` event metadata that holds a module
/// (`kHloProto` in XLA's xplane schema).
pub const HLO_PROTO_STAT: &str = "Hlo Proto";

/// Program ids of our modules have bit 62 set: XLA numbers its modules from a per-process
/// counter (`HloModule::unique_id`, small non-negative numbers), so a merged XSpace with a real
/// XLA module never holds one of ours under its id. The low bits are a hash of the module, so
/// the modules of several processes of a job, folded into one space, keep apart unless they
/// are the same module.
pub const PROGRAM_ID_BIT: u64 = 1 << 62;

/// One op group of the module: the instruction XProf finds by the events' `hlo_op`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OpInstruction {
    /// The instruction name (what the events' `hlo_op` names).
    pub name: String,
    /// `metadata.op_type`: the op (ggml's `MUL_MAT`, fused ops joined by `+`).
    pub op_type: String,
    /// `metadata.op_name`: a readable path, which XProf's framework op statistics show.
    pub op_name: String,
}

/// A module of op groups, ready for `/host:metadata`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpModule {
    /// The program id the op events carry ([`PROGRAM_ID_BIT`] set).
    pub program_id: u64,
    /// The module's name.
    pub name: String,
    /// The serialized `xla.HloProto`.
    pub hlo_proto: Vec<u8>,
}

/// The module's name, as XProf lists it.
pub const MODULE_NAME: &str = "roctx_utils.op_scopes";

impl OpModule {
    /// The module of `ops`: a parameter `p` (`f32[]`), one `custom-call` per op (target
    /// `roctx_utils.<op_type>`, operand `p`, shape `f32[]`, the op's metadata), and a tuple of
    /// them as the root, in a computation `main` that is the entry. That is what
    /// `HloModule::CreateFromProto` needs to load it: ids, an entry computation, program shapes.
    pub fn new(ops: &[OpInstruction]) -> OpModule {
        use prost::Message;
        let scalar = ShapeProto { element_type: F32, ..ShapeProto::default() };
        let root_shape = ShapeProto { element_type: TUPLE, tuple_shapes: vec![scalar.clone(); ops.len()], ..ShapeProto::default() };
        let program_shape = ProgramShapeProto { parameters: vec![scalar.clone()], result: Some(root_shape.clone()), parameter_names: vec!["p".to_owned()] };
        let mut instructions = Vec::with_capacity(ops.len() + 2);
        instructions.push(HloInstructionProto { name: "p".to_owned(), opcode: "parameter".to_owned(), shape: Some(scalar.clone()), id: 1, ..HloInstructionProto::default() });
        for (op, id) in ops.iter().zip(2i64..) {
            instructions.push(HloInstructionProto {
                name: op.name.clone(),
                opcode: "custom-call".to_owned(),
                shape: Some(scalar.clone()),
                metadata: Some(OpMetadata { op_type: op.op_type.clone(), op_name: op.op_name.clone() }),
                custom_call_target: format!("roctx_utils.{}", op.op_type),
                id,
                operand_ids: vec![1],
                ..HloInstructionProto::default()
            });
        }
        // CAST: a count of ops, far below i64::MAX.
        let root_id = ops.len() as i64 + 2;
        instructions.push(HloInstructionProto {
            name: "result".to_owned(),
            opcode: "tuple".to_owned(),
            shape: Some(root_shape),
            id: root_id,
            operand_ids: (2..root_id).collect(),
            ..HloInstructionProto::default()
        });
        let program_id = PROGRAM_ID_BIT | (fnv1a(ops.iter().flat_map(|o| [o.name.as_bytes(), b"\0", o.op_type.as_bytes(), b"\0", o.op_name.as_bytes(), b"\n"])) & (PROGRAM_ID_BIT - 1));
        let module = HloModuleProto {
            name: MODULE_NAME.to_owned(),
            entry_computation_name: "main".to_owned(),
            computations: vec![HloComputationProto { name: "main".to_owned(), instructions, program_shape: Some(program_shape.clone()), id: 1, root_id }],
            host_program_shape: Some(program_shape),
            // CAST: bit 63 is clear.
            id: program_id as i64,
            entry_computation_id: 1,
        };
        OpModule { program_id, name: MODULE_NAME.to_owned(), hlo_proto: HloProto { hlo_module: Some(module) }.encode_to_vec() }
    }
}

fn fnv1a<'a>(parts: impl Iterator<Item = &'a [u8]>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in parts.flatten() {
        h = (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A valid, stable HLO instruction name for an op group's one-line label
/// (`MUL_MAT q4_K[4096,32000] f32[4096] -> f32[32000]` becomes
/// `MUL_MAT.q4_K_4096x32000.f32_4096.to.f32_32000`): letters, digits, `_`, `.` and `-` only, as
/// XLA's HLO parser accepts them, at most 200 bytes (a longer one ends in a hash of the whole).
pub fn instruction_name(label: &str) -> String {
    let mut out = String::with_capacity(label.len());
    for part in label.split(' ').filter(|p| !p.is_empty()) {
        if !out.is_empty() {
            out.push('.');
        }
        if part == "->" {
            out.push_str("to");
            continue;
        }
        for c in part.chars() {
            match c {
                'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '-' => out.push(c),
                '[' => out.push('_'),
                ',' => out.push('x'),
                '+' => out.push('-'),
                ']' => {}
                _ => out.push('_'),
            }
        }
    }
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '.') {
        out.insert_str(0, "op_");
    }
    const MAX: usize = 200;
    if out.len() > MAX {
        let hash = fnv1a(std::iter::once(label.as_bytes()));
        out.truncate(MAX - 17);
        out.push_str(&format!(".{hash:016x}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn a_label_becomes_a_valid_stable_instruction_name() {
        assert_eq!(instruction_name("MUL_MAT q4_K[4096,32000] f32[4096] -> f32[32000]"), "MUL_MAT.q4_K_4096x32000.f32_4096.to.f32_32000");
        assert_eq!(instruction_name("MUL_MAT+ADD q4_K[4864,896] f32[4864] -> f32[896]"), "MUL_MAT-ADD.q4_K_4864x896.f32_4864.to.f32_896");
        assert_eq!(instruction_name(""), "op_");
        assert_eq!(instruction_name("9 é"), "op_9._");
        let long = format!("ADD {}", "f32[1,2,3,4] ".repeat(40));
        let name = instruction_name(&long);
        assert_eq!(name.len(), 200);
        assert_ne!(name, instruction_name(&format!("{long}x")), "the hash keeps long names apart");
        assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c)));
    }

    #[test]
    fn the_module_has_a_parameter_a_custom_call_per_op_and_a_tuple_root() {
        let ops = [
            OpInstruction { name: "MUL_MAT.a".into(), op_type: "MUL_MAT".into(), op_name: "MUL_MAT/a".into() },
            OpInstruction { name: "ADD.b".into(), op_type: "ADD".into(), op_name: "ADD/b".into() },
        ];
        let m = OpModule::new(&ops);
        assert_ne!(m.program_id & PROGRAM_ID_BIT, 0);
        assert_eq!(m.program_id >> 63, 0, "an int64 program id, positive");
        assert_eq!(OpModule::new(&ops).program_id, m.program_id, "stable");
        assert_ne!(OpModule::new(&ops[..1]).program_id, m.program_id);
        let proto = HloProto::decode(m.hlo_proto.as_slice()).unwrap();
        let module = proto.hlo_module.unwrap();
        assert_eq!(module.id as u64, m.program_id);
        let main = &module.computations[0];
        assert_eq!((module.entry_computation_id, main.id), (1, 1));
        let opcodes: Vec<&str> = main.instructions.iter().map(|i| i.opcode.as_str()).collect();
        assert_eq!(opcodes, ["parameter", "custom-call", "custom-call", "tuple"]);
        assert_eq!(main.root_id, 4);
        assert_eq!(main.instructions[3].operand_ids, [2, 3]);
        assert_eq!(main.instructions[1].metadata.as_ref().unwrap().op_type, "MUL_MAT");
        assert_eq!(main.instructions[2].custom_call_target, "roctx_utils.ADD");
        let ids: std::collections::BTreeSet<i64> = main.instructions.iter().map(|i| i.id).collect();
        assert_eq!(ids.len(), 4, "unique ids");
    }

    /// The prost tags above against the `.proto` subset: every `name = N;` of a message there is
    /// a field of that number here, and the reverse (by the encoded bytes of a value with every
    /// field set).
    #[test]
    fn the_messages_match_the_proto_subset() {
        let text = include_str!("../proto/xla_hlo_subset.proto");
        let fields = |message: &str| -> Vec<u32> {
            let start = text.find(&format!("message {message} {{")).unwrap_or_else(|| panic!("{message} in the .proto"));
            let body = &text[start..start + text[start..].find('}').unwrap()];
            body.lines().filter_map(|l| l.split('=').nth(1)).filter_map(|n| n.trim().trim_end_matches(';').trim().parse().ok()).collect()
        };
        let tags = |bytes: Vec<u8>| -> Vec<u32> {
            let mut out = Vec::new();
            let mut buf = bytes.as_slice();
            while !buf.is_empty() {
                let key = prost::encoding::decode_varint(&mut buf).unwrap();
                let (tag, wire) = ((key >> 3) as u32, (key & 7) as u8);
                if !out.contains(&tag) {
                    out.push(tag);
                }
                match wire {
                    0 => {
                        prost::encoding::decode_varint(&mut buf).unwrap();
                    }
                    2 => {
                        let len = prost::encoding::decode_varint(&mut buf).unwrap() as usize;
                        buf = &buf[len..];
                    }
                    _ => panic!("wire type {wire}"),
                }
            }
            out.sort_unstable();
            out
        };
        let sorted = |mut v: Vec<u32>| {
            v.sort_unstable();
            v
        };
        let shape = ShapeProto { element_type: 1, dimensions: vec![1], tuple_shapes: vec![ShapeProto::default()] };
        let program = ProgramShapeProto { parameters: vec![shape.clone()], result: Some(shape.clone()), parameter_names: vec!["p".into()] };
        let meta = OpMetadata { op_type: "t".into(), op_name: "n".into() };
        let inst = HloInstructionProto { name: "n".into(), opcode: "o".into(), shape: Some(shape.clone()), metadata: Some(meta.clone()), parameter_number: 1, custom_call_target: "t".into(), id: 1, operand_ids: vec![1] };
        let comp = HloComputationProto { name: "c".into(), instructions: vec![inst.clone()], program_shape: Some(program.clone()), id: 1, root_id: 1 };
        let module = HloModuleProto { name: "m".into(), entry_computation_name: "c".into(), computations: vec![comp.clone()], host_program_shape: Some(program.clone()), id: 1, entry_computation_id: 1 };
        let proto = HloProto { hlo_module: Some(module.clone()) };
        assert_eq!(tags(proto.encode_to_vec()), sorted(fields("HloProto")));
        assert_eq!(tags(module.encode_to_vec()), sorted(fields("HloModuleProto")));
        assert_eq!(tags(comp.encode_to_vec()), sorted(fields("HloComputationProto")));
        assert_eq!(tags(inst.encode_to_vec()), sorted(fields("HloInstructionProto")));
        assert_eq!(tags(shape.encode_to_vec()), sorted(fields("ShapeProto")));
        assert_eq!(tags(program.encode_to_vec()), sorted(fields("ProgramShapeProto")));
        assert_eq!(tags(meta.encode_to_vec()), sorted(fields("OpMetadata")));
    }
}
