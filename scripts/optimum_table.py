"""The gap-to-optimum table of docs/measured.md: `remat-harness optimum` on each model
and device, one Markdown table (reports/optimum/table.md).

    python scripts/optimum_table.py --models 20,56,mobilenetv2,transformer,densenet121 \\
        --devices cpu,gpu:h100_sxm --time-limit 120
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console

from remat_harness.gpu import parse_device
from remat_harness.optimum_run import OptimumPlan, markdown_table, run_optimum
from remat_harness.paths import REPORTS_DIR


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models", default="20,56,mobilenetv2,transformer,densenet121")
    parser.add_argument("--devices", default="cpu,gpu:h100_sxm")
    parser.add_argument("--budgets", default="0.5,0.33")
    parser.add_argument("--algorithms", default="standard,path")
    parser.add_argument("--depth", type=int, default=2)
    parser.add_argument("--time-limit", type=float, default=120, help="seconds per solve")
    parser.add_argument("--out", type=Path, default=REPORTS_DIR / "optimum")
    args = parser.parse_args()
    console = Console()
    all_records: list[dict] = []
    results = args.out / "results.jsonl"
    args.out.mkdir(parents=True, exist_ok=True)
    for device in args.devices.split(","):
        platform, target = parse_device(device)
        for model in args.models.split(","):
            plan = OptimumPlan(
                module=model,
                platform=platform,
                gpu_target=target,
                budgets=tuple(args.budgets.split(",")),
                algorithms=tuple(args.algorithms.split(",")),
                depth=args.depth,
                time_limit_s=args.time_limit,
                out_dir=args.out / f"{model}_{device.replace(':', '_')}",
            )
            try:
                records = run_optimum(plan, console)
            except Exception as e:  # a failed model is recorded, the rest go on
                records = [{"algorithm": "-", "budget": "-", "error": str(e)}]
            for r in records:
                r.update(model=model, device=device)
                with results.open("a") as out:
                    out.write(json.dumps(r) + "\n")
            all_records += records
            (args.out / "table.md").write_text(markdown_table(all_records))
    console.print(f"{args.out / 'table.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
