"""Cargo inside Bazel, offline: the staticlib build rule.

`cargo_staticlib` runs `cargo build --frozen` inside an ordinary action, from the `vendor.tar`
and the real cargo/rustc that the `cargo_vendor` repository rule (repositories.bzl) prepared at
fetch time. The repository rule lives in its own file because a WORKSPACE loads it before
`@rules_cc` (which this file needs) exists.
"""

load("@rules_cc//cc:defs.bzl", "cc_library")

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
