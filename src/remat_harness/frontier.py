"""The memory-compute frontier a module's budget is answered from
(patch_src/plan_frontier.h): hlo-remat --frontier writes it; this reads it,
runs it for a module, and plots peak against extra FLOPs with the budgets,
the floor and the proven lower bound beside it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from remat_harness.engine import RematFlags, run_hlo_remat  # noqa: E402
from remat_harness.flag_table import resolve_budgets  # noqa: E402
from remat_harness.gpu import gpu_flags  # noqa: E402
from remat_harness.optimum import load_graph  # noqa: E402
from remat_harness.optimum_bound import BoundResult, solve_lower_bound  # noqa: E402

MIB = 1 << 20


@dataclass(frozen=True)
class FrontierPoint:
    aim_bytes: int
    peak_bytes: int
    extra_flops: float
    kept: bool
    on_frontier: bool
    # A plan the lookup may choose: on the frontier, and lowering the start
    # by 1% or more (patch_src/plan_frontier.h, FrontierRules).
    usable: bool
    # The scheduler whose schedule the plan was made on, where it is not the
    # one the search started from (patch_src/other_schedules.h); else "".
    schedule: str = ""
    # A plan between two neighbours of the frontier: the compute cap (the
    # moves' own FLOPs) its sweep was made under
    # (patch_src/frontier_points.cc, FillWideSteps); None for an aim's plan.
    cap_flops: float | None = None
    # False: `path`'s plan of single recomputations at the floor aim
    # (patch_src/plan_search.h, PlanUnchainedAt).
    chains: bool = True


@dataclass(frozen=True)
class Frontier:
    module: str
    algorithm: str
    memory_figure: str
    allocation_before_bytes: int
    floor_bytes: int
    budget_bytes: int
    flops_before: float
    chosen: int | None
    start_bytes: int  # the schedule the search started from, before any plan
    points: tuple[FrontierPoint, ...]

    @classmethod
    def from_json(cls, data: dict) -> Frontier:
        field = data["frontier"]
        return cls(
            module=data["module"],
            algorithm=data["algorithm"],
            memory_figure=data["memory_figure"],
            allocation_before_bytes=data["allocation_before_bytes"],
            floor_bytes=data["floor_bytes"],
            budget_bytes=data["budget_bytes"],
            flops_before=data["flops_before"],
            chosen=field["chosen"],
            start_bytes=field["start_bytes"],
            points=tuple(FrontierPoint(**p) for p in field["points"]),
        )

    @classmethod
    def load(cls, path: Path) -> Frontier:
        return cls.from_json(json.loads(path.read_text()))

    def extra_pct(self, point: FrontierPoint) -> float:
        return self.extra_pct_of(point.extra_flops)

    def extra_pct_of(self, flops: float) -> float:
        return 100.0 * flops / max(self.flops_before, 1.0)

    def share(self, nbytes: int) -> float:
        """`nbytes` as a share of the figure before the pass."""
        return nbytes / max(self.allocation_before_bytes, 1)


def answer_budget(f: Frontier, budget_bytes: int) -> FrontierPoint | None:
    """The point a budget gets, as the engine's ChooseFromFrontier picks it
    (tests/test_frontier.py checks they agree): None when the start is within
    the budget or no point is usable; else the cheapest usable point within
    the budget, else the lowest."""
    if budget_bytes > 0 and f.start_bytes <= budget_bytes:
        return None
    usable = [p for p in f.points if p.usable]
    within = [p for p in usable if budget_bytes > 0 and p.peak_bytes <= budget_bytes]
    if within:
        return min(within, key=lambda p: (p.extra_flops, p.peak_bytes))
    return min(usable, key=lambda p: (p.peak_bytes, p.extra_flops), default=None)


@dataclass(frozen=True)
class FrontierRun:
    frontier: Frontier
    # Budget in bytes -> the least extra FLOPs any plan needs there
    # (optimum_bound.py: its extra_flops_fraction, None where impossible).
    bounds: dict[int, BoundResult]
    budgets: tuple[int, ...]


def run_frontier(
    hlo: Path,
    out_dir: Path,
    algorithm: str = "path",
    gpu_target: str | None = None,
    budgets: tuple[str, ...] = ("0.5", "0.33"),
    with_bound: bool = False,
    time_limit_s: float = 60.0,
    check_numerics: bool = False,
) -> FrontierRun:
    """One engine run that writes the frontier (its choice for the first
    budget), and with `with_bound` the lower bound at every budget."""
    out_dir.mkdir(parents=True, exist_ok=True)
    frontier_path = out_dir / "frontier.json"
    graph_path = out_dir / "graph.json"
    flags = gpu_flags(gpu_target) if gpu_target else []
    flags += RematFlags(budgets[0] if budgets else None, algorithm).args()
    flags.append(f"--frontier={frontier_path}")
    if with_bound:
        flags.append(f"--export-graph={graph_path}")
    run = run_hlo_remat(
        hlo, flags, out_dir / "report.json", timeout_s=1800, check_numerics=check_numerics
    )
    if run.returncode != 0 or not frontier_path.exists():
        last = run.stderr.strip().splitlines()[-1:] or ["no message"]
        raise RuntimeError(f"hlo-remat on {hlo}: {last[0]}")
    frontier = Frontier.load(frontier_path)
    in_bytes = tuple(resolve_budgets(budgets, frontier.allocation_before_bytes))
    bounds: dict[int, BoundResult] = {}
    if with_bound:
        graph = load_graph(graph_path)
        for nbytes in in_bytes:
            bounds[nbytes] = solve_lower_bound(graph, nbytes, time_limit_s=time_limit_s)
    return FrontierRun(frontier, bounds, in_bytes)


def plot_frontier(run: FrontierRun, path: Path, title: str = "") -> Path:
    """Peak (share of the figure before) against extra FLOPs: every plan of
    the search, the frontier joined, the budgets, the floor, and the least
    extra FLOPs any plan needs at each budget."""
    f = run.frontier
    fig, ax = plt.subplots(figsize=(8, 5))
    others = [p for p in f.points if p.kept and not p.usable]
    if others:
        ax.scatter(
            [f.extra_pct(p) for p in others],
            [f.share(p.peak_bytes) for p in others],
            color="grey",
            marker="x",
            label="plan of an aim (dominated, or under 1% below the start)",
        )
    front = sorted((p for p in f.points if p.usable), key=lambda p: p.extra_flops)
    # The schedule the search started from costs nothing.
    xs = [0.0] + [f.extra_pct(p) for p in front]
    ys = [f.share(f.start_bytes)] + [f.share(p.peak_bytes) for p in front]
    ax.step(xs, ys, where="post", marker="o", color="tab:blue", label="frontier")
    ax.axhline(f.share(f.floor_bytes), color="black", linestyle="--", label="floor")
    for i, nbytes in enumerate(run.budgets):
        ax.axhline(
            f.share(nbytes),
            color="tab:orange",
            linestyle=":",
            label="budget" if i == 0 else None,
        )
        bound = run.bounds.get(nbytes)
        if bound is not None and bound.extra_flops_fraction is not None:
            ax.scatter(
                [100.0 * bound.extra_flops_fraction],
                [f.share(nbytes)],
                color="tab:red",
                marker="<",
                label="least any plan needs" if i == 0 else None,
            )
    if f.chosen is not None:
        p = f.points[f.chosen]
        ax.scatter(
            [f.extra_pct(p)],
            [f.share(p.peak_bytes)],
            s=120,
            facecolors="none",
            edgecolors="tab:green",
            label="chosen for the first budget",
        )
    ax.set_xlabel("extra FLOPs, % of the module's")
    ax.set_ylabel(f"peak, share of the figure before ({f.memory_figure})")
    ax.set_title(title or f"{f.module[:60]} ({f.algorithm})")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path
