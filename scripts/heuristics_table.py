#!/usr/bin/env python3
"""The heuristics table: every algorithm at 80/60/50/40/30% of the baseline peak
on the ResNet-20 (every scheduler) and ResNet-56 (default scheduler) training
steps (batch 64, TF 2.21 CPU, whole-step compile), then a Markdown table and
PNG plots.

    .venv/bin/python scripts/heuristics_table.py [--models 20,56] [--no-numerics]

Plain bytes (CPU and GPU) first; then `compress` and `standardcompress` again
with the tiled size function (8x128), the only one under which a layout is
smaller. Resumable: rerun to finish an interrupted sweep.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from remat_harness.cli import main as harness
from remat_harness.paths import REPORTS_DIR
from remat_harness.sweep import compared_schedulers

BUDGETS = "0.8,0.6,0.5,0.4,0.3"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models", default="20,56")
    parser.add_argument(
        "--all-schedulers-for",
        default="20",
        help="models that get every scheduler; the others get `default` only (time)",
    )
    parser.add_argument("--out", type=Path, default=REPORTS_DIR / "heuristics")
    parser.add_argument("--no-numerics", action="store_true")
    args = parser.parse_args()
    common = ["--modes", "jit", "--budgets", BUDGETS]
    if args.no_numerics:
        common.append("--no-numerics")
    plain_results = str(args.out / "plain" / "results.jsonl")
    models = args.models.split(",")
    full = [m for m in models if m in args.all_schedulers_for.split(",")]
    rest = [m for m in models if m not in full]
    plain = 0
    for group, schedulers in ((full, ",".join(compared_schedulers())), (rest, "default")):
        if group:
            plain = max(
                plain,
                harness(
                    [
                        "sweep",
                        "--models",
                        ",".join(group),
                        *common,
                        "--schedulers",
                        schedulers,
                        "--results",
                        plain_results,
                    ]
                ),
            )
    tiled = harness(
        [
            "sweep",
            "--models",
            args.models,
            *common,
            "--algorithms",
            "compress,standardcompress",
            "--schedulers",
            "default",
            "--size-function",
            "tiled",
            "--results",
            str(args.out / "tiled" / "results.jsonl"),
        ]
    )
    return max(plain, tiled)


if __name__ == "__main__":
    sys.exit(main())
