"""The pass's flags as the engine declares them (`patch_src/remat_flag_table.cc`).

Python keeps no copy of their names, algorithms or schedulers: it reads them
from `hlo-remat --list-flags`, once per process.
"""

from __future__ import annotations

import functools
import json
import subprocess
from dataclasses import dataclass

from remat_harness.paths import hlo_remat_binary


class FlagTableError(RuntimeError):
    """The engine did not say what its flags are."""


@dataclass(frozen=True)
class EngineFlag:
    key: str  # what the harness calls it: "mem_limit"
    name: str  # as XLA_FLAGS spells it, without dashes
    value: str  # the word for its value in --help; "" for a switch
    default: str
    help: str
    choices: tuple[str, ...]  # the values a choice flag accepts

    @property
    def is_switch(self) -> bool:
        return not self.value

    def arg(self, value: object) -> str:
        """`--name=value`, as hlo-remat and XLA_FLAGS take it."""
        return f"--{self.name}={value}"


class _EngineRefused(Exception):
    """hlo-remat exited non-zero; the message is its last line."""


def _ask_engine(*args: str) -> object:
    """What `hlo-remat ARGS` prints, as JSON. On failure, the error holds the
    engine's last line (its one-line message), without the tool's prefix."""
    binary = hlo_remat_binary()
    proc = subprocess.run(
        [str(binary), *args], capture_output=True, text=True, timeout=120, check=False
    )
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"]
        raise _EngineRefused(lines[-1].removeprefix("hlo-remat: "))
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        raise FlagTableError(f"{binary} {' '.join(args)} printed no JSON: {e}") from e


@functools.lru_cache(maxsize=1)
def engine_flags() -> dict[str, EngineFlag]:
    """Every flag of the built engine, by key, in its --help order."""
    try:
        entries = _ask_engine("--list-flags")
    except _EngineRefused as e:
        raise FlagTableError(f"{hlo_remat_binary()} --list-flags failed: {e}") from None
    flags = [
        EngineFlag(
            key=e["key"],
            name=e["name"],
            value=e["value"],
            default=e["default"],
            help=e["help"],
            choices=tuple(e["choices"]),
        )
        for e in entries
    ]
    return {f.key: f for f in flags}


def flag(key: str) -> EngineFlag:
    """The flag the harness calls `key`; FlagTableError names the keys there are."""
    flags = engine_flags()
    if key not in flags:
        raise FlagTableError(f"the engine has no flag {key!r}; it has {', '.join(flags)}")
    return flags[key]


def algorithms() -> tuple[str, ...]:
    """The algorithms the engine accepts, in its order."""
    return flag("algorithm").choices


def schedulers() -> tuple[str, ...]:
    """The schedulers the engine accepts, in its order."""
    return flag("scheduler").choices


class BudgetError(ValueError):
    """A budget the engine refuses; the message is the engine's."""


def resolve_budgets(budgets: list[str] | tuple[str, ...], memory_before: int) -> list[int]:
    """Each budget as the bytes the pass would plan for, on a module of
    `memory_before` bytes: the engine resolves them (`hlo-remat
    --resolve-budgets`), so the harness and the pass read a budget alike."""
    return list(_resolved(tuple(b.strip() for b in budgets), memory_before))


@functools.lru_cache(maxsize=256)
def _resolved(budgets: tuple[str, ...], memory_before: int) -> tuple[int, ...]:
    """resolve_budgets, once per process for each question (an engine start
    costs most of a second)."""
    if not budgets:
        return ()
    for budget in budgets:
        if "," in budget or not budget:
            raise BudgetError(f"budget {budget!r}: give one value, such as 0.5x or 512M")
    try:
        resolved = _ask_engine(
            f"--resolve-budgets={','.join(budgets)}", f"--memory-before={memory_before}"
        )
    except _EngineRefused as e:
        raise BudgetError(str(e)) from None
    return tuple(int(n) for n in resolved)
