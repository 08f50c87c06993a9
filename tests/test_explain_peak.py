"""`hlo-remat --explain-peak N`: the values live at the HeapSimulator peak,
before and after the pass, with the buffer assignment beside it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from remat_harness.engine import run_hlo_remat
from tests.test_invariant_stacks import STACK, STACK_SHAPE

PEAK_LINE = re.compile(
    r"^peak (before|after): (\d+) bytes \(HeapSimulator\), reached allocating (\S+); "
    r"(\d+) values live; buffer assignment (\d+) bytes$"
)


def explain(tmp_path: Path, *flags: str):
    src = tmp_path / "in.hlo"
    src.write_text(STACK)
    done = run_hlo_remat(src, [*flags], tmp_path / "r.json")
    return done


def sections(stderr: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    current = None
    for line in stderr.splitlines():
        match = PEAK_LINE.match(line)
        if match:
            current = match.group(1)
            out[current] = [line]
        elif current is not None and line.startswith("  "):
            out[current].append(line)
        else:
            current = None
    return out


def test_the_stack_is_named_at_the_peak_before_and_gone_after(tmp_path):
    done = explain(tmp_path, "--explain-peak", "3", "--xla_rematerialization_mem_limit=1M")
    assert done.returncode == 0, done.stderr
    found = sections(done.stderr)
    assert set(found) == {"before", "after"}, done.stderr
    before = PEAK_LINE.match(found["before"][0])
    after = PEAK_LINE.match(found["after"][0])
    assert before and after
    # The printed peaks are the report's HeapSimulator figures.
    assert int(before.group(2)) == done.raw["heap_sim_before_bytes"]
    assert int(after.group(2)) == done.raw["heap_sim_after_bytes"]
    # Three values at most, the largest first: the 8 MiB stack leads before.
    largest_before = found["before"][1:4]
    assert STACK_SHAPE in largest_before[0], found["before"]
    sizes = [int(line.split()[0]) for line in largest_before]
    assert sizes == sorted(sizes, reverse=True)
    assert not any(STACK_SHAPE in line for line in found["after"]), found["after"]
    assert int(after.group(5)) < int(before.group(5))


@pytest.mark.parametrize("value", ["0", "-2", "many"])
def test_a_bad_count_names_the_option(tmp_path, value):
    done = explain(tmp_path, "--explain-peak", value)
    assert done.returncode == 2
    assert f"--explain-peak={value} is not valid" in done.stderr


# A donated weight read once, early, and written back at the end: XLA's live
# ranges free the parameter after its read and give the output a buffer of
# its own from its definition. The CPU's tracker counted so too since 7794f26;
# before, it kept the parameter to the end beside the output (12 MiB at
# `doubled`, where the live ranges hold 8), which is what the lines below
# exist to show.
DONATED = """HloModule donated, is_scheduled=true, input_output_alias={ {}: (0, {}, may-alias) }

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

ENTRY main {
  weights = f32[1048576]{0} parameter(0)
  zero = f32[] constant(0)
  total = f32[] reduce(weights, zero), dimensions={0}, to_apply=add
  spread = f32[1048576]{0} broadcast(total), dimensions={}
  ROOT doubled = f32[1048576]{0} add(spread, spread)
}
"""
TRACKER_LINE = re.compile(
    r"^tracker (before|after): (\d+) bytes, the planner's count, at (\S+); "
    r"HeapSimulator's live ranges hold (\d+) bytes there$"
)


def test_the_tracker_ends_a_donated_weight_where_the_live_ranges_do(tmp_path):
    src = tmp_path / "donated.hlo"
    src.write_text(DONATED)
    done = run_hlo_remat(src, ["--explain-peak", "3"], tmp_path / "r.json")
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    found = {m.group(1): (i, m) for i, line in enumerate(lines) if (m := TRACKER_LINE.match(line))}
    assert set(found) == {"before", "after"}, done.stderr
    at, before = found["before"]
    # The tracker's peak is the planner's count of the module as given, and
    # the live ranges hold as much there: the output and the operand it reads,
    # not the weight read long before.
    assert int(before.group(2)) == done.raw["peak_before_bytes"] == 2 * 4 * 2**20
    assert before.group(3) == "doubled"
    assert int(before.group(4)) == 2 * 4 * 2**20
    assert lines[at + 1] == "  only the tracker: 0 values, 0 bytes"
    assert lines[at + 2] == "  only HeapSimulator: 0 values, 0 bytes"
