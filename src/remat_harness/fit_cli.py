"""`remat-harness fit`: the command line of fit.py."""

from __future__ import annotations

import argparse
import functools
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

from rich.console import Console

from remat_harness.cluster import ClusterSession, ClusterSpec
from remat_harness.engine import engine_build
from remat_harness.fit import (
    DEFAULT_ALGORITHM,
    DEFAULT_MAX_EXTRA_FLOPS,
    DEFAULT_PRECISION,
    Card,
    FitError,
    FitResult,
    ModelSource,
    Probe,
    StepDumps,
    card_for,
    probe_batch,
    search,
)
from remat_harness.fit_report import fall_lines, gain_text, render_table, write_outputs
from remat_harness.flag_table import BudgetError, resolve_budgets
from remat_harness.gpu import check_gpu_target
from remat_harness.paths import REPORTS_DIR

POLICY_NAMES = {
    "f32": "float32",
    "float32": "float32",
    "bf16": "mixed_bfloat16",
    "mixed_bfloat16": "mixed_bfloat16",
}


def parse_memory(text: str) -> int:
    """ "40G", "40GB", "40GiB" or "81559M": powers of 1024, as nvidia-smi's
    MiB and the engine's sizes read."""
    try:
        # The engine reads sizes for its budget flag; a share of nothing is 1.
        value = resolve_budgets([text], memory_before=0)[0]
    except BudgetError:
        value = 0
    if value < (1 << 20):
        raise FitError(f"--memory {text}: expected a size such as 40G or 81559M")
    return value


def add_fit_parser(sub: argparse._SubParsersAction) -> None:
    fit = sub.add_parser(
        "fit",
        help="the largest batch of your Keras model on a named GPU, with and without the pass",
        description="Traces your model's training step (model.train_step under "
        "jit_compile) at each batch size it tries, compiles it for the GPU without one, and "
        "finds by doubling and bisection: (a) the largest batch that fits without the pass, "
        "(b) with the pass at <= --max-extra-flops, (c) with the pass at any cost. Fits: "
        "predicted allocation + margin <= the card's memory - TensorFlow's reserve. Writes "
        "OUT/fit.json and OUT/fit.png.",
    )
    fit.add_argument(
        "--model",
        required=True,
        help="pkg.module:build (a callable returning "
        "a compiled Keras model, or (model, (inputs, labels)) TensorSpecs with "
        "the batch None) or a .keras file",
    )
    fit.add_argument(
        "--input-shape",
        default="",
        help="one example's shape, e.g. 224,224,3 (default: the model's input shape)",
    )
    fit.add_argument(
        "--policy",
        default="f32",
        choices=sorted(POLICY_NAMES),
        help="Keras dtype policy (default: f32)",
    )
    fit.add_argument(
        "--gpu",
        default="h100_sxm",
        help="GPU target (hlo-remat --list-gpu-targets; default: h100_sxm)",
    )
    fit.add_argument(
        "--memory",
        default="",
        help="the card's memory where it differs from "
        "the target's, e.g. 40G (default: the target's)",
    )
    fit.add_argument(
        "--max-extra-flops",
        type=float,
        default=DEFAULT_MAX_EXTRA_FLOPS,
        help="the FLOPs cap of answer (b), a fraction of the step's "
        f"(default: {DEFAULT_MAX_EXTRA_FLOPS})",
    )
    fit.add_argument(
        "--algorithm",
        default=DEFAULT_ALGORITHM,
        help=f"the pass's algorithm (default: {DEFAULT_ALGORITHM})",
    )
    fit.add_argument("--start", type=int, default=16, help="the first batch tried (default: 16)")
    fit.add_argument(
        "--max-batch", type=int, default=1 << 16, help="the largest batch tried (default: 65536)"
    )
    fit.add_argument(
        "--precision",
        type=float,
        default=DEFAULT_PRECISION,
        help="stop when the largest batch that fits is known to this share of itself "
        f"(0: to one batch; default: {DEFAULT_PRECISION}, below the prediction's own error)",
    )
    fit.add_argument(
        "--jobs",
        type=int,
        default=0,
        help="compile up to N batches of a round at once here "
        "(default: one per core; 1: one after another)",
    )
    fit.add_argument(
        "--workers", type=int, default=0, help="compile on a local Dask cluster of N processes"
    )
    fit.add_argument(
        "--scheduler", default="", help="compile on a running Dask scheduler, tcp://HOST:8786"
    )
    fit.add_argument("--out", type=Path, default=REPORTS_DIR / "fit", help="(default: reports/fit)")


def _probe_record(
    hlo: Path, batch: int, card: Card, algorithm: str, cap: float, needs: frozenset[str]
) -> dict:
    """A probe as a cluster task's record."""
    return asdict(probe_batch(hlo, batch, card, algorithm, cap, needs))


def local_jobs(requested: int, batches: int, cores: int) -> int:
    """How many probes compile at once here: one per core (or `requested`),
    at most the round's batches."""
    return max(1, min(requested or cores, batches, cores))


def _longest_first(batches: list[tuple[int, frozenset[str]]]) -> list[tuple[int, frozenset[str]]]:
    """A round's probes in the order they are started: those with the pass
    first, larger batches first (they take longest), so that no long probe
    starts last while the other cores idle."""
    return sorted(batches, key=lambda bn: (bn[1] <= {"without"}, -bn[0]))


def _slots(args: argparse.Namespace, on_cluster: bool) -> int:
    """How many probes a round compiles at once (a scheduler's workers are
    not known here: one)."""
    if on_cluster:
        return max(1, args.workers)
    return local_jobs(args.jobs, 1 << 30, os.cpu_count() or 1)


def _runner(  # noqa: ANN202
    dumps: StepDumps,
    result: FitResult,
    cluster: ClusterSession | None,
    console: Console,
    jobs: int = 0,
):
    """Probes batches: here, up to `jobs` at once, or on the cluster."""

    def run(batches: list[tuple[int, frozenset[str]]]) -> list[Probe]:
        hlos = {}
        for batch, _ in batches:
            hlos[batch] = dumps.hlo(batch)
            console.print(f"batch {batch}: traced; compiling for {result.card.target} ...")
        args = (result.card, result.algorithm, result.max_extra_flops)
        if cluster is None:
            # The probes are engine processes: threads only wait on them.
            # Each plans on every core (the plan does not depend on it), so
            # a probe left running alone at a round's end has them all.
            at_once = local_jobs(jobs, len(batches), os.cpu_count() or 1)
            if at_once == 1:
                return [probe_batch(hlos[b], b, *args, needs) for b, needs in batches]
            with ThreadPoolExecutor(at_once) as pool:
                return list(
                    pool.map(
                        lambda bn: probe_batch(hlos[bn[0]], bn[0], *args, bn[1]),
                        _longest_first(batches),
                    )
                )
        tasks = [
            (str(b), functools.partial(_probe_record, hlos[b], b, *args, needs))
            for b, needs in batches
        ]
        probes = []
        for key, (record, error, _) in cluster.run(tasks, engine_build()):
            if record is None:
                raise RuntimeError(f"batch {key}: {error}")
            probes.append(Probe(**record))
        return probes

    return run


def _show(console: Console, limit: int):  # noqa: ANN202
    def show(p: Probe) -> None:
        def mark(what: str, nbytes: int | None, extra: float | None = None) -> str:
            if nbytes is None:
                return ""
            over = "" if nbytes <= limit else " (over)"
            cost = "" if extra is None else f" +{100 * extra:.1f}%"
            return f"; {what} {nbytes / 1e9:.2f} GB{over}{cost}"

        console.print(
            f"  batch {p.batch}{mark('without', p.without_bytes)}"
            f"{mark('capped', p.capped_bytes, p.capped_extra)}"
            f"{mark('any cost', p.any_cost_bytes, p.any_cost_extra)} [{p.seconds:.0f} s]"
        )
        if p.error:
            console.print(f"  batch {p.batch}: the pass failed, judged without it: {p.error}")

    return show


def run_fit(args: argparse.Namespace, console: Console) -> int:
    try:
        check_gpu_target(args.gpu)
    except ValueError as e:
        raise FitError(f"--gpu: {e}") from None
    if args.start < 1 or args.max_batch < args.start:
        raise FitError("--start must be >= 1 and --max-batch >= --start")
    if not 0 <= args.max_extra_flops:
        raise FitError(f"--max-extra-flops {args.max_extra_flops}: a fraction >= 0 such as 0.1")
    if not (args.model.endswith(".keras") or ":" in args.model):
        raise FitError(f"--model {args.model}: expected pkg.module:build or a .keras file")
    if args.model.endswith(".keras") and not Path(args.model).is_file():
        raise FitError(f"--model {args.model}: no such file")
    if args.jobs < 0:
        raise FitError(f"--jobs {args.jobs}: a number of probes >= 1 (0: one per core)")
    if not 0 <= args.precision < 0.5:
        raise FitError(f"--precision {args.precision}: a share in [0, 0.5) such as 0.01")
    memory = parse_memory(args.memory) if args.memory else None
    card = card_for(args.gpu, memory)
    source = ModelSource(args.model, POLICY_NAMES[args.policy], args.input_shape)
    result = FitResult(source, card, args.algorithm, args.max_extra_flops, args.precision)
    dumps = StepDumps(source)
    spec = ClusterSpec(args.workers, args.scheduler)
    cluster = ClusterSession(spec) if spec.enabled else None
    try:
        search(
            result,
            _runner(dumps, result, cluster, console, args.jobs),
            args.start,
            args.max_batch,
            _show(console, card.budget_bytes),
            slots=_slots(args, cluster is not None),
        )
    except RuntimeError as e:
        raise FitError(str(e).strip().splitlines()[-1]) from None
    finally:
        dumps.close()
        if cluster is not None:
            cluster.close()
    console.print(render_table(result))
    console.print(gain_text(result))
    for line in fall_lines(result):
        console.print(line)
    for path in write_outputs(result, args.out):
        console.print(str(path))
    return 0
