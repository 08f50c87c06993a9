"""Two builds of the engine on the same modules: whether they plan the same
(the frontier file and the module written, byte for byte, and every report
figure but the times; or the module and the report the same but for the
names of clones, the numbers in names and how often a fused body was cloned,
one name for one) and what each pass took, run after
run, the builds alternating. For a change meant to be exact and faster: on a shared 2-core
machine one binary's pass time moves by tens of percent from run to run
(docs/measured.md, "the lanes' copies freed"), so one run of each says
nothing; alternate, repeat, and read the spread.

    python scripts/ab_engines.py --base /tmp/base-hlo-remat --new build/engine/hlo-remat-engine \
        --modules app_resnet152,app_densenet121 --devices cpu,gpu:h100_sxm --runs 3

A module is a file of HLO text or a model name (`remat-harness` names, the
catalogue's included, at --batch-size as the catalogue sweeps them; the step
is traced if it is not cached). Exit status 1
when any module plans differently.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

from remat_harness.engine import RematFlags, run_hlo_remat
from remat_harness.gpu import gpu_flags, parse_device
from remat_harness.optimum_run import resolve_module

# What differs between two runs of one binary: the clocks; and between two
# builds that make the same plans in other ways: how many sweeps were made
# again from the moves recorded.
# How a run went, not what it planned: clocks, sweeps replayed, and whether a
# kept frontier answered (a field engines before 8e0aa0b do not write).
HOW_IT_RAN = (
    "pass_seconds",
    "phase_seconds",
    "sweeps_replayed",
    "sweeps_rescored",
    "frontier_cache",
)
# What may name an instruction or a computation in HLO text and in the
# report: a clone's name counts the names the module has given out, which a
# change to what the search tries and drops moves (a sweep replayed).
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
# The numbers a name counter adds (`bitcast.12`, `fusion.3.remat2`), with
# the dot of a counter that one build gave and the other did not
# (`fused_computation.7.clone.3.clone` for `fused_computation.7.clone.clone`,
# a fused body cloned where the other build had not taken its name): a
# renaming changes these only, or the name of a clone the pass added
# (`fusion.3.remat2.1.remat` for `fusion.3.remat3`), never an opcode or a
# type.
NAME_NUMBER = re.compile(r"\.?\d+")
CLONE_MARK = "remat"
# A computation cloned once more in one build than in the other: a fused body
# the cold search cloned from a clone (`fused_computation.7.clone.clone`)
# where a plan made from a kept frontier cloned the original once
# (`fused_computation.7.clone.1`). The one-to-one renaming still tells two
# computations apart.
CLONE_CHAIN = re.compile(r"(?:\.clone)+")


def name_stem(name: str) -> str:
    """A name without what its counters and clone chains add."""
    return CLONE_CHAIN.sub(".clone", NAME_NUMBER.sub("", name))


def renamable(a: str, b: str) -> bool:
    """Whether name `a` may stand for `b` in a renaming."""
    if a == b or (CLONE_MARK in a and CLONE_MARK in b):
        return True
    # A counted name has its dot (`bitcast.12`); a type has none (`f32`).
    counted = "." in a and "." in b
    return counted and name_stem(a) == name_stem(b)


@dataclass
class Plan:
    """What one run planned, as bytes to compare, and the time it took."""

    pass_seconds: float
    fingerprint: dict[str, str]


@dataclass
class Cell:
    module: str
    device: str
    seconds: dict[str, list[float]] = field(default_factory=dict)
    differences: list[str] = field(default_factory=list)
    # Of the differences, those that are the same text but for names.
    renamed: list[str] = field(default_factory=list)


def planned_report(report: dict) -> str:
    """The report less its clocks, as text."""
    return json.dumps({k: v for k, v in report.items() if k not in HOW_IT_RAN}, sort_keys=True)


def fingerprint(report: dict, out_dir: Path) -> dict[str, str]:
    """Each file the run wrote, hashed, and the report less its clocks."""
    files = {name: out_dir / name for name in ("frontier.json", "out.hlo")}
    prints = {n: hashlib.sha256(p.read_bytes()).hexdigest() for n, p in files.items()}
    prints["report"] = hashlib.sha256(planned_report(report).encode()).hexdigest()
    return prints


def same_but_names(base: str, new: str) -> bool:
    """Whether two texts differ only in names (renamable), one name of `new`
    for each of `base` throughout: the same module, its clones named
    otherwise."""
    base_parts, new_parts = NAME.split(base), NAME.split(new)
    if base_parts != new_parts:
        return False
    forward: dict[str, str] = {}
    backward: dict[str, str] = {}
    for a, b in zip(NAME.findall(base), NAME.findall(new), strict=True):
        if not renamable(a, b):
            return False
        if forward.setdefault(a, b) != b or backward.setdefault(b, a) != a:
            return False
    return True


def written(out_dir: Path) -> str:
    """What a run wrote that names instructions: the module and the report."""
    report = json.loads((out_dir / "report.json").read_text())
    return (out_dir / "out.hlo").read_text() + "\n" + planned_report(report)


def differences(base: dict[str, str], new: dict[str, str]) -> list[str]:
    """What the two runs wrote differently, by name."""
    return sorted(name for name in base.keys() | new.keys() if base.get(name) != new.get(name))


def run_once(binary: Path, hlo: Path, device: str, budget: str, out_dir: Path) -> Plan:
    _, target = parse_device(device)
    out_dir.mkdir(parents=True, exist_ok=True)
    flags = gpu_flags(target) if target else []
    flags += RematFlags(budget, "path").args()
    flags.append(f"--frontier={out_dir / 'frontier.json'}")
    run = run_hlo_remat(
        hlo, flags, out_dir / "report.json", out_dir / "out.hlo", timeout_s=3600, binary=binary
    )
    if run.returncode != 0 or run.raw is None:
        raise RuntimeError(f"{binary} on {hlo}: exit {run.returncode}: {run.stderr[-500:]}")
    return Plan(run.raw["pass_seconds"], fingerprint(run.raw, out_dir))


def run_cell(
    builds: dict[str, Path], hlo: Path, module: str, device: str, budget: str, runs: int, out: Path
) -> Cell:
    cell = Cell(module, device, {name: [] for name in builds})
    first: dict[str, dict[str, str]] = {}
    order = list(builds)
    for run in range(runs):
        # Each build goes first every other run: a machine that slows down
        # (or warms up) over a series favours neither.
        for name in order if run % 2 == 0 else reversed(order):
            cell_dir = out / device.replace(":", "_") / Path(module).name / name
            plan = run_once(builds[name], hlo, device, budget, cell_dir)
            cell.seconds[name].append(plan.pass_seconds)
            first.setdefault(name, plan.fingerprint)
    cell.differences = differences(*first.values())
    if cell.differences and set(cell.differences) <= {"out.hlo", "report"}:
        # The last run's files of each (a build writes the same every run).
        cell_dir = out / device.replace(":", "_") / Path(module).name
        if same_but_names(*(written(cell_dir / name) for name in order)):
            cell.renamed = list(cell.differences)
    return cell


def cell_line(cell: Cell) -> str:
    if not cell.differences:
        same = "same"
    elif cell.renamed == cell.differences:
        same = "same but names (" + ", ".join(cell.renamed) + ")"
    else:
        same = "DIFFERENT: " + ", ".join(cell.differences)
    times = "; ".join(
        f"{name} {', '.join(f'{s:.2f}' for s in sorted(seconds))}"
        f" (min {min(seconds):.2f}, median {statistics.median(seconds):.2f})"
        for name, seconds in cell.seconds.items()
    )
    return f"{cell.module} {cell.device}: {same}; {times}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="the engine before the change")
    parser.add_argument("--new", type=Path, required=True, help="the engine after it")
    parser.add_argument("--modules", required=True, help="comma-separated files or model names")
    parser.add_argument("--devices", default="cpu", help="cpu and/or gpu:TARGET, comma-separated")
    parser.add_argument(
        "--budget", default="0.5", help="the budget, as the engine's mem_limit flag takes it"
    )
    parser.add_argument("--runs", type=int, default=3, help="runs of each build per module")
    parser.add_argument("--batch-size", type=int, default=16, help="of a model named")
    parser.add_argument("--out", type=Path, default=Path("reports/ab"))
    args = parser.parse_args(argv)
    for binary in (args.base, args.new):
        if not binary.is_file():
            parser.error(f"{binary}: no such engine binary")
    builds = {"base": args.base, "new": args.new}
    cells = []
    for module in args.modules.split(","):
        for device in args.devices.split(","):
            hlo = resolve_module(module, parse_device(device)[0], args.batch_size)
            cell = run_cell(builds, hlo, module, device, args.budget, args.runs, args.out)
            print(cell_line(cell), flush=True)
            cells.append(cell)
    args.out.mkdir(parents=True, exist_ok=True)
    results = [vars(cell) for cell in cells]
    (args.out / "ab.json").write_text(json.dumps(results, indent=1) + "\n")
    return 1 if any(cell.differences != cell.renamed for cell in cells) else 0


if __name__ == "__main__":
    sys.exit(main())
