"""Where the project's files and tools are."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

# The checkout this package runs from: an editable install's source tree, or
# $REMAT_CHECKOUT (a non-editable install leaves models/ behind).
REPO_ROOT = Path(os.environ.get("REMAT_CHECKOUT", Path(__file__).resolve().parents[2]))
CACHE_DIR = Path(os.environ.get("REMAT_CACHE_DIR", REPO_ROOT / ".cache"))
# Outputs go where the user is, not into the checkout (REMAT_REPORTS_DIR wins).
REPORTS_DIR = Path(os.environ.get("REMAT_REPORTS_DIR", Path.cwd() / "reports"))
MODELS_DIR = REPO_ROOT / "models"


class ToolMissing(RuntimeError):
    """A tool the harness needs is not installed."""


def models_dir() -> Path:
    """The checkout's models/, or why it cannot be found and the fix."""
    if (MODELS_DIR / "resnet_cifar_main.py").is_file():
        return MODELS_DIR
    raise ToolMissing(
        f"the models are not at {MODELS_DIR}: remat-harness runs them from its checkout, "
        "which a non-editable install leaves behind; install it with "
        "`pip install -e <checkout>` or set REMAT_CHECKOUT=<checkout>"
    )


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
