#!/usr/bin/env python3
"""The GPU table: models compiled deviceless for a GPU target, each algorithm
at fractions of the predicted peak; peak after, budget met, extra FLOPs (GPU
cost model: library calls counted) and pass time. Writes
reports/gpu/<target>/results.jsonl and table.md; a failed cell is recorded and
the table goes on.

    .venv/bin/python scripts/gpu_table.py [--models 20,56,mobilenet,transformer]
        [--target h100_sxm] [--budgets 0.8,0.6,0.5,0.4,0.3] [--algorithms xla,standard,path]

The cells are a sweep (remat_harness.sweep) on device gpu:<target>:
results.jsonl is its results file, one record per model and per cell, each
passed one naming its JSON report under results.work/. It starts afresh on
every run: the table is always this engine build's.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console

from remat_harness.hlo_dump import ModelSpec
from remat_harness.paths import REPORTS_DIR
from remat_harness.remat_report import RematReport
from remat_harness.sweep import SweepPlan, failure, load_report, run_sweep


def cell_text(report: RematReport | None, error: str) -> str:
    if report is None:
        return f"failed: {error[:60]}"
    met = "met" if report.budget_met else "missed"
    return (
        f"{report.ratio:.3f} {met}, {report.extra_flops_fraction:+.1%}, {report.pass_seconds:.2f} s"
    )


def gpu_plan(
    models: list[ModelSpec],
    algorithms: list[str],
    budgets: list[float],
    target: str,
    autotune_results: str = "",
) -> SweepPlan:
    """Each model × algorithm × budget on the GPU hook's schedule, with the GPU
    compile's time limit (900 s a cell); with `autotune_results`, the kernels
    recorded on the user's GPU."""
    return SweepPlan(
        models,
        algorithms,
        ["default"],  # on GPU the engine keeps the latency-hiding scheduler's order
        [str(b) for b in budgets],
        check_numerics=False,
        timeout_s=900,
        device=f"gpu:{target}",
        gpu_autotune_results=autotune_results,
    )


def model_lines(record: dict, budgets: list[float]) -> list[str]:
    """A model's heading, its prediction without the pass, and the table head."""
    base = load_report(record)
    if base is None:
        # The model record also measures the CPU modules: it can fail where
        # the GPU compile did not.
        summary = f"No prediction: {failure(record)}"
    else:
        summary = (
            f"Predicted allocation {base.allocated('before') / 2**20:.1f} MiB (HeapSimulator "
            f"{base.heap_sim_before_bytes / 2**20:.1f} MiB), floor "
            f"{base.floor_bytes / 2**20:.1f} MiB, "
            f"{base.multi_output_fusions} multi-output fusions."
        )
    return [
        f"## {record['model']}",
        "",
        summary,
        "",
        "| algorithm | " + " | ".join(f"{b:.0%}" for b in budgets) + " |",
        "|---|" + "---|" * len(budgets),
    ]


def render(
    records: list[dict], target: str, algorithms: list[str], budgets: list[float]
) -> tuple[list[str], list[str]]:
    """The table's lines, and a line per cell ("model algorithm budget: text")."""
    lines = [
        f"# GPU table: {target} (deviceless compile; what BufferAssigner allocates)",
        "",
        "Each cell: allocation after / before, budget met, extra FLOPs, pass time.",
        "",
    ]
    progress = []
    cells = {(r["model"], r["algorithm"], float(r["budget"])): r for r in records if "budget" in r}
    for model in (r for r in records if r.get("kind") == "model"):
        mine = [c for (m, _, _), c in cells.items() if m == model["model"]]
        if model.get("status") != "ok" and not any(c.get("status") == "ok" for c in mine):
            lines += [f"## {model['model']}: compile failed: {failure(model)}", ""]
            continue
        lines += model_lines(model, budgets)
        for algorithm in algorithms:
            texts = []
            for fraction in budgets:
                cell = cells[(model["model"], algorithm, fraction)]
                texts.append(cell_text(load_report(cell), failure(cell)))
                progress.append(f"{model['model']} {algorithm} {fraction:.0%}: {texts[-1]}")
            lines.append(f"| {algorithm} | " + " | ".join(texts) + " |")
        lines.append("")
    return lines, progress


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--models", default="20,56,resnet50,mobilenetv2,densenet121,vgg16,transformer,lstm,gru"
    )
    parser.add_argument("--target", default="h100_sxm")
    parser.add_argument("--budgets", default="0.8,0.6,0.5,0.4,0.3")
    parser.add_argument("--algorithms", default="xla,standard,path")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--gpu-autotune-results",
        default="",
        help="XLA autotune results recorded on your GPU: its kernels, not XLA's defaults",
    )
    args = parser.parse_args(argv)
    out = args.out or REPORTS_DIR / "gpu" / args.target
    out.mkdir(parents=True, exist_ok=True)
    budgets = [float(b) for b in args.budgets.split(",")]
    try:
        models = [ModelSpec.parse(name) for name in args.models.split(",")]
        plan = gpu_plan(
            models, args.algorithms.split(","), budgets, args.target, args.gpu_autotune_results
        )
    except ValueError as e:  # a SweepError too
        parser.error(str(e))
    records = run_sweep(plan, out / "results.jsonl", Console(stderr=True), fresh=True)
    lines, progress = render(records, args.target, plan.algorithms, budgets)
    print("\n".join(progress), flush=True)
    (out / "table.md").write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
