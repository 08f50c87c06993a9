"""Planning inside the computations the entry calls (patch_src/callee_planning.cc):
a while body whose own peak holds the module above its budget is planned on
its own schedule."""

from __future__ import annotations

from pathlib import Path

import pytest

from remat_harness.engine import run_hlo_remat
from tests.test_explain_peak import PEAK_LINE

# A loop body (and its condition) named PREFIXbody: `a` is read early (d1)
# and late (t), so every order holds it across d2..d4.
COND = """
PREFIXcond {
  p = (s32[], f32[512,1024]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
"""

BODY = (
    COND
    + """
PREFIXbody {
  p = (s32[], f32[512,1024]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[512,1024] get-tuple-element(p), index=1
  a = f32[512,1024] exponential(x)
  d1 = f32[512,1024] add(x, a)
  d2 = f32[512,1024] sine(d1)
  d3 = f32[512,1024] cosine(d1)
  d4 = f32[512,1024] tanh(d1)
  e = f32[512,1024] multiply(d2, d3)
  f = f32[512,1024] multiply(e, d4)
  t = f32[512,1024] add(f, a)
  y = f32[512,1024] tanh(t)
  one = s32[] constant(1)
  next = s32[] add(i, one)
  ROOT r = (s32[], f32[512,1024]) tuple(next, y)
}
"""
)

# An entry that runs the loop PREFIXbody on sine(w).
ENTRY = """
ENTRY main {
  w = f32[512,1024] parameter(0)
  x0 = f32[512,1024] sine(w)
  zero = s32[] constant(0)
  init = (s32[], f32[512,1024]) tuple(zero, x0)
  l = (s32[], f32[512,1024]) while(init), condition=PREFIXcond, body=PREFIXbody
  ROOT out = f32[512,1024] get-tuple-element(l), index=1
}
"""

# Only recomputing `a` inside the body lowers the body's peak. The entry has
# nothing to move.
LOOP = (
    "HloModule loop_body_peak, is_scheduled=true\n"
    + BODY.replace("PREFIX", "")
    + ENTRY.replace("PREFIX", "")
)


def run(tmp_path: Path, algorithm: str, budget: str, module: str = LOOP):
    src = tmp_path / "in.hlo"
    src.write_text(module)
    out = tmp_path / "out.hlo"
    done = run_hlo_remat(
        src,
        [
            f"--xla_rematerialization_algorithm={algorithm}",
            f"--xla_rematerialization_mem_limit={budget}",
            "--explain-peak",
            "1",
        ],
        tmp_path / "r.json",
        output=out,
        check_numerics=True,
    )
    assert done.returncode == 0, done.stderr
    assigned = {
        m.group(1): int(m.group(5))
        for m in map(PEAK_LINE.match, done.stderr.splitlines())
        if m is not None
    }
    return done.raw, out.read_text(), assigned


def body_of(module: str) -> str:
    start = module.index("%body ")
    return module[start : module.index("\n}\n", start)]


@pytest.mark.parametrize("algorithm", ["standard", "path"])
def test_a_loop_body_over_the_budget_is_planned_inside(tmp_path, algorithm):
    report, out, assigned = run(tmp_path, algorithm, "10M")
    assert "1 called computation(s) planned" in report["note"]
    assert report["instructions_added"] > 0
    # `a` is computed again right before its late use, inside the body.
    body = body_of(out)
    assert "exponential(%x)" in body.split("%a.remat")[1], body
    assert report["numerics"] == "equal", report["note"]
    # The tracker (the planner's model) and XLA's buffer assignment see one
    # 2 MiB buffer less; the simulator's module-wide minimum does not (it
    # ends the body's parameter at its last read there, and `a` now reads it
    # late), so the budget counts as missed.
    assert report["peak_after_bytes"] == report["peak_scheduled_bytes"] - 2 * 2**20
    assert assigned["after"] == assigned["before"] - 2 * 2**20, assigned
    assert report["flops_after"] > report["flops_before"]


def test_nothing_is_planned_inside_when_the_entry_holds_the_budget(tmp_path):
    report, out, _ = run(tmp_path, "standard", "100M")
    assert "called computation" not in report["note"]
    assert "remat" not in out


# The same body run by a loop inside the body of another loop: only the
# inner body has anything to move, two levels below the entry.
NESTED = (
    "HloModule nested_loop_body_peak, is_scheduled=true\n"
    + BODY.replace("PREFIX", "inner_")
    + COND.replace("PREFIX", "outer_")
    + """
outer_body {
  p = (s32[], f32[512,1024]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[512,1024] get-tuple-element(p), index=1
  zero = s32[] constant(0)
  init = (s32[], f32[512,1024]) tuple(zero, x)
  l = (s32[], f32[512,1024]) while(init), condition=inner_cond, body=inner_body
  y = f32[512,1024] get-tuple-element(l), index=1
  one = s32[] constant(1)
  next = s32[] add(i, one)
  ROOT r = (s32[], f32[512,1024]) tuple(next, y)
}
"""
    + ENTRY.replace("PREFIX", "outer_")
)


@pytest.mark.parametrize("algorithm", ["standard", "path"])
def test_a_loop_in_a_loop_body_is_planned_two_levels_down(tmp_path, algorithm):
    report, out, assigned = run(tmp_path, algorithm, "10M", NESTED)
    assert "1 called computation(s) planned, 2 level(s) deep" in report["note"]
    body = out[out.index("%inner_body") : out.index("\n}\n", out.index("%inner_body"))]
    assert "exponential(%x)" in body.split("%a.remat")[1], body
    assert report["numerics"] == "equal", report["note"]
    assert report["peak_after_bytes"] == report["peak_scheduled_bytes"] - 2 * 2**20
    assert assigned["after"] == assigned["before"] - 2 * 2**20, assigned
