//! The README's Environment table is [`roctx_config::VARS`], row for row: a variable added,
//! renamed or re-documented in one place and not the other fails here, with the rows to paste.

use roctx_config::{Owner, Var, When, VARS};

fn owner(o: Owner) -> &'static str {
    match o {
        Owner::RoctxUtils => "roctx_utils",
        Owner::Xla => "XLA/TSL",
        Owner::Rocm => "ROCm",
        Owner::RocprofilerRegister => "rocprofiler-register",
        Owner::Ggml => "ggml/llama.cpp",
        Owner::Launcher => "launcher",
        Owner::Nvidia => "NVIDIA",
    }
}

fn when(w: When) -> &'static str {
    match w {
        When::FirstCall => "first call",
        When::RoctxBinding => "roctx binding",
        When::RooflineInit => "roofline init",
    }
}

fn row(v: &Var) -> String {
    format!("| `{}` | {} | {} | {} | {} |", v.name, owner(v.owner), when(v.when), v.default, v.meaning)
}

#[test]
fn the_readme_environment_table_is_the_config_table() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md");
    let readme = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let section = readme.split("\n## Environment\n").nth(1).expect("README has an `## Environment` section");
    let section = section.split("\n## ").next().unwrap_or_default();
    let rows: Vec<&str> = section.lines().filter(|l| l.starts_with("| `")).collect();
    let expected: Vec<String> = VARS.iter().map(row).collect();
    assert!(
        rows == expected,
        "README.md's Environment table differs from roctx_config::VARS. Expected rows:\n\n\
         | Variable | Owner | Read at | Default | Meaning |\n|---|---|---|---|---|\n{}\n\nREADME has:\n{}",
        expected.join("\n"),
        rows.join("\n")
    );
}
