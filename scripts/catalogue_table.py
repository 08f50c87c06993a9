"""The catalogue table of issue 36 (README, docs/measured.md): every model of
remat_harness/catalogue.py, f32 and mixed bf16, on CPU and h100_sxm; one
engine run each writes the module's frontier, and each budget is answered
from it. Beside it the floor, the proven lower bound on the extra FLOPs any
plan needs at each budget, and the pass time. Resumable: one JSON line per
model and device in OUT/results.jsonl; a model that does not build is a line
with its reason.

    python scripts/catalogue_table.py --devices cpu,gpu:h100_sxm --out reports/catalogue
    python scripts/catalogue_table.py --models app_vgg16,decoder_bf16 --devices cpu
    python scripts/catalogue_table.py --devices cpu --optimal 10   # adds `optimal`
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from remat_harness.catalogue import catalogue_names
from remat_harness.catalogue_verdicts import milp_text, pct, reach_text, verdict_markdown
from remat_harness.frontier import Frontier, answer_budget, run_frontier
from remat_harness.gpu import parse_device
from remat_harness.hlo_dump import DumpError, ModelSpec
from remat_harness.optimal_column import optimal_text, run_optimal
from remat_harness.optimum import Graph, load_graph, solve_min_flops
from remat_harness.optimum_bound import BoundResult, out_of_reach
from remat_harness.optimum_run import step_hlo
from remat_harness.paths import REPORTS_DIR

BUDGETS = ("0.5", "0.33")
# The target: met or within 1.5x the floor; FLOPs at most
# max(10%, 1.25x the bound).
FLOOR_FACTOR, FLOPS_FLOOR, BOUND_FACTOR = 1.5, 0.10, 1.25
# Chains the MILP beside an answer over the FLOPs target may rebuild.
MILP_DEPTH = 2


def run_cell(
    model: str, device: str, batch: int, out: Path, time_limit: float, milp_seconds: float
) -> dict:
    platform, target = parse_device(device)
    record: dict = {"model": model, "device": device, "batch": batch}
    started = time.monotonic()
    try:
        hlo = step_hlo(ModelSpec.parse(model, batch_size=batch), platform)
    except (DumpError, ValueError) as e:
        return record | {"error": f"does not build: {str(e).splitlines()[-1][:200]}"}
    record["dump_seconds"] = time.monotonic() - started
    cell_dir = cell_dir_of(out, record)
    try:
        run = run_frontier(
            hlo, cell_dir, "path", target, BUDGETS, True, time_limit, check_numerics=not target
        )
    except RuntimeError as e:
        return record | {"error": str(e)[:300]}
    report = json.loads((cell_dir / "report.json").read_text())
    f = run.frontier
    record |= {
        "memory_figure": f.memory_figure,
        "before_bytes": f.allocation_before_bytes,
        "start_bytes": f.start_bytes,
        "floor_bytes": f.floor_bytes,
        "pass_seconds": report["pass_seconds"],
        "numerics": report["numerics"],
        "points": len(f.points),
    }
    for budget, nbytes in zip(BUDGETS, run.budgets, strict=True):
        record[budget] = cell_answer(f, nbytes, run.bounds.get(nbytes))
    add_milp(record, cell_dir, milp_seconds)
    add_out_of_reach(record, cell_dir, time_limit)
    return record


def cell_dir_of(out: Path, record: dict) -> Path:
    return out / record["device"].replace(":", "_") / record["model"]


def _answers_lacking(
    record: dict, key: str, seconds: float, wants: Callable[[dict], bool]
) -> list[dict]:
    """The record's answers that `wants` picks and that have no `key` yet
    (none when no seconds are given to add it)."""
    return [
        record[budget]
        for budget in BUDGETS
        if seconds > 0
        and record.get(budget)
        and wants(record[budget])
        and key not in record[budget]
    ]


def add_milp(record: dict, cell_dir: Path, seconds: float) -> bool:
    """The MILP beside each answer over the FLOPs target that has none yet;
    whether one was added."""
    wanted = _answers_lacking(record, "milp", seconds, lambda a: a["flops_ok"] is False)
    if not wanted:
        return False
    graph = load_graph(cell_dir / "graph.json")
    report = json.loads((cell_dir / "report.json").read_text())
    for answer in wanted:
        answer["milp"] = milp_at_the_peak(graph, report, answer, seconds)
    return True


def add_out_of_reach(record: dict, cell_dir: Path, seconds: float) -> bool:
    """Beside each answer that misses its budget by more than the floor
    allows and has none yet: the level below which the bound rules out every
    plan within the engine's compute cap (optimum_bound.out_of_reach),
    bisected between the budget and the answer's peak. Says whether the
    floor is loose there or the search stops short. Whether one was added."""
    wanted = _answers_lacking(record, "out_of_reach", seconds, lambda a: a["memory_ok"] is False)
    if not wanted:
        return False
    graph = load_graph(cell_dir / "graph.json")
    report = json.loads((cell_dir / "report.json").read_text())
    # The engine's compute cap as a fraction of the step (negative: none).
    limit = report["max_extra_flops"]
    cap = None if limit is None or limit < 0 else limit / max(report["flops_before"], 1.0)
    for answer in wanted:
        reach = out_of_reach(
            graph, cap, answer["budget_bytes"], answer["peak_bytes"], time_limit_s=seconds
        )
        answer["out_of_reach"] = {
            "below_ratio": reach.below_bytes / max(record["before_bytes"], 1),
            "open_ratio": reach.open_bytes / max(record["before_bytes"], 1),
            "cap": cap,
            "solves": reach.solves,
            "seconds": reach.seconds,
        }
    return True


def add_optimal(record: dict, out: Path, seconds: float) -> bool:
    """`optimal` at each budget that has no run of it yet; whether one was
    added."""
    wanted = [
        budget
        for budget in BUDGETS
        if seconds > 0 and record.get(budget) and "optimal" not in record[budget]
    ]
    if not wanted or "error" in record:
        return False
    platform, target = parse_device(record["device"])
    hlo = step_hlo(ModelSpec.parse(record["model"], batch_size=record["batch"]), platform)
    for budget in wanted:
        record[budget]["optimal"] = run_optimal(
            hlo, target, budget, seconds, cell_dir_of(out, record)
        )
    return True


def milp_at_the_peak(graph: Graph, report: dict, answer: dict, seconds: float) -> dict:
    """Where the answer spends more than the FLOPs target: the least extra
    FLOPs the fixed-schedule MILP (chains of up to MILP_DEPTH producers) on
    the cell's `graph` needs to reach the answer's peak in the planner's
    count. Says whether the bound is loose (the MILP spends as much) or the
    search overspends. The planner's count of the applied plan (the first
    budget's) is in the run's `report`; another point's is estimated as the
    same share of the planner's figure before as its peak is of the
    platform's (low: the planner counts apart more of what the platform
    shares after a plan)."""
    if answer["peak_bytes"] == report["allocation_after_bytes"]:
        planner_bytes = report["peak_after_bytes"]
    else:
        before = max(report["allocation_before_bytes"], 1)
        planner_bytes = int(answer["peak_bytes"] * graph.peak_bytes / before)
    solved = solve_min_flops(graph, planner_bytes, MILP_DEPTH, seconds)
    return {
        "status": solved.status,
        "optimal": solved.optimal,
        "extra_flops": solved.extra_flops_fraction,
        "seconds": solved.seconds,
    }


def cell_answer(f: Frontier, nbytes: int, solved: BoundResult | None) -> dict:
    """The frontier's answer at one budget, judged against the targets."""
    bound = solved.extra_flops_fraction if solved else None
    point = answer_budget(f, nbytes)
    peak = f.start_bytes if point is None else point.peak_bytes
    extra = 0.0 if point is None else point.extra_flops / max(f.flops_before, 1.0)
    met = peak <= nbytes
    near_floor = peak <= FLOOR_FACTOR * f.floor_bytes
    allowed = max(FLOPS_FLOOR, BOUND_FACTOR * bound) if bound is not None else None
    return {
        "budget_bytes": nbytes,
        "peak_bytes": peak,
        "ratio": peak / max(f.allocation_before_bytes, 1),
        "met": met,
        "extra_flops": extra,
        "bound": bound,
        "bound_status": "not solved" if solved is None else solved.status,
        "memory_ok": met or near_floor,
        "flops_ok": None if allowed is None else extra <= allowed + 1e-9,
    }


def _bound_text(a: dict, below_floor: bool) -> str:
    if a["bound"] is not None:
        # The floor assumes every entry parameter live through the step; on
        # CPU a donated one ends at its last use, so the relaxation may price
        # a budget below the floor that the floor says no plan reaches.
        below = " (the budget is below the floor)" if below_floor else ""
        # A solve stopped by its time limit gives its dual bound: still a
        # lower bound, often far under the optimum (a 0% there proves
        # nothing; docs/measured.md, "Frontiers on other schedules").
        stopped = "" if a.get("bound_status") in (None, "Optimal") else " (stopped)"
        return f"bound {pct(a['bound'])}{stopped}{below}"
    return "impossible" if a.get("bound_status") == "Infeasible" else "bound not solved"


def _cell_text(a: dict, below_floor: bool = False) -> str:
    mark = "" if a["met"] else (" **missed**" if not a["memory_ok"] else " missed, ≤1.5× floor")
    flops = "" if a["flops_ok"] in (None, True) else " (over the FLOPs target)"
    return (
        f"{a['ratio']:.3f}{mark}, +{pct(a['extra_flops'])}{flops}, {_bound_text(a, below_floor)}"
        f"{milp_text(a)}{reach_text(a)}"
    )


def markdown(records: list[dict]) -> str:
    lines = [
        "| model | device | floor | 0.5x: peak, +FLOPs, bound | 0.33x: peak, +FLOPs, bound "
        "| pass s | numerics |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in sorted(records, key=lambda r: (r["device"], r["model"])):
        if "error" in r:
            lines.append(f"| {r['model']} | {r['device']} | {r['error']} | | | | |")
            continue
        floor = r["floor_bytes"] / max(r["before_bytes"], 1)
        cells = [_cell_text(r[b], r[b]["budget_bytes"] < r["floor_bytes"]) for b in BUDGETS]
        lines.append(
            f"| {r['model']} | {r['device']} | {floor:.3f} | {cells[0]} | "
            f"{cells[1]} | {r['pass_seconds']:.1f} | {r['numerics']} |"
        )
    return "\n".join(lines) + "\n" + verdict_markdown(records, BUDGETS) + optimal_markdown(records)


def optimal_markdown(records: list[dict]) -> str:
    """Where `optimal` ran: the plan it kept at each budget (the solver's, or
    `path`'s and why), its solve, and its figures beside `path`'s."""
    ran = [r for r in records if any("optimal" in (r.get(b) or {}) for b in BUDGETS)]
    if not ran:
        return ""
    lines = [
        "",
        "`optimal` (the plan kept; the solve: status, seconds, columns; after/before "
        "and extra FLOPs, `path`'s beside them):",
        "",
        "| model | device | 0.5x | 0.33x |",
        "| --- | --- | --- | --- |",
    ]
    for r in sorted(ran, key=lambda r: (r["device"], r["model"])):
        cells = [optimal_text(r[b].get("optimal")) for b in BUDGETS]
        lines.append(f"| {r['model']} | {r['device']} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models", default="", help="comma-separated (default: all)")
    parser.add_argument("--devices", default="cpu,gpu:h100_sxm")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--time-limit", type=float, default=20, help="seconds per bound solve")
    parser.add_argument(
        "--milp",
        type=float,
        default=0,
        help="seconds for the MILP beside each answer over the FLOPs target (0: none)",
    )
    parser.add_argument(
        "--optimal",
        type=float,
        default=0,
        help="seconds for the optimal algorithm's solver at each budget (0: not run)",
    )
    parser.add_argument("--out", type=Path, default=REPORTS_DIR / "catalogue")
    args = parser.parse_args()
    console = Console()
    models = args.models.split(",") if args.models else catalogue_names()
    args.out.mkdir(parents=True, exist_ok=True)
    results = args.out / "results.jsonl"
    done: dict[tuple[str, str], dict] = {}
    if results.exists():
        for line in results.read_text().splitlines():
            r = json.loads(line)
            done[(r["model"], r["device"])] = r

    def save() -> None:
        results.write_text("".join(json.dumps(r) + "\n" for r in done.values()))

    # Stored records gain what they lack (a record that failed has no answers).
    for add, seconds in ((add_milp, args.milp), (add_out_of_reach, args.time_limit)):
        if [r for r in done.values() if add(r, cell_dir_of(args.out, r), seconds)]:
            save()
    for r in done.values():
        if (
            r["device"] in args.devices.split(",")
            and (not args.models or r["model"] in models)
            and add_optimal(r, args.out, args.optimal)
        ):
            save()  # after each cell: an interrupted run keeps what it made
            console.print(f"{r['device']} {r['model']}: optimal")
    for device in args.devices.split(","):
        for model in models:
            if (model, device) in done:
                continue
            record = run_cell(model, device, args.batch_size, args.out, args.time_limit, args.milp)
            add_optimal(record, args.out, args.optimal)
            done[(model, device)] = record
            with results.open("a") as out:
                out.write(json.dumps(record) + "\n")
            console.print(f"{device} {model}: {record.get('error') or 'done'}")
    table = markdown(list(done.values()))
    (args.out / "table.md").write_text(table)
    console.print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
