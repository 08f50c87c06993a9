"""One flag table (issue 38): the engine declares each flag once
(remat_flag_table.cc); its --help, the harness and XLA_FLAGS read that
table, and scripts/check_flag_names.py, which `make lint` runs, finds a
flag's name spelled anywhere else."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

from remat_harness.engine import RematFlags
from remat_harness.flag_table import engine_flags, flag
from tests.script_modules import load_script

checker = load_script("check_flag_names")


def test_the_engine_lists_each_flag_once_with_its_help(engine: Path):
    flags = engine_flags()
    names = [f.name for f in flags.values()]
    assert len(set(names)) == len(names) == len(flags)
    assert names == checker.table_names(), "the list is the table, in its order"
    help_text = subprocess.run(
        [str(engine), "--help"], capture_output=True, text=True, check=True
    ).stdout
    for f in flags.values():
        assert f.help and f.default, f
        assert f"--{f.name}" in help_text and f.help in help_text, f.name
        assert f.is_switch == (f.value == ""), f


def test_choice_flags_list_what_they_accept():
    assert "path" in flag("algorithm").choices
    assert "given" in flag("scheduler").choices
    assert flag("mem_limit").choices == ()


def test_every_harness_flag_is_a_key_of_the_table():
    every = RematFlags(
        budget="0.5x",
        algorithm="path",
        scheduler="list",
        max_extra_flops=0.1,
        optimal_seconds=5,
        frontier_cache="/tmp/frontiers",
    )
    args = every.args()
    assert len(args) == len(dataclasses.fields(RematFlags))
    names = {f.name for f in engine_flags().values()}
    for arg in args:
        assert arg.startswith("--") and arg[2:].split("=")[0] in names, arg
    enable, *rest = every.xla_flags().split()
    assert enable == f"--{flag('enable').name}" and rest == args


def test_the_repository_spells_no_flag_outside_the_table():
    assert checker.findings() == []


def test_a_flag_spelled_in_code_is_found_and_comments_are_not(tmp_path: Path):
    name = flag("algorithm").name
    (tmp_path / "patch_src").mkdir()
    (tmp_path / "patch_src" / "a.cc").write_text(
        f'// --{name}=path in a comment is documentation\nauto s = "--{name}=path";\n'
    )
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "b.py").write_text(
        f'"""--{name} in a docstring is documentation."""\nFLAG = "--{name}"\n'
    )
    assert checker.findings(tmp_path) == [f"patch_src/a.cc:2: {name}", f"src/b.py:2: {name}"]
