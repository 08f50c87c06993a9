"""compress, standardcompress, path and the small-node limit on modules whose
right answer is known by hand."""

from __future__ import annotations

import pytest

from remat_harness.flag_table import algorithms
from tests import hlo_cases


def algorithm(name: str) -> str:
    return f"--xla_rematerialization_algorithm={name}"


def test_compress_keeps_the_value_in_the_smaller_layout(run_engine):
    r = run_engine(
        hlo_cases.COMPRESSIBLE,
        algorithm("compress"),
        "--xla_rematerialization_mem_limit=1",
        "--size-function",
        "tiled",
        numerics=True,
    )
    assert r.returncode == 0, r.stderr
    rep = r.report
    assert rep["compressed"] == 1 and rep["recomputed"] == 0, rep
    (decision,) = rep["decisions"]
    assert decision["action"] == "compress" and decision["value"] == "a"
    # 512x16 f32 tiled 8x128: 256 KiB; swapped: 32 KiB.
    assert decision["bytes_saved"] == 256 * 1024 - 32 * 1024
    assert rep["heap_sim_after_bytes"] < rep["heap_sim_before_bytes"]
    assert rep["numerics"] == "equal", rep["note"]
    # Two copies: into {0,1} after the last early use, back before `r`.
    assert "f32[512,16]{0,1} copy(" in r.output_hlo
    assert rep["flops_after"] > rep["flops_before"]


def test_compress_without_a_smaller_form_changes_nothing(run_engine):
    r = run_engine(
        hlo_cases.COMPRESSIBLE, algorithm("compress"), "--xla_rematerialization_mem_limit=1"
    )
    rep = r.report
    assert r.returncode == 0, r.stderr
    assert "no value has a smaller compact form" in rep["note"]
    assert rep["instructions_added"] == 0 and rep["compressed"] == 0
    assert rep["heap_sim_after_bytes"] == rep["heap_sim_before_bytes"]


def test_standardcompress_weighs_both_moves(run_engine):
    r = run_engine(
        hlo_cases.COMPRESSIBLE,
        algorithm("standardcompress"),
        "--xla_rematerialization_mem_limit=1",
        "--size-function",
        "tiled",
        numerics=True,
    )
    rep = r.report
    assert rep["recomputed"] + rep["compressed"] >= 1, rep
    assert rep["numerics"] == "equal", rep["note"]
    assert rep["heap_sim_after_bytes"] < rep["heap_sim_before_bytes"]


def test_path_recomputes_the_whole_chain(run_engine):
    standard = run_engine(
        hlo_cases.PATH_CHAIN, algorithm("standard"), "--xla_rematerialization_mem_limit=1"
    )
    r = run_engine(
        hlo_cases.PATH_CHAIN,
        algorithm("path"),
        "--xla_rematerialization_mem_limit=1",
        numerics=True,
    )
    rep = r.report
    assert r.returncode == 0, r.stderr
    chains = [d for d in rep["decisions"] if d["action"] == "recompute" and d["value"] == "c"]
    assert chains, rep["decisions"]
    assert sorted(n.split(".remat")[0] for n in chains[0]["instructions"]) == ["a", "b", "c"]
    assert rep["heap_sim_after_bytes"] < standard.report["heap_sim_after_bytes"]
    assert rep["numerics"] == "equal", rep["note"]


def test_path_undoes_chains_it_does_not_need(run_engine):
    # A budget just under the peak needs one chain at most; whatever else the
    # sweep did must be undone or never have been done.
    before = run_engine(hlo_cases.PATH_CHAIN, "--xla_rematerialization_mem_limit=1G").report
    budget = before["heap_sim_before_bytes"] - 1
    rep = run_engine(
        hlo_cases.PATH_CHAIN, algorithm("path"), f"--xla_rematerialization_mem_limit={budget}"
    ).report
    assert rep["budget_met"], rep
    kept = rep["recomputed"]
    assert kept <= 3, rep["decisions"]


# For each algorithm, a module where it moves a value of at most 256 KiB.
ACTS_ON = {
    "standard": hlo_cases.SMALL_NODE,
    "standardcompress": hlo_cases.SMALL_NODE,
    "xla": hlo_cases.SMALL_NODE,
    "path": hlo_cases.PATH_CHAIN,
    "optimal": hlo_cases.PATH_CHAIN,
    "compress": hlo_cases.COMPRESSIBLE,
}


@pytest.mark.parametrize("name", algorithms())
def test_small_node_limit_holds_for_every_algorithm(run_engine, name):
    flags = [algorithm(name), "--xla_rematerialization_mem_limit=1", "--size-function", "tiled"]
    without = run_engine(ACTS_ON[name], *flags).report
    assert without["instructions_added"] >= 1, without
    # Every value in these modules is 256 KiB or less: under a 1 MiB limit
    # nothing may move.
    limited = run_engine(ACTS_ON[name], *flags, "--xla_rematerialization_small_node_limit=1")
    assert limited.returncode == 0, limited.stderr
    rep = limited.report
    assert rep["recomputed"] == 0 and rep["compressed"] == 0 and rep["instructions_added"] == 0, rep


@pytest.mark.parametrize("name", algorithms())
def test_path_is_never_above_doing_nothing(run_engine, name):
    for case in (hlo_cases.CHAIN, hlo_cases.PATH_CHAIN, hlo_cases.RESIDUAL, hlo_cases.DIAMOND):
        rep = run_engine(case, algorithm(name), "--xla_rematerialization_mem_limit=1").report
        if name in ("path", "optimal"):
            assert rep["heap_sim_after_bytes"] <= rep["heap_sim_before_bytes"], rep
        assert rep["algorithm"] == name


def test_size_function_is_checked(run_engine):
    r = run_engine(hlo_cases.CHAIN, "--size-function", "tiles:8")
    assert r.returncode == 2
    assert "--size-function=tiles:8" in r.stderr and "plain" in r.stderr
