//! Kernel names come out exactly as `c++filt` prints them (issue 22): a corpus of real mangled
//! names (templates with integer arguments, lambdas, anonymous namespaces, ggml's HIP `.kd`
//! suffix, CUTLASS, rocBLAS, PyTorch) demangled by `roctx_sys::demangle::cxa` and by binutils'
//! `c++filt` in one batch, line for line. Plain names (Triton's) and types pass through both.

use std::io::Write;
use std::process::{Command, Stdio};

fn corpus() -> Vec<String> {
    let text = include_str!("data/kernel_names.txt");
    let mut names: Vec<String> = text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(String::from).collect();
    names.extend(["triton_poi_fused_add_0", "triton_red_fused__softmax_1", "main", "i", "_Zjunk!", "_Z"].map(String::from));
    names
}

#[test]
fn every_name_is_demangled_as_cxxfilt_prints_it() {
    let names = corpus();
    let Ok(mut child) = Command::new("c++filt").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn() else {
        panic!("c++filt (binutils) is needed for this test: apt-get install binutils");
    };
    child.stdin.take().unwrap().write_all((names.join("\n") + "\n").as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let theirs: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    assert_eq!(theirs.len(), names.len());
    let mut differ = Vec::new();
    for (name, want) in names.iter().zip(theirs) {
        let ours = roctx_sys::demangle::cxa(name.as_bytes()).unwrap_or_else(|| name.clone());
        if ours != want {
            differ.push(format!("{name}\n  ours:     {ours}\n  c++filt:  {want}"));
        }
    }
    assert!(differ.is_empty(), "{} of {} names differ:\n{}", differ.len(), names.len(), differ.join("\n"));
    // The corpus exercises what the issue names: integer template arguments, lambdas,
    // anonymous namespaces, clone suffixes.
    let demangled: Vec<String> = names.iter().filter_map(|n| roctx_sys::demangle::cxa(n.as_bytes())).collect();
    for needle in ["<32u, 1024ul>", "{lambda()#", "(anonymous namespace)", "[clone .kd]", "<4, at::native::FillFunctor<float>"] {
        assert!(demangled.iter().any(|d| d.contains(needle)), "no name shows {needle:?}: {demangled:#?}");
    }
}
