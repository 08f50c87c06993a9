"""`make demo`: ResNet-20 step, every algorithm × every scheduler at a budget
of half the baseline peak on CPU, then every algorithm on the same step
compiled deviceless for a GPU (the pass where the GPU hook runs it); prints
the tables and writes the JSON reports.

Each half is a sweep (sweep.py) with its own results file in the output
folder, started afresh on every run (the demo shows this build's engine, never
an older run's records); its cells' reports are copied beside it under the
demo's names."""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from remat_harness.flag_table import algorithms as engine_algorithms
from remat_harness.hlo_dump import ModelSpec, produce_hlo
from remat_harness.paths import REPORTS_DIR
from remat_harness.remat_report import RematReport
from remat_harness.sweep import (
    SweepPlan,
    budget_bytes,
    compared_schedulers,
    failure,
    load_report,
    run_sweep,
)


def demo_algorithms() -> tuple[str, ...]:
    """XLA's own pass first: the baseline the others are read against.
    `optimal` waits up to a minute for its solver on each cell: the demo
    shows the fast algorithms (`remat-harness sweep --algorithms optimal`)."""
    return ("xla", *(a for a in engine_algorithms() if a not in ("xla", "optimal")))


# The GPU hook's default: the latency-hiding scheduler's order, kept. The
# engine turns the sweep's "default" into it on GPU.
GPU_SCHEDULER = "given"


@dataclass
class DemoRow:
    algorithm: str
    scheduler: str
    report: RematReport | None
    error: str = ""


def demo_plan(
    spec: ModelSpec,
    algorithms: tuple[str, ...] | None = None,
    budget_fraction: float = 0.5,
    check_numerics: bool = True,
    gpu_target: str = "",
) -> SweepPlan:
    """The demo's cells: CPU, every algorithm × every scheduler; GPU
    (`gpu_target`), every algorithm on the GPU hook's schedule, with the GPU
    compile's time limit."""
    algorithms = algorithms or demo_algorithms()
    if gpu_target:
        return SweepPlan(
            [spec],
            list(algorithms),
            ["default"],
            [str(budget_fraction)],
            check_numerics=False,
            timeout_s=900,
            device=f"gpu:{gpu_target}",
        )
    return SweepPlan(
        [spec],
        list(algorithms),
        list(compared_schedulers()),
        [str(budget_fraction)],
        check_numerics=check_numerics,
    )


def _rows(records: list[dict], names: list[Path], scheduler: str = "") -> list[DemoRow]:
    """A row per cell record (its report copied to `names`, in order);
    `scheduler` labels every row instead of the record's."""
    cells = [r for r in records if r.get("kind") != "model"]
    rows = []
    for record, name in zip(cells, names, strict=True):
        report = load_report(record)
        if report is not None:
            shutil.copyfile(record["report"], name)
        else:
            name.unlink(missing_ok=True)  # not an earlier run's
        error = "" if report is not None else failure(record)
        rows.append(DemoRow(record["algorithm"], scheduler or record["scheduler"], report, error))
    return rows


def _first(records: list[dict], key: str) -> int | None:
    """`key` of the first record that has it (the cells share the baseline
    and the budget); None if no cell got as far as measuring it."""
    return next((r[key] for r in records if key in r), None)


def run_demo(
    spec: ModelSpec,
    console: Console,
    algorithms: tuple[str, ...] | None = None,
    budget_fraction: float = 0.5,
    out_dir: Path = REPORTS_DIR / "demo",
    check_numerics: bool = True,
) -> list[DemoRow]:
    console.print(f"[bold]Producing the HLO of {spec.key}[/] (TensorFlow on CPU, synthetic data)")
    produce_hlo(spec)
    out_dir.mkdir(parents=True, exist_ok=True)
    plan = demo_plan(spec, algorithms, budget_fraction, check_numerics)
    records = run_sweep(plan, out_dir / f"{spec.key}.sweep.jsonl", console, fresh=True)
    names = [out_dir / f"{spec.key}.{c.algorithm}.{c.scheduler}.json" for c in plan.cells]
    rows = _rows(records, names)
    peak, budget = _first(records, "baseline_bytes"), _first(records, "budget_bytes")
    if peak is not None and budget is not None:
        console.print(
            f"baseline peak {peak:,} bytes; budget {budget:,} bytes ({budget_fraction:.0%})"
        )
    console.print(render_table(rows, spec.key, budget))
    (out_dir / f"{spec.key}.summary.json").write_text(
        json.dumps([asdict(r) for r in rows], indent=2)
    )
    console.print(f"JSON reports in {out_dir}")
    return rows


def run_gpu_demo(
    spec: ModelSpec,
    console: Console,
    target: str,
    algorithms: tuple[str, ...] | None = None,
    budget_fraction: float = 0.5,
    out_dir: Path = REPORTS_DIR / "demo",
) -> list[DemoRow]:
    """The same step compiled for `target` without a GPU; the scheduler is the
    GPU hook's default, `given` (the latency-hiding scheduler's order)."""
    console.print(f"[bold]Compiling {spec.key} for {target}[/] (XLA's GPU pipeline, no GPU)")
    gpu_dir = out_dir / f"gpu_{target}"
    gpu_dir.mkdir(parents=True, exist_ok=True)
    plan = demo_plan(spec, algorithms, budget_fraction, gpu_target=target)
    records = run_sweep(plan, gpu_dir / f"{spec.key}.sweep.jsonl", console, fresh=True)
    names = [gpu_dir / f"{spec.key}.{c.algorithm}.json" for c in plan.cells]
    rows = _rows(records, names, GPU_SCHEDULER)
    model = next(r for r in records if r.get("kind") == "model")
    base = load_report(model)  # the GPU pipeline's own figures, without the pass
    budget = _first(records, "budget_bytes")
    if base is None:
        console.print(f"[red]no prediction for {spec.key}:[/] {failure(model)}", soft_wrap=True)
    else:
        peak = base.allocated("before")
        budget = budget_bytes(plan.budgets[0], peak)  # as the sweep set it
        console.print(
            f"predicted allocation {peak:,} bytes (BufferAssigner; HeapSimulator "
            f"{base.heap_sim_before_bytes:,}); budget {budget:,} bytes"
        )
    console.print(render_table(rows, f"{spec.key} on {target}", budget))
    return rows


def _mb(value: int) -> str:
    return f"{value / 2**20:.1f} MiB"  # as M means MiB in budgets


def _shortened(text: str, limit: int) -> str:
    """`text` cut at a word boundary to at most `limit` characters."""
    if len(text) <= limit:
        return text
    return text[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"


def _moves(r: RematReport) -> str:
    """What the algorithm did: recomputed, compressed, undone; or its note."""
    if r.algorithm == "xla":
        return f"+{r.instructions_added} instr"
    # The budget's own note (how a share became bytes) is in the title.
    notes = [n for n in r.note.split("; ") if n and not n.startswith("budget ")]
    if not (r.recomputed or r.compressed or r.undone) and notes:
        return _shortened("; ".join(notes), 40)
    return f"{r.recomputed} rc / {r.compressed} cp / {r.undone} undo"


def render_table(rows: list[DemoRow], title: str, budget: int | None) -> Table:
    """`budget` None: no cell measured the baseline (every one failed)."""
    figure = next((r.report.memory_figure for r in rows if r.report), "heap_simulator")
    label = {"buffer_assignment": "BufferAssigner allocations"}.get(figure, "HeapSimulator peaks")
    shown = "unknown" if budget is None else _mb(budget)
    table = Table(title=f"{title}: budget {shown} ({label})")
    for column in ("algorithm", "scheduler", "before", "after", "ratio", "budget"):
        table.add_column(column, justify="right" if column in ("before", "after") else "left")
    for column in ("moves", "+FLOPs", "pass", "numerics"):
        table.add_column(column)
    for row in rows:
        r = row.report
        if r is None:
            table.add_row(
                row.algorithm, row.scheduler, "-", "-", "-", "error", "-", "-", "-", row.error
            )
            continue
        before, after = r.allocated("before"), r.allocated("after")
        table.add_row(
            row.algorithm,
            f"{row.scheduler} ({r.scheduler_chosen})"
            if row.scheduler == "default"
            else row.scheduler,
            _mb(before),
            _mb(after),
            f"{r.ratio:.3f}",
            "met" if r.budget_met else "missed",
            _moves(r),
            f"{r.extra_flops_pct:+.2f}%",
            f"{r.pass_seconds * 1000:.0f} ms",
            r.numerics,
        )
    return table
