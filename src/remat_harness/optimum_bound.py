"""A lower bound on the extra FLOPs any recomputation plan needs to meet a
budget on the planner's schedule: the other side of `optimum.py`, whose
optimum is an upper bound.

The plans bounded keep the module's order, add recomputations, and may run
a node later instead of at its own stage (the engine's clones that leave an
original dead), never after what it reads is written over (the node's
`readable_until`); the node at each checkpoint stays where it is. The
relaxation looks only at K checkpoint stages (those above the budget that
must hold the most at once). Between two checkpoints order is ignored: a
node may run again in an interval, once, as soon as what it reads is there
in that interval (held across the checkpoint before it, or run in it).
Memory is counted only at the checkpoints, and only what no allocator can
avoid:

- entry parameters and the module's outputs already made (their bytes as
  the graph gives them: an output sharing a donated parameter's buffer has
  none; a donated parameter whose output is counted apart, on CPU, up to
  its last reader);
- what the checkpoint's node needs at once: the larger of the bytes it reads
  and the bytes it writes, since its output may take a dying operand's
  buffer;
- every other buffer held across the checkpoint: a buffer is needed where
  its last reader runs; where a reader of a multi-buffer value is not the
  last reader of any of them, any one of its buffers is taken to serve it.

What called computations hold is not counted. Every such plan is a solution
of the model at no more FLOPs, and its peak by the platform's figure
(HeapSimulator, buffer assignment) is at or above these counts, so the
model's optimum (or, when the solver stops, its dual bound) bounds from below
the FLOPs any such plan needs to meet the budget; "Infeasible" proves that
none meets it.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from dataclasses import dataclass, field

import numpy as np

from remat_harness.optimum import Graph, MilpRows, Node, milp_solver

DEFAULT_CHECKPOINTS = 12


@dataclass
class BoundResult:
    """`extra_flops` is a lower bound on the FLOPs any plan needs (the
    model's optimum, or its dual bound when the solver stopped)."""

    status: str  # HiGHS's model status
    budget_bytes: int
    extra_flops: float | None
    extra_flops_fraction: float | None
    checkpoints: list[int]
    seconds: float
    columns: int
    rows: int
    meaning: str
    # Where the solve is optimal: what its solution runs again, by node name,
    # the net count (runs again, less one where the node's own run is
    # dropped); those counts times the nodes' FLOPs add up to `extra_flops`.
    # The compass for a plan that spends more (bound_compass.py).
    runs_again: dict[str, int] = field(default_factory=dict)

    @property
    def proven(self) -> bool:
        """Solved to optimality, or proven infeasible: not a stopped solve."""
        return self.status in ("Optimal", "Infeasible")

    @property
    def impossible(self) -> bool:
        """No plan can meet the budget, whatever it spends."""
        return self.status == "Infeasible"

    def as_dict(self) -> dict:
        return dict(self.__dict__) | {"proven": self.proven, "impossible": self.impossible}


def _min_alive(node: Node, stage: int) -> int:
    """The least a value still alive at `stage` occupies there: the smallest
    of its buffers alive then (which of them a reader needs is not in the
    graph), else its smallest."""
    alive = [
        b.bytes for b in node.buffers if b.bytes and (b.live_to_end or b.last_position >= stage)
    ]
    sizes = alive or [b.bytes for b in node.buffers if b.bytes]
    return min(sizes, default=0)


def _read_bytes(nodes: tuple[Node, ...], reader: Node) -> int:
    """Bytes `reader` reads at its stage: each operand's buffers whose last
    reader it is, or that operand's smallest buffer alive then."""
    total = 0
    for r in set(reader.reads):
        operand = nodes[r]
        if operand.live_to_end:
            continue
        last_here = [
            b.bytes
            for b in operand.buffers
            if not b.live_to_end and b.last_position == reader.position
        ]
        total += sum(last_here) if last_here else _min_alive(operand, reader.position)
    return total


def _needed_at_once(nodes: tuple[Node, ...], node: Node) -> int:
    """What `node` needs at its stage: the larger of what it reads and what it
    writes (its output may take a dying operand's buffer)."""
    written = sum(b.bytes for b in node.buffers if not b.live_to_end)
    return max(_read_bytes(nodes, node), written)


class _BoundModel(MilpRows):
    """Columns and rows of the relaxation for one graph and budget."""

    def __init__(self, graph: Graph, budget_bytes: int, checkpoints: list[int]) -> None:
        super().__init__()
        self.graph = graph
        nodes = graph.nodes
        self.checkpoints = checkpoints
        self.stage_node = {node.position: i for i, node in enumerate(nodes)}
        self.cost: list[float] = []
        count = len(checkpoints)
        self.home = [self.interval(n.position) for n in nodes]
        # rerun[i][m]: node i runs again in interval m (after its own), whose
        # first stage may still run it (what it reads is not written over).
        self.rerun = [
            {
                m: self._column(n.flops)
                for m in range(self.home[i] + 1, count + 1)
                if n.may_run_again_at(checkpoints[m - 1] + 1)
            }
            if n.recomputable and not n.live_to_end and n.opcode != "parameter"
            else {}
            for i, n in enumerate(nodes)
        ]
        # dropped[i]: node i's own run is not made (its readers get reruns).
        # A checkpoint's node keeps its run: moved into the next interval it
        # would leave its memory counted nowhere.
        at_checkpoint = {self.stage_node.get(stage) for stage in checkpoints}
        self.dropped = [
            self._column(-n.flops) if self.rerun[i] and i not in at_checkpoint else -1
            for i, n in enumerate(nodes)
        ]
        readers: list[list[int]] = [[] for _ in nodes]
        for c, n in enumerate(nodes):
            for r in set(n.reads):
                readers[r].append(c)
        # held[i][(b, j)]: buffer b of node i is held across checkpoint j.
        self.held: list[dict[tuple[int, int], int]] = []
        for i, n in enumerate(nodes):
            last_needed = max(
                [self.interval(nodes[c].position) for c in readers[i]]
                + [max(self.rerun[c], default=-1) for c in readers[i]]
                + [-1]
            )
            self.held.append(
                {
                    (b, j): self._column(0.0)
                    for b, buffer in enumerate(n.buffers)
                    if buffer.bytes and not buffer.live_to_end
                    for j in range(self.home[i], min(count, last_needed))
                }
            )
        inf = np.inf
        for i, n in enumerate(nodes):
            # There from its stage to the end. A parameter that is not (a
            # donated one on CPU, which the live ranges end at its last read)
            # is held as any value no plan can run again.
            if n.live_to_end:
                continue
            for (b, j), column in self.held[i].items():
                self.row({**self.available(i, j, b), column: -1.0}, 0.0, inf)
            for c in set(readers[i]):
                # There where a reader runs, unless that run is dropped.
                reader = nodes[c]
                m = self.interval(reader.position)
                for b in self._buffers_read(n, reader):
                    terms = self.available(i, m, b)
                    if self.dropped[c] >= 0:
                        terms[self.dropped[c]] = terms.get(self.dropped[c], 0.0) + 1.0
                    self.row(terms, 1.0, inf)
                for m2, column in self.rerun[c].items():
                    terms = self.available(i, m2, None)
                    terms[column] = terms.get(column, 0.0) - 1.0
                    self.row(terms, 0.0, inf)
        for j, stage in enumerate(checkpoints):
            self._memory_row(j, stage, budget_bytes)

    @staticmethod
    def _buffers_read(node: Node, reader: Node) -> list[int | None]:
        """The buffers of `node` that `reader` is known to read (those whose
        last reader it is); [None] when which is not known."""
        known = [
            b
            for b, buffer in enumerate(node.buffers)
            if buffer.bytes and not buffer.live_to_end and buffer.last_position == reader.position
        ]
        return known or [None]

    def runs_again(self, solution: np.ndarray) -> dict[str, int]:
        """Net extra runs of each node in `solution` (the columns' values)."""
        counts: dict[str, int] = {}
        for i, node in enumerate(self.graph.nodes):
            runs = sum(1 for column in self.rerun[i].values() if solution[column] > 0.5)
            if self.dropped[i] >= 0 and solution[self.dropped[i]] > 0.5:
                runs -= 1
            if runs:
                counts[node.name] = runs
        return counts

    def interval(self, position: int) -> int:
        """Interval m covers the stages after checkpoint m-1 up to checkpoint m."""
        return bisect_left(self.checkpoints, position)

    def available(self, i: int, m: int, buffer: int | None) -> dict[int, float]:
        """Terms (the constant 1 on column CONSTANT) whose sum is at least 1
        when node i's buffer (None: any of its buffers) is there in interval m."""
        terms: dict[int, float] = {}
        if self.home[i] == m:
            terms[self.CONSTANT] = 1.0
            if self.dropped[i] >= 0:
                terms[self.dropped[i]] = -1.0
        if m in self.rerun[i]:
            terms[self.rerun[i][m]] = 1.0
        for (b, j), column in self.held[i].items():
            if j == m - 1 and (buffer is None or b == buffer):
                terms[column] = 1.0
        return terms

    def _column(self, cost: float) -> int:
        self.cost.append(cost)
        return len(self.cost) - 1

    def _memory_row(self, j: int, stage: int, budget_bytes: int) -> None:
        nodes = self.graph.nodes
        fixed = sum(
            b.bytes for n in nodes if n.position < stage for b in n.buffers if b.live_to_end
        )
        counted: set[tuple[int, int]] = set()
        at = self.stage_node.get(stage)
        if at is not None:
            node = nodes[at]
            fixed += _needed_at_once(nodes, node)
            # What the node reads or writes is in that figure already.
            counted = {(at, b) for b in range(len(node.buffers))}
            for r in set(node.reads):
                counted.update((r, b) for b in range(len(nodes[r].buffers)))
        terms: dict[int, float] = {}
        for i, n in enumerate(nodes):
            for (b, held_j), column in self.held[i].items():
                if held_j == j and (i, b) not in counted:
                    terms[column] = float(n.buffers[b].bytes)
        self.row(terms, -np.inf, float(budget_bytes - fixed))


def choose_checkpoints(graph: Graph, budget_bytes: int, count: int) -> list[int]:
    """The `count` stages above the budget where the most bytes must be there
    at once, and the keep-all peak."""
    profile = graph.profile()
    over = [
        (i, n.position)
        for i, n in enumerate(graph.nodes)
        if n.position < len(profile) and profile[n.position] > budget_bytes
    ]
    if not over:
        return []
    nodes = graph.nodes
    ranked = sorted(
        over, key=lambda item: (-_needed_at_once(nodes, nodes[item[0]]), -profile[item[1]])
    )
    chosen = {stage for _, stage in ranked[:count]}
    chosen.add(int(np.argmax(profile)))
    return sorted(chosen)


def solve_lower_bound(
    graph: Graph,
    budget_bytes: int,
    checkpoints: int = DEFAULT_CHECKPOINTS,
    time_limit_s: float = 60.0,
) -> BoundResult:
    """A lower bound on the extra FLOPs of any plan meeting `budget_bytes`."""
    import highspy  # a dependency of the harness; imported when solving

    started = time.monotonic()
    stages = choose_checkpoints(graph, budget_bytes, checkpoints)
    if not stages:
        return BoundResult(
            status="Optimal",
            budget_bytes=budget_bytes,
            extra_flops=0.0,
            extra_flops_fraction=0.0,
            checkpoints=[],
            seconds=time.monotonic() - started,
            columns=0,
            rows=0,
            meaning="the schedule meets the budget as it is",
        )
    model = _BoundModel(graph, budget_bytes, stages)
    n = len(model.cost)
    h = milp_solver(
        np.array(model.cost),
        np.zeros(n),
        np.ones(n),
        [highspy.HighsVarType.kInteger] * n,
        model,
        time_limit_s,
    )
    h.run()
    status = h.modelStatusToString(h.getModelStatus())
    info = h.getInfo()
    optimal = status == "Optimal"
    infeasible = status == "Infeasible"
    bound: float | None = None
    if optimal:
        bound = float(info.objective_function_value)
    elif not infeasible and np.isfinite(info.mip_dual_bound):
        bound = float(info.mip_dual_bound)
    bound = max(bound, 0.0) if bound is not None else None
    runs_again = model.runs_again(np.array(h.getSolution().col_value)) if optimal else {}
    if infeasible:
        meaning = "no recomputation plan on this schedule meets the budget by the platform's figure"
    elif optimal:
        meaning = "any plan on this schedule spends at least this to meet the budget"
    elif bound is not None:
        meaning = f"stopped ({status}): the dual bound, a weaker lower bound"
    else:
        meaning = f"no bound ({status})"
    module_flops = graph.module_flops
    return BoundResult(
        status=status,
        budget_bytes=budget_bytes,
        extra_flops=bound,
        extra_flops_fraction=bound / module_flops if bound is not None and module_flops else None,
        checkpoints=stages,
        seconds=time.monotonic() - started,
        columns=n,
        rows=len(model.row_lower),
        meaning=meaning,
        runs_again=runs_again,
    )


@dataclass(frozen=True)
class OutOfReach:
    """What the bound proves of a budget the search missed: no plan on the
    schedule that spends at most `cap_fraction` extra FLOPs (None: any) has a
    peak at or below `below_bytes` (0: nothing proven). `open_bytes` is the
    lowest budget tried that the bound did not rule out."""

    below_bytes: int
    open_bytes: int
    cap_fraction: float | None
    solves: int
    seconds: float


def out_of_reach(
    graph: Graph,
    cap_fraction: float | None,
    low_bytes: int,
    high_bytes: int,
    steps: int = 6,
    time_limit_s: float = 10.0,
) -> OutOfReach:
    """Bisects [low_bytes, high_bytes] for the level below which the bound
    rules out every plan within the cap (None: every plan): a budget is ruled
    out where the relaxation is infeasible or its lower bound on the FLOPs (optimal, or the
    dual bound of a stopped solve) exceeds the cap. A plan meeting a lower
    budget meets a higher one too, so what is ruled out is every budget up to
    the highest one found so. A solve that proves nothing counts as open."""
    started = time.monotonic()
    lo, hi, solves = low_bytes, high_bytes, 0
    while solves < steps and hi - lo > 1:
        mid = (lo + hi) // 2
        solved = solve_lower_bound(graph, mid, time_limit_s=time_limit_s)
        solves += 1
        bound = solved.extra_flops_fraction
        over_cap = cap_fraction is not None and bound is not None and bound > cap_fraction
        if solved.impossible or over_cap:
            lo = mid
        else:
            hi = mid
    # `lo` is ruled out once a solve moved it; the budget itself was not solved.
    below = lo if lo > low_bytes else 0
    return OutOfReach(below, hi, cap_fraction, solves, time.monotonic() - started)
