#!/usr/bin/env python3
"""Pass time against module size: each algorithm at 50% and 33% of the baseline
peak on ResNet training steps of growing depth (TF 2.21 CPU, whole-step
compile, batch 64), and the log-log slope of pass time against instruction
count (1 is linear). A benchmark, not a test: it measures and reports.

    .venv/bin/python scripts/bench_scaling.py [--sizes 20,56,110,164]
        [--algorithms standard,path,xla] [--budgets 0.5,0.33] [--out reports/scaling]

Writes OUT/results.json (one row per size, algorithm and budget) and
OUT/table.md, and prints the table. Pass time is the engine's own
`pass_seconds` (scheduling, planning, verification; not parsing or the
HeapSimulator figures around it). On a shared machine other jobs inflate it:
`--repeat K` keeps the fastest of K runs of each cell.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from remat_harness.engine import RematFlags, baseline_peak, run_hlo_remat
from remat_harness.hlo_dump import ModelSpec, produce_hlo
from remat_harness.paths import REPORTS_DIR
from remat_harness.sweep import budget_bytes, engine_build


@dataclass
class Row:
    model: str
    instructions: int
    algorithm: str
    budget: str
    budget_bytes: int
    baseline_bytes: int
    floor_bytes: int
    peak_after_bytes: int
    budget_met: bool
    extra_flops_pct: float
    pass_seconds: float
    # Where pass_seconds went (the report's phase_seconds) and sweeps made.
    phase_seconds: dict[str, float] = field(default_factory=dict)
    plans_tried: int = 0


def slope(points: list[tuple[int, float]]) -> float | None:
    """Least-squares slope of log(pass time) against log(instructions)."""
    usable = [(math.log(n), math.log(s)) for n, s in points if n > 0 and s > 0]
    if len(usable) < 2:
        return None
    mx = sum(x for x, _ in usable) / len(usable)
    my = sum(y for _, y in usable) / len(usable)
    var = sum((x - mx) ** 2 for x, _ in usable)
    if var == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in usable) / var


def measure(
    spec: ModelSpec, algorithm: str, budget: str, work: Path, timeout_s: float, repeat: int = 1
) -> Row:
    """The fastest of `repeat` runs (the plan is deterministic; only time varies)."""
    rows = [_measure_once(spec, algorithm, budget, work, timeout_s) for _ in range(repeat)]
    return min(rows, key=lambda r: r.pass_seconds)


def _measure_once(
    spec: ModelSpec, algorithm: str, budget: str, work: Path, timeout_s: float
) -> Row:
    hlo = produce_hlo(spec) / "step.hlo"
    baseline = baseline_peak(hlo, work / spec.key)
    limit = budget_bytes(budget, baseline)
    flags = RematFlags(limit, algorithm).args()
    report_path = work / spec.key / f"{algorithm}.{budget}.json"
    run = run_hlo_remat(hlo, flags, report_path, timeout_s=timeout_s)
    if run.returncode != 0 or run.report is None:
        lines = run.stderr.strip().splitlines()
        raise RuntimeError(f"{spec.key} {algorithm} {budget}: {lines[-1] if lines else 'failed'}")
    r = run.report
    return Row(
        model=spec.key,
        instructions=r.instructions_before,
        algorithm=algorithm,
        budget=budget,
        budget_bytes=limit,
        baseline_bytes=baseline,
        floor_bytes=r.floor_bytes,
        peak_after_bytes=r.heap_sim_after_bytes,
        budget_met=r.budget_met,
        extra_flops_pct=r.extra_flops_pct,
        pass_seconds=r.pass_seconds,
        phase_seconds=dict(r.phase_seconds),
        plans_tried=r.plans_tried,
    )


def phase_table(rows: list[Row]) -> str:
    """Where the pass time went on the largest module, cell by cell."""
    if not rows:
        return ""
    largest = max(rows, key=lambda r: r.instructions).model
    cells = [r for r in rows if r.model == largest]
    phases = list(dict.fromkeys(p for r in cells for p in r.phase_seconds))
    lines = [
        f"Where the time went on {largest} (seconds):\n",
        "| cell | " + " | ".join(phases) + " | plans | total |",
        "|---|" + "---|" * (len(phases) + 2),
    ]
    for r in cells:
        spent = " | ".join(f"{r.phase_seconds.get(p, 0.0):.2f}" for p in phases)
        lines.append(
            f"| {r.algorithm} @ {r.budget} | {spent} | {r.plans_tried} | {r.pass_seconds:.2f} |"
        )
    return "\n".join(lines) + "\n"


def table(rows: list[Row], algorithms: list[str], budgets: list[str]) -> str:
    models = list(dict.fromkeys(r.model for r in rows))
    sizes = {r.model: r.instructions for r in rows}
    head = "| model | instructions | " + " | ".join(
        f"{a} @ {b}" for a in algorithms for b in budgets
    )
    lines = [head + " |", "|---|---|" + "---|" * (len(algorithms) * len(budgets))]
    by_cell = {(r.model, r.algorithm, r.budget): r for r in rows}
    for model in models:
        cells = []
        for a in algorithms:
            for b in budgets:
                r = by_cell.get((model, a, b))
                if r is None:
                    cells.append("-")
                else:
                    met = "" if r.budget_met else " (missed)"
                    cells.append(
                        f"{r.pass_seconds:.2f} s, {r.peak_after_bytes / r.baseline_bytes:.2f}{met}"
                    )
        lines.append(f"| {model} | {sizes[model]:,} | " + " | ".join(cells) + " |")
    slopes = []
    for a in algorithms:
        for b in budgets:
            s = slope(
                [
                    (r.instructions, r.pass_seconds)
                    for r in rows
                    if (r.algorithm, r.budget) == (a, b)
                ]
            )
            slopes.append("-" if s is None else f"{s:.2f}")
    lines.append("| log-log slope | | " + " | ".join(slopes) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="20,56,110,164", help="ResNet depths (6n+2)")
    parser.add_argument("--algorithms", default="standard,path,xla")
    parser.add_argument("--budgets", default="0.5,0.33", help="fractions of the baseline peak")
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    parser.add_argument("--repeat", type=int, default=1, help="keep the fastest of K runs")
    parser.add_argument("--out", type=Path, default=REPORTS_DIR / "scaling")
    args = parser.parse_args()
    algorithms = [a for a in args.algorithms.split(",") if a]
    budgets = [b for b in args.budgets.split(",") if b]
    specs = [ModelSpec(int(s), 1, args.batch_size, "jit") for s in args.sizes.split(",") if s]
    build = engine_build()
    rows: list[Row] = []
    failures: list[str] = []
    start = time.monotonic()
    for spec in specs:
        for algorithm in algorithms:
            for budget in budgets:
                try:
                    row = measure(
                        spec, algorithm, budget, args.out / "work", args.timeout, args.repeat
                    )
                except Exception as e:  # noqa: BLE001 - a failed run is reported, the rest go on
                    failures.append(f"{spec.key} {algorithm} {budget}: {e}")
                    print(failures[-1], file=sys.stderr)
                    continue
                rows.append(row)
                print(
                    f"{row.model} ({row.instructions:,} instructions) {algorithm} @ {budget}: "
                    f"{row.pass_seconds:.2f} s, peak {row.peak_after_bytes / 1e6:.1f} MB "
                    f"({row.peak_after_bytes / row.baseline_bytes:.2f} of baseline)",
                    flush=True,
                )
    text = table(rows, algorithms, budgets) + "\n" + phase_table(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(
        json.dumps(
            {"build": build, "rows": [asdict(r) for r in rows], "failures": failures}, indent=2
        )
    )
    (args.out / "table.md").write_text(
        "# Pass time against module size\n\n"
        f"Engine build {build}; cells: pass time, peak after / baseline (HeapSimulator). "
        "Command: `.venv/bin/python scripts/bench_scaling.py "
        f"--sizes {args.sizes} --algorithms {args.algorithms} --budgets {args.budgets} "
        f"--repeat {args.repeat}`.\n\n"
        + text
        + ("\nFailed:\n" + "\n".join(f"- {f}" for f in failures) + "\n" if failures else "")
    )
    print(text)
    print(f"{len(rows)} runs in {time.monotonic() - start:.0f} s; {args.out / 'table.md'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
