"""The sweep machinery and reports: resumable, failures recorded, plots written."""

from __future__ import annotations

import io
import json
import re

import pytest
from rich.console import Console

from remat_harness import sweep as sweep_module
from remat_harness.engine import engine_build
from remat_harness.flag_table import resolve_budgets
from remat_harness.hlo_dump import ModelSpec
from remat_harness.report import (
    plot_before_after,
    plot_peak_vs_budget,
    plot_peak_vs_step_time,
    write_markdown,
)
from remat_harness.sweep import (
    BuildMismatch,
    SweepError,
    SweepPlan,
    budget_bytes,
    load_report,
    load_results,
    run_sweep,
)
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
    # Each cell names its report: the figures the record leaves out.
    for cell in cells:
        report = load_report(cell)
        assert report is not None, cell
        assert (report.algorithm, report.budget_bytes) == (cell["algorithm"], cell["budget_bytes"])
        assert report.pass_seconds == cell["pass_seconds"] and report.instructions_before > 0
    assert load_report(model) is None  # a CPU model record has none
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


def test_budget_spellings():
    spellings = {
        "0.5": 500,
        "0.5x": 500,
        "50%": 500,
        "1": 1,  # bytes, as the engine reads it: as low as the plan gets
        "0": 0,
        "2048": 2048,
        "50B": 50,
        "2097152": 2097152,
        "1K": 1024,
        "1.5MiB": 1572864,
    }
    assert budget_bytes("0.5x", 1000) == 500
    assert resolve_budgets(list(spellings), 1000) == list(spellings.values())


@pytest.mark.parametrize("text", ["50", "2", "100"])
def test_a_bare_number_that_reads_like_a_percentage_is_refused_with_the_fix(text):
    with pytest.raises(SweepError, match=rf"not a budget.*{text}%.*{text}B"):
        budget_bytes(text, 1000)


@pytest.mark.parametrize("text", ["1.5", "-1", "lots", "150%", "1.5x", "0x", "0.5,0.3"])
def test_bad_budgets_are_refused(text):
    with pytest.raises(SweepError, match=r"mem_limit|one value"):
        budget_bytes(text, 1000)


def test_scheduler_and_algorithm_names_in_any_case_as_hlo_remat_takes_them():
    sweep_plan = plan(algorithms=["PATH"], schedulers=["dfs", "Default"])
    assert sweep_plan.algorithms == ["path"] and sweep_plan.schedulers == ["DFS", "default"]


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


def _fake_cell(cell, cache, plan) -> dict:
    return {**cell.fields(), "status": "ok"}


def _fake_model(spec, cache) -> dict:
    return {"key": f"model|{spec.key}", "kind": "model", "status": "ok", "modules": []}


def test_a_resumed_sweep_refuses_another_build(tmp_path, monkeypatch):
    monkeypatch.setattr(sweep_module, "model_record", _fake_model)
    results = tmp_path / "results.jsonl"
    console = Console(file=io.StringIO())
    small = plan(algorithms=["standard"], budgets=["0.5"])
    first = run_sweep(small, results, console, cell_runner=_fake_cell, build="aaa")
    assert [r["build"] for r in first] == ["aaa", "aaa"]
    # The same build resumes: nothing to run, nothing appended.
    lines = results.read_text()
    run_sweep(small, results, console, cell_runner=_fake_cell, build="aaa")
    assert results.read_text() == lines
    # Another build is refused, naming both builds and the way out.
    with pytest.raises(BuildMismatch, match=r"build aaa; this hlo-remat is build bbb.*--new-build"):
        run_sweep(small, results, console, cell_runner=_fake_cell, build="bbb")
    assert results.read_text() == lines
    # --new-build sets the old results aside and runs every cell again.
    again = run_sweep(small, results, console, cell_runner=_fake_cell, build="bbb", new_build=True)
    assert [r["build"] for r in again] == ["bbb", "bbb"]
    assert {r["build"] for r in load_results(results).values()} == {"bbb"}
    assert (tmp_path / "results.aaa.jsonl").read_text() == lines


def test_a_log_file_gets_one_line_per_step_counted_as_announced(tmp_path, monkeypatch):
    """Without a terminal the bar would leave only its last frame; the count
    announced is the count shown (cells plus the model dumps before them)."""
    monkeypatch.setattr(sweep_module, "model_record", _fake_model)
    log = io.StringIO()
    run_sweep(plan(), tmp_path / "results.jsonl", Console(file=log), _fake_cell, build="aaa")
    text = log.getvalue()
    assert "running 4 after 1 model dump(s): 5 steps" in text, text
    steps = re.findall(r"^\[(\d)/5\] (\S+) ok$", text, re.M)
    assert [int(n) for n, _ in steps] == [1, 2, 3, 4, 5], text
    assert steps[0][1].startswith("model|")


def test_records_without_a_build_are_another_build(tmp_path, monkeypatch):
    monkeypatch.setattr(sweep_module, "model_record", _fake_model)
    results = tmp_path / "results.jsonl"
    results.write_text(json.dumps({"key": "old", "status": "ok"}) + "\n")
    with pytest.raises(BuildMismatch, match="unknown"):
        run_sweep(plan(), results, Console(file=io.StringIO()), _fake_cell, build="aaa")


def test_the_engine_names_its_build():
    assert re.fullmatch(r"[0-9a-f]{12}-tf\d+\.\d+\.\d+\S*", engine_build())


def test_step_time_is_measured_and_recorded(run_engine):
    hlo = """
HloModule chain, is_scheduled=true
ENTRY e {
  p0 = f32[4096] parameter(0)
  a = f32[4096] exponential(p0)
  b = f32[4096] negate(a)
  ROOT c = f32[4096] add(a, b)
}
"""
    r = run_engine(hlo, "--time", "3", "--xla_rematerialization_mem_limit=1")
    assert r.returncode == 0, r.stderr
    report = r.report
    assert report["step_time_before_s"] > 0 and report["step_time_after_s"] > 0
    ratio = report["step_time_after_s"] / report["step_time_before_s"]
    assert report["step_time_ratio"] == pytest.approx(ratio)
    assert 0 < report["floor_bytes"] <= report["heap_sim_after_bytes"]
    untimed = run_engine(hlo)
    assert untimed.report["step_time_ratio"] is None
    bad = run_engine(hlo, "--time", "0")
    assert bad.returncode == 2 and "--time 0" in bad.stderr


def test_tables_show_the_floor_and_step_time(tmp_path):
    base = {
        "kind": "offline",
        "status": "ok",
        "model": "m",
        "scheduler": "default",
        "scheduler_chosen": "list",
        "heap_sim_before_bytes": 100e6,
        "budget_met": True,
        "extra_flops_pct": 3.0,
        "pass_seconds": 0.5,
        "numerics": "equal",
        "floor_bytes": 25e6,
    }
    records = [
        {
            **base,
            "algorithm": algorithm,
            "budget": budget,
            "heap_sim_after_bytes": after,
            "ratio": after / 100e6,
            "floor_ratio": after / 25e6,
            "step_time_ratio": step,
        }
        for algorithm, budget, after, step in (
            ("standard", "0.5", 50e6, 1.1),
            ("path", "0.5", 45e6, 1.3),
            ("xla", "0.33", 40e6, None),
        )
    ]
    table = tmp_path / "table.md"
    write_markdown(records, table, "t")
    text = table.read_text()
    assert "| peak/baseline | floor | peak/floor |" in text
    assert "| 0.500 | 23.8 MiB | 2.00 | yes | +3.00% | 1.10x |" in text
    (png,) = plot_peak_vs_step_time(records, tmp_path)
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert plot_peak_vs_step_time(records[2:], tmp_path) == []


def test_a_gpu_sweep_predicts_memory_beside_cpu(tmp_path):
    # The same step compiled deviceless for an H100: budgets are fractions of
    # its predicted peak, and the model record carries that prediction beside
    # the CPU modules' peaks.
    results = tmp_path / "results.jsonl"
    console = Console(file=open(tmp_path / "log.txt", "w"))  # noqa: SIM115
    gpu_plan = plan(algorithms=["path"], budgets=["0.5"], device="gpu:h100_sxm")
    records = run_sweep(gpu_plan, results, console)
    model = next(r for r in records if r["kind"] == "model")
    assert model["key"] == "model|resnet20_v1_b64_jit|gpu:h100_sxm"
    assert model["predicted_gpu_peak_bytes"] > 0 and model["largest_module_peak_bytes"] > 0
    cell = next(r for r in records if r.get("kind") == "offline")
    assert cell["status"] == "ok", cell
    assert cell["device"] == "gpu:h100_sxm" and cell["key"].endswith("|gpu:h100_sxm")
    assert cell["baseline_bytes"] == model["predicted_gpu_peak_bytes"]
    assert cell["budget_met"] and cell["ratio"] <= 0.5
    # The model record names the GPU pipeline's report of the step without
    # the pass (the table's heading: HeapSimulator figure, floor, fusions).
    base = load_report(model)
    assert base is not None and base.allocated("before") == model["predicted_gpu_peak_bytes"]
    assert base.floor_bytes == model["gpu_floor_bytes"] and base.recomputed == 0
    assert load_report(cell).platform == "gpu"


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"device": "tpu"}, "cpu or gpu:<target>"),
        ({"device": "gpu:h100_sxm", "time_runs": 3}, "need cpu"),
        ({"device": "gpu:h100_sxm", "patched": True}, "need cpu"),
        ({"gpu_autotune_results": __file__}, "needs --device gpu:<target>"),
        ({"device": "gpu:h100_sxm", "gpu_autotune_results": "/no/such.txtpb"}, "no such file"),
    ],
)
def test_bad_device_plans_are_refused(kw, message):
    with pytest.raises(SweepError, match=re.escape(message)):
        plan(**kw)


def test_zoo_models_join_a_sweep():
    specs = sweep_module.parse_models(["20", "lstm"], ["jit"], 1, 64)
    assert [s.key for s in specs] == ["resnet20_v1_b64_jit", "lstm_b64_jit"]
    with pytest.raises(SweepError, match="lstm"):
        sweep_module.parse_models(["vgg"], ["jit"], 1, 64)


def test_resnet50_is_keras_and_a_depth_of_50_the_cifar_resnet():
    # Users say "resnet50" for the ImageNet network; the CIFAR family is
    # reached by its depth.
    specs = sweep_module.parse_models(["resnet50", "50", "resnet50v1"], ["jit"], 1, 64)
    assert [s.key for s in specs] == [
        "resnet50_b64_jit",
        "resnet50_v1_b64_jit",
        "resnet50_v1_b64_jit",
    ]


def test_reports_show_gpu_predictions_beside_cpu(tmp_path):
    cpu = {
        "kind": "offline",
        "status": "ok",
        "model": "m",
        "device": "cpu",
        "algorithm": "path",
        "scheduler": "default",
        "scheduler_chosen": "list",
        "budget": "0.5",
        "budget_bytes": 50,
        "heap_sim_before_bytes": 100,
        "heap_sim_after_bytes": 50,
        "floor_bytes": 10,
        "ratio": 0.5,
        "budget_met": True,
        "extra_flops_pct": 1.0,
        "pass_seconds": 0.1,
        "numerics": "equal",
    }
    gpu = {**cpu, "device": "gpu:h100_sxm", "heap_sim_before_bytes": 120, "numerics": "skipped"}
    table = tmp_path / "table.md"
    write_markdown([cpu, gpu], table, "t")
    text = table.read_text()
    assert "| m | path | default (list) | 0.5 |" in text
    assert "| m @ gpu:h100_sxm | path | default (list) | 0.5 |" in text
    pngs = plot_peak_vs_budget([cpu, gpu], tmp_path) + plot_before_after([cpu, gpu], tmp_path)
    assert sorted(p.name for p in pngs) == [
        "before_after.m.gpu_h100_sxm.png",
        "before_after.m.png",
        "peak_vs_budget.m.default.png",
        "peak_vs_budget.m.gpu_h100_sxm.default.png",
    ]


def test_a_sweep_on_a_local_dask_cluster_equals_a_serial_one(tmp_path):
    """Two real worker processes: the same records as one after another,
    appended by the client to the same resumable file."""
    from remat_harness.cluster import ClusterSpec

    console = Console(file=io.StringIO())
    small = plan(algorithms=["standard", "path"], budgets=["0.5", "0.3"])
    serial = tmp_path / "serial.jsonl"
    run_sweep(small, serial, console)
    spread = tmp_path / "spread.jsonl"
    # The model record (a TensorFlow run) is the client's, not a cell: shared.
    model_line = next(x for x in serial.read_text().splitlines() if '"model|' in x)
    spread.write_text(model_line + "\n")
    run_sweep(small, spread, console, cluster=ClusterSpec(workers=2))
    fields = ("status", "allocation_after_bytes", "budget_met", "extra_flops_pct", "recomputed")
    a, b = load_results(serial), load_results(spread)
    cells = [k for k, r in a.items() if r.get("kind") == "offline"]
    assert len(cells) == 4
    for key in cells:
        assert {f: a[key][f] for f in fields} == {f: b[key][f] for f in fields}, key
    # Resumable: nothing is left to run.
    lines = spread.read_text().count("\n")
    run_sweep(small, spread, console, cluster=ClusterSpec(workers=2))
    assert spread.read_text().count("\n") == lines


def test_a_cluster_session_starts_its_cluster_once_for_every_round(monkeypatch):
    """`fit` asks a round of batches at a time: one local cluster serves them
    all, and a round's task is never answered by an earlier round's result
    under the same key."""
    import functools

    from remat_harness import cluster as cluster_module

    started = []
    real_client = cluster_module._client

    def counting_client(spec):  # noqa: ANN001, ANN202
        started.append(spec)
        return real_client(spec)

    monkeypatch.setattr(cluster_module, "_client", counting_client)
    build = engine_build()
    with cluster_module.ClusterSession(cluster_module.ClusterSpec(workers=1)) as session:
        rounds = [dict(session.run([("a", functools.partial(dict, n=n))], build)) for n in (1, 2)]
    assert [r["a"][0] for r in rounds] == [{"n": 1}, {"n": 2}]
    assert len(started) == 1


def test_a_worker_of_another_build_fails_its_cells_not_the_sweep(tmp_path):
    from remat_harness.cluster import ClusterSpec, run_on_cluster

    outcomes = dict(
        run_on_cluster(ClusterSpec(workers=1), [("c", _constant_record)], build="another")
    )
    record, error, _ = outcomes["c"]
    assert record is None and "build" in error and "another" in error


def _constant_record() -> dict:
    return {"status": "ok"}


def test_a_sweep_with_the_optimum_shows_the_gap(tmp_path):
    results = tmp_path / "results.jsonl"
    console = Console(file=io.StringIO())
    small = plan(algorithms=["path"], budgets=["0.5"], optimum_time_limit_s=10)
    records = run_sweep(small, results, console)
    cell = next(r for r in records if r.get("kind") == "offline")
    assert cell["status"] == "ok", cell
    assert cell["optimum_status"] in ("Optimal", "Time limit reached")
    if cell["optimum_extra_flops_pct"] is not None:
        # The gap: the cell's extra FLOPs less the optimum's at its peak.
        assert cell["gap_to_optimum_pct"] == pytest.approx(
            cell["extra_flops_pct"] - cell["optimum_extra_flops_pct"]
        )
    table = tmp_path / "table.md"
    write_markdown(list(load_results(results).values()), table, "test")
    assert "gap to optimum" in table.read_text()


def test_a_sweep_with_a_frontier_cache_answers_later_budgets_from_the_kept_frontier(tmp_path):
    """`remat-harness sweep --frontier-cache DIR`: the module's first budget
    searches its frontier and keeps it; the next budgets are answered from
    it, each compile making only its plan, with the figures a sweep without
    it records."""
    console = Console(file=open(tmp_path / "log.txt", "w"))  # noqa: SIM115
    figures = ("allocation_after_bytes", "extra_flops_pct", "recomputed", "budget_met")
    runs = {}
    for name, cache in (("plain", ""), ("cached", str(tmp_path / "frontiers"))):
        records = run_sweep(
            plan(algorithms=["path"], frontier_cache=cache), tmp_path / f"{name}.jsonl", console
        )
        runs[name] = [r for r in records if r.get("kind") == "offline"]
        assert len(runs[name]) == 2 and all(r["status"] == "ok" for r in runs[name])
    for plain, cached in zip(runs["plain"], runs["cached"], strict=True):
        assert [plain[f] for f in figures] == [cached[f] for f in figures]
    uses = [load_report(r).frontier_cache for r in runs["cached"]]
    assert uses == ["searched", "used"]
    assert [load_report(r).frontier_cache for r in runs["plain"]] == ["off", "off"]
