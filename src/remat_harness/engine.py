"""Runs `hlo-remat` in a subprocess and reads its JSON report."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from remat_harness.flag_table import flag
from remat_harness.paths import ToolMissing, hlo_remat_binary
from remat_harness.remat_report import RematReport

NO_BUDGET = 1 << 60  # above any peak: the engine measures and changes nothing


@dataclass(frozen=True)
class RematFlags:
    """The pass's flags for one run: hlo-remat takes them as arguments, a
    patched TensorFlow in XLA_FLAGS. Each field is the flag the engine's table
    calls by that key (`hlo-remat --list-flags`). None leaves a flag out (the
    engine's default)."""

    budget: int | str | None = None  # bytes, "512M" or "0.5x"
    algorithm: str | None = None
    scheduler: str | None = None
    max_extra_flops: float | str | None = None  # a fraction, or "none"
    optimal_seconds: float | None = None  # `optimal`'s solver time
    # A folder where each module's frontier is kept between compiles: a
    # later compile of the same module, at any budget, makes only its plan.
    frontier_cache: str | None = None

    def args(self) -> list[str]:
        values = (
            ("mem_limit", self.budget),
            ("algorithm", self.algorithm),
            ("scheduler", self.scheduler),
            ("max_extra_flops", self.max_extra_flops),
            ("optimal_seconds", self.optimal_seconds),
            ("frontier_cache", self.frontier_cache),
        )
        return [flag(key).arg(v) for key, v in values if v not in (None, "")]

    def xla_flags(self) -> str:
        """For XLA_FLAGS: the pass switched on, then the same flags."""
        return " ".join([f"--{flag('enable').name}", *self.args()])


MEASURE_ONLY = RematFlags(budget=NO_BUDGET)


@dataclass
class EngineRun:
    returncode: int
    raw: dict | None  # the JSON report as written (the CLI's contract)
    stderr: str

    @cached_property
    def report(self) -> RematReport | None:
        """Parsed once, on first use."""
        return RematReport.from_json(self.raw) if self.raw is not None else None


def run_hlo_remat(
    hlo: Path,
    flags: list[str],
    report_path: Path,
    output: Path | None = None,
    check_numerics: bool = False,
    timeout_s: float = 600,
    env: dict[str, str] | None = None,
    binary: Path | None = None,
) -> EngineRun:
    """`binary` (default: hlo_remat_binary()) on `hlo` with `flags`."""
    engine = binary if binary is not None else hlo_remat_binary()
    cmd = [str(engine), str(hlo), "--report", str(report_path), *flags]
    if output is not None:
        cmd += ["-o", str(output)]
    if check_numerics:
        cmd.append("--check-numerics")
    report_path.parent.mkdir(parents=True, exist_ok=True)
    if report_path.exists():
        report_path.unlink()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env)
    report = json.loads(report_path.read_text()) if report_path.exists() else None
    return EngineRun(proc.returncode, report, proc.stderr)


def allocated(record: dict, when: str) -> int:
    """A sweep record's platform figure before or after: what it allocates
    (HeapSimulator on CPU, buffer assignment on GPU); records older than it
    give HeapSimulator. (Reports: RematReport.allocated.)"""
    value = record.get(f"allocation_{when}_bytes")
    return int(value) if value else int(record[f"heap_sim_{when}_bytes"])


def baseline_peak(hlo: Path, work_dir: Path) -> int:
    """What the platform allocates for the module on its own schedule."""
    run = run_hlo_remat(hlo, MEASURE_ONLY.args(), work_dir / "baseline.json")
    if run.returncode != 0 or run.report is None:
        raise RuntimeError(f"hlo-remat failed on {hlo}: {run.stderr.strip()[-500:]}")
    return run.report.allocated("before")


def engine_build() -> str:
    """The build fingerprint of the hlo-remat in use: a hash of the engine and
    CLI sources compiled in, and the TensorFlow version ("3f2a9c01b7d4-tf2.21.0")."""
    binary = hlo_remat_binary()
    proc = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60)
    words = proc.stdout.split()
    if proc.returncode != 0 or len(words) != 2 or words[0] != "hlo-remat":
        raise ToolMissing(
            f"{binary} has no build fingerprint (--version): rebuild it (make engine)"
        )
    return words[1]
