"""The sweep's plots, read at a glance: every budget, met and missed told
apart, legends outside the data and naming every series."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest

from remat_harness import report
from remat_harness.report import MIB, plot_before_after, plot_peak_vs_budget


def _cell(algorithm: str, budget: str, after_mib: float, met: bool) -> dict:
    budget_mib = {"0.5": 50.0, "0.3": 30.0}[budget]
    return {
        "kind": "offline",
        "status": "ok",
        "model": "m",
        "device": "cpu",
        "scheduler": "default",
        "algorithm": algorithm,
        "budget": budget,
        "budget_bytes": int(budget_mib * MIB),
        "budget_met": met,
        "allocation_before_bytes": int(100 * MIB),
        "allocation_after_bytes": int(after_mib * MIB),
        "extra_flops_pct": 2.0,
    }


CELLS = [
    _cell("standard", "0.5", 48, True),
    _cell("standard", "0.3", 35, False),
    _cell("path", "0.5", 45, True),
    _cell("path", "0.3", 29, True),
]


@pytest.fixture
def figures(monkeypatch):
    """The figures the plots draw, kept open for the test to read."""
    kept: list[plt.Figure] = []
    real_close = plt.close
    monkeypatch.setattr(report.plt, "close", lambda fig: kept.append(fig))
    yield kept
    for fig in kept:
        real_close(fig)


def test_before_after_shows_every_budget_and_hatches_the_missed(tmp_path, figures):
    (png,) = plot_before_after(CELLS, tmp_path)
    assert png.read_bytes()[:4] == b"\x89PNG"
    (ax,) = [a for a in figures[0].axes]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == [
        "peak before",
        "budget 0.5 (50.0 MiB)",
        "budget 0.3 (30.0 MiB)",
        "hatched: budget missed",
    ]
    bars = [b for c in ax.containers for b in c]
    heights = sorted(round(b.get_height()) for b in bars)
    assert heights == [29, 35, 45, 48, 100]
    hatched = [round(b.get_height()) for b in bars if b.get_hatch()]
    assert hatched == [35]  # standard at 0.3 missed; path at 0.3 met
    assert ax.get_xlabel()
    assert ax.get_legend().get_bbox_to_anchor().x0 > ax.bbox.x1 - 1  # outside the axes


def test_peak_vs_budget_legend_names_the_flops_lines_and_sits_outside(tmp_path, figures):
    (png,) = plot_peak_vs_budget(CELLS, tmp_path)
    assert png.read_bytes()[:4] == b"\x89PNG"
    ax = figures[0].axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "standard: extra FLOPs %" in labels and "path: peak after" in labels
    assert ax.get_legend().get_bbox_to_anchor().x0 > ax.bbox.x1 - 1
