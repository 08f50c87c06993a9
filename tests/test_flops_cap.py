"""The compute cap (--xla_rematerialization_max_extra_flops, issue 16): a plan
never spends more extra FLOPs than the cap, and the report says when the cap,
not the budget, stopped it."""

from __future__ import annotations

import pytest

from tests import hlo_cases


def extra(report: dict) -> float:
    return report["flops_after"] / report["flops_before"] - 1


def test_without_a_cap_the_chain_is_recomputed(run_engine):
    rep = run_engine(hlo_cases.CHAIN, "--xla_rematerialization_mem_limit=1").report
    assert rep["recomputed"] >= 1 and rep["max_extra_flops"] < 0
    assert rep["stopped_by_flops_cap"] is False


@pytest.mark.parametrize("fraction", ["0", "0.05"])
def test_a_cap_below_any_move_keeps_the_module(run_engine, fraction):
    free = run_engine(hlo_cases.CHAIN, "--xla_rematerialization_mem_limit=1").report
    assert extra(free) > float(fraction)  # the uncapped plan spends more
    rep = run_engine(
        hlo_cases.CHAIN,
        "--xla_rematerialization_mem_limit=1",
        f"--xla_rematerialization_max_extra_flops={fraction}",
    ).report
    assert rep["recomputed"] == 0
    assert extra(rep) <= float(fraction) + 1e-9
    assert rep["stopped_by_flops_cap"] is True
    assert rep["max_extra_flops"] == pytest.approx(float(fraction) * rep["flops_before"])
    assert "the compute cap" in rep["note"] and "not the budget" in rep["note"]


def test_the_cap_holds_on_the_residual_block(run_engine):
    free = run_engine(hlo_cases.RESIDUAL, "--xla_rematerialization_mem_limit=1").report
    cap = extra(free) / 2
    rep = run_engine(
        hlo_cases.RESIDUAL,
        "--xla_rematerialization_mem_limit=1",
        f"--xla_rematerialization_max_extra_flops={cap}",
    ).report
    assert extra(rep) <= cap + 1e-9, (extra(rep), cap)
    # Either the cap left a move out, or the plan needed no more than it.
    assert (
        rep["stopped_by_flops_cap"] or rep["heap_sim_after_bytes"] == free["heap_sim_after_bytes"]
    )


@pytest.mark.parametrize("value", ["-1", "lots", ""])
def test_a_bad_cap_names_the_flag(run_engine, value):
    r = run_engine(hlo_cases.CHAIN, f"--xla_rematerialization_max_extra_flops={value}")
    assert r.returncode == 2
    assert "xla_rematerialization_max_extra_flops" in r.stderr
