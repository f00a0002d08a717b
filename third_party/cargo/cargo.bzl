"""Cargo inside Bazel, offline: a vendoring repository rule and a staticlib build rule.

`cargo_vendor` runs `cargo vendor --locked` once, at fetch time (the only step that reaches a
crate registry), and packs the result into one deterministic `vendor.tar`: vendored crates ship
BUILD/MODULE files that would otherwise split a glob into sub-packages. `cargo_staticlib` then
runs `cargo build --frozen` inside an ordinary action. rustup's proxies need $HOME, which
actions lack, so the real cargo/rustc are resolved from the sysroot at fetch time.
"""

load("@rules_cc//cc:defs.bzl", "cc_library")

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

def _cargo_staticlib_impl(ctx):
    out_a = ctx.actions.declare_file("lib%s.a" % ctx.label.name)
    bridge_dir = ctx.label.name + "_cxxbridge"
    crate = ctx.attr.crate_name
    bridge_hdrs = [ctx.actions.declare_file("%s/%s/%s.h" % (bridge_dir, crate, b)) for b in ctx.attr.bridges]
    bridge_hdrs.append(ctx.actions.declare_file("%s/rust/cxx.h" % bridge_dir))
    bridge_srcs = [ctx.actions.declare_file("%s/%s/%s.cc" % (bridge_dir, crate, b)) for b in ctx.attr.bridges]
    bridge_root = out_a.dirname + "/" + bridge_dir

    ctx.actions.run(
        executable = ctx.executable._builder,
        arguments = [
            ctx.file.cargo_env.path,
            ctx.file.manifest.path,
            ctx.file.vendor.path,
            crate,
            out_a.path,
            bridge_root,
        ],
        inputs = ctx.files.srcs + [ctx.file.manifest, ctx.file.lockfile, ctx.file.cargo_env, ctx.file.vendor],
        outputs = [out_a] + bridge_hdrs + bridge_srcs,
        mnemonic = "CargoBuild",
        progress_message = "cargo build --release -p %s" % crate,
        use_default_shell_env = True,
    )
    return [
        DefaultInfo(files = depset([out_a])),
        OutputGroupInfo(
            staticlib = depset([out_a]),
            bridge_hdrs = depset(bridge_hdrs),
            bridge_srcs = depset(bridge_srcs),
        ),
    ]

cargo_staticlib = rule(
    implementation = _cargo_staticlib_impl,
    attrs = {
        "crate_name": attr.string(mandatory = True),
        # Paths of the cxx bridge files, relative to the crate root, e.g. "src/ffi/bridge.rs".
        "bridges": attr.string_list(mandatory = True),
        "srcs": attr.label_list(allow_files = True),
        "manifest": attr.label(allow_single_file = True, mandatory = True),
        "lockfile": attr.label(allow_single_file = True, mandatory = True),
        "vendor": attr.label(allow_single_file = True, mandatory = True),
        "cargo_env": attr.label(allow_single_file = True, mandatory = True),
        "_builder": attr.label(
            default = "//third_party/cargo:cargo_build.sh",
            executable = True,
            cfg = "exec",
            allow_single_file = True,
        ),
    },
)

def rust_cxx_staticlib(
        name,
        crate_name,
        bridges,
        srcs,
        crates_repo,
        manifest,
        lockfile,
        deps = [],
        extra_srcs = [],
        linkopts = [],
        target_compatible_with = None,
        visibility = None,
        **kwargs):
    """A Rust staticlib with a cxx bridge, as a cc_library named `name`.

    The cargo `.a` sits in its own `<name>_rs` library underneath the bridge library: Bazel puts a
    library's precompiled archives before its own objects, so the split keeps the bridge's
    references into Rust resolvable. Never alwayslink the `.a` (one Rust staticlib per link).
    """
    compat = target_compatible_with if target_compatible_with != None else []
    cargo_staticlib(
        name = name + "_cargo",
        crate_name = crate_name,
        bridges = bridges,
        srcs = srcs,
        manifest = manifest,
        lockfile = lockfile,
        vendor = crates_repo + "//:vendor.tar",
        cargo_env = crates_repo + "//:cargo_env.sh",
        target_compatible_with = compat,
        visibility = ["//visibility:private"],
    )
    for group in ["staticlib", "bridge_hdrs", "bridge_srcs"]:
        native.filegroup(
            name = "%s_%s" % (name, group),
            srcs = [":%s_cargo" % name],
            output_group = group,
            visibility = ["//visibility:private"],
        )
    cc_library(
        name = name + "_rs",
        srcs = [":%s_staticlib" % name],
        linkopts = ["-ldl", "-lpthread", "-lrt", "-lutil", "-lgcc_s"] + linkopts,
        linkstatic = True,
        target_compatible_with = compat,
        visibility = ["//visibility:private"],
    )
    cc_library(
        name = name,
        srcs = [":%s_bridge_srcs" % name] + extra_srcs,
        hdrs = [":%s_bridge_hdrs" % name],
        strip_include_prefix = name + "_cargo_cxxbridge",
        linkstatic = True,
        # The Rust archive (linked after this library) calls back into the bridge's C++ thunks
        # (e.g. the AnnotationStack shim). A host that only uses the C API never references
        # the bridge itself, so without alwayslink its objects would be skipped before the Rust
        # archive asks for them. Only these few C++ objects; never the Rust `.a` itself.
        alwayslink = True,
        deps = deps + [":%s_rs" % name],
        target_compatible_with = compat,
        visibility = visibility,
        **kwargs
    )
