"""The sweep machinery and reports: resumable, failures recorded, plots written."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from remat_harness.hlo_dump import ModelSpec
from remat_harness.report import plot_before_after, plot_peak_vs_budget, write_markdown
from remat_harness.sweep import SweepError, SweepPlan, budget_bytes, load_results, run_sweep
from remat_harness.tf_runtime import tensorflow_is_patched

pytestmark = pytest.mark.slow

SPEC = ModelSpec(20, 1, 64, "jit")


def plan(**kw) -> SweepPlan:
    args = dict(
        models=[SPEC],
        algorithms=["standard", "xla"],
        schedulers=["default"],
        budgets=["0.5", "0.3"],
        check_numerics=False,
    )
    args.update(kw)
    return SweepPlan(**args)


def test_sweep_runs_resumes_and_reports(tmp_path):
    results = tmp_path / "results.jsonl"
    console = Console(file=open(tmp_path / "log.txt", "w"))  # noqa: SIM115
    records = run_sweep(plan(), results, console)
    cells = [r for r in records if r.get("kind") == "offline"]
    assert len(cells) == 4 and all(r["status"] == "ok" for r in cells), cells
    model = next(r for r in records if r["key"].startswith("model|"))
    assert model["modules"] and model["largest_module_peak_bytes"] > 0
    lines_before = results.read_text().count("\n")
    # A second run over a grown plan runs only the new cells.
    run_sweep(plan(budgets=["0.5", "0.3", "0.8"]), results, console)
    new = [json.loads(line) for line in results.read_text().splitlines()[lines_before:]]
    assert [r["budget"] for r in new] == ["0.8", "0.8"], new
    table = tmp_path / "table.md"
    everything = list(load_results(results).values())
    write_markdown(everything, table, "test")
    assert "| resnet20_v1_b64_jit | standard | default" in table.read_text()
    pngs = plot_peak_vs_budget(everything, tmp_path) + plot_before_after(everything, tmp_path)
    assert pngs and all(p.read_bytes()[:4] == b"\x89PNG" for p in pngs)


def test_a_failing_cell_is_recorded_and_the_sweep_goes_on(tmp_path):
    results = tmp_path / "results.jsonl"
    console = Console(file=open(tmp_path / "log.txt", "w"))  # noqa: SIM115
    bad = plan(algorithms=["standard"], budgets=["0.5"], size_function="tiles")
    good = plan(algorithms=["standard"], budgets=["0.5"])
    run_sweep(bad, results, console)
    run_sweep(good, results, console)
    records = load_results(results)
    failed = [r for r in records.values() if r.get("status") == "failed"]
    assert len(failed) == 1 and "--size-function=tiles" in failed[0]["error"]
    assert any(r.get("status") == "ok" and r.get("kind") == "offline" for r in records.values())
    # Finished, even failed: not rerun unless asked.
    assert run_sweep(bad, results, console) and len(load_results(results)) == len(records)


def test_torn_last_line_is_ignored(tmp_path):
    results = tmp_path / "results.jsonl"
    results.write_text('{"key": "a", "status": "ok"}\n{"key": "b", "sta')
    assert list(load_results(results)) == ["a"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0.5", 500), ("1", 1000), ("2048", 2048), ("1K", 1024), ("1.5MiB", 1572864)],
)
def test_budget_spellings(text, expected):
    assert budget_bytes(text, 1000) == expected


@pytest.mark.parametrize("text", ["1.5", "0", "-1", "lots"])
def test_bad_budgets_are_refused(text):
    with pytest.raises(SweepError, match="budget"):
        budget_bytes(text, 1000)


def test_bad_algorithm_names_the_choices():
    with pytest.raises(SweepError, match="standard, compress"):
        plan(algorithms=["greedy"])


def test_patch_detection_asks_xla():
    import tensorflow as tf  # noqa: PLC0415 - only for the version in the message

    patched, why = tensorflow_is_patched()
    assert "--xla_use_hlo_rematerialization" in why
    if patched:
        assert "parsed" in why
    else:  # the PyPI wheel this project pins
        assert "unknown flag" in why, (tf.__version__, why)
