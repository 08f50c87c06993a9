"""`remat-harness`: produce HLO from the models and run the engine on it."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from rich.console import Console

from remat_harness.cluster import ClusterSpec
from remat_harness.fit import FitError
from remat_harness.fit_cli import add_fit_parser, run_fit
from remat_harness.flag_table import algorithms as engine_algorithms
from remat_harness.gpu import (
    before_optimizations,
    check_autotune_results,
    check_gpu_target,
    parse_device,
    predicted_peak,
)
from remat_harness.hlo_dump import MODES, DumpError, ModelSpec, produce_hlo
from remat_harness.paths import REPORTS_DIR, ToolMissing, hlo_remat_binary, models_dir
from remat_harness.remat_report import kernels_text
from remat_harness.report import (
    plot_before_after,
    plot_peak_vs_budget,
    plot_peak_vs_step_time,
    write_markdown,
)
from remat_harness.sweep import (
    SweepError,
    SweepPlan,
    check_budgets,
    load_results,
    parse_models,
    run_sweep,
)
from remat_harness.tf_runtime import tensorflow_is_patched


def _spec(args: argparse.Namespace) -> ModelSpec:
    if getattr(args, "model", None):
        try:
            return ModelSpec.parse(args.model, args.batch_size, args.mode, args.resnet_version)
        except ValueError as e:
            raise DumpError(str(e)) from e
    return ModelSpec(args.resnet_size, args.resnet_version, args.batch_size, args.mode)


def _add_model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--resnet-size", type=int, default=20, help="ResNet depth, 6n+2")
    p.add_argument("--resnet-version", type=int, default=1, choices=(1, 2), help="ResNet v1 or v2")
    p.add_argument("--batch-size", type=int, default=64, help="examples per training step")
    p.add_argument(
        "--mode",
        default="jit",
        choices=MODES,
        help="jit: the whole step compiled (jit_compile=True); autojit: TensorFlow's "
        "auto-clustering",
    )


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _sweep(args: argparse.Namespace, console: Console) -> int:
    modes = _split(args.modes)
    for mode in modes:
        if mode not in MODES:
            raise SweepError(f"mode {mode!r} is not valid; choose from {', '.join(MODES)}")
    plan = SweepPlan(
        models=parse_models(_split(args.models), modes, args.resnet_version, args.batch_size),
        algorithms=_split(args.algorithms) or list(engine_algorithms()),
        schedulers=_split(args.schedulers),
        budgets=_split(args.budgets),
        size_function=args.size_function,
        check_numerics=not args.no_numerics,
        timeout_s=args.timeout,
        patched=args.patched,
        time_runs=args.time,
        device=args.device,
        max_extra_flops=args.max_extra_flops,
        frontier_cache=args.frontier_cache,
        optimum_time_limit_s=args.optimum,
        gpu_autotune_results=args.gpu_autotune_results,
    )
    if args.patched:
        ok, why = tensorflow_is_patched()
        if not ok:
            raise SweepError(why)
    start = time.monotonic()
    if args.workers < 0:
        raise SweepError(f"--workers {args.workers}: give a count of worker processes >= 1")
    records = run_sweep(
        plan,
        args.results,
        console,
        retry_failed=args.retry_failed,
        new_build=args.new_build,
        cluster=ClusterSpec(workers=args.workers, address=args.scheduler),
    )
    failed = [r for r in records if r.get("status") != "ok"]
    console.print(
        f"{len(records)} records in {args.results} ({len(failed)} failed); "
        f"this run took {time.monotonic() - start:.0f} s"
    )
    _report(args.results, args.results.parent, "Rematerialization sweep", console)
    return 1 if failed else 0


def _every_twentieth(what: str, console: Console) -> Callable[[int, int], None]:
    """A progress line at each twentieth of a long campaign (plain lines, so a
    log file shows them too)."""

    def show(done: int, total: int) -> None:
        if total >= 20 and done % max(1, total // 20) == 0 and done != total:
            console.print(f"{what}: {done}/{total}")

    return show


def _fuzz(args: argparse.Namespace, console: Console) -> int:
    from remat_harness.fuzz import fuzz_mutants, fuzz_steps, seed_modules

    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    summaries = []
    if args.mutants:
        seeds = seed_modules(args.seeds)
        console.print(f"{args.mutants} mutants of {len(seeds)} modules, seed {args.seed}")
        summaries.append(
            fuzz_mutants(
                seeds,
                args.mutants,
                args.seed,
                out,
                timeout_s=args.timeout,
                jobs=args.jobs,
                progress=_every_twentieth("mutants", console),
            )
        )
    if args.steps:
        console.print(f"{args.steps} random training steps, seed {args.seed}")
        summaries.append(
            fuzz_steps(
                args.steps,
                args.seed,
                out,
                timeout_s=args.timeout * 10,
                jobs=args.jobs,
                progress=_every_twentieth("steps", console),
            )
        )
    summary = {"seed": args.seed, "campaigns": [s.to_json() for s in summaries]}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    findings = sum(len(s.findings) for s in summaries)
    for s in summaries:
        codes = ", ".join(f"exit {k}: {v}" for k, v in sorted(s.exit_codes.items(), key=str))
        console.print(
            f"{s.campaign}: {s.runs} runs in {s.seconds:.0f} s ({codes}); "
            f"longest message {s.max_message_lines} lines, {s.max_message_chars} chars; "
            f"{len(s.findings)} findings"
        )
    console.print(
        f"summary: {out / 'summary.json'}"
        + (f"; reproducers in {out / 'findings'}" if findings else "")
    )
    return 1 if findings else 0


def _optimum(args: argparse.Namespace, parser: argparse.ArgumentParser, console: Console) -> int:
    from remat_harness.optimum import GraphError
    from remat_harness.optimum_run import OptimumError, OptimumPlan, render_table, run_optimum

    try:
        platform, target = parse_device(args.device)
    except ValueError as e:
        parser.error(str(e))
    if args.depth < 1:
        parser.error(f"--depth {args.depth}: give a chain length of 1 or more")
    algorithms = tuple(_split(args.algorithms))
    valid = engine_algorithms()
    for algorithm in algorithms:
        if algorithm not in valid:
            parser.error(f"--algorithms: {algorithm!r} is not valid; valid: {', '.join(valid)}")
    plan = OptimumPlan(
        module=args.module,
        platform=platform,
        gpu_target=target,
        budgets=tuple(_split(args.budgets)),
        algorithms=algorithms,
        depth=args.depth,
        time_limit_s=args.time_limit,
        out_dir=args.out,
        max_extra_flops=args.max_extra_flops,
    )
    try:
        records = run_optimum(plan, console)
    except (OptimumError, GraphError) as e:
        console.print(f"[red]error:[/] {e}", soft_wrap=True)
        return 2
    console.print(render_table(records, f"{args.module} ({args.device}): gap to the MILP optimum"))
    console.print(f"{args.out / 'optimum.jsonl'}")
    return 1 if any("error" in r for r in records) else 0


def _frontier(args: argparse.Namespace, parser: argparse.ArgumentParser, console: Console) -> int:
    from remat_harness.frontier import plot_frontier, run_frontier
    from remat_harness.optimum_run import OptimumError, resolve_module

    try:
        platform, target = parse_device(args.device)
    except ValueError as e:
        parser.error(str(e))
    budgets = tuple(_split(args.budgets))
    check_budgets(list(budgets))  # a bad spelling, before the run
    try:
        hlo = resolve_module(args.module, platform)
        run = run_frontier(
            hlo, args.out, args.algorithm, target, budgets, args.bound, args.time_limit
        )
    except (OptimumError, RuntimeError) as e:
        console.print(f"[red]error:[/] {e}", soft_wrap=True)
        return 2
    f = run.frontier
    for i, p in enumerate(f.points):
        mark = "*" if p.usable else " "
        console.print(
            f"{mark} aim {f.share(p.aim_bytes):.3f}: peak {f.share(p.peak_bytes):.3f} "
            f"of {f.allocation_before_bytes:,} bytes, +{f.extra_pct(p):.2f}% FLOPs"
            + ("" if p.kept else " (refused)")
            + (
                ""
                if p.cap_flops is None
                else f" (between neighbours, cap {f.extra_pct_of(p.cap_flops):.2f}%)"
            )
            + ("" if p.chains else " (single recomputations)")
            + (" <- chosen" if i == f.chosen else "")
        )
    png = plot_frontier(run, args.out / "frontier.png", f"{args.module} ({args.device})")
    console.print(f"{args.out / 'frontier.json'}\n{png}")
    return 0


def _report(results: Path, out: Path, title: str, console: Console) -> int:
    records = list(load_results(results).values())
    if not records:
        console.print(f"[red]error:[/] no results in {results}")
        return 2
    write_markdown(records, out / "table.md", title)
    plots = (
        plot_peak_vs_budget(records, out)
        + plot_before_after(records, out)
        + plot_peak_vs_step_time(records, out)
    )
    console.print(f"table: {out / 'table.md'}; plots: {', '.join(p.name for p in plots)}")
    return 0


class _HelpFormatter(argparse.HelpFormatter):
    """Every option's help ends with its default, unless it says it already."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if (
            "(default" in text
            or not action.option_strings
            or action.default is argparse.SUPPRESS
            or isinstance(action, argparse._HelpAction)
        ):
            return text
        if action.nargs == 0:  # a switch
            return f"{text} (default: off)"
        if action.default in ("", None, []):
            return f"{text} (default: none)"
        return f"{text} (default: %(default)s)"


def normalize_option_spelling(argv: list[str]) -> list[str]:
    """`--batch_size=8` is `--batch-size=8`: options are kebab-case, and the
    underscore spelling of the TensorFlow model scripts is accepted too."""
    out = []
    for token in argv:
        if token.startswith("--") and len(token) > 2:
            name, sep, value = token.partition("=")
            token = name.replace("_", "-") + sep + value
        out.append(token)
    return out


class _Parser(argparse.ArgumentParser):
    """Bad arguments end in one line (and exit 2), not the usage block; every
    option shows its default; underscores in option names are accepted."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def parse_known_args(  # type: ignore[override]
        self, args: list[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        argv = sys.argv[1:] if args is None else list(args)
        return super().parse_known_args(normalize_option_spelling(argv), namespace)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (--help lists the options)\n")


def _version() -> str:
    """The package's version and the engine build it would run."""
    import subprocess
    from importlib.metadata import PackageNotFoundError, version

    try:
        own = version("remat-harness")
    except PackageNotFoundError:
        own = "unknown"
    try:
        engine = subprocess.run(
            [str(hlo_remat_binary()), "--version"], capture_output=True, text=True, timeout=120
        ).stdout.strip()
    except (ToolMissing, OSError, subprocess.TimeoutExpired):
        engine = "hlo-remat not built"
    return f"{own} ({engine})"


class _VersionAction(argparse.Action):
    """--version, asking the engine only when given."""

    def __init__(self, option_strings: list[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(f"remat-harness {_version()}")  # stdout, as --version is read
        parser.exit(0)


def _add_autotune_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--gpu-autotune-results",
        default="",
        metavar="F",
        help="with a GPU device: XLA autotune results recorded on your GPU "
        "(XLA_FLAGS=--xla_gpu_dump_autotune_results_to=F.txtpb on that host) so the "
        "prediction uses its convolution and GEMM kernels, not XLA's defaults",
    )


def _add_module_device_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--module",
        required=True,
        help="an HLO file (CPU: *.cpu_after_optimizations.txt; GPU: "
        "*.before_optimizations.txt) or a model name (20, resnet56, mobilenet, ...)",
    )
    p.add_argument("--device", default="cpu", help="cpu, or gpu:<target> (default: cpu)")


def build_parser() -> argparse.ArgumentParser:
    """The `remat-harness` command line: every subcommand and option."""
    parser = _Parser(prog="remat-harness", description=__doc__)
    parser.add_argument(
        "--version", action=_VersionAction, help="print the versions of this tool and the engine"
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    produce = sub.add_parser("produce-hlo", help="dump a model's training-step HLO")
    _add_model_args(produce)
    produce.add_argument(
        "--model",
        default="",
        help="a zoo model (mobilenetv2, densenet121, transformer, ...) or a ResNet "
        "name (resnet56) instead of --resnet-size",
    )
    produce.add_argument("--force", action="store_true", help="ignore the cache")
    produce.add_argument(
        "--device",
        default="cpu",
        help="gpu:<target> also compiles the step for that GPU without one and prints "
        "its predicted peak",
    )
    _add_autotune_arg(produce)
    demo = sub.add_parser("demo", help="every algorithm and scheduler at 50%% budget on ResNet-20")
    _add_model_args(demo)
    demo.add_argument(
        "--budget-fraction",
        type=float,
        default=0.5,
        help="budget as a share of the step's peak",
    )
    demo.add_argument(
        "--out",
        type=Path,
        default=REPORTS_DIR / "demo",
        help="folder for the JSON reports (default: reports/demo under the working folder)",
    )
    demo.add_argument(
        "--no-numerics",
        action="store_true",
        help="skip running each module before and after on XLA:CPU to compare outputs",
    )
    demo.add_argument(
        "--gpu-target",
        default="h100_sxm",
        help="also compile the step for this GPU, without one (empty: CPU only)",
    )
    sweep = sub.add_parser(
        "sweep",
        help="models x modes x algorithms x schedulers x budgets on CPU (resumable)",
        description="Runs hlo-remat on the training-step HLO of each model and mode; one JSON "
        "line per cell in --results; finished cells are skipped on a rerun.",
    )
    sweep.add_argument(
        "--models", default="20,56", help="ResNet depths and zoo models, e.g. 20,56,lstm"
    )
    sweep.add_argument(
        "--device",
        default="cpu",
        help="cpu, or gpu:<target> (e.g. gpu:h100_sxm): the step compiled for that GPU "
        "without one, budgets as fractions of its predicted peak",
    )
    _add_autotune_arg(sweep)
    sweep.add_argument("--modes", default="jit,autojit", help=f"from {', '.join(MODES)}")
    sweep.add_argument(
        "--resnet-version", type=int, default=1, choices=(1, 2), help="ResNet v1 or v2"
    )
    sweep.add_argument("--batch-size", type=int, default=64, help="examples per training step")
    sweep.add_argument(
        "--algorithms",
        default="",
        help="comma-separated, any case [default: every algorithm hlo-remat --list-flags names]",
    )
    sweep.add_argument(
        "--schedulers",
        default="default",
        help="comma-separated, from those hlo-remat --list-flags names",
    )
    sweep.add_argument(
        "--budgets",
        default="0.8,0.6,0.5,0.4,0.3",
        help="shares of the baseline peak (0.5, 0.5x or 50%%) or bytes (512M)",
    )
    sweep.add_argument("--size-function", default="plain", help="plain, tiled or tiled:RxC")
    sweep.add_argument(
        "--results",
        type=Path,
        default=REPORTS_DIR / "sweep" / "results.jsonl",
        help="the resumable results file (one JSON line per cell)",
    )
    sweep.add_argument(
        "--no-numerics",
        action="store_true",
        help="skip comparing each cell's outputs before and after on XLA:CPU",
    )
    sweep.add_argument(
        "--retry-failed", action="store_true", help="run the cells that failed before again"
    )
    sweep.add_argument(
        "--new-build",
        action="store_true",
        help="the results file holds another engine build's records: set them aside "
        "(results.<build>.jsonl) and run every cell again",
    )
    sweep.add_argument(
        "--time",
        type=int,
        default=0,
        metavar="N",
        help="run each module N times on XLA:CPU before and after (hlo-remat --time N) "
        "and record the median step-time ratio",
    )
    sweep.add_argument(
        "--patched",
        action="store_true",
        help="run the models on the installed, patched TensorFlow with the remat flags "
        "(real peaks) instead of hlo-remat on their HLO",
    )
    sweep.add_argument("--timeout", type=float, default=600, help="seconds per cell")
    sweep.add_argument(
        "--max-extra-flops",
        default="",
        metavar="F",
        help="compute cap per plan, a fraction of the module's FLOPs or 'none' "
        "(default: the engine's, 0.25)",
    )
    sweep.add_argument(
        "--frontier-cache",
        default="",
        metavar="DIR",
        help="keep each module's frontier in DIR (the engine's frontier_cache flag): a "
        "module's budgets after its first are answered from it, each compile making only "
        "its plan (pass times are then a warm compile's)",
    )
    sweep.add_argument(
        "--workers",
        type=int,
        default=0,
        help="run the cells on a local Dask cluster of N worker processes (default: 0, "
        "one after another here)",
    )
    sweep.add_argument(
        "--scheduler",
        default="",
        metavar="tcp://HOST:8786",
        help="run the cells on a running Dask cluster (dask scheduler / dask worker); "
        "every worker needs this checkout's engine and the model cache at the same path",
    )
    sweep.add_argument(
        "--optimum",
        type=float,
        default=0,
        metavar="SECONDS",
        help="solve each cell's MILP optimum at the peak it reached, with this time limit "
        "per solve, and add the gap to optimum to the table (default: 0, off)",
    )
    report = sub.add_parser("report", help="Markdown table and PNG plots from a results file")
    report.add_argument(
        "--results",
        type=Path,
        default=REPORTS_DIR / "sweep" / "results.jsonl",
        help="a sweep's results file",
    )
    report.add_argument("--out", type=Path, default=None, help="folder (default: beside results)")
    report.add_argument("--title", default="Rematerialization sweep", help="the table's heading")
    fuzz = sub.add_parser(
        "fuzz",
        help="fuzz hlo-remat with mutated modules and random training steps",
        description="Mutants must be refused (exit 2, at most 2 lines) or give a valid "
        "output; random steps must keep numerics and never raise the peak. Findings are "
        "saved with their command under OUT/findings.",
    )
    fuzz.add_argument("--mutants", type=int, default=200, help="mutants to run (default: 200)")
    fuzz.add_argument(
        "--steps", type=int, default=0, help="random TensorFlow training steps (default: 0)"
    )
    fuzz.add_argument("--seed", type=int, default=1, help="campaign seed (default: 1)")
    fuzz.add_argument(
        "--seeds",
        type=Path,
        nargs="*",
        default=[],
        help="more HLO files or folders to mutate (default: the bundled modules and the "
        "cached training steps)",
    )
    fuzz.add_argument("--jobs", type=int, default=2, help="engine runs at once (default: 2)")
    fuzz.add_argument(
        "--timeout", type=float, default=60, help="seconds per mutant run (default: 60)"
    )
    fuzz.add_argument(
        "--out", type=Path, default=REPORTS_DIR / "fuzz", help="folder (default: reports/fuzz)"
    )
    optimum = sub.add_parser(
        "optimum",
        help="each algorithm beside the MILP optimum of the same schedule",
        description="Exports the module's graph (hlo-remat --export-graph), runs each "
        "algorithm at each budget, and solves the Checkmate-style MILP with HiGHS: the "
        "least extra FLOPs that meet the budget, and that reach the peak each algorithm "
        "reached (its gap to optimum); and, from below, the least any recomputation plan "
        "on the schedule needs to meet the budget by the platform's figure (a relaxation "
        "at the stages that must hold the most; 'impossible' where no plan can). Writes "
        "OUT/optimum.jsonl.",
    )
    _add_module_device_args(optimum)
    optimum.add_argument(
        "--budget",
        "--budgets",
        dest="budgets",
        default="0.5,0.33",
        help="shares of the allocation before the pass (0.5, 0.5x or 50%%), or sizes (512M) "
        "(default: 0.5,0.33)",
    )
    optimum.add_argument(
        "--algorithms",
        default="standard,path,standardcompress,xla",
        help="algorithms to compare (default: standard,path,standardcompress,xla)",
    )
    optimum.add_argument(
        "--depth",
        type=int,
        default=2,
        help="longest chain of producers one recomputation may rebuild (default: 2)",
    )
    optimum.add_argument(
        "--time-limit",
        type=float,
        default=600,
        help="seconds per MILP solve; a stopped solve reports its bounds (default: 600)",
    )
    optimum.add_argument(
        "--max-extra-flops",
        default="none",
        help="the engine's compute cap for the algorithms' runs (default: none)",
    )
    optimum.add_argument(
        "--out",
        type=Path,
        default=REPORTS_DIR / "optimum",
        help="folder (default: reports/optimum under the working folder)",
    )
    frontier = sub.add_parser(
        "frontier",
        help="the memory-compute frontier a module's budgets are answered from",
        description="Runs the engine once with --frontier: the plan of every aim of the "
        "frontier search (fixed by the module, never by the budget), each with its peak by "
        "the platform's figure and its extra FLOPs; a budget gets the cheapest plan within "
        "it, else the lowest. Plots peak against extra FLOPs with the budgets, the floor "
        "and, with --bound, the least extra FLOPs any plan needs at each budget. Writes "
        "OUT/frontier.json and OUT/frontier.png.",
    )
    _add_module_device_args(frontier)
    frontier.add_argument("--algorithm", default="path", help="(default: path)")
    frontier.add_argument(
        "--budgets",
        default="0.5,0.33",
        help="shares of the allocation before (0.5, 0.5x or 50%%) or sizes (512M), marked "
        "on the plot; the first is the run's (default: 0.5,0.33)",
    )
    frontier.add_argument(
        "--bound", action="store_true", help="solve the lower bound at each budget (HiGHS)"
    )
    frontier.add_argument(
        "--time-limit", type=float, default=60, help="seconds per bound solve (default: 60)"
    )
    frontier.add_argument(
        "--out", type=Path, default=REPORTS_DIR / "frontier", help="(default: reports/frontier)"
    )
    add_fit_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    console = Console(width=max(Console().width, 140))  # the demo table needs 140
    try:
        if args.command in ("produce-hlo", "demo", "sweep"):
            models_dir()  # at once, not after the first model's run
        if args.command == "produce-hlo":
            try:
                kind, target = parse_device(args.device)
                autotune_results = check_autotune_results(args.gpu_autotune_results, kind)
            except ValueError as e:
                parser.error(str(e))
            out = produce_hlo(_spec(args), force=args.force)
            console.print(f"{out / 'step.hlo'}")
            if target:
                report = predicted_peak(
                    _spec(args), target, out / f"gpu_{target}", autotune_results
                )
                console.print(
                    f"{target}: predicted allocation {report.allocation_before_bytes:,} bytes "
                    f"(buffer assignment; HeapSimulator {report.heap_sim_before_bytes:,}), "
                    f"input {before_optimizations(_spec(args))}"
                )
                console.print(f"kernels: {kernels_text(report)}")
        elif args.command == "demo":
            from remat_harness.demo import run_demo, run_gpu_demo

            if not 0 < args.budget_fraction <= 1:
                parser.error("--budget-fraction must be in (0, 1]")
            if args.gpu_target:
                # Checked before the CPU cells run, not after them.
                try:
                    check_gpu_target(args.gpu_target)
                except ValueError as e:
                    parser.error(f"--gpu-target: {e}")
            rows = run_demo(
                _spec(args),
                console,
                budget_fraction=args.budget_fraction,
                check_numerics=not args.no_numerics,
                out_dir=args.out,
            )
            if args.gpu_target:
                rows += run_gpu_demo(
                    _spec(args),
                    console,
                    args.gpu_target,
                    budget_fraction=args.budget_fraction,
                    out_dir=args.out,
                )
            if any(r.report is None for r in rows):
                return 1
        elif args.command == "sweep":
            return _sweep(args, console)
        elif args.command == "fuzz":
            return _fuzz(args, console)
        elif args.command == "optimum":
            return _optimum(args, parser, console)
        elif args.command == "frontier":
            return _frontier(args, parser, console)
        elif args.command == "fit":
            return run_fit(args, console)
        elif args.command == "report":
            return _report(args.results, args.out or args.results.parent, args.title, console)
    except (DumpError, ToolMissing, SweepError, FitError) as e:
        console.print(f"[red]error:[/] {e}", soft_wrap=True)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
