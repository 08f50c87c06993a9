"""tests/baselines.json: the figures the memory tests hold the code to."""

from __future__ import annotations

import json
from pathlib import Path

BASELINES_FILE = Path(__file__).with_name("baselines.json")


def baselines() -> dict:
    return json.loads(BASELINES_FILE.read_text())


def check_at_most(measured: float, key: list[str], what: str) -> None:
    """Fails with the old and the new figure when `measured` is above the
    baseline stored under `key`."""
    node = baselines()
    for part in key:
        node = node[part]
    limit = float(node)
    assert measured <= limit, (
        f"regression in {what} ({'/'.join(key)}): measured {measured:.4f}, "
        f"baseline allows at most {limit:.4f} (tests/baselines.json)"
    )
