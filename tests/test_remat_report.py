"""The typed report (remat_harness.remat_report.RematReport) names every key
the engine writes, refuses a report that lacks one, and computes the figures
the tables show the same way everywhere."""

from __future__ import annotations

from dataclasses import fields

import pytest

from remat_harness.remat_report import RematReport
from tests import hlo_cases

_NAMES = {f.name for f in fields(RematReport)}


def test_every_key_the_cpu_engine_writes_is_a_field(run_engine):
    r = run_engine(hlo_cases.CHAIN, "--xla_rematerialization_mem_limit=0.5x")
    assert r.returncode == 0, r.stderr
    assert sorted(set(r.report) - _NAMES) == []
    typed = RematReport.from_json(r.report)
    assert typed.platform == "cpu" and typed.gpu_final is None
    assert typed.allocated("before") == r.report["allocation_before_bytes"]
    assert typed.ratio == pytest.approx(
        r.report["allocation_after_bytes"] / r.report["allocation_before_bytes"]
    )


def test_a_report_without_a_key_is_refused_by_name(run_engine):
    r = run_engine(hlo_cases.CHAIN, "--xla_rematerialization_mem_limit=0.5x")
    raw = dict(r.report)
    del raw["floor_bytes"]
    raw["a_key_from_a_newer_engine"] = 1
    with pytest.raises(ValueError, match="lacks floor_bytes"):
        RematReport.from_json(raw)
    raw["floor_bytes"] = 0
    assert RematReport.from_json(raw).floor_bytes == 0


def test_the_platform_figure_falls_back_to_the_heap_simulator(run_engine):
    r = run_engine(hlo_cases.CHAIN, "--xla_rematerialization_mem_limit=0.5x")
    raw = dict(r.report, allocation_before_bytes=0, allocation_after_bytes=0)
    typed = RematReport.from_json(raw)
    assert typed.allocated("before") == raw["heap_sim_before_bytes"]
    assert typed.allocated("after") == raw["heap_sim_after_bytes"]
    flops = (raw["flops_after"] - raw["flops_before"]) / raw["flops_before"]
    assert typed.extra_flops_fraction == pytest.approx(flops)


def test_every_field_is_a_key_an_engine_run_writes(run_engine, tmp_path):
    """Both ways: the keys of a CPU run, an `optimal` run and GPU runs with
    every optional figure are the dataclass's fields, no more, no fewer."""
    from remat_harness.engine import run_hlo_remat
    from tests.test_gpu_pipeline import AUTOTUNE_RESULTS, SMALL_MODEL

    cpu = run_engine(hlo_cases.CHAIN, "--xla_rematerialization_mem_limit=0.5x")
    optimal = run_engine(
        hlo_cases.CHAIN,
        "--xla_rematerialization_mem_limit=0.5x",
        "--xla_rematerialization_algorithm=optimal",
    )
    (tmp_path / "small.hlo").write_text(SMALL_MODEL)
    gpu_flags = ["--platform", "gpu", "--xla_rematerialization_mem_limit=0.5x"]
    # With the kernels of a user's GPU and the wheel's own compile beside it;
    # and with XLA's default kernels (their note).
    tuned = run_hlo_remat(
        tmp_path / "small.hlo",
        [
            *gpu_flags,
            f"--gpu-autotune-results={AUTOTUNE_RESULTS}",
            f"--wheel-reference-out={tmp_path / 'wheel.hlo'}",
        ],
        tmp_path / "tuned.json",
        timeout_s=600,
    )
    default = run_hlo_remat(tmp_path / "small.hlo", gpu_flags, tmp_path / "gpu.json")
    written: set[str] = set()
    for raw in (cpu.report, optimal.report, tuned.raw, default.raw):
        assert raw is not None
        assert sorted(set(raw) - _NAMES) == [], "a key the dataclass does not name"
        written |= set(raw)
    assert sorted(_NAMES - written) == [], "a field no engine run writes"
