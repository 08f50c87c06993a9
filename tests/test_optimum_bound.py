"""The lower bound on what any plan spends (optimum_bound.py): hand-solved
graphs, never above the MILP optimum, and never above what the engine spent
on an exported module that met its budget."""

from __future__ import annotations

import dataclasses

import pytest

from remat_harness.optimum import GRAPH_FORMAT, graph_from_dict, solve_min_flops
from remat_harness.optimum_bound import out_of_reach, solve_lower_bound
from tests.graph_cases import CHAIN, DIAMOND, UNET, exported_chain_plan, graph

pytest.importorskip("highspy")

# x (10, a parameter) -> a (100, 5 FLOPs) -> b (100) -> w (200) -> g -> f
# (out), and f reads a again. At w's stage 10 + max(b read, w written) = 210
# must be there whatever happens, at g's 10 + w = 210 too, and a (100) at
# both unless it runs again after g.
WIDE = graph(
    [
        ("x", 10, 0.0, False, (), True),
        ("a", 100, 5.0, True, (0,), False),
        ("b", 100, 1.0, True, (1,), False),
        ("w", 200, 1.0, True, (2,), False),
        ("g", 10, 1.0, True, (3,), False),
        ("f", 10, 1.0, True, (4, 1), True),
    ]
)


def test_wide_profile_is_the_hand_count():
    assert WIDE.profile() == [10, 110, 210, 410, 320, 130]


@pytest.mark.parametrize(("budget", "flops"), [(310, 0.0), (309, 5.0), (210, 5.0)])
def test_a_value_held_over_a_wide_stage_must_run_again(budget, flops):
    bound = solve_lower_bound(WIDE, budget, time_limit_s=30)
    assert bound.proven and bound.status == "Optimal", bound.status
    assert bound.extra_flops == pytest.approx(flops)
    assert bound.extra_flops_fraction == pytest.approx(flops / 100.0)


def test_a_checkpoints_own_run_stays_where_it_is():
    """With w's stage the only checkpoint, moving w into the interval after
    it (dropped, run again: no FLOPs) would leave its 200 bytes counted
    nowhere and the bound at nothing."""
    bound = solve_lower_bound(WIDE, 309, checkpoints=1, time_limit_s=30)
    assert bound.checkpoints == [3]
    assert bound.extra_flops == pytest.approx(5.0)


def test_a_donated_parameter_is_held_up_to_its_last_reader():
    """On CPU a donated parameter ends at its last read (not live to the
    end): x (100) is read at a's stage and again at g's, so it is there at
    w's and f's (200 each at once): no plan meets 250. Left out of the count,
    the relaxation once found 250 met for nothing (ResNet-101 V2's CPU step:
    0.33x "bound 0.0%" under a floor of 0.586)."""
    sizes = [("x", 100, ()), ("a", 10, (0,)), ("w", 200, (1,)), ("f", 10, (2,)), ("g", 10, (0, 3))]
    last = {0: 4, 1: 2, 2: 3, 3: 4, 4: 4}
    donated = graph_from_dict(
        {
            "format": GRAPH_FORMAT,
            "positions": 5,
            "module_flops": 100.0,
            "nodes": [
                {
                    "name": name,
                    "opcode": "parameter" if index == 0 else "custom",
                    "position": index,
                    "flops": 0.0 if index == 0 else 1.0,
                    "recomputable": index > 0,
                    "buffers": [[size, index, last[index], index == 4]],
                    "reads": list(reads),
                }
                for index, (name, size, reads) in enumerate(sizes)
            ],
        }
    )
    assert donated.profile()[2:4] == [310, 310]
    assert solve_lower_bound(donated, 250, time_limit_s=30).impossible
    assert solve_lower_bound(donated, 300, time_limit_s=30).extra_flops == pytest.approx(0.0)


def test_a_budget_the_schedule_meets_needs_nothing():
    bound = solve_lower_bound(WIDE, 410, time_limit_s=30)
    assert bound.checkpoints == [] and bound.extra_flops == 0.0
    assert "meets the budget as it is" in bound.meaning


def test_below_what_a_stage_must_hold_no_plan_meets_it():
    bound = solve_lower_bound(WIDE, 209, time_limit_s=30)
    assert bound.status == "Infeasible" and bound.proven and bound.impossible
    assert bound.extra_flops is None
    assert "no recomputation plan" in bound.meaning


@pytest.mark.parametrize(
    ("cap", "ruled_out", "first_open"), [(0.10, 209, 210), (0.01, 309, 310), (None, 209, 210)]
)
def test_out_of_reach_is_where_the_bound_rules_out_every_plan_within_the_cap(
    cap, ruled_out, first_open
):
    """Below 210 no plan meets WIDE's budget; up to 309 one needs +5%: a
    cap of 10% leaves 210 open, a cap of 1% rules out up to 309, no cap
    only what no plan meets."""
    reach = out_of_reach(WIDE, cap, 100, 400, steps=12, time_limit_s=30)
    assert ruled_out - 2 <= reach.below_bytes <= ruled_out
    assert first_open <= reach.open_bytes <= first_open + 2
    assert reach.solves <= 12 and reach.cap_fraction == cap


@pytest.mark.parametrize(
    ("case", "budget"),
    [(CHAIN, 300), (CHAIN, 250), (CHAIN, 210), (DIAMOND, 420), (UNET, 250), (UNET, 220)],
)
def test_never_above_the_optimum(case, budget):
    """The optimum of optimum.py is a plan in the planner's stricter figure:
    the lower bound, which counts less, never asks more."""
    optimum = solve_min_flops(case, budget, depth=3, time_limit_s=30)
    bound = solve_lower_bound(case, budget, time_limit_s=30)
    assert optimum.optimal and bound.proven, (optimum.status, bound.status)
    assert bound.extra_flops <= optimum.extra_flops + 1e-9


def test_never_above_what_the_engine_spent(run_engine, tmp_path):
    """CHAIN compiled by the engine: a plan that met its budget spent at
    least the bound at that budget."""
    report, graph = exported_chain_plan(run_engine, tmp_path)
    assert report["budget_met"]
    engine_extra = report["flops_after"] - report["flops_before"]
    assert engine_extra > 0  # the engine had to recompute
    bound = solve_lower_bound(graph, report["budget_bytes"], time_limit_s=60)
    assert bound.proven, bound.status
    assert 0 <= bound.extra_flops <= engine_extra + 1e-6


def test_nothing_runs_again_after_what_it_reads_is_written_over():
    """What `a` reads written over at g's stage (a weight the step updates in
    place): the run of `a` after g that meets 309 on WIDE (250 on CHAIN, for
    the MILP) for 5 FLOPs would read the new contents, so neither the bound
    nor the MILP may take it; readable there, both take it again."""

    def limited(graph, node, until):
        nodes = list(graph.nodes)
        nodes[node] = dataclasses.replace(nodes[node], readable_until=until)
        return dataclasses.replace(graph, nodes=tuple(nodes))

    assert solve_lower_bound(limited(WIDE, 1, 4), 309, time_limit_s=30).impossible
    assert solve_lower_bound(limited(WIDE, 1, 5), 309, time_limit_s=30).extra_flops == 5.0
    milp = solve_min_flops(limited(CHAIN, 0, 3), 250, depth=3, time_limit_s=30)
    assert milp.extra_flops is None or milp.extra_flops > 5.0
    assert solve_min_flops(limited(CHAIN, 0, 4), 250, depth=3, time_limit_s=30).extra_flops == 5.0
