"""scripts/catalogue_table.py: an answer over the FLOPs target gets the
fixed-schedule MILP at the peak it reached, which says whether the proven
bound is loose or the search overspends; the `optimal` column says which
plan the optimal algorithm kept and why; a budget missed far above the
floor gets the level below which the bound rules out every plan within the
cap."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remat_harness.frontier import run_frontier
from remat_harness.hlo_dump import ModelSpec, produce_hlo
from remat_harness.optimal_column import optimal_text, run_optimal
from remat_harness.optimum import load_graph
from tests.script_modules import load_script

pytestmark = pytest.mark.slow


catalogue_table = load_script("catalogue_table")


def test_an_answer_over_the_flops_target_shows_the_milp_at_its_peak(tmp_path: Path):
    step = produce_hlo(ModelSpec.parse("20")) / "step.hlo"
    run = run_frontier(step, tmp_path, budgets=("0.33",), with_bound=True, time_limit_s=10)
    nbytes = run.budgets[0]
    answer = catalogue_table.cell_answer(run.frontier, nbytes, run.bounds.get(nbytes))
    report = json.loads((tmp_path / "report.json").read_text())
    graph = load_graph(tmp_path / "graph.json")
    milp = catalogue_table.milp_at_the_peak(graph, report, answer, 10)
    assert milp["status"] and milp["seconds"] > 0
    # Solved, it reaches the peak: a plan, however dear; else it says why not.
    assert milp["extra_flops"] is None or milp["extra_flops"] >= 0
    answer["flops_ok"] = False
    answer["milp"] = milp
    text = catalogue_table._cell_text(answer)
    assert "(over the FLOPs target)" in text and "MILP at this peak" in text


def test_the_optimal_column_says_which_plan_was_kept_and_why(tmp_path: Path):
    """random2 at 0.7x: the solver proves its optimum in well under a second
    and its plan, applied, meets the budget with fewer FLOPs than `path`'s
    (it read a revived original through a bitcast before 0b27fc6)."""
    step = produce_hlo(ModelSpec.parse("random2")) / "step.hlo"
    entry = run_optimal(step, None, "0.7", 10, tmp_path)
    assert entry["outcome"] == "solver plan kept", entry
    assert entry["status"] == "optimal" and entry["met"]
    assert entry["extra_flops"] < entry["path_extra_flops"]
    text = optimal_text(entry)
    assert text.startswith("solver's plan; optimal,") and "met" in text
    record = {"model": "random2", "device": "cpu", "0.5": {"optimal": entry}, "0.33": {}}
    table = catalogue_table.optimal_markdown([record])
    assert "| random2 | cpu | solver's plan;" in table and "| not run |" in table


def test_an_optimal_run_that_fails_is_a_cell_that_says_so(tmp_path: Path):
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule broken\n")
    entry = run_optimal(bad, None, "0.5", 1, tmp_path)
    assert "error" in entry
    assert optimal_text(entry).startswith("failed: ")


def test_a_budget_missed_far_above_the_floor_says_what_the_bound_rules_out(tmp_path: Path):
    step = produce_hlo(ModelSpec.parse("20")) / "step.hlo"
    run = run_frontier(step, tmp_path, budgets=("0.2",), with_bound=True, time_limit_s=10)
    nbytes = run.budgets[0]
    answer = catalogue_table.cell_answer(run.frontier, nbytes, run.bounds.get(nbytes))
    assert not answer["met"]
    answer["memory_ok"] = False  # as if far above the floor
    before = run.frontier.allocation_before_bytes
    record = {"model": "20", "device": "cpu", "before_bytes": before, "0.5": None, "0.33": answer}
    assert catalogue_table.add_out_of_reach(record, tmp_path, 5)
    reach = answer["out_of_reach"]
    assert reach["solves"] >= 1 and reach["cap"] > 0
    # The bound proves 0.2x impossible, so something is ruled out; never the
    # answer's own peak, which a plan reached.
    assert answer["bound_status"] == "Infeasible"
    assert nbytes / before <= reach["below_ratio"] < reach["open_ratio"] <= answer["ratio"]
    cap, below = 100 * reach["cap"], reach["below_ratio"]
    assert f"rules out every plan within +{cap:.1f}% below {below:.3f}" in (
        catalogue_table._cell_text(answer)
    )
    assert not catalogue_table.add_out_of_reach(record, tmp_path, 5)  # once


def test_a_bound_priced_below_the_floor_says_so():
    """On CPU a donated parameter ends at its last use, so the relaxation can
    price a budget the floor (parameters live through the step) rules out;
    the cell names the conflict instead of reading as a plain bound."""
    answer = {
        "ratio": 0.634,
        "met": False,
        "memory_ok": True,
        "extra_flops": 0.129,
        "flops_ok": False,
        "bound": 0.0,
        "bound_status": "Optimal",
    }
    assert "bound 0.0% (the budget is below the floor)" in catalogue_table._cell_text(answer, True)
    assert "below the floor" not in catalogue_table._cell_text(answer, False)


def test_a_bound_from_a_stopped_solve_says_so():
    """A solve the time limit stopped gives its dual bound, a weaker lower
    bound than the optimum (DenseNet-169 bf16 at 0.5x on CPU: 0% after 10 s,
    where the relaxation's own MILP finds +15.6%): the cell says so."""
    answer = {
        "ratio": 0.502,
        "met": False,
        "memory_ok": True,
        "extra_flops": 0.160,
        "flops_ok": False,
        "bound": 0.0,
        "bound_status": "Time limit reached",
    }
    assert "bound 0.0% (stopped)" in catalogue_table._cell_text(answer)
    answer["bound_status"] = "Optimal"
    assert "(stopped)" not in catalogue_table._cell_text(answer)
