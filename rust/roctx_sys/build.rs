// roctx_sys::demangle calls libstdc++'s `__cxa_demangle`: every binary that links roctx_sys
// (the CLI, the Rust tests) links libstdc++. C++ hosts link it anyway.
fn main() {
    println!("cargo:rustc-link-lib=stdc++");
}
