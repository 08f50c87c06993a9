"""What the catalogue table (scripts/catalogue_table.py) says against issue
36, read from its records alone, so that the one command that sweeps also
states the result: the promises the frontier makes checked on every model,
and every answer outside the targets listed with its cause.

A record is one model on one device: `floor_bytes`, `before_bytes`,
`numerics`, and per budget ("0.5", "0.33", loosest first) the answer
`cell_answer` made (peak, met, extra FLOPs, bound, `memory_ok`,
`flops_ok`, and where they were run the MILP at the answer's peak and what
the bound rules out below it)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

Record = dict[str, Any]

# A peak within this share of the allocation counts as the same plan's
# (the records' ratios are exact; this only absorbs float noise).
_SAME = 1e-9


@dataclass(frozen=True)
class Verdict:
    """One line about one model on one device."""

    model: str
    device: str
    text: str

    def line(self) -> str:
        return f"- {self.model} on {_device_name(self.device)}: {self.text}"


def _device_name(device: str) -> str:
    return device.removeprefix("gpu:")


def pct(value: float) -> str:
    """A share as the table and the verdicts print it: one decimal, in %."""
    return f"{100 * value:.1f}%"


def _answers(record: Record, budgets: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
    return [(b, record[b]) for b in budgets if record.get(b)]


def broken_promises(records: Sequence[Record], budgets: Sequence[str]) -> list[Verdict]:
    """Where a record breaks what the frontier promises between its budgets
    (`budgets` loosest first): a tighter budget ends higher; a budget is
    missed that a tighter budget's plan meets; a met budget spends more than
    a tighter budget's plan that also meets it; an answer under the floor; a
    CPU plan whose numerics differ. Empty when every promise holds."""
    broken: list[Verdict] = []
    for r in records:
        if "error" in r:
            continue
        answers = _answers(r, budgets)
        for (loose, a), (tight, b) in zip(answers, answers[1:], strict=False):
            if b["peak_bytes"] > a["peak_bytes"]:
                broken.append(
                    Verdict(r["model"], r["device"], f"{tight}x ends higher than {loose}x")
                )
            if b["peak_bytes"] <= a["budget_bytes"]:
                if not a["met"]:
                    text = f"{loose}x missed, though {tight}x's plan is under it"
                    broken.append(Verdict(r["model"], r["device"], text))
                elif a["extra_flops"] > b["extra_flops"] + _SAME:
                    text = f"{loose}x spends more than {tight}x's plan, which also meets it"
                    broken.append(Verdict(r["model"], r["device"], text))
        for budget, a in answers:
            if a["peak_bytes"] < r["floor_bytes"]:
                text = f"{budget}x answered under the floor"
                broken.append(Verdict(r["model"], r["device"], text))
        if r["device"] == "cpu" and r.get("numerics") != "equal":
            text = f"numerics {r.get('numerics')}"
            broken.append(Verdict(r["model"], r["device"], text))
    return broken


def _bound_words(a: dict[str, Any]) -> str:
    stopped = "" if a.get("bound_status") in (None, "Optimal") else " (a stopped solve)"
    return f"{pct(a['bound'])}{stopped}"


def milp_text(a: dict[str, Any]) -> str:
    """The fixed-schedule MILP at the answer's peak, where it was run (the
    table's cell says the same)."""
    milp = a.get("milp")
    if milp is None:
        return ""
    if milp["extra_flops"] is None:
        return f"; MILP at this peak: {milp['status'].lower()}"
    proven = "" if milp["optimal"] else " (not proven optimal)"
    return f"; MILP at this peak +{pct(milp['extra_flops'])}{proven}"


def reach_text(a: dict[str, Any]) -> str:
    """What the bound rules out below an answer that missed by more than the
    floor allows (catalogue_table.py's add_out_of_reach): the verdict's words
    and the table cell's alike, or "" where it was not bisected."""
    reach = a.get("out_of_reach")
    if reach is None:
        return ""
    if reach["below_ratio"] <= 0:
        return "; the bound rules out nothing down to the budget"
    plans = "every plan" if reach["cap"] is None else f"every plan within +{pct(reach['cap'])}"
    return (
        f"; the bound rules out {plans} below {reach['below_ratio']:.3f}"
        f" and nothing above {reach['open_ratio']:.3f}"
    )


def cause(record: Record, budget: str) -> str | None:
    """Why the answer at `budget` is outside issue 36's targets (met or
    within 1.5x the floor; extra FLOPs at most max(10%, 1.25x the bound)
    where the bound is computed), or None when it is within them."""
    a = record.get(budget)
    if not a:
        return None
    head = f"{budget}x: {a['ratio']:.3f} at +{pct(a['extra_flops'])}"
    floor = record["floor_bytes"] / max(record["before_bytes"], 1)
    if not a["memory_ok"]:
        return f"{head}, missed, above 1.5x the floor ({floor:.3f}){reach_text(a)}{milp_text(a)}"
    if a["flops_ok"] is not False:
        return None
    if a["met"]:
        return f"{head}, met, over the FLOPs target; the bound {_bound_words(a)}{milp_text(a)}"
    below = a["budget_bytes"] < record["floor_bytes"]
    where = "the budget is below the floor" if below else f"within 1.5x the floor, {floor:.3f}"
    return (
        f"{head}, missed ({where}), the lowest plan over the FLOPs target;"
        f" the bound prices the budget at {_bound_words(a)}{milp_text(a)}"
    )


def target_misses(records: Sequence[Record], budgets: Sequence[str]) -> list[Verdict]:
    """Every answer outside issue 36's targets, with its cause."""
    return [
        Verdict(r["model"], r["device"], text)
        for r in sorted(records, key=lambda r: (r["device"], r["model"]))
        if "error" not in r
        for budget in budgets
        if (text := cause(r, budget)) is not None
    ]


def _count(verdicts: Sequence[Verdict]) -> str:
    by_device = Counter(_device_name(v.device) for v in verdicts)
    return ", ".join(f"{n} {device}" for device, n in sorted(by_device.items())) or "none"


def verdict_markdown(records: Sequence[Record], budgets: Sequence[str]) -> str:
    """The promises checked and the exceptions listed, below the table."""
    built = [r for r in records if "error" not in r]
    answers = [a for r in built for _, a in _answers(r, budgets)]
    broken = broken_promises(records, budgets)
    misses = target_misses(records, budgets)
    stopped = sum(
        1 for a in answers if a.get("bound") is not None and a.get("bound_status") != "Optimal"
    )
    lines = [
        "",
        f"**Promises** ({len(built)} of {len(records)} cells built): "
        + (
            "in every cell a tighter budget ends no higher, a budget under a tighter"
            " one's plan is met for no more, no answer is under the floor, and every"
            " CPU plan computes the same numbers."
            if not broken
            else f"{len(broken)} broken:"
        ),
        *[v.line() for v in broken],
        "",
        f"{sum(a['met'] for a in answers)} of {len(answers)} answers meet their budget;"
        f" {stopped} bounds are stopped solves (a lower bound, often far under the optimum).",
        "",
        f"**Exceptions to issue 36's targets**: {len(misses)} ({_count(misses)}).",
        *[v.line() for v in misses],
    ]
    return "\n".join(lines) + "\n"
