#!/usr/bin/env python3
"""The GPU table: models compiled deviceless for a GPU target, each algorithm
at fractions of the predicted peak; peak after, budget met, extra FLOPs (GPU
cost model: library calls counted) and pass time. Writes
reports/gpu/<target>/results.jsonl and table.md; a failed cell is recorded and
the table goes on.

    .venv/bin/python scripts/gpu_table.py [--models 20,56,mobilenet,transformer]
        [--target h100_sxm] [--budgets 0.8,0.6,0.5,0.4,0.3] [--algorithms xla,standard,path]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from remat_harness.engine import RematFlags
from remat_harness.gpu import predicted_peak, run_gpu
from remat_harness.hlo_dump import ModelSpec
from remat_harness.paths import REPORTS_DIR
from remat_harness.remat_report import RematReport


def cell_text(report: RematReport | None, error: str) -> str:
    if report is None:
        return f"failed: {error[:60]}"
    met = "met" if report.budget_met else "missed"
    return (
        f"{report.ratio:.3f} {met}, {report.extra_flops_fraction:+.1%}, {report.pass_seconds:.2f} s"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__)
    parser.add_argument(
        "--models", default="20,56,mobilenetv2,densenet121,vgg16,transformer,lstm,gru"
    )
    parser.add_argument("--target", default="h100_sxm")
    parser.add_argument("--budgets", default="0.8,0.6,0.5,0.4,0.3")
    parser.add_argument("--algorithms", default="xla,standard,path")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    out = args.out or REPORTS_DIR / "gpu" / args.target
    out.mkdir(parents=True, exist_ok=True)
    budgets = [float(b) for b in args.budgets.split(",")]
    algorithms = args.algorithms.split(",")
    lines = [
        f"# GPU table: {args.target} (deviceless compile; what BufferAssigner allocates)",
        "",
        "Each cell: allocation after / before, budget met, extra FLOPs, pass time.",
        "",
    ]
    with open(out / "results.jsonl", "w") as results:
        for name in args.models.split(","):
            spec = ModelSpec.parse(name)
            try:
                base = predicted_peak(spec, args.target, out / spec.key)
            except Exception as e:  # noqa: BLE001 - recorded, the table goes on
                lines += [f"## {spec.key}: compile failed: {e}", ""]
                continue
            peak = base.allocated("before")
            lines += [
                f"## {spec.key}",
                "",
                f"Predicted allocation {peak / 2**20:.1f} MiB (HeapSimulator "
                f"{base.heap_sim_before_bytes / 2**20:.1f} MiB), floor "
                f"{base.floor_bytes / 2**20:.1f} MiB, "
                f"{base.multi_output_fusions} multi-output fusions.",
                "",
                "| algorithm | " + " | ".join(f"{b:.0%}" for b in budgets) + " |",
                "|---|" + "---|" * len(budgets),
            ]
            for algorithm in algorithms:
                cells = []
                for fraction in budgets:
                    report_path = out / spec.key / f"{algorithm}.{fraction}.json"
                    run = run_gpu(
                        spec,
                        args.target,
                        RematFlags(int(peak * fraction), algorithm).args(),
                        report_path,
                    )
                    error = "" if run.returncode == 0 else run.stderr.strip()[-300:]
                    report = run.report if run.returncode == 0 else None
                    record = {
                        "model": spec.key,
                        "target": args.target,
                        "algorithm": algorithm,
                        "fraction": fraction,
                        "error": error,
                        "report": run.raw if report is not None else None,
                    }
                    results.write(json.dumps(record) + "\n")
                    results.flush()
                    cells.append(cell_text(report, error))
                    print(f"{spec.key} {algorithm} {fraction:.0%}: {cells[-1]}", flush=True)
                lines.append(f"| {algorithm} | " + " | ".join(cells) + " |")
            lines.append("")
    (out / "table.md").write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
