#!/usr/bin/env python3
"""Fails when the engine's units include each other in a cycle.

A unit is a patch_src/ file's stem (foo.h, foo.cc and foo_test.cc are unit
foo, tests left out); unit A depends on B when a file of A includes
"xla/service/remat/B.h". A cycle means the layers are not layers: the build
cannot give each unit a target of its own with its dependencies declared.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

PATCH_SRC = Path(__file__).resolve().parent.parent / "patch_src"
INCLUDE = re.compile(r'^#include "xla/service/remat/(\w+)\.h"', re.M)


def unit_graph(folder: Path = PATCH_SRC) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in sorted([*folder.glob("*.h"), *folder.glob("*.cc")]):
        if path.stem.endswith("_test"):
            continue
        deps = graph.setdefault(path.stem, set())
        deps.update(name for name in INCLUDE.findall(path.read_text()) if name != path.stem)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one unit (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(unit: str) -> None:
        index[unit] = low[unit] = len(index)
        stack.append(unit)
        on_stack.add(unit)
        for dep in sorted(graph.get(unit, ())):
            if dep not in index:
                visit(dep)
                low[unit] = min(low[unit], low[dep])
            elif dep in on_stack:
                low[unit] = min(low[unit], index[dep])
        if low[unit] == index[unit]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == unit:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10000)
    for unit in sorted(graph):
        if unit not in index:
            visit(unit)
    return found


def main() -> int:
    found = cycles(unit_graph())
    for component in found:
        print(f"include cycle among: {', '.join(component)}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
