#!/usr/bin/env python3
"""Writes remat.patch: the engine from patch_src/ as a new XLA package, plus
the wiring hunks, against TensorFlow v2.21.0. The patch is generated, never
edited by hand; `--check` fails when the committed patch is stale.

    .venv/bin/python scripts/make_patch.py            # rewrite remat.patch
    .venv/bin/python scripts/make_patch.py --check    # exit 1 if it differs
    .venv/bin/python scripts/make_patch.py --check --tf-src UPSTREAM

UPSTREAM is a TensorFlow checkout, an XLA source tree, or a git directory at a
revision (GITDIR@REV, e.g. a fetched openxla history at 7420bd5453, the XLA of
v2.21.0). With it, every anchor is looked up there (it must occur exactly
once) and the hunks carry its exact line numbers; `--check` then also proves
the committed patch applies there with no offset.

Each wiring hunk is anchored on upstream lines given verbatim below, with the
line where they start in v2.21.0.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from dataclasses import dataclass
from pathlib import Path

# apply_patch.py stands alone (the Docker build copies it by itself); it holds
# the pinned release.
from apply_patch import TF_COMMIT, TF_TAG, XLA_COMMIT
from upstream_tree import UpstreamError, UpstreamTree, open_upstream

REPO_ROOT = Path(__file__).resolve().parent.parent
PATCH_SRC = REPO_ROOT / "patch_src"
PATCH_FILE = REPO_ROOT / "remat.patch"
XLA = "third_party/xla/xla"
PACKAGE = f"{XLA}/service/remat"


@dataclass(frozen=True)
class Wiring:
    """Insert `lines` between the upstream lines `before` and `after`."""

    path: str
    why: str
    before: tuple[str, ...]
    lines: tuple[str, ...]
    after: tuple[str, ...]
    line: int  # where `before` starts in the v2.21.0 file

    @property
    def xla_path(self) -> str:
        """The path inside XLA's own xla/ folder."""
        return self.path.removeprefix(f"{XLA}/")


# Each call site includes remat_hooks.h right after its own header; the BUILD
# hunks add the matching dependencies.
WIRING: tuple[Wiring, ...] = (
    Wiring(
        f"{XLA}/debug_options_flags.cc",
        "register the rematerialization flags with XLA's flag list",
        ('#include "xla/debug_options_parsers.h"',),
        ('#include "xla/service/remat/remat_flags.h"',),
        ('#include "xla/parse_flags_from_env.h"',),
        48,
    ),
    Wiring(
        f"{XLA}/debug_options_flags.cc",
        "register the rematerialization flags with XLA's flag list",
        (
            "void MakeDebugOptionsFlags(std::vector<tsl::Flag>* flag_list,",
            "                           DebugOptions* debug_options) {",
        ),
        ("  remat::AppendRematFlags(flag_list);",),
        ('  // Returns a lambda that calls "member_setter" on "debug_options" with the',),
        551,
    ),
    Wiring(
        f"{XLA}/BUILD",
        "debug_options_flags depends on the flag registration",
        ('            ":parse_flags_from_env",', '            ":xla_proto_cc",'),
        ('            "//xla/service/remat:remat_flags",',),
        ('            "//xla/service:collective_utils",',),
        1238,
    ),
    Wiring(
        f"{XLA}/service/gpu/gpu_compiler.cc",
        "GPU: run the pass after upstream's rematerialization, before buffer assignment",
        ("    pipeline.AddPass<HloRematerialization>(remat_opts, sizes);",),
        ("    remat::AddRematPassIfEnabled(pipeline, ShapeSizeBytesFunction(), alias_info);",),
        ("    pipeline.AddPass<StreamAttributeAnnotator>(gpu_device_info);",),
        3078,
    ),
    Wiring(
        f"{XLA}/service/gpu/gpu_compiler.cc",
        "the disable_cuda flag disables the multi-output fusion passes",
        (
            "  if (options.slice_size > 0) {",
            "    module->mutable_config().set_partition_size(options.slice_size);",
            "  }",
        ),
        ("  remat::DisableMultiOutputFusionPasses(module->mutable_config());",),
        ("", "  const DebugOptions debug_opts = module->config().debug_options();"),
        2054,
    ),
    Wiring(
        f"{XLA}/service/gpu/gpu_compiler.cc",
        "GPU: the hook's header",
        ('#include "xla/service/gpu/gpu_compiler.h"',),
        ('#include "xla/service/remat/remat_hooks.h"',),
        ("",),
        16,
    ),
    Wiring(
        f"{XLA}/service/gpu/BUILD",
        "gpu_compiler depends on the hooks",
        (
            '    name = "gpu_compiler",',
            '    srcs = ["gpu_compiler.cc"],',
            '    hdrs = ["gpu_compiler.h"],',
            '    tags = ["gpu"],',
            "    deps = [",
        ),
        ('        "//xla/service/remat:remat_hooks",',),
        ('        ":alias_info",',),
        1601,
    ),
    Wiring(
        f"{XLA}/service/cpu/cpu_compiler.cc",
        "CPU: run the pass on the final schedule, before buffer assignment",
        (
            "  TF_ASSIGN_OR_RETURN(HloSchedule schedule, CreateHloSchedule(*module));",
            "  TF_RETURN_IF_ERROR(module->set_schedule(schedule));",
        ),
        ("  TF_RETURN_IF_ERROR(remat::RunRematIfEnabled(&*module, remat::PlainBytes));",),
        ("",),
        1746,
    ),
    Wiring(
        f"{XLA}/service/cpu/cpu_compiler.cc",
        "CPU: the hook and size function's header",
        ('#include "xla/service/cpu/cpu_compiler.h"',),
        ('#include "xla/service/remat/remat_hooks.h"',),
        ("",),
        16,
    ),
    Wiring(
        f"{XLA}/service/cpu/BUILD",
        "cpu_compiler depends on the hooks",
        ('        "@tsl//tsl/profiler/lib:traceme_encode",',),
        ('        "//xla/service/remat:remat_hooks",',),
        ("    ] + if_llvm_aarch64_available([",),
        341,
    ),
)

# Bazel targets of the new package: one per unit (a header and its .cc, named
# by their stem), so that Bazel's layering check fails a wrong include. The
# MILP solver's interface and its in-tree backend are one target.
GROUPS: dict[str, tuple[str, ...]] = {
    "milp_solver": ("milp_solver.cc", "milp_solver_ortools.cc"),
}
TEST_SUFFIX = "_test.cc"
# Built out of tree only: the MILP solver there is HiGHS from the highspy wheel; in-tree the
# engine takes milp_solver_ortools.cc (OR-Tools, which XLA already links).
OUT_OF_TREE_ONLY = frozenset({"milp_solver_highs.cc", "highs_c_api_1_15_1.h"})
# Built in-tree only (tools/hlo_remat/CMakeLists.txt leaves it out): no
# registry ships OR-Tools' C++ headers.
IN_TREE_ONLY = frozenset({"milp_solver_ortools.cc"})
# What every unit test links: GoogleTest with its main(), as upstream XLA tests do.
GTEST_MAIN = "@com_google_googletest//:gtest_main"
GTEST = "@com_google_googletest//:gtest"
# Headers of test tools (planner_test_util.h): testonly targets.
TEST_UTIL_SUFFIX = "_test_util"


def test_sources() -> tuple[str, ...]:
    """The GoogleTest unit tests beside the code they test: one xla_cc_test
    each, never part of a library (ctest runs them out of tree)."""
    return tuple(sorted(p.name for p in PATCH_SRC.glob(f"*{TEST_SUFFIX}")))


def targets() -> dict[str, tuple[str, ...]]:
    """Target (a unit's stem) -> its sources; its header is `<target>.h`."""
    out_of_tree = {Path(name).stem for name in OUT_OF_TREE_ONLY}
    units = sorted({p.stem for p in PATCH_SRC.glob("*.h")} - out_of_tree)
    return {
        unit: GROUPS.get(unit) or ((f"{unit}.cc",) if (PATCH_SRC / f"{unit}.cc").exists() else ())
        for unit in units
    }


# Header -> Bazel label where the label is not the header's own path.
LABEL_EXCEPTIONS = {
    "absl/base/thread_annotations.h": "@com_google_absl//absl/base:core_headers",
    "absl/log/log.h": "@com_google_absl//absl/log",
    "absl/status/status.h": "@com_google_absl//absl/status",
    "absl/synchronization/mutex.h": "@com_google_absl//absl/synchronization",
    "absl/synchronization/notification.h": "@com_google_absl//absl/synchronization",
    "absl/time/clock.h": "@com_google_absl//absl/time",
    "absl/time/time.h": "@com_google_absl//absl/time",
    "absl/strings/str_format.h": "@com_google_absl//absl/strings:str_format",
    "absl/strings/string_view.h": "@com_google_absl//absl/strings:string_view",
    # As xla/hlo/experimental/auto_sharding/BUILD links it outside Google.
    "ortools/linear_solver/linear_solver.h": "@com_google_ortools//ortools/linear_solver",
    "xla/hlo/pass/hlo_pass_interface.h": "//xla/hlo/pass:hlo_pass",
    "xla/layout.h": "//xla:shape_util",
    "xla/layout_util.h": "//xla:shape_util",
    "xla/primitive_util.h": "//xla:shape_util",
    "xla/shape.h": "//xla:shape_util",
    "xla/service/heap_simulator/heap_simulator.h": "//xla/service/heap_simulator",
    "tsl/platform/cpu_info.h": "@tsl//tsl/platform:platform_port",
    # threadpool.h is one of env's headers.
    "xla/tsl/platform/env.h": "//xla/tsl/platform:env",
    "xla/tsl/platform/threadpool.h": "//xla/tsl/platform:env",
    # Generated C++ of tf_proto_library(name = X): the target X_cc.
    "xla/service/gpu/backend_configs.pb.h": "//xla/service/gpu:backend_configs_cc",
    "xla/xla_data.pb.h": "//xla:xla_data_proto_cc",
}


def label_for(header: str) -> str:
    if header in LABEL_EXCEPTIONS:
        return LABEL_EXCEPTIONS[header]
    if header.startswith("xla/service/remat/"):
        name = Path(header).stem
        if name not in targets():
            raise SystemExit(f"make_patch: {header} belongs to no target")
        return f":{name}"
    if header.startswith("xla/hlo/ir/"):
        return "//xla/hlo/ir:hlo"
    if header.startswith("absl/strings/"):
        return "@com_google_absl//absl/strings"
    package, stem = str(Path(header).parent), Path(header).stem
    if header.startswith("absl/"):
        return f"@com_google_absl//{package}:{stem}"
    return f"//{package}:{stem}"


def includes(path: Path) -> list[str]:
    return re.findall(r'^#include "([^"]+)"', path.read_text(), flags=re.M)


# The unit that reads the flags names the engine's revision in-tree (a kept
# frontier must be of the same engine; patch_src/frontier_cache.h).
REVISION_TARGET = "remat_flags"


def engine_revision() -> str:
    """An identifier naming the patch's sources: a hash of each file shipped
    in the patch, its name and its text."""
    digest = hashlib.sha256()
    for source in sorted(PATCH_SRC.iterdir()):
        if source.suffix in (".h", ".cc") and source.name not in OUT_OF_TREE_ONLY:
            digest.update(source.name.encode() + b"\0" + source.read_bytes() + b"\0")
    return f"patch_{digest.hexdigest()[:12]}"


def build_file() -> str:
    lines = [
        "# The rematerialization pass (generated by scripts/make_patch.py from",
        "# the project's patch_src/; see its README).",
        'load("//xla:xla.default.bzl", "xla_cc_test")',
        'load("//xla/tsl/platform:rules_cc.bzl", "cc_library")',
        "",
        "package(",
        '    default_visibility = ["//visibility:public"],',
        '    licenses = ["notice"],',
        ")",
    ]
    for target, sources in targets().items():
        header = f"{target}.h"
        deps: set[str] = set()
        for name in (*sources, header):
            for included in includes(PATCH_SRC / name):
                label = label_for(included)
                if label != f":{target}":
                    deps.add(label)
        lines += ["", "cc_library(", f'    name = "{target}",']
        if target.endswith(TEST_UTIL_SUFFIX):
            # Test tools: for the tests only, with GoogleTest they build on.
            lines += ["    testonly = True,"]
            deps.add(GTEST)
        if sources:
            lines += ["    srcs = [", *[f'        "{s}",' for s in sources], "    ],"]
        lines += [f'    hdrs = ["{header}"],']
        if target == REVISION_TARGET:
            lines += [f'    local_defines = ["REMAT_ENGINE_REVISION={engine_revision()}"],']
        ordered = sorted(deps, key=lambda d: (not d.startswith(":"), d))
        if ordered:
            lines += ["    deps = [", *[f'        "{d}",' for d in ordered], "    ],"]
        lines += [")"]
    for source in test_sources():
        deps = {label_for(header) for header in includes(PATCH_SRC / source)} | {GTEST_MAIN}
        ordered = sorted(deps, key=lambda d: (not d.startswith(":"), d))
        lines += ["", "xla_cc_test(", f'    name = "{Path(source).stem}",']
        lines += [f'    srcs = ["{source}"],']
        lines += ["    deps = [", *[f'        "{d}",' for d in ordered], "    ],", ")"]
    return "\n".join(lines) + "\n"


def new_file_diff(path: str, text: str) -> str:
    body = text.splitlines()
    out = [
        f"diff --git a/{path} b/{path}",
        "new file mode 100644",
        "--- /dev/null",
        f"+++ b/{path}",
        f"@@ -0,0 +1,{len(body)} @@",
        *[f"+{line}" for line in body],
    ]
    return "\n".join(out) + "\n"


def hunk(w: Wiring, start: int, shift: int) -> str:
    old = len(w.before) + len(w.after)
    new = old + len(w.lines)
    out = [f"@@ -{start},{old} +{start + shift},{new} @@ {w.why}"]
    out += [f" {line}" for line in w.before]
    out += [f"+{line}" for line in w.lines]
    out += [f" {line}" for line in w.after]
    return "\n".join(out) + "\n"


def locate(w: Wiring, upstream: UpstreamTree | None) -> int:
    """The line where the hunk's anchor starts: the table's v2.21.0 line, or,
    with an upstream tree, where the anchor is found there (exactly once)."""
    if upstream is None:
        return w.line
    text = upstream.read(w.xla_path)
    if text is None:
        raise SystemExit(f"make_patch: {upstream.description} has no xla/{w.xla_path}")
    lines = text.splitlines()
    anchor = (*w.before, *w.after)
    found = [
        i + 1
        for i in range(len(lines) - len(anchor) + 1)
        if tuple(lines[i : i + len(anchor)]) == anchor
    ]
    if len(found) != 1:
        where = "not found" if not found else f"found {len(found)} times (lines {found})"
        raise SystemExit(
            f"make_patch: the anchor of '{w.why}' is {where} in xla/{w.xla_path} "
            f"of {upstream.description}"
        )
    return found[0]


def make_patch(upstream: UpstreamTree | None = None) -> str:
    parts = [
        f"remat.patch: the rematerialization pass for TensorFlow {TF_TAG} ({TF_COMMIT},\n"
        f"whose XLA is openxla/xla {XLA_COMMIT}).\n"
        "Generated by scripts/make_patch.py; do not edit.\n\n"
    ]
    by_file: dict[str, list[tuple[int, Wiring]]] = {}
    for w in WIRING:
        by_file.setdefault(w.path, []).append((locate(w, upstream), w))
    for path in sorted(by_file):
        parts.append(f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n")
        shift = 0
        for start, w in sorted(by_file[path], key=lambda located: located[0]):
            parts.append(hunk(w, start, shift))
            shift += len(w.lines)
    parts.append(new_file_diff(f"{PACKAGE}/BUILD", build_file()))
    for source in sorted(PATCH_SRC.iterdir()):
        if source.suffix in (".h", ".cc") and source.name not in OUT_OF_TREE_ONLY:
            parts.append(new_file_diff(f"{PACKAGE}/{source.name}", source.read_text()))
    return "".join(parts)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="fail if remat.patch is stale")
    parser.add_argument(
        "--tf-src",
        metavar="UPSTREAM",
        help="a TensorFlow checkout, an XLA source tree, or GITDIR@REV to locate anchors in",
    )
    parser.add_argument("--output", type=Path, default=PATCH_FILE)
    args = parser.parse_args()
    try:
        upstream = open_upstream(args.tf_src) if args.tf_src else None
    except UpstreamError as e:
        print(f"make_patch: {e}", file=sys.stderr)
        return 2
    text = make_patch(upstream)
    if args.check:
        if not args.output.exists() or args.output.read_text() != text:
            where = f" (line numbers as in {upstream.description})" if upstream else ""
            print(
                f"{args.output} differs from the generated patch{where}: run scripts/make_patch.py",
                file=sys.stderr,
            )
            return 1
        print(f"{args.output} is up to date")
        return 0
    args.output.write_text(text)
    print(f"wrote {args.output} ({text.count(chr(10))} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
