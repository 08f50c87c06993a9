"""The demo's two halves run end to end on one algorithm: the table renders
from typed reports and the summary JSON is written (make demo runs them all).
Each half is a sweep started afresh, its cells the engine runs the demo always
made."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from remat_harness.demo import demo_algorithms, demo_plan, run_demo, run_gpu_demo
from remat_harness.flag_table import algorithms, resolve_budgets
from remat_harness.hlo_dump import ModelSpec
from remat_harness.sweep import compared_schedulers, load_results

SPEC = ModelSpec.parse("20")


def _stale_results(path):
    """A results file an older engine build left: resuming it is refused."""
    path.write_text(json.dumps({"key": "old", "status": "ok", "build": "older"}) + "\n")


def test_the_cpu_demo_writes_its_summary(tmp_path):
    out = io.StringIO()
    results = tmp_path / f"{SPEC.key}.sweep.jsonl"
    _stale_results(results)
    rows = run_demo(
        SPEC,
        Console(file=out, width=200),
        algorithms=("path",),
        out_dir=tmp_path,
        check_numerics=False,
    )
    assert rows and all(row.report is not None for row in rows), [r.error for r in rows]
    assert [row.scheduler for row in rows] == list(compared_schedulers())
    summary = json.loads((tmp_path / f"{SPEC.key}.summary.json").read_text())
    assert [row["report"]["algorithm"] for row in summary] == ["path"] * len(rows)
    assert "path" in out.getvalue() and "met" in out.getvalue()
    # Every cell ran now: the stale file was dropped, not resumed or refused.
    records = load_results(results)
    builds = {r["build"] for r in records.values()}
    assert "old" not in records and len(builds) == 1 and "older" not in builds
    # Each cell's report, under the demo's name, is the one its row shows, at
    # half the baseline the demo printed.
    baseline = next(r["baseline_bytes"] for r in records.values() if "baseline_bytes" in r)
    assert f"baseline peak {baseline:,} bytes; budget {baseline // 2:,} bytes" in out.getvalue()
    for row in rows:
        copied = json.loads((tmp_path / f"{SPEC.key}.path.{row.scheduler}.json").read_text())
        assert copied["scheduler"] == row.scheduler
        assert copied["budget_bytes"] == row.report.budget_bytes == int(baseline * 0.5)


def test_the_demo_plans_are_the_cells_it_always_ran():
    # Every algorithm but `optimal`, whose solver would hold each cell for a minute.
    assert demo_algorithms()[0] == "xla"
    assert sorted(demo_algorithms()) == sorted(a for a in algorithms() if a != "optimal")
    cpu = demo_plan(SPEC, budget_fraction=0.5)
    assert [(c.algorithm, c.scheduler) for c in cpu.cells] == [
        (a, s) for a in demo_algorithms() for s in compared_schedulers()
    ]
    assert cpu.budgets == ["0.5"] and cpu.check_numerics and cpu.device == "cpu"
    assert not demo_plan(SPEC, check_numerics=False).check_numerics
    gpu = demo_plan(SPEC, ("path", "xla"), 0.33, gpu_target="h100_sxm")
    # "default" on GPU is the hook's "given": the order the engine used
    # when the demo named no scheduler.
    assert [(c.algorithm, c.scheduler) for c in gpu.cells] == [
        ("path", "default"),
        ("xla", "default"),
    ]
    assert gpu.device == "gpu:h100_sxm" and gpu.budgets == ["0.33"]
    assert not gpu.check_numerics and gpu.timeout_s == 900


@pytest.mark.parametrize("peak", [106_576_160, 119_722_564, 3, 2**40 + 7])
def test_a_fraction_as_the_sweep_spells_it_is_the_same_budget(peak):
    # The demo's --budget becomes str(fraction), which the engine resolves as
    # the pass does: that share of the peak, at least one byte. (One engine
    # run resolves them all.)
    fractions = [0.5, 0.33, 0.3, 0.1, 1.0, 0.123456789, 1e-05]
    resolved = resolve_budgets([str(f) for f in fractions], peak)
    assert resolved == [max(1, int(peak * f)) for f in fractions]


@pytest.mark.gpusim
def test_the_gpu_demo_renders_buffer_assignment(tmp_path):
    out = io.StringIO()
    rows = run_gpu_demo(
        SPEC,
        Console(file=out, width=200),
        "h100_sxm",
        algorithms=("path",),
        out_dir=tmp_path,
    )
    assert len(rows) == 1 and rows[0].report is not None, rows[0].error
    assert rows[0].report.memory_figure == "buffer_assignment"
    assert rows[0].scheduler == "given" == rows[0].report.scheduler_chosen
    assert "BufferAssigner allocations" in out.getvalue()
    copied = json.loads((tmp_path / "gpu_h100_sxm" / f"{SPEC.key}.path.json").read_text())
    assert copied["platform"] == "gpu" and copied["scheduler"] == "given"
    predicted = rows[0].report.allocated("before")
    assert copied["budget_bytes"] == int(predicted * 0.5)
    assert f"budget {int(predicted * 0.5):,} bytes" in out.getvalue()


def test_a_failed_cell_is_an_error_row_and_leaves_no_stale_report(tmp_path):
    from remat_harness.demo import _rows, render_table

    stale = tmp_path / f"{SPEC.key}.path.DFS.json"
    stale.write_text("{}")  # an earlier run's report under the demo's name
    failed = {
        "kind": "offline",
        "algorithm": "path",
        "scheduler": "DFS",
        "status": "failed",
        "error": "RuntimeError: hlo-remat: numerics differ",
    }
    (row,) = _rows([{"kind": "model", "status": "ok"}, failed], [stale])
    assert (row.report, row.error) == (None, "hlo-remat: numerics differ")
    assert not stale.exists()
    out = io.StringIO()
    Console(file=out, width=200).print(render_table([row], "t", None))
    assert "budget unknown" in out.getvalue() and "numerics differ" in out.getvalue()
