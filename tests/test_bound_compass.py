"""The bound as a compass (bound_compass.py): the bound's solution priced
node by node adds up to the bound, a plan's runs read from the engine's
decisions add up to what the engine spent, and their differences to the
gap between the two."""

from __future__ import annotations

import pytest

from remat_harness.bound_compass import (
    cloned_from,
    compare_runs,
    compass_text,
    plan_runs_again,
)
from remat_harness.optimum import Graph
from remat_harness.optimum_bound import solve_lower_bound
from tests.graph_cases import DIAMOND, exported_chain_plan
from tests.test_optimum_bound import WIDE

pytest.importorskip("highspy")


def _priced(graph: Graph, runs: dict[str, int]) -> float:
    flops = {node.name: node.flops for node in graph.nodes}
    return sum(count * flops.get(name, 0.0) for name, count in runs.items())


@pytest.mark.parametrize(("graph", "budget"), [(WIDE, 309), (WIDE, 210), (DIAMOND, 402)])
def test_the_solution_priced_is_the_bound(graph, budget):
    bound = solve_lower_bound(graph, budget, time_limit_s=30)
    assert bound.status == "Optimal", bound.status
    assert bound.runs_again
    assert _priced(graph, bound.runs_again) == pytest.approx(bound.extra_flops)


def test_the_wide_graph_runs_a_again():
    bound = solve_lower_bound(WIDE, 309, time_limit_s=30)
    assert bound.runs_again == {"a": 1}


@pytest.mark.parametrize(
    ("name", "origin"),
    [
        ("copy.91.remat.9", "copy.91"),
        ("fusion.3.remat", "fusion.3"),
        ("fusion.3.remat.2.remat.7", "fusion.3"),
        ("gemm_fusion_dot.65", "gemm_fusion_dot.65"),
        ("remat.1", "remat.1"),
    ],
)
def test_clone_names_lead_back_to_their_origin(name, origin):
    assert cloned_from(name) == origin


def test_take_backs_cancel_and_compressions_run_nothing():
    decisions = [
        {"action": "recompute", "instructions": ["a.remat", "b.remat.1"]},
        {"action": "recompute", "instructions": ["a.remat.2"]},
        {"action": "compress", "instructions": ["c.compact", "c.uncompact"]},
        {"action": "take back", "instructions": ["b.remat.1"]},
    ]
    assert plan_runs_again(decisions) == {"a": 2}


def test_a_plan_that_runs_more_is_told_where():
    bound = solve_lower_bound(WIDE, 309, time_limit_s=30)
    decisions = [{"action": "recompute", "instructions": ["a.remat", "w.remat", "b.remat"]}]
    differences = compare_runs(WIDE, bound, decisions)
    # w and b cost 1 each beyond the bound; a is run again by both.
    assert [(d.node, d.plan_runs, d.bound_runs) for d in differences] == [
        ("b", 1, 0),
        ("w", 1, 0),
    ]
    assert sum(d.extra_fraction for d in differences) == pytest.approx(2 / WIDE.module_flops)
    assert compass_text([d.as_dict() for d in differences]) == "b 1/0 (+1.00%), w 1/0 (+1.00%)"


def test_an_unsolved_bound_gives_no_compass():
    bound = solve_lower_bound(WIDE, 100, time_limit_s=30)  # below any plan
    assert bound.impossible
    assert compare_runs(WIDE, bound, [{"action": "recompute", "instructions": ["a.remat"]}]) == []


def test_the_engines_plan_against_its_bound(run_engine, tmp_path):
    """CHAIN compiled by the engine: its decisions priced by the exported
    graph are what the engine spent, and the differences with the bound's
    solution add up to the gap between the two."""
    report, graph = exported_chain_plan(run_engine, tmp_path)
    bound = solve_lower_bound(graph, report["budget_bytes"], time_limit_s=60)
    assert bound.status == "Optimal", bound.status
    engine_extra = report["flops_after"] - report["flops_before"]
    plan = plan_runs_again(report["decisions"])
    assert plan, "the engine recomputed nothing"
    assert _priced(graph, plan) == pytest.approx(engine_extra)
    gap = sum(d.extra_fraction for d in compare_runs(graph, bound, report["decisions"]))
    assert gap * graph.module_flops == pytest.approx(engine_extra - bound.extra_flops)
