#!/usr/bin/env python3
"""The heuristics table: every algorithm x scheduler at 80/60/50/40/30% of the
baseline peak on the ResNet-20 and ResNet-56 training steps (batch 64, TF 2.21
CPU, whole-step compile), then a Markdown table and PNG plots.

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

BUDGETS = "0.8,0.6,0.5,0.4,0.3"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="20,56")
    parser.add_argument("--out", type=Path, default=REPORTS_DIR / "heuristics")
    parser.add_argument("--no-numerics", action="store_true")
    args = parser.parse_args()
    common = ["--models", args.models, "--modes", "jit", "--budgets", BUDGETS]
    if args.no_numerics:
        common.append("--no-numerics")
    plain = harness(
        [
            "sweep",
            *common,
            "--schedulers",
            "default,postorder,DFS,list",
            "--results",
            str(args.out / "plain" / "results.jsonl"),
        ]
    )
    tiled = harness(
        [
            "sweep",
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
