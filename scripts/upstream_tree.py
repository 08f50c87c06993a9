"""Reads upstream XLA files from wherever they are: a TensorFlow checkout
(XLA under third_party/xla/xla/), an XLA source tree (xla/ at its top), or a
git directory at a revision ("GITDIR@REV", e.g. a fetched openxla history:
/work/.mirror/zml+xla/repo@7420bd5453). Paths are given relative to XLA's
own `xla/` folder ("service/gpu/BUILD"), as XLA's BUILD labels name them.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path


class UpstreamError(Exception):
    """The upstream tree or revision cannot be read."""


def _git(git_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, text=True)


def _git_dir_of(path: Path) -> Path | None:
    """The git directory of `path` (a bare repository or a work tree), if any."""
    for candidate in (path, path / ".git"):
        if candidate.is_dir() and _git(candidate, "rev-parse", "--git-dir").returncode == 0:
            return candidate
    return None


@dataclass(frozen=True)
class UpstreamTree:
    """One upstream XLA: files come from `root` on disk, or from `git_dir` at `rev`."""

    description: str
    root: Path | None = None  # the folder that holds XLA's `xla/` folder
    git_dir: Path | None = None
    rev: str = ""
    prefix: str = ""  # "third_party/xla/" in a TensorFlow history

    def read(self, xla_path: str) -> str | None:
        """The text of xla/<xla_path>, or None if the file is not there."""
        if self.git_dir is not None:
            shown = _git(self.git_dir, "show", f"{self.rev}:{self.prefix}xla/{xla_path}")
            return shown.stdout if shown.returncode == 0 else None
        assert self.root is not None
        path = self.root / "xla" / xla_path
        return path.read_text() if path.is_file() else None


def open_upstream(spec: str) -> UpstreamTree:
    """Opens "DIR" (a TensorFlow checkout or XLA tree) or "GITDIR@REV".

    A plain DIR that is a git directory without a work tree (a bare or
    fetched history) is read at HEAD.
    """
    path_text, _, rev = spec.partition("@")
    path = Path(path_text).expanduser()
    if not path.exists():
        raise UpstreamError(f"{path}: no such directory")
    if not rev:
        for root in (path / "third_party" / "xla", path):
            if (root / "xla" / "BUILD").is_file():
                return UpstreamTree(description=str(path), root=root)
    git_dir = _git_dir_of(path)
    if git_dir is None:
        raise UpstreamError(
            f"{path}: neither a TensorFlow checkout, an XLA source tree nor a git directory"
        )
    rev = rev or "HEAD"
    full = _git(git_dir, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    if full.returncode != 0:
        raise UpstreamError(f"{path}: no commit {rev}")
    commit = full.stdout.strip()
    for prefix in ("", "third_party/xla/"):  # an XLA history, or TensorFlow's
        tree = UpstreamTree(f"{path}@{commit[:10]}", git_dir=git_dir, rev=commit, prefix=prefix)
        if tree.read("BUILD") is not None:
            return tree
    raise UpstreamError(f"{path}@{rev}: no xla/BUILD at that revision (not an XLA history?)")


_RULE_NAME = re.compile(r'^\s*name\s*=\s*"([^"]+)"', flags=re.M)


def rule_text(tree: UpstreamTree, label: str) -> str | None:
    """The text of the rule a `//xla/...` label names (up to the next rule),
    or None when the package or the rule does not exist."""
    match = re.fullmatch(r"//(xla(?:/[^:]*)?)(?::(.+))?", label)
    if not match:
        raise ValueError(f"{label}: not an //xla/... label")
    package, name = match.group(1), match.group(2) or match.group(1).rsplit("/", 1)[-1]
    build = tree.read(f"{package[len('xla/') :]}/BUILD" if package != "xla" else "BUILD")
    if build is None:
        return None
    names = list(_RULE_NAME.finditer(build))
    for i, found in enumerate(names):
        if found.group(1) == name:
            end = names[i + 1].start() if i + 1 < len(names) else len(build)
            return build[found.start() : end]
    # A proto library's generated C++ target: tf_proto_library(name = X)
    # defines X_cc, which names no rule of its own in the BUILD file.
    if name.endswith("_cc"):
        for i, found in enumerate(names):
            opening = build.rfind("\n", 0, build.rfind("(", 0, found.start())) + 1
            if (
                found.group(1) == name[: -len("_cc")]
                and "proto_library(" in build[opening : found.start()]
            ):
                end = names[i + 1].start() if i + 1 < len(names) else len(build)
                return build[found.start() : end]
    return None
