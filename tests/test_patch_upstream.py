"""remat.patch against the real upstream sources, whenever they are at hand.

Set REMAT_UPSTREAM_XLA to an XLA history at a revision (GITDIR@REV, e.g. the
openxla history fetched as zml/xla, at 7420bd5453: the XLA of TensorFlow
v2.21.0), an XLA source tree, or a TensorFlow checkout. Without it these
tests are skipped, saying so.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))

import apply_patch  # noqa: E402
import make_patch  # noqa: E402
from upstream_tree import UpstreamTree, open_upstream, rule_text  # noqa: E402

PATCH = REPO / "remat.patch"
SPEC = os.environ.get("REMAT_UPSTREAM_XLA", "")

pytestmark = pytest.mark.skipif(
    not SPEC,
    reason="REMAT_UPSTREAM_XLA is not set: point it at an XLA history as GITDIR@REV "
    f"(e.g. a fetched zml/xla at {apply_patch.XLA_COMMIT[:10]}), an XLA tree or a "
    "TensorFlow checkout to check remat.patch against the real sources",
)


@pytest.fixture(scope="module")
def upstream() -> UpstreamTree:
    return open_upstream(SPEC)


@pytest.fixture(scope="module")
def patched_tree(upstream: UpstreamTree, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository holding the upstream files the patch touches, at
    their TensorFlow paths, with the patch applied by scripts/apply_patch.py."""
    tree = tmp_path_factory.mktemp("upstream") / "tensorflow"
    for path in sorted({w.path for w in make_patch.WIRING}):
        text = upstream.read(path.removeprefix(f"{make_patch.XLA}/"))
        assert text is not None, f"{upstream.description} has no {path}"
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(text)
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "upstream"],
    ):
        subprocess.run(["git", *args], cwd=tree, check=True)
    # --force: the tree is not a TensorFlow commit, only its files.
    applied = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "apply_patch.py"), str(tree), "--force"],
        capture_output=True,
        text=True,
    )
    assert applied.returncode == 0, applied.stderr
    return tree


def test_every_hunk_applies_with_no_offset_at_the_pinned_revision(upstream, tmp_path):
    # make_patch locates every anchor there (exactly once) and writes its
    # line numbers: equal to the committed patch means no hunk moves.
    if upstream.rev and upstream.rev != apply_patch.XLA_COMMIT:
        pytest.skip(f"offsets are pinned for {apply_patch.XLA_COMMIT[:10]}, not {upstream.rev}")
    assert make_patch.make_patch(upstream) == PATCH.read_text(), (
        "remat.patch's line numbers differ from the upstream's: run "
        f"scripts/make_patch.py --tf-src {SPEC}"
    )


def test_apply_patch_applies_and_recognises_a_second_time(patched_tree):
    assert (patched_tree / make_patch.PACKAGE / "remat_pass.cc").is_file()
    changed = subprocess.run(
        ["git", "status", "--porcelain"], cwd=patched_tree, capture_output=True, text=True
    ).stdout
    assert len([line for line in changed.splitlines() if line.startswith(" M")]) == len(
        {w.path for w in make_patch.WIRING}
    )
    again = apply_patch.apply(patched_tree, PATCH, check_only=False, force=True)
    assert "already applied" in again


def generated_build() -> str:
    return make_patch.build_file()


def test_every_xla_label_of_the_generated_build_names_a_rule(upstream):
    # load() labels name .bzl files: test_the_build_macros_... checks those.
    labels = sorted(
        {
            label
            for label in re.findall(r'"(//xla[^"]*)"', generated_build())
            if not label.endswith(".bzl")
        }
    )
    assert labels, "the generated BUILD names no //xla label"
    missing = [label for label in labels if rule_text(upstream, label) is None]
    assert not missing, f"no such rule at {upstream.description}: {missing}"


def test_every_included_header_is_provided_by_the_rule_its_label_names(upstream):
    # A label that exists but does not export the header would fail Bazel's
    # layering check (and header inclusion checking) all the same.
    wrong = []
    for source in sorted(make_patch.PATCH_SRC.iterdir()):
        if source.suffix not in (".h", ".cc") or source.name.endswith("_test.cc"):
            continue
        if source.name in make_patch.OUT_OF_TREE_ONLY:  # not in the BUILD
            continue
        for header in make_patch.includes(source):
            label = make_patch.label_for(header)
            if not label.startswith("//xla"):
                continue
            rule = rule_text(upstream, label) or ""
            # A generated proto header comes from the .proto the rule lists.
            provided = Path(header).name.replace(".pb.h", ".proto")
            if provided not in rule and "glob(" not in rule:
                wrong.append(f"{source.name}: {header} -> {label}")
    assert not wrong, f"labels whose rule does not list the header: {wrong}"


def test_the_build_macros_the_generated_build_loads_exist(upstream):
    for bzl, symbols in re.findall(r'^load\("//xla/([^"]+)", (.*)\)$', generated_build(), re.M):
        text = upstream.read(bzl.replace(":", "/"))
        assert text is not None, f"no xla/{bzl} at {upstream.description}"
        for symbol in re.findall(r'"(\w+)"', symbols):
            assert re.search(rf"^(def {symbol}\b|{symbol} = )", text, re.M), (bzl, symbol)


def test_every_wiring_label_names_a_rule(upstream, patched_tree):
    for w in make_patch.WIRING:
        if not w.path.endswith("BUILD"):
            continue
        for label in re.findall(r'"(//xla[^"]*)"', "\n".join(w.lines)):
            if label.startswith("//xla/service/remat:"):
                name = label.split(":")[1]
                assert f'name = "{name}"' in generated_build(), label
            else:
                assert rule_text(upstream, label) is not None, label


def engine_compile_command() -> list[str]:
    """The compiler command the engine build used for a source of its own
    (CMake's compile_commands.json), to compile upstream files the same way."""
    database = REPO / "build" / "engine" / "compile_commands.json"
    if not database.exists():
        pytest.fail(f"{database} is missing: make engine writes it")
    for entry in json.loads(database.read_text()):
        if entry["file"].endswith("wiring_stand_ins.cc"):
            return shlex.split(entry["command"])
    pytest.fail("the engine build did not compile wiring_stand_ins.cc")


def test_debug_options_flags_compiles_with_its_hunks(patched_tree):
    # The one patched upstream file whose includes the wheel ships: compile it
    # for real (the others have stand-ins: tools/hlo_remat/wiring_stand_ins.cc).
    command = engine_compile_command()
    source = patched_tree / make_patch.XLA / "debug_options_flags.cc"
    assert "remat::AppendRematFlags(flag_list);" in source.read_text()
    keep: list[str] = []
    skip = False
    for arg in command[1:]:
        if skip:
            skip = False
            continue
        if arg in ("-o", "-c"):
            skip = arg == "-o"
            continue
        if arg.endswith(".cc") or arg.startswith("-I") and "shim" in arg:
            continue
        keep.append(arg)
    # The patched tree first: its xla/service/remat/ and debug_options_flags.
    compiled = subprocess.run(
        [
            command[0],
            "-fsyntax-only",
            f"-I{patched_tree / 'third_party' / 'xla'}",
            *keep,
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert compiled.returncode == 0, compiled.stderr[-3000:]
