"""MobileNetV2, DenseNet-121 and ResNet-50 (keras.applications,
weights=None, 32x32, batch 64) compiled for h100_sxm without a GPU: what
issue 16 asks of a depthwise, a dense-block and a bottleneck network, judged
by what BufferAssigner allocates.
XLA:GPU's scheduler leaves the weight-gradient convolutions and the in-place
optimizer updates at the end of the step; the pass moves them to where their
operands are last needed (last_reader_hoist.h), then plans."""

from __future__ import annotations

from pathlib import Path

import pytest

from remat_harness.engine import run_hlo_remat
from remat_harness.gpu import before_optimizations
from remat_harness.hlo_dump import ModelSpec

TARGET = "h100_sxm"
MAX_EXTRA_FLOPS = 0.15  # issue 16: no zoo cell may spend more


@pytest.fixture(scope="module")
def mobilenetv2() -> Path:
    return before_optimizations(ModelSpec(model="mobilenetv2"))


@pytest.fixture(scope="module")
def densenet121() -> Path:
    return before_optimizations(ModelSpec(model="densenet121"))


@pytest.fixture(scope="module")
def resnet50() -> Path:
    return before_optimizations(ModelSpec(model="resnet50"))


def run_path(hlo: Path, work: Path, budget: str, *extra: str) -> dict:
    run = run_hlo_remat(
        hlo,
        [
            "--platform",
            "gpu",
            "--gpu-target",
            TARGET,
            "--xla_rematerialization_algorithm=path",
            f"--xla_rematerialization_mem_limit={budget}",
            *extra,
        ],
        work / "report.json",
        timeout_s=600,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.raw is not None
    return run.raw


def extra_flops(report: dict) -> float:
    return report["flops_after"] / report["flops_before"] - 1


def test_mobilenetv2_meets_half_its_allocation(mobilenetv2, tmp_path):
    r = run_path(mobilenetv2, tmp_path, "0.5x")
    assert r["memory_figure"] == "buffer_assignment"
    # The weight gradients moved: without it path stalled at 0.605.
    assert r["hoisted"] > 0 and r["hoisted_bytes"] > 0, r
    assert r["budget_met"], r["allocation_after_bytes"] / r["allocation_before_bytes"]
    assert r["allocation_after_bytes"] <= r["budget_bytes"]
    assert extra_flops(r) <= MAX_EXTRA_FLOPS, extra_flops(r)


def test_mobilenetv2_at_a_third_comes_within_one_and_a_half_floors(mobilenetv2, tmp_path):
    r = run_path(mobilenetv2, tmp_path, "0.33x")
    after = r["allocation_after_bytes"]
    assert r["budget_met"] or after <= 1.5 * r["floor_bytes"], (after, r["floor_bytes"])
    assert extra_flops(r) <= MAX_EXTRA_FLOPS, extra_flops(r)


def test_densenet121_meets_half_its_allocation(densenet121, tmp_path):
    r = run_path(densenet121, tmp_path, "0.5x")
    # The optimizer updates moved, and the GPU's tracker counts each new
    # weight in its donated parameter: without them path stalled at 0.602.
    assert r["hoisted"] > 0, r
    assert r["budget_met"], r["allocation_after_bytes"] / r["allocation_before_bytes"]
    assert r["allocation_after_bytes"] <= r["budget_bytes"]
    assert extra_flops(r) <= MAX_EXTRA_FLOPS, extra_flops(r)


@pytest.mark.parametrize("budget", ["0.5x", "0.33x"])
def test_resnet50_comes_within_one_and_a_half_floors(resnet50, tmp_path, budget):
    # Parameters and momentum are 0.47 of the allocation: both budgets are
    # below the floor, so the bound is the floor's. The layout copies of the
    # 3x3x512x512 weights are made again right before their fused updates
    # (PlannerConfig::read_donated_until_written): without that, path spent
    # +20.8% FLOPs at 33% for 0.718. Below every plan the budget gets the
    # lowest, which only the compute cap bounds; the frontier still holds a
    # plan under 0.72 within the zoo's FLOPs.
    r = run_path(resnet50, tmp_path, budget)
    after = r["allocation_after_bytes"]
    before = r["allocation_before_bytes"]
    assert r["floor_bytes"] > r["budget_bytes"], r
    assert after <= 1.5 * r["floor_bytes"], (after, r["floor_bytes"])
    assert after < 0.72 * before, after / before
    assert extra_flops(r) <= r["max_extra_flops"] / r["flops_before"] + 1e-9
    cheap = [
        p
        for p in r["frontier"]["points"]
        if p["usable"]
        and p["peak_bytes"] < 0.72 * before
        and p["extra_flops"] <= MAX_EXTRA_FLOPS * r["flops_before"]
    ]
    assert cheap, r["frontier"]


def test_the_judges_stand_in_bodies_give_buffer_assignments_figures(mobilenetv2, tmp_path):
    """On GPU the figure reads the fused bodies through GpuAliasInfo (which
    fusion outputs may take an operand's buffer): judged with stand-in bodies
    (patch_src/judging_copy.h) or on whole copies, the frontier is the same."""
    stand_ins = run_path(mobilenetv2, tmp_path / "stand_ins", "0.5x")
    whole = run_path(mobilenetv2, tmp_path / "whole", "0.5x", "--judge-whole-copies")
    assert stand_ins["frontier"]["points"] and stand_ins["judgements"] > 0
    assert stand_ins["frontier"] == whole["frontier"]
    assert stand_ins["allocation_after_bytes"] == whole["allocation_after_bytes"]


def test_the_peak_bound_refuses_only_moves_that_raise_buffer_assignments_peak(
    densenet121, tmp_path
):
    """GPU HLO reads most fusions through bitcasts, and the liveness model
    counts a bitcast's buffers as its operand's: with every move the peak
    bound (patch_src/move_peak_bound.h) refuses built anyway, each raises the
    peak, and the frontier is the same."""
    refused = run_path(densenet121, tmp_path / "refused", "0.5x")
    built = run_path(densenet121, tmp_path / "built", "0.5x", "--check-peak-bound")
    assert refused["frontier"]["points"]
    assert refused["frontier"] == built["frontier"]
    assert refused["allocation_after_bytes"] == built["allocation_after_bytes"]
