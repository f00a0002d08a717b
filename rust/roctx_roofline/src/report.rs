//! The roofline report, as the profiler writes it (spec `roofline.md` §5): the model, a writer
//! and a strict parser. Owns the schema, its key order and every message about a bad report;
//! never computes a metric (that is [`crate::analysis`]).
//!
//! Two formats parse: ours, whose top level carries `"schema_version": 1`, and the llama.cpp
//! reference (`GGML_HIP_ROOFLINE`, PRs #33-#53), which has no `schema_version`. Keys this
//! version does not know (the storage and tensor ids of §5.5, operand identities) are skipped,
//! and not written back.
//!
//! The parser refuses, naming the JSON path of the first bad value
//! (`rows[3].kernels[0].gpu_time_us: expected a number, got "12"`): malformed or truncated
//! JSON, a missing field, a value of the wrong type, negative or non-finite times, shapes that
//! are not 4 non-negative integers, more than 16 `op_params`, per-source arrays of different
//! lengths, a `tokens_per_expert` whose length is not `n_experts`, and documents over
//! [`MAX_REPORT_BYTES`].

use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value};

/// The `schema_version` this crate writes and reads. Version 1 is the PR #33 row schema plus
/// the §5.5 fields, with fused rows' `bytes` being the group's external traffic (§5.3).
pub const SCHEMA_VERSION: u64 = 1;

/// `moe_accounting`: `experts_used` is `min(M·top_k, n_experts)`, from the shapes alone (exact at
/// one token, where top-k picks distinct experts; an upper bound above).
pub const MOE_ANALYTIC: &str = "analytic";
/// `moe_accounting`: `experts_used` and `tokens_per_expert` from the ids read back.
pub const MOE_EXACT: &str = "exact";
/// `moe_accounting`: `experts_used` as the host set it (`roctx_utils_op_set_experts_used`).
pub const MOE_HOST: &str = "host";

/// The largest report parsed, 1 GiB. The document is held as a JSON tree while it is checked,
/// which takes several times its size in memory; a profile of a long run is far smaller (one
/// row per op invocation, a few hundred bytes each).
pub const MAX_REPORT_BYTES: usize = 1 << 30;

/// `GGML_MAX_OP_PARAMS / 4`: a row has at most this many `op_params`.
pub const MAX_OP_PARAMS: usize = 16;

/// A whole report (§5.1).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// [`SCHEMA_VERSION`] for our reports; `None` for the llama.cpp reference format.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<u64>,
    /// GPU architecture (`"gfx1151"`), empty if the profiler never learned it.
    pub device: String,
    /// Σ of every dispatch's device time, invocation 0 excluded (§3), in µs.
    pub total_gpu_time_us: f64,
    /// Why this report holds only part of the run, when it does: written at a signal that ended
    /// the process, or as a snapshot while it ran (docs/reliability.md). Ours only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cut_short: Option<String>,
    /// One row per op invocation that dispatched a kernel; order unspecified.
    pub rows: Vec<Row>,
}

/// One op invocation (§5.2, §5.5). Optional fields are `None` when the producer predates them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Row {
    /// Invocation id; 0 is the sentinel that collects unattributed kernels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invocation: Option<u64>,
    /// ggml node name (the head node's on fused rows).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `ggml_op_desc`: `MUL_MAT`, `ADD`, a unary or GLU sub-op name, ...
    pub ggml_op: String,
    /// One entry per fused node in graph order; empty (and not written) on unfused rows.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fused_ops: Vec<FusedOp>,
    /// Destination type name.
    pub dtype: String,
    /// `src[0]` type name (the weight quantisation of a matmul); `""` without a source.
    pub quant: String,
    /// Destination shape.
    pub ne: [u64; 4],
    /// Source shapes, up to the last non-null source.
    pub src_ne: Vec<[u64; 4]>,
    /// Source type names, `""` for a null slot; as long as `src_ne`.
    pub src_types: Vec<String>,
    /// Raw op parameters, at most [`MAX_OP_PARAMS`].
    pub op_params: Vec<i32>,
    /// HBM traffic in bytes; a fused row's external traffic (§5.3).
    pub bytes: u64,
    /// `ggml_nbytes(dst)`; a fused group's final output.
    pub dst_bytes: u64,
    /// `ggml_nbytes(src_i)` (the head node's sources on fused rows); as long as `src_ne`.
    pub src_bytes: Vec<u64>,
    /// Matmul rows (tokens); 0 for other ops.
    #[serde(rename = "M")]
    pub m: u64,
    /// Matmul output rows (`src[0].ne[1]`).
    #[serde(rename = "N")]
    pub n: u64,
    /// Matmul reduction length (`src[0].ne[0]`).
    #[serde(rename = "K")]
    pub k: u64,
    /// `MUL_MAT_ID`: number of experts (`src[0].ne[2]`); 0 otherwise.
    pub n_experts: u64,
    /// `MUL_MAT_ID`: experts routed per token; 0 otherwise.
    pub top_k: u64,
    /// `MUL_MAT_ID`: distinct experts this launch routed to; `Some(0)` if the read-back failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub experts_used: Option<u64>,
    /// `MUL_MAT_ID` with read-back ids: routings per expert, `n_experts` long.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_per_expert: Option<Vec<u64>>,
    /// `MUL_MAT_ID`: how `experts_used` was counted ([`MOE_ANALYTIC`], [`MOE_EXACT`],
    /// [`MOE_HOST`]); absent in the llama.cpp reference format, which always reads back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moe_accounting: Option<String>,
    /// Dispatches in device start order.
    pub kernels: Vec<Kernel>,
}

/// One node of a fused row (§5.2), with its own geometry so FLOPs can be summed exactly.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FusedOp {
    /// `ggml_op_desc` of the node.
    pub ggml_op: String,
    /// Destination type name.
    pub dtype: String,
    /// `src[0]` type name.
    pub quant: String,
    /// Destination shape.
    pub ne: [u64; 4],
    /// Source shapes.
    pub src_ne: Vec<[u64; 4]>,
    /// Source type names.
    pub src_types: Vec<String>,
    /// Raw op parameters, at most [`MAX_OP_PARAMS`].
    pub op_params: Vec<i32>,
    /// Matmul rows; 0 for other ops.
    #[serde(rename = "M")]
    pub m: u64,
    /// Matmul output rows.
    #[serde(rename = "N")]
    pub n: u64,
    /// Matmul reduction length.
    #[serde(rename = "K")]
    pub k: u64,
    /// `MUL_MAT_ID`: experts routed per token.
    pub top_k: u64,
    /// `MUL_MAT_ID`: number of experts (later revisions only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n_experts: Option<u64>,
}

/// One kernel dispatch.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Kernel {
    /// Demangled kernel name, `""` if the code-object service was unavailable.
    pub name: String,
    /// Device duration in µs.
    pub gpu_time_us: f64,
}

/// Why a report was refused: the JSON path of the bad value (empty for the document as a
/// whole) and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportError {
    /// `rows[3].kernels[0].gpu_time_us`, or `""`.
    pub path: String,
    /// What is wrong, e.g. `expected a number, got "12"`.
    pub message: String,
}

impl fmt::Display for ReportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for ReportError {}

impl Report {
    /// An empty report of our schema for `device`.
    pub fn new(device: impl Into<String>) -> Report {
        Report { schema_version: Some(SCHEMA_VERSION), device: device.into(), total_gpu_time_us: 0.0, cut_short: None, rows: Vec::new() }
    }

    /// The report as pretty JSON: keys in schema order, strings fully escaped, numbers with
    /// full precision (shortest round-trip form). Refuses (naming the path) what the parser
    /// would refuse, so a written report always reads back equal: a negative or non-finite
    /// time, a bad array length.
    pub fn to_json(&self) -> Result<String, ReportError> {
        self.validate()?;
        serde_json::to_string_pretty(self).map_err(|err| ReportError { path: String::new(), message: err.to_string() })
    }

    /// Parses a report (ours or the reference format); see the module docs for what is refused.
    pub fn from_json(text: &str) -> Result<Report, ReportError> {
        Report::from_slice(text.as_bytes())
    }

    /// [`Report::from_json`] on bytes, which must be UTF-8 JSON of at most [`MAX_REPORT_BYTES`].
    pub fn from_slice(bytes: &[u8]) -> Result<Report, ReportError> {
        if bytes.len() > MAX_REPORT_BYTES {
            return Err(top(format!("the report is {} bytes, over the limit of 1 GiB ({MAX_REPORT_BYTES} bytes)", bytes.len())));
        }
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err(top("the report is empty (expected a JSON object)".to_owned()));
        }
        let doc: Value = serde_json::from_slice(bytes).map_err(|err| {
            use serde_json::error::Category;
            top(match err.classify() {
                Category::Eof => format!("truncated JSON: {err}"),
                Category::Io => format!("reading JSON: {err}"),
                Category::Syntax | Category::Data => format!("malformed JSON: {err}"),
            })
        })?;
        parse_report(&doc)
    }

    /// Checks what [`Report::to_json`] checks: the values the parser accepts.
    fn validate(&self) -> Result<(), ReportError> {
        if let Some(v) = self.schema_version {
            if v != SCHEMA_VERSION {
                return Err(at("schema_version", format!("this version writes schema {SCHEMA_VERSION}, not {v}")));
            }
        }
        check_time(self.total_gpu_time_us, "total_gpu_time_us")?;
        for (i, row) in self.rows.iter().enumerate() {
            let p = format!("rows[{i}]");
            check_sources(&p, row.src_ne.len(), row.src_types.len(), Some(row.src_bytes.len()))?;
            check_op_params(&p, row.op_params.len())?;
            if let Some(t) = &row.tokens_per_expert {
                check_tokens_per_expert(&p, t.len(), row.n_experts)?;
            }
            for (j, f) in row.fused_ops.iter().enumerate() {
                let fp = format!("{p}.fused_ops[{j}]");
                check_sources(&fp, f.src_ne.len(), f.src_types.len(), None)?;
                check_op_params(&fp, f.op_params.len())?;
            }
            for (j, k) in row.kernels.iter().enumerate() {
                check_time(k.gpu_time_us, &format!("{p}.kernels[{j}].gpu_time_us"))?;
            }
        }
        Ok(())
    }
}

fn top(message: String) -> ReportError {
    ReportError { path: String::new(), message }
}

fn at(path: &str, message: impl Into<String>) -> ReportError {
    ReportError { path: path.to_owned(), message: message.into() }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// A short rendering of a bad value for messages: its JSON, cut at 40 characters.
fn shown(v: &Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(40) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}

fn expected(path: &str, what: &str, v: &Value) -> ReportError {
    at(path, format!("expected {what}, got {}", shown(v)))
}

fn check_time(t: f64, path: &str) -> Result<(), ReportError> {
    if !t.is_finite() {
        return Err(at(path, format!("time must be finite, got {t}")));
    }
    if t < 0.0 {
        return Err(at(path, format!("time must not be negative, got {t}")));
    }
    Ok(())
}

fn check_sources(path: &str, ne: usize, types: usize, bytes: Option<usize>) -> Result<(), ReportError> {
    if types != ne {
        return Err(at(&join(path, "src_types"), format!("has {types} entries but src_ne has {ne}; there is one per source")));
    }
    match bytes {
        Some(b) if b != ne => Err(at(&join(path, "src_bytes"), format!("has {b} entries but src_ne has {ne}; there is one per source"))),
        _ => Ok(()),
    }
}

fn check_op_params(path: &str, len: usize) -> Result<(), ReportError> {
    if len > MAX_OP_PARAMS {
        return Err(at(&join(path, "op_params"), format!("has {len} entries, more than ggml's {MAX_OP_PARAMS}")));
    }
    Ok(())
}

fn check_tokens_per_expert(path: &str, len: usize, n_experts: u64) -> Result<(), ReportError> {
    if len as u64 != n_experts {
        return Err(at(&join(path, "tokens_per_expert"), format!("has {len} entries but n_experts is {n_experts}; there is one per expert")));
    }
    Ok(())
}

// --- parsing ---------------------------------------------------------------------------------

/// An object's fields, with the object's path for messages.
struct Obj<'a> {
    map: &'a Map<String, Value>,
    path: String,
}

impl<'a> Obj<'a> {
    fn new(v: &'a Value, path: String) -> Result<Obj<'a>, ReportError> {
        match v.as_object() {
            Some(map) => Ok(Obj { map, path }),
            None => Err(expected(&path, "an object", v)),
        }
    }

    fn path(&self, key: &str) -> String {
        join(&self.path, key)
    }

    fn get(&self, key: &str) -> Result<&'a Value, ReportError> {
        self.map.get(key).ok_or_else(|| at(&self.path(key), "missing"))
    }

    /// `None` when absent or `null` (a producer may write either for "not known").
    fn opt(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    fn string(&self, key: &str) -> Result<String, ReportError> {
        as_string(self.get(key)?, &self.path(key))
    }

    fn uint(&self, key: &str) -> Result<u64, ReportError> {
        as_uint(self.get(key)?, &self.path(key))
    }

    fn opt_uint(&self, key: &str) -> Result<Option<u64>, ReportError> {
        self.opt(key).map(|v| as_uint(v, &self.path(key))).transpose()
    }

    fn time(&self, key: &str) -> Result<f64, ReportError> {
        as_time(self.get(key)?, &self.path(key))
    }

    fn array(&self, key: &str) -> Result<&'a Vec<Value>, ReportError> {
        as_array(self.get(key)?, &self.path(key))
    }
}

fn as_string(v: &Value, path: &str) -> Result<String, ReportError> {
    v.as_str().map(str::to_owned).ok_or_else(|| expected(path, "a string", v))
}

fn as_array<'a>(v: &'a Value, path: &str) -> Result<&'a Vec<Value>, ReportError> {
    v.as_array().ok_or_else(|| expected(path, "an array", v))
}

/// The largest integer an `f64` holds exactly.
const MAX_EXACT_F64: f64 = 9_007_199_254_740_992.0;

/// A non-negative integer; an integral float (`2.47808e+06` from a C++ stream) is accepted
/// while it is exact.
fn as_uint(v: &Value, path: &str) -> Result<u64, ReportError> {
    if let Some(n) = v.as_u64() {
        return Ok(n);
    }
    if v.as_i64().is_some() {
        return Err(expected(path, "a non-negative integer", v));
    }
    match v.as_f64() {
        // CAST: integral, non-negative and at most 2^53, so exact in u64.
        Some(f) if f.is_finite() && f >= 0.0 && f.fract() == 0.0 && f <= MAX_EXACT_F64 => Ok(f as u64),
        Some(_) => Err(expected(path, "a non-negative integer (exact, at most 2^53 if written as a float)", v)),
        None => Err(expected(path, "a non-negative integer", v)),
    }
}

fn as_time(v: &Value, path: &str) -> Result<f64, ReportError> {
    let Some(t) = v.as_f64() else { return Err(expected(path, "a number", v)) };
    check_time(t, path)?;
    Ok(t)
}

fn as_ne(v: &Value, path: &str) -> Result<[u64; 4], ReportError> {
    let items = v.as_array().ok_or_else(|| expected(path, "4 integers", v))?;
    if items.len() != 4 {
        return Err(at(path, format!("expected 4 integers, got {} values", items.len())));
    }
    let mut ne = [0u64; 4];
    for (i, item) in items.iter().enumerate() {
        ne[i] = as_uint(item, &format!("{path}[{i}]"))?;
    }
    Ok(ne)
}

fn as_op_params(v: &Value, path: &str) -> Result<Vec<i32>, ReportError> {
    let items = as_array(v, path)?;
    if items.len() > MAX_OP_PARAMS {
        return Err(at(path, format!("has {} entries, more than ggml's {MAX_OP_PARAMS}", items.len())));
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let p = format!("{path}[{i}]");
        // ggml stores int32 words; a producer printing them unsigned is read back bit for bit.
        let word = match item.as_i64() {
            // CAST: range-checked to i32 or u32 just here; a u32 keeps its bits.
            Some(w) if (i64::from(i32::MIN)..=i64::from(u32::MAX)).contains(&w) => w as u32 as i32,
            _ => return Err(expected(&p, "a 32-bit integer", item)),
        };
        out.push(word);
    }
    Ok(out)
}

fn as_list<T>(v: &Value, path: &str, each: impl Fn(&Value, &str) -> Result<T, ReportError>) -> Result<Vec<T>, ReportError> {
    as_array(v, path)?.iter().enumerate().map(|(i, item)| each(item, &format!("{path}[{i}]"))).collect()
}

fn parse_report(doc: &Value) -> Result<Report, ReportError> {
    let o = Obj::new(doc, String::new()).map_err(|_| top(format!("expected a JSON object at the top level, got {}", shown(doc))))?;
    let schema_version = o.opt_uint("schema_version")?;
    if let Some(v) = schema_version {
        if v != SCHEMA_VERSION {
            return Err(at("schema_version", format!("{v} is not supported; this roctx reads schema {SCHEMA_VERSION} and the llama.cpp reference format (no schema_version)")));
        }
    }
    let device = o.string("device")?;
    let total_gpu_time_us = o.time("total_gpu_time_us")?;
    let cut_short = o.opt("cut_short").map(|v| as_string(v, &o.path("cut_short"))).transpose()?;
    let rows = o.array("rows")?.iter().enumerate().map(|(i, v)| parse_row(v, format!("rows[{i}]"))).collect::<Result<_, _>>()?;
    Ok(Report { schema_version, device, total_gpu_time_us, cut_short, rows })
}

fn parse_row(v: &Value, path: String) -> Result<Row, ReportError> {
    let o = Obj::new(v, path)?;
    let src_ne = as_list(o.get("src_ne")?, &o.path("src_ne"), as_ne)?;
    let src_types = as_list(o.get("src_types")?, &o.path("src_types"), as_string)?;
    let src_bytes = as_list(o.get("src_bytes")?, &o.path("src_bytes"), as_uint)?;
    check_sources(&o.path, src_ne.len(), src_types.len(), Some(src_bytes.len()))?;
    let n_experts = o.opt_uint("n_experts")?.unwrap_or(0);
    let tokens_per_expert = o.opt("tokens_per_expert").map(|t| as_list(t, &o.path("tokens_per_expert"), as_uint)).transpose()?;
    if let Some(t) = &tokens_per_expert {
        check_tokens_per_expert(&o.path, t.len(), n_experts)?;
    }
    let fused_ops = match o.opt("fused_ops") {
        Some(f) => as_array(f, &o.path("fused_ops"))?.iter().enumerate().map(|(i, e)| parse_fused(e, o.path(&format!("fused_ops[{i}]")))).collect::<Result<_, _>>()?,
        None => Vec::new(),
    };
    let kernels = o
        .array("kernels")?
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let k = Obj::new(k, o.path(&format!("kernels[{i}]")))?;
            Ok(Kernel { name: k.string("name")?, gpu_time_us: k.time("gpu_time_us")? })
        })
        .collect::<Result<_, ReportError>>()?;
    Ok(Row {
        invocation: o.opt_uint("invocation")?,
        name: o.opt("name").map(|n| as_string(n, &o.path("name"))).transpose()?,
        ggml_op: o.string("ggml_op")?,
        fused_ops,
        dtype: o.string("dtype")?,
        quant: o.string("quant")?,
        ne: as_ne(o.get("ne")?, &o.path("ne"))?,
        src_ne,
        src_types,
        op_params: as_op_params(o.get("op_params")?, &o.path("op_params"))?,
        bytes: o.uint("bytes")?,
        dst_bytes: o.uint("dst_bytes")?,
        src_bytes,
        m: o.uint("M")?,
        n: o.uint("N")?,
        k: o.uint("K")?,
        n_experts,
        top_k: o.opt_uint("top_k")?.unwrap_or(0),
        experts_used: o.opt_uint("experts_used")?,
        tokens_per_expert,
        moe_accounting: o.opt("moe_accounting").map(|a| as_string(a, &o.path("moe_accounting"))).transpose()?,
        kernels,
    })
}

fn parse_fused(v: &Value, path: String) -> Result<FusedOp, ReportError> {
    let o = Obj::new(v, path)?;
    let src_ne = as_list(o.get("src_ne")?, &o.path("src_ne"), as_ne)?;
    let src_types = as_list(o.get("src_types")?, &o.path("src_types"), as_string)?;
    check_sources(&o.path, src_ne.len(), src_types.len(), None)?;
    Ok(FusedOp {
        ggml_op: o.string("ggml_op")?,
        dtype: o.string("dtype")?,
        quant: o.string("quant")?,
        ne: as_ne(o.get("ne")?, &o.path("ne"))?,
        src_ne,
        src_types,
        op_params: as_op_params(o.get("op_params")?, &o.path("op_params"))?,
        m: o.uint("M")?,
        n: o.uint("N")?,
        k: o.uint("K")?,
        top_k: o.opt_uint("top_k")?.unwrap_or(0),
        n_experts: o.opt_uint("n_experts")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row_json(extra: &str) -> String {
        format!(
            r#"{{"ggml_op":"ADD","dtype":"f32","quant":"f32","ne":[896,1,1,1],"src_ne":[[896,1,1,1],[896,1,1,1]],
               "src_types":["f32","f32"],"op_params":[0,0],"bytes":10752,"dst_bytes":3584,"src_bytes":[3584,3584],
               "M":0,"N":0,"K":0,"kernels":[{{"name":"k<1>","gpu_time_us":1.5}}]{extra}}}"#
        )
    }

    fn doc(rows: &str) -> String {
        format!(r#"{{"schema_version":1,"device":"gfx942","total_gpu_time_us":1.5,"rows":[{rows}]}}"#)
    }

    fn err(text: &str) -> String {
        Report::from_json(text).expect_err("should be refused").to_string()
    }

    #[test]
    fn a_report_cut_short_says_why_and_keeps_it_through_a_round_trip() {
        let mut r = Report::new("gfx942");
        assert!(!r.to_json().unwrap().contains("cut_short"), "absent from a complete report");
        r.cut_short = Some("cut short by SIGTERM".into());
        let text = r.to_json().unwrap();
        assert_eq!(Report::from_json(&text).unwrap().cut_short.as_deref(), Some("cut short by SIGTERM"));
        let bad = r#"{"device":"","total_gpu_time_us":0,"cut_short":7,"rows":[]}"#;
        assert!(Report::from_json(bad).unwrap_err().to_string().starts_with("cut_short: "), "a wrong type is named");
    }

    #[test]
    fn a_reference_report_without_schema_version_parses_and_unknown_keys_are_skipped() {
        let text = format!(r#"{{"device":"gfx1151","total_gpu_time_us":1.5,"rows":[{}],"future":1}}"#, row_json(r#","out_storage_id":7,"in_storage_ids":[1,2]"#));
        let r = Report::from_json(&text).unwrap();
        assert_eq!(r.schema_version, None);
        assert_eq!(r.device, "gfx1151");
        assert_eq!(r.rows[0].ne, [896, 1, 1, 1]);
        assert_eq!(r.rows[0].kernels[0], Kernel { name: "k<1>".into(), gpu_time_us: 1.5 });
        assert_eq!(r.rows[0].experts_used, None);
    }

    #[test]
    fn to_json_round_trips_with_schema_order_escaping_and_full_precision() {
        let mut r = Report::from_json(&doc(&row_json(r#","invocation":3,"name":"ffn \"out\"\n<&>""#))).unwrap();
        r.total_gpu_time_us = 0.1 + 0.2; // 0.30000000000000004: must survive exactly
        r.rows[0].kernels[0].name = "a\u{1}b\"\\".into();
        let text = r.to_json().unwrap();
        assert_eq!(Report::from_json(&text).unwrap(), r);
        assert!(text.contains("0.30000000000000004"), "{text}");
        assert!(text.contains(r#""a\u0001b\"\\""#), "{text}");
        let order: Vec<usize> = ["\"schema_version\"", "\"device\"", "\"total_gpu_time_us\"", "\"rows\"", "\"invocation\"", "\"ggml_op\"", "\"dtype\"", "\"ne\"", "\"bytes\"", "\"M\"", "\"kernels\""]
            .iter()
            .map(|k| text.find(k).unwrap_or_else(|| panic!("{k} missing in {text}")))
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}\n{text}");
        assert!(!text.contains("fused_ops"), "unfused rows carry no fused_ops: {text}");
    }

    #[test]
    fn to_json_refuses_what_the_parser_would() {
        let mut r = Report::new("gfx942");
        r.total_gpu_time_us = f64::NAN;
        assert_eq!(r.to_json().unwrap_err().to_string(), "total_gpu_time_us: time must be finite, got NaN");
        r.total_gpu_time_us = 1.0;
        r.rows.push(Row { src_ne: vec![[1, 1, 1, 1]], ..Row::default() });
        assert!(r.to_json().unwrap_err().to_string().starts_with("rows[0].src_types: has 0 entries but src_ne has 1"));
    }

    #[test]
    fn errors_name_the_json_path_of_the_bad_value() {
        let bad_time = doc(&row_json("").replace(r#""gpu_time_us":1.5"#, r#""gpu_time_us":"12""#));
        assert_eq!(err(&bad_time), r#"rows[0].kernels[0].gpu_time_us: expected a number, got "12""#);
        let negative = doc(&row_json("").replace("1.5}", "-0.5}"));
        assert_eq!(err(&negative), "rows[0].kernels[0].gpu_time_us: time must not be negative, got -0.5");
        assert_eq!(err(&doc(&row_json("").replace("[896,1,1,1],\"src_ne\"", "[896,1,1],\"src_ne\""))), "rows[0].ne: expected 4 integers, got 3 values");
        assert_eq!(err(&doc(&row_json("").replace("[896,1,1,1],\"src_ne\"", "[896,-1,1,1],\"src_ne\""))), "rows[0].ne[1]: expected a non-negative integer, got -1");
        assert_eq!(err(&doc(&row_json("").replace("\"bytes\":10752,", ""))), "rows[0].bytes: missing");
        assert_eq!(err(&doc(&row_json("").replace("[0,0]", &format!("[{}]", ["0"; 17].join(","))))), "rows[0].op_params: has 17 entries, more than ggml's 16");
        assert_eq!(err(&doc(&row_json("").replace("[3584,3584]", "[3584]"))), "rows[0].src_bytes: has 1 entries but src_ne has 2; there is one per source");
        assert_eq!(err(&doc(&row_json(r#","n_experts":4,"tokens_per_expert":[1,2]"#))), "rows[0].tokens_per_expert: has 2 entries but n_experts is 4; there is one per expert");
        assert_eq!(err(&doc(&format!("{},7", row_json("")))), "rows[1]: expected an object, got 7");
        assert_eq!(err(r#"{"schema_version":2,"device":"","total_gpu_time_us":0,"rows":[]}"#).split(';').next().unwrap(), "schema_version: 2 is not supported");
        assert!(err("[1,2]").starts_with("expected a JSON object at the top level"));
    }

    #[test]
    fn truncated_malformed_empty_and_overflowing_documents_are_refused() {
        let full = doc(&row_json(""));
        assert!(err(&full[..full.len() - 3]).starts_with("truncated JSON: EOF while parsing"), "{}", err(&full[..full.len() - 3]));
        assert!(err(&full.replace(":1.5", ":1.5.2")).starts_with("malformed JSON"));
        assert_eq!(err("  \n"), "the report is empty (expected a JSON object)");
        assert!(err(&doc(&row_json("").replace("\"bytes\":10752", "\"bytes\":1e300"))).starts_with("rows[0].bytes: expected a non-negative integer (exact"));
        assert!(err(&doc(&row_json("").replace("1.5}", "1e999}"))).starts_with("malformed JSON") || err(&doc(&row_json("").replace("1.5}", "1e999}"))).contains("finite"));
        assert_eq!(Report::from_json(&doc(&row_json("").replace("\"bytes\":10752", "\"bytes\":10752.0"))).unwrap().rows[0].bytes, 10752);
    }

    #[test]
    fn op_params_printed_unsigned_keep_their_bits() {
        let r = Report::from_json(&doc(&row_json("").replace("[0,0]", "[4294967295,-2]"))).unwrap();
        assert_eq!(r.rows[0].op_params, [-1, -2]);
        assert!(err(&doc(&row_json("").replace("[0,0]", "[4294967296]"))).starts_with("rows[0].op_params[0]: expected a 32-bit integer"));
    }
}
