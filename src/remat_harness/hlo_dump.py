"""Produces the scheduled HLO of a model's training step with TensorFlow on CPU.

The model runs in its own subprocess with `XLA_FLAGS=--xla_dump_to=...`; the
step's modules are the `*.cpu_after_optimizations.txt` files XLA writes.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from remat_harness.catalogue import APPLICATIONS, SEQUENCE_MODELS, base_name
from remat_harness.paths import CACHE_DIR, models_dir

MODES = ("jit", "autojit")
# The models of models/zoo.py (named here: importing it imports TensorFlow).
ZOO_NAMES = (
    "decoder",
    "densenet121",
    "encdec",
    "gru",
    "lstm",
    "mobilenet",
    "mobilenetv2",
    "resnet50",
    "transformer",
    "vgg16",
    "wide_mlp",
)


@dataclass(frozen=True)
class ModelSpec:
    resnet_size: int = 20
    resnet_version: int = 1
    batch_size: int = 64
    mode: str = "jit"
    # "resnet", or a model of models/zoo.py (resnet_size/version then unused).
    model: str = "resnet"

    @property
    def key(self) -> str:
        if self.model != "resnet":
            return f"{self.model}_b{self.batch_size}_{self.mode}"
        return f"resnet{self.resnet_size}_v{self.resnet_version}_b{self.batch_size}_{self.mode}"

    @classmethod
    def parse(
        cls, name: str, batch_size: int = 64, mode: str = "jit", version: int = 1
    ) -> ModelSpec:
        """ "20" or "resnet56" (ResNet of that depth, `version` unless named),
        "resnet56v2", or a zoo model's name ("lstm"). A zoo name comes first:
        "resnet50" is Keras's ImageNet ResNet-50; "50" the CIFAR ResNet-50."""
        if (
            name in ZOO_NAMES
            or base_name(name)[0] in (*APPLICATIONS, *SEQUENCE_MODELS)
            or re.fullmatch(r"random\d+", name)
        ):
            return cls(batch_size=batch_size, mode=mode, model=name)
        match = re.fullmatch(r"(?:resnet)?(\d+)(?:v([12]))?", name)
        if match:
            named = match.group(2)
            return cls(int(match.group(1)), int(named) if named else version, batch_size, mode)
        raise ValueError(
            f"model {name!r}: a ResNet depth (20, resnet56, resnet56v2), one of "
            f"{', '.join(ZOO_NAMES)}, a catalogue model (app_xception, ...; _bf16 for "
            "mixed bfloat16: remat_harness/catalogue.py), or random<N> (models/random_step.py)"
        )


class DumpError(RuntimeError):
    """The model run failed or produced no HLO."""


def model_environment(
    mode: str, dump_dir: Path, extra_xla_flags: str = "", device: str = "cpu"
) -> dict[str, str]:
    """The model subprocess's environment: HLO dumps, the mode's TF_XLA_FLAGS,
    and on CPU the GPUs hidden (unless the caller set CUDA_VISIBLE_DEVICES)."""
    if mode not in MODES:
        raise ValueError(f"mode={mode!r}; valid modes: {', '.join(MODES)}")
    env = dict(os.environ)
    env["XLA_FLAGS"] = f"--xla_dump_to={dump_dir} --xla_dump_hlo_as_text {extra_xla_flags}".strip()
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    if device == "gpu":
        env.pop("CUDA_VISIBLE_DEVICES", None)
    else:
        env["CUDA_VISIBLE_DEVICES"] = env.get("CUDA_VISIBLE_DEVICES", "")
    if mode == "autojit":
        # Global jit for CPU clusters only matters when the step runs on CPU.
        cpu_jit = " --tf_xla_cpu_global_jit" if device == "cpu" else ""
        env["TF_XLA_FLAGS"] = "--tf_xla_auto_jit=2" + cpu_jit
    else:
        env.pop("TF_XLA_FLAGS", None)
    return env


def run_model(
    spec: ModelSpec,
    dump_dir: Path,
    train_steps: int = 2,
    timeout_s: float = 900,
    extra_xla_flags: str = "",
    device: str = "cpu",
) -> dict:
    """Runs the model once, dumping HLO into `dump_dir`; returns its RESULT.
    `extra_xla_flags` go into XLA_FLAGS (the remat flags on a patched build);
    device "gpu" leaves the GPUs visible."""
    dump_dir.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        str(models_dir() / "resnet_cifar_main.py"),
        f"--model={spec.model}",
        f"--resnet_size={spec.resnet_size}",
        f"--resnet_version={spec.resnet_version}",
        f"--batch_size={spec.batch_size}",
        f"--train_steps={train_steps}",
        "--warmup_steps=1",
        "--use_synthetic_data",
    ]
    if spec.mode == "jit":
        cmd.append("--enable_xla")
    env = model_environment(spec.mode, dump_dir, extra_xla_flags, device)
    proc = subprocess.run(
        cmd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
        raise DumpError(f"{spec.key}: model exited {proc.returncode}: {tail}")
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    raise DumpError(f"{spec.key}: model printed no RESULT line")


def step_modules(dump_dir: Path) -> list[Path]:
    """The optimized, scheduled modules of a dump, largest first."""
    files = list(dump_dir.glob("*.cpu_after_optimizations.txt"))
    return sorted(files, key=lambda p: p.stat().st_size, reverse=True)


def produce_hlo(spec: ModelSpec, cache_dir: Path = CACHE_DIR, force: bool = False) -> Path:
    """Returns the folder holding `step.hlo` (the largest module) and `dump/`.
    One process dumps a model at a time: others (pytest -n, a Dask sweep)
    wait for it and take its dump."""
    out = cache_dir / "hlo" / spec.key
    step = out / "step.hlo"
    if step.exists() and not force:
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with (out.parent / f"{spec.key}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if step.exists() and not force:
            return out
        return _dump_step(spec, out)


def _dump_step(spec: ModelSpec, out: Path) -> Path:
    step = out / "step.hlo"
    if out.exists():
        shutil.rmtree(out)
    dump = out / "dump"
    result = run_model(spec, dump)
    modules = step_modules(dump)
    if not modules:
        raise DumpError(f"{spec.key}: no *.cpu_after_optimizations.txt in {dump}")
    # Keep the HLO text and memory reports, not the object files and IR.
    for f in dump.iterdir():
        if not (f.name.endswith(".txt")):
            f.unlink()
    (out / "run.json").write_text(json.dumps(result, indent=2))
    # Last: a step.hlo says the dump is whole.
    shutil.copyfile(modules[0], step)
    return out
