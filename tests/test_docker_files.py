"""The Docker GPU path, checked without a Docker engine (issue 19): one Python
for the wheel and the suite image, the engine built in the image, the wheel
folder, the GPU target and the results mount passed through."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = REPO / "scripts"
sys.path.insert(0, str(SCRIPTS))

import docker_common  # noqa: E402


def arg_default(dockerfile: str, name: str) -> str:
    found = re.findall(rf"^ARG {name}=(\S+)$", (REPO / "docker" / dockerfile).read_text(), re.M)
    assert len(found) == 1, (dockerfile, name, found)
    return found[0]


def test_wheel_and_suite_share_one_python():
    assert arg_default("Dockerfile", "PYTHON_VERSION") == docker_common.PYTHON_VERSION
    assert arg_default("suite.Dockerfile", "PYTHON_VERSION") == docker_common.PYTHON_VERSION
    build = (REPO / "docker" / "Dockerfile").read_text()
    assert 'HERMETIC_PYTHON_VERSION="${PYTHON_VERSION}"' in build
    suite = (REPO / "docker" / "suite.Dockerfile").read_text()
    assert '"python${PYTHON_VERSION}" -m venv .venv' in suite
    help_text = subprocess.run(
        [sys.executable, str(SCRIPTS / "build_wheel.py"), "--help"], capture_output=True, text=True
    ).stdout
    assert f"default: {docker_common.PYTHON_VERSION}" in help_text


def test_suite_image_holds_the_engine_and_writes_reports_to_a_mount():
    suite = (REPO / "docker" / "suite.Dockerfile").read_text()
    for folder in ("src/", "models/", "tests/", "patch_src/", "tools/"):
        assert f"COPY {folder} {folder}" in suite, folder
    assert "make engine" in suite and "g++" in suite
    assert "ENV REMAT_REPORTS_DIR=/work/reports" in suite
    ignored = (REPO / ".dockerignore").read_text().split()
    assert ".venv/" in ignored and "build/" in ignored


def test_run_suite_passes_the_wheel_folder_target_and_mount(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "tensorflow-2.21.0-cp311-cp311-linux_x86_64.whl").write_bytes(b"")
    proc = subprocess.run(
        [
            sys.executable,
            str(SCRIPTS / "run_suite.py"),
            "--dry-run",
            "--wheels",
            str(wheels),
            "--gpu-target",
            "a100_sxm_80",
            "--reports",
            str(tmp_path / "out"),
            "--budget-fraction",
            "0.4",
            "--algorithm",
            "standard",
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"--build-context wheels={wheels}" in proc.stdout
    assert "--build-arg PYTHON_VERSION=3.11" in proc.stdout  # the wheel's own Python
    assert f"-v {tmp_path / 'out'}:/work/reports" in proc.stdout
    assert "-e REMAT_GPU_TARGET=a100_sxm_80" in proc.stdout
    assert "-e REMAT_GPU_BUDGET_FRACTION=0.4 -e REMAT_GPU_ALGORITHM=standard" in proc.stdout


def test_run_suite_refuses_a_folder_without_a_wheel_even_in_a_dry_run(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(SCRIPTS / "run_suite.py"), "--dry-run", "--wheels", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "no tensorflow-*.whl" in proc.stderr


@pytest.mark.parametrize("script", ["build_wheel.py", "run_suite.py"])
def test_help_says_its_description_once_and_every_option(script):
    proc = subprocess.run(
        [sys.executable, str(SCRIPTS / script), "--help"], capture_output=True, text=True
    )
    assert proc.returncode == 0
    first = (SCRIPTS / script).read_text().split('"""')[1].splitlines()[0]
    assert proc.stdout.count(first) == 1
    assert "--out OUT\n" not in proc.stdout  # an option without help


def test_dry_runs_name_the_folder_the_build_context_is(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(SCRIPTS / "build_wheel.py"), "--dry-run"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"+ cd {SCRIPTS.parent}" in proc.stdout


def test_run_suite_refuses_a_budget_that_is_no_share():
    proc = subprocess.run(
        [sys.executable, str(SCRIPTS / "run_suite.py"), "--dry-run", "--budget-fraction", "50"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "(0, 1)" in proc.stderr
