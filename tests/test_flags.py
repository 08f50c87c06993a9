"""Flag parsing and bad input: clear one-line errors, exit code 2, no crash."""

from __future__ import annotations

import os

import pytest

from tests import hlo_cases
from tests.conftest import last_line


@pytest.mark.parametrize(
    ("flag", "must_mention"),
    [
        (
            "--xla_rematerialization_algorithm=greedy",
            ["greedy", "standard", "path", "optimal", "xla"],
        ),
        ("--xla_rematerialization_optimal_seconds=0", ["optimal_seconds", "0", "seconds > 0"]),
        ("--xla_rematerialization_optimal_seconds=soon", ["optimal_seconds", "soon"]),
        ("--xla_rematerialization_scheduler=bfs", ["bfs", "given", "postorder", "DFS", "list"]),
        ("--xla_rematerialization_mem_limit=-5", ["mem_limit", "-5"]),
        ("--xla_rematerialization_mem_limit=", ["mem_limit", "needs a value"]),
        ("--xla_rematerialization_mem_limit=lots", ["mem_limit", "lots"]),
        ("--xla_rematerialization_mem_limit=12X", ["mem_limit", "12X", "(0, 1]", "0.5x"]),
        ("--xla_rematerialization_mem_limit=0x", ["mem_limit", "0x", "(0, 1]"]),
        ("--xla_rematerialization_small_node_limit=big", ["small_node_limit", "big"]),
        ("--xla_rematerialization_dump_dot=maybe", ["dump_dot", "maybe"]),
        ("--xla_rematerialization_frontier_cache=", ["frontier_cache", "needs a value"]),
        ("--xla_no_such_flag=1", ["unknown flag", "xla_no_such_flag"]),
    ],
)
def test_bad_flag_names_flag_value_and_choices(run_engine, flag, must_mention):
    r = run_engine(hlo_cases.CHAIN, flag)
    assert r.returncode == 2, r.stderr
    line = last_line(r.stderr)
    for word in must_mention:
        assert word in line, line
    assert r.report is None


def test_bad_value_in_xla_flags_env_is_reported(run_engine):
    env = dict(os.environ, XLA_FLAGS="--xla_dump_to=x --xla_rematerialization_algorithm=nope")
    r = run_engine(hlo_cases.CHAIN, env=env)
    assert r.returncode == 2
    assert "XLA_FLAGS" in last_line(r.stderr) and "nope" in last_line(r.stderr)


def test_command_line_wins_over_xla_flags(run_engine):
    env = dict(os.environ, XLA_FLAGS="--xla_rematerialization_algorithm=xla")
    r = run_engine(hlo_cases.CHAIN, "--xla_rematerialization_algorithm=standard", env=env)
    assert r.returncode == 0, r.stderr
    assert r.report["algorithm"] == "standard"


def test_xla_flags_env_is_read(run_engine):
    env = dict(os.environ, XLA_FLAGS="--xla_rematerialization_scheduler=postorder")
    r = run_engine(hlo_cases.CHAIN, env=env)
    assert r.report["scheduler"] == "postorder"


@pytest.mark.parametrize(
    ("text", "expected"),
    [("512M", 512 * 2**20), ("1.5GiB", int(1.5 * 2**30)), ("64KiB", 64 * 1024), ("1000", 1000)],
)
def test_budget_suffixes(run_engine, text, expected):
    r = run_engine(hlo_cases.CHAIN, f"--xla_rematerialization_mem_limit={text}")
    assert r.returncode == 0, r.stderr
    assert r.report["budget_bytes"] == expected


def test_malformed_hlo_says_where(run_engine):
    r = run_engine(hlo_cases.MALFORMED)
    assert r.returncode == 2
    line = last_line(r.stderr)
    assert "malformed HLO" in line and "frobnicate" in line
    assert len([x for x in r.stderr.splitlines() if x.startswith("hlo-remat:")]) == 1


@pytest.mark.parametrize("case", ["SHAPE_MISMATCH", "BAD_SCHEDULE"])
def test_invalid_hlo_is_an_error_not_a_crash(run_engine, case):
    r = run_engine(getattr(hlo_cases, case))
    assert r.returncode == 2, r.stderr
    assert "HLO" in last_line(r.stderr)


def test_unreadable_input(engine, tmp_path):
    import subprocess

    proc = subprocess.run(
        [str(engine), str(tmp_path / "missing.hlo")], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert "cannot read: No such file or directory" in proc.stderr


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (None, "a folder"),
        (b"", "empty"),
        (b"\x7fELF\x00\x01binary", "a binary file"),
        (b'{"module": "m"}', "JSON"),
    ],
)
def test_input_that_is_no_hlo_text_says_why(engine, tmp_path, content, reason):
    import subprocess

    path = tmp_path / "input"
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    proc = subprocess.run([str(engine), str(path)], capture_output=True, text=True)
    assert proc.returncode == 2
    line = proc.stderr.strip().splitlines()[-1]
    assert reason in line and "expected HLO text" in line, line


def test_help_lists_flags(engine):
    import subprocess

    out = subprocess.run([str(engine), "--help"], capture_output=True, text=True).stdout
    assert "xla_rematerialization_algorithm" in out and "xla_use_hlo_rematerialization" in out


def test_relative_budget_is_a_share_of_the_peak(run_engine):
    before = run_engine(hlo_cases.CHAIN, "--xla_rematerialization_mem_limit=1G").report
    rep = run_engine(hlo_cases.CHAIN, "--xla_rematerialization_mem_limit=0.5x").report
    assert rep["budget_bytes"] == before["allocation_before_bytes"] // 2
    assert "budget 0.5x of" in rep["note"]


def test_fail_if_missed_is_exit_3(run_engine):
    missed = run_engine(hlo_cases.CHAIN, "--xla_rematerialization_mem_limit=1", "--fail-if-missed")
    assert missed.returncode == 3 and missed.report["budget_met"] is False
    met = run_engine(hlo_cases.CHAIN, "--xla_rematerialization_mem_limit=1G", "--fail-if-missed")
    assert met.returncode == 0
