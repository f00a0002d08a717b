"""`@xla_tree`: an XLA checkout's own profiler-annotation files, for tree_compat_test.

With `--repo_env=ROCTX_UTILS_XLA_TREE=/path/to/xla` (check.sh --compat sets it), the repository
holds that tree's files, linked in place under the paths XLA includes them by:

    tsl/profiler/lib/nvtx_utils.h                       (third_party/tsl/... in the tree)
    tsl/profiler/lib/scoped_annotation.h                (third_party/tsl/... in the tree)
    xla/tsl/profiler/backends/cpu/annotation_stack.h
    xla/tsl/profiler/backends/cpu/annotation_stack.cc

and the few Abseil and TSL platform headers they include, as small stand-ins of ours
(stand_ins/), so that no more of XLA is needed. Its targets are `:annotation_stack` (what
`--//:annotation_stack` points at, so the backend pushes into the tree's own AnnotationStack)
and `:scoped_annotation` (the tree's two headers). Without the variable it is empty and
`XLA_TREE` in its defs.bzl is "", which makes the test incompatible (skipped), not failed.
"""

_TREE_FILES = {
    "tsl/profiler/lib/nvtx_utils.h": "third_party/tsl/tsl/profiler/lib/nvtx_utils.h",
    "tsl/profiler/lib/scoped_annotation.h": "third_party/tsl/tsl/profiler/lib/scoped_annotation.h",
    "xla/tsl/profiler/backends/cpu/annotation_stack.h": "xla/tsl/profiler/backends/cpu/annotation_stack.h",
    "xla/tsl/profiler/backends/cpu/annotation_stack.cc": "xla/tsl/profiler/backends/cpu/annotation_stack.cc",
}

_STAND_INS = [
    "absl/log/log.h",
    "absl/strings/str_cat.h",
    "absl/strings/string_view.h",
    "absl/types/span.h",
    "tsl/platform/platform.h",
    "xla/tsl/platform/macros.h",
    "xla/tsl/platform/types.h",
]

_BUILD_PRESENT = """\
package(default_visibility = ["//visibility:public"])

cc_library(
    name = "stand_ins",
    hdrs = {stand_ins},
)

cc_library(
    name = "annotation_stack",
    srcs = ["xla/tsl/profiler/backends/cpu/annotation_stack.cc"],
    hdrs = ["xla/tsl/profiler/backends/cpu/annotation_stack.h"],
    copts = ["-std=c++17"],
    deps = [":stand_ins"],
)

cc_library(
    name = "scoped_annotation",
    hdrs = [
        "tsl/profiler/lib/nvtx_utils.h",
        "tsl/profiler/lib/scoped_annotation.h",
    ],
    deps = [
        ":annotation_stack",
        ":stand_ins",
    ],
)
"""

_BUILD_ABSENT = """\
# No XLA tree: ROCTX_UTILS_XLA_TREE is not set. tree_compat_test is skipped.
package(default_visibility = ["//visibility:public"])

cc_library(name = "annotation_stack")

cc_library(name = "scoped_annotation")
"""

def _xla_tree_impl(rctx):
    root = rctx.os.environ.get("ROCTX_UTILS_XLA_TREE", "").strip()
    rctx.file("WORKSPACE", "workspace(name = \"xla_tree\")\n")
    if not root:
        rctx.file("BUILD.bazel", _BUILD_ABSENT)
        rctx.file("defs.bzl", "XLA_TREE = \"\"\n")
        return
    missing = [path for path in _TREE_FILES.values() if not rctx.path(root + "/" + path).exists]
    if missing:
        fail("ROCTX_UTILS_XLA_TREE=%s is not an XLA tree of today's layout: no %s" % (root, ", ".join(missing)))
    for name, path in _TREE_FILES.items():
        rctx.symlink(rctx.path(root + "/" + path), name)
    here = str(rctx.path(Label("//integrations/xla/tree_compat:BUILD.bazel")).dirname)
    for name in _STAND_INS:
        rctx.symlink(rctx.path(here + "/stand_ins/" + name), name)
    rctx.file("BUILD.bazel", _BUILD_PRESENT.format(stand_ins = repr(_STAND_INS)))
    rctx.file("defs.bzl", "XLA_TREE = %s\n" % repr(root))

xla_tree = repository_rule(
    implementation = _xla_tree_impl,
    environ = ["ROCTX_UTILS_XLA_TREE"],
    local = True,
)
