"""catalogue_verdicts: the catalogue table states its own result, each
promise the frontier makes checked on every record and each answer outside
issue 36's targets listed with its cause."""

from __future__ import annotations

from typing import Any

from remat_harness.catalogue_verdicts import (
    broken_promises,
    cause,
    target_misses,
    verdict_markdown,
)

BUDGETS = ("0.5", "0.33")
BEFORE = 1000


def answer(peak: int, budget: int, extra: float, **over: Any) -> dict[str, Any]:
    a = {
        "budget_bytes": budget,
        "peak_bytes": peak,
        "ratio": peak / BEFORE,
        "met": peak <= budget,
        "extra_flops": extra,
        "bound": 0.02,
        "bound_status": "Optimal",
        "memory_ok": True,
        "flops_ok": True,
    }
    return a | over


def record(loose: dict[str, Any], tight: dict[str, Any], **over: Any) -> dict[str, Any]:
    r = {
        "model": "m",
        "device": "gpu:h100_sxm",
        "floor_bytes": 300,
        "before_bytes": BEFORE,
        "numerics": "skipped",
        "0.5": loose,
        "0.33": tight,
    }
    return r | over


def texts(verdicts) -> list[str]:
    return [v.text for v in verdicts]


def test_a_frontier_that_keeps_its_promises_breaks_none():
    r = record(answer(480, 500, 0.12), answer(400, 330, 0.24, met=False))
    assert broken_promises([r], BUDGETS) == []


def test_a_tighter_budget_that_ends_higher_is_named():
    r = record(answer(480, 500, 0.12), answer(490, 330, 0.15))
    assert texts(broken_promises([r], BUDGETS)) == ["0.33x ends higher than 0.5x"]


def test_a_budget_missed_under_a_tighter_plan_is_named():
    """The tighter answer (0.45) is under 0.5x, so 0.5x had a plan that met it."""
    r = record(answer(520, 500, 0.05), answer(450, 330, 0.20))
    assert "0.5x missed, though 0.33x's plan is under it" in texts(broken_promises([r], BUDGETS))


def test_a_met_budget_dearer_than_a_tighter_plan_that_meets_it_is_named():
    r = record(answer(490, 500, 0.20), answer(450, 330, 0.10))
    assert texts(broken_promises([r], BUDGETS)) == [
        "0.5x spends more than 0.33x's plan, which also meets it"
    ]


def test_an_answer_under_the_floor_and_cpu_numerics_are_named():
    r = record(answer(480, 500, 0.1), answer(250, 330, 0.2), device="cpu", numerics="differ")
    assert texts(broken_promises([r], BUDGETS)) == [
        "0.33x answered under the floor",
        "numerics differ",
    ]


def test_answers_within_the_targets_have_no_cause():
    r = record(answer(480, 500, 0.09), answer(430, 330, 0.30, flops_ok=None))
    assert cause(r, "0.5") is None and cause(r, "0.33") is None
    assert target_misses([r], BUDGETS) == []


def test_each_exception_names_its_kind():
    met_dear = answer(480, 500, 0.13, flops_ok=False, bound_status="Time limit reached")
    met_dear["milp"] = {"status": "Optimal", "optimal": False, "extra_flops": 0.11, "seconds": 5}
    far = answer(700, 330, 0.25, memory_ok=False, flops_ok=None, bound=None)
    far["out_of_reach"] = {"below_ratio": 0.55, "open_ratio": 0.62, "cap": 0.25}
    r = record(met_dear, far)
    assert cause(r, "0.5") == (
        "0.5x: 0.480 at +13.0%, met, over the FLOPs target; the bound 2.0% (a stopped"
        " solve); MILP at this peak +11.0% (not proven optimal)"
    )
    assert cause(r, "0.33") == (
        "0.33x: 0.700 at +25.0%, missed, above 1.5x the floor (0.300); the bound rules"
        " out every plan within +25.0% below 0.550 and nothing above 0.620"
    )
    below = answer(320, 250, 0.15, flops_ok=False, bound=0.0)
    r = record(answer(320, 500, 0.15), below)
    assert cause(r, "0.33") == (
        "0.33x: 0.320 at +15.0%, missed (the budget is below the floor), the lowest"
        " plan over the FLOPs target; the bound prices the budget at 0.0%"
    )


def test_the_markdown_counts_and_lists_by_device():
    dear = answer(480, 500, 0.13, flops_ok=False)
    gpu = record(dear, answer(400, 330, 0.2, memory_ok=True, flops_ok=None, bound=None))
    cpu = record(
        answer(480, 500, 0.05),
        answer(400, 330, 0.2, flops_ok=None),
        device="cpu",
        numerics="equal",
        model="n",
    )
    failed = {"model": "x", "device": "cpu", "error": "does not build: no"}
    text = verdict_markdown([gpu, cpu, failed], BUDGETS)
    assert "(2 of 3 cells built)" in text and "in every cell a tighter budget" in text
    assert "2 of 4 answers meet their budget" in text
    assert "**Exceptions to issue 36's targets**: 1 (1 h100_sxm)." in text
    assert "- m on h100_sxm: 0.5x: 0.480 at +13.0%, met, over the FLOPs target" in text
