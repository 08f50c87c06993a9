"""Shared fixtures: the engine binary and a runner for it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from remat_harness.engine import run_hlo_remat
from remat_harness.paths import ToolMissing, hlo_remat_binary

# The files that take longest (cold TensorFlow dumps, whole-model passes with
# numerics), handed out first. `make test` runs pytest with --dist loadfile
# --no-loadscope-reorder (xdist's own order is most tests first): a long
# file handed out last runs alone while the other worker idles, as
# test_gpu_zoo.py did for the last 100 s of a fresh clone's CI. Longest
# first is the usual cure; the other files keep their order.
LONGEST_FIRST = (
    "test_model_memory.py",
    "test_gpu_zoo.py",
    "test_gpu_pipeline.py",
    "test_resnet_engine.py",
    "test_harness.py",
    "test_cli_messages.py",
    "test_frontier.py",
    "test_fit.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


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
        if not any(f.startswith("--xla_rematerialization_max_extra_flops") for f in flags):
            # Hand-made modules of a few instructions: one recomputation is a
            # large share of their FLOPs. The compute cap has tests of its own
            # (test_flops_cap.py); here it would hide the mechanics.
            flags = (*flags, "--xla_rematerialization_max_extra_flops=none")
        src = tmp_path / f"in{counter['n']}.hlo"
        src.write_text(hlo_text)
        out = tmp_path / f"out{counter['n']}.hlo"
        done = run_hlo_remat(
            src,
            list(flags),
            tmp_path / f"report{counter['n']}.json",
            output=out,
            check_numerics=numerics,
            timeout_s=300,
            env=env,
        )
        output_hlo = out.read_text() if out.exists() else ""
        return Result(done.returncode, done.raw, done.stderr, output_hlo)

    return run


def last_line(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.startswith("hlo-remat:")]
    return lines[-1] if lines else ""
