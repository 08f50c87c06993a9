"""Predicted GPU memory without a GPU: TensorFlow dumps a step's
pre-optimization HLO on CPU, and `hlo-remat --platform gpu` compiles it with
XLA's GPU pipeline for a named target (deviceless), running the pass where the
patch's GPU hook runs it."""

from __future__ import annotations

from pathlib import Path

from remat_harness.engine import NO_BUDGET, EngineRun, run_hlo_remat
from remat_harness.hlo_dump import DumpError, ModelSpec, produce_hlo

DEFAULT_TARGET = "h100_sxm"


def parse_device(device: str) -> tuple[str, str | None]:
    """ "cpu" -> ("cpu", None); "gpu:h100_sxm" (or "gpu") -> ("gpu", target)."""
    kind, _, target = device.partition(":")
    if kind == "cpu" and not target:
        return "cpu", None
    if kind == "gpu":
        return "gpu", target or DEFAULT_TARGET
    raise ValueError(f"device {device!r}: expected cpu or gpu:<target> (e.g. gpu:{DEFAULT_TARGET})")


def before_optimizations(spec: ModelSpec) -> Path:
    """The step's pre-optimization HLO (the largest module of the CPU dump)."""
    dump = produce_hlo(spec) / "dump"
    files = sorted(
        dump.glob("*.before_optimizations.txt"), key=lambda p: p.stat().st_size, reverse=True
    )
    if not files:
        raise DumpError(f"{spec.key}: no *.before_optimizations.txt in {dump}")
    return files[0]


def gpu_flags(target: str) -> list[str]:
    return ["--platform", "gpu", "--gpu-target", target]


def run_gpu(
    spec: ModelSpec, target: str, flags: list[str], report: Path, timeout_s: float = 900
) -> EngineRun:
    return run_hlo_remat(
        before_optimizations(spec), [*gpu_flags(target), *flags], report, timeout_s=timeout_s
    )


def predicted_peak(spec: ModelSpec, target: str, work_dir: Path) -> dict:
    """The GPU pipeline's own figures for the step, without our pass."""
    run = run_gpu(
        spec, target, [f"--xla_rematerialization_mem_limit={NO_BUDGET}"], work_dir / "gpu.json"
    )
    if run.returncode != 0 or run.report is None:
        raise RuntimeError(f"GPU compile of {spec.key} failed: {run.stderr.strip()[-500:]}")
    return run.report
