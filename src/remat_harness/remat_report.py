"""hlo-remat's JSON report, typed: what the sweep, the demo, the optimum and
the scripts read. The engine writes it in one place (patch_src/remat_report.cc);
the fields here follow that file's order."""

from __future__ import annotations

import json
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class GpuInstructionCounts:
    instructions: int = 0
    fusions: int = 0
    multi_output_fusions: int = 0
    tuple_custom_calls: int = 0


@dataclass(frozen=True)
class RematReport:
    module: str
    algorithm: str
    scheduler: str  # as asked
    scheduler_chosen: str  # the one kept ("default" tries three)
    budget_bytes: int
    peak_before_bytes: int  # the planner's count, on the schedule given
    peak_scheduled_bytes: int
    peak_after_bytes: int
    heap_sim_before_bytes: int
    heap_sim_scheduled_bytes: int
    heap_sim_after_bytes: int
    memory_figure: str  # "heap_simulator" (CPU) or "buffer_assignment" (GPU)
    allocation_before_bytes: int  # what the platform allocates
    allocation_after_bytes: int
    floor_bytes: int
    floor_at: str
    budget_met: bool
    instructions_before: int
    instructions_after: int
    instructions_added: int
    recomputed: int
    compressed: int
    undone: int
    out_of_line: int  # of undone: recomputations the FLOPs-per-byte rule took back
    pinned: int
    hoisted: int  # last readers moved earlier in the schedule
    hoisted_bytes: int  # what they free between their new and old places
    invariant_stacks_removed: int
    invariant_stack_bytes: int
    flops_before: float
    flops_after: float
    max_extra_flops: float | None  # -1: no cap
    stopped_by_flops_cap: bool
    pass_seconds: float
    phase_seconds: dict[str, float]
    plans_tried: int
    judgements: int  # plans judged by the platform's figure
    numerics: str  # "equal", "differ" or "skipped"
    step_time_before_s: float | None
    step_time_after_s: float | None
    step_time_ratio: float | None
    note: str
    platform: str  # "cpu" or "gpu"
    decisions: list[dict[str, Any]]
    # hlo-remat --platform gpu only:
    gpu_target: str = ""
    buffer_assignment_before_bytes: int = 0
    buffer_assignment_after_bytes: int = 0
    multi_output_fusions: int = 0
    heap_sim_at_hook_before_bytes: int = 0
    heap_sim_at_hook_after_bytes: int = 0
    allocation_at_hook_before_bytes: int = 0
    allocation_at_hook_after_bytes: int = 0
    gpu_baseline: GpuInstructionCounts | None = None
    gpu_final: GpuInstructionCounts | None = None
    scheduler_mem_limit_bytes: int = 0
    disabled_passes: list[str] = field(default_factory=list)
    wheel_reference: dict[str, Any] | None = None
    # The convolution and GEMM kernels the prediction assumed: "default"
    # (kernels_note says what that means) or "autotune results" (the file
    # recorded on the user's GPU, and how many lookups found an entry).
    kernels: str = ""
    kernels_note: str = ""
    autotune_results: str = ""
    autotune_hits: int = 0
    autotune_misses: int = 0
    # The target's memory and CUDA compute capability (major; 0 elsewhere),
    # as its spec gives them.
    device_memory_bytes: int = 0
    compute_capability_major: int = 0
    # `optimal` only: the solve and the plans it compared (what the MILP
    # found, which plan was kept and why); None for the other algorithms.
    optimal: dict[str, Any] | None = None
    # The frontier search's points and the one the budget chose
    # ({"chosen": i or None, "points": [{aim_bytes, peak_bytes, extra_flops,
    # kept, on_frontier, usable, and schedule, cap_flops or chains where
    # they apply}]}); None where the algorithm searches none.
    frontier: dict[str, Any] | None = None
    # Of plans_tried, sweeps made again from the moves the same sweep kept;
    # and sweeps made again in full (not in plans_tried) where another sweep
    # continued from a replayed one's plan. 0 from engines before them.
    sweeps_replayed: int = 0
    sweeps_rescored: int = 0
    # What --xla_rematerialization_frontier_cache did: "off", "searched",
    # "used", "stale" or "unreadable" (patch_src/frontier_cache.h).
    frontier_cache: str = "off"

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RematReport:
        """The report from its JSON object; a key it lacks is an error naming
        it (an engine older or newer than this harness), one it does not know
        is ignored."""
        names = {f.name for f in fields(cls)}
        known = {key: value for key, value in data.items() if key in names}
        for key in ("gpu_baseline", "gpu_final"):
            if isinstance(known.get(key), dict):
                known[key] = GpuInstructionCounts(**known[key])
        required = {
            f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING
        }
        missing = sorted(name for name in required if name not in known)
        if missing:
            raise ValueError(f"hlo-remat report lacks {', '.join(missing)}")
        return cls(**known)

    @classmethod
    def load(cls, path: Path) -> RematReport:
        """The report hlo-remat wrote to `path` (--report)."""
        return cls.from_json(json.loads(path.read_text()))

    def allocated(self, when: str) -> int:
        """The platform's figure "before" or "after": what it allocates
        (HeapSimulator on CPU, buffer assignment on GPU); HeapSimulator's
        where an engine reported no allocation."""
        value = self.allocation_before_bytes if when == "before" else self.allocation_after_bytes
        if value:
            return value
        return self.heap_sim_before_bytes if when == "before" else self.heap_sim_after_bytes

    @property
    def ratio(self) -> float:
        """After over before, in the platform's figure."""
        return self.allocated("after") / max(self.allocated("before"), 1)

    @property
    def extra_flops_fraction(self) -> float:
        return (self.flops_after - self.flops_before) / max(self.flops_before, 1.0)

    @property
    def extra_flops_pct(self) -> float:
        return 100.0 * self.extra_flops_fraction


def kernels_text(report: RematReport) -> str:
    """Which convolution and GEMM kernels a GPU prediction assumed, in words."""
    if report.kernels == "autotune results":
        return (
            f"recorded in {report.autotune_results} ({report.autotune_hits} found there, "
            f"{report.autotune_misses} lookups kept XLA's default)"
        )
    return report.kernels_note or "XLA's defaults"
