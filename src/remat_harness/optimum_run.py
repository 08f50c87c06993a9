"""`remat-harness optimum`: each algorithm beside the MILP optimum of the
same schedule, at the same budgets.

For a module (an HLO file, or a model of the harness by name) the engine
exports its graph (`hlo-remat --export-graph`) and runs each algorithm at
each budget. The MILP (optimum.py) then gives, in the planner's figure:

- `optimum_flops`: the least extra FLOPs that meet the budget;
- `optimum_at_reached`: the least extra FLOPs that reach the peak the
  algorithm reached: the algorithm's distance to optimal at equal memory
  is its extra FLOPs minus this (`gap`);
- `least_any_plan`: the other side (optimum_bound.py), the least extra
  FLOPs any recomputation plan on the schedule needs to meet the budget in
  the platform's own figure, or "impossible" where none can.

Budgets are fractions of what the platform allocates before the pass (as in
the sweep) or byte sizes. The MILP counts in the planner's figure (the
tracker's live bytes, which count no in-place reuse and so are at or above
HeapSimulator's and buffer assignment's on the same schedule): a budget is
given to it as the same share of the planner's count before the pass, and
`optimum_at_reached` compares at the very planner peak the run reached.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from remat_harness.bound_compass import compare_runs, compass_text
from remat_harness.engine import RematFlags, run_hlo_remat
from remat_harness.gpu import before_optimizations, gpu_flags
from remat_harness.hlo_dump import ModelSpec, produce_hlo
from remat_harness.optimum import Graph, OptimumResult, load_graph, solve_min_flops
from remat_harness.optimum_bound import BoundResult, solve_lower_bound
from remat_harness.remat_report import RematReport

DEFAULT_ALGORITHMS = ("standard", "path", "standardcompress", "xla")


class OptimumError(RuntimeError):
    """The module could not be exported or solved."""


@dataclass(frozen=True)
class OptimumPlan:
    module: str  # an HLO file, or a model name (ModelSpec.parse)
    platform: str  # "cpu" or "gpu"
    gpu_target: str | None
    budgets: tuple[str, ...]  # "0.5" (of the allocation before) or "512M"
    algorithms: tuple[str, ...]
    depth: int
    time_limit_s: float
    out_dir: Path
    max_extra_flops: str = "none"  # the engine's compute cap, as in the sweep


def step_hlo(spec: ModelSpec, platform: str) -> Path:
    """The HLO file of a model's step the engine reads on `platform`: the
    scheduled CPU step, or the pre-optimization module for a GPU."""
    return before_optimizations(spec) if platform == "gpu" else produce_hlo(spec) / "step.hlo"


def resolve_module(module: str, platform: str, batch_size: int = 64) -> Path:
    """The HLO file the engine reads: `module` if it is a file, else the step
    of the model it names (step_hlo) at `batch_size`."""
    path = Path(module)
    if path.exists():
        return path
    try:
        spec = ModelSpec.parse(module, batch_size=batch_size)
    except ValueError as e:
        raise OptimumError(f"--module {module}: not a file, and {e}") from e
    return step_hlo(spec, platform)


def _platform_flags(plan: OptimumPlan) -> list[str]:
    return gpu_flags(plan.gpu_target or "h100_sxm") if plan.platform == "gpu" else []


def planner_budget(report: RematReport) -> int:
    """The run's budget in the planner's figure: the same share of the
    planner's count before the pass as the budget is of the allocation
    (the planner counts no in-place reuse: the same bytes would ask more)."""
    before = report.allocated("before") or 1
    return int(report.budget_bytes * report.peak_before_bytes / before)


def optimum_at_reached(
    graph: Graph, report: RematReport, depth: int, time_limit_s: float
) -> tuple[OptimumResult, float, float | None]:
    """The MILP's least extra FLOPs to reach the planner peak `report`
    reached, the run's own extra FLOPs, and their difference (the gap to
    optimum; None when the MILP found no plan that reaches that peak)."""
    extra = report.extra_flops_fraction
    result = solve_min_flops(graph, report.peak_after_bytes, depth, time_limit_s)
    fraction = result.extra_flops_fraction
    return result, extra, (extra - fraction) if fraction is not None else None


# Differences between a plan's runs and the bound's kept in a record.
COMPASS_ROWS = 12


def run_optimum(plan: OptimumPlan, console: Console) -> list[dict]:
    hlo = resolve_module(plan.module, plan.platform)
    plan.out_dir.mkdir(parents=True, exist_ok=True)
    graph_path = plan.out_dir / "graph.json"
    records: list[dict] = []
    graph = None
    for budget in plan.budgets:
        optimum_at_budget: OptimumResult | None = None
        least_any_plan: BoundResult | None = None
        for algorithm in plan.algorithms:
            cell = f"{algorithm}_{budget}"
            flags = [
                *_platform_flags(plan),
                *RematFlags(budget, algorithm, None, plan.max_extra_flops).args(),
            ]
            if graph is None:
                flags.append(f"--export-graph={graph_path}")
            run = run_hlo_remat(hlo, flags, plan.out_dir / f"{cell}.json", timeout_s=1800)
            if run.returncode != 0 or run.report is None:
                last = run.stderr.strip().splitlines()[-1:] or ["no message"]
                records.append({"algorithm": algorithm, "budget": budget, "error": last[0]})
                continue
            report = run.report
            if graph is None:
                graph = load_graph(graph_path)
            if optimum_at_budget is None:
                optimum_at_budget = solve_min_flops(
                    graph, planner_budget(report), plan.depth, plan.time_limit_s
                )
                least_any_plan = solve_lower_bound(
                    graph, report.budget_bytes, time_limit_s=plan.time_limit_s
                )
            at_reached, extra, gap = optimum_at_reached(
                graph, report, plan.depth, plan.time_limit_s
            )
            reached = report.peak_after_bytes
            # What the plan runs again that the bound's solution does not.
            beyond_bound = (
                compare_runs(graph, least_any_plan, report.decisions)[:COMPASS_ROWS]
                if least_any_plan
                else []
            )
            records.append(
                {
                    "module": graph.module,
                    "hlo": str(hlo),
                    "platform": plan.platform,
                    "gpu_target": plan.gpu_target,
                    "algorithm": algorithm,
                    "budget": budget,
                    "budget_bytes": report.budget_bytes,
                    "planner_budget_bytes": planner_budget(report),
                    "budget_met": report.budget_met,
                    "memory_figure": report.memory_figure,
                    "allocation_before_bytes": report.allocated("before"),
                    "allocation_after_bytes": report.allocated("after"),
                    "planner_peak_before_bytes": graph.peak_bytes,
                    "planner_peak_after_bytes": reached,
                    "extra_flops_fraction": extra,
                    "optimum_flops": optimum_at_budget.as_dict(),
                    "optimum_at_reached": at_reached.as_dict(),
                    "least_any_plan": least_any_plan.as_dict() if least_any_plan else None,
                    "gap_to_optimum": gap,
                    "beyond_bound": [d.as_dict() for d in beyond_bound],
                }
            )
            console.print(_line(records[-1]), soft_wrap=True)
    with (plan.out_dir / "optimum.jsonl").open("w") as out:
        for record in records:
            out.write(json.dumps(record) + "\n")
    return records


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:+.2f}%"


def solve_text(solve: dict) -> str:
    """An optimum as a table cell: exact, an upper bound (stopped), or why none."""
    if not solve["solved"]:
        if solve["status"] == "Infeasible":
            return "infeasible"
        return f"no plan in {solve['seconds']:.0f} s"
    text = _percent(solve["extra_flops_fraction"])
    return text if solve["optimal"] else f"≤{text} (stopped, {solve['seconds']:.0f} s)"


def bound_text(bound: dict | None) -> str:
    """The least any plan needs, as a table cell."""
    if not bound:
        return "-"
    if bound["impossible"]:
        return "impossible"
    if bound["extra_flops_fraction"] is None:
        return f"no bound in {bound['seconds']:.0f} s"
    text = "≥" + _percent(bound["extra_flops_fraction"])
    return text if bound["proven"] else f"{text} (stopped, {bound['seconds']:.0f} s)"


def gap_text(record: dict) -> str:
    """The run's extra FLOPs less the optimum's at the same planner peak; a
    stopped solve gives a range (its incumbent and its dual bound)."""
    solve = record["optimum_at_reached"]
    if record.get("gap_to_optimum") is None:
        return "-"
    if solve["optimal"]:
        return _percent(record["gap_to_optimum"])
    extra = record["extra_flops_fraction"]
    low = _percent(record["gap_to_optimum"])
    dual = solve.get("dual_bound")
    flops = solve.get("module_flops") or 0
    if dual is None or not flops:
        return f"≥{low}"
    return f"{low} .. {_percent(extra - dual / flops)}"


def _ratio(record: dict) -> str:
    return f"{record['allocation_after_bytes'] / record['allocation_before_bytes']:.3f}"


def _line(record: dict) -> str:
    return (
        f"{record['algorithm']} at {record['budget']}: {_ratio(record)} of the allocation, "
        f"{_percent(record['extra_flops_fraction'])} FLOPs; optimum at the budget "
        f"{solve_text(record['optimum_flops'])}, at the same planner peak "
        f"{solve_text(record['optimum_at_reached'])}; any plan at the budget "
        f"{bound_text(record.get('least_any_plan'))}; runs again, plan/bound: "
        f"{compass_text(record.get('beyond_bound', []))}"
    )


COLUMNS = (
    "budget",
    "algorithm",
    "after/before",
    "met",
    "+FLOPs",
    "optimum at budget",
    "optimum at same peak",
    "gap",
    "least any plan needs",
)


def _cells(r: dict) -> list[str]:
    if "error" in r:
        return [r["budget"], r["algorithm"], "error", "", "", "", "", r["error"][:80], ""]
    return [
        r["budget"],
        r["algorithm"],
        _ratio(r),
        "yes" if r["budget_met"] else "no",
        _percent(r["extra_flops_fraction"]),
        solve_text(r["optimum_flops"]),
        solve_text(r["optimum_at_reached"]),
        gap_text(r),
        bound_text(r.get("least_any_plan")),
    ]


def render_table(records: list[dict], title: str) -> Table:
    table = Table(title=title)
    for column in COLUMNS:
        table.add_column(column)
    for r in records:
        table.add_row(*_cells(r))
    return table


def markdown_table(records: list[dict]) -> str:
    """Rows of `records`, each labelled by its model and device when it has them."""
    lines = ["| model | device | " + " | ".join(COLUMNS) + " |", "|---" * (len(COLUMNS) + 2) + "|"]
    for r in records:
        head = [str(r.get("model", r.get("module", "-"))), str(r.get("device", "-"))]
        lines.append("| " + " | ".join(head + _cells(r)) + " |")
    return "\n".join(lines) + "\n"
