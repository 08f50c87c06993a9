"""The demo's two halves run end to end on one algorithm: the table renders
from typed reports and the summary JSON is written (make demo runs them all)."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from remat_harness.demo import run_demo, run_gpu_demo
from remat_harness.hlo_dump import ModelSpec


def test_the_cpu_demo_writes_its_summary(tmp_path):
    out = io.StringIO()
    rows = run_demo(
        ModelSpec.parse("20"),
        Console(file=out, width=200),
        algorithms=("path",),
        out_dir=tmp_path,
        check_numerics=False,
    )
    assert rows and all(row.report is not None for row in rows), [r.error for r in rows]
    summary = json.loads((tmp_path / "resnet20_v1_b64_jit.summary.json").read_text())
    assert [row["report"]["algorithm"] for row in summary] == ["path"] * len(rows)
    assert "path" in out.getvalue() and "met" in out.getvalue()


@pytest.mark.gpusim
def test_the_gpu_demo_renders_buffer_assignment(tmp_path):
    out = io.StringIO()
    rows = run_gpu_demo(
        ModelSpec.parse("20"),
        Console(file=out, width=200),
        "h100_sxm",
        algorithms=("path",),
        out_dir=tmp_path,
    )
    assert len(rows) == 1 and rows[0].report is not None, rows[0].error
    assert rows[0].report.memory_figure == "buffer_assignment"
    assert "BufferAssigner allocations" in out.getvalue()
