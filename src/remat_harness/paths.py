"""Where the project's files and tools are."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
CACHE_DIR = Path(os.environ.get("REMAT_CACHE_DIR", REPO_ROOT / ".cache"))
# Outputs go where the user is, not into the checkout (REMAT_REPORTS_DIR wins).
REPORTS_DIR = Path(os.environ.get("REMAT_REPORTS_DIR", Path.cwd() / "reports"))
MODELS_DIR = REPO_ROOT / "models"


class ToolMissing(RuntimeError):
    """A tool the harness needs is not installed."""


def hlo_remat_binary() -> Path:
    """The `hlo-remat` CLI: $REMAT_HLO_REMAT if set (a build tree's binary),
    else beside this interpreter (the venv), else on PATH."""
    override = os.environ.get("REMAT_HLO_REMAT")
    if override:
        if not Path(override).is_file():
            raise ToolMissing(f"REMAT_HLO_REMAT={override}: no such file")
        return Path(override)
    beside = Path(sys.executable).parent / "hlo-remat"
    if beside.exists():
        return beside
    found = shutil.which("hlo-remat")
    if found:
        return Path(found)
    raise ToolMissing("hlo-remat is not built; run `make engine` (or `make demo`)")
