"""Markdown tables and PNG plots from a sweep's JSON-lines results."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display on these machines
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from remat_harness.engine import allocated  # noqa: E402
from remat_harness.flag_table import algorithms  # noqa: E402

MIB = float(2**20)  # M in budgets is MiB: tables and plots say MiB too


def _mb(value: float | None) -> str:
    return "-" if value is None else f"{value / MIB:.1f} MiB"


def _algorithm_order(record: dict) -> int:
    name = record["algorithm"]
    order = algorithms()
    return order.index(name) if name in order else len(order)


def _ratio(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _step_time(record: dict) -> str:
    """The step-time ratio after/before, when the sweep measured it."""
    ratio = record.get("step_time_ratio")
    return "-" if ratio is None else f"{ratio:.2f}x"


def _budget_order(record: dict) -> float:
    try:
        return -float(record["budget"])
    except ValueError:
        return 0.0


def _where(r: dict) -> str:
    """The model, and the device when it is not the CPU: a GPU sweep's
    figures are predictions for that GPU (deviceless compile)."""
    device = r.get("device") or "cpu"
    return r["model"] if device == "cpu" else f"{r['model']} @ {device}"


def _file_part(where: str) -> str:
    return where.replace(" @ ", ".").replace(":", "_")


def model_table(records: list[dict]) -> str:
    rows = [r for r in records if r.get("kind") == "model"]
    lines = [
        "| model | modules | largest module peak | sum of module peaks "
        "| XLA buffer assignment (largest) | predicted GPU peak | step time (median) | note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r.get("status") != "ok":
            lines.append(f"| {_where(r)} | - | - | - | - | - | - | failed: {r.get('error', '')} |")
            continue
        step = r.get("step_time_median_s")
        totals = [t for t in r.get("xla_total_bytes", []) if t is not None]
        gpu = r.get("predicted_gpu_peak_bytes")
        lines.append(
            f"| {_where(r)} | {len(r['modules'])} | {_mb(r['largest_module_peak_bytes'])} | "
            f"{_mb(r['sum_module_peaks_bytes'])} | {_mb(max(totals)) if totals else '-'} | "
            f"{'-' if gpu is None else _mb(gpu)} | "
            f"{'-' if step is None else f'{step * 1000:.0f} ms'} | |"
        )
    return "\n".join(lines) + "\n"


def _optimum_cells(r: dict) -> str:
    optimum = r.get("optimum_extra_flops_pct")
    if optimum is None:
        return f" {r.get('optimum_status', '-')} | - |"
    stopped = "" if r.get("optimum_status") == "Optimal" else " (bound)"
    return f" {optimum:+.2f}%{stopped} | {r['gap_to_optimum_pct']:+.2f} pts |"


def cell_table(records: list[dict]) -> str:
    cells = [r for r in records if r.get("kind") == "offline"]
    cells.sort(
        key=lambda r: (
            _where(r),
            _algorithm_order(r),
            r["scheduler"],
            _budget_order(r),
        )
    )
    # Sweeps run with --optimum add the MILP's figures (optimum_run.py).
    with_optimum = any("optimum_status" in r for r in cells)
    lines = [
        "| model | algorithm | scheduler | budget | baseline | after | peak/baseline | floor "
        "| peak/floor | budget met | +FLOPs | step time | pass | numerics |"
        + (" optimum +FLOPs | gap to optimum |" if with_optimum else ""),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        + ("---|---|" if with_optimum else ""),
    ]
    for r in cells:
        head = f"| {_where(r)} | {r['algorithm']} | {r['scheduler']} | {r['budget']} |"
        if r.get("status") != "ok":
            lines.append(
                f"{head} - | - | - | - | - | failed | - | - | - | {r.get('error', '')[:120]} |"
            )
            continue
        scheduler = r["scheduler"]
        if scheduler == "default":
            scheduler += f" ({r['scheduler_chosen']})"
        head = f"| {_where(r)} | {r['algorithm']} | {scheduler} | {r['budget']} |"
        floor = r.get("floor_bytes")
        lines.append(
            f"{head} {_mb(allocated(r, 'before'))} | {_mb(allocated(r, 'after'))} | "
            f"{r['ratio']:.3f} | {_mb(floor)} | {_ratio(r.get('floor_ratio'), 2)} | "
            f"{'yes' if r['budget_met'] else 'no'} | {r['extra_flops_pct']:+.2f}% | "
            f"{_step_time(r)} | {r['pass_seconds']:.2f} s | {r['numerics']} |"
            + (_optimum_cells(r) if with_optimum else "")
        )
    return "\n".join(lines) + "\n"


def write_markdown(records: list[dict], path: Path, title: str) -> None:
    failed = sum(1 for r in records if r.get("status") != "ok")
    text = (
        f"# {title}\n\nPeaks are what the platform allocates for the module on its schedule "
        "(CPU: XLA's HeapSimulator; GPU: XLA's BufferAssigner); budgets are "
        "fractions of the baseline peak (TensorFlow's own schedule). The floor is a lower bound "
        "no schedule or recomputation can beat (entry parameters, plus the largest set of "
        "operands and result one instruction needs at once, shared buffers counted once). "
        "+FLOPs counts FLOPs, transcendentals and copied elements (HloCostAnalysis). Step time "
        "is the median XLA:CPU step after / before (hlo-remat --time N), when measured.\n\n"
        f"{failed} failed cell(s).\n\n## Model runs\n\n{model_table(records)}\n"
        f"## Rematerialization (hlo-remat; `@ gpu:<target>`: predicted for that GPU)\n\n"
        f"{cell_table(records)}"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _save_beside_legend(fig: plt.Figure, path: Path) -> Path:
    """Saved with the legend outside the axes kept in the picture."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def plot_peak_vs_budget(records: list[dict], out_dir: Path) -> list[Path]:
    """One PNG per model and scheduler: peak after vs budget, a solid line
    per algorithm, its extra FLOPs dashed on the right axis; the legend sits
    outside the data and names both kinds of line."""
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in records:
        if r.get("kind") == "offline" and r.get("status") == "ok":
            groups[(_where(r), r["scheduler"])].append(r)
    written = []
    for (model, scheduler), rows in sorted(groups.items()):
        fig, ax = plt.subplots(figsize=(8, 5))
        flops_ax = ax.twinx()
        baseline = allocated(rows[0], "before") / MIB
        budgets = sorted({r["budget_bytes"] / MIB for r in rows})
        ax.plot(budgets, budgets, color="grey", linestyle=":", label="budget (met on or below)")
        ax.axhline(baseline, color="black", linestyle="--", linewidth=1, label="peak before")
        for algorithm in algorithms():
            points = sorted(
                (r["budget_bytes"] / MIB, allocated(r, "after") / MIB, r["extra_flops_pct"])
                for r in rows
                if r["algorithm"] == algorithm
            )
            if not points:
                continue
            xs, peaks, flops = zip(*points, strict=True)
            (line,) = ax.plot(xs, peaks, marker="o", label=f"{algorithm}: peak after")
            flops_ax.plot(
                xs,
                flops,
                color=line.get_color(),
                linestyle="--",
                marker="x",
                alpha=0.6,
                label=f"{algorithm}: extra FLOPs %",
            )
        ax.set_xlabel("budget (MiB)")
        ax.set_ylabel("peak after (MiB, the platform's figure)")
        flops_ax.set_ylabel("extra FLOPs % (dashed)")
        ax.set_title(f"{model}, scheduler {scheduler}")
        handles, labels = ax.get_legend_handles_labels()
        more_handles, more_labels = flops_ax.get_legend_handles_labels()
        ax.legend(
            handles + more_handles,
            labels + more_labels,
            loc="upper left",
            bbox_to_anchor=(1.12, 1.0),
            fontsize=8,
        )
        path = out_dir / f"peak_vs_budget.{_file_part(model)}.{scheduler}.png"
        written.append(_save_beside_legend(fig, path))
    return written


def plot_before_after(records: list[dict], out_dir: Path) -> list[Path]:
    """The original project's chart, at every budget: per model (default
    scheduler), the peak before and each algorithm's peak after, one bar
    colour per budget; a missed budget's bar is hatched and pale."""
    by_model: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        if r.get("kind") == "offline" and r.get("status") == "ok" and r["scheduler"] == "default":
            by_model[_where(r)].append(r)
    written = []
    for model, rows in sorted(by_model.items()):
        algorithms = sorted(
            {r["algorithm"] for r in rows}, key=lambda a: _algorithm_order({"algorithm": a})
        )
        budgets = sorted({r["budget"] for r in rows}, key=lambda b: _budget_order({"budget": b}))
        width = 0.8 / max(len(budgets), 1)
        fig, ax = plt.subplots(figsize=(max(7, 1.6 * (len(algorithms) + 1)), 4.5))
        before = allocated(rows[0], "before") / MIB
        ax.bar([0], [before], 0.6, color="grey")
        legend = [Patch(color="grey", label="peak before")]
        ax.bar_label(ax.containers[-1], fmt="%.1f", fontsize=7)
        colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        for j, budget in enumerate(budgets):
            color = colors[j % len(colors)]
            cells = {r["algorithm"]: r for r in rows if r["budget"] == budget}
            xs = [1 + i - 0.4 + width * (j + 0.5) for i, a in enumerate(algorithms) if a in cells]
            shown = [cells[a] for a in algorithms if a in cells]
            bars = ax.bar(
                xs,
                [allocated(r, "after") / MIB for r in shown],
                width,
                color=color,
            )
            budget_mib = shown[0]["budget_bytes"] / MIB
            legend.append(Patch(color=color, label=f"budget {budget} ({budget_mib:.1f} MiB)"))
            for bar, r in zip(bars, shown, strict=True):
                if not r["budget_met"]:
                    bar.set_hatch("//")
                    bar.set_alpha(0.45)
            ax.bar_label(bars, fmt="%.1f", fontsize=7)
            ax.axhline(shown[0]["budget_bytes"] / MIB, color=color, linestyle=":", linewidth=1)
        legend.append(
            Patch(facecolor="white", edgecolor="black", hatch="//", label="hatched: budget missed")
        )
        ax.set_xticks(range(len(algorithms) + 1), ["before", *algorithms])
        ax.set_xlabel("algorithm (dotted lines: the budgets)")
        ax.set_ylabel("peak (MiB, the platform's figure)")
        ax.set_title(f"{model}: memory before and after")
        ax.legend(handles=legend, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
        written.append(_save_beside_legend(fig, out_dir / f"before_after.{_file_part(model)}.png"))
    return written


def plot_peak_vs_step_time(records: list[dict], out_dir: Path) -> list[Path]:
    """The speed lost for the memory saved: one PNG, peak / baseline against
    the step-time ratio, a colour per algorithm, a marker per model; only
    cells whose step time was measured (sweep --time N)."""
    rows = [
        r
        for r in records
        if r.get("kind") == "offline"
        and r.get("status") == "ok"
        and r.get("step_time_ratio") is not None
    ]
    if not rows:
        return []
    models = sorted({r["model"] for r in rows})
    markers = dict(zip(models, "osD^v<>pP*Xh", strict=False))
    fig, ax = plt.subplots(figsize=(8, 5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, algorithm in enumerate(algorithms()):
        color = colors[i % len(colors)]
        for model in models:
            points = [
                (r["step_time_ratio"], r["ratio"], r["budget"])
                for r in rows
                if r["algorithm"] == algorithm and r["model"] == model
            ]
            if not points:
                continue
            xs, ys, budgets = zip(*points, strict=True)
            ax.scatter(
                xs, ys, color=color, marker=markers.get(model, "o"), label=f"{algorithm}, {model}"
            )
            for x, y, budget in points:
                ax.annotate(budget, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.axvline(1.0, color="grey", linestyle=":", linewidth=1)
    for model in models:
        row = next(r for r in rows if r["model"] == model)
        if row.get("floor_bytes"):
            floor = row["floor_bytes"] / max(allocated(row, "before"), 1)
            ax.axhline(floor, color="grey", linestyle="--", linewidth=1)
            ax.annotate(
                f"floor, {model}",
                (0, floor),
                xycoords=("axes fraction", "data"),
                fontsize=7,
                xytext=(3, 3),
                textcoords="offset points",
            )
    ax.set_xlabel("step time after / before (XLA:CPU, median)")
    ax.set_ylabel("peak after / baseline (HeapSimulator)")
    ax.set_title("Memory saved against speed lost (labels: budget)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return [_save_beside_legend(fig, out_dir / "peak_vs_step_time.png")]
