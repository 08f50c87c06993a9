"""The repository's scripts (scripts/*.py, not a package) as modules, for
the tests that call their functions."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from remat_harness.paths import REPO_ROOT


def load_script(name: str) -> ModuleType:
    """scripts/<name>.py, imported under `name`."""
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module
