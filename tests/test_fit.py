"""`remat-harness fit` (issue 39): the batch search on its own, then the whole
command on a small Keras model defined here, and its errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from remat_harness.fit import (
    ANSWERS,
    Bracket,
    Card,
    FitError,
    FitResult,
    ModelSource,
    Probe,
    search,
    tensorflow_reserve,
    update,
)
from remat_harness.fit_cli import local_jobs, parse_memory
from remat_harness.fit_report import fall_lines, render_table

MIB = 1 << 20

SMALL_MODEL = """
import keras


def build():
    model = keras.Sequential([
        keras.Input((32, 32, 3)),
        keras.layers.Conv2D(64, 3, padding="same", activation="relu"),
        keras.layers.Conv2D(64, 3, padding="same", activation="relu"),
        keras.layers.Conv2D(64, 3, padding="same", activation="relu"),
        keras.layers.GlobalAveragePooling2D(),
        keras.layers.Dense(10),
    ])
    model.compile(optimizer="adam",
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def broken():
    raise RuntimeError("no weights here")
"""


def _affine_runner(
    per_example: dict[str, float],
    fixed: float,
    calls: list[int],
    jump: tuple[int, int] = (0, 0),
    curve: float = 0.0,
    jumps: tuple[str, ...] = ANSWERS,
):
    """Probes of a step whose figures grow by `per_example` bytes a batch,
    and by `jump[1]` bytes more from batch `jump[0]` on (for the answers in
    `jumps`); plus `curve` bytes times the batch squared
    (each batch dearer than the last)."""

    def bump(answer: str, b: int) -> int:
        return jump[1] if jump[0] and b >= jump[0] and answer in jumps else 0

    def run(batches):
        out = []
        for b, _ in batches:
            calls.append(b)
            f = {k: int(fixed + v * b + bump(k, b) + curve * b * b) for k, v in per_example.items()}
            out.append(
                Probe(
                    b,
                    f["without"],
                    f["capped"],
                    0.05,
                    f["capped"],
                    f["any_cost"],
                    0.3,
                    f["any_cost"],
                )
            )
        return out

    return run


@pytest.mark.parametrize("start", [1, 16, 5000])
def test_search_finds_each_largest_batch_exactly_and_quickly(start):
    card = Card("h100_sxm", 1000 * MIB, 100 * MIB, 10 * MIB)  # 890 MiB for the step
    limit = card.budget_bytes
    slopes = {"without": 3 * MIB, "capped": 2 * MIB, "any_cost": 1.3 * MIB}
    calls: list[int] = []
    result = FitResult(ModelSource("m:b"), card, "path", 0.1)
    search(result, _affine_runner(slopes, 20 * MIB, calls), start, 1 << 16)
    for answer, slope in slopes.items():
        expected = int((limit - 20 * MIB) // slope)
        assert result.brackets[answer].fits == expected, answer
        assert result.brackets[answer].fails == expected + 1, answer
    assert len(calls) == len(set(calls)), "a batch compiled twice"
    assert len(calls) <= 14, calls


def test_search_bisects_where_the_figure_jumps():
    # MobileNetV2 for h100_sxm: 1.68 GB more from batch 2561 to 2562.
    card = Card("h100_sxm", 77_000 * MIB, 0, 0)
    calls: list[int] = []
    result = FitResult(ModelSource("m:b"), card, "path", 0.1)
    slopes = dict.fromkeys(ANSWERS, 30 * MIB)
    search(result, _affine_runner(slopes, 0, calls, jump=(2562, 1700 * MIB)), 16, 1 << 16)
    # 30 MiB a batch reaches the card at 2566; the jump brings it to 2562.
    assert all(result.brackets[a].fits == 2561 for a in ANSWERS)
    assert len(calls) <= 20, calls


def _rounds(slots: int, jump: tuple[int, int]) -> tuple[dict, list[list[int]], list[int]]:
    """(answers, each round's batches, every batch in order) of a search
    compiling `slots` probes at once."""
    card = Card("h100_sxm", 77_000 * MIB, 0, 0)
    slopes = {"without": 45 * MIB, "capped": 30 * MIB, "any_cost": 29 * MIB}
    calls: list[int] = []
    per_round: list[list[int]] = []
    runner = _affine_runner(slopes, 0, calls, jump=jump)

    def run(batches):
        per_round.append(sorted(b for b, _ in batches))
        return runner(batches)

    result = FitResult(ModelSource("m:b"), card, "path", 0.1)
    search(result, run, 16, 1 << 16, slots=slots)
    return {a: (b.fits, b.fails) for a, b in result.brackets.items()}, per_round, calls


def test_two_slots_probe_the_same_batches_in_one_round_fewer():
    """Probes compiled two at once: the first round probes the start and its
    double, which the second round asks for alone: the same probes, the
    same answers, one round fewer."""
    answers1, rounds1, calls1 = _rounds(1, (0, 0))
    answers2, rounds2, calls2 = _rounds(2, (0, 0))
    assert answers1 == answers2
    assert sorted(calls1) == sorted(calls2)
    assert len(rounds2) == len(rounds1) - 1 and rounds2[0] == [16, 32]


@pytest.mark.parametrize("slots", [2, 3])
def test_idle_slots_cut_a_bisected_bracket_into_more_parts(slots):
    """Where the figure jumps, the search bisects, one batch a round; with
    slots to spare it cuts the bracket into as many parts more: the same
    answers in fewer rounds, no batch twice."""
    jump = (2562, 1700 * MIB)
    answers1, rounds1, _ = _rounds(1, jump)
    answers, rounds, calls = _rounds(slots, jump)
    assert answers == answers1
    assert len(calls) == len(set(calls))
    assert len(rounds) <= len(rounds1) - 3, (rounds1, rounds)
    lone = [r for r in rounds1 if len(r) == 1 and r[0] > 256]
    assert len(lone) >= 3, "the single-slot search bisects one batch a round"


def test_a_fit_above_a_failure_is_the_answer():
    # MobileNetV2 f32 for h100_sxm without the pass: 64.2 GB at batch 2182,
    # 91.3 GB at 2203, 81.1 GB at 2561 (XLA's own compile choices). A batch
    # seen to fit is an answer even above one seen not to; the bracket is
    # then the smallest failure above it.
    card = Card("h100_sxm", 82_000 * MIB, 0, 0)
    gb = 1000 * MIB
    probes = [
        Probe(2182, int(64.2 * gb)),
        Probe(2203, int(91.3 * gb)),
        Probe(2561, int(81.1 * gb)),
        Probe(2824, int(97.2 * gb)),
    ]
    brackets = {"without": Bracket()}
    update(brackets, probes, card.budget_bytes)
    assert (brackets["without"].fits, brackets["without"].fails) == (2561, 2824)


def test_a_plan_of_any_cost_within_the_cap_answers_b():
    # DenseNet-121 f32 for a100_sxm_40: the capped search ends at 40.68 GB at
    # batch 1462 where the uncapped one has 39.68 GB at +5.3%, for a 40.02
    # GB budget and a 10% cap. (b) is then 1462 with (c)'s flags; a plan of
    # (c) over the cap is not (b)'s.
    card = Card("a100_sxm_40", 40_020 * MIB, 0, 0)
    result = FitResult(ModelSource("m:b"), card, "path", 0.1)
    far = 90_000 * MIB
    result.probes = [
        Probe(1454, far, 39_900 * MIB, 0.04, 39_900 * MIB, 39_900 * MIB, 0.04, 39_900 * MIB),
        Probe(1462, far, 40_680 * MIB, 0.039, 40_680 * MIB, 39_680 * MIB, 0.053, 39_680 * MIB),
        Probe(1470, far, 40_700 * MIB, 0.039, 40_700 * MIB, 39_950 * MIB, 0.12, 39_950 * MIB),
        Probe(1490, far, 41_000 * MIB, 0.04, 41_000 * MIB, 40_500 * MIB, 0.12, 40_500 * MIB),
    ]
    result.brackets = {name: Bracket() for name in ANSWERS}
    update(result.brackets, result.probes, card.budget_bytes)
    answers = result.to_json()["answers"]
    assert result.brackets["capped"].fits == 1454
    assert (answers["capped"]["batch"], answers["capped"]["plans_of"]) == (1462, "any_cost")
    assert answers["capped"]["extra_flops"] == 0.053
    assert "max_extra_flops=none" in answers["capped"]["xla_flags"]
    assert (answers["any_cost"]["batch"], answers["any_cost"]["plans_of"]) == (1470, "any_cost")


def test_a_figure_seen_lower_above_the_failing_batch_is_said():
    # MobileNetV2 in bf16 for a100_sxm_40, any cost: 40.80 GB at 4923 (the
    # smallest failing batch), 40.06 GB at 5003, for a 40.02 GB budget.
    card = Card("a100_sxm_40", 40_020 * MIB, 0, 0)
    result = FitResult(ModelSource("m:b"), card, "path", 0.1, 0.01)
    figures = {4883: 39_100, 4923: 40_800, 5003: 40_060, 5200: 42_000}
    result.probes = [
        Probe(b, 10 * f * MIB, 10 * f * MIB, 0.0, 10 * f * MIB, f * MIB, 0.3, f * MIB)
        for b, f in figures.items()
    ]
    result.brackets = {name: Bracket() for name in ANSWERS}
    update(result.brackets, result.probes, card.budget_bytes)
    assert result.batch("any_cost") == 4883
    assert result.to_json()["answers"]["any_cost"]["fell_above"] == [
        [4923, 40_800 * MIB],
        [5003, 40_060 * MIB],
    ]
    lines = fall_lines(result)
    assert len(lines) == 1 and lines[0].startswith("(c): ") and "above 4883 may fit" in lines[0]
    # Rising above the failing batch: nothing to say.
    far = 410_000 * MIB
    result.probes[2] = Probe(5003, far, far, 0.0, far, 41_000 * MIB, 0.3, 41_000 * MIB)
    update(result.brackets, result.probes, card.budget_bytes)
    assert result.batch("any_cost") == 4883
    assert fall_lines(result) == []
    assert result.to_json()["answers"]["any_cost"]["fell_above"] is None


def test_the_answers_are_ordered_whatever_the_figures_do():
    # The capped figure jumps from batch 200 on, so its own search ends
    # below the batch that fits without the pass: (b) is then (a)'s batch,
    # which needs no plan, and (c) is at least that.
    card = Card("h100_sxm", 1000 * MIB, 0, 0)
    slopes = {"without": 3 * MIB, "capped": 2 * MIB, "any_cost": 2 * MIB}
    result = FitResult(ModelSource("m:b"), card, "path", 0.1)
    runner = _affine_runner(slopes, 0, [], jump=(200, 10_000 * MIB), jumps=("capped", "any_cost"))
    search(result, runner, 16, 1 << 16)
    answers = result.to_json()["answers"]
    assert result.brackets["capped"].fits < result.brackets["without"].fits == 333
    assert answers["capped"]["batch"] == answers["any_cost"]["batch"] == 333
    assert answers["capped"]["plans_of"] == answers["any_cost"]["plans_of"] == "without"
    assert answers["capped"]["xla_flags"] == ""
    console = Console(width=300, record=True)
    console.print(render_table(result))
    assert console.export_text().count("(none needed: fits without the pass)") == 2


def test_a_precision_of_one_percent_stops_within_it_with_fewer_compiles():
    card = Card("h100_sxm", 77_000 * MIB, 0, 0)
    slopes = dict.fromkeys(ANSWERS, 30 * MIB)
    exact_calls: list[int] = []
    calls: list[int] = []
    for precision, log in ((0.0, exact_calls), (0.01, calls)):
        result = FitResult(ModelSource("m:b"), card, "path", 0.1, precision)
        runner = _affine_runner(slopes, 0, log, jump=(2562, 1700 * MIB))
        search(result, runner, 16, 1 << 16)
    for b in result.brackets.values():
        assert b.fits <= 2561 < b.fails <= b.fits + 25
    assert len(calls) < len(exact_calls)


def test_answers_whose_crossings_are_close_share_their_compiles():
    """The capped and any-cost figures often cross the budget a few batches
    apart: one guess and its partner settle both brackets to 1%."""
    card = Card("h100_sxm", 77_000 * MIB, 0, 0)
    slopes = {"without": 45 * MIB, "capped": 30 * MIB, "any_cost": 29.9 * MIB}
    calls: list[int] = []
    result = FitResult(ModelSource("m:b"), card, "path", 0.1, 0.01)
    search(result, _affine_runner(slopes, 0, calls), 16, 1 << 16)
    for answer, slope in slopes.items():
        b = result.brackets[answer]
        crossing = card.budget_bytes // slope
        assert b.fits <= crossing < b.fails <= b.fits + int(0.01 * b.fits), answer
    assert len([c for c in calls if c > 2048]) == 2, calls  # not a pair each


def test_a_guess_at_another_answers_partner_asks_its_own_pair():
    """Exact search, crossings one batch apart (2566, 2567): the any-cost
    guess is the capped pair's partner, which it expects to fit; the pair
    would not settle it, so it asks for the batch above as well."""
    card = Card("h100_sxm", 77_000 * MIB, 0, 0)
    slopes = {"without": 45 * MIB, "capped": 30 * MIB, "any_cost": 29.99 * MIB}
    calls: list[int] = []
    result = FitResult(ModelSource("m:b"), card, "path", 0.1, 0.0)
    search(result, _affine_runner(slopes, 0, calls), 16, 1 << 16)
    assert [c for c in calls if c > 2048] == [2566, 2567, 2568], calls
    assert (result.brackets["any_cost"].fits, result.brackets["any_cost"].fails) == (2567, 2568)


def test_a_guess_a_little_short_still_closes_a_one_percent_bracket():
    # Figures that curve up (each batch dearer than the last): the affine
    # guess lands a few batches short of the crossing. Its partner probe
    # 1% above, not the next batch, closes the bracket in the same round.
    card = Card("h100_sxm", 8000 * MIB, 0, 0)
    slopes = {"without": 3 * MIB, "capped": 1.6 * MIB, "any_cost": 1.3 * MIB}
    calls: list[int] = []
    result = FitResult(ModelSource("m:b"), card, "path", 0.1, 0.01)
    search(result, _affine_runner(slopes, 20 * MIB, calls, curve=300), 16, 1 << 16)
    for b in result.brackets.values():
        assert b.fails is not None and b.fits < b.fails <= b.fits + int(0.01 * b.fits)
    assert len(calls) <= 18, calls  # 24 with the next batch as the partner


def test_any_cost_is_never_below_the_capped_answer():
    # The capped search can reach lower than the uncapped frontier's plan.
    card = Card("h100_sxm", 1000 * MIB, 0, 0)
    slopes = {"without": 3 * MIB, "capped": 1 * MIB, "any_cost": 2 * MIB}
    result = FitResult(ModelSource("m:b"), card, "path", 0.1)
    search(result, _affine_runner(slopes, 0, []), 16, 1 << 16)
    answers = result.to_json()["answers"]
    assert answers["any_cost"]["batch"] == answers["capped"]["batch"] == 1000
    assert answers["any_cost"]["plans_of"] == "capped"
    assert answers["any_cost"]["xla_flags"] == answers["capped"]["xla_flags"]


def test_search_says_none_when_batch_one_does_not_fit():
    card = Card("h100_sxm", 100 * MIB, 10 * MIB, 0)
    result = FitResult(ModelSource("m:b"), card, "path", 0.1)
    search(result, _affine_runner(dict.fromkeys(ANSWERS, MIB), 200 * MIB, []), 16, 1024)
    assert all(result.answer(a) is None for a in ANSWERS)
    assert result.to_json()["answers"]["without"] is None


def test_search_stops_at_the_largest_batch_asked():
    card = Card("h100_sxm", 10_000 * MIB, 0, 0)
    result = FitResult(ModelSource("m:b"), card, "path", 0.1)
    search(result, _affine_runner(dict.fromkeys(ANSWERS, 1), 0, []), 16, 300)
    assert all(result.brackets[a].fits == 300 for a in ANSWERS)


def test_tensorflow_reserve_follows_the_compute_capability():
    gib = 1 << 30
    assert tensorflow_reserve(80 * gib, 9) - tensorflow_reserve(80 * gib, 8) == 264 * MIB
    assert tensorflow_reserve(80 * gib, 7) < tensorflow_reserve(80 * gib, 8)
    assert tensorflow_reserve(gib, 9) < tensorflow_reserve(80 * gib, 6)


@pytest.mark.parametrize(
    ("text", "nbytes"),
    [("40G", 40 << 30), ("40GB", 40 << 30), ("40GiB", 40 << 30), ("81559M", 81559 << 20)],
)
def test_memory_sizes(text, nbytes):
    assert parse_memory(text) == nbytes


@pytest.mark.parametrize("text", ["forty", "40%", "12"])
def test_a_bad_memory_size_names_the_option(text):
    with pytest.raises(FitError, match="--memory"):
        parse_memory(text)


def _fit(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "small_model.py").write_text(SMALL_MODEL)
    return subprocess.run(
        [sys.executable, "-m", "remat_harness", "fit", "--out", str(tmp_path / "out"), *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )


# 1 GiB less TF's reserve leaves ~140 MB: the batch search has room.
SMALL_CARD = ["--model", "small_model:build", "--gpu", "h100_sxm", "--memory", "1G"]


@pytest.fixture(scope="module")
def serial_fit(engine, tmp_path_factory) -> tuple[subprocess.CompletedProcess[str], dict, Path]:
    """The small model on the small card, searched without a cluster: the
    answers two tests read, computed once."""
    folder = tmp_path_factory.mktemp("serial_fit")
    proc = _fit(folder, *SMALL_CARD, "--jobs", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc, json.loads((folder / "out" / "fit.json").read_text()), folder


def test_fit_answers_a_small_model_on_a_small_card(serial_fit):
    proc, data, folder = serial_fit
    answers = data["answers"]
    a, b, c = (answers[name]["batch"] for name in ANSWERS)
    assert 1 <= a <= b <= c, answers
    assert c > a, "the pass bought no larger batch on a conv net"
    budget = data["card"]["budget_bytes"]
    for name in ANSWERS:
        record = answers[name]
        assert record["allocation_bytes"] <= budget
        # The batch above was compiled and failed (within the default 1%).
        probes = {p["batch"]: p for p in data["probes"]}
        assert record["fails_at"] in probes, name
        assert (
            record["batch"] < record["fails_at"] <= record["batch"] + max(1, record["batch"] // 100)
        )
    assert answers["capped"]["extra_flops"] <= 0.1
    assert "--xla_rematerialization_mem_limit=" in answers["any_cost"]["xla_flags"]
    assert answers["without"]["xla_flags"] == ""
    assert "largest batch" in proc.stdout and "XLA_FLAGS" in proc.stdout
    assert (folder / "out" / "fit.png").stat().st_size > 0


def test_fit_on_a_dask_cluster_gives_the_same_answers(serial_fit, tmp_path):
    alone = serial_fit[1]["answers"]
    clustered = _fit(tmp_path, *SMALL_CARD, "--workers", "2")
    assert clustered.returncode == 0, clustered.stdout + clustered.stderr
    on_cluster = json.loads((tmp_path / "out" / "fit.json").read_text())["answers"]
    assert {k: v["batch"] for k, v in on_cluster.items()} == {
        k: v["batch"] for k, v in alone.items()
    }


def test_fit_probing_two_batches_at_once_gives_the_same_answers(serial_fit, tmp_path):
    """The default here (one probe per core; this machine has two): the
    same probes, each planned the same."""
    alone = serial_fit[1]
    both = _fit(tmp_path, *SMALL_CARD, "--jobs", "2")
    assert both.returncode == 0, both.stdout + both.stderr
    at_once = json.loads((tmp_path / "out" / "fit.json").read_text())
    assert at_once["answers"] == alone["answers"]
    figures = {p["batch"]: {k: v for k, v in p.items() if k != "seconds"} for p in alone["probes"]}
    for probe in at_once["probes"]:
        del probe["seconds"]
        assert probe == figures[probe["batch"]]


def test_local_jobs_are_one_per_core_at_most():
    assert local_jobs(0, batches=4, cores=2) == 2
    assert local_jobs(0, batches=1, cores=8) == 1
    assert local_jobs(3, batches=6, cores=8) == 3
    assert local_jobs(1, batches=6, cores=8) == 1


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--model", "missing.keras"], "missing.keras: no such file"),
        (["--model", "small_model:broken"], "broken() raised RuntimeError: no weights here"),
        (["--model", "no_such_module:build"], "cannot import no_such_module"),
        (["--model", "small_model:build", "--gpu", "h200_imaginary"], "h200_imaginary"),
        (["--model", "small_model:build", "--memory", "forty"], "--memory forty"),
        (["--model", "small_model"], "expected pkg.module:build"),
        (["--model", "small_model:build", "--jobs", "-1"], "--jobs -1"),
    ],
)
def test_fit_errors_are_one_line_and_exit_2(engine, tmp_path, args, says):
    proc = _fit(tmp_path, *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    assert len(lines) == 1, lines
    assert says in lines[0], lines[0]
    assert "Traceback" not in proc.stderr
