#!/usr/bin/env python3
"""Applies remat.patch to a TensorFlow checkout, all or nothing.

    python3 scripts/apply_patch.py TF_DIR [--patch remat.patch] [--check] [--force]

Checks, in order: TF_DIR is a git checkout; it is at v2.21.0
(a481b10260dfdf833a1b16007eead49c1d7febf3) and has no local changes (--force
skips both); the patch is not already applied (a reverse check); every hunk fits
(`git apply --check`), else it names the file and the hunk that does not fit.
Only then does it apply, with one `git apply`, which changes every file or none.
Exit codes: 0 applied (or already applied), 1 does not fit, 2 bad checkout or
arguments.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
TF_TAG = "v2.21.0"
TF_COMMIT = "a481b10260dfdf833a1b16007eead49c1d7febf3"
# The XLA inside that release: openxla/xla at this commit (the wheel's XLA
# headers are byte-identical to it). Upstream checks run against it.
XLA_COMMIT = "7420bd545363969ef825e4e4c3aed98bd09390ad"


class ApplyError(Exception):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def git(tf_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(tf_dir), *args], capture_output=True, text=True)


def hunk_titles(patch: Path) -> dict[tuple[str, int], str]:
    """(file, old start line) -> the hunk's title (why it exists)."""
    titles: dict[tuple[str, int], str] = {}
    current = ""
    for line in patch.read_text().splitlines():
        if line.startswith("+++ b/"):
            current = line[len("+++ b/") :]
        match = re.match(r"^@@ -(\d+),\d+ \+\d+,\d+ @@ ?(.*)$", line)
        if match and current:
            titles[(current, int(match.group(1)))] = match.group(2)
    return titles


def explain_failure(stderr: str, patch: Path) -> str:
    titles = hunk_titles(patch)
    lines = []
    for path, line in re.findall(r"error: patch failed: (\S+):(\d+)", stderr):
        title = titles.get((path, int(line)), "")
        lines.append(
            f"  {path}: the hunk at line {line} ({title or 'see the patch'}) does not fit: "
            "the upstream lines it is anchored on are not there (the file differs from "
            f"TensorFlow {TF_TAG})"
        )
    for path in re.findall(r"error: (\S+): already exists in working directory", stderr):
        lines.append(
            f"  {path} already exists: a previous, partial application? "
            "`git checkout -- . && git clean -fd third_party/xla/xla/service/remat`"
        )
    for path in re.findall(r"error: (\S+): No such file or directory", stderr):
        lines.append(f"  {path} is missing from the checkout")
    if not lines:
        lines.append("  " + stderr.strip().replace("\n", "\n  "))
    return "\n".join(lines)


def apply(tf_dir: Path, patch: Path, check_only: bool, force: bool) -> str:
    if not patch.is_file():
        raise ApplyError(f"{patch}: no such patch file", 2)
    if git(tf_dir, "rev-parse", "--git-dir").returncode != 0:
        raise ApplyError(f"{tf_dir}: not a git checkout of TensorFlow", 2)
    head = git(tf_dir, "rev-parse", "HEAD").stdout.strip()
    if head != TF_COMMIT and not force:
        raise ApplyError(
            f"{tf_dir} is at {head or 'no commit'}; the patch targets TensorFlow {TF_TAG} "
            f"({TF_COMMIT}). `git -C {tf_dir} checkout {TF_COMMIT}`, or --force to try anyway",
            2,
        )
    patch_arg = str(patch.resolve())
    if git(tf_dir, "apply", "--reverse", "--check", patch_arg).returncode == 0:
        return f"{tf_dir}: remat.patch is already applied; nothing to do"
    dirty = git(tf_dir, "status", "--porcelain", "--untracked-files=no").stdout.strip()
    if dirty and not force:
        raise ApplyError(
            f"{tf_dir} has local changes:\n{dirty}\ncommit or stash them, or --force", 2
        )
    checked = git(tf_dir, "apply", "--check", "--verbose", patch_arg)
    if checked.returncode != 0:
        raise ApplyError(
            f"remat.patch does not fit {tf_dir}; nothing was changed:\n"
            + explain_failure(checked.stderr, patch),
            1,
        )
    if check_only:
        return f"{tf_dir}: remat.patch fits (checked only)"
    done = git(tf_dir, "apply", patch_arg)
    if done.returncode != 0:  # git apply is atomic: nothing was written
        raise ApplyError(f"git apply failed; nothing was changed:\n{done.stderr.strip()}", 1)
    files = sum(1 for line in patch.read_text().splitlines() if line.startswith("diff --git"))
    return f"{tf_dir}: applied remat.patch ({files} files)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("tf_dir", type=Path, help="the TensorFlow checkout")
    parser.add_argument("--patch", type=Path, default=REPO_ROOT / "remat.patch")
    parser.add_argument("--check", action="store_true", help="check only, change nothing")
    parser.add_argument("--force", action="store_true", help="skip commit and clean checks")
    args = parser.parse_args(argv)
    try:
        print(apply(args.tf_dir, args.patch, args.check, args.force))
    except ApplyError as e:
        print(f"apply_patch: {e}", file=sys.stderr)
        return e.code
    return 0


if __name__ == "__main__":
    sys.exit(main())
