"""`remat-harness`: produce HLO from the models and run the engine on it."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console

from remat_harness.hlo_dump import MODES, DumpError, ModelSpec, produce_hlo
from remat_harness.paths import ToolMissing


def _spec(args: argparse.Namespace) -> ModelSpec:
    return ModelSpec(args.resnet_size, args.resnet_version, args.batch_size, args.mode)


def _add_model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--resnet_size", type=int, default=20)
    p.add_argument("--resnet_version", type=int, default=1, choices=(1, 2))
    p.add_argument("--batch_size", type=int, default=64)
    p.add_argument("--mode", default="jit", choices=MODES)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="remat-harness", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    produce = sub.add_parser("produce-hlo", help="dump a model's training-step HLO")
    _add_model_args(produce)
    produce.add_argument("--force", action="store_true", help="ignore the cache")
    demo = sub.add_parser("demo", help="xla and standard at 50%% budget on ResNet-20")
    _add_model_args(demo)
    demo.add_argument("--budget-fraction", type=float, default=0.5)
    demo.add_argument("--no-numerics", action="store_true")
    args = parser.parse_args(argv)
    console = Console(width=max(Console().width, 100))  # the demo table needs 100
    try:
        if args.command == "produce-hlo":
            out = produce_hlo(_spec(args), force=args.force)
            console.print(f"{out / 'step.hlo'}")
        elif args.command == "demo":
            from remat_harness.demo import run_demo

            if not 0 < args.budget_fraction <= 1:
                parser.error("--budget-fraction must be in (0, 1]")
            rows = run_demo(
                _spec(args),
                console,
                budget_fraction=args.budget_fraction,
                check_numerics=not args.no_numerics,
            )
            if any(r.report is None for r in rows):
                return 1
    except (DumpError, ToolMissing) as e:
        console.print(f"[red]error:[/] {e}")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
