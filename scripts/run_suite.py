#!/usr/bin/env python3
"""Builds the suite image around the patched wheel in --wheels and runs the
GPU tier of the memory-regression suite in it (`docker run --gpus all`).

    python3 scripts/run_suite.py [--wheels dist] [--pytest-args "-k resnet20"] [--dry-run]
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from docker_common import REPO_ROOT, docker_for, run

IMAGE = "remat-suite"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__)
    parser.add_argument("--wheels", type=Path, default=REPO_ROOT / "dist")
    parser.add_argument("--pytest-args", default="", help="extra pytest arguments")
    parser.add_argument("--dry-run", action="store_true", help="print the commands only")
    args = parser.parse_args(argv)
    wheels = sorted(args.wheels.glob("tensorflow-*.whl")) if args.wheels.is_dir() else []
    if not wheels and not args.dry_run:
        print(
            f"run_suite: no tensorflow-*.whl in {args.wheels}; run scripts/build_wheel.py",
            file=sys.stderr,
        )
        return 2
    if args.wheels.resolve() != (REPO_ROOT / "dist").resolve():
        print(
            "run_suite: the suite image copies the wheel from dist/; use --wheels dist",
            file=sys.stderr,
        )
        return 2
    docker = docker_for("run_suite", args.dry_run)
    code = run([docker, "build", "-f", "docker/suite.Dockerfile", "-t", IMAGE, "."], args.dry_run)
    if code != 0:
        return code
    pytest = [".venv/bin/pytest", "-m", "gpu", "-ra", "tests", *shlex.split(args.pytest_args)]
    return run([docker, "run", "--rm", "--gpus", "all", IMAGE, *pytest], args.dry_run)


if __name__ == "__main__":
    sys.exit(main())
