"""The engine declares HiGHS's C API of one version
(patch_src/highs_c_api_1_15_1.h) and links the libhighs.so.1 of the installed
highspy wheel: the two must agree, or `optimal` would call a library whose API
it does not know."""

import re
import subprocess
from importlib import metadata
from pathlib import Path

import highspy
import pytest

REPO = Path(__file__).resolve().parent.parent
HEADER = REPO / "patch_src" / "highs_c_api_1_15_1.h"


def test_the_installed_highspy_is_the_version_the_engine_declares():
    declared = re.search(r'kVersion\[\] = "([\d.]+)"', HEADER.read_text()).group(1)
    assert metadata.version("highspy") == declared
    assert highspy.Highs().version() == declared
    assert (Path(highspy.__file__).parent / "libhighs.so.1").is_file()


def test_the_engine_links_the_wheels_libhighs(engine: Path):
    # hlo-remat is the launcher; the engine it runs sits beside it.
    engine_bin = engine.parent / "hlo-remat-engine"
    ldd = subprocess.run(["ldd", str(engine_bin)], capture_output=True, text=True, check=True)
    line = next((x for x in ldd.stdout.splitlines() if "libhighs.so.1" in x), None)
    if line is None:
        pytest.fail(f"{engine_bin} does not link libhighs.so.1:\n{ldd.stdout}")
    assert str(Path(highspy.__file__).parent) in line
