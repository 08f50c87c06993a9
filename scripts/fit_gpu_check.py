#!/usr/bin/env python3
"""Checks `remat-harness fit`'s answers without the pass on a real GPU.

Two halves, because the GPU machine has JAX and no TensorFlow:

    # here: the step at the batches to check, as HloModuleProtos
    python scripts/fit_gpu_check.py prepare --model models.fit_examples:resnet50 \\
        --batches 707,708 --out gpu_check
    # on the GPU machine (JAX's XLA compiles the same pre-optimization HLO)
    python scripts/fit_gpu_check.py run --limit BYTES gpu_check/*.pb

`run` gives JAX's allocator the memory TensorFlow's would have (--limit: the
card's memory less TF's reserve, fit.json's budget_bytes plus its margin),
compiles each step, reads its buffer assignment, and runs it once on zeros:
one JSON line per step, saying whether it ran or ran out of memory. The pass
is not in JAX's XLA, so this checks the answers without it only
(fit_gpu_check_backend_only.py runs TF 2.21's own compile, pass included).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path


def prepare(model: str, policy: str, batches: list[int], out: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
    import keras

    from remat_harness.fit_dump import StepTracer, default_signature, load_model

    keras.mixed_precision.set_global_policy(policy)
    built, signature = load_model(model)
    tracer = StepTracer(built, signature or default_signature(built, None))
    out.mkdir(parents=True, exist_ok=True)
    for batch in batches:
        proto = _without_copies(bytes(tracer.hlo(batch, "hlo_serialized")))
        (out / f"b{batch}.pb").write_bytes(proto)
        print(out / f"b{batch}.pb")


def _without_copies(serialized: bytes) -> bytes:
    """The module with each `copy` a same-shape `reshape`: JAX's StableHLO
    import refuses `copy`, and both are the identity on TF's default layouts
    (XLA's own copy insertion adds the copies the aliasing needs)."""
    from tensorflow.compiler.xla.service import hlo_pb2

    module = hlo_pb2.HloModuleProto.FromString(serialized)
    for computation in module.computations:
        for instruction in computation.instructions:
            if instruction.opcode == "copy":
                instruction.opcode = "reshape"
    return module.SerializeToString()


def _parameters(text: str) -> list[tuple[str, tuple[int, ...]]]:
    head = text.split("\n", 1)[0]
    start = head.index("entry_computation_layout={(") + len("entry_computation_layout={(")
    layout = head[start : head.index(")->", start)]
    return [
        (dtype, tuple(int(d) for d in dims.split(",") if d))
        for dtype, dims in re.findall(r"(\w+)\[([\d,]*)\]", layout)
    ]


def device_total_bytes() -> int:
    """The GPU's memory as CUDA reports it (what the allocator's memory
    fraction is a share of), without starting JAX's client."""
    probe = "import torch; print(torch.cuda.mem_get_info()[1])"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    if done.returncode == 0:
        return int(done.stdout.split()[-1])
    smi = subprocess.run(
        ["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(smi.stdout.split()[0]) << 20


def start_jax(limit: int, total: int):  # noqa: ANN201 - jax is not installed here
    """JAX with its allocator holding `limit` bytes, as TensorFlow's would."""
    os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "true"
    os.environ["XLA_PYTHON_CLIENT_MEM_FRACTION"] = f"{limit / total:.6f}"
    import jax

    jax.config.update("jax_enable_x64", True)  # TF's steps take s64 counters
    return jax


def run_loaded(exe, device, record: dict) -> None:  # noqa: ANN001 - jax objects
    """Reads the executable's buffer assignment and runs it once on zeros."""
    import jax.numpy as jnp

    stats = exe.get_compiled_memory_stats()
    record["allocation"] = (
        stats.temp_size_in_bytes
        + stats.argument_size_in_bytes
        + stats.output_size_in_bytes
        - stats.alias_size_in_bytes
    )
    dtypes = {
        "f32": jnp.float32,
        "bf16": jnp.bfloat16,
        "s32": jnp.int32,
        "pred": jnp.bool_,
        "f16": jnp.float16,
        "s64": jnp.int64,
        "u32": jnp.uint32,
        "u8": jnp.uint8,
    }
    try:
        args = [
            jnp.zeros(shape, dtypes[d])
            for d, shape in _parameters(exe.hlo_modules()[0].to_string())
        ]
        for out in exe.execute(args):
            out.block_until_ready()
        record["ran"] = True
    except Exception as e:  # noqa: BLE001 - out of memory is the answer
        record["ran"] = False
        record["error"] = " ".join(str(e).split())[:600]
    record["peak_bytes_in_use"] = device.memory_stats()["peak_bytes_in_use"]


def run(limit: int, protos: list[Path]) -> None:
    jax = start_jax(limit, device_total_bytes())
    from jax._src.lib import xla_client as xc

    device = jax.devices()[0]
    for path in protos:
        record: dict = {"step": path.name, "limit": limit}
        start = time.monotonic()
        mlir = xc._xla.mlir.hlo_to_stablehlo(path.read_bytes())
        exe = device.client.compile_and_load(mlir, xc.DeviceList((device,)), xc.CompileOptions())
        record["compile_s"] = round(time.monotonic() - start, 1)
        run_loaded(exe, device, record)
        print(json.dumps(record), flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    pre = sub.add_parser("prepare")
    pre.add_argument("--model", required=True)
    pre.add_argument("--policy", default="float32")
    pre.add_argument("--batches", required=True)
    pre.add_argument("--out", type=Path, required=True)
    go = sub.add_parser("run")
    go.add_argument("--limit", type=int, required=True)
    go.add_argument("protos", type=Path, nargs="+")
    args = p.parse_args()
    if args.command == "prepare":
        prepare(args.model, args.policy, [int(b) for b in args.batches.split(",") if b], args.out)
    else:
        run(args.limit, args.protos)
    return 0


if __name__ == "__main__":
    sys.exit(main())
