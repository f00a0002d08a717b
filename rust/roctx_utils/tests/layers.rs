//! The layering check: every Rust source of the workspace belongs to one layer, and may only
//! refer to layers below its own (or to itself). Run it with the graph printed:
//!
//! ```text
//! cd rust && cargo test -p roctx_utils --test layers -- --nocapture
//! ```
//!
//! It reads the sources as text: comments and string literals are blanked, then every path that
//! starts at a crate root (`crate::listener`, `roctx_collector::...`, `use crate::{a, b}`) is an
//! edge from the file's layer to the named one. Each crate's `Cargo.toml` path dependencies are
//! edges too. An edge that points up, or sideways between two layers of the same rank, fails the
//! test, and so does a cycle. The checker itself is tested on sources that break the rules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A layer: its name and rank (higher calls lower, never the reverse).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Layer {
    rank: u8,
    name: &'static str,
}

const CLI: Layer = Layer { rank: 8, name: "cli" };
const FACADE: Layer = Layer { rank: 8, name: "facade" };
const ABI: Layer = Layer { rank: 7, name: "abi" };
const EMITTER: Layer = Layer { rank: 6, name: "emitter" };
const RUNTIME: Layer = Layer { rank: 5, name: "runtime" };
const LISTENER: Layer = Layer { rank: 4, name: "listener" };
const EXPORT: Layer = Layer { rank: 4, name: "export" };
const ROOFLINE: Layer = Layer { rank: 4, name: "roofline" };
const COLLECTOR: Layer = Layer { rank: 3, name: "collector" };
const KERNELS: Layer = Layer { rank: 3, name: "kernels" };
const SYS: Layer = Layer { rank: 2, name: "sys" };
const CONFIG: Layer = Layer { rank: 1, name: "config" };

/// The layer of a workspace crate (all of it), or `None` for `roctx_utils`, whose modules are
/// layers of their own.
fn crate_layer(krate: &str) -> Option<Layer> {
    Some(match krate {
        "roctx_cli" => CLI,
        "roctx_export" => EXPORT,
        "roctx_roofline" => ROOFLINE,
        "roctx_collector" => COLLECTOR,
        "roctx_kernels" => KERNELS,
        "roctx_sys" => SYS,
        "roctx_config" => CONFIG,
        _ => return None,
    })
}

/// The layer of a top-level module of `roctx_utils` (`src/<name>.rs` or `src/<name>/`).
fn module_layer(module: &str) -> Option<Layer> {
    Some(match module {
        "lib" => FACADE,
        "abi" => ABI,
        "emitter" => EMITTER,
        "runtime" => RUNTIME,
        "listener" => LISTENER,
        "export" => EXPORT,
        "host" => SYS,
        _ => return None,
    })
}

const CRATES: [&str; 8] = ["roctx_cli", "roctx_collector", "roctx_config", "roctx_export", "roctx_kernels", "roctx_roofline", "roctx_sys", "roctx_utils"];

/// The layer a path refers to, from the crate it is written in (`crate::x` resolves there).
fn target_layer(from_crate: &str, root: &str, module: Option<&str>) -> Option<Layer> {
    let krate = if root == "crate" { from_crate } else { root };
    match crate_layer(krate) {
        Some(layer) => Some(layer),
        None if krate == "roctx_utils" => module.and_then(module_layer).or(Some(FACADE)),
        None => None,
    }
}

/// `text` with comments, string and char literals replaced by spaces (line structure kept).
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, c: u8| out.push(if c == b'\n' { b'\n' } else { b' ' });
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
        } else if b[i] == b'r' && (b[i..].starts_with(b"r\"") || b[i..].starts_with(b"r#")) && (i == 0 || !is_ident(b[i - 1])) {
            let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
            if b.get(i + 1 + hashes) != Some(&b'"') {
                out.push(b[i]);
                i += 1;
                continue;
            }
            let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat(b'#').take(hashes)).collect();
            i += 2 + hashes;
            out.extend(std::iter::repeat(b' ').take(2 + hashes));
            while i < b.len() && !b[i..].starts_with(&close) {
                blank(&mut out, b[i]);
                i += 1;
            }
            out.extend(std::iter::repeat(b' ').take(close.len().min(b.len() - i)));
            i += close.len();
        } else if b[i] == b'"' {
            out.push(b' ');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    out.push(b' ');
                    i += 1;
                }
                if i < b.len() {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
            out.push(b' ');
            i += 1;
        } else if b[i] == b'\'' {
            // A char literal ('x', '\n', '\''), or a lifetime ('a), which is kept.
            let len = if b.get(i + 1) == Some(&b'\\') {
                b[i + 2..].iter().position(|&c| c == b'\'').map(|p| p + 3)
            } else if b.get(i + 2) == Some(&b'\'') {
                Some(3)
            } else {
                None
            };
            match len {
                Some(n) => {
                    out.extend(std::iter::repeat(b' ').take(n));
                    i += n;
                }
                None => {
                    out.push(b'\'');
                    i += 1;
                }
            }
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Every `root::module` path in `code` whose root is `crate` or a workspace crate, as
/// (root, first segment after it). `use root::{a, b}` yields one pair per item.
fn paths(code: &str) -> Vec<(String, Option<String>)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !is_ident(b[i]) || (i > 0 && (is_ident(b[i - 1]) || b[i - 1] == b':')) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && is_ident(b[i]) {
            i += 1;
        }
        let word = &code[start..i];
        if word != "crate" && !CRATES.contains(&word) {
            continue;
        }
        let rest = code[i..].trim_start();
        let Some(after) = rest.strip_prefix("::") else {
            // `use roctx_collector as collector;` names a crate; `pub(crate)` names nothing.
            if word != "crate" {
                out.push((word.to_owned(), None));
            }
            continue;
        };
        let after = after.trim_start();
        if let Some(group) = after.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let segment: String = item.trim().bytes().take_while(|&c| is_ident(c)).map(char::from).collect();
                out.push((word.to_owned(), (!segment.is_empty()).then_some(segment)));
            }
        } else {
            let segment: String = after.bytes().take_while(|&c| is_ident(c)).map(char::from).collect();
            out.push((word.to_owned(), (!segment.is_empty()).then_some(segment)));
        }
    }
    out
}

/// The layer a source file of `krate` belongs to, from its path inside the crate.
fn file_layer(krate: &str, relative: &Path) -> Option<Layer> {
    if let Some(layer) = crate_layer(krate) {
        return Some(layer);
    }
    let mut parts = relative.components().map(|c| c.as_os_str().to_string_lossy().into_owned());
    if parts.next().as_deref() != Some("src") {
        return None; // build.rs, tests/: not part of the library
    }
    let first = parts.next()?;
    module_layer(first.trim_end_matches(".rs"))
}

#[derive(Debug, Default)]
struct Report {
    /// (from, to) -> the places that make the edge.
    edges: BTreeMap<(Layer, Layer), BTreeSet<String>>,
    violations: Vec<String>,
}

impl Report {
    fn edge(&mut self, from: Layer, to: Layer, place: String) {
        if from == to {
            return;
        }
        if from.rank <= to.rank && from != FACADE {
            self.violations.push(format!("{place}: layer `{}` refers to `{}`, which is not below it", from.name, to.name));
        }
        self.edges.entry((from, to)).or_default().insert(place);
    }

    /// A cycle among layers, if any (none is possible without a violation, but check anyway).
    fn cycle(&self) -> Option<Vec<&'static str>> {
        let mut graph: BTreeMap<Layer, Vec<Layer>> = BTreeMap::new();
        for &(from, to) in self.edges.keys() {
            graph.entry(from).or_default().push(to);
        }
        fn visit(n: Layer, graph: &BTreeMap<Layer, Vec<Layer>>, stack: &mut Vec<Layer>, done: &mut BTreeSet<Layer>) -> Option<Vec<&'static str>> {
            if let Some(at) = stack.iter().position(|&s| s == n) {
                return Some(stack[at..].iter().chain([&n]).map(|l| l.name).collect());
            }
            if !done.insert(n) {
                return None;
            }
            stack.push(n);
            for &m in graph.get(&n).into_iter().flatten() {
                if let Some(c) = visit(m, graph, stack, done) {
                    return Some(c);
                }
            }
            stack.pop();
            None
        }
        let mut done = BTreeSet::new();
        graph.keys().find_map(|&n| visit(n, &graph, &mut Vec::new(), &mut done))
    }
}

/// Adds the edges of one source file.
fn check_source(report: &mut Report, krate: &str, relative: &Path, text: &str) {
    let Some(from) = file_layer(krate, relative) else { return };
    let code = code_only(text);
    for (line_no, line) in code.lines().enumerate() {
        for (root, module) in paths(line) {
            if let Some(to) = target_layer(krate, &root, module.as_deref()) {
                report.edge(from, to, format!("{krate}/{}:{}", relative.display(), line_no + 1));
            }
        }
    }
}

/// Adds the path-dependency edges of one crate's manifest.
fn check_manifest(report: &mut Report, krate: &str, manifest: &str) {
    let Some(from) = crate_layer(krate).or(if krate == "roctx_utils" { Some(FACADE) } else { None }) else { return };
    let mut in_deps = false;
    for (line_no, line) in manifest.lines().enumerate() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
            continue;
        }
        if !in_deps {
            continue;
        }
        let name = line.split('=').next().unwrap_or_default().trim();
        if let Some(to) = crate_layer(name).or((name == "roctx_utils").then_some(FACADE)) {
            report.edge(from, to, format!("{krate}/Cargo.toml:{}", line_no + 1));
        }
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn workspace() -> Report {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut report = Report::default();
    for krate in CRATES {
        let dir = root.join(krate);
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap_or_else(|e| panic!("{krate}/Cargo.toml: {e}"));
        check_manifest(&mut report, krate, &manifest);
        let mut files = Vec::new();
        rust_files(&dir.join("src"), &mut files);
        files.sort();
        assert!(!files.is_empty(), "no sources under {krate}/src");
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let relative = file.strip_prefix(&dir).expect("under the crate");
            check_source(&mut report, krate, relative, &text);
        }
    }
    report
}

#[test]
fn no_layer_refers_to_one_above_it_and_there_is_no_cycle() {
    let report = workspace();
    println!("layer graph of the Rust sources (from -> to: places):");
    for ((from, to), places) in &report.edges {
        let first: Vec<_> = places.iter().take(2).cloned().collect();
        println!("  {:>9} -> {:<9} {:>3} x  e.g. {}", from.name, to.name, places.len(), first.join(", "));
    }
    assert!(report.violations.is_empty(), "upward or sideways references:\n{}", report.violations.join("\n"));
    assert_eq!(report.cycle(), None);
    // The graph is not vacuous: the pipeline's own edges were seen.
    for (from, to) in [(ABI, EMITTER), (EMITTER, RUNTIME), (RUNTIME, LISTENER), (RUNTIME, EXPORT), (LISTENER, COLLECTOR), (EXPORT, COLLECTOR), (COLLECTOR, SYS), (SYS, CONFIG)] {
        assert!(report.edges.contains_key(&(from, to)), "expected an edge {} -> {}", from.name, to.name);
    }
}

#[test]
fn the_checker_catches_an_upward_import_a_sideways_one_and_a_manifest_dependency() {
    let mut report = Report::default();
    check_source(&mut report, "roctx_collector", Path::new("src/lib.rs"), "use roctx_utils::runtime;\n");
    check_source(&mut report, "roctx_utils", Path::new("src/listener/mod.rs"), "fn f() { crate::export::trace(x); }\n");
    check_source(&mut report, "roctx_utils", Path::new("src/emitter/mod.rs"), "use crate::{host, abi};\n");
    check_manifest(&mut report, "roctx_sys", "[dependencies]\nroctx_collector = { path = \"../roctx_collector\" }\n");
    assert_eq!(report.violations.len(), 4, "{:#?}", report.violations);
    assert!(report.violations[0].contains("`collector` refers to `runtime`"));
    assert!(report.violations[1].contains("`listener` refers to `export`"));
    assert!(report.violations[2].contains("`emitter` refers to `abi`"));
    assert!(report.violations[3].contains("roctx_sys/Cargo.toml:2"));
}

#[test]
fn comments_strings_and_downward_references_are_not_violations() {
    let mut report = Report::default();
    let text = "//! See [`crate::abi`].\nlet s = \"crate::abi\"; /* roctx_utils::abi */ let c = '\"';\nuse crate::{runtime, host};\nlet r = r#\"crate::abi\"#;\n";
    check_source(&mut report, "roctx_utils", Path::new("src/emitter/mod.rs"), text);
    assert!(report.violations.is_empty(), "{:#?}", report.violations);
    assert_eq!(report.edges.keys().map(|(_, to)| to.name).collect::<Vec<_>>(), ["sys", "runtime"]); // by rank
}

/// `roctx_config` is the only library code that reads the environment: everything else gets
/// the values from `roctx_config::get()` (build scripts and tests aside).
#[test]
fn only_the_config_layer_reads_the_environment() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut readers = Vec::new();
    for krate in CRATES {
        let mut files = Vec::new();
        rust_files(&root.join(krate).join("src"), &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let code = code_only(&text);
            if krate != "roctx_config" && ["env::var", "env::vars", "getenv"].iter().any(|call| code.contains(call)) {
                readers.push(file.display().to_string());
            }
        }
    }
    assert!(readers.is_empty(), "environment read outside roctx_config: {readers:?}");
}
