#!/usr/bin/env python3
"""Fails when a flag of the pass is spelled outside its table.

The flags are declared once, in patch_src/remat_flag_table.cc; code that needs
a name asks the table (RematFlagName in C++, `flag_table.flag` in Python, which
reads `hlo-remat --list-flags`). This check finds a flag's full name in a
string the code uses: C++ string literals outside comments, and Python strings
that are not docstrings. Tests are left out: they spell the flags as a user
types them, which is what they test.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "patch_src" / "remat_flag_table.cc"
FLAG_NAME = re.compile(r"xla_(?:use_hlo_rematerialization|rematerialization_[a-z_]+)")
CXX_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
CXX_FOLDERS = ("patch_src", "tools/hlo_remat")
PYTHON_FOLDERS = ("src", "scripts", "models")


def cxx_findings(path: Path, root: Path) -> Iterator[str]:
    for number, line in enumerate(path.read_text().splitlines(), 1):
        code = line.split("//", 1)[0] if not line.lstrip().startswith('"') else line
        for literal in CXX_STRING.findall(code):
            for name in FLAG_NAME.findall(literal):
                yield f"{path.relative_to(root)}:{number}: {name}"


def docstrings(tree: ast.AST) -> set[int]:
    """ids of the string nodes that are docstrings."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def python_findings(path: Path, root: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text(), str(path))
    skip = docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            for name in FLAG_NAME.findall(node.value):
                yield f"{path.relative_to(root)}:{node.lineno}: {name}"


def findings(root: Path = ROOT) -> list[str]:
    out: list[str] = []
    for folder in CXX_FOLDERS:
        for path in sorted((root / folder).glob("*")):
            test = path.stem.endswith("_test")
            if path.suffix in (".cc", ".h") and path.name != TABLE.name and not test:
                out += cxx_findings(path, root)
    for folder in PYTHON_FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            out += python_findings(path, root)
    return out


def table_names(table: Path = TABLE) -> list[str]:
    return [n for s in CXX_STRING.findall(table.read_text()) for n in FLAG_NAME.findall(s)]


def main() -> int:
    names = table_names()
    twice = sorted({n for n in names if names.count(n) > 1})
    spelled = findings()
    for name in twice:
        print(f"{TABLE.relative_to(ROOT)}: {name} is declared more than once")
    for line in spelled:
        print(f"{line}: a flag's name outside {TABLE.name}; ask the table for it")
    return 1 if twice or spelled else 0


if __name__ == "__main__":
    sys.exit(main())
