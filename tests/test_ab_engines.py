"""scripts/ab_engines.py: two builds of the engine on the same module say
whether they plan the same, and give each run's pass time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remat_harness.paths import hlo_remat_binary
from tests import hlo_cases
from tests.script_modules import load_script

ab_engines = load_script("ab_engines")


def test_differences_name_what_was_written_differently():
    base = {"frontier.json": "a", "out.hlo": "b", "report": "c"}
    assert ab_engines.differences(base, dict(base)) == []
    assert ab_engines.differences(base, base | {"out.hlo": "x"}) == ["out.hlo"]
    assert ab_engines.differences(base, {"report": "c"}) == ["frontier.json", "out.hlo"]


def test_texts_differing_in_names_only_are_the_same_plan():
    base = '%fusion.3.remat.7 = f32[8]{0} add(%p, %p)\n{"decisions": ["fusion.3.remat.7"]}'
    renamed = base.replace("fusion.3.remat.7", "fusion.3.remat.5")
    assert ab_engines.same_but_names(base, renamed)
    # Another shape, another operand: another module.
    assert not ab_engines.same_but_names(base, base.replace("f32[8]", "f32[9]"))
    assert not ab_engines.same_but_names(base, renamed.replace("(%p, %p)", "(%p, %q)"))
    # Two names of one become one name, or one name becomes two: not a renaming.
    two = "%a = add(%x, %y)"
    assert not ab_engines.same_but_names(two, "%a = add(%x, %x)")
    assert not ab_engines.same_but_names("%a = add(%x, %x)", two)
    # An opcode or a type changed throughout is another module, not a renaming.
    assert not ab_engines.same_but_names(base, base.replace("add", "multiply"))
    assert not ab_engines.same_but_names(base, base.replace("f32", "bf16"))
    assert not ab_engines.same_but_names(base, base.replace("f32", "f16"))
    # A name counter's numbers, and a clone's name, are renamings.
    assert ab_engines.same_but_names("%bitcast.12 = f32[8]", "%bitcast.15 = f32[8]")
    assert ab_engines.same_but_names("%f.3.remat2.1.remat = f32[8]", "%f.3.remat3 = f32[8]")
    # A counter one build's name has and the other's has not.
    assert ab_engines.same_but_names(
        "calls=%fused_computation.7.clone.clone", "calls=%fused_computation.7.clone.3.clone"
    )
    # A body cloned from a clone in one build, from the original in the other.
    assert ab_engines.same_but_names("calls=%fused.7.clone.1", "calls=%fused.7.clone.clone")
    # ... but still one name for one.
    assert not ab_engines.same_but_names(
        "calls=%fused.7.clone, calls=%fused.7.clone.clone",
        "calls=%fused.7.clone.1, calls=%fused.7.clone.1",
    )
    # Counters and clones aside, another name is not a renaming.
    assert not ab_engines.same_but_names("calls=%fused.7.clone", "calls=%fusion.7.clone")
    assert not ab_engines.same_but_names("calls=%fused.7", "calls=%fused.7.clone")


def test_one_build_against_itself_plans_the_same(tmp_path: Path, capsys):
    hlo = tmp_path / "residual.hlo"
    hlo.write_text(hlo_cases.RESIDUAL)
    engine = str(hlo_remat_binary())
    out = tmp_path / "ab"
    argv = ["--base", engine, "--new", engine, "--modules", str(hlo), "--runs", "2"]
    assert ab_engines.main([*argv, "--budget", "1", "--out", str(out)]) == 0
    (cell,) = json.loads((out / "ab.json").read_text())
    assert cell["differences"] == []
    assert [len(s) for s in cell["seconds"].values()] == [2, 2]
    assert all(s > 0 for runs in cell["seconds"].values() for s in runs)
    assert "residual.hlo cpu: same; base " in capsys.readouterr().out
    # The run wrote what it compared: a frontier of the module's plans.
    assert json.loads((out / "cpu" / "residual.hlo" / "new" / "frontier.json").read_text())


def test_a_missing_binary_is_named(tmp_path: Path, capsys):
    with pytest.raises(SystemExit):
        ab_engines.main(["--base", str(tmp_path / "none"), "--new", "x", "--modules", "m"])
    assert "none: no such engine binary" in capsys.readouterr().err
