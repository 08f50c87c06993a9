"""The engine's functions stay short (issue 20): scripts/check_function_length.py,
which `make lint` runs, finds a long one and is not fooled by braces in
literals."""

from __future__ import annotations

import re
from pathlib import Path

from remat_harness.paths import REPO_ROOT
from tests.script_modules import load_script


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
    found = load_script("check_function_length").long_functions(path, limit=100)
    assert len(found) == 1
    first, length = found[0]
    assert source.splitlines()[first - 1].startswith("    const {")
    assert length == 124


def test_the_engine_has_no_function_over_the_limit():
    checker = load_script("check_function_length")
    for folder in checker.FOLDERS:
        for path in sorted((REPO_ROOT / folder).glob("*.[ch]*")):
            assert checker.long_functions(path) == [], path


def test_engine_tests_match_instructions_with_gmock_match():
    """A failed `EXPECT_TRUE(Match(...))` prints "false"; `EXPECT_THAT(x,
    GmockMatch(...))` prints the pattern and why the instruction missed it."""
    bare = re.compile(r"(?:EXPECT|ASSERT)_(?:TRUE|FALSE)\(\s*Match\(")
    for path in sorted((REPO_ROOT / "patch_src").glob("*_test*")):
        assert not bare.search(path.read_text()), path
