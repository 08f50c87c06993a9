"""Predicted GPU memory without a GPU: TensorFlow dumps a step's
pre-optimization HLO on CPU, and `hlo-remat --platform gpu` compiles it with
XLA's GPU pipeline for a named target (deviceless), running the pass where the
patch's GPU hook runs it."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

from remat_harness.engine import MEASURE_ONLY, EngineRun, run_hlo_remat
from remat_harness.hlo_dump import DumpError, ModelSpec, produce_hlo
from remat_harness.paths import ToolMissing, hlo_remat_binary
from remat_harness.remat_report import RematReport

DEFAULT_TARGET = "h100_sxm"
# predicted_peak's report, in the folder it is given.
PREDICTED_REPORT = "gpu.json"


@functools.cache
def gpu_targets() -> tuple[str, ...]:
    """The GPU names the engine can compile for (`hlo-remat --list-gpu-targets`)."""
    binary = hlo_remat_binary()
    proc = subprocess.run(
        [str(binary), "--list-gpu-targets"], capture_output=True, text=True, timeout=300
    )
    if proc.returncode != 0:
        raise ToolMissing(f"{binary} --list-gpu-targets failed (rc {proc.returncode})")
    return tuple(proc.stdout.split())


def check_gpu_target(target: str) -> str:
    """`target` if the engine knows it; ValueError naming the valid ones."""
    valid = gpu_targets()
    if target not in valid:
        raise ValueError(f"GPU target {target!r} is not valid; valid: {', '.join(valid)}")
    return target


def parse_device(device: str) -> tuple[str, str | None]:
    """ "cpu" -> ("cpu", None); "gpu:h100_sxm" (or "gpu") -> ("gpu", target).
    The target is checked against the engine's list before any work is done."""
    kind, _, target = device.partition(":")
    if kind == "cpu" and not target:
        return "cpu", None
    if kind == "gpu":
        return "gpu", check_gpu_target(target or DEFAULT_TARGET)
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


def check_autotune_results(path: str, device_kind: str) -> str:
    """`path` if it is empty, or names a file and `device_kind` is "gpu";
    ValueError saying what the option wants."""
    if path and device_kind != "gpu":
        raise ValueError("--gpu-autotune-results needs --device gpu:<target>")
    if path and not Path(path).is_file():
        raise ValueError(
            f"--gpu-autotune-results {path}: no such file (XLA autotune results recorded on "
            "your GPU with --xla_gpu_dump_autotune_results_to)"
        )
    return path


def gpu_flags(target: str, autotune_results: str = "") -> list[str]:
    """The engine's GPU flags; with `autotune_results`, the compile picks the
    kernels recorded on the user's GPU instead of XLA's defaults."""
    flags = ["--platform", "gpu", "--gpu-target", target]
    return [*flags, f"--gpu-autotune-results={autotune_results}"] if autotune_results else flags


def run_gpu(
    spec: ModelSpec,
    target: str,
    flags: list[str],
    report: Path,
    timeout_s: float = 900,
    autotune_results: str = "",
) -> EngineRun:
    return run_hlo_remat(
        before_optimizations(spec),
        [*gpu_flags(target, autotune_results), *flags],
        report,
        timeout_s=timeout_s,
    )


def predicted_peak(
    spec: ModelSpec, target: str, work_dir: Path, autotune_results: str = ""
) -> RematReport:
    """The GPU pipeline's own figures for the step, without our pass."""
    run = run_gpu(
        spec,
        target,
        MEASURE_ONLY.args(),
        work_dir / PREDICTED_REPORT,
        autotune_results=autotune_results,
    )
    if run.returncode != 0 or run.report is None:
        raise RuntimeError(f"GPU compile of {spec.key} failed: {run.stderr.strip()[-500:]}")
    return run.report
