"""A stand-in for XLA's third_party/gpus/rocm_configure.bzl, reduced to what the swap reads.

Like XLA's, it makes `@local_config_rocm` with `//rocm:build_defs.bzl` (`if_rocm_is_configured`,
`if_rocm`) and the `//rocm:using_hipcc` setting, and is switched by `TF_NEED_ROCM`, which XLA's
`rocm_base` config sets with `--repo_env TF_NEED_ROCM=1`. There is no ROCm here: nothing else of
the real rule (toolchains, libraries) is made.
"""

_BUILD = """\
package(default_visibility = ["//visibility:public"])

config_setting(
    name = "using_hipcc",
    values = {"define": "using_rocm_hipcc=true"},
)
"""

_BUILD_DEFS = """\
def if_rocm(if_true, if_false = []):
    return select({{
        "@local_config_rocm//rocm:using_hipcc": if_true,
        "//conditions:default": if_false,
    }})

def if_rocm_is_configured(if_true, if_false = []):
    return if_true if {configured} else if_false

def is_rocm_configured():
    return {configured}
"""

def _rocm_configure_impl(rctx):
    configured = rctx.os.environ.get("TF_NEED_ROCM", "0").strip() == "1"
    rctx.file("WORKSPACE", "workspace(name = \"local_config_rocm\")\n")
    rctx.file("BUILD", "")
    rctx.file("rocm/BUILD", _BUILD)
    rctx.file("rocm/build_defs.bzl", _BUILD_DEFS.format(configured = configured))

rocm_configure = repository_rule(
    implementation = _rocm_configure_impl,
    environ = ["TF_NEED_ROCM"],
)
