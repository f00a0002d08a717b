//! Which job and which rank this process is, from the variables launchers set: what names the
//! run directory (all processes of one job share it) and the file (one per process).

/// `ROCTX_UTILS_RUN_NAME`: the run directory's name, for every process that has it.
pub const RUN_NAME: &str = "ROCTX_UTILS_RUN_NAME";

/// Launchers' job identities, tried in this order after [`RUN_NAME`]: torchrun/TorchElastic,
/// Slurm, PMIx (Open MPI 5, PRRTE, Slurm's PMIx), Open MPI 4's ORTE, LSF, PBS/Torque, Flux.
pub const JOB_ID_VARS: [&str; 7] =
    ["TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "PMIX_NAMESPACE", "OMPI_MCA_orte_ess_jobid", "LSB_JOBID", "PBS_JOBID", "FLUX_JOB_ID"];

/// Launchers' ranks, tried in this order: torchrun's global rank, Open MPI's, PMIx's, MPICH
/// Hydra's (PMI), Slurm's task id, then torchrun's rank on this node (unique with the host).
pub const RANK_VARS: [&str; 6] = ["RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID", "LOCAL_RANK"];

/// torchrun's `--rdzv-id` default: every job that did not choose an id has it, so it names no
/// job.
const TORCHRUN_NO_ID: &str = "none";

/// Longest run name kept, in bytes (a directory name, well under any file system's limit).
pub const MAX_RUN_NAME: usize = 128;

/// Who this process is in its job.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JobIdentity {
    /// The run directory's name and the variable it came from; `None`: a timestamp names it.
    pub run_name: Option<(String, &'static str)>,
    /// The process's rank and the variable it came from; `None`: the pid names its file.
    pub rank: Option<(u32, &'static str)>,
}

/// `value` as a run directory name: kept as it is when it only holds `[A-Za-z0-9._+=@-]` and
/// fits [`MAX_RUN_NAME`] bytes. Otherwise every other character becomes `_` (no path separator,
/// no control character, nothing a shell or XProf's URL would mangle), the result is cut, and
/// `-` plus 8 hex digits of a hash of the whole original is appended: two different names never
/// share a directory (`exp/1` and `exp:1`, `実験` and `試験`), and every process of one job, given
/// the same value, computes the same one. `None` when nothing usable is left (`""`, `.`, `..`).
pub fn run_dir_name(value: &str) -> Option<String> {
    let safe = |c: char| c.is_ascii_alphanumeric() || "._+=@-".contains(c);
    if value.is_empty() || value == "." || value == ".." {
        return None;
    }
    if value.len() <= MAX_RUN_NAME && value.chars().all(safe) {
        return Some(value.to_owned());
    }
    const SUFFIX: usize = 9; // "-" and 8 hex digits
    let kept: String = value.chars().map(|c| if safe(c) { c } else { '_' }).take(MAX_RUN_NAME - SUFFIX).collect();
    Some(format!("{kept}-{:08x}", fnv1a(value.as_bytes()) as u32))
}

/// FNV-1a, 64-bit: stable across builds and processes (std's hasher promises neither).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// A rank: decimal digits (surrounding spaces allowed) that fit `u32`.
pub fn parse_rank(value: &str) -> Option<u32> {
    let digits = value.trim();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

impl JobIdentity {
    /// Reads [`RUN_NAME`], [`JOB_ID_VARS`] and [`RANK_VARS`] through `lookup`. The first usable
    /// value of each list wins; an unusable one is skipped with a warning naming it (an empty
    /// one counts as unset, torchrun's default id `none` is skipped silently).
    pub fn from_lookup(lookup: &dyn Fn(&str) -> Option<std::ffi::OsString>, warnings: &mut Vec<String>) -> JobIdentity {
        let set = |name: &str| lookup(name).filter(|v| !v.is_empty()).map(|v| v.to_string_lossy().into_owned());
        let mut run_name = None;
        for name in std::iter::once(RUN_NAME).chain(JOB_ID_VARS) {
            let Some(value) = set(name) else { continue };
            if name == JOB_ID_VARS[0] && value == TORCHRUN_NO_ID {
                continue;
            }
            match run_dir_name(&value) {
                Some(dir) => {
                    run_name = Some((dir, name));
                    break;
                }
                None => {
                    let value = crate::Shown(std::ffi::OsStr::new(&value));
                    warnings.push(format!("{name}={value:?} cannot name a run directory; trying the next job identity"))
                }
            }
        }
        let mut rank = None;
        for name in RANK_VARS {
            let Some(value) = set(name) else { continue };
            match parse_rank(&value) {
                Some(n) => {
                    rank = Some((n, name));
                    break;
                }
                None => {
                    let value = crate::Shown(std::ffi::OsStr::new(&value));
                    warnings.push(format!("{name}={value:?} is not a rank (a non-negative integer); trying the next rank variable"))
                }
            }
        }
        JobIdentity { run_name, rank }
    }

    /// The file name (before `.xplane.pb`, which XProf shows as the host) for this process on
    /// `host`: `<host>_rank<n>` when a launcher gave a rank, else `<host>_pid<pid>`.
    pub fn file_stem(&self, host: &str, pid: u32) -> String {
        match self.rank {
            Some((rank, _)) => format!("{host}_rank{rank}"),
            None => format!("{host}_pid{pid}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn resolve(vars: &[(&str, &str)]) -> (JobIdentity, Vec<String>) {
        let table: Vec<(String, OsString)> = vars.iter().map(|(k, v)| (k.to_string(), OsString::from(v))).collect();
        let mut warnings = Vec::new();
        let job = JobIdentity::from_lookup(&|name| table.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()), &mut warnings);
        (job, warnings)
    }

    #[test]
    fn the_run_name_comes_from_ours_then_the_launchers_in_order() {
        assert_eq!(resolve(&[]).0, JobIdentity::default());
        let (job, w) = resolve(&[("SLURM_JOB_ID", "4242"), ("TORCHELASTIC_RUN_ID", "tr-1"), (RUN_NAME, "exp/7 a")]);
        assert_eq!(job.run_name, Some((run_dir_name("exp/7 a").unwrap(), RUN_NAME)));
        assert!(job.run_name.as_ref().unwrap().0.starts_with("exp_7_a-"));
        assert!(w.is_empty());
        assert_eq!(resolve(&[("SLURM_JOB_ID", "4242"), ("TORCHELASTIC_RUN_ID", "tr-1")]).0.run_name, Some(("tr-1".to_owned(), "TORCHELASTIC_RUN_ID")));
        // torchrun's default id names no job; an empty value is unset.
        let (job, w) = resolve(&[("TORCHELASTIC_RUN_ID", "none"), (RUN_NAME, ""), ("PMIX_NAMESPACE", "prterun-n1-77@1")]);
        assert_eq!(job.run_name, Some(("prterun-n1-77@1".to_owned(), "PMIX_NAMESPACE")));
        assert!(w.is_empty());
    }

    #[test]
    fn an_unusable_run_name_warns_and_falls_through() {
        let (job, w) = resolve(&[(RUN_NAME, ".."), ("LSB_JOBID", "99")]);
        assert_eq!(job.run_name, Some(("99".to_owned(), "LSB_JOBID")));
        assert_eq!(w.len(), 1);
        assert!(w[0].contains(RUN_NAME), "{w:?}");
        let long = "x".repeat(10_000);
        assert_eq!(resolve(&[(RUN_NAME, &long)]).0.run_name.map(|(n, _)| n.len()), Some(MAX_RUN_NAME));
        assert!(run_dir_name("a\u{0}b\n../c").unwrap().starts_with("a_b_.._c-"));
        assert_eq!(run_dir_name("."), None);
    }

    #[test]
    fn distinct_run_names_never_share_a_directory() {
        // Issue 25, item 17: these pairs all became one directory.
        for (a, b) in [("実験", "試験"), ("exp/1", "exp:1"), ("a b", "a\tb"), (&*"x".repeat(200), &*format!("{}y", "x".repeat(199)))] {
            let (da, db) = (run_dir_name(a).unwrap(), run_dir_name(b).unwrap());
            assert_ne!(da, db, "{a:?} and {b:?}");
            assert!(da.len() <= MAX_RUN_NAME && db.len() <= MAX_RUN_NAME);
            assert!(da.chars().all(|c| c.is_ascii_alphanumeric() || "._+=@-".contains(c)), "{da}");
        }
        // Safe names stay as they are, and a name is mapped the same way by every process.
        assert_eq!(run_dir_name("job-17").as_deref(), Some("job-17"));
        assert_eq!(run_dir_name("exp/1"), run_dir_name("exp/1"));
        // Pinned: the hash must not change between versions (ranks of one job may differ).
        assert_eq!(run_dir_name("exp/1").as_deref(), Some("exp_1-96b7cf1c"));
    }

    #[test]
    fn the_rank_comes_from_the_first_usable_variable() {
        let (job, w) = resolve(&[("LOCAL_RANK", "3"), ("RANK", "11")]);
        assert_eq!(job.rank, Some((11, "RANK")));
        assert!(w.is_empty());
        let (job, w) = resolve(&[("RANK", "x1"), ("SLURM_PROCID", " 5 ")]);
        assert_eq!(job.rank, Some((5, "SLURM_PROCID")));
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("RANK"));
        assert_eq!(parse_rank("4294967296"), None);
        assert_eq!(parse_rank("-1"), None);
        assert_eq!(parse_rank("+1"), None);
        assert_eq!(job.file_stem("node7", 1234), "node7_rank5");
        assert_eq!(JobIdentity::default().file_stem("node7", 1234), "node7_pid1234");
    }
}
