//! `roctx record` as a command: what it refuses before the command starts, the environment the
//! command gets, and its exit. (The libraries themselves, on the fake SDK and the fake CUPTI, are
//! tests/record/check_record.sh's.) A stand-in `libroctx_utils_nvtx.so` is enough here: the
//! recorded commands are shells, which never load it.

mod util;

use util::Dir;

/// A lib directory with stand-ins for both libraries.
fn libs(dir: &Dir) -> String {
    dir.write("lib/libroctx_utils_nvtx.so", b"");
    dir.write("lib/libroctx_utils_tool.so", b"");
    dir.path("lib").display().to_string()
}

#[test]
fn record_runs_the_command_with_the_injection_run_name_and_hooks_and_passes_its_exit_code() {
    let dir = Dir::new("record_env");
    let lib = libs(&dir);
    let script = "env | grep -E '^(NVTX_INJECTION64_PATH|ROCTX_UTILS_[A-Z_]+)=' | sort > env.txt; exit 3";
    let run = dir.command().args(["record", "--platform", "nvidia", "--lib-dir", &lib, "-o", "logs", "--run-name", "r1", "--no-kernels", "--roofline", "out/r.json", "--", "sh", "-c", script]).expect(3);
    let env = std::fs::read_to_string(dir.path("env.txt")).unwrap();
    let logs = dir.path("logs").display().to_string();
    for want in [
        format!("NVTX_INJECTION64_PATH={lib}/libroctx_utils_nvtx.so"),
        format!("ROCTX_UTILS_XSPACE_OUT={logs}"),
        "ROCTX_UTILS_RUN_NAME=r1".to_owned(),
        "ROCTX_UTILS_PYTHON_HOOKS=1".to_owned(),
        "ROCTX_UTILS_KERNELS=0".to_owned(),
        format!("ROCTX_UTILS_ROOFLINE_OUT={}", dir.path("out/r.json").display()),
    ] {
        assert!(env.lines().any(|l| l == want), "{want} missing from:\n{env}");
    }
    assert!(run.stderr.contains("the command exited with 3"), "{}", run.stderr);
    assert!(run.stderr.contains("no trace was written"), "{}", run.stderr);
}

#[test]
fn record_refuses_a_missing_library_before_the_command_runs() {
    let dir = Dir::new("record_nolib");
    let run = dir.command().args(["record", "--platform", "nvidia", "--lib-dir", "nowhere", "--", "touch", "ran"]).expect(2);
    assert!(run.stderr.contains("libroctx_utils_nvtx.so does not exist"), "{}", run.stderr);
    assert!(!dir.path("ran").exists(), "the command ran");
}

#[test]
fn record_refuses_a_log_directory_it_cannot_write() {
    let dir = Dir::new("record_logdir");
    let lib = libs(&dir);
    dir.write("a_file", b"x");
    let run = dir.command().args(["record", "--platform", "nvidia", "--lib-dir", &lib, "-o", "a_file", "--", "touch", "ran"]).expect(2);
    assert!(run.stderr.contains("not a directory"), "{}", run.stderr);
    assert!(!dir.path("ran").exists(), "the command ran");
}

#[test]
fn record_says_when_the_command_cannot_start() {
    let dir = Dir::new("record_nocmd");
    let lib = libs(&dir);
    let run = dir.command().args(["record", "--platform", "nvidia", "--lib-dir", &lib, "--", "./no_such_program"]).expect(2);
    assert!(run.stderr.contains("could not start ./no_such_program"), "{}", run.stderr);
}

#[test]
fn record_needs_a_command() {
    let dir = Dir::new("record_usage");
    let run = dir.command().args(["record", "-o", "logs"]).expect(2);
    assert!(run.stderr.contains("COMMAND"), "{}", run.stderr);
}

#[test]
fn record_looks_for_the_run_where_the_library_writes_it() {
    // A run name with a '/' is mapped to a safe directory name by the library; the summary must
    // look in that same directory.
    let dir = Dir::new("record_run_name");
    let lib = libs(&dir);
    let run = dir.command().args(["record", "--platform", "nvidia", "--lib-dir", &lib, "-o", "logs", "--run-name", "exp/1", "--", "true"]).expect(0);
    assert!(run.stderr.contains("plugins/profile/exp_1-96b7cf1c"), "{}", run.stderr);
    let run = dir.command().args(["record", "--platform", "nvidia", "--lib-dir", &lib, "-o", "logs", "--run-name", "..", "--", "touch", "ran"]).expect(2);
    assert!(run.stderr.contains("names no directory"), "{}", run.stderr);
    assert!(!dir.path("ran").exists());
}
