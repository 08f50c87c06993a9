"""The engine's functions stay short (issue 20): scripts/check_function_length.py,
which `make lint` runs, finds a long one and is not fooled by braces in
literals."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from remat_harness.paths import REPO_ROOT


def _checker():
    spec = importlib.util.spec_from_file_location(
        "check_function_length", REPO_ROOT / "scripts" / "check_function_length.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_long_function_is_found_and_literals_do_not_count(tmp_path: Path):
    body = "\n".join(f"  x += {i};" for i in range(120))
    source = (
        "namespace a {\n"
        "int Short(int x) {\n  char open = '{';\n  return x;\n}\n"
        'const char* kText = "}}} {";\n'
        f"int Long(int x)\n    const {{\n{body}\n  auto f = [&](int y) {{ return y; }};\n"
        "  return f(x);\n}\n"
        "}  // namespace a\n"
    )
    path = tmp_path / "long.cc"
    path.write_text(source)
    found = _checker().long_functions(path, limit=100)
    assert len(found) == 1
    first, length = found[0]
    assert source.splitlines()[first - 1].startswith("    const {")
    assert length == 124


def test_the_engine_has_no_function_over_the_limit():
    checker = _checker()
    for folder in checker.FOLDERS:
        for path in sorted((REPO_ROOT / folder).glob("*.[ch]*")):
            assert checker.long_functions(path) == [], path
