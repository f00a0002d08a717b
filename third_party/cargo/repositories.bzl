"""Cargo inside Bazel, offline: the vendoring repository rule.

`cargo_vendor` runs `cargo vendor --locked` once, at fetch time (the only step that reaches a
crate registry), and packs the result into one deterministic `vendor.tar`: vendored crates ship
BUILD/MODULE files that would otherwise split a glob into sub-packages. rustup's proxies need
$HOME, which build actions lack, so the real cargo/rustc are resolved from the sysroot here and
written to `cargo_env.sh` for `cargo_staticlib` (cargo.bzl).

Loads nothing: WORKSPACE files (ours and consumers', through //:deps.bzl) load it before any
rules repository is declared.
"""

def _run(rctx, args, timeout = 600):
    res = rctx.execute(args, timeout = timeout)
    if res.return_code != 0:
        fail("roctx_utils: `%s` failed (exit %d):\n%s\n%s" % (
            " ".join([str(a) for a in args]),
            res.return_code,
            res.stdout,
            res.stderr,
        ))
    return res

def _find_tool(rctx, name):
    env = rctx.os.environ.get(name.upper())
    if env:
        return env
    found = rctx.which(name)
    if found:
        return str(found)
    home = rctx.os.environ.get("HOME", "")
    candidate = rctx.path(home + "/.cargo/bin/" + name)
    if home and candidate.exists:
        return str(candidate)
    fail("roctx_utils: `%s` not found on PATH, in $%s or in $HOME/.cargo/bin; install a Rust toolchain (rustup) first." % (name, name.upper()))

def _cargo_vendor_impl(rctx):
    rustc = _find_tool(rctx, "rustc")
    cargo = _find_tool(rctx, "cargo")
    sysroot = _run(rctx, [rustc, "--print", "sysroot"]).stdout.strip()

    # Resolve every manifest so that editing one re-runs this rule.
    manifests = [rctx.path(m) for m in rctx.attr.manifests]
    rctx.path(rctx.attr.lockfile)
    root = manifests[0]
    _run(rctx, [
        cargo,
        "vendor",
        "--locked",
        "--versioned-dirs",
        "--manifest-path",
        str(root),
        str(rctx.path("vendor")),
    ], timeout = 900)
    _run(rctx, [
        "tar",
        "--sort=name",
        "--mtime=@0",
        "--owner=0",
        "--group=0",
        "--numeric-owner",
        "-cf",
        "vendor.tar",
        "vendor",
    ])
    rctx.delete("vendor")
    rctx.file("cargo_env.sh", "CARGO='%s/bin/cargo'\nRUSTC='%s/bin/rustc'\n" % (sysroot, sysroot))
    rctx.file("BUILD.bazel", 'exports_files(["cargo_env.sh", "vendor.tar"], visibility = ["//visibility:public"])\n')

cargo_vendor = repository_rule(
    implementation = _cargo_vendor_impl,
    attrs = {
        # The workspace root Cargo.toml first, then each member's.
        "manifests": attr.label_list(allow_files = True, mandatory = True),
        "lockfile": attr.label(allow_single_file = True, mandatory = True),
    },
    environ = ["CARGO", "RUSTC", "PATH"],
)

