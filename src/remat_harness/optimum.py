"""The least recomputation that meets a budget, solved exactly on the
planner's schedule: the instrument the algorithms are measured against.

Reads the graph `hlo-remat --export-graph` writes (remat_graph.h) and builds a
Checkmate-style MILP (Jain et al., MLSys 2020) with the schedule fixed, as
the engine's own planner has it:

- stage t runs the node scheduled at t; a value may be dropped after any of
  its events and computed again at a later stage where something needs it
  (its own readers' stages, or the stages where a recomputed reader is run:
  chains of up to `depth` producers), up to the last stage at which what it
  reads is not yet written over (`readable_until`);
- binaries: keep[v, g] (value v held across the g-th gap between its events)
  and recompute[v, t]; a value is present at an event when held into it or
  recomputed there, and must be present wherever a reader runs;
- memory at stage t: every value held across t (its buffers still alive
  then), every value recomputed at t, the node run at t and what called
  computations hold there. Values recomputed in one stage are counted
  together (no frees inside a stage): a plan the model accepts fits.

What the figure means: the optimum of this model is an upper bound on the
least FLOPs any plan on this schedule needs (the model forbids some plans:
longer chains, recomputation between uses); when the solver stops at its
time limit the incumbent is a further upper bound and the dual bound a
lower bound on the model's optimum. The graph is not coarsened: the model
grows with the edges times the chain depth, not with stages squared.
"""

from __future__ import annotations

import json
import os
import sys
import time
from bisect import bisect_left
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

GRAPH_FORMAT = "remat-graph/2"
# Added to every move's FLOPs in the objective: of two plans with the same
# FLOPs the one with fewer moves wins (zero-FLOP nodes are not moved for
# nothing). Far below any node's FLOPs; never in a reported figure.
MOVE_COST = 1e-3


class GraphError(ValueError):
    """The file is not a graph hlo-remat --export-graph wrote."""


@dataclass(frozen=True)
class Buffer:
    bytes: int
    first_position: int
    last_position: int
    live_to_end: bool


@dataclass(frozen=True)
class Node:
    name: str
    opcode: str
    position: int
    flops: float
    recomputable: bool
    buffers: tuple[Buffer, ...]
    reads: tuple[int, ...]
    # The planner can apply its recomputation (remat_graph.h): what the
    # MILP recomputes. `recomputable` alone, wider, is what the lower bound
    # allows any plan. Graphs written before the field: `recomputable`.
    movable: bool = True
    # The last stage a run of it may be made at: where a buffer it reads is
    # first written over (an in-place writer, a donated parameter's update);
    # a later run would read the new contents. None: no limit (graphs
    # written before the field).
    readable_until: int | None = None

    def may_run_again_at(self, stage: int) -> bool:
        """Whether a run of it at `stage` (after its own) reads what it read."""
        return stage > self.position and (
            self.readable_until is None or stage <= self.readable_until
        )

    @property
    def all_bytes(self) -> int:
        """What a run of the node occupies at its stage (scratch included)."""
        return sum(b.bytes for b in self.buffers)

    @property
    def live_to_end(self) -> bool:
        return any(b.live_to_end for b in self.buffers)

    def bytes_alive_at(self, stage: int) -> int:
        """Bytes of its buffers still alive at `stage` when nothing is dropped."""
        return sum(b.bytes for b in self.buffers if b.live_to_end or b.last_position >= stage)

    @property
    def held_bytes(self) -> int:
        """Bytes kept past its own stage (its buffers read later)."""
        return sum(
            b.bytes for b in self.buffers if b.live_to_end or b.last_position > self.position
        )


@dataclass(frozen=True)
class Graph:
    module: str
    memory_figure: str
    positions: int
    nodes: tuple[Node, ...]
    called_bytes: dict[int, int]
    peak_bytes: int
    module_flops: float

    def profile(self) -> list[int]:
        """Bytes live at each stage when every value is kept (the tracker's)."""
        delta = [0] * (self.positions + 1)
        for node in self.nodes:
            for b in node.buffers:
                if b.bytes == 0:
                    continue
                last = self.positions - 1 if b.live_to_end else max(b.last_position, node.position)
                delta[min(b.first_position, node.position)] += b.bytes
                delta[last + 1] -= b.bytes
        out, running = [], 0
        for stage in range(self.positions):
            running += delta[stage]
            out.append(running + self.called_bytes.get(stage, 0))
        return out


def load_graph(path: Path) -> Graph:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise GraphError(f"{path}: cannot read the graph: {e}") from e
    if not isinstance(data, dict) or data.get("format") != GRAPH_FORMAT:
        raise GraphError(f"{path}: not a {GRAPH_FORMAT} file (hlo-remat --export-graph)")
    return graph_from_dict(data)


def graph_from_dict(data: dict) -> Graph:
    nodes = tuple(
        Node(
            name=n["name"],
            opcode=n["opcode"],
            position=int(n["position"]),
            flops=float(n["flops"] or 0.0),
            recomputable=bool(n["recomputable"]),
            buffers=tuple(
                Buffer(int(b[0]), int(b[1]), int(b[2]), bool(b[3])) for b in n["buffers"]
            ),
            reads=tuple(int(r) for r in n["reads"]),
            movable=bool(n.get("movable", n["recomputable"])),
            readable_until=n.get("readable_until"),
        )
        for n in data["nodes"]
    )
    for index, node in enumerate(nodes):
        if any(not 0 <= r < index for r in node.reads):
            raise GraphError(f"node {index} ({node.name}) reads a node not scheduled before it")
    return Graph(
        module=str(data.get("module", "")),
        memory_figure=str(data.get("memory_figure", "")),
        positions=int(data["positions"]),
        nodes=nodes,
        called_bytes={int(p): int(b) for p, b in data.get("called_bytes", [])},
        peak_bytes=int(data.get("peak_bytes", 0)),
        module_flops=float(data.get("module_flops") or 0.0),
    )


@dataclass
class OptimumResult:
    """One solve. `extra_flops` is the incumbent's; `flops_bound` the
    solver's dual bound on the model's optimum (equal when optimal)."""

    objective: str  # "min_flops" (meet a budget) or "min_peak" (at a FLOPs budget)
    status: str  # HiGHS's model status, e.g. "Optimal", "Time limit reached"
    solved: bool  # an incumbent exists
    optimal: bool
    budget_bytes: int
    extra_flops: float | None
    extra_flops_fraction: float | None
    peak_bytes: int | None  # the incumbent plan's peak in the model
    mip_gap: float | None
    dual_bound: float | None
    seconds: float
    columns: int
    rows: int
    depth: int
    recomputations: int
    meaning: str
    module_flops: float = 0.0
    # (node, stage) of each recomputation; stage -1: the node's own run is
    # dropped (every reader gets it recomputed).
    plan: list[tuple[str, int]] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "plan"} | {
            "plan_size": len(self.plan)
        }


class MilpRows:
    """A MILP's rows, row-wise (HiGHS's kRowwise), added one at a time."""

    # A term on this column is a constant: it moves to the row's bounds.
    CONSTANT = -1

    def __init__(self) -> None:
        self.row_start: list[int] = [0]
        self.row_index: list[int] = []
        self.row_value: list[float] = []
        self.row_lower: list[float] = []
        self.row_upper: list[float] = []

    def row(self, terms: dict[int, float], lower: float, upper: float) -> None:
        """lower <= sum of terms <= upper."""
        constant = terms.get(self.CONSTANT, 0.0)
        for column, value in terms.items():
            if value != 0 and column != self.CONSTANT:
                self.row_index.append(column)
                self.row_value.append(value)
        self.row_lower.append(lower - constant)
        self.row_upper.append(upper - constant)
        self.row_start.append(len(self.row_index))


class _Model(MilpRows):
    """Columns and rows of the MILP for one graph and chain depth."""

    def __init__(self, graph: Graph, depth: int) -> None:
        super().__init__()
        self.graph = graph
        nodes = graph.nodes
        readers: list[list[int]] = [[] for _ in nodes]
        for index, node in enumerate(nodes):
            for r in node.reads:
                readers[r].append(index)
        self.readers = readers
        # Stages where a node may be recomputed: where a reader runs (depth
        # 1), or where a recomputable reader may itself be (depth d: chains
        # of d producers).
        direct = [{nodes[c].position for c in readers[i]} for i in range(len(nodes))]
        level = [set(d) for d in direct]
        for _ in range(depth - 1):
            level = [
                direct[i].union(
                    *(
                        {t for t in level[c] if nodes[c].may_run_again_at(t)}
                        for c in readers[i]
                        if nodes[c].movable
                    )
                )
                for i in range(len(nodes))
            ]
        self.recompute_stages = [
            sorted(t for t in level[i] if node.may_run_again_at(t)) if node.movable else []
            for i, node in enumerate(nodes)
        ]
        # Events of each value: its stage, its readers' stages, the stages
        # where a reader may be recomputed, and the end for outputs.
        self.events: list[list[int]] = []
        self.last_use: list[int] = []
        for index, node in enumerate(nodes):
            needed = set(direct[index])
            for c in readers[index]:
                if nodes[c].movable and not nodes[c].live_to_end:
                    needed.update(self.recompute_stages[c])
            last = max(direct[index], default=node.position)
            if node.live_to_end:
                needed.add(graph.positions - 1)
                last = graph.positions - 1
            self.last_use.append(last)
            self.events.append([node.position, *sorted(t for t in needed if t > node.position)])
        self.cost: list[float] = []
        self.flops: list[float] = []  # FLOPs a column adds (the objective's, less MOVE_COST)
        self.lower: list[float] = []
        self.keep: list[list[int]] = []  # per node, per gap: column
        self.recompute: list[dict[int, int]] = []  # per node: stage -> column
        self.dropped: list[int] = []  # per node: column, or -1
        for index, node in enumerate(nodes):
            # Outputs are never dropped (as in the planner); a value nothing
            # may recompute is held to its last reader; beyond it (to a
            # recomputed reader) holding it is a choice.
            fixed = not node.movable or node.live_to_end
            events = self.events[index]
            self.keep.append(
                [
                    self._column(0.0, 1.0 if fixed and events[g] <= self.last_use[index] else 0.0)
                    for g in range(1, len(events))
                ]
            )
            fixed_recompute = node.live_to_end or not node.movable
            self.recompute.append(
                {}
                if fixed_recompute
                else {
                    t: self._column(node.flops + MOVE_COST, 0.0, node.flops)
                    for t in self.recompute_stages[index]
                }
            )
            # A value every reader gets from a recomputation need not run at
            # its own stage (the planner's clones leave such an original
            # dead): dropping that run saves its FLOPs and its bytes there.
            self.dropped.append(
                self._column(MOVE_COST - node.flops, 0.0, -node.flops)
                if self.recompute[index] and len(self.keep[index]) > 0
                else -1
            )
        self._add_presence_rows()
        self._memory_ranges()

    def start_from(self, shallower: _Model, values: np.ndarray) -> np.ndarray:
        """The plan `values` of a model of the same graph with shallower
        chains, as this model's columns (its events are a subset of ours)."""
        start = np.zeros(len(self.cost))
        for index in range(len(self.graph.nodes)):
            theirs = shallower.events[index]
            for g, column in enumerate(self.keep[index]):
                end = self.events[index][g + 1]
                k = bisect_left(theirs, end)
                if k < len(theirs):
                    start[column] = values[shallower.keep[index][k - 1]]
            for stage, column in self.recompute[index].items():
                other = shallower.recompute[index].get(stage)
                if other is not None:
                    start[column] = values[other]
            if self.dropped[index] >= 0 and shallower.dropped[index] >= 0:
                start[self.dropped[index]] = values[shallower.dropped[index]]
        return np.maximum(start, np.array(self.lower))

    def _column(self, cost: float, lower: float, flops: float = 0.0) -> int:
        self.flops.append(flops)
        self.cost.append(cost)
        self.lower.append(lower)
        return len(self.cost) - 1

    def presence(self, index: int, stage: int) -> dict[int, float]:
        """Columns whose sum is 1 when node `index` is present at its event `stage`."""
        g = bisect_left(self.events[index], stage)
        terms = {self.keep[index][g - 1]: 1.0}
        column = self.recompute[index].get(stage)
        if column is not None:
            terms[column] = 1.0
        return terms

    def _add_presence_rows(self) -> None:
        inf = np.inf
        nodes = self.graph.nodes
        for index in range(len(nodes)):
            events = self.events[index]
            if self.dropped[index] >= 0:  # held from its stage only if run there
                self.row({self.keep[index][0]: 1.0, self.dropped[index]: 1.0}, -inf, 1.0)
            # Held into the gap after an event only if present at it.
            for g in range(1, len(events) - 1):
                terms = self.presence(index, events[g])
                keep_next = self.keep[index][g]
                terms[keep_next] = terms.get(keep_next, 0.0) - 1.0
                self.row(terms, 0.0, inf)
            # Present where a reader runs, and where a reader is recomputed.
            for c in self.readers[index]:
                terms = self.presence(index, nodes[c].position)
                if self.dropped[c] >= 0:  # not needed where c's run is dropped
                    terms[self.dropped[c]] = 1.0
                self.row(terms, 1.0, inf)
                for stage, column in self.recompute[c].items():
                    terms = self.presence(index, stage)
                    terms[column] = terms.get(column, 0.0) - 1.0
                    self.row(terms, 0.0, inf)

    def _memory_ranges(self) -> None:
        """Per stage: the bytes that are always there (`constant`), the most
        there can be (`most`), and the ranges of stages each column holds."""
        graph = self.graph
        size = graph.positions + 1
        constant = np.zeros(size)
        most = np.zeros(size)
        for stage, held in graph.called_bytes.items():
            constant[stage] += held
            constant[stage + 1] -= held
        # (column, first stage, last stage, bytes) of each variable range.
        self.ranges: list[tuple[int, int, int, int]] = []
        for index, node in enumerate(graph.nodes):
            constant[node.position] += node.all_bytes
            constant[node.position + 1] -= node.all_bytes
            if self.dropped[index] >= 0 and node.all_bytes:
                self.ranges.append(
                    (self.dropped[index], node.position, node.position, -node.all_bytes)
                )
            for b in node.buffers:
                if b.first_position < node.position:  # entry parameters
                    constant[b.first_position] += b.bytes
                    constant[node.position] -= b.bytes
            events = self.events[index]
            for g in range(1, len(events)):
                column = self.keep[index][g - 1]
                for first, last, held in _alive_pieces(node, events[g - 1] + 1, events[g]):
                    target = constant if self.lower[column] == 1.0 else most
                    target[first] += held
                    target[last + 1] -= held
                    if target is most:
                        self.ranges.append((column, first, last, held))
            for stage, column in self.recompute[index].items():
                if node.all_bytes:
                    most[stage] += node.all_bytes
                    most[stage + 1] -= node.all_bytes
                    self.ranges.append((column, stage, stage, node.all_bytes))
        self.constant = np.cumsum(constant)[:-1]
        self.most = self.constant + np.cumsum(most)[:-1]

    def memory_rows(self, stages: list[int]) -> dict[int, dict[int, float]]:
        """The variable terms of the memory at each of `stages`."""
        wanted = np.zeros(self.graph.positions + 1, dtype=bool)
        wanted[stages] = True
        rows: dict[int, dict[int, float]] = {t: {} for t in stages}
        for column, first, last, held in self.ranges:
            for stage in np.flatnonzero(wanted[first : last + 1]) + first:
                terms = rows[int(stage)]
                terms[column] = terms.get(column, 0.0) + held
        return rows


def _alive_pieces(node: Node, first: int, last: int) -> list[tuple[int, int, int]]:
    """(first, last, bytes) pieces of what holding `node` over stages
    first..last costs: its buffers while alive, then (held to a recomputed
    reader past its last reader) the bytes it keeps."""
    if first > last:
        return []
    ends = sorted({b.last_position for b in node.buffers if not b.live_to_end and b.bytes})
    pieces = []
    start = first
    for end in [*ends, last]:
        stop = min(end, last)
        if stop >= start:
            alive = node.bytes_alive_at(start) or node.held_bytes
            if alive:
                pieces.append((start, stop, alive))
            start = stop + 1
        if start > last:
            break
    return pieces


def _solve(
    model: _Model,
    objective: str,
    budget_bytes: int,
    max_extra_flops: float | None,
    time_limit_s: float,
    mip_rel_gap: float,
    start: np.ndarray | None = None,
) -> tuple[OptimumResult, np.ndarray]:
    import highspy  # a dependency of the harness; imported when solving

    started = time.monotonic()
    graph = model.graph
    inf = np.inf
    peak_column = -1
    flop_costs = list(model.cost)
    if objective == "min_peak":
        # One more column, the peak, minimised; the FLOPs spent bounded.
        peak_column = model._column(0.0, 0.0)
        model.row({c: v for c, v in enumerate(model.flops) if v}, -inf, float(max_extra_flops or 0))
        floor = float(model.constant.max()) if graph.positions else 0.0
        stages = [int(t) for t in np.flatnonzero(model.most > floor)]
    else:
        stages = [int(t) for t in np.flatnonzero(model.most > budget_bytes)]
    for stage, terms in model.memory_rows(stages).items():
        if objective == "min_flops":
            model.row(terms, -inf, budget_bytes - float(model.constant[stage]))
        else:
            terms[peak_column] = -1.0
            model.row(terms, -inf, -float(model.constant[stage]))
    n = len(model.cost)
    cost = np.array(flop_costs + [0.0] * (n - len(flop_costs)))
    upper = np.ones(n)
    integrality = [highspy.HighsVarType.kInteger] * n
    if peak_column >= 0:
        cost = np.zeros(n)
        cost[peak_column] = 1.0
        upper[peak_column] = inf
        integrality[peak_column] = highspy.HighsVarType.kContinuous
    h = milp_solver(
        cost, np.array(model.lower), upper, integrality, model, time_limit_s, mip_rel_gap
    )
    if start is not None:
        full = np.zeros(n)
        full[: len(start)] = start
        if peak_column >= 0:
            full[peak_column] = _plan_peak(model, full > 0.5)
        solution = highspy.HighsSolution()
        solution.col_value = list(full)
        solution.value_valid = True
        h.setSolution(solution)
    h.run()
    status = h.modelStatusToString(h.getModelStatus())
    info = h.getInfo()
    solved = info.primal_solution_status == 2  # a feasible incumbent
    values = np.array(h.getSolution().col_value) if solved else np.zeros(0)
    plan: list[tuple[str, int]] = []
    extra = None
    peak = None
    if solved:
        chosen = values > 0.5
        for index, stages_of in enumerate(model.recompute):
            for stage, column in stages_of.items():
                if chosen[column]:
                    plan.append((graph.nodes[index].name, stage))
        for index, column in enumerate(model.dropped):
            if column >= 0 and chosen[column]:
                plan.append((graph.nodes[index].name, -1))
        flops_of = {node.name: node.flops for node in graph.nodes}
        extra = float(
            sum(flops_of[name] if stage >= 0 else -flops_of[name] for name, stage in plan)
        )
        peak = _plan_peak(model, chosen)
    optimal = status == "Optimal"
    dual = float(info.mip_dual_bound) if np.isfinite(info.mip_dual_bound) else None
    gap = float(info.mip_gap) if solved and np.isfinite(info.mip_gap) else None
    result = OptimumResult(
        objective=objective,
        status=status,
        solved=solved,
        optimal=optimal,
        budget_bytes=budget_bytes,
        extra_flops=extra,
        extra_flops_fraction=(extra / graph.module_flops)
        if extra is not None and graph.module_flops
        else None,
        peak_bytes=peak,
        mip_gap=gap,
        dual_bound=dual,
        seconds=time.monotonic() - started,
        columns=n,
        rows=len(model.row_lower),
        depth=0,
        recomputations=sum(1 for _, stage in plan if stage >= 0),
        module_flops=graph.module_flops,
        meaning=_meaning(status, solved, optimal, objective),
        plan=plan,
    )
    return result, values


def milp_solver(
    cost: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    integrality: list,
    rows: MilpRows,
    time_limit_s: float,
    mip_rel_gap: float | None = None,
) -> Any:
    """A quiet HiGHS holding the model, ready to run."""
    import highspy

    lp = highspy.HighsLp()
    lp.num_col_ = len(cost)
    lp.num_row_ = len(rows.row_lower)
    lp.col_cost_ = cost
    lp.col_lower_ = lower
    lp.col_upper_ = upper
    lp.row_lower_ = np.array(rows.row_lower)
    lp.row_upper_ = np.array(rows.row_upper)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.start_ = np.array(rows.row_start, dtype=np.int32)
    lp.a_matrix_.index_ = np.array(rows.row_index, dtype=np.int32)
    lp.a_matrix_.value_ = np.array(rows.row_value)
    lp.integrality_ = integrality
    h = _quiet_highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("time_limit", float(time_limit_s))
    if mip_rel_gap is not None:
        h.setOptionValue("mip_rel_gap", float(mip_rel_gap))
    h.passModel(lp)
    return h


def _quiet_highs() -> object:
    """A solver object; HiGHS prints its banner on fd 1 when it is made."""
    import highspy

    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            return highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def _plan_peak(model: _Model, chosen: np.ndarray) -> int:
    """The model's peak for the chosen columns."""
    size = model.graph.positions + 1
    delta = np.zeros(size)
    for column, first, last, held in model.ranges:
        if chosen[column]:
            delta[first] += held
            delta[last + 1] -= held
    used = model.constant + np.cumsum(delta)[:-1]
    return int(round(used.max())) if len(used) else 0


def _meaning(status: str, solved: bool, optimal: bool, objective: str) -> str:
    what = "FLOPs" if objective == "min_flops" else "peak"
    if optimal:
        return (
            f"the least {what} of the fixed-schedule model: an upper bound on the true "
            f"optimum on this schedule (the model forbids longer chains)"
        )
    if solved:
        return (
            f"stopped ({status}): the incumbent's {what} is an upper bound on the model's "
            f"optimum, the dual bound a lower bound"
        )
    if status == "Infeasible":
        return "no plan of the model meets it: the budget is below what the model can reach"
    return f"no plan found ({status})"


def _solve_deep(
    graph: Graph,
    objective: str,
    budget_bytes: int,
    max_extra_flops: float | None,
    depth: int,
    time_limit_s: float,
    mip_rel_gap: float,
) -> OptimumResult:
    """Chains of one producer first (a small model, solved fast; half the
    time), its plan the starting incumbent of the model with `depth`."""
    started = time.monotonic()
    start = None
    model = _Model(graph, depth)
    if depth > 1:
        shallow = _Model(graph, 1)
        first, values = _solve(
            shallow, objective, budget_bytes, max_extra_flops, time_limit_s / 2, mip_rel_gap
        )
        if first.solved:
            start = model.start_from(shallow, values)
    remaining = max(1.0, time_limit_s - (time.monotonic() - started))
    result, _ = _solve(
        model, objective, budget_bytes, max_extra_flops, remaining, mip_rel_gap, start
    )
    result.depth = depth
    result.seconds = time.monotonic() - started
    return result


def solve_min_flops(
    graph: Graph,
    budget_bytes: int,
    depth: int = 3,
    time_limit_s: float = 600,
    mip_rel_gap: float = 1e-4,
) -> OptimumResult:
    """The least extra FLOPs that keep the model's peak within `budget_bytes`."""
    return _solve_deep(graph, "min_flops", budget_bytes, None, depth, time_limit_s, mip_rel_gap)


def solve_min_peak(
    graph: Graph,
    max_extra_flops: float,
    depth: int = 3,
    time_limit_s: float = 600,
    mip_rel_gap: float = 1e-4,
) -> OptimumResult:
    """The least peak the model reaches spending at most `max_extra_flops`."""
    return _solve_deep(graph, "min_peak", 0, max_extra_flops, depth, time_limit_s, mip_rel_gap)
