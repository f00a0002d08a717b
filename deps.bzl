"""What `@roctx_utils//:roctx_utils_impl` needs from a WORKSPACE (Bazel 4 to 6).

In your WORKSPACE, after your own rules repositories:

    local_repository(name = "roctx_utils", path = "third_party/roctx_utils")
    load("@roctx_utils//:deps.bzl", "roctx_utils_dependencies")
    roctx_utils_dependencies()

By default that declares one repository, `@roctx_utils_crates` (the Rust crates, vendored once
by `cargo vendor --locked` at fetch time; every build after that is offline). Everything else a
build of the library needs (`@rules_cc`, `@platforms`) a Bazel workspace already has. Nothing is
declared twice: a name the workspace already defines, or one listed in `skip`, is left alone.

Bzlmod users (Bazel >= 7) need none of this: our MODULE.bazel declares `@roctx_utils_crates`
itself (`bazel_dep` + an override; see the README).
"""

load("//third_party/cargo:repositories.bzl", "cargo_vendor")

# The workspace root Cargo.toml first, then each member's: editing any of them re-vendors.
_CARGO_MANIFESTS = [
    "//rust:Cargo.toml",
    "//rust:roctx_cli/Cargo.toml",
    "//rust:roctx_collector/Cargo.toml",
    "//rust:roctx_config/Cargo.toml",
    "//rust:roctx_export/Cargo.toml",
    "//rust:roctx_kernels/Cargo.toml",
    "//rust:roctx_roofline/Cargo.toml",
    "//rust:roctx_sys/Cargo.toml",
    "//rust:roctx_utils/Cargo.toml",
]

# Stand-ins for what Bazel 4.2.3's built-in WORKSPACE suffix would download (docs/building.md).
_BAZEL4_SHIMS = ["rules_cc", "rules_java", "remote_coverage_tools"]

def _shim_repository_impl(rctx):
    # The shim directories are repositories of their own (each has a WORKSPACE file), so they
    # are found from a file of the package above them, wherever @roctx_utils is checked out.
    source = rctx.path(rctx.attr.anchor).dirname.get_child(rctx.attr.shim)
    for child in source.readdir():
        rctx.symlink(child, child.basename)

_bazel4_shim = repository_rule(
    implementation = _shim_repository_impl,
    attrs = {
        "anchor": attr.label(allow_single_file = True, mandatory = True),
        "shim": attr.string(mandatory = True),
    },
    local = True,
)

def _declare(skip, rule, name, **kwargs):
    """`rule(name, ...)`, unless `name` is in `skip` or already declared (a `maybe`)."""
    if name in skip or native.existing_rule(name) != None:
        return
    rule(name = name, **kwargs)

def roctx_utils_dependencies(bazel4_offline = False, googletest = False, skip = []):
    """Declares the external repositories roctx_utils needs, unless already declared.

    Args:
      bazel4_offline: also declare offline stand-ins for @rules_cc, @rules_java and
        @remote_coverage_tools, which Bazel 4.2.3's built-in WORKSPACE suffix would otherwise
        download. Only for a fully offline Bazel 4 workspace (this repository's own, the
        example consumer); a fork with its own rules, or with network access, leaves it off.
      googletest: declare @googletest from Debian's /usr/src/googletest with our BUILD file.
        Only needed to run roctx_utils' own tests from another workspace.
      skip: repository names the caller declares itself (or wants undeclared).
    """

    if bazel4_offline:
        for shim in _BAZEL4_SHIMS:
            _declare(
                skip,
                _bazel4_shim,
                name = shim,
                anchor = Label("//third_party/bazel4_shims:BUILD.bazel"),
                shim = shim,
            )
    if googletest:
        _declare(
            skip,
            native.new_local_repository,
            name = "googletest",
            build_file = str(Label("//third_party/googletest:googletest.BUILD")),
            path = "/usr/src/googletest",
        )
    _declare(
        skip,
        cargo_vendor,
        name = "roctx_utils_crates",
        lockfile = Label("//rust:Cargo.lock"),
        manifests = [Label(m) for m in _CARGO_MANIFESTS],
    )
