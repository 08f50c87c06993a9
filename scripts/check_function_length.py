"""Fails when a C++ function in the engine is longer than the limit.

The craft rule (issue 20): no function in patch_src/ or tools/hlo_remat/ runs
past 100 lines, so each reads as one step. Braces are matched on the source
with comments and string literals blanked; a function is a brace block whose
head ends in a parameter list (lambdas and blocks inside it count as its own
lines).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

LIMIT = 100
ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("patch_src", "tools/hlo_remat")
_CONTROL = re.compile(r"\b(if|for|while|switch|catch)\s*\(")
_HEAD_ENDS_IN_PARAMETERS = re.compile(
    r"\)\s*(const)?\s*(noexcept)?\s*(override)?\s*(->\s*[\w:<>,\s*&]+)?\s*$"
)


def _blank_comments_and_literals(source: str) -> str:
    source = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group()), source, flags=re.S)
    source = re.sub(r"//[^\n]*", "", source)
    # Strings and character literals in one pass ('"' and "'" both occur).
    return re.sub(r'"(\\.|[^"\\\n])*"|\'(\\.|[^\'\\\n])+\'', '""', source)


def long_functions(path: Path, limit: int = LIMIT) -> list[tuple[int, int]]:
    """(first line, length) of each function in `path` longer than `limit`."""
    source = _blank_comments_and_literals(path.read_text())
    found: list[tuple[int, int]] = []
    open_blocks: list[tuple[bool, int]] = []  # (is a function, first line)
    line = 1
    for index, char in enumerate(source):
        if char == "\n":
            line += 1
        elif char == "{":
            head = source[max(0, index - 400) : index]
            head = head[max(head.rfind(";"), head.rfind("}"), head.rfind("{")) + 1 :].strip()
            last_line = head.splitlines()[-1] if head else ""
            inside_function = any(is_function for is_function, _ in open_blocks)
            is_function = (
                not inside_function
                and bool(_HEAD_ENDS_IN_PARAMETERS.search(head))
                and not _CONTROL.search(last_line)
            )
            open_blocks.append((is_function, line))
        elif char == "}" and open_blocks:
            is_function, first = open_blocks.pop()
            if is_function and line - first + 1 > limit:
                found.append((first, line - first + 1))
    return found


def main() -> int:
    failures = []
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).glob("*.[ch]*")):
            for first, length in long_functions(path):
                failures.append(f"{path.relative_to(ROOT)}:{first}: function of {length} lines")
    for failure in failures:
        print(f"{failure} (limit {LIMIT}: split it into named steps)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
