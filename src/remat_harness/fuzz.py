"""`remat-harness fuzz`: the project's own fuzzing of `hlo-remat`.

Two campaigns, each seeded and repeatable:

- **mutants**: real modules with lines deleted or duplicated, shapes and
  opcodes changed, operands swapped, text truncated and bytes injected. Every
  mutant must end in exit 2 with a message of at most two lines, or in exit 0
  with an output that re-parses and verifies. Anything else (an abort, a
  stack trace, a hang, exit 1, a long message) is a finding.
- **steps**: random TensorFlow training steps (models/random_step.py), each run
  through every algorithm at several budgets with `--check-numerics`: exit 0,
  numerics equal, a valid output, a peak no higher than the input's, and a
  report that agrees with the output.

Findings are saved as reproducers (`<out>/findings/<id>/`: the input, the
command, stderr) and summarized in `<out>/summary.json`.
"""

from __future__ import annotations

import json
import random
import re
import shlex
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from remat_harness.engine import MEASURE_ONLY, RematFlags
from remat_harness.flag_table import algorithms as engine_algorithms
from remat_harness.paths import CACHE_DIR, hlo_remat_binary
from remat_harness.remat_report import RematReport

BUNDLED_SEEDS = Path(__file__).parent / "fuzz_seeds"

# What the engine must never show a user (it means a crash or a raw log).
_TRACE_MARKS = ("Check failed", "*** Begin stack trace", "Traceback", "@ 0x", "SIGABRT")
MAX_MESSAGE_LINES = 2
# A rejection's lines stay about this short, counted with the input's file
# name but not its folder: "hlo-remat: NAME: " and about 200 characters.
MAX_MESSAGE_CHARS = 240

# `optimal`'s solver time on a fuzz program: enough for their small graphs,
# short enough that a hard one ends the run on time.
FUZZ_OPTIMAL_SECONDS = 5


_OPCODES = (
    "add", "multiply", "subtract", "tuple", "get-tuple-element", "broadcast", "reshape",
    "transpose", "convolution", "dot", "reduce", "parameter", "constant", "copy", "while",
    "call", "negate", "exp", "select", "concatenate", "slice", "bitcast", "custom-call",
)  # fmt: skip
_INSTRUCTION = re.compile(r"^(\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*)(\S+)\s+([\w\-]+)\((.*)$")


@dataclass
class Finding:
    kind: str
    case: str
    command: list[str]
    detail: str


@dataclass
class FuzzSummary:
    campaign: str
    seed: int
    runs: int = 0
    exit_codes: Counter = field(default_factory=Counter)
    max_message_lines: int = 0
    max_message_chars: int = 0
    seconds: float = 0.0
    findings: list[Finding] = field(default_factory=list)

    def to_json(self) -> dict:
        out = asdict(self)
        out["exit_codes"] = {str(k): v for k, v in sorted(self.exit_codes.items())}
        out["finding_kinds"] = dict(Counter(f.kind for f in self.findings))
        return out


def seed_modules(extra: Iterable[Path] = (), cached: bool = True) -> list[Path]:
    """The modules to mutate: the bundled ones, the cached training steps
    (whichever `.cache/` holds, unless `cached` is false), and `extra` files
    or folders."""
    found = sorted(BUNDLED_SEEDS.glob("*.hlo"))
    if cached:
        found += sorted(CACHE_DIR.glob("hlo/*/step.hlo"))
    for path in extra:
        found += (
            sorted(path.glob("*.hlo")) + sorted(path.glob("*.txt")) if path.is_dir() else [path]
        )
    return found


# --- mutations -------------------------------------------------------------


def _instruction_lines(lines: list[str]) -> list[int]:
    return [i for i, line in enumerate(lines) if _INSTRUCTION.match(line)]


def _delete_line(lines: list[str], rng: random.Random) -> str:
    i = rng.choice(_instruction_lines(lines) or range(len(lines)))
    del lines[i]
    return f"deleted line {i + 1}"


def _duplicate_line(lines: list[str], rng: random.Random) -> str:
    i = rng.choice(_instruction_lines(lines) or range(len(lines)))
    lines.insert(i, lines[i])
    return f"duplicated line {i + 1}"


def _shape_edit(lines: list[str], rng: random.Random) -> str:
    candidates = [i for i, line in enumerate(lines) if re.search(r"\[\d", line)]
    if not candidates:
        return _garbage(lines, rng)
    i = rng.choice(candidates)
    dims = list(re.finditer(r"(?<=[\[,])\d+(?=[,\]])", lines[i]))
    if not dims:
        return _garbage(lines, rng)
    m = rng.choice(dims)
    new = str(rng.choice((0, 1, 3, int(m.group()) * 2, int(m.group()) + 1, 2**31)))
    lines[i] = lines[i][: m.start()] + new + lines[i][m.end() :]
    return f"line {i + 1}: dimension {m.group()} -> {new}"


def _opcode_swap(lines: list[str], rng: random.Random) -> str:
    candidates = _instruction_lines(lines)
    if not candidates:
        return _garbage(lines, rng)
    i = rng.choice(candidates)
    m = _INSTRUCTION.match(lines[i])
    assert m is not None
    new = rng.choice(_OPCODES)
    lines[i] = f"{m.group(1)}{m.group(2)} {new}({m.group(4)}"
    return f"line {i + 1}: opcode {m.group(3)} -> {new}"


def _tuple_shape(lines: list[str], rng: random.Random) -> str:
    """A tuple given an array shape: XLA's parser CHECK-fails on it."""
    candidates = [i for i in _instruction_lines(lines) if " tuple(" in lines[i]]
    if not candidates:
        return _opcode_swap(lines, rng)
    i = rng.choice(candidates)
    m = _INSTRUCTION.match(lines[i])
    assert m is not None
    lines[i] = f"{m.group(1)}f32[4]{{0}} {m.group(3)}({m.group(4)}"
    return f"line {i + 1}: tuple with shape f32[4]"


def _operand_swap(lines: list[str], rng: random.Random) -> str:
    candidates = [i for i in _instruction_lines(lines) if "(" in lines[i] and "," in lines[i]]
    if len(candidates) < 2:
        return _delete_line(lines, rng)
    i, j = rng.sample(candidates, 2)
    ops_i = re.search(r"\(([^()]*)\)", lines[i])
    ops_j = re.search(r"\(([^()]*)\)", lines[j])
    if not ops_i or not ops_j:
        return _delete_line(lines, rng)
    lines[i] = lines[i][: ops_i.start(1)] + ops_j.group(1) + lines[i][ops_i.end(1) :]
    return f"line {i + 1}: operands of line {j + 1}"


def _truncate(lines: list[str], rng: random.Random) -> str:
    text = "\n".join(lines)
    cut = rng.randrange(len(text)) if text else 0
    lines[:] = text[:cut].split("\n")
    return f"truncated at byte {cut}"


def _garbage(lines: list[str], rng: random.Random) -> str:
    text = "\n".join(lines)
    at = rng.randrange(len(text) + 1)
    junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 24)))
    junk_text = junk.decode("latin-1")
    lines[:] = (text[:at] + junk_text + text[at:]).split("\n")
    return f"{len(junk)} random bytes at byte {at}"


MUTATIONS: dict[str, Callable[[list[str], random.Random], str]] = {
    "delete_line": _delete_line,
    "duplicate_line": _duplicate_line,
    "shape_edit": _shape_edit,
    "opcode_swap": _opcode_swap,
    "tuple_shape": _tuple_shape,
    "operand_swap": _operand_swap,
    "truncate": _truncate,
    "garbage": _garbage,
}


def mutate(text: str, rng: random.Random) -> tuple[str, str]:
    """One to three mutations of `text`; returns the mutant and what was done."""
    lines = text.split("\n")
    done = []
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        if not lines:
            break  # everything deleted: the empty file is the mutant
        name = rng.choice(sorted(MUTATIONS))
        done.append(f"{name}: {MUTATIONS[name](lines, rng)}")
    return "\n".join(lines), "; ".join(done)


# --- running and judging -----------------------------------------------------


@dataclass
class Run:
    command: list[str]
    returncode: int | None  # None: timed out
    stderr: str
    seconds: float


def run_engine(args: list[str], timeout_s: float) -> Run:
    command = [str(hlo_remat_binary()), *args]
    start = time.monotonic()
    try:
        proc = subprocess.run(command, capture_output=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as e:
        stderr = (e.stderr or b"").decode("utf-8", "replace")
        return Run(command, None, stderr, time.monotonic() - start)
    stderr = proc.stderr.decode("utf-8", "replace")
    return Run(command, proc.returncode, stderr, time.monotonic() - start)


def judge_message(run: Run, input_path: Path | None = None) -> str | None:
    """Why stderr is not what a user should see, or None. The input's folder
    does not count towards a line's length: users name their files."""
    if any(mark in run.stderr for mark in _TRACE_MARKS):
        return "stack trace or abort log on stderr"
    stderr = run.stderr
    if input_path is not None:
        stderr = stderr.replace(str(input_path), input_path.name)
    lines = stderr.strip().splitlines()
    if run.returncode == 2 and not lines:
        return "refused without a message"
    if len(lines) > MAX_MESSAGE_LINES:
        return f"{len(lines)} lines on stderr"
    if any(len(line) > MAX_MESSAGE_CHARS for line in lines):
        return f"a line of {max(len(line) for line in lines)} characters"
    return None


def judge_exit(run: Run) -> tuple[str, str] | None:
    """(kind, detail) for a run that ended the way no input may make it end."""
    if run.returncode is None:
        return "hang", f"no exit after {run.seconds:.0f} s"
    if run.returncode < 0 or run.returncode >= 128:
        return "abort", f"exit {run.returncode}"
    if "XLA aborted" in run.stderr:
        # The launcher kept the abort from the user; it is still a finding.
        return "abort", run.stderr.strip()[-300:]
    if run.returncode == 1:
        return "internal error", run.stderr.strip()[-300:]
    if run.returncode not in (0, 2):
        return "exit code", f"exit {run.returncode}"
    return None


def output_is_valid(output: Path, timeout_s: float) -> str | None:
    """None if `output` re-parses and verifies (a run that changes nothing)."""
    report = output.with_suffix(".check.json")
    run = run_engine(
        [str(output), "--report", str(report), *MEASURE_ONLY.args()],
        timeout_s,
    )
    if run.returncode != 0:
        return f"output refused (exit {run.returncode}): {run.stderr.strip()[:300]}"
    return None


def _save(finding: Finding, out_dir: Path, text: str | None) -> None:
    folder = out_dir / "findings" / finding.case
    folder.mkdir(parents=True, exist_ok=True)
    if text is not None:
        (folder / "input.hlo").write_text(text, encoding="latin-1", errors="replace")
    (folder / "command.txt").write_text(shlex.join(finding.command) + "\n")
    (folder / "finding.json").write_text(json.dumps(asdict(finding), indent=2))


def _record(summary: FuzzSummary, run: Run, input_path: Path) -> None:
    summary.runs += 1
    summary.exit_codes[run.returncode if run.returncode is not None else "timeout"] += 1
    lines = run.stderr.replace(str(input_path), input_path.name).strip().splitlines()
    summary.max_message_lines = max(summary.max_message_lines, len(lines))
    summary.max_message_chars = max(summary.max_message_chars, *(len(x) for x in lines), 0)


def _one_mutant(
    index: int, seeds: list[tuple[str, str]], seed: int, out_dir: Path, timeout_s: float
) -> tuple[Run, list[Finding], str]:
    rng = random.Random(f"{seed}:{index}")
    name, text = seeds[index % len(seeds)]
    mutant, how = mutate(text, rng)
    case = f"mutant-{seed}-{index:05d}"
    work = out_dir / "work"
    work.mkdir(parents=True, exist_ok=True)
    path = work / f"{case}.hlo"
    path.write_text(mutant, encoding="latin-1", errors="replace")
    output = work / f"{case}.out.hlo"
    args = [str(path), "-o", str(output), "--report", str(work / f"{case}.json")]
    algorithm = rng.choice(engine_algorithms())
    args += RematFlags(algorithm=algorithm, optimal_seconds=FUZZ_OPTIMAL_SECONDS).args()
    run = run_engine(args, timeout_s)
    findings = []
    detail_of = f"{name}: {how}"
    if bad := judge_exit(run):
        findings.append(Finding(bad[0], case, run.command, f"{detail_of}; {bad[1]}"))
    elif why := judge_message(run, path):
        findings.append(Finding("message", case, run.command, f"{detail_of}; {why}"))
    elif run.returncode == 0 and (invalid := output_is_valid(output, timeout_s)):
        findings.append(Finding("invalid output", case, run.command, f"{detail_of}; {invalid}"))
    for f in (path, output, work / f"{case}.json", output.with_suffix(".check.json")):
        if not findings:
            f.unlink(missing_ok=True)
    return run, findings, mutant


def fuzz_mutants(
    seeds: Iterable[Path],
    count: int,
    seed: int,
    out_dir: Path,
    timeout_s: float = 60,
    jobs: int = 2,
    progress: Callable[[int, int], None] | None = None,
) -> FuzzSummary:
    texts = [(p.name, p.read_text(encoding="latin-1")) for p in seeds]
    if not texts:
        raise ValueError("no seed modules to mutate")
    summary = FuzzSummary("mutants", seed)
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [
            pool.submit(_one_mutant, i, texts, seed, out_dir, timeout_s) for i in range(count)
        ]
        for done, future in enumerate(futures, 1):
            run, findings, mutant = future.result()
            _record(summary, run, Path(run.command[1]))
            for finding in findings:
                summary.findings.append(finding)
                _save(finding, out_dir, mutant)
            if progress:
                progress(done, count)
    summary.seconds = time.monotonic() - start
    return summary


_DEFINITION = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+ = ")


def count_instructions(hlo_text: str) -> int:
    """Instructions in every computation (tuple shapes have spaces, so this
    counts definitions, not _INSTRUCTION matches)."""
    return sum(1 for line in hlo_text.splitlines() if _DEFINITION.match(line))


def judge_step_run(run: Run, report: dict | None, output: Path) -> tuple[str, str] | None:
    """(kind, detail) for a random step's run that is wrong, or None."""
    if bad := judge_exit(run):
        return bad
    if run.returncode != 0 or report is None:
        return "refused", run.stderr.strip()[-300:]
    if why := judge_message(run, Path(run.command[1])):
        return "message", why
    try:
        typed = RematReport.from_json(report)
    except (TypeError, ValueError) as e:
        return "report", str(e)[:300]
    if typed.numerics != "equal":
        return "numerics", f"numerics {typed.numerics}: {typed.note[:300]}"
    before, after = typed.allocation_before_bytes, typed.allocation_after_bytes
    if after > before:
        return "peak worse", f"{before} -> {after} bytes"
    counted = count_instructions(output.read_text())
    if counted != typed.instructions_after:
        return (
            "report",
            f"report says {typed.instructions_after} instructions, output has {counted}",
        )
    return None


def _one_step(
    index: int,
    seed: int,
    out_dir: Path,
    budgets: tuple[float, ...],
    algorithms: tuple[str, ...],
    timeout_s: float,
) -> tuple[Path | None, list[Run], list[Finding]]:
    """One random step through every algorithm at every budget: (its module,
    the runs judged, the findings)."""
    from remat_harness.hlo_dump import DumpError, ModelSpec, produce_hlo

    name = f"random{seed * 1000 + index}"
    spec = ModelSpec.parse(name, batch_size=8)
    try:
        step = produce_hlo(spec) / "step.hlo"
    except (DumpError, subprocess.TimeoutExpired) as e:
        return None, [], [Finding("model", name, [], str(e)[-500:])]
    work = out_dir / "work" / name
    work.mkdir(parents=True, exist_ok=True)
    base = run_engine(
        [
            str(step),
            "--report",
            str(work / "base.json"),
            *MEASURE_ONLY.args(),
        ],
        timeout_s,
    )
    if base.returncode != 0:
        return step, [], [Finding("baseline", name, base.command, base.stderr[-300:])]
    peak = RematReport.from_json(json.loads((work / "base.json").read_text())).allocated("before")
    runs: list[Run] = []
    findings: list[Finding] = []
    for algorithm in algorithms:
        for fraction in budgets:
            case = f"{name}-{algorithm}-{fraction}"
            output, report_path = work / f"{case}.hlo", work / f"{case}.json"
            report_path.unlink(missing_ok=True)
            run = run_engine(
                [
                    str(step), "-o", str(output), "--report", str(report_path),
                    "--check-numerics",
                    *RematFlags(
                        int(peak * fraction), algorithm, optimal_seconds=FUZZ_OPTIMAL_SECONDS
                    ).args(),
                ],
                timeout_s,
            )  # fmt: skip
            runs.append(run)
            report = json.loads(report_path.read_text()) if report_path.exists() else None
            bad = judge_step_run(run, report, output)
            if bad is None and (invalid := output_is_valid(output, timeout_s)):
                bad = ("invalid output", invalid)
            if bad:
                findings.append(Finding(bad[0], case, run.command, bad[1]))
            else:
                output.unlink(missing_ok=True)
    return step, runs, findings


def fuzz_steps(
    count: int,
    seed: int,
    out_dir: Path,
    budgets: tuple[float, ...] = (0.7, 0.5, 0.3),
    algorithms: tuple[str, ...] | None = None,
    timeout_s: float = 600,
    jobs: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> FuzzSummary:
    """Random training steps from `seed`, every algorithm at every budget;
    `jobs` steps at once (each is a TensorFlow trace, then engine runs)."""
    summary = FuzzSummary("steps", seed)
    chosen = algorithms or engine_algorithms()
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [
            pool.submit(_one_step, i, seed, out_dir, budgets, chosen, timeout_s)
            for i in range(count)
        ]
        for done, future in enumerate(futures, 1):
            step, runs, findings = future.result()
            for run in runs:
                _record(summary, run, step or Path(run.command[1]))
            for finding in findings:
                summary.findings.append(finding)
                _save(finding, out_dir, None)
            if progress:
                progress(done, count)
    summary.seconds = time.monotonic() - start
    return summary
