"""Shared fixtures: the engine binary and a runner for it."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from remat_harness.paths import ToolMissing, hlo_remat_binary


@dataclass
class Result:
    returncode: int
    report: dict | None
    stderr: str
    output_hlo: str


@pytest.fixture(scope="session")
def engine() -> Path:
    try:
        return hlo_remat_binary()
    except ToolMissing as e:
        pytest.fail(f"{e} (make test builds it first)")


@pytest.fixture
def run_engine(engine: Path, tmp_path: Path):
    counter = {"n": 0}

    def run(hlo_text: str, *flags: str, numerics: bool = False, env: dict | None = None) -> Result:
        counter["n"] += 1
        src = tmp_path / f"in{counter['n']}.hlo"
        src.write_text(hlo_text)
        report = tmp_path / f"report{counter['n']}.json"
        out = tmp_path / f"out{counter['n']}.hlo"
        cmd = [str(engine), str(src), "-o", str(out), "--report", str(report), *flags]
        if numerics:
            cmd.append("--check-numerics")
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
        return Result(
            proc.returncode,
            json.loads(report.read_text()) if report.exists() else None,
            proc.stderr,
            out.read_text() if out.exists() else "",
        )

    return run


def last_line(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.startswith("hlo-remat:")]
    return lines[-1] if lines else ""
