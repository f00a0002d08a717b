//! Many processes, one run: the processes of a job (one per GPU, several batches) write into one
//! run directory under `ROCTX_UTILS_XSPACE_OUT`, one file each, named by the launcher's rank or
//! the pid; no file is lost or replaced. Each scenario forks its processes before this test
//! process reads its configuration, so every child reads its own environment.

use std::path::{Path, PathBuf};

use roctx_utils::collector::sink::{Sink, IN_PROCESS};
use roctx_utils::config::{JOB_ID_VARS, RANK_VARS, RUN_NAME};
use roctx_utils::runtime;

mod common;
use common::files_under;

fn host() -> String {
    roctx_utils::export::logdir::safe_host(&roctx_utils::sys::os::hostname())
}

/// Starts one process per entry of `envs` (all at once), each recording one range named
/// `label(n)` and leaving through `exit()` (our exit hook writes its file); waits for all.
/// Returns their pids.
fn run_batch(dir: &Path, envs: &[Vec<(&str, String)>], label: impl Fn(usize) -> String) -> Vec<i32> {
    let mut children = Vec::new();
    for (n, env) in envs.iter().enumerate() {
        // SAFETY: the child runs the scenario and leaves through exit(); the parent waits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // Whatever launcher ran this test is not the scenario's.
            for name in std::iter::once(RUN_NAME).chain(JOB_ID_VARS).chain(RANK_VARS) {
                std::env::remove_var(name);
            }
            std::env::set_var("ROCTX_UTILS_XSPACE_OUT", dir);
            std::env::set_var("ROCTX_UTILS_CAPTURE", "self");
            for (name, value) in env {
                std::env::set_var(name, value);
            }
            runtime::get(); // the automatic session and its exit hook
            IN_PROCESS.push(label(n).as_bytes());
            IN_PROCESS.pop();
            // SAFETY: runs our exit hook.
            unsafe { libc::exit(0) };
        }
        children.push(pid);
    }
    for &pid in &children {
        let mut status = 0;
        // SAFETY: our own child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "child status {status}");
    }
    children
}

/// The one file among `files` holding `label`.
fn holder<'a>(files: &'a [PathBuf], label: &str) -> &'a PathBuf {
    let holders: Vec<&PathBuf> = files
        .iter()
        .filter(|f| std::fs::read(f).unwrap().windows(label.len()).any(|w| w == label.as_bytes()))
        .collect();
    assert_eq!(holders.len(), 1, "{label} is in {} files: {holders:?}", holders.len());
    holders[0]
}

fn name_of(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

#[test]
fn eight_ranks_and_a_second_batch_of_the_same_job_share_one_run_and_keep_every_file() {
    let dir = std::env::temp_dir().join(format!("roctx_multiprocess_job_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let ranks = |batch: usize| -> Vec<Vec<(&str, String)>> {
        (0..8).map(|n| vec![(RUN_NAME, "job-17".to_owned()), ("RANK", n.to_string()), ("BATCH", batch.to_string())]).collect()
    };
    run_batch(&dir, &ranks(1), |n| format!("rank {n} of batch 1"));
    // A restart, or a second stage of the job, seconds later: same run, same ranks.
    std::thread::sleep(std::time::Duration::from_secs(2));
    run_batch(&dir, &ranks(2), |n| format!("rank {n} of batch 2"));

    let files = files_under(&dir);
    let run = dir.join("plugins/profile/job-17");
    assert_eq!(files.len(), 16, "{files:?}");
    assert!(files.iter().all(|f| f.parent() == Some(run.as_path())), "all in one run: {files:?}");
    let host = host();
    for n in 0..8 {
        // Batch 1 wrote first; batch 2's rank n found the name taken and got the next one.
        assert_eq!(name_of(holder(&files, &format!("rank {n} of batch 1"))), format!("{host}_rank{n}.xplane.pb"));
        assert_eq!(name_of(holder(&files, &format!("rank {n} of batch 2"))), format!("{host}_rank{n}-2.xplane.pb"));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_launchers_job_id_and_rank_name_the_run_and_the_files() {
    let dir = std::env::temp_dir().join(format!("roctx_multiprocess_slurm_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // torchrun's default id names no job: Slurm's comes next.
    let envs: Vec<Vec<(&str, String)>> = (0..4)
        .map(|n| vec![("TORCHELASTIC_RUN_ID", "none".to_owned()), ("SLURM_JOB_ID", "881234".to_owned()), ("SLURM_PROCID", n.to_string())])
        .collect();
    run_batch(&dir, &envs, |n| format!("task {n}"));
    let files = files_under(&dir);
    assert_eq!(files.len(), 4, "{files:?}");
    let host = host();
    for n in 0..4 {
        let file = holder(&files, &format!("task {n}"));
        assert_eq!(file, &dir.join(format!("plugins/profile/881234/{host}_rank{n}.xplane.pb")));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn without_launcher_variables_eight_processes_write_eight_distinct_files() {
    let dir = std::env::temp_dir().join(format!("roctx_multiprocess_plain_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let pids = run_batch(&dir, &vec![Vec::new(); 8], |n| format!("plain process {n}"));
    let files = files_under(&dir);
    assert_eq!(files.len(), 8, "{files:?}");
    let host = host();
    for (n, pid) in pids.iter().enumerate() {
        // Named by the pid, in a run named by the time of the write (processes a second apart
        // may land in two runs: without a launcher nothing says they are one job).
        assert_eq!(name_of(holder(&files, &format!("plain process {n}"))), format!("{host}_pid{pid}.xplane.pb"));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
