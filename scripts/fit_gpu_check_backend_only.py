#!/usr/bin/env python3
"""Checks `remat-harness fit`'s answers with the pass and without it on a real
GPU by running TF 2.21's own compile of the step there.

TensorFlow 2.21's XLA compiles the step here, deviceless, exactly as `fit`
predicts it (`hlo-remat --baseline-out` for the step without the pass, `-o`
with it, as HloModuleProtos), and the GPU machine compiles that module
backend-only through the CUDA PJRT plugin (pjrt_backend_only.py) and runs it
under the allocator limit TensorFlow would have (fit_gpu_check.py's):

    python scripts/fit_gpu_check_backend_only.py prepare --model models.fit_examples:resnet50 \\
        --gpu h100_sxm --without 1443,1444 --with 3505,3506 --out gpu_check
    python scripts/fit_gpu_check_backend_only.py run gpu_check   # on the GPU machine

A plugin whose XLA is newer than TF 2.21's refuses TF 2.21's optimized
modules (JAX 0.11.2's: Triton fusions, `__cublas$gemm` custom calls;
docs/measured.md), so this needs a plugin built from TF 2.21's XLA.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from fit_gpu_check import device_total_bytes, run_loaded, start_jax


def prepare(
    model: str,
    policy: str,
    gpu: str,
    without: list[int],
    with_pass: list[int],
    cap: float,
    disabled_passes: str,
    out: Path,
) -> None:
    """TF 2.21's deviceless compile of the step, as `fit` predicts it: at
    `without`, the pipeline without the pass; at `with_pass`, with the pass
    at the card's budget (the plan without a cap where it meets the budget
    within `cap`, else the capped plan, as `fit` takes (b)). With
    `disabled_passes` (hlo-remat --gpu-disable-passes) in both: a newer XLA
    cannot emit TF 2.21's Triton fusions ("Nested fusions are not
    supported"), so the check compiles the step with its GEMMs on cuBLAS
    (triton-gemm-rewriter,triton-softmax-rewriter)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
    from remat_harness.engine import MEASURE_ONLY, run_hlo_remat
    from remat_harness.fit import DEFAULT_ALGORITHM, ModelSource, StepDumps, card_for, pass_flags
    from remat_harness.gpu import gpu_flags

    card = card_for(gpu)
    gpu_args = [
        *gpu_flags(gpu),
        *(["--gpu-disable-passes", disabled_passes] if disabled_passes else []),
    ]
    dumps = StepDumps(ModelSource(model, policy))
    out.mkdir(parents=True, exist_ok=True)
    steps = []
    try:
        for batch in without:
            module = out / f"without_b{batch}.pb"
            flags = [*gpu_args, *MEASURE_ONLY.args(), "--baseline-out", str(module)]
            run = run_hlo_remat(
                dumps.hlo(batch), flags, out / f"{module.stem}.json", timeout_s=1800
            )
            if run.report is None:
                raise RuntimeError(f"hlo-remat at batch {batch}: {run.stderr[-400:]}")
            steps.append(
                {
                    "step": module.name,
                    "batch": batch,
                    "answer": "without",
                    "predicted": run.report.buffer_assignment_before_bytes,
                    "extra_flops": 0.0,
                }
            )
            print(json.dumps(steps[-1]), flush=True)
        for batch in with_pass:
            module = out / f"with_b{batch}.pb"
            for limit in (None, cap):
                flags = [*gpu_args, *pass_flags(card, DEFAULT_ALGORITHM, limit).args()]
                run = run_hlo_remat(
                    dumps.hlo(batch),
                    flags,
                    out / f"{module.stem}.json",
                    output=module,
                    timeout_s=1800,
                )
                report = run.report
                if report is None:
                    raise RuntimeError(f"hlo-remat at batch {batch}: {run.stderr[-400:]}")
                if report.budget_met and report.extra_flops_fraction <= cap:
                    break
            steps.append(
                {
                    "step": module.name,
                    "batch": batch,
                    "answer": "with the pass",
                    "cap": limit,
                    "predicted": report.allocated("after"),
                    "extra_flops": report.extra_flops_fraction,
                    "budget_met": report.budget_met,
                }
            )
            print(json.dumps(steps[-1]), flush=True)
    finally:
        dumps.close()
    manifest = {
        "model": model,
        "policy": policy,
        "gpu": gpu,
        "disabled_passes": disabled_passes,
        "budget": card.budget_bytes,
        "limit": card.budget_bytes + card.margin_bytes,
        "steps": steps,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


def _cuda_plugin() -> str:
    """The CUDA PJRT plugin JAX loads, its NVIDIA libraries loaded first."""
    import importlib

    for name in ("jax_plugins.xla_cuda13", "jax_plugins.xla_cuda12"):
        try:
            plugin = importlib.import_module(name)
        except ImportError:
            continue
        plugin._load_nvidia_libraries()
        return str(plugin._get_library_path())
    raise RuntimeError("no CUDA PJRT plugin (jax_plugins.xla_cuda13/12) installed")


def compile_one(module: Path, executable: Path) -> None:
    """Compiles one module backend-only and writes its executable; says so on
    stdout before the plugin is unloaded (its teardown is not this check's)."""
    import faulthandler

    from jax._src.lib import xla_client as xc
    from pjrt_backend_only import Plugin, backend_only

    faulthandler.enable()  # a crash in the plugin shows where
    plugin = Plugin(_cuda_plugin(), {"platform_name": "cuda", "preallocate": False})
    options = backend_only(xc.CompileOptions().SerializeAsString())
    data = plugin.compile_serialized(module.read_bytes(), options)
    executable.write_bytes(data)
    print(json.dumps({"executable_bytes": len(data)}), flush=True)
    plugin.close()
    sys.stdout.flush()
    os._exit(0)


def run_one(executable: Path, limit: int, total: int) -> dict:
    jax = start_jax(limit, total)
    from jax._src.lib import xla_client as xc

    device = jax.devices()[0]
    record: dict = {}
    try:
        exe = device.client.deserialize_executable(
            executable.read_bytes(), xc.DeviceList((device,)), None
        )
    except TypeError:
        exe = device.client.deserialize_executable(executable.read_bytes(), [device], None)
    run_loaded(exe, device, record)
    return record


def _child(args: list[str], timeout_s: int) -> tuple[int, dict | None, str]:
    """Runs this script's subcommand in a fresh process: its exit code, the
    last JSON line it printed (None if none) and the end of its stderr."""
    try:
        done = subprocess.run(
            [sys.executable, __file__, *args], capture_output=True, text=True, timeout=timeout_s
        )
    except subprocess.TimeoutExpired:
        return 124, None, f"timed out after {timeout_s} s"
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    return done.returncode, json.loads(lines[-1]) if lines else None, done.stderr[-1500:]


def _executable(folder: Path, step: dict) -> str:
    """Where compile-one writes the step's executable and run-one reads it."""
    return f"{folder / step['step']}.exe"


def run(folder: Path, workers: int, results: Path) -> None:
    """Compiles every step of the manifest backend-only (several at once,
    each in a process of its own), then runs each in a fresh process under
    the allocator limit TensorFlow would have."""
    manifest = json.loads((folder / "manifest.json").read_text())
    limit, total = manifest["limit"], device_total_bytes()
    steps = manifest["steps"]

    def build(step: dict) -> tuple[int, dict | None, str, float]:
        start = time.monotonic()
        done = _child(["compile-one", str(folder / step["step"]), _executable(folder, step)], 900)
        return (*done, time.monotonic() - start)

    with ThreadPoolExecutor(workers) as pool:
        built = list(pool.map(build, steps))
    with results.open("a") as sink:
        for step, (code, said, errors, seconds) in zip(steps, built, strict=True):
            record = {
                **step,
                "limit": limit,
                "device_total": total,
                "compile_s": round(seconds, 1),
                "compile_exit": code,
            }
            if said is None:
                record["compile_error"] = " ".join(errors.split())[-800:]
            else:
                code, said, errors = _child(
                    [
                        "run-one",
                        _executable(folder, step),
                        "--limit",
                        str(limit),
                        "--total",
                        str(total),
                    ],
                    600,
                )
                record.update(
                    said or {"run_exit": code, "run_error": " ".join(errors.split())[-800:]}
                )
            sink.write(json.dumps(record) + "\n")
            sink.flush()
            print(json.dumps(record), flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    pre = sub.add_parser("prepare", help="here: TF 2.21's compile of the step, as protos")
    pre.add_argument("--model", required=True)
    pre.add_argument("--policy", default="float32")
    pre.add_argument("--gpu", default="h100_sxm")
    pre.add_argument("--without", default="", help="batches to compile without the pass")
    pre.add_argument("--with", dest="with_pass", default="", help="batches with the pass")
    pre.add_argument("--max-extra-flops", type=float, default=0.10)
    pre.add_argument(
        "--gpu-disable-passes",
        default="triton-gemm-rewriter,triton-softmax-rewriter",
        help="XLA passes off in TF's compile (default: Triton's, which a newer XLA cannot emit)",
    )
    pre.add_argument("--out", type=Path, required=True)
    go = sub.add_parser("run", help="on the GPU machine: compile backend-only and run")
    go.add_argument("folder", type=Path)
    go.add_argument("--workers", type=int, default=4)
    go.add_argument("--results", type=Path, default=None)
    one = sub.add_parser("compile-one")
    one.add_argument("module", type=Path)
    one.add_argument("executable", type=Path)
    ran = sub.add_parser("run-one")
    ran.add_argument("executable", type=Path)
    ran.add_argument("--limit", type=int, required=True)
    ran.add_argument("--total", type=int, required=True)
    args = p.parse_args()
    batches = lambda text: [int(b) for b in text.split(",") if b]  # noqa: E731
    if args.command == "prepare":
        prepare(
            args.model,
            args.policy,
            args.gpu,
            batches(args.without),
            batches(args.with_pass),
            args.max_extra_flops,
            args.gpu_disable_passes,
            args.out,
        )
    elif args.command == "run":
        run(args.folder, args.workers, args.results or args.folder / "results.jsonl")
    elif args.command == "compile-one":
        compile_one(args.module, args.executable)
    else:
        print(json.dumps(run_one(args.executable, args.limit, args.total)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
