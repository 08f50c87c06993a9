#!/usr/bin/env python3
"""Builds the patched TensorFlow v2.21.0 wheel with CUDA in Docker and writes
it to --out (default dist/). Needs a Docker engine with BuildKit; expect
several hours and ~60 GB of disk the first time (Bazel's cache is kept in a
BuildKit cache mount, so rebuilds after a patch change take far less).

    python3 scripts/build_wheel.py [--out dist] [--cuda 12.5.1] [--cudnn 9.3.0]
                                   [--compute sm_80,sm_90] [--dry-run]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from docker_common import REPO_ROOT, docker_for, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__)
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "dist")
    parser.add_argument("--cuda", default="12.5.1", help="hermetic CUDA version")
    parser.add_argument("--cudnn", default="9.3.0", help="hermetic cuDNN version")
    parser.add_argument(
        "--compute",
        default="sm_70,sm_80,sm_86,sm_89,sm_90,compute_90",
        help="CUDA compute capabilities",
    )
    parser.add_argument("--python", default="3.11", help="Python of the wheel")
    parser.add_argument("--dry-run", action="store_true", help="print the command only")
    args = parser.parse_args(argv)
    if not (REPO_ROOT / "remat.patch").exists():
        print("build_wheel: remat.patch is missing; run scripts/make_patch.py", file=sys.stderr)
        return 2
    docker = docker_for("build_wheel", args.dry_run)
    cmd = [
        docker,
        "build",
        "-f",
        "docker/Dockerfile",
        "--target",
        "wheel",
        "--output",
        f"type=local,dest={args.out}",
        "--build-arg",
        f"CUDA_VERSION={args.cuda}",
        "--build-arg",
        f"CUDNN_VERSION={args.cudnn}",
        "--build-arg",
        f"CUDA_COMPUTE_CAPABILITIES={args.compute}",
        "--build-arg",
        f"PYTHON_VERSION={args.python}",
        ".",
    ]
    code = run(cmd, args.dry_run, env={**os.environ, "DOCKER_BUILDKIT": "1"})
    if code != 0:
        print(
            "build_wheel: docker build failed; see README 'When the image build fails'",
            file=sys.stderr,
        )
    return code


if __name__ == "__main__":
    sys.exit(main())
