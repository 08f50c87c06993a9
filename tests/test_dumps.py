"""The DOT graphs and the memory log: written, rendered, and true to the report."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests import hlo_cases

DUMP_FLAGS = ("--xla_rematerialization_dump_dot", "--xla_rematerialization_dump_memlog")
DECISION = re.compile(
    r"^  decision\[(?P<action>[^\]]+)\] value=(?P<value>\S+) result=(?P<result>\S+) "
    r"at=(?P<at>\S+) before=(?P<before>\S+) bytes_saved=(?P<bytes>-?\d+) cost=(?P<cost>\S+)$"
)


@pytest.fixture(scope="module")
def dot_binary() -> str:
    found = shutil.which("dot")
    if found is None:
        pytest.fail("Graphviz `dot` is not installed; `make system-deps` installs it")
    return found


def run_with_dumps(run_engine, tmp_path: Path, case: str, *flags: str):
    dump = tmp_path / "dump"
    r = run_engine(case, *flags, *DUMP_FLAGS, "--dump-dir", str(dump))
    assert r.returncode == 0, r.stderr
    return r, dump


@pytest.mark.parametrize("name", ["standard", "path"])
def test_dot_graphs_render(run_engine, tmp_path, dot_binary, name):
    r, dump = run_with_dumps(
        run_engine,
        tmp_path,
        hlo_cases.PATH_CHAIN,
        f"--xla_rematerialization_algorithm={name}",
        "--xla_rematerialization_mem_limit=1",
    )
    for stage in ("before_remat", "after_remat"):
        dot = dump / f"path_chain.{stage}.dot"
        assert dot.exists(), sorted(p.name for p in dump.iterdir())
        svg = subprocess.run([dot_binary, "-Tsvg", str(dot)], capture_output=True, text=True)
        assert svg.returncode == 0, svg.stderr
        assert "<svg" in svg.stdout
    after = (dump / "path_chain.after_remat.dot").read_text()
    before = (dump / "path_chain.before_remat.dot").read_text()
    if r.report["recomputed"]:
        assert "RECOMPUTED" in after and "RECOMPUTED" not in before
    assert "fillcolor=" in after and "penwidth=" in after


def test_compressed_values_are_marked(run_engine, tmp_path, dot_binary):
    r, dump = run_with_dumps(
        run_engine,
        tmp_path,
        hlo_cases.COMPRESSIBLE,
        "--xla_rematerialization_algorithm=compress",
        "--xla_rematerialization_mem_limit=1",
        "--size-function",
        "tiled",
    )
    assert r.report["compressed"] == 1
    assert "COMPRESSED" in (dump / "compressible.after_remat.dot").read_text()


@pytest.mark.parametrize("name", ["standard", "path", "compress"])
def test_memlog_lines_match_report_decisions(run_engine, tmp_path, name):
    case, module = {
        "standard": (hlo_cases.CHAIN, "chain"),
        "path": (hlo_cases.PATH_CHAIN, "path_chain"),
        "compress": (hlo_cases.COMPRESSIBLE, "compressible"),
    }[name]
    r, dump = run_with_dumps(
        run_engine,
        tmp_path,
        case,
        f"--xla_rematerialization_algorithm={name}",
        "--xla_rematerialization_mem_limit=1",
        "--size-function",
        "tiled",
    )
    lines = (dump / f"{module}.remat_memlog.txt").read_text().splitlines()
    rows = [line for line in lines if not line.startswith(("#", "  "))]
    # One row per instruction of the final schedule: position, name, bytes.
    assert len(rows) == r.output_hlo.split("ENTRY", 1)[1].count(" = ")
    peak_so_far = 0
    for row in rows:
        _, _, in_use, peak, _largest, _largest_bytes = row.split()
        peak_so_far = max(peak_so_far, int(in_use))
        assert int(peak) == peak_so_far
    logged = [m.groupdict() for m in map(DECISION.match, lines) if m]
    reported = r.report["decisions"]
    assert reported, "the case must make the algorithm decide something"
    assert sorted(
        (d["action"], d["value"], d["result"], d["at"], d["before"]) for d in logged
    ) == sorted((d["action"], d["value"], d["result"], d["at"], d["before"]) for d in reported)
    assert sum(int(d["bytes"]) for d in logged) == sum(d["bytes_saved"] for d in reported)


def test_dumps_need_a_folder(run_engine):
    r = run_engine(hlo_cases.CHAIN, "--xla_rematerialization_dump_dot")
    assert r.returncode == 2
    assert "--dump-dir" in r.stderr and "--xla_dump_to" in r.stderr
