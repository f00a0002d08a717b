//! Generates the cxx bridge. Two modes:
//! - plain `cargo build`/`cargo test`: compile the bridge, the C++ forwarders and the bundled
//!   AnnotationStack here, so the Rust inner loop links on its own;
//! - under Bazel (`CXXBRIDGE_EXPORT_DIR` set, our own convention): compile nothing and copy the
//!   generated header/source plus `rust/cxx.h` out, for Bazel's C++ toolchain to compile against
//!   whichever AnnotationStack `//:annotation_stack` selects.
use std::env;
use std::fs;
use std::path::{Path, PathBuf};

/// The inbound bridge (the drop-in functions) and the outbound one (the host's AnnotationStack).
const BRIDGES: [&str; 2] = ["src/abi/bridge.rs", "src/host.rs"];

fn main() {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let repo_root = manifest_dir.join("../..");
    let include = repo_root.join("include");
    let compat = repo_root.join("compat");

    let mut build = cxx_build::bridges(BRIDGES);
    build.include(&include).std("c++17").flag_if_supported("-Wno-unused-parameter");

    match env::var_os("CXXBRIDGE_EXPORT_DIR") {
        Some(dir) => export(Path::new(&dir)),
        None => {
            build
                .include(&compat)
                .file("cc/forwarders.cc")
                .file("cc/annotation_stack_shim.cc")
                .file(compat.join("xla/tsl/profiler/backends/cpu/annotation_stack.cc"))
                .compile("roctx_utils_bridge");
            println!("cargo:rerun-if-changed=cc");
            println!("cargo:rerun-if-changed={}", compat.display());
        }
    }
    for bridge in BRIDGES {
        println!("cargo:rerun-if-changed={bridge}");
    }
    println!("cargo:rerun-if-changed={}", include.display());
    println!("cargo:rerun-if-env-changed=CXXBRIDGE_EXPORT_DIR");
}

/// Copies cxx-build's outputs (layout `OUT_DIR/cxxbridge/{include,sources}`, pinned by
/// Cargo.lock; re-check on every cxx bump) to where the Bazel rule declared them.
fn export(dir: &Path) {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("cxxbridge");
    let krate = env::var("CARGO_PKG_NAME").expect("cargo sets CARGO_PKG_NAME");
    let mut copies = vec![(out.join("include/rust/cxx.h"), dir.join("rust/cxx.h"))];
    for bridge in BRIDGES {
        copies.push((out.join(format!("include/{krate}/{bridge}.h")), dir.join(format!("{krate}/{bridge}.h"))));
        copies.push((out.join(format!("sources/{krate}/{bridge}.cc")), dir.join(format!("{krate}/{bridge}.cc"))));
    }
    for (from, to) in copies {
        fs::create_dir_all(to.parent().expect("has a parent")).expect("create export dir");
        // Resolve cxx-build's symlinks: Bazel wants regular files.
        let bytes = fs::read(&from).unwrap_or_else(|e| panic!("reading {}: {e}", from.display()));
        fs::write(&to, bytes).unwrap_or_else(|e| panic!("writing {}: {e}", to.display()));
    }
}
