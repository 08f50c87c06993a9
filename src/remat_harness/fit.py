"""Will it fit? The largest batch of a user's own Keras model on a named GPU,
without the pass, with it at a FLOPs cap, and with it at any cost.

Each batch size probed is traced once by TensorFlow (fit_dump.py, cached by
model, batch and policy), compiled deviceless for the GPU with the pass
asked for the card's budget, and read from the report: the allocation
without the pass, and the allocation, extra FLOPs and frontier with it.

"Fits" means allocation + margin <= memory - reserve, where
- memory is the card's (the target's spec, or --memory);
- reserve is what TensorFlow keeps from the BFC allocator
  (MinSystemMemory in TF's gpu_device.cc: 1536 MiB on compute capability 8,
  1800 MiB above) plus the CUDA context and the cuDNN and cuBLAS libraries
  (632 MB measured on an H100 80GB, driver 580, CUDA 13);
- margin is the library workspace a step allocates beyond buffer assignment
  (17-62 MB measured on an H100 over six TF steps: ../shared/DESIGN.md).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from remat_harness.engine import MEASURE_ONLY, RematFlags, run_hlo_remat
from remat_harness.gpu import gpu_flags
from remat_harness.paths import CACHE_DIR
from remat_harness.remat_report import RematReport

MIB = 1 << 20
CONTEXT_BYTES = 632_000_000  # CUDA context + cuDNN + cuBLAS, H100 (measured)
MARGIN_BYTES = 64 * MIB  # workspace beyond buffer assignment (17-62 MB measured)
DEFAULT_MAX_EXTRA_FLOPS = 0.10
# The search stops when each answer is known to 1% of itself: the prediction
# is not closer than that (an H100 allocated 4.9% less than predicted for
# ResNet-50's step at batch 1444: docs/measured.md).
DEFAULT_PRECISION = 0.01
DEFAULT_ALGORITHM = "path"
ANSWERS = ("without", "capped", "any_cost")
GUESS_GROWTH = 8  # the most one round grows the batch on an affine guess
# TensorFlow keeps memory from every trace even with a function per batch
# (DenseNet-121's tracing process: 8.3 GB after 15 batches): a fresh
# process after this many.
TRACES_PER_PROCESS = 8


class FitError(RuntimeError):
    """A user error: one line, exit 2."""


def tensorflow_reserve(memory_bytes: int, compute_capability_major: int) -> int:
    """What TensorFlow keeps back from its allocator on a card, as TF's
    MinSystemMemory does (by compute capability), plus the CUDA context and
    libraries it loads."""
    if memory_bytes < (1 << 31):
        system = 225 * MIB
    elif 0 < compute_capability_major <= 6:
        system = 500 * MIB
    elif 0 < compute_capability_major <= 7:
        system = 1050 * MIB
    elif compute_capability_major <= 8:  # 0: not CUDA, TF's ROCm path
        system = 1536 * MIB
    else:
        system = 1800 * MIB
    return system + CONTEXT_BYTES


@dataclass(frozen=True)
class Card:
    target: str
    memory_bytes: int
    reserve_bytes: int
    margin_bytes: int = MARGIN_BYTES

    @property
    def budget_bytes(self) -> int:
        """The most a step's buffers may take on this card."""
        return self.memory_bytes - self.reserve_bytes - self.margin_bytes


_TINY_HLO = """HloModule probe_card
ENTRY e {
  p = f32[8] parameter(0)
  ROOT n = f32[8] negate(p)
}
"""


def card_for(target: str, memory_bytes: int | None = None) -> Card:
    """The card of a target: its memory from the target's spec (or the
    user's), its reserve from its compute capability."""
    with tempfile.TemporaryDirectory() as tmp:
        hlo = Path(tmp) / "card.hlo"
        hlo.write_text(_TINY_HLO)
        run = run_hlo_remat(hlo, [*gpu_flags(target), *MEASURE_ONLY.args()], Path(tmp) / "r.json")
    if run.returncode != 0 or run.report is None:
        raise FitError(f"--gpu {target}: {' '.join(run.stderr.strip().splitlines()[-1:])}")
    memory = memory_bytes or run.report.device_memory_bytes
    return Card(target, memory, tensorflow_reserve(memory, run.report.compute_capability_major))


@dataclass(frozen=True)
class ModelSource:
    """The user's model and how to trace it."""

    model: str  # pkg.module:build or a .keras file
    policy: str = "float32"
    input_shape: str = ""  # "224,224,3"; empty: the model's own

    def _identity(self) -> str:
        """What the traced HLO depends on: the file's bytes, the options."""
        path = Path(self.model) if self.model.endswith(".keras") else _module_file(self.model)
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path else self.model
        return f"{self.model}|{digest}|{self.policy}|{self.input_shape}"

    def cache_dir(self, root: Path) -> Path:
        slug = "".join(c if c.isalnum() else "_" for c in self.model.split("/")[-1])[:40]
        key = hashlib.sha256(self._identity().encode()).hexdigest()[:12]
        return root / "fit" / f"{slug}_{self.policy}_{key}"


def _module_file(spec: str) -> Path | None:
    """The file of `pkg.module` in `pkg.module:build`, found without running
    it; None for a module that is not a file of its own."""
    import importlib.util
    import os

    sys.path.insert(0, os.getcwd())
    try:
        found = importlib.util.find_spec(spec.partition(":")[0])
    except (ImportError, ValueError):
        found = None
    finally:
        sys.path.pop(0)
    origin = found.origin if found else None
    return Path(origin) if origin and Path(origin).is_file() else None


class StepDumps:
    """The step's HLO at each batch size: from the cache, else from one
    TensorFlow process started at the first miss and kept for the rest."""

    def __init__(self, source: ModelSource, cache_root: Path = CACHE_DIR) -> None:
        self.source = source
        self.folder = source.cache_dir(cache_root)
        self._proc: subprocess.Popen[str] | None = None
        self._traced = 0

    def hlo(self, batch: int) -> Path:
        path = self.folder / f"b{batch}.hlo"
        if path.exists():
            return path
        proc = self._tracer()
        assert proc.stdin is not None
        proc.stdin.write(f"{batch}\n")
        proc.stdin.flush()
        answer = self._answer(proc)
        if "error" in answer:
            raise FitError(f"tracing the step at batch {batch}: {answer['error']}")
        self._traced += 1
        if self._traced % TRACES_PER_PROCESS == 0:
            self.close()  # the next miss starts a fresh one
        return Path(answer["hlo"])

    def _tracer(self) -> subprocess.Popen[str]:
        if self._proc is None:
            cmd = [sys.executable, "-m", "remat_harness.fit_dump", "--model", self.source.model]
            cmd += ["--policy", self.source.policy, "--out", str(self.folder)]
            if self.source.input_shape:
                cmd += ["--input-shape", self.source.input_shape]
            self._proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            if not self._answer(self._proc).get("ready"):
                raise FitError("the model's TensorFlow process did not start")
        return self._proc

    @staticmethod
    def _answer(proc: subprocess.Popen[str]) -> dict:
        """The process's next JSON line; its own error line if it exits."""
        assert proc.stdout is not None and proc.stderr is not None
        for line in proc.stdout:
            if line.startswith("{"):
                return json.loads(line)
        proc.wait()
        errors = [ln for ln in proc.stderr.read().splitlines() if ln.startswith("remat-harness")]
        raise FitError(
            errors[-1].removeprefix("remat-harness fit: ")
            if errors
            else f"the model's TensorFlow process exited {proc.returncode}"
        )

    def close(self) -> None:
        if self._proc is not None:
            if self._proc.stdin:
                self._proc.stdin.close()
            self._proc.wait(timeout=60)
            self._proc = None


@dataclass(frozen=True)
class Probe:
    """One batch size compiled for the card, with the pass asked for the
    card's budget. Per answer, its figure (what the step allocates: the plan
    the budget chose where it fits, else the lowest plan there is) and its
    reach (the lowest plan there is, which grows about affinely with the
    batch: where the search aims). None where no answer needed the batch."""

    batch: int
    without_bytes: int  # allocation without the pass
    capped_bytes: int | None = None  # with the pass, plans within the FLOPs cap
    capped_extra: float | None = None  # its extra FLOPs, a fraction of the step's
    capped_reach: int | None = None
    any_cost_bytes: int | None = None  # with the pass, any plan
    any_cost_extra: float | None = None
    any_cost_reach: int | None = None
    seconds: float = 0.0
    error: str = ""  # the engine's, where the pass failed: judged without it

    def figure(self, answer: str) -> int | None:
        return {
            "without": self.without_bytes,
            "capped": self.capped_bytes,
            "any_cost": self.any_cost_bytes,
        }[answer]

    def reach(self, answer: str) -> int | None:
        return {
            "without": self.without_bytes,
            "capped": self.capped_reach,
            "any_cost": self.any_cost_reach,
        }[answer]


def pass_flags(card: Card, algorithm: str, cap: float | None) -> RematFlags:
    """The pass's flags for the card, as the user puts them in XLA_FLAGS; a
    FLOPs cap, or none. (The cap matters: the frontier's plans without one
    are spaced by its aims, and a capped search goes lower within the cap:
    ResNet-50's step for a100_sxm_40 fits batch 1692 at +7.7% capped, 1436
    at +5.1% from the uncapped frontier.)"""
    limit: float | str = "none" if cap is None else cap
    return RematFlags(budget=card.budget_bytes, algorithm=algorithm, max_extra_flops=limit)


def _compile(
    hlo: Path, card: Card, flags: RematFlags, report: Path, extra: tuple[str, ...] = ()
) -> RematReport:
    args = [*gpu_flags(card.target), *flags.args(), *extra]
    run = run_hlo_remat(hlo, args, report, timeout_s=1800)
    if run.returncode != 0 or run.report is None:
        raise RuntimeError(f"hlo-remat on {hlo.name}: {run.stderr.strip()[-400:]}")
    return run.report


def _plans(report: RematReport) -> list[tuple[int, float]]:
    """(peak, extra FLOPs as a fraction) of every plan the lookup could
    choose, the one applied (by its final figure) and no plan at all."""
    flops = max(report.flops_before, 1.0)
    points = (report.frontier or {}).get("points", [])
    plans = [(p["peak_bytes"], p["extra_flops"] / flops) for p in points if p["usable"]]
    applied = (report.allocated("after"), report.extra_flops_fraction)
    return [*plans, applied, (report.allocated("before"), 0)]


def _answer_figures(report: RematReport, limit: int, cap: float | None) -> tuple[int, float, int]:
    """(figure, extra FLOPs, reach) with the plans within `cap` (None: any)."""
    plans = [(peak, extra) for peak, extra in _plans(report) if cap is None or extra <= cap]
    reach = min(peak for peak, _ in plans)
    after, extra = report.allocated("after"), report.extra_flops_fraction
    if after <= limit and (cap is None or extra <= cap):
        return after, extra, reach
    lowest = min(plans)
    return lowest[0], lowest[1], reach


def _pass_reports(
    hlo: Path,
    card: Card,
    algorithm: str,
    cap: float,
    needs: frozenset[str],
    tmp: Path,
) -> tuple[RematReport | None, RematReport | None]:
    """The pass at the card's budget without a cap and with it, as `needs`
    asks. Both from one compile: the engine plans again with the cap only
    where the uncapped plan spends more than the cap (hlo-remat
    --capped-rerun); otherwise that plan answers both: its figure, or where
    it misses the budget, its lowest plan within the cap (the capped search
    is taken to miss there too: _answer_figures)."""
    capped_path = tmp / "cap.json"
    if "any_cost" not in needs:
        return None, _compile(hlo, card, pass_flags(card, algorithm, cap), capped_path)
    rerun = ("--capped-rerun", repr(cap), "--capped-report", str(capped_path))
    extra = rerun if "capped" in needs else ()
    free = _compile(hlo, card, pass_flags(card, algorithm, None), tmp / "free.json", extra)
    if "capped" not in needs:
        return free, None
    if not capped_path.exists():
        return free, free
    return free, RematReport.from_json(json.loads(capped_path.read_text()))


def probe_batch(
    hlo: Path,
    batch: int,
    card: Card,
    algorithm: str,
    cap: float,
    needs: frozenset[str],
) -> Probe:
    """Compiles the step at one batch for the answers that need it: without
    the pass, one compile that measures; with it, the pass at the card's
    budget, without a cap and with it. An engine failure with the pass is
    recorded, and the batch judged without it."""
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        if needs <= {"without"}:
            alone = _compile(hlo, card, MEASURE_ONLY, Path(tmp) / "alone.json")
            no_pass = alone.buffer_assignment_before_bytes
            return Probe(batch, no_pass, seconds=time.monotonic() - start)
        try:
            free, capped = _pass_reports(hlo, card, algorithm, cap, needs, Path(tmp))
        except RuntimeError as e:
            alone = _compile(hlo, card, MEASURE_ONLY, Path(tmp) / "alone.json")
            no = alone.buffer_assignment_before_bytes
            seconds = time.monotonic() - start
            return Probe(batch, no, no, 0.0, no, no, 0.0, no, seconds, str(e)[-300:])
    limit = card.budget_bytes
    either = free or capped
    assert either is not None
    return Probe(
        batch,
        either.buffer_assignment_before_bytes,
        *(_answer_figures(capped, limit, cap) if capped else (None, None, None)),
        *(_answer_figures(free, limit, None) if free else (None, None, None)),
        seconds=time.monotonic() - start,
    )


def settling_step(batch: int, precision: float) -> int:
    """How far above a fitting `batch` a failing one settles its bracket."""
    return max(1, int(precision * batch))


@dataclass
class Bracket:
    """What is known of one answer: the largest batch seen to fit, and the
    smallest seen not to above it (None: none yet). A failure below the
    largest fit is passed over: a compile's choices are not monotone in the
    batch, and the user asks for the largest batch that fits."""

    fits: int = 0
    fails: int | None = None
    stalls: int = 0  # rounds that did not halve it: then bisect

    def settled(self, max_batch: int, precision: float = 0.0) -> bool:
        """Closed to one batch, or to `precision` of the batch (0.01: the
        answer is within 1% of the largest batch that fits)."""
        if self.fails is None:
            return self.fits >= max_batch
        return self.fails - self.fits <= settling_step(self.fits, precision)

    def width(self) -> int | None:
        return None if self.fails is None else self.fails - self.fits


def _crossing(probes: list[Probe], answer: str, limit: int, b: Bracket) -> int | None:
    """Where the answer's figure, taken as affine in the batch through the
    bracket's ends (or the two probes nearest its lower end), reaches
    `limit`; None without two probes or with a flat figure."""
    probes = [p for p in probes if p.reach(answer) is not None]
    at = {p.batch: p for p in probes}
    if b.fits in at and b.fails in at:
        near = [at[b.fits], at[b.fails]]
    else:
        near = sorted(probes, key=lambda p: (abs(p.batch - b.fits), p.batch))[:2]
    if len(near) < 2:
        return None
    (b0, f0), (b1, f1) = ((p.batch, p.reach(answer) or 0) for p in near)
    slope = (f1 - f0) / (b1 - b0)
    return int(b0 + (limit - f0) / slope) if slope > 0 else None


def sections(fits: int, fails: int, parts: int) -> list[int]:
    """The batches that cut (fits, fails) into `parts` parts as even as the
    integers allow (2: the middle)."""
    width = fails - fits
    return sorted({fits + i * width // parts for i in range(1, parts)} - {fits, fails})


def _cut(brackets: list[tuple[int, int]], points: int) -> set[int]:
    """`points` batches (at least one for each bracket) inside the bisected
    brackets: one each, and those a round has to spare where the widest part
    stays (bisection where a round has one batch; where it has idle slots,
    three parts or more: the bracket closes in fewer rounds)."""
    given = dict.fromkeys(brackets, 1)
    for _ in range(points - len(brackets)):
        # Widest for its batch: the brackets settle to a share of it.
        widest = max(given, key=lambda fb: (fb[1] - fb[0]) / max(fb[0], 1) / (given[fb] + 1))
        given[widest] += 1
    return {b for (fits, fails), n in given.items() for b in sections(fits, fails, n + 1)}


def next_batches(
    brackets: dict[str, Bracket],
    probes: list[Probe],
    limit: int,
    max_batch: int,
    precision: float = 0.0,
    slots: int = 1,
) -> list[int]:
    """One round's batches. For each open answer: the affine guess at its
    crossing and the batch above it (or `precision` of it above), which
    close the bracket at once where the figure is affine there; inside what
    is known (above the largest fit; while no batch has failed, at most
    doubling it, or GUESS_GROWTH times on a guess). Once a guess has not
    halved a bracket (a compile's choices jump: MobileNetV2 for h100_sxm
    grows 1.68 GB from batch 2561 to 2562), the middle, or with `slots`
    probes at once and fewer batches than that, even cuts of it."""
    wanted: set[int] = set()
    bisected: list[tuple[int, int]] = []
    pairs: list[tuple[int, int]] = []  # (guess, partner) asked this round
    for answer, b in brackets.items():
        if b.settled(max_batch, precision):
            continue
        guess = _crossing(probes, answer, limit, b)
        if b.fails is None:
            hi = min((2 if guess is None else GUESS_GROWTH) * b.fits, max_batch) + 1
        else:
            hi = b.fails
            if b.stalls or guess is None:
                if (b.fits, hi) not in bisected:
                    bisected.append((b.fits, hi))
                continue
        if guess is None:
            wanted.add(hi - 1)
            continue
        guess = min(max(guess, b.fits + 1), hi - 1)
        # The batch that settles the bracket if the guess fits and it does
        # not: the next one, or with a precision the one that far above, so
        # that a guess a few batches short still closes it.
        partner = guess + settling_step(guess, precision)
        # Another answer's pair (g, p) with g <= guess < p settles this
        # bracket as well as its own would (the capped and any-cost figures
        # are often a few batches apart): one compile serves both. A guess
        # at p itself expects p to fit, so it asks for its own pair.
        if any(b.fits < g <= guess < p for g, p in pairs):
            continue
        pairs.append((guess, partner))
        wanted.update(g for g in (guess, partner) if g < hi)
    if bisected:
        wanted |= _cut(bisected, max(len(bisected), slots - len(wanted)))
    return sorted(wanted)


def update(brackets: dict[str, Bracket], probes: list[Probe], limit: int) -> None:
    """Each answer's bracket from every probe so far: the largest batch seen
    to fit, the smallest above it seen not to. A failure below a fit (a
    compile's choices are not monotone) is passed over."""
    for answer, b in brackets.items():
        before = b.width()
        figures = [(p.batch, f) for p in probes if (f := p.figure(answer)) is not None]
        b.fits = max((batch for batch, f in figures if f <= limit), default=0)
        failing = [batch for batch, f in figures if f > limit and batch > b.fits]
        b.fails = min(failing) if failing else None
        after = b.width()
        if before is not None and after is not None and 2 * after > before:
            b.stalls += 1


@dataclass
class FitResult:
    source: ModelSource
    card: Card
    algorithm: str
    max_extra_flops: float
    precision: float = 0.0
    probes: list[Probe] = field(default_factory=list)
    brackets: dict[str, Bracket] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: dict) -> FitResult:
        """A result again from its fit.json, its answers recomputed from the
        probes (so that a table made later reads them as this code does)."""
        card = {k: v for k, v in data["card"].items() if k != "budget_bytes"}
        result = cls(
            ModelSource(**data["model"]),
            Card(**card),
            data["algorithm"],
            data["max_extra_flops"],
            data.get("precision", 0.0),
            [Probe(**p) for p in data["probes"]],
        )
        result.brackets = {name: Bracket() for name in ANSWERS}
        update(result.brackets, result.probes, result.card.budget_bytes)
        return result

    def _choice(self, answer: str) -> tuple[str, int]:
        """(the answer whose plans and flags give this one, its batch). Each
        answer includes those before it in ANSWERS: a batch that fits
        without the pass fits with it (the budget is met before any plan),
        and "any cost" includes the plans within the cap (the capped search
        can fit a larger batch than the uncapped one, whose frontier's aims
        are coarser near the budget: MobileNetV2 in bf16 for h100_sxm, 9956
        capped against 9951). And "within the cap" includes every plan of
        "any cost" that fits within it: the capped search is another search,
        and can miss a plan the uncapped one makes for less than the cap
        (DenseNet-121 f32 for a100_sxm_40 at batch 1462: 40.68 GB capped,
        39.68 GB at +5.3% uncapped, for 40.02 GB). So (a) <= (b) <= (c)
        whatever the figures do between the probes."""
        own = ANSWERS.index(answer)
        # Ties go to the answer itself (its own flags), then the nearest.
        candidates = [(name, self.brackets[name].fits) for name in ANSWERS[own::-1]]
        if answer == "capped":
            limit = self.card.budget_bytes
            within = [
                p.batch
                for p in self.probes
                if p.any_cost_bytes is not None
                and p.any_cost_bytes <= limit
                and (p.any_cost_extra or 0.0) <= self.max_extra_flops
            ]
            candidates.append(("any_cost", max(within, default=0)))
        return max(candidates, key=lambda c: c[1])

    def source_of(self, answer: str) -> str:
        """The answer whose plans and flags give this one (_choice)."""
        return self._choice(answer)[0]

    def batch(self, answer: str) -> int:
        """The answer's largest batch that fits (0: not even batch 1)."""
        return self._choice(answer)[1]

    def answer(self, answer: str) -> Probe | None:
        """The probe at the answer's batch (None: not even batch 1 fits)."""
        batch = self.batch(answer)
        return next((p for p in self.probes if p.batch == batch), None)

    def fall_above(self, answer: str) -> tuple[tuple[int, int], tuple[int, int]] | None:
        """Where the answer's figure was seen lower above its smallest
        failing batch than at it, by more than the search's 1% of the
        budget: the figure is not monotone there, and a larger batch may fit
        than the answer says (MobileNetV2 in bf16 for a100_sxm_40, any cost:
        40.80 GB at 4923, 40.06 GB at 5003, for 40.02 GB). (batch, bytes) of
        the failing batch and of the lowest figure above it; None where none
        was seen."""
        source = self.source_of(answer)
        fails = self.brackets[source].fails
        at = {p.batch: f for p in self.probes if (f := p.figure(source)) is not None}
        if fails is None or fails not in at:
            return None
        lowest = min(
            ((b, f) for b, f in at.items() if b > fails), key=lambda bf: bf[1], default=None
        )
        noise = DEFAULT_PRECISION * self.card.budget_bytes
        if lowest is None or at[fails] - lowest[1] <= noise:
            return None
        return (fails, at[fails]), lowest

    def to_json(self) -> dict:
        answers = {}
        for name in ANSWERS:
            p, source = self.answer(name), self.source_of(name)
            answers[name] = (
                None
                if p is None
                else {
                    "batch": p.batch,
                    "allocation_bytes": p.figure(source),
                    "extra_flops": {
                        "without": 0.0,
                        "capped": p.capped_extra,
                        "any_cost": p.any_cost_extra,
                    }[source],
                    "xla_flags": xla_flags_for(self, source),
                    "plans_of": source,
                    # The smallest batch seen not to fit (None: none up to
                    # the largest tried).
                    "fails_at": self.brackets[source].fails,
                    # [batch, bytes] of the smallest failing batch and of a
                    # larger one seen lower: a larger batch may fit
                    # (fall_above); None where none was seen.
                    "fell_above": _as_lists(self.fall_above(name)),
                }
            )
        return {
            "model": asdict(self.source),
            "card": {**asdict(self.card), "budget_bytes": self.card.budget_bytes},
            "algorithm": self.algorithm,
            "max_extra_flops": self.max_extra_flops,
            "precision": self.precision,
            "answers": answers,
            "probes": [asdict(p) for p in sorted(self.probes, key=lambda p: p.batch)],
        }


def _as_lists(fall: tuple[tuple[int, int], ...] | None) -> list[list[int]] | None:
    return None if fall is None else [list(pair) for pair in fall]


def xla_flags_for(result: FitResult, answer: str) -> str:
    """What to put in XLA_FLAGS for the patched wheel to train at that batch."""
    if answer == "without":
        return ""
    cap = result.max_extra_flops if answer == "capped" else None
    return pass_flags(result.card, result.algorithm, cap).xla_flags()


# Compiles each (batch, the answers that need it); returns their probes.
Runner = Callable[[list[tuple[int, frozenset[str]]]], list[Probe]]


def needs_of(batch: int, brackets: dict[str, Bracket]) -> frozenset[str]:
    """The answers whose bracket holds `batch`: what compiling it can tell."""
    return frozenset(
        name
        for name, b in brackets.items()
        if batch > b.fits and (b.fails is None or batch < b.fails)
    )


def search(
    result: FitResult,
    run: Runner,
    start: int,
    max_batch: int,
    progress: Callable[[Probe], None] = lambda p: None,
    slots: int = 1,
) -> FitResult:
    """Finds the three answers: probes grow by doubling (or the affine
    guess, if nearer), then close each bracket to one batch, or to the
    result's precision of it. `slots`: how many probes `run` compiles at
    once; with two or more the first round probes `start` and its double at
    once (the second round would ask the double: the same probes, one
    round fewer)."""
    limit = result.card.budget_bytes
    result.brackets = {name: Bracket() for name in ANSWERS}
    batches = [start] if slots < 2 or 2 * start > max_batch else [start, 2 * start]
    while batches:
        for probe in run([(b, needs_of(b, result.brackets)) for b in batches]):
            result.probes.append(probe)
            progress(probe)
        update(result.brackets, result.probes, limit)
        seen = {p.batch for p in result.probes}
        wanted = next_batches(
            result.brackets, result.probes, limit, max_batch, result.precision, slots
        )
        batches = [b for b in wanted if b not in seen]
    return result
