"""`remat-harness`'s command line: help that teaches, one spelling."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import pytest

from remat_harness.cli import _HelpFormatter, build_parser, normalize_option_spelling
from remat_harness.paths import REPO_ROOT


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


@pytest.mark.parametrize("name", sorted(_subcommands()))
def test_every_option_says_what_it_does_and_its_default(name):
    formatter = _HelpFormatter(prog=name)
    for action in _subcommands()[name]._actions:
        if isinstance(action, argparse._HelpAction) or not action.option_strings:
            continue
        flag = action.option_strings[0]
        assert action.help, f"{name} {flag} has no help"
        shown = formatter._get_help_string(action) or ""
        assert "default" in shown or action.required, f"{name} {flag}: {shown!r}"
        assert "_" not in flag, f"{name} {flag} is not kebab-case"


def test_underscores_and_dashes_name_the_same_option():
    parser = build_parser()
    dashed = parser.parse_args(["sweep", "--batch-size", "8", "--resnet-version=2"])
    underscored = parser.parse_args(["sweep", "--batch_size", "8", "--resnet_version=2"])
    assert (dashed.batch_size, dashed.resnet_version) == (8, 2)
    assert vars(dashed) == vars(underscored)


def test_values_keep_their_underscores():
    assert normalize_option_spelling(["--models=wide_mlp", "wide_mlp", "--out", "a_b"]) == [
        "--models=wide_mlp",
        "wide_mlp",
        "--out",
        "a_b",
    ]


def test_help_shows_the_default_of_a_switch_as_off():
    text = _subcommands()["sweep"].format_help()
    assert "(default: off)" in text and "(default: 20,56)" in text


def test_a_non_editable_install_fails_at_once_with_the_fix(tmp_path):
    """`pip install .` copies the package but not models/: the first command
    that needs them says so and how to fix it; REMAT_CHECKOUT is the fix."""
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
         "--target", str(target), str(REPO_ROOT)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "REMAT_CHECKOUT"}
    env["PYTHONPATH"] = str(target)
    command = [sys.executable, "-m", "remat_harness", "produce-hlo", "--model", "20"]
    proc = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 2
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1 and "pip install -e" in lines[0] and "REMAT_CHECKOUT" in lines[0]
    proc = subprocess.run(
        [sys.executable, "-m", "remat_harness", "--version"], cwd=tmp_path, env=env,
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0 and proc.stdout.startswith("remat-harness 0.1.0")


def test_the_pass_flags_are_spelled_in_one_place():
    from remat_harness.engine import MEASURE_ONLY, RematFlags

    flags = RematFlags("0.5x", "path", "DFS", "none")
    assert flags.args() == [
        "--xla_rematerialization_mem_limit=0.5x",
        "--xla_rematerialization_algorithm=path",
        "--xla_rematerialization_scheduler=DFS",
        "--xla_rematerialization_max_extra_flops=none",
    ]
    assert flags.xla_flags().startswith("--xla_use_hlo_rematerialization --xla_rem")
    assert RematFlags(algorithm="xla").args() == ["--xla_rematerialization_algorithm=xla"]
    assert MEASURE_ONLY.args() == [f"--xla_rematerialization_mem_limit={1 << 60}"]
