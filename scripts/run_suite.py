#!/usr/bin/env python3
"""Builds the suite image around the patched wheel in --wheels and runs the
GPU tier of the memory-regression suite in it (`docker run --gpus all`).

    python3 scripts/run_suite.py [--wheels DIR] [--gpu-target NAME]
                                 [--reports DIR] [--pytest-args "-k resnet20"] [--dry-run]

Needs on the host: an NVIDIA driver, the NVIDIA Container Toolkit, about
25 GB of disk for the image, and 30-60 minutes for the first build (the engine
compiles in the image). Results (reports/gpu_tier.jsonl) land in --reports.
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from pathlib import Path

from docker_common import PYTHON_VERSION, REPO_ROOT, docker_for, run

IMAGE = "remat-suite"


def wheel_python(wheel: Path) -> str | None:
    """ "3.12" for tensorflow-2.21.0-cp312-cp312-linux_x86_64.whl."""
    match = re.search(r"-cp(\d)(\d+)-", wheel.name)
    return f"{match.group(1)}.{match.group(2)}" if match else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--wheels", type=Path, default=REPO_ROOT / "dist", help="folder with the wheel (dist)"
    )
    parser.add_argument(
        "--gpu-target",
        default="",
        help="embedded GPU spec the predictions use (hlo-remat --list-gpu-targets; "
        "default: the tests' h100_sxm)",
    )
    parser.add_argument(
        "--reports", type=Path, default=Path.cwd() / "reports", help="where results land"
    )
    parser.add_argument(
        "--budget-fraction",
        type=float,
        default=None,
        help="the pass's budget as a share of each model's measured peak "
        "(default: tests/baselines.json's, 0.5)",
    )
    parser.add_argument(
        "--algorithm",
        default="",
        help="the algorithm the GPU runs use (default: tests/baselines.json's, path)",
    )
    parser.add_argument("--pytest-args", default="", help="extra pytest arguments")
    parser.add_argument("--dry-run", action="store_true", help="print the commands only")
    args = parser.parse_args(argv)
    if args.budget_fraction is not None and not 0 < args.budget_fraction < 1:
        parser.error(f"--budget-fraction {args.budget_fraction}: a share in (0, 1), e.g. 0.5")
    wheels = sorted(args.wheels.glob("tensorflow-*.whl")) if args.wheels.is_dir() else []
    if not wheels:
        # A dry run too: the commands it would print could not work.
        print(
            f"run_suite: no tensorflow-*.whl in {args.wheels}; run scripts/build_wheel.py",
            file=sys.stderr,
        )
        return 2
    if len(wheels) > 1:
        print(f"run_suite: more than one wheel in {args.wheels}; keep one", file=sys.stderr)
        return 2
    python = (wheel_python(wheels[0]) if wheels else None) or PYTHON_VERSION
    docker = docker_for("run_suite", args.dry_run)
    build = [
        docker,
        "build",
        "-f",
        "docker/suite.Dockerfile",
        "--build-context",
        f"wheels={args.wheels.resolve()}",
        "--build-arg",
        f"PYTHON_VERSION={python}",
        "-t",
        IMAGE,
        ".",
    ]
    code = run(build, args.dry_run)
    if code != 0:
        return code
    args.reports.mkdir(parents=True, exist_ok=True)
    env = []
    for name, value in (
        ("REMAT_GPU_TARGET", args.gpu_target),
        ("REMAT_GPU_BUDGET_FRACTION", args.budget_fraction),
        ("REMAT_GPU_ALGORITHM", args.algorithm),
    ):
        if value not in ("", None):
            env += ["-e", f"{name}={value}"]
    pytest = [".venv/bin/pytest", "-m", "gpu", "-ra", "tests", *shlex.split(args.pytest_args)]
    mount = ["-v", f"{args.reports.resolve()}:/work/reports"]
    return run([docker, "run", "--rm", "--gpus", "all", *mount, *env, IMAGE, *pytest], args.dry_run)


if __name__ == "__main__":
    sys.exit(main())
