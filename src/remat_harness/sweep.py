"""Sweeps: models x modes x algorithms x schedulers x budgets, one JSON line
per cell, resumable.

A cell is finished once its line is in the results file, whether it passed
or failed (failures carry their message); a rerun skips finished cells, and
`--retry-failed` runs the failed ones again. Each model runs once per mode in
its own subprocess (its HLO is cached under .cache/hlo); each cell is one
`hlo-remat` subprocess, so a crash or a timeout costs that cell only.

Every record carries the engine's build fingerprint (`hlo-remat --version`);
a results file is never resumed by another build (`--new-build` sets the old
file aside and starts afresh).

A passed cell's record carries the path of its JSON report ("report"), as a
GPU model record does its step's prediction without the pass: `load_report`
reads it as a RematReport for figures the record leaves out. The demo, the
GPU table and the scaling bench are sweeps rendered their own way.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from remat_harness.cluster import ClusterSpec, Outcome, run_on_cluster
from remat_harness.engine import RematFlags, baseline_peak, engine_build, run_hlo_remat
from remat_harness.flag_table import BudgetError, algorithms, resolve_budgets, schedulers
from remat_harness.gpu import (
    PREDICTED_REPORT,
    before_optimizations,
    check_autotune_results,
    gpu_flags,
    parse_device,
    predicted_peak,
)
from remat_harness.hlo_dump import (
    DumpError,
    ModelSpec,
    produce_hlo,
    run_model,
    step_modules,
)
from remat_harness.remat_report import RematReport
from remat_harness.tf_runtime import gpu_available, tensorflow_is_patched

# The schedulers the demo and the heuristics table compare: all but "given",
# which keeps the order the dump came with instead of choosing one.
UNCOMPARED_SCHEDULERS = ("given",)


def compared_schedulers() -> tuple[str, ...]:
    """The engine's schedulers that choose an order, in the engine's order."""
    return tuple(s for s in schedulers() if s not in UNCOMPARED_SCHEDULERS)


class SweepError(ValueError):
    """A sweep asked for something that does not exist."""


class BuildMismatch(SweepError):
    """A results file holds records of another engine build."""


def canonical_name(value: str, valid: tuple[str, ...], what: str) -> str:
    """`value` as `valid` spells it, whatever its case; SweepError if none."""
    for name in valid:
        if value.lower() == name.lower():
            return name
    raise SweepError(f"{what} {value!r} is not valid; choose from {', '.join(valid)}")


@dataclass(frozen=True)
class Cell:
    model: ModelSpec
    algorithm: str
    scheduler: str
    budget: str  # "0.5" is a fraction of the baseline peak; "512M" is bytes
    size_function: str = "plain"
    patched: bool = False  # run the model on a patched TensorFlow, not hlo-remat
    # "cpu": the step's XLA:CPU module; "gpu:<target>": the step compiled
    # deviceless for that GPU (predicted memory).
    device: str = "cpu"

    @property
    def key(self) -> str:
        parts = [self.model.key, self.algorithm, self.scheduler, self.budget, self.size_function]
        parts += ["patched"] if self.patched else []
        return "|".join(parts + ([self.device] if self.device != "cpu" else []))

    def fields(self) -> dict:
        """What identifies the cell in its record, passed or failed."""
        return {
            "key": self.key,
            "kind": "patched" if self.patched else "offline",
            "model": self.model.key,
            "mode": self.model.mode,
            "resnet_size": self.model.resnet_size,
            "algorithm": self.algorithm,
            "scheduler": self.scheduler,
            "budget": self.budget,
            "size_function": self.size_function,
            "device": self.device,
        }


@dataclass
class SweepPlan:
    models: list[ModelSpec]
    algorithms: list[str]
    schedulers: list[str]
    budgets: list[str]
    size_function: str = "plain"
    check_numerics: bool = True
    timeout_s: float = 600
    patched: bool = False
    time_runs: int = 0  # hlo-remat --time N: step time before/after; 0 skips it
    device: str = "cpu"  # or "gpu:<target>"
    # The max_extra_flops flag's value; "" leaves the engine's default.
    max_extra_flops: str = ""
    # The frontier_cache flag's folder: the budgets of one module after the
    # first are answered from its kept frontier (pass times then are those
    # of a compile that finds it). "": none.
    frontier_cache: str = ""
    # Seconds per MILP solve for each cell's gap to optimum (optimum_run.py);
    # 0: not solved.
    optimum_time_limit_s: float = 0
    # GPU devices: XLA autotune results recorded on the user's GPU, so that
    # the compile picks its kernels; "" keeps XLA's defaults.
    gpu_autotune_results: str = ""
    cells: list[Cell] = field(init=False)

    def __post_init__(self) -> None:
        # Names in any case, as hlo-remat takes them ("dfs"), kept as the
        # engine spells them.
        valid_algorithms, valid_schedulers = algorithms(), schedulers()
        self.algorithms = [
            canonical_name(a, valid_algorithms, "algorithm") for a in self.algorithms
        ]
        self.schedulers = [
            canonical_name(s, valid_schedulers, "scheduler") for s in self.schedulers
        ]
        for name, given, valid in (
            ("algorithm", self.algorithms, valid_algorithms),
            ("scheduler", self.schedulers, valid_schedulers),
        ):
            for value in given:
                if value not in valid:
                    raise SweepError(
                        f"{name} {value!r} is not valid; choose from {', '.join(valid)}"
                    )
        check_budgets(self.budgets)
        if self.time_runs < 0:
            raise SweepError(f"time runs {self.time_runs}: give 0 (no timing) or more")
        try:
            kind, _ = parse_device(self.device)
        except ValueError as e:
            raise SweepError(str(e)) from e
        if kind == "gpu" and (self.patched or self.time_runs):
            raise SweepError(
                f"device {self.device}: predicted GPU memory comes from the deviceless "
                "compile; --patched and --time run the model or the module and need cpu"
            )
        try:
            check_autotune_results(self.gpu_autotune_results, kind)
        except ValueError as e:
            raise SweepError(str(e)) from e
        self.cells = [
            Cell(m, a, s, b, self.size_function, self.patched, self.device)
            for m in self.models
            for a in self.algorithms
            for s in self.schedulers
            for b in self.budgets
        ]


def sweep_budgets(budgets: list[str], baseline: int) -> list[int]:
    """Budgets as the bytes the pass plans for on a module of `baseline`
    bytes, as the engine resolves them; SweepError with the engine's message."""
    try:
        return resolve_budgets(budgets, baseline)
    except BudgetError as e:
        raise SweepError(str(e)) from None


def budget_bytes(budget: str, baseline: int) -> int:
    """One budget as sweep_budgets resolves it."""
    return sweep_budgets([budget], baseline)[0]


def check_budgets(budgets: list[str]) -> None:
    """SweepError for the first budget the engine refuses, before any run."""
    sweep_budgets(budgets, 1000)


def load_results(path: Path) -> dict[str, dict]:
    """Finished cells by key; a torn last line (killed mid-write) is ignored."""
    done: dict[str, dict] = {}
    if not path.exists():
        return done
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "key" in record:
            done[record["key"]] = record
    return done


def _append(path: Path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(json.dumps(record, sort_keys=True) + "\n")


class ModelCache:
    """One model run per (model, mode): its step module and baseline peak. On
    a GPU device the module is the step's pre-optimization HLO and the
    baseline the GPU pipeline's predicted peak. A failure is kept too: the
    model's other cells fail with it without running it again."""

    def __init__(self, work_dir: Path, device: str = "cpu", autotune_results: str = "") -> None:
        self.work_dir = work_dir
        self.device, self.gpu_target = parse_device(device)
        self.autotune_results = autotune_results
        self._hlo: dict[str, Path | Exception] = {}
        self._baseline: dict[str, int | Exception] = {}
        self.gpu_reports: dict[str, RematReport] = {}

    def step(self, spec: ModelSpec) -> Path:
        if spec.key not in self._hlo:
            try:
                self._hlo[spec.key] = (
                    before_optimizations(spec)
                    if self.gpu_target
                    else produce_hlo(spec) / "step.hlo"
                )
            except (DumpError, subprocess.TimeoutExpired, OSError) as e:
                self._hlo[spec.key] = e
        found = self._hlo[spec.key]
        if isinstance(found, Exception):
            raise found
        return found

    def baseline(self, spec: ModelSpec) -> int:
        if spec.key not in self._baseline:
            try:
                self._baseline[spec.key] = self._measure(spec)
            except Exception as e:  # noqa: BLE001 - raised again for each of its cells
                self._baseline[spec.key] = e
        found = self._baseline[spec.key]
        if isinstance(found, Exception):
            raise found
        return found

    def _measure(self, spec: ModelSpec) -> int:
        if self.gpu_target:
            report = predicted_peak(
                spec, self.gpu_target, self.work_dir / spec.key, self.autotune_results
            )
            self.gpu_reports[spec.key] = report
            return report.allocated("before")
        return baseline_peak(self.step(spec), self.work_dir / spec.key)

    def gpu_report_path(self, spec: ModelSpec) -> Path:
        """Where the GPU pipeline's report of the step without the pass is."""
        return self.work_dir / spec.key / PREDICTED_REPORT


def model_key(spec: ModelSpec, device: str) -> str:
    return f"model|{spec.key}" + (f"|{device}" if device != "cpu" else "")


def xla_total_bytes(module_file: Path) -> int | None:
    """'Total bytes used' of XLA's memory-usage report beside a dumped module
    (the CPU buffer assignment's size), or None when XLA wrote none."""
    report = module_file.with_name(module_file.name.replace(".txt", "-memory-usage-report.txt"))
    if not report.exists():
        return None
    for line in report.read_text().splitlines():
        if line.startswith("Total bytes used:"):
            return int(line.split(":", 1)[1].split()[0])
    return None


def model_record(spec: ModelSpec, cache: ModelCache) -> dict:
    """What the model run itself showed: every module of the step with its
    HeapSimulator peak (auto-jit: one per cluster), step time and losses."""
    hlo_dir = produce_hlo(spec)
    modules = []
    for path in step_modules(hlo_dir / "dump"):
        peak = baseline_peak(path, cache.work_dir / spec.key / "modules")
        modules.append(
            {
                "file": path.name,
                "heap_sim_peak_bytes": peak,
                "xla_total_bytes": xla_total_bytes(path),
            }
        )
    run = json.loads((hlo_dir / "run.json").read_text())
    device = f"gpu:{cache.gpu_target}" if cache.gpu_target else "cpu"
    gpu: dict = {}
    if cache.gpu_target:
        cache.baseline(spec)
        report = cache.gpu_reports[spec.key]
        gpu = {
            "gpu_target": cache.gpu_target,
            "predicted_gpu_peak_bytes": report.allocated("before"),
            "gpu_buffer_assignment_bytes": report.buffer_assignment_before_bytes,
            "gpu_floor_bytes": report.floor_bytes,
            "multi_output_fusions": report.multi_output_fusions,
            "report": str(cache.gpu_report_path(spec).resolve()),
        }
    return {
        "key": model_key(spec, device),
        "device": device,
        **gpu,
        "kind": "model",
        "status": "ok",
        **asdict(spec),
        "model": spec.key,
        "modules": modules,
        "largest_module_peak_bytes": max((m["heap_sim_peak_bytes"] for m in modules), default=0),
        "sum_module_peaks_bytes": sum(m["heap_sim_peak_bytes"] for m in modules),
        "xla_total_bytes": [m["xla_total_bytes"] for m in modules],
        "step_time_median_s": run.get("step_time_median_s"),
        "losses": run.get("losses"),
    }


def run_cell(cell: Cell, cache: ModelCache, plan: SweepPlan) -> dict:
    record = cell.fields()
    hlo = cache.step(cell.model)
    # The engine resolves the budget against the module's memory before the
    # pass, and reports both.
    remat = RematFlags(
        cell.budget,
        cell.algorithm,
        cell.scheduler,
        plan.max_extra_flops or None,
        frontier_cache=plan.frontier_cache or None,
    )
    flags = [*remat.args(), "--size-function", cell.size_function]
    if plan.time_runs:
        flags += ["--time", str(plan.time_runs)]
    if cache.gpu_target:
        flags += gpu_flags(cache.gpu_target, cache.autotune_results)
    report_path = (
        cache.work_dir / cell.model.key / "reports" / (cell.key.replace("|", ".") + ".json")
    )
    # XLA:CPU cannot run the cuDNN/cuBLAS calls of a GPU module.
    numerics = plan.check_numerics and not cache.gpu_target
    graph_path = report_path.with_suffix(".graph.json")
    if plan.optimum_time_limit_s > 0:
        flags.append(f"--export-graph={graph_path}")
    run = run_hlo_remat(hlo, flags, report_path, check_numerics=numerics, timeout_s=plan.timeout_s)
    if run.returncode != 0 or run.report is None:
        lines = run.stderr.strip().splitlines()
        raise RuntimeError(lines[-1] if lines else f"hlo-remat exited {run.returncode}")
    r = run.report
    if plan.optimum_time_limit_s > 0 and graph_path.exists():
        record.update(_gap_fields(graph_path, r, plan.optimum_time_limit_s))
    record.update(
        status="ok",
        baseline_bytes=r.allocated("before"),
        budget_bytes=r.budget_bytes,
        report=str(report_path.resolve()),
        heap_sim_before_bytes=r.heap_sim_before_bytes,
        heap_sim_scheduled_bytes=r.heap_sim_scheduled_bytes,
        heap_sim_after_bytes=r.heap_sim_after_bytes,
        memory_figure=r.memory_figure,
        allocation_before_bytes=r.allocated("before"),
        allocation_after_bytes=r.allocated("after"),
        ratio=r.ratio,
        floor_bytes=r.floor_bytes,
        floor_at=r.floor_at,
        floor_ratio=r.allocated("after") / max(r.floor_bytes, 1),
        budget_met=r.budget_met,
        extra_flops_pct=r.extra_flops_pct,
        stopped_by_flops_cap=r.stopped_by_flops_cap,
        pass_seconds=r.pass_seconds,
        numerics=r.numerics,
        scheduler_chosen=r.scheduler_chosen,
        recomputed=r.recomputed,
        compressed=r.compressed,
        undone=r.undone,
        out_of_line=r.out_of_line,
        hoisted=r.hoisted,
        instructions_added=r.instructions_added,
        note=r.note,
        step_time_before_s=r.step_time_before_s,
        step_time_after_s=r.step_time_after_s,
        step_time_ratio=r.step_time_ratio,
    )
    return record


def load_report(record: dict) -> RematReport | None:
    """The RematReport a passed record points to (a cell's run; a GPU model
    record's step without the pass); None for a failed record, one without a
    report, or a report no longer there (a remote worker's)."""
    path = record.get("report")
    if record.get("status") != "ok" or not path or not Path(path).is_file():
        return None
    return RematReport.load(Path(path))


def failure(record: dict) -> str:
    """A failed record's message as the engine or the model run gave it (a
    RuntimeError's class name, which says nothing, left out)."""
    return str(record.get("error", "")).removeprefix("RuntimeError: ")


def _gap_fields(graph_path: Path, report: RematReport, time_limit_s: float) -> dict:
    """The cell beside the MILP optimum at the planner peak it reached."""
    from remat_harness.optimum import load_graph
    from remat_harness.optimum_run import optimum_at_reached

    result, _, gap = optimum_at_reached(load_graph(graph_path), report, 2, time_limit_s)
    fraction = result.extra_flops_fraction
    return {
        "optimum_status": result.status,
        "optimum_extra_flops_pct": None if fraction is None else 100.0 * fraction,
        "optimum_mip_gap": result.mip_gap,
        "gap_to_optimum_pct": None if gap is None else 100.0 * gap,
    }


def run_patched_cell(cell: Cell, cache: ModelCache, plan: SweepPlan) -> dict:
    """The model itself, run by a patched TensorFlow with the remat flags: the
    real peak (GPU: the allocator's; CPU: XLA's buffer assignment of the
    step's largest module, which the CPU hook changes)."""
    ok, why = tensorflow_is_patched()
    if not ok:
        raise SweepError(why)
    on_gpu, _ = gpu_available()
    device = "gpu" if on_gpu else "cpu"
    baseline = cache.baseline(cell.model)
    budget = budget_bytes(cell.budget, baseline)
    flags = RematFlags(
        budget, cell.algorithm, cell.scheduler, frontier_cache=plan.frontier_cache or None
    ).xla_flags()
    work = cache.work_dir / cell.model.key / "patched" / cell.key.replace("|", ".")
    before = run_model(cell.model, work / "before", device=device)
    after = run_model(cell.model, work / "after", extra_xla_flags=flags, device=device)

    def peak(result: dict, dump: Path) -> int | None:
        if device == "gpu":
            return result.get("gpu_peak_bytes")
        modules = step_modules(dump)
        return xla_total_bytes(modules[0]) if modules else None

    return {
        **cell.fields(),
        "status": "ok",
        "device": device,
        "budget_bytes": budget,
        "peak_before_bytes": peak(before, work / "before"),
        "peak_after_bytes": peak(after, work / "after"),
        "step_time_ratio": after["step_time_median_s"] / before["step_time_median_s"],
        "losses_before": before["losses"],
        "losses_after": after["losses"],
    }


def check_build(results: Path, build: str, new_build: bool, console: Console) -> None:
    """Refuses to resume `results` with another build; with `new_build`, sets
    the old file aside (results.<old build>.jsonl) so the new one starts empty."""
    builds = sorted({r.get("build", "unknown") for r in load_results(results).values()})
    others = [b for b in builds if b != build]
    if not others:
        return
    if not new_build:
        raise BuildMismatch(
            f"{results} holds results of engine build {', '.join(others)}; this hlo-remat is "
            f"build {build}. Results of two builds are never mixed: rerun with --new-build "
            "(the old results are set aside and every cell runs again), or give a new --results "
            "file."
        )
    aside = results.with_name(f"{results.stem}.{'+'.join(others)}{results.suffix}")
    results.rename(aside)
    console.print(f"build {build} differs from {', '.join(others)}: old results moved to {aside}")


def run_sweep(
    plan: SweepPlan,
    results: Path,
    console: Console,
    retry_failed: bool = False,
    cell_runner: Callable[[Cell, ModelCache, SweepPlan], dict] = run_cell,
    new_build: bool = False,
    build: str | None = None,
    cluster: ClusterSpec | None = None,
    fresh: bool = False,
) -> list[dict]:
    """Runs every unfinished cell; returns all records of the plan. `build` is
    the engine's fingerprint (default: asked of hlo-remat). With `cluster`,
    the cells run as tasks on a Dask cluster (cluster.py). `fresh` drops the
    results file first, so that every cell runs now (the demo, the GPU table
    and the bench show this run's engine and timings, never an older run's)."""
    if fresh:
        results.unlink(missing_ok=True)
    build = build or engine_build()
    check_build(results, build, new_build, console)
    done = load_results(results)
    cache = ModelCache(
        results.parent / (results.stem + ".work"), plan.device, plan.gpu_autotune_results
    )

    def finished(key: str) -> bool:
        record = done.get(key)
        return record is not None and (record.get("status") == "ok" or not retry_failed)

    todo = [c for c in plan.cells if not finished(c.key)]
    models = list(dict.fromkeys(c.model for c in plan.cells))
    todo_models = [m for m in models if not finished(model_key(m, plan.device))]
    steps = len(todo) + len(todo_models)
    dumps = f" after {len(todo_models)} model dump(s)" if todo_models else ""
    console.print(
        f"{len(plan.cells)} cells, {len(plan.cells) - len(todo)} already in {results}; "
        f"running {len(todo)}{dumps}: {steps} steps"
    )
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console) as progress:
        task = progress.add_task("sweep", total=steps)
        counted = 0

        def finished_step(key: str, count: int = 1) -> None:
            # A log file (no terminal) gets one plain line per step; the bar
            # alone would leave it only the last frame.
            nonlocal counted
            counted += count
            progress.advance(task, count)
            if not console.is_terminal:
                status = done.get(key, {}).get("status", "")
                console.print(f"[{counted}/{steps}] {key} {status}".rstrip())

        for spec in todo_models:
            progress.update(task, description=f"model {spec.key}")
            identity = {"key": model_key(spec, plan.device), "kind": "model", "model": spec.key}
            _run_one(identity, lambda s=spec: model_record(s, cache), results, done, build)
            finished_step(identity["key"])
        if cluster is not None and cluster.enabled and todo:
            where = cluster.address or f"{cluster.workers} local workers"
            progress.update(task, description=f"{len(todo)} cells on {where}")
            _run_on_cluster(todo, cache, plan, cell_runner, cluster, results, done, build)
            finished_step(f"{len(todo)} cells on {where}", len(todo))
            todo = []
        for cell in todo:
            progress.update(task, description=cell.key)
            runner = run_patched_cell if cell.patched else cell_runner
            _run_one(
                cell.fields(), lambda c=cell, r=runner: r(c, cache, plan), results, done, build
            )
            finished_step(cell.key)
    return [
        done[k]
        for k in [model_key(m, plan.device) for m in models] + [c.key for c in plan.cells]
        if k in done
    ]


def _run_one(
    identity: dict, work: Callable[[], dict], results: Path, done: dict[str, dict], build: str
) -> None:
    start = time.monotonic()
    try:
        record, error = work(), None
    except Exception as e:  # noqa: BLE001 - any failure is this cell's, recorded
        record, error = None, f"{type(e).__name__}: {e}".strip()
    _record(identity, (record, error, time.monotonic() - start), results, done, build)


def _record(
    identity: dict, outcome: Outcome, results: Path, done: dict[str, dict], build: str
) -> None:
    """Appends a cell's record, or its failure, to the results file."""
    record, error, seconds = outcome
    if record is None:
        record = {**identity, "status": "failed", "error": (error or "")[-2000:]}
    record["seconds"] = round(seconds, 3)
    record["build"] = build
    _append(results, record)
    done[identity["key"]] = record


def _run_on_cluster(
    todo: list[Cell],
    cache: ModelCache,
    plan: SweepPlan,
    cell_runner: Callable[[Cell, ModelCache, SweepPlan], dict],
    cluster: ClusterSpec,
    results: Path,
    done: dict[str, dict],
    build: str,
) -> None:
    # Each model's step once, here, and the baseline a patched run's budget
    # needs; the workers get them with the cache. A model that fails here
    # fails its cells there.
    patched = {c.model.key for c in todo if c.patched}
    for spec in dict.fromkeys(c.model for c in todo):
        try:
            cache.step(spec)
            if spec.key in patched:
                cache.baseline(spec)
        except Exception:  # noqa: BLE001 - recorded by each of its cells
            pass
    by_key = {c.key: c for c in todo}
    tasks = [
        (c.key, partial(run_patched_cell if c.patched else cell_runner, c, cache, plan))
        for c in todo
    ]
    for key, outcome in run_on_cluster(cluster, tasks, build):
        _record(by_key[key].fields(), outcome, results, done, build)


def parse_models(
    sizes: Iterable[str], modes: Iterable[str], version: int, batch: int
) -> list[ModelSpec]:
    """Models as ModelSpec.parse names them; ResNets must be CIFAR depths."""
    specs = []
    for size in sizes:
        for mode in modes:
            try:
                spec = ModelSpec.parse(size, batch, mode, version)
            except ValueError as e:
                raise SweepError(str(e)) from e
            depth = spec.resnet_size
            if spec.model == "resnet" and (depth < 8 or (depth - 2) % 6):
                raise SweepError(
                    f"resnet size {depth}: CIFAR ResNets have depth 6n+2 (20, 32, 44, 56, 110)"
                )
            specs.append(spec)
    return specs
