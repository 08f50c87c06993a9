#!/usr/bin/env python3
"""Builds the patched TensorFlow v2.21.0 wheel with CUDA in Docker and writes
it to --out (default dist/). Needs a Docker engine with BuildKit; expect
several hours and ~60 GB of disk the first time (Bazel's cache is kept in a
BuildKit cache mount, so rebuilds after a patch change take far less).

    python3 scripts/build_wheel.py [--out dist] [--cuda 12.5.1] [--cudnn 9.3.0]
                                   [--compute sm_80,compute_90] [--dry-run]
                                   [--bazel-remote-cache URL] [--bazel-opt OPT ...]

Teams that outgrow one machine share Bazel's work: `--bazel-remote-cache URL`
(a bazel-remote or other gRPC/HTTP cache) becomes `--remote_cache=URL`, and
each `--bazel-opt` is one more Bazel option, such as
`--bazel-opt=--remote_executor=grpc://rbe:8980` or
`--bazel-opt=--remote_upload_local_results=false`. Defaults are the v2.21.0
release's: CUDA 12.5.1, cuDNN 9.3.0, sm_60,sm_70,sm_80,sm_89,compute_90.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from docker_common import PYTHON_VERSION, REPO_ROOT, docker_for, run


def bazel_options(remote_cache: str | None, extra: list[str]) -> list[str]:
    """The extra Bazel options, checked: the image build passes them as one
    string split on spaces, so each must be one `--option[=value]` word."""
    opts = ([f"--remote_cache={remote_cache}"] if remote_cache else []) + list(extra)
    for opt in opts:
        if not re.fullmatch(r"--[A-Za-z_][\w.-]*(=\S+)?", opt):
            raise ValueError(
                f"--bazel-opt {opt!r}: expected one Bazel option such as "
                "--remote_executor=grpc://host:8980 (no spaces)"
            )
    return opts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=REPO_ROOT / "dist",
        help="folder the wheel is written to (default: dist/ in this checkout)",
    )
    parser.add_argument("--cuda", default="12.5.1", help="hermetic CUDA version")
    parser.add_argument("--cudnn", default="9.3.0", help="hermetic cuDNN version")
    parser.add_argument(
        "--compute",
        default="sm_60,sm_70,sm_80,sm_89,compute_90",
        help="CUDA compute capabilities (default: the v2.21.0 release's)",
    )
    parser.add_argument(
        "--bazel-remote-cache", metavar="URL", help="Bazel remote cache (--remote_cache=URL)"
    )
    parser.add_argument(
        "--bazel-opt",
        action="append",
        default=[],
        metavar="OPT",
        help="one more Bazel option, e.g. --bazel-opt=--remote_executor=grpc://host:8980; "
        "repeatable",
    )
    parser.add_argument(
        "--python",
        default=PYTHON_VERSION,
        help=f"Python of the wheel; the suite image installs the same (default: {PYTHON_VERSION})",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the command only")
    args = parser.parse_args(argv)
    try:
        bazel_opts = bazel_options(args.bazel_remote_cache, args.bazel_opt)
    except ValueError as e:
        parser.error(str(e))
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
        "--build-arg",
        f"BAZEL_EXTRA_OPTS={' '.join(bazel_opts)}",
        ".",
    ]
    code = run(cmd, args.dry_run, env={**os.environ, "DOCKER_BUILDKIT": "1"})
    if code != 0:
        print(
            "build_wheel: docker build failed; see docs/in-tree.md, 'When the image build fails'",
            file=sys.stderr,
        )
    return code


if __name__ == "__main__":
    sys.exit(main())
