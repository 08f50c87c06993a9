"""Trains a CIFAR ResNet for a few steps: the entry point users know.

Runs unchanged under `TF_XLA_FLAGS=--tf_xla_auto_jit=2` and any `XLA_FLAGS`.
With `--enable_xla` the whole training step is one XLA module
(`tf.function(jit_compile=True)`). Prints one JSON line of results at the end
(`RESULT {...}`) that the harness reads.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.cifar_data import DataError, load_cifar10, synthetic_batch  # noqa: E402


class _Parser(argparse.ArgumentParser):
    """A bad argument is one line and exit 2 (the usage block is --help's).
    Options keep the official models' underscore names (`--resnet_size`);
    the harness's kebab-case spelling (`--resnet-size`) is accepted too."""

    def parse_known_args(  # type: ignore[override]
        self, args: list[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        argv = sys.argv[1:] if args is None else list(args)
        spelled = []
        for token in argv:
            if token.startswith("--") and len(token) > 2:
                name, sep, value = token.partition("=")
                token = "--" + name[2:].replace("-", "_") + sep + value
            spelled.append(token)
        return super().parse_known_args(spelled, namespace)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (--help lists the options)\n")


def _resnet_depth(text: str) -> int:
    """CIFAR ResNets are 6n+2 layers deep (20, 32, 44, 56, 110...)."""
    try:
        depth = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if depth < 8 or (depth - 2) % 6:
        raise argparse.ArgumentTypeError(f"{depth} is not 6n+2 (n >= 1); e.g. 20, 32, 44, 56, 110")
    return depth


def _at_least(low: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{value} is below {low}")
        return value

    return parse


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = _Parser(description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument(
        "--model",
        default="resnet",
        help="resnet (with --resnet_size/--resnet_version), or one of models/zoo.py: "
        "mobilenet, transformer, lstm, wide_mlp (synthetic data)",
    )
    p.add_argument("--resnet_size", type=_resnet_depth, default=20, help="ResNet depth, 6n+2")
    p.add_argument("--resnet_version", type=int, default=1, choices=(1, 2), help="ResNet v1 or v2")
    p.add_argument("--batch_size", type=_at_least(1), default=64, help="examples per step")
    p.add_argument("--train_steps", type=_at_least(1), default=5, help="timed training steps")
    p.add_argument(
        "--warmup_steps",
        type=_at_least(0),
        default=2,
        help="untimed steps first (compiles, autotunes)",
    )
    p.add_argument("--data_dir", default=None, help="CIFAR-10 binary batches; none: synthetic data")
    p.add_argument(
        "--use_synthetic_data", action="store_true", help="random images even with --data_dir"
    )
    p.add_argument("--enable_xla", action="store_true", help="compile the whole step")
    p.add_argument("--model_dir", default=None, help="where to save the weights")
    p.add_argument("--seed", type=int, default=0, help="random seed for weights and data")
    return p.parse_args(argv)


def ignored_remat_flags_warning(
    env: dict[str, str] | os._Environ[str], enable_xla: bool, has_gpu: bool
) -> str | None:
    """Why the rematerialization flags in XLA_FLAGS would do nothing, or None.

    They act only inside XLA. Auto-jit (`--tf_xla_auto_jit=2`) clusters for
    XLA on GPU; on CPU it also needs `--tf_xla_cpu_global_jit`, else the step
    runs in plain TensorFlow and XLA never sees the flags.
    """
    xla_flags = env.get("XLA_FLAGS", "").split()
    # The pass's flags are the XLA flags named for it (remat_flag_table.cc).
    remat = [f for f in xla_flags if f.startswith("--xla_") and "rematerialization" in f]
    if not remat or enable_xla:
        return None
    tf_xla_flags = env.get("TF_XLA_FLAGS", "").split()
    auto_jit = any(
        f.startswith("--tf_xla_auto_jit=") and f.split("=", 1)[1] not in ("0", "-1")
        for f in tf_xla_flags
    )
    if auto_jit and (has_gpu or "--tf_xla_cpu_global_jit" in tf_xla_flags):
        return None
    if auto_jit:
        why = (
            "TF_XLA_FLAGS has --tf_xla_auto_jit but no --tf_xla_cpu_global_jit, and "
            "auto-jit on CPU clusters nothing without it"
        )
    else:
        why = "neither --enable_xla nor --tf_xla_auto_jit in TF_XLA_FLAGS is given"
    return (
        f"warning: XLA_FLAGS has {' '.join(remat)}, but this run does not use XLA: {why}. "
        "The rematerialization flags are ignored. Add --tf_xla_cpu_global_jit to "
        "TF_XLA_FLAGS (CPU auto-jit) or pass --enable_xla (whole-step compile)."
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import numpy as np
    import tensorflow as tf

    warning = ignored_remat_flags_warning(
        os.environ, args.enable_xla, bool(tf.config.list_physical_devices("GPU"))
    )
    if warning:
        print(warning, file=sys.stderr, flush=True)

    from models.resnet_cifar import resnet_trainer
    from models.zoo import ZOO, zoo_model, zoo_trainer

    tf.random.set_seed(args.seed)
    import keras

    keras.utils.set_random_seed(args.seed)
    if args.model != "resnet":
        entry = zoo_model(args.model)
        if entry is None:
            print(
                f"error: --model={args.model}: valid: resnet, {', '.join(sorted(ZOO))}, random<N>",
                file=sys.stderr,
            )
            return 2
        images, labels = entry.data(args.batch_size, args.seed)
    elif args.data_dir and not args.use_synthetic_data:
        try:
            images, labels = load_cifar10(args.data_dir)
        except DataError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    else:
        images, labels = synthetic_batch(args.batch_size, args.seed)
    trainer = (
        resnet_trainer(args.resnet_size, args.resnet_version)
        if args.model == "resnet"
        else zoo_trainer(args.model)
    )
    step = trainer.compiled_step(jit_compile=args.enable_xla)
    gpus = tf.config.list_physical_devices("GPU")
    losses: list[float] = []
    times: list[float] = []
    n = images.shape[0]
    total = args.warmup_steps + args.train_steps
    for i in range(total):
        lo = (i * args.batch_size) % max(n - args.batch_size + 1, 1)
        x = tf.constant(images[lo : lo + args.batch_size])
        y = tf.constant(labels[lo : lo + args.batch_size])
        if i == args.warmup_steps and gpus:
            tf.config.experimental.reset_memory_stats("GPU:0")
        t0 = time.perf_counter()
        loss = float(step(x, y).numpy())
        dt = time.perf_counter() - t0
        losses.append(loss)
        if i >= args.warmup_steps:
            times.append(dt)
    peak = tf.config.experimental.get_memory_info("GPU:0")["peak"] if gpus else None
    if args.model_dir:
        Path(args.model_dir).mkdir(parents=True, exist_ok=True)
        trainer.model.save_weights(str(Path(args.model_dir) / "model.weights.h5"))
    result = {
        "model": (
            f"resnet{args.resnet_size}_v{args.resnet_version}"
            if args.model == "resnet"
            else args.model
        ),
        "batch_size": args.batch_size,
        "device": "gpu" if gpus else "cpu",
        "losses": losses,
        "step_time_median_s": statistics.median(times),
        "gpu_peak_bytes": peak,
        "finite": bool(np.all(np.isfinite(losses))),
    }
    print("RESULT " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
