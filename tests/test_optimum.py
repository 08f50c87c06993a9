"""The MILP optimum (issue 17): hand-solved graphs checked against the
solver, and the exported graph checked against the engine's own figure."""

from __future__ import annotations

import json

import pytest

from remat_harness.optimum import (
    GraphError,
    _Model,
    load_graph,
    solve_min_flops,
    solve_min_peak,
)
from tests import hlo_cases
from tests.graph_cases import CHAIN, DIAMOND, UNET, exported_chain_plan

pytest.importorskip("highspy")


def test_keep_all_profile_is_the_hand_count():
    assert CHAIN.profile() == [100, 200, 300, 300, 210]
    assert DIAMOND.profile() == [10, 210, 310, 410, 310, 510, 420, 130]
    assert UNET.profile() == [10, 110, 160, 185, 235, 310, 220]


@pytest.mark.parametrize(
    ("graph", "budget", "flops", "peak"),
    [
        (CHAIN, 300, 0.0, 300),
        (CHAIN, 250, 5.0, 210),
        (DIAMOND, 420, 8.0, None),
        (UNET, 250, 4.0, None),
    ],
)
def test_least_flops_to_meet_a_budget(graph, budget, flops, peak):
    result = solve_min_flops(graph, budget, depth=3, time_limit_s=30)
    assert result.optimal, result.status
    assert result.extra_flops == pytest.approx(flops)
    assert result.peak_bytes <= budget
    if peak is not None:
        assert result.peak_bytes == peak


def test_unet_recomputes_the_long_skip():
    assert solve_min_flops(UNET, 250, time_limit_s=30).plan == [("e1", 6)]


def test_diamond_needs_a_chain_of_two():
    """With chains of one producer, b cannot be recomputed without keeping a,
    which costs what dropping b saves: 420 cannot be met."""
    assert solve_min_flops(DIAMOND, 420, depth=1, time_limit_s=30).status == "Infeasible"
    plan = solve_min_flops(DIAMOND, 420, depth=2, time_limit_s=30).plan
    assert sorted(plan) == [("a", 7), ("b", 7)]


@pytest.mark.parametrize(("graph", "budget"), [(CHAIN, 209), (DIAMOND, 409), (UNET, 219)])
def test_below_what_any_plan_reaches_is_infeasible(graph, budget):
    result = solve_min_flops(graph, budget, time_limit_s=30)
    assert result.status == "Infeasible" and not result.solved
    assert "no plan" in result.meaning


def test_least_peak_at_a_flops_budget():
    assert solve_min_peak(CHAIN, 0.0, time_limit_s=30).peak_bytes == 300
    assert solve_min_peak(CHAIN, 5.0, time_limit_s=30).peak_bytes == 210
    assert solve_min_peak(UNET, 4.0, time_limit_s=30).peak_bytes == 220


def test_a_file_that_is_not_a_graph_is_refused(tmp_path):
    bad = tmp_path / "g.json"
    bad.write_text(json.dumps({"format": "other"}))
    with pytest.raises(GraphError, match="hlo-remat --export-graph"):
        load_graph(bad)


@pytest.mark.parametrize("case", ["CHAIN", "DIAMOND", "RESIDUAL", "WHILE_LOOP", "TUPLE_OUTPUT"])
def test_exported_graph_peak_is_the_trackers(run_engine, tmp_path, case):
    """Keeping every value in the exported graph gives the planner's figure
    for the same schedule (the report's peak_scheduled_bytes)."""
    path = tmp_path / "g.json"
    result = run_engine(getattr(hlo_cases, case), f"--export-graph={path}")
    assert result.returncode == 0, result.stderr
    graph = load_graph(path)
    assert graph.peak_bytes == result.report["peak_scheduled_bytes"]
    assert max(graph.profile()) == graph.peak_bytes
    assert graph.module_flops == pytest.approx(result.report["flops_before"])
    # Reads point backwards; parameters are never recomputable.
    for index, node in enumerate(graph.nodes):
        assert all(r < index for r in node.reads)
        assert not (node.opcode == "parameter" and node.recomputable)


def test_the_model_recomputes_only_what_the_planner_can_move(run_engine, tmp_path):
    """WHILE_LOOP: `b` goes into the loop's init tuple, which holds it whole,
    so no reader of it can take a clone; `a` is read by plain adds. The
    graph says so (`movable`), and the MILP, which models the planner's
    moves, never recomputes `b`; the lower bound still may (any plan)."""
    path = tmp_path / "g.json"
    result = run_engine(hlo_cases.WHILE_LOOP, f"--export-graph={path}")
    assert result.returncode == 0, result.stderr
    graph = load_graph(path)
    nodes = {node.name: node for node in graph.nodes}
    assert nodes["a"].recomputable and nodes["a"].movable
    assert nodes["b"].recomputable and not nodes["b"].movable
    model = _Model(graph, depth=2)
    assert model.recompute[graph.nodes.index(nodes["b"])] == {}
    assert model.recompute[graph.nodes.index(nodes["a"])] != {}


def test_optimum_of_an_exported_chain(run_engine, tmp_path):
    """CHAIN keeps a, b and c for late adds. At the peak the engine's plan
    reaches in the planner's figure, the model needs no more FLOPs than the
    engine spent, and at the engine's FLOPs no higher a peak."""
    report, graph = exported_chain_plan(run_engine, tmp_path)
    reached = report["peak_after_bytes"]
    assert reached < graph.peak_bytes  # the engine did something
    engine_extra = report["flops_after"] - report["flops_before"]
    optimum = solve_min_flops(graph, reached, time_limit_s=60)
    assert optimum.optimal and optimum.peak_bytes <= reached
    assert 0 < optimum.extra_flops <= engine_extra + 1e-6
    assert solve_min_peak(graph, engine_extra, time_limit_s=60).peak_bytes <= reached


def test_optimum_command_on_a_module_file(engine, tmp_path):
    """remat-harness optimum: every algorithm's record has the optimum at
    the budget and at the peak it reached, and its gap."""
    from remat_harness.cli import main

    src = tmp_path / "chain.hlo"
    src.write_text(hlo_cases.CHAIN)
    out = tmp_path / "out"
    rc = main(
        [
            "optimum",
            "--module",
            str(src),
            "--budget",
            "0.9",
            "--algorithms",
            "path,standard",
            "--time-limit",
            "60",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    records = [json.loads(line) for line in (out / "optimum.jsonl").read_text().splitlines()]
    assert [r["algorithm"] for r in records] == ["path", "standard"]
    for r in records:
        assert r["optimum_flops"]["optimal"] and r["optimum_at_reached"]["optimal"]
        assert r["planner_budget_bytes"] < r["planner_peak_before_bytes"]
        # At the peak the algorithm reached, the optimum spends no more.
        assert r["gap_to_optimum"] >= -1e-9
        # No plan that met the budget spent less than any plan must.
        bound = r["least_any_plan"]
        assert bound["proven"]
        if r["budget_met"]:
            assert bound["extra_flops_fraction"] <= r["extra_flops_fraction"] + 1e-9
    assert (out / "graph.json").exists()


def test_optimum_command_refuses_a_bad_depth(capsys):
    from remat_harness.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["optimum", "--module", "x.hlo", "--depth", "0"])
    assert exit_info.value.code == 2
    assert "--depth 0" in capsys.readouterr().err
