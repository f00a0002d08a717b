//! Device peaks (spec §7): the per-architecture table, each entry with its source, and the
//! choice of compute ceiling for an op. Owns every number that is a hardware claim; nothing
//! else in the crate holds one.
//!
//! AMD peaks are derived, never typed in: FLOP/clk/CU (§7.1) × CUs × clock (§7.2); the tests
//! reproduce the spec's consistency checks and ridge points (§7.3). Left out: gfx908 and gfx950,
//! for which §7 gives per-CU rates (XProf's table) but neither a CU count and clock nor a memory
//! bandwidth, so no device peak can be derived or cited. The NVIDIA H200 entry holds the
//! datasheet totals directly (no per-SM table is cited).
//!
//! All values are nominal (peak engine clock, datasheet bandwidth); measured ceilings are lower
//! (§6, §7.4), so percentages are of the datasheet peak and say so.

use std::fmt;

use serde::Serialize;

/// A compute ceiling: which unit, at which precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ceiling {
    /// FP64 vector ALU.
    Fp64Vector,
    /// FP64 matrix cores.
    Fp64Matrix,
    /// FP32 vector ALU; on RDNA3/3.5 this assumes dual issue (VOPD / wave64).
    Fp32Vector,
    /// FP32 vector ALU without dual issue (RDNA3/3.5, §7.4).
    Fp32VectorSingleIssue,
    /// FP32 vector ALU with packed FP32 (CDNA2 `v_pk_fma_f32`).
    Fp32VectorPacked,
    /// FP32 matrix cores.
    Fp32Matrix,
    /// TF32 matrix cores.
    Tf32Matrix,
    /// FP16 matrix cores (RDNA: WMMA).
    Fp16Matrix,
    /// BF16 matrix cores.
    Bf16Matrix,
    /// FP8 matrix cores.
    Fp8Matrix,
    /// INT8 matrix cores (OP/s).
    Int8Matrix,
    /// A compute peak given with `--peak-flops`.
    Override,
}

impl Ceiling {
    /// A short label: `fp16 matrix`, `fp32 vector (single issue)`.
    pub fn label(self) -> &'static str {
        match self {
            Ceiling::Fp64Vector => "fp64 vector",
            Ceiling::Fp64Matrix => "fp64 matrix",
            Ceiling::Fp32Vector => "fp32 vector",
            Ceiling::Fp32VectorSingleIssue => "fp32 vector (single issue)",
            Ceiling::Fp32VectorPacked => "fp32 vector (packed)",
            Ceiling::Fp32Matrix => "fp32 matrix",
            Ceiling::Tf32Matrix => "tf32 matrix",
            Ceiling::Fp16Matrix => "fp16 matrix",
            Ceiling::Bf16Matrix => "bf16 matrix",
            Ceiling::Fp8Matrix => "fp8 matrix",
            Ceiling::Int8Matrix => "int8 matrix",
            Ceiling::Override => "--peak-flops",
        }
    }
}

impl fmt::Display for Ceiling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// How a device's rate for a ceiling is known.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rate {
    /// FLOP (or OP) per clock per CU, multiplied by the device's CUs and clock.
    PerCuPerClock(f64),
    /// A datasheet total in TFLOP/s, for devices without a cited per-unit table.
    Total(f64),
}

/// One row of the peak table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Device {
    /// The key `--device` takes (`"mi300x"`).
    pub key: &'static str,
    /// The gfx architecture a report's `device` names, if this entry is what it resolves to.
    pub arch: Option<&'static str>,
    /// Marketing name.
    pub gpu: &'static str,
    /// Compute units, if the peaks are derived from them.
    pub compute_units: Option<u32>,
    /// Peak engine clock in GHz, if the peaks are derived from it.
    pub clock_ghz: Option<f64>,
    /// Peak memory bandwidth in GB/s (10^9 B/s).
    pub mem_bw_gbs: f64,
    /// The memory, for the header (`"HBM3"`).
    pub memory: &'static str,
    /// Where the numbers come from (spec §7.2's source column).
    pub source: &'static str,
    /// Compute ceilings the device has.
    pub rates: &'static [(Ceiling, Rate)],
}

use Ceiling::*;
use Rate::{PerCuPerClock as Cu, Total};

const GFX942: &[(Ceiling, Rate)] = &[
    (Fp64Vector, Cu(128.0)),
    (Fp64Matrix, Cu(256.0)),
    (Fp32Vector, Cu(256.0)),
    (Fp32Matrix, Cu(256.0)),
    (Tf32Matrix, Cu(1024.0)),
    (Fp16Matrix, Cu(2048.0)),
    (Bf16Matrix, Cu(2048.0)),
    (Fp8Matrix, Cu(4096.0)),
    (Int8Matrix, Cu(4096.0)),
];

const GFX90A: &[(Ceiling, Rate)] = &[
    (Fp64Vector, Cu(128.0)),
    (Fp64Matrix, Cu(256.0)),
    (Fp32Vector, Cu(128.0)),
    (Fp32VectorPacked, Cu(256.0)),
    (Fp32Matrix, Cu(256.0)),
    (Fp16Matrix, Cu(1024.0)),
    (Bf16Matrix, Cu(1024.0)),
    (Int8Matrix, Cu(1024.0)),
];

/// RDNA3/3.5: FP32 with and without dual issue; FP16 is *derived* in §7.1 (512).
const RDNA3: &[(Ceiling, Rate)] = &[(Fp32Vector, Cu(256.0)), (Fp32VectorSingleIssue, Cu(128.0)), (Fp16Matrix, Cu(512.0))];

const H200: &[(Ceiling, Rate)] = &[(Fp32Vector, Total(67.0)), (Fp16Matrix, Total(989.0)), (Bf16Matrix, Total(989.0))];

/// The peak table. `gfx90a` resolves to one GCD of an MI250X: a rocprofiler agent (and so a
/// report's `device`) is one GCD, with half the package's CUs and bandwidth.
pub const DEVICES: &[Device] = &[
    Device {
        key: "mi300x",
        arch: Some("gfx942"),
        gpu: "AMD Instinct MI300X",
        compute_units: Some(304),
        clock_ghz: Some(2.1),
        mem_bw_gbs: 5300.0,
        memory: "HBM3",
        source: "ROCm/legacy-rocm-build:docs/conceptual/gpu-arch/mi300.md (spec roofline.md §7.2)",
        rates: GFX942,
    },
    Device {
        key: "mi250x-gcd",
        arch: Some("gfx90a"),
        gpu: "AMD Instinct MI250X, one GCD",
        compute_units: Some(110),
        clock_ghz: Some(1.7),
        mem_bw_gbs: 1600.0,
        memory: "HBM2e",
        source: "half of the MI250X package (Tom's Hardware spec table: 220 CU, 3.2 TB/s, 1.6 TB/s per GCD; spec roofline.md §7.2)",
        rates: GFX90A,
    },
    Device {
        key: "mi250x",
        arch: None,
        gpu: "AMD Instinct MI250X (both GCDs)",
        compute_units: Some(220),
        clock_ghz: Some(1.7),
        mem_bw_gbs: 3200.0,
        memory: "HBM2e",
        source: "Tom's Hardware spec table (spec roofline.md §7.2)",
        rates: GFX90A,
    },
    Device {
        key: "mi250",
        arch: None,
        gpu: "AMD Instinct MI250 (both GCDs)",
        compute_units: Some(208),
        clock_ghz: Some(1.7),
        mem_bw_gbs: 3200.0,
        memory: "HBM2e",
        source: "ROCm/legacy-rocm-build:docs/conceptual/gpu-arch/mi250.md (spec roofline.md §7.2)",
        rates: GFX90A,
    },
    Device {
        key: "rx7900xtx",
        arch: Some("gfx1100"),
        gpu: "AMD Radeon RX 7900 XTX",
        compute_units: Some(96),
        clock_ghz: Some(2.5),
        mem_bw_gbs: 960.0,
        memory: "GDDR6, 384-bit",
        source: "Tom's Hardware spec table; guru3d (spec roofline.md §7.2)",
        rates: RDNA3,
    },
    Device {
        key: "strix-halo",
        arch: Some("gfx1151"),
        gpu: "AMD Strix Halo / Radeon 8060S",
        compute_units: Some(40),
        clock_ghz: Some(2.9),
        mem_bw_gbs: 256.0,
        memory: "LPDDR5X-8000, 256-bit",
        source: "techpowerup (CU count, clock); ggml-org/llama.cpp#24438 (256 GB/s); ROCm/rocm-systems#4794, #5423 (spec roofline.md §7.2)",
        rates: RDNA3,
    },
    Device {
        key: "h200",
        arch: None,
        gpu: "NVIDIA H200 SXM",
        compute_units: None,
        clock_ghz: None,
        mem_bw_gbs: 4800.0,
        memory: "HBM3e",
        source: "NVIDIA H200 SXM datasheet (4.8 TB/s HBM3e; 989 TFLOP/s dense FP16/BF16 tensor, 67 TFLOP/s FP32)",
        rates: H200,
    },
];

impl Device {
    /// The device `name` names: a table key (`mi300x`) or a gfx architecture (`gfx942`),
    /// ASCII case-insensitive.
    pub fn lookup(name: &str) -> Option<&'static Device> {
        let name = name.trim();
        // HIP's gcnArchName carries target features ("gfx90a:sramecc+:xnack-"); the arch is
        // the part before the first ':'.
        let arch = name.split(':').next().unwrap_or(name);
        DEVICES.iter().find(|d| d.key.eq_ignore_ascii_case(name)).or_else(|| DEVICES.iter().find(|d| d.arch.is_some_and(|a| a.eq_ignore_ascii_case(arch))))
    }

    /// The table device a driver's product name names: the entry whose GPU name starts with
    /// it (`NVIDIA H200` is `NVIDIA H200 SXM`), ASCII case-insensitive; `None` for an empty or
    /// unknown name, or one that two entries start with.
    pub fn named(product: &str) -> Option<&'static Device> {
        let product = product.trim().to_ascii_lowercase();
        if product.is_empty() {
            return None;
        }
        let mut found = DEVICES.iter().filter(|d| d.gpu.to_ascii_lowercase().starts_with(&product));
        match (found.next(), found.next()) {
            (Some(d), None) => Some(d),
            _ => None,
        }
    }

    /// Peak memory bandwidth in B/s.
    pub fn mem_bw(&self) -> f64 {
        self.mem_bw_gbs * 1e9
    }

    /// Peak of `ceiling` in FLOP/s, if the device has that unit.
    pub fn peak_flops(&self, ceiling: Ceiling) -> Option<f64> {
        let (_, rate) = self.rates.iter().find(|(c, _)| *c == ceiling)?;
        match *rate {
            Total(tflops) => Some(tflops * 1e12),
            Cu(per_cu_clock) => Some(per_cu_clock * f64::from(self.compute_units?) * self.clock_ghz? * 1e9),
        }
    }
}

/// The peaks an analysis uses: a table device, possibly with `--peak-bw`/`--peak-flops`
/// replacing its numbers, or only the overrides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Peaks {
    /// What the peaks describe (`"AMD Instinct MI300X"`, `"custom"`).
    pub name: String,
    /// Where they come from, overrides named.
    pub source: String,
    /// Peak memory bandwidth in B/s.
    pub mem_bw: f64,
    /// Every compute ceiling (one, `override`, with `--peak-flops`).
    pub ceilings: Vec<CeilingPeak>,
}

/// One compute ceiling of [`Peaks`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CeilingPeak {
    /// The unit and precision.
    pub ceiling: Ceiling,
    /// Its peak in FLOP/s (OP/s for int8).
    pub flops: f64,
}

impl Peaks {
    /// The peaks of a table device.
    pub fn of(device: &Device) -> Peaks {
        let ceilings = device.rates.iter().filter_map(|(c, _)| Some(CeilingPeak { ceiling: *c, flops: device.peak_flops(*c)? })).collect();
        Peaks { name: device.gpu.to_owned(), source: device.source.to_owned(), mem_bw: device.mem_bw(), ceilings }
    }

    /// `device`'s peaks with overrides applied (GB/s and TFLOP/s, as the CLI takes them); with
    /// no device, both overrides are needed. `None` if there is nothing to build from.
    pub fn with_overrides(device: Option<&Device>, peak_bw_gbs: Option<f64>, peak_tflops: Option<f64>) -> Option<Peaks> {
        let mut peaks = match (device, peak_bw_gbs, peak_tflops) {
            (Some(d), _, _) => Peaks::of(d),
            (None, Some(_), Some(_)) => Peaks { name: "custom".to_owned(), source: String::new(), mem_bw: 0.0, ceilings: Vec::new() },
            (None, _, _) => return None,
        };
        let mut replaced = Vec::new();
        if let Some(bw) = peak_bw_gbs {
            peaks.mem_bw = bw * 1e9;
            replaced.push(format!("--peak-bw {bw} GB/s"));
        }
        if let Some(tf) = peak_tflops {
            peaks.ceilings = vec![CeilingPeak { ceiling: Ceiling::Override, flops: tf * 1e12 }];
            replaced.push(format!("--peak-flops {tf} TFLOP/s"));
        }
        if !replaced.is_empty() {
            peaks.source = if device.is_some() { format!("{}; overridden by {}", peaks.source, replaced.join(", ")) } else { replaced.join(", ") };
        }
        Some(peaks)
    }

    /// Peak of `ceiling` in FLOP/s, if present.
    pub fn flops(&self, ceiling: Ceiling) -> Option<f64> {
        self.ceilings.iter().find(|c| c.ceiling == ceiling).map(|c| c.flops)
    }

    /// The compute ceiling an op is judged against, by its kind and types, with the first
    /// ceiling of the preference list the device has:
    ///
    /// - f16 matmul: fp16 matrix; bf16 matmul: bf16 matrix, else fp16 matrix (RDNA's WMMA runs
    ///   both at one rate, and §7 cites only FP16);
    /// - quantised matmul: int8 matrix, else fp16 matrix. llama.cpp's MMQ kernels multiply the
    ///   integer quants against q8_1-quantised activations with int8 dot products (MFMA on
    ///   CDNA), so int8 is the unit's real ceiling; where §7 cites no int8 rate (RDNA, H200
    ///   figures given) the fp16 matrix rate stands in. Either is an upper bound for the
    ///   matrix-vector kernels of decode, which run on the vector ALU but are memory-bound far
    ///   below any of these ridges (§9);
    /// - f32 matmul: fp32 matrix, else fp32 vector;
    /// - any other op: fp32 vector (ggml's element-wise kernels compute in f32 whatever they
    ///   store); on RDNA this is the dual-issue peak, and [`Peaks::single_issue`] gives the other.
    ///
    /// With `--peak-flops` the override is the only ceiling.
    pub fn ceiling_for(&self, op: &str, quant: &str) -> Option<(Ceiling, f64)> {
        if let Some(f) = self.flops(Ceiling::Override) {
            return Some((Ceiling::Override, f));
        }
        let matmul = matches!(op, "MUL_MAT" | "MUL_MAT_ID");
        let prefs: &[Ceiling] = match (matmul, quant) {
            (true, "f16") => &[Fp16Matrix],
            (true, "bf16") => &[Bf16Matrix, Fp16Matrix],
            (true, "f32") => &[Fp32Matrix, Fp32Vector],
            (true, q) if crate::ggml::type_info(q).is_some_and(|t| t.is_quantized()) => &[Int8Matrix, Fp16Matrix],
            _ => &[Fp32Vector],
        };
        prefs.iter().find_map(|c| Some((*c, self.flops(*c)?)))
    }

    /// For an op judged against the RDNA dual-issue fp32 peak: the single-issue peak (§7.4).
    pub fn single_issue(&self, ceiling: Ceiling) -> Option<f64> {
        if ceiling == Ceiling::Fp32Vector {
            self.flops(Ceiling::Fp32VectorSingleIssue)
        } else {
            None
        }
    }
}

/// The table keys and gfx architectures, for messages: `mi300x (gfx942), ...`.
pub fn known_devices() -> String {
    DEVICES.iter().map(|d| match d.arch {
        Some(a) => format!("{} ({a})", d.key),
        None => d.key.to_owned(),
    }).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tf(key: &str, c: Ceiling) -> f64 {
        Device::lookup(key).unwrap().peak_flops(c).unwrap() / 1e12
    }

    /// `x` rounded to one decimal, as the spec prints it.
    fn r1(x: f64) -> f64 {
        (x * 10.0).round() / 10.0
    }

    #[test]
    fn derived_peaks_reproduce_the_spec_consistency_checks() {
        assert_eq!(r1(tf("gfx942", Bf16Matrix)), 1307.4);
        assert_eq!(r1(tf("gfx942", Fp16Matrix)), 1307.4);
        assert_eq!(r1(tf("gfx942", Fp8Matrix)), 2614.9);
        assert_eq!(r1(tf("gfx942", Int8Matrix)), 2614.9);
        assert_eq!(r1(tf("gfx942", Fp64Vector)), 81.7);
        assert_eq!(r1(tf("gfx942", Fp64Matrix)), 163.4);
        assert_eq!(r1(tf("gfx942", Fp32Vector)), 163.4);
        assert_eq!(r1(tf("gfx942", Tf32Matrix)), 653.7);
        assert_eq!(tf("mi250x", Bf16Matrix).round(), 383.0);
        assert_eq!(r1(tf("mi250x", Fp64Vector)), 47.9);
        assert_eq!(r1(tf("mi250x", Fp64Matrix)), 95.7);
        assert_eq!(r1(tf("mi250x", Fp32Vector)), 47.9);
        assert_eq!(r1(tf("mi250x", Fp32VectorPacked)), 95.7);
        assert_eq!(r1(tf("mi250", Fp64Vector)), 45.3);
        assert_eq!(r1(tf("mi250", Fp64Matrix)), 90.5);
        assert_eq!(r1(tf("mi250", Fp16Matrix)), 362.1);
        assert_eq!(r1(tf("gfx1100", Fp16Matrix)), 122.9);
        assert_eq!(r1(tf("gfx1100", Fp32Vector)), 61.4);
        assert_eq!(r1(tf("gfx1100", Fp32VectorSingleIssue)), 30.7);
        assert_eq!(r1(tf("gfx1151", Fp32Vector)), 29.7);
        assert_eq!((tf("gfx1151", Fp32VectorSingleIssue) * 100.0).round() / 100.0, 14.85);
        assert_eq!(r1(tf("gfx1151", Fp16Matrix)), 59.4);
        // One GCD is half the package.
        assert_eq!(tf("gfx90a", Bf16Matrix) * 2.0, tf("mi250x", Bf16Matrix));
        assert_eq!(Device::lookup("gfx90a").unwrap().mem_bw() * 2.0, Device::lookup("mi250x").unwrap().mem_bw());
        assert_eq!(tf("h200", Bf16Matrix), 989.0);
        assert_eq!(Device::lookup("H200").unwrap().mem_bw_gbs, 4800.0);
        assert_eq!(Device::named("NVIDIA H200").unwrap().key, "h200", "the CUDA driver's product name");
        assert!(Device::named("NVIDIA H200 NVL").is_none(), "another SKU is not this one");
        assert!(Device::named("").is_none());
        assert!(Device::named("AMD Instinct MI250").is_none(), "two entries start with it");
    }

    #[test]
    fn ridge_points_match_spec_7_3() {
        let ridge = |key: &str, c: Ceiling| {
            let d = Device::lookup(key).unwrap();
            d.peak_flops(c).unwrap() / d.mem_bw()
        };
        assert_eq!(ridge("mi300x", Bf16Matrix).round(), 247.0);
        assert_eq!(ridge("mi300x", Fp32Vector).round(), 31.0);
        assert_eq!(ridge("mi250x", Bf16Matrix).round(), 120.0);
        assert_eq!(ridge("mi250x", Fp32Vector).round(), 15.0);
        assert_eq!(ridge("gfx90a", Fp32Vector).round(), 15.0);
        assert_eq!(ridge("mi250", Fp16Matrix).round(), 113.0);
        assert_eq!(ridge("rx7900xtx", Fp32Vector).round(), 64.0);
        assert_eq!(ridge("rx7900xtx", Fp32VectorSingleIssue).round(), 32.0);
        assert_eq!(ridge("rx7900xtx", Fp16Matrix).round(), 128.0);
        assert_eq!(ridge("strix-halo", Fp32Vector).round(), 116.0);
        assert_eq!(ridge("strix-halo", Fp32VectorSingleIssue).round(), 58.0);
        assert_eq!(ridge("strix-halo", Fp16Matrix).round(), 232.0);
    }

    #[test]
    fn ceilings_follow_the_op_and_its_types() {
        let mi300 = Peaks::of(Device::lookup("gfx942").unwrap());
        assert_eq!(mi300.ceiling_for("MUL_MAT", "bf16").map(|c| c.0), Some(Bf16Matrix));
        assert_eq!(mi300.ceiling_for("MUL_MAT", "q4_K").map(|c| c.0), Some(Int8Matrix));
        assert_eq!(mi300.ceiling_for("MUL_MAT_ID", "f32").map(|c| c.0), Some(Fp32Matrix));
        assert_eq!(mi300.ceiling_for("ADD", "f16").map(|c| c.0), Some(Fp32Vector));
        assert_eq!(mi300.single_issue(Fp32Vector), None);
        let strix = Peaks::of(Device::lookup("gfx1151").unwrap());
        assert_eq!(strix.ceiling_for("MUL_MAT", "q4_K").map(|c| c.0), Some(Fp16Matrix));
        assert_eq!(strix.ceiling_for("MUL_MAT", "bf16").map(|c| c.0), Some(Fp16Matrix));
        assert_eq!(strix.ceiling_for("MUL_MAT", "f32").map(|c| c.0), Some(Fp32Vector));
        assert_eq!(strix.single_issue(Fp32Vector).map(|f| (f / 1e12 * 100.0).round() / 100.0), Some(14.85));
        let custom = Peaks::with_overrides(None, Some(4800.0), Some(989.0)).unwrap();
        assert_eq!(custom.ceiling_for("ADD", "f32"), Some((Override, 989e12)));
        assert_eq!(custom.mem_bw, 4.8e12);
        assert_eq!(Peaks::with_overrides(None, Some(1.0), None), None);
        let over = Peaks::with_overrides(Device::lookup("gfx942"), Some(4000.0), None).unwrap();
        assert_eq!((over.mem_bw, over.ceilings.len()), (4e12, GFX942.len()));
        assert!(over.source.ends_with("overridden by --peak-bw 4000 GB/s"), "{}", over.source);
    }

    #[test]
    fn devices_resolve_by_key_or_arch_and_every_entry_cites_a_source() {
        assert_eq!(Device::lookup("GFX1151").unwrap().key, "strix-halo");
        assert_eq!(Device::lookup("mi250").unwrap().compute_units, Some(208));
        assert_eq!(Device::lookup("gfx90a:sramecc+:xnack-").unwrap().key, "mi250x-gcd", "gcnArchName target features are ignored");
        assert!(Device::lookup("gfx908").is_none() && Device::lookup("gfx950").is_none());
        for d in DEVICES {
            assert!(!d.source.is_empty() && d.mem_bw_gbs > 0.0, "{}", d.key);
            assert!(d.rates.iter().all(|(c, _)| d.peak_flops(*c).is_some_and(|f| f > 0.0)), "{}", d.key);
        }
        assert!(known_devices().starts_with("mi300x (gfx942), mi250x-gcd (gfx90a), mi250x, "));
    }
}
