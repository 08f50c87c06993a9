"""The runners that are sweeps rendered their own way: scripts/gpu_table.py
and scripts/bench_scaling.py (the demo: test_demo.py). What they read of the
sweep's records, and small invocations end to end: fresh results every run,
the same engine runs as before."""

from __future__ import annotations

import json

import pytest

from remat_harness import sweep as sweep_module
from remat_harness.hlo_dump import ModelSpec
from remat_harness.sweep import Cell, ModelCache, failure, load_report, load_results
from tests.script_modules import load_script

SPEC = ModelSpec.parse("20")


gpu_table = load_script("gpu_table")
bench = load_script("bench_scaling")


def _stale_results(path):
    """What an older engine build left: run_sweep refuses to resume it."""
    path.write_text(json.dumps({"key": "old", "status": "ok", "build": "older"}) + "\n")


def test_a_failed_record_has_no_report_and_says_why(tmp_path):
    failed = {"key": "k", "status": "failed", "error": "RuntimeError: hlo-remat: bad input"}
    assert load_report(failed) is None and failure(failed) == "hlo-remat: bad input"
    timed_out = {**failed, "error": "TimeoutExpired: timed out after 600 seconds"}
    assert failure(timed_out) == timed_out["error"]
    gone = {"key": "k", "status": "ok", "report": str(tmp_path / "removed.json")}
    assert load_report(gone) is None


def test_a_model_that_fails_its_baseline_is_measured_once(tmp_path, monkeypatch):
    """Its other cells fail with the same error without running it again (a
    GPU compile that fails costs minutes)."""
    calls = []

    def failing_baseline(hlo, work_dir):
        calls.append(hlo)
        raise RuntimeError("hlo-remat failed")

    monkeypatch.setattr(sweep_module, "produce_hlo", lambda spec: tmp_path)
    monkeypatch.setattr(sweep_module, "baseline_peak", failing_baseline)
    cache = ModelCache(tmp_path / "work")
    for _ in range(3):
        with pytest.raises(RuntimeError, match="hlo-remat failed"):
            cache.baseline(SPEC)
    assert calls == [tmp_path / "step.hlo"]


def test_the_bench_keeps_the_fastest_run_and_its_report(tmp_path, monkeypatch):
    times = iter([0.3, 0.1, 0.2])
    report = tmp_path / "cell.json"

    def run_cell(cell, cache, plan):
        seconds = next(times)
        report.write_text(json.dumps({"pass_seconds": seconds}))  # as each run does
        return {"key": cell.key, "status": "ok", "pass_seconds": seconds, "report": str(report)}

    monkeypatch.setattr(bench, "run_cell", run_cell)
    record = bench.fastest_of(3)(Cell(SPEC, "standard", "default", "0.5"), None, None)
    assert record["pass_seconds"] == 0.1
    assert json.loads(report.read_text()) == {"pass_seconds": 0.1}
    assert next(times, None) is None  # three runs, not more


def test_the_bench_lists_a_failed_cell(capsys):
    failed = {
        "key": "k",
        "kind": "offline",
        "model": SPEC.key,
        "algorithm": "path",
        "budget": "0.33",
        "status": "failed",
        "error": "RuntimeError: hlo-remat: timed out",
    }
    model = {"key": f"model|{SPEC.key}", "kind": "model", "status": "ok"}
    rows, failures = bench.rows_and_failures([model, failed])
    assert rows == [] and failures == [f"{SPEC.key} path 0.33: hlo-remat: timed out"]
    assert failures[0] in capsys.readouterr().err


def test_the_gpu_table_says_which_model_failed_to_compile():
    error = "RuntimeError: GPU compile of m failed: no such op"
    model = {"key": "model|m|gpu:h100_sxm", "kind": "model", "model": "m", "status": "failed"}
    cell = {"kind": "offline", "model": "m", "algorithm": "path", "budget": "0.5"}
    records = [{**model, "error": error}, {**cell, "status": "failed", "error": error}]
    lines, progress = gpu_table.render(records, "h100_sxm", ["path"], [0.5])
    assert "## m: compile failed: GPU compile of m failed: no such op" in lines
    assert progress == [] and not any(line.startswith("| path") for line in lines)


def test_the_gpu_table_refuses_a_target_before_any_work(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        gpu_table.main(["--models", "20", "--target", "h0", "--out", str(tmp_path)])
    assert exit_info.value.code == 2 and "'h0' is not valid" in capsys.readouterr().err
    assert not (tmp_path / "results.jsonl").exists()


@pytest.mark.gpusim
def test_the_gpu_table_is_a_fresh_gpu_sweep(tmp_path, capsys):
    results = tmp_path / "results.jsonl"
    _stale_results(results)
    args = ["--models", "20", "--budgets", "0.5", "--algorithms", "xla,path"]
    assert gpu_table.main([*args, "--out", str(tmp_path)]) == 0
    records = load_results(results)
    assert len(records) == 3 and "old" not in records  # the model and two cells, afresh
    base = load_report(records[f"model|{SPEC.key}|gpu:h100_sxm"])
    assert base is not None
    text = (tmp_path / "table.md").read_text()
    assert f"Predicted allocation {base.allocated('before') / 2**20:.1f} MiB" in text
    assert f"{base.multi_output_fusions} multi-output fusions." in text
    printed = capsys.readouterr().out
    for algorithm in ("xla", "path"):
        cell = records[f"{SPEC.key}|{algorithm}|default|0.5|plain|gpu:h100_sxm"]
        report = load_report(cell)
        assert report is not None, cell
        # As the table always ran it: half the prediction, the hook's schedule.
        assert report.budget_bytes == int(base.allocated("before") * 0.5)
        assert report.platform == "gpu" and report.scheduler == "given"
        shown = gpu_table.cell_text(report, "")
        assert f"| {algorithm} | {shown} |" in text
        assert f"{SPEC.key} {algorithm} 50%: {shown}" in printed


@pytest.mark.slow
def test_the_bench_is_a_fresh_cpu_sweep(tmp_path, capsys):
    _stale_results(tmp_path / "sweep.jsonl")
    args = ["--sizes", "20", "--algorithms", "standard", "--budgets", "0.5", "--repeat", "2"]
    assert bench.main([*args, "--out", str(tmp_path)]) == 0
    records = load_results(tmp_path / "sweep.jsonl")
    assert len(records) == 2 and "old" not in records  # the model and one cell, afresh
    cell = records[f"{SPEC.key}|standard|default|0.5|plain"]
    report = load_report(cell)
    assert report is not None, cell
    (row,) = json.loads((tmp_path / "results.json").read_text())["rows"]
    assert row["budget_bytes"] == report.budget_bytes == int(row["baseline_bytes"] * 0.5)
    assert row["instructions"] == report.instructions_before > 0
    assert row["pass_seconds"] == report.pass_seconds and row["phase_seconds"]
    assert row["plans_tried"] == report.plans_tried >= 1
    assert report.scheduler == "default" and report.numerics == "skipped"
    table = (tmp_path / "table.md").read_text()
    assert f"| {SPEC.key} | {row['instructions']:,} | " in table
    assert f"Where the time went on {SPEC.key}" in table
    assert f"{SPEC.key} ({row['instructions']:,} instructions) standard @ 0.5" in (
        capsys.readouterr().out
    )
