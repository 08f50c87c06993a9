"""What `remat-harness fit` shows: a table a user reads at a glance, the
allocation against the batch (with and without the pass, and the card's
line), and JSON for scripts."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from rich.table import Table  # noqa: E402

from remat_harness.fit import ANSWERS, FitResult  # noqa: E402

GB = 1e9
TITLES = {
    "without": "without the pass",
    "capped": "with the pass, FLOPs cap",
    "any_cost": "with the pass, any cost",
}


def _title(result: FitResult, answer: str) -> str:
    if answer == "capped":
        return f"with the pass, <= {100 * result.max_extra_flops:g}% extra FLOPs"
    return TITLES[answer]


def _no_flags(answer: str) -> str:
    """What the flags column says where the answer needs no pass: (a), or an
    answer whose batch fits without it (its own search ended lower)."""
    return "(the pass off)" if answer == "without" else "(none needed: fits without the pass)"


def render_table(result: FitResult) -> Table:
    card = result.card
    table = Table(
        title=f"{result.source.model} ({result.source.policy}) on {card.target}: "
        f"{card.memory_bytes / GB:.1f} GB, {card.budget_bytes / GB:.2f} GB for the step "
        f"(reserve {card.reserve_bytes / GB:.2f} GB, margin {card.margin_bytes / GB:.2f} GB)",
        title_justify="left",
    )
    for column in ("", "largest batch", "predicted allocation", "extra FLOPs", "XLA_FLAGS"):
        table.add_column(column, overflow="fold")
    answers = result.to_json()["answers"]
    for answer in ANSWERS:
        record = answers[answer]
        if record is None:
            table.add_row(_title(result, answer), "none: batch 1 does not fit", "", "", "")
            continue
        table.add_row(
            _title(result, answer),
            str(record["batch"]),
            f"{record['allocation_bytes'] / GB:.2f} GB",
            f"+{100 * record['extra_flops']:.1f}%",
            record["xla_flags"] or _no_flags(answer),
        )
    return table


def gain_text(result: FitResult) -> str:
    """(b)/(a) and (c)/(a): how much larger a batch the pass buys."""
    base = result.batch("without")
    if base == 0:
        return "batch 1 does not fit without the pass"
    capped, free = result.batch("capped"), result.batch("any_cost")
    return (
        f"the pass trains {capped / base:.2f}x the batch at <= "
        f"{100 * result.max_extra_flops:g}% extra FLOPs, {free / base:.2f}x at any cost"
    )


def fall_lines(result: FitResult) -> list[str]:
    """One line per answer whose figure was seen lower above its failing
    batch (FitResult.fall_above): a larger batch may fit than it says."""
    lines = []
    for letter, answer in zip("abc", ANSWERS, strict=True):
        fall = result.fall_above(answer)
        if fall is None:
            continue
        (b1, f1), (b2, f2) = fall
        lines.append(
            f"({letter}): {f1 / GB:.2f} GB at batch {b1}, but {f2 / GB:.2f} GB at {b2} "
            f"(the compiler's choices are not monotone in the batch): a batch above "
            f"{result.batch(answer)} may fit too"
        )
    return lines


def plot_fit(result: FitResult, path: Path) -> Path:
    probes = sorted(result.probes, key=lambda p: p.batch)
    fig, ax = plt.subplots(figsize=(8, 5))
    for answer, marker in zip(ANSWERS, ("o-", "s-", "^-"), strict=True):
        shown = [(p.batch, f) for p in probes if (f := p.figure(answer)) is not None]
        ax.plot(
            [b for b, _ in shown], [f / GB for _, f in shown], marker, label=_title(result, answer)
        )
    card = result.card
    ax.axhline(
        card.budget_bytes / GB,
        color="black",
        linestyle="--",
        label=f"{card.target}: {card.budget_bytes / GB:.1f} GB for the step",
    )
    for letter, answer in zip("abc", ANSWERS, strict=True):
        batch = result.batch(answer)
        if batch:
            ax.axvline(batch, color="grey", linestyle=":", linewidth=0.8)
            ax.annotate(
                f"({letter}) {batch}",
                (batch, 1.0),
                xycoords=("data", "axes fraction"),
                rotation=90,
                va="top",
                ha="right",
                fontsize=8,
                color="grey",
            )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch size")
    ax.set_ylabel(
        "predicted allocation (GB, buffer assignment)\nwith the pass: at the card's budget"
    )
    ax.set_title(f"{result.source.model} ({result.source.policy}) on {card.target}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_outputs(result: FitResult, out: Path) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    data = out / "fit.json"
    data.write_text(json.dumps(result.to_json(), indent=2) + "\n")
    return data, plot_fit(result, out / "fit.png")
