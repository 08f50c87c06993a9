"""The CLI on small modules whose right answer is known by hand: outputs
that compute what the input computed. What the pass does to them (which
value moves, the byte figures) is tested in process, beside the code:
patch_src/remat_pass_test.cc, remat_planner_test.cc."""

from __future__ import annotations

import pytest

from tests import hlo_cases


def recomputed(report: dict) -> set[str]:
    return {d["value"].split(".remat")[0] for d in report["decisions"]}


@pytest.mark.parametrize(
    "name",
    ["CHAIN", "DIAMOND", "RESIDUAL", "WHILE_LOOP", "CONDITIONAL", "UNSCHEDULED"],
)
def test_lowest_budget_lowers_heap_simulator_peak(run_engine, name):
    r = run_engine(getattr(hlo_cases, name), "--xla_rematerialization_mem_limit=1", numerics=True)
    assert r.returncode == 0, r.stderr
    rep = r.report
    assert rep["heap_sim_after_bytes"] < rep["heap_sim_before_bytes"], rep
    assert rep["budget_met"] is False  # 1 byte is below anything reachable
    assert rep["numerics"] == "equal", rep["note"]
    assert rep["recomputed"] >= 1 and rep["pinned"] >= 1


def test_a_module_with_a_live_out_value_keeps_its_outputs(run_engine):
    r = run_engine(hlo_cases.TUPLE_OUTPUT, "--xla_rematerialization_mem_limit=1", numerics=True)
    assert r.returncode == 0, r.stderr
    assert r.report["numerics"] == "equal"


def test_xla_baseline_runs_on_the_same_module(run_engine):
    r = run_engine(
        hlo_cases.CHAIN,
        "--xla_rematerialization_algorithm=xla",
        "--xla_rematerialization_mem_limit=1",
        numerics=True,
    )
    assert r.returncode == 0, r.stderr
    assert r.report["algorithm"] == "xla"
    assert r.report["numerics"] == "equal"


def test_numerics_check_detects_a_difference(run_engine, tmp_path):
    reference = tmp_path / "reference.hlo"
    reference.write_text(
        hlo_cases.CHAIN.replace("d = f32[256,256]{1,0} tanh(c)", "d = f32[256,256]{1,0} negate(c)")
    )
    r = run_engine(
        hlo_cases.CHAIN,
        "--xla_rematerialization_mem_limit=1",
        "--numerics-reference",
        str(reference),
    )
    assert r.returncode == 1
    assert r.report["numerics"] == "differ"
