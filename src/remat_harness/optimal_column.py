"""The catalogue's `optimal` column (issue 37): the `optimal` algorithm run at
each budget, and whether its solver found a plan and that plan was kept, or
`path`'s stood and why (the report's `optimal.outcome`)."""

from __future__ import annotations

from pathlib import Path

from remat_harness.engine import RematFlags, run_hlo_remat
from remat_harness.gpu import gpu_flags

# The report's outcome, shortened for a table cell.
SHORT_OUTCOMES = {
    "solver plan kept": "solver's plan",
    "path plan kept: the solver's was no better": "path's (solver's no better)",
    "path plan kept: the time limit passed before the solver had a plan": (
        "path's (no plan in time)"
    ),
    "path plan kept: the model is too large to solve within the time limit": (
        "path's (model too large)"
    ),
}
INFEASIBLE_PREFIX = "path plan kept: the MILP's model"


def run_optimal(
    hlo: Path, gpu_target: str | None, budget: str, seconds: float, out_dir: Path
) -> dict:
    """`optimal` on `hlo` at `budget` (a share such as "0.5") with `seconds`
    for its solver: what it kept, the solve, and the plan beside `path`'s."""
    flags = gpu_flags(gpu_target) if gpu_target else []
    flags += RematFlags(f"{budget}x", "optimal", optimal_seconds=seconds).args()
    report_path = out_dir / f"optimal_{budget}.json"
    run = run_hlo_remat(hlo, flags, report_path, timeout_s=1800)
    if run.returncode != 0 or run.raw is None:
        last = run.stderr.strip().splitlines()[-1:] or ["no message"]
        return {"error": last[0][:300]}
    raw = run.raw
    solve = raw.get("optimal") or {}
    before = max(float(raw["allocation_before_bytes"]), 1.0)
    flops = max(float(raw["flops_before"]), 1.0)
    return {
        "outcome": solve.get("outcome", "not run"),
        "status": solve.get("status", ""),
        "seconds": solve.get("seconds", 0.0),
        "columns": solve.get("columns", 0),
        "depth": solve.get("depth", 0),
        "ratio": raw["allocation_after_bytes"] / before,
        "met": bool(raw["budget_met"]),
        "extra_flops": (raw["flops_after"] - raw["flops_before"]) / flops,
        "path_ratio": solve.get("path_peak_bytes", 0) / before,
        "path_extra_flops": solve.get("path_extra_flops", 0.0) / flops,
        "pass_seconds": raw["pass_seconds"],
    }


def kept_text(entry: dict) -> str:
    """Which plan `optimal` kept, in a few words."""
    outcome = entry["outcome"]
    if outcome.startswith(INFEASIBLE_PREFIX):
        return "path's (model infeasible)"
    return SHORT_OUTCOMES.get(outcome, outcome)


def optimal_text(entry: dict | None) -> str:
    """One budget's cell: the plan kept, the solve, and the figures."""
    if entry is None:
        return "not run"
    if "error" in entry:
        return f"failed: {entry['error']}"
    met = "met" if entry["met"] else "missed"
    if entry["outcome"] == "not run":  # the pass ended before the comparison
        return f"solver not run; {entry['ratio']:.3f} {met}"
    solve = f"{entry['status']}, {entry['seconds']:.1f} s, {entry['columns']} columns"
    return (
        f"{kept_text(entry)}; {solve}; {entry['ratio']:.3f} {met}, "
        f"+{100 * entry['extra_flops']:.1f}% (path +{100 * entry['path_extra_flops']:.1f}%)"
    )
