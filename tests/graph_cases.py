"""Small planner graphs solved by hand, for the MILP optimum and its lower
bound (test_optimum.py, test_optimum_bound.py), and the engine's plan for
CHAIN with the graph it exported."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from remat_harness.optimum import GRAPH_FORMAT, Graph, graph_from_dict, load_graph
from tests import hlo_cases


def graph(nodes: list[tuple], positions: int | None = None) -> Graph:
    """nodes: (name, bytes, flops, recomputable, reads, live_to_end), one
    per stage in order; a buffer is alive to its last reader."""
    last = {i: i for i in range(len(nodes))}
    for index, (_, _, _, _, reads, _) in enumerate(nodes):
        for r in reads:
            last[r] = max(last[r], index)
    n = positions or len(nodes)
    return graph_from_dict(
        {
            "format": GRAPH_FORMAT,
            "positions": n,
            "module_flops": 100.0,
            "nodes": [
                {
                    "name": name,
                    "opcode": "custom",
                    "position": index,
                    "flops": flops,
                    "recomputable": recomputable,
                    "buffers": [[size, index, n - 1 if live else last[index], live]],
                    "reads": list(reads),
                }
                for index, (name, size, flops, recomputable, reads, live) in enumerate(nodes)
            ],
        }
    )


# a(100) -> b -> c -> d -> e(out), and e reads a again: a is the only value
# whose drop lowers the peak (300 at c and d), recomputed at e for 5 FLOPs.
CHAIN = graph(
    [
        ("a", 100, 5.0, True, (), False),
        ("b", 100, 7.0, True, (0,), False),
        ("c", 100, 7.0, True, (1,), False),
        ("d", 100, 7.0, True, (2,), False),
        ("e", 10, 7.0, True, (3, 0), True),
    ]
)

# x (a parameter, 10) -> a (200) -> b, c (100 each) -> d -> e (300) -> g ->
# f (out) reads g and b. Dropping b over e's stage needs a at f's stage;
# keeping a there costs as much as b: both are recomputed (a chain of two).
DIAMOND = graph(
    [
        ("x", 10, 0.0, False, (), True),
        ("a", 200, 3.0, True, (0,), False),
        ("b", 100, 5.0, True, (1,), False),
        ("c", 100, 1.0, True, (1,), False),
        ("d", 100, 1.0, True, (2, 3), False),
        ("e", 300, 1.0, True, (4,), False),
        ("g", 10, 1.0, True, (5,), False),
        ("f", 10, 1.0, True, (6, 2), True),
    ]
)

# A U-net: x -> e1 (100) -> e2 (50) -> e3 (25) -> d3 (50) -> d2 (100, reads
# e2) -> d1 (out, reads e1). The long skip e1 is what to recompute.
UNET = graph(
    [
        ("x", 10, 0.0, False, (), True),
        ("e1", 100, 4.0, True, (0,), False),
        ("e2", 50, 2.0, True, (1,), False),
        ("e3", 25, 1.0, True, (2,), False),
        ("d3", 50, 1.0, True, (3,), False),
        ("d2", 100, 1.0, True, (4, 2), False),
        ("d1", 10, 1.0, True, (5, 1), True),
    ]
)


def exported_chain_plan(run_engine: Callable, folder: Path) -> tuple[dict, Graph]:
    """`path` on hlo_cases.CHAIN at four values' bytes: its report and the
    graph it exported."""
    path = folder / "g.json"
    result = run_engine(
        hlo_cases.CHAIN,
        f"--export-graph={path}",
        f"--xla_rematerialization_mem_limit={4 * hlo_cases.VALUE_BYTES}",
        "--xla_rematerialization_algorithm=path",
    )
    assert result.returncode == 0, result.stderr
    return result.report, load_graph(path)
