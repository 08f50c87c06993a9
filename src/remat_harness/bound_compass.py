"""The lower bound as a compass (issue 36): where a plan spends more than the
bound, which nodes it runs again that the bound's solution does not, and the
reverse, priced by the graph's FLOPs.

A plan's runs are read from the engine's decisions: each instruction a
recomputation adds is one more run of the node it was cloned from (clones
of clones included), each one a take-back removes one less. Compressions
run nothing again. The bound's runs are its optimal solution's
(`BoundResult.runs_again`)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from remat_harness.optimum import Graph
from remat_harness.optimum_bound import BoundResult

# XLA names a clone "<origin>.remat", uniquified with ".N"; a clone of a
# clone repeats the suffix.
_CLONE_SUFFIX = re.compile(r"(\.remat(\.\d+)?)+$")

_RUN_SIGN = {"recompute": 1, "take back": -1}


def cloned_from(instruction: str) -> str:
    """The name of the instruction a clone was made from (itself if none)."""
    return _CLONE_SUFFIX.sub("", instruction)


def plan_runs_again(decisions: Iterable[dict[str, Any]]) -> Counter[str]:
    """Net extra runs of each instruction in a plan's decisions."""
    runs: Counter[str] = Counter()
    for decision in decisions:
        sign = _RUN_SIGN.get(decision["action"], 0)
        for instruction in decision["instructions"] if sign else ():
            runs[cloned_from(instruction)] += sign
    return +runs  # drops the zeros: a run taken back is no run


@dataclass(frozen=True)
class RunDifference:
    node: str
    plan_runs: int
    bound_runs: int
    flops_each: float
    module_flops: float

    @property
    def extra_fraction(self) -> float:
        """What the plan spends on this node beyond the bound's solution, as a
        share of the step's FLOPs (negative: the bound spends more)."""
        return (self.plan_runs - self.bound_runs) * self.flops_each / self.module_flops

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__, extra_fraction=self.extra_fraction)


def compare_runs(
    graph: Graph, bound: BoundResult, decisions: Iterable[dict[str, Any]]
) -> list[RunDifference]:
    """Every node the plan and the bound's solution run again a different
    number of times, the largest difference in FLOPs first. Empty where the
    bound has no solution (not solved to optimality, or impossible)."""
    if bound.status != "Optimal":
        return []
    flops = {node.name: node.flops for node in graph.nodes}
    plan = plan_runs_again(decisions)
    names = set(plan) | set(bound.runs_again)
    differences = [
        RunDifference(
            name,
            plan[name],
            bound.runs_again.get(name, 0),
            flops.get(name, 0.0),
            graph.module_flops or 1.0,
        )
        for name in names
        if plan[name] != bound.runs_again.get(name, 0)
    ]
    return sorted(differences, key=lambda d: (-abs(d.extra_fraction), d.node))


def compass_text(differences: list[dict[str, Any]], top: int = 4) -> str:
    """The largest differences (RunDifference.as_dict) on one line."""
    if not differences:
        return "-"
    return ", ".join(
        f"{d['node']} {d['plan_runs']}/{d['bound_runs']} ({100 * d['extra_fraction']:+.2f}%)"
        for d in differences[:top]
    )
