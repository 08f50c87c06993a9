"""scripts/catalogue_table.py: an answer over the FLOPs target gets the
fixed-schedule MILP at the peak it reached, which says whether the proven
bound is loose or the search overspends."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from remat_harness.frontier import run_frontier
from remat_harness.hlo_dump import ModelSpec, produce_hlo
from remat_harness.paths import REPO_ROOT

pytestmark = pytest.mark.slow


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


catalogue_table = _script("catalogue_table")


def test_an_answer_over_the_flops_target_shows_the_milp_at_its_peak(tmp_path: Path):
    step = produce_hlo(ModelSpec.parse("20")) / "step.hlo"
    run = run_frontier(step, tmp_path, budgets=("0.33",), with_bound=True, time_limit_s=20)
    nbytes = run.budgets[0]
    answer = catalogue_table.cell_answer(run.frontier, nbytes, run.bounds.get(nbytes))
    milp = catalogue_table.milp_at_the_peak(tmp_path, answer, 30)
    assert milp["status"] and milp["seconds"] > 0
    # Solved, it reaches the peak: a plan, however dear; else it says why not.
    assert milp["extra_flops"] is None or milp["extra_flops"] >= 0
    answer["flops_ok"] = False
    answer["milp"] = milp
    text = catalogue_table._cell_text(answer)
    assert "(over the FLOPs target)" in text and "MILP at this peak" in text
