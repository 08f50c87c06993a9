"""`make demo`: ResNet-20 step, every algorithm × every scheduler at a budget
of half the baseline peak on CPU, then every algorithm on the same step
compiled deviceless for a GPU (the pass where the GPU hook runs it); prints
the tables and writes the JSON reports."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from remat_harness.engine import RematFlags, baseline_peak, run_hlo_remat
from remat_harness.gpu import predicted_peak, run_gpu
from remat_harness.hlo_dump import ModelSpec, produce_hlo
from remat_harness.paths import REPORTS_DIR
from remat_harness.remat_report import RematReport
from remat_harness.sweep import SCHEDULERS


@dataclass
class DemoRow:
    algorithm: str
    scheduler: str
    report: RematReport | None
    error: str = ""


def run_demo(
    spec: ModelSpec,
    console: Console,
    algorithms: tuple[str, ...] = ("xla", "standard", "compress", "standardcompress", "path"),
    budget_fraction: float = 0.5,
    out_dir: Path = REPORTS_DIR / "demo",
    check_numerics: bool = True,
) -> list[DemoRow]:
    console.print(f"[bold]Producing the HLO of {spec.key}[/] (TensorFlow on CPU, synthetic data)")
    hlo_dir = produce_hlo(spec)
    hlo = hlo_dir / "step.hlo"
    out_dir.mkdir(parents=True, exist_ok=True)
    peak = baseline_peak(hlo, out_dir)
    budget = int(peak * budget_fraction)
    console.print(f"baseline peak {peak:,} bytes; budget {budget:,} bytes ({budget_fraction:.0%})")
    rows: list[DemoRow] = []
    cells = [(a, s) for a in algorithms for s in SCHEDULERS]
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("hlo-remat", total=len(cells))
        for algorithm, scheduler in cells:
            progress.update(task, description=f"{algorithm}/{scheduler}")
            report_path = out_dir / f"{spec.key}.{algorithm}.{scheduler}.json"
            run = run_hlo_remat(
                hlo,
                RematFlags(budget, algorithm, scheduler).args(),
                report_path,
                check_numerics=check_numerics,
            )
            error = "" if run.returncode == 0 else run.stderr.strip().splitlines()[-1]
            rows.append(DemoRow(algorithm, scheduler, run.report, error))
            progress.advance(task)
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
    algorithms: tuple[str, ...] = ("xla", "standard", "compress", "standardcompress", "path"),
    budget_fraction: float = 0.5,
    out_dir: Path = REPORTS_DIR / "demo",
) -> list[DemoRow]:
    """The same step compiled for `target` without a GPU; the scheduler is the
    GPU hook's default, `given` (the latency-hiding scheduler's order)."""
    console.print(f"[bold]Compiling {spec.key} for {target}[/] (XLA's GPU pipeline, no GPU)")
    gpu_dir = out_dir / f"gpu_{target}"
    gpu_dir.mkdir(parents=True, exist_ok=True)
    base = predicted_peak(spec, target, gpu_dir)
    peak = base.allocated("before")
    budget = int(peak * budget_fraction)
    console.print(
        f"predicted allocation {peak:,} bytes (BufferAssigner; HeapSimulator "
        f"{base.heap_sim_before_bytes:,}); budget {budget:,} bytes"
    )
    rows: list[DemoRow] = []
    for algorithm in algorithms:
        run = run_gpu(
            spec,
            target,
            RematFlags(budget, algorithm).args(),
            gpu_dir / f"{spec.key}.{algorithm}.json",
        )
        error = "" if run.returncode == 0 else run.stderr.strip().splitlines()[-1]
        rows.append(DemoRow(algorithm, "given", run.report, error))
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
    if not (r.recomputed or r.compressed or r.undone) and r.note:
        return _shortened(r.note, 40)
    return f"{r.recomputed} rc / {r.compressed} cp / {r.undone} undo"


def render_table(rows: list[DemoRow], title: str, budget: int) -> Table:
    figure = next((r.report.memory_figure for r in rows if r.report), "heap_simulator")
    label = {"buffer_assignment": "BufferAssigner allocations"}.get(figure, "HeapSimulator peaks")
    table = Table(title=f"{title}: budget {_mb(budget)} ({label})")
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
