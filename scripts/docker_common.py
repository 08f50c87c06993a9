"""What build_wheel.py and run_suite.py share: finding a Docker engine and
running a command with its output shown."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
# The Python of the wheel docker/Dockerfile builds and of the suite image that
# installs it (both Dockerfiles default their PYTHON_VERSION to this).
PYTHON_VERSION = "3.12"


class DockerError(Exception):
    """Docker cannot do what was asked; the message says why and what to do."""


def require_docker() -> str:
    docker = shutil.which("docker")
    if docker is None:
        raise DockerError(
            "the `docker` command is not installed (https://docs.docker.com/engine/install/)"
        )
    info = subprocess.run(
        [docker, "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True
    )
    if info.returncode != 0:
        reason = (info.stderr.strip().splitlines() or ["no answer"])[-1]
        raise DockerError(
            f"no Docker engine is reachable ({reason}); start dockerd or set DOCKER_HOST"
        )
    return docker


def docker_for(prog: str, dry_run: bool) -> str:
    """The docker command to use; with dry_run no engine is needed. Exits 2
    with the reason when there is none."""
    if dry_run:
        return "docker"
    try:
        return require_docker()
    except DockerError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        raise SystemExit(2) from e


def run(cmd: list[str], dry_run: bool, env: dict[str, str] | None = None) -> int:
    # The build context "." is this checkout: say so, so the command can be
    # run by hand from anywhere.
    print(f"+ cd {shlex.quote(str(REPO_ROOT))} && " + shlex.join(cmd), flush=True)
    if dry_run:
        return 0
    return subprocess.run(cmd, cwd=REPO_ROOT, env=env).returncode
