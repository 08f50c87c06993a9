"""Library calls and multi-output producers as recompute candidates, on
GPU-shaped HLO (tests/gpu_hlo_cases.py), and the cost model that counts their
FLOPs."""

from __future__ import annotations

import re

import pytest

from tests import gpu_hlo_cases as cases

CONV_TARGET = 'custom_call_target="__cudnn$convForward"'

# (module, the producer whose value must be recomputed, FLOPs of that
# producer). Convolution FLOPs count valid (unpadded) window positions, as
# HloCostAnalysis does for a convolution on CPU: 2 x batch x output features x
# input features x 94 x 94 valid taps over the 32x32 image with a padded 3x3
# window.
CONV_VALID_FLOPS = 2 * 8 * 64 * 64 * (32 * 3 - 2) ** 2
RECOMPUTED = {
    "CONV_FORWARD": ("conv", CONV_VALID_FLOPS),
    "CONV_BACKWARD": ("dx.t", CONV_VALID_FLOPS),
    "CUBLAS_GEMM": ("gemm", cases.GEMM_FLOPS),
    "TRITON_GEMM": ("saved", cases.GEMM_FLOPS),
    "MULTI_OUTPUT_FUSION": ("pair", 0),
}


def recomputed(report: dict) -> list[str]:
    return [d["value"] for d in report["decisions"] if d["action"] == "recompute"]


def peak(run_engine, hlo: str) -> int:
    r = run_engine(hlo, "--xla_rematerialization_mem_limit=1G")
    assert r.returncode == 0, r.stderr
    return int(r.report["heap_sim_before_bytes"])


@pytest.mark.parametrize("algorithm", ["standard", "path"])
@pytest.mark.parametrize("scheduler", ["default", "given"])
@pytest.mark.parametrize("name", list(RECOMPUTED))
def test_only_recomputing_the_producer_meets_the_budget(run_engine, name, algorithm, scheduler):
    hlo = getattr(cases, name)
    producer, producer_flops = RECOMPUTED[name]
    budget = peak(run_engine, hlo) - cases.VALUE_BYTES // 2
    r = run_engine(
        hlo,
        f"--xla_rematerialization_mem_limit={budget}",
        f"--xla_rematerialization_algorithm={algorithm}",
        f"--xla_rematerialization_scheduler={scheduler}",
    )
    assert r.returncode == 0, r.stderr  # the CLI verifies the module
    rep = r.report
    assert rep["budget_met"] and rep["heap_sim_after_bytes"] <= budget, rep
    assert producer in recomputed(rep), rep["decisions"]
    # The clone is read through a get-tuple-element of its own, or is the
    # array itself (Triton GEMM fusion).
    clone = next(i for d in rep["decisions"] if d["value"] == producer for i in d["instructions"])
    assert f"{clone} = " in r.output_hlo
    if producer != "saved":
        assert re.search(rf"get-tuple-element\(%?{re.escape(clone)}\), index=", r.output_hlo)
    if producer_flops:
        # One more convolution or GEMM, counted by the cost model.
        added = rep["flops_after"] - rep["flops_before"]
        assert added == pytest.approx(producer_flops, rel=0.01), rep


@pytest.mark.parametrize(
    ("name", "library_flops"),
    [
        ("CONV_FORWARD", CONV_VALID_FLOPS),
        # Backward input and backward filter: the forward convolution's FLOPs
        # each.
        ("CONV_BACKWARD", 2 * CONV_VALID_FLOPS),
        ("CUBLAS_GEMM", cases.GEMM_FLOPS),
        ("TRITON_GEMM", cases.GEMM_FLOPS),
    ],
)
def test_library_call_flops_are_counted(run_engine, name, library_flops):
    r = run_engine(getattr(cases, name), "--xla_rematerialization_mem_limit=1G")
    flops = r.report["flops_before"]
    # The rest of the step is a few elementwise passes over 2 MiB values.
    assert library_flops <= flops <= library_flops + 8e6, flops


@pytest.mark.parametrize("name", ["CONV_SIDE_EFFECT", "UNKNOWN_TARGET"])
@pytest.mark.parametrize("algorithm", ["standard", "path"])
def test_side_effecting_or_unknown_custom_call_is_never_recomputed(run_engine, name, algorithm):
    hlo = getattr(cases, name)
    budget = peak(run_engine, hlo) - cases.VALUE_BYTES // 2
    r = run_engine(
        hlo,
        f"--xla_rematerialization_mem_limit={budget}",
        f"--xla_rematerialization_algorithm={algorithm}",
    )
    assert r.returncode == 0, r.stderr
    assert r.report["recomputed"] == 0, r.report["decisions"]
    assert r.output_hlo.count(" custom-call(") == 1
    assert not r.report["budget_met"]  # recomputing was the only way


@pytest.mark.parametrize("algorithm", ["standard", "path"])
def test_scratch_of_a_clone_counts_where_it_runs(run_engine, algorithm):
    """The late use also reads `m4`, so a clone there runs with more live than
    the original did: with a 64 MiB scratch it would raise the peak, with
    64 KiB it lowers it."""
    flags = (
        "--xla_rematerialization_mem_limit=1",
        f"--xla_rematerialization_algorithm={algorithm}",
    )
    big = run_engine(cases.conv_with_scratch(64 << 20), *flags)
    assert big.returncode == 0, big.stderr
    assert big.output_hlo.count(CONV_TARGET) == 1
    assert big.report["heap_sim_after_bytes"] <= big.report["heap_sim_before_bytes"]
    small = run_engine(cases.conv_with_scratch(cases.SCRATCH_BYTES), *flags)
    assert small.output_hlo.count(CONV_TARGET) == 2
    assert small.report["heap_sim_after_bytes"] < small.report["heap_sim_before_bytes"]


@pytest.mark.parametrize("name", ["CONV_FORWARD", "CONV_BACKWARD", "CUBLAS_GEMM"])
def test_numerics_are_skipped_with_the_reason_on_library_calls(run_engine, name):
    r = run_engine(getattr(cases, name), "--xla_rematerialization_mem_limit=1", numerics=True)
    assert r.returncode == 0, r.stderr
    assert r.report["numerics"] == "skipped"
    assert "numerics not run" in r.report["note"]
    assert "custom call" in r.report["note"]


def test_multi_output_fusion_recompute_keeps_numerics(run_engine):
    hlo = cases.MULTI_OUTPUT_FUSION
    budget = peak(run_engine, hlo) - cases.VALUE_BYTES // 2
    r = run_engine(hlo, f"--xla_rematerialization_mem_limit={budget}", numerics=True)
    assert r.returncode == 0, r.stderr
    assert "pair" in recomputed(r.report)
    assert r.report["numerics"] == "equal", r.report["note"]
