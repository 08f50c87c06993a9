"""The user's model, traced at a batch size: `remat-harness fit`'s one
TensorFlow process.

Run as `python -m remat_harness.fit_dump --model M --out DIR [...]`. It loads
the model once, then reads batch sizes from stdin, one per line, and for each
writes the pre-optimization HLO of the model's own training step
(`model.train_step` under `tf.function(jit_compile=True)`, what `model.fit`
compiles with `jit_compile=True`) to `DIR/b<batch>.hlo`, answering one JSON
line: {"batch": B, "hlo": path} or {"batch": B, "error": reason}. Nothing
runs the step: `experimental_get_compiler_ir` only traces and lowers it, so
a batch far beyond this machine's memory costs no memory.

A model that cannot be loaded is one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from pathlib import Path
from typing import Any

POLICIES = ("float32", "mixed_bfloat16")


class ModelError(Exception):
    """The user's model cannot be loaded or traced; the message says why."""


def parse_shape(text: str) -> tuple[int, ...]:
    """ "224,224,3" -> (224, 224, 3): the shape of one example."""
    try:
        shape = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise ValueError(f"{text!r} is not a shape such as 224,224,3") from None
    if not shape or min(shape) < 1:
        raise ValueError(f"{text!r} is not a shape such as 224,224,3")
    return shape


def _call_builder(spec: str) -> Any:
    module_name, _, attr = spec.partition(":")
    # The user's own folder, as `python -c "import pkg.module"` would see it.
    sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # noqa: BLE001 - any import failure is the user's to see
        raise ModelError(
            f"--model {spec}: cannot import {module_name}: {type(e).__name__}: {e}"
        ) from None
    build = getattr(module, attr, None)
    if not callable(build):
        raise ModelError(f"--model {spec}: {module_name} has no callable {attr!r}")
    try:
        return build()
    except Exception as e:  # noqa: BLE001 - the user's callable raised
        raise ModelError(f"--model {spec}: {attr}() raised {type(e).__name__}: {e}") from None


def _load_keras_file(path: str) -> Any:
    import keras

    if not Path(path).is_file():
        raise ModelError(f"--model {path}: no such file")
    try:
        return keras.saving.load_model(path, compile=True)
    except Exception as e:  # noqa: BLE001 - a damaged or foreign file
        raise ModelError(
            f"--model {path}: not a loadable .keras model: {type(e).__name__}: {e}"
        ) from None


def load_model(spec: str) -> tuple[Any, Any]:
    """(model, signature or None) from `pkg.module:build` or a `.keras` file."""
    if spec.endswith(".keras"):
        return _load_keras_file(spec), None
    if ":" not in spec:
        raise ModelError(
            f"--model {spec}: expected pkg.module:build (a callable returning a compiled "
            "Keras model, optionally with its (inputs, labels) TensorSpecs) or a .keras file"
        )
    built = _call_builder(spec)
    if isinstance(built, tuple) and len(built) == 2:
        return built[0], built[1]
    return built, None


def _is_sparse_loss(model: Any) -> bool:
    loss = model.loss
    text = loss if isinstance(loss, str) else f"{type(loss).__name__} {loss}"
    return "sparse" in text.lower()


def _one_spec(shape: tuple[int | None, ...], dtype: Any) -> Any:
    import tensorflow as tf

    return tf.TensorSpec((None, *shape), dtype)


def default_signature(model: Any, input_shape: tuple[int, ...] | None) -> tuple[Any, Any]:
    """(inputs, labels) TensorSpecs with the batch left open: the inputs from
    the model (or `input_shape`), the labels from its output and its loss
    (class indices for a sparse loss, else the output's shape)."""
    import tensorflow as tf

    if input_shape is not None:
        inputs = _one_spec(input_shape, tf.float32)
    else:
        declared = [tuple(t.shape[1:]) for t in model.inputs]
        if any(None in shape for shape in declared):
            raise ModelError(f"the model's input shape {declared} is not fixed: give --input-shape")
        specs = [_one_spec(s, t.dtype) for s, t in zip(declared, model.inputs, strict=True)]
        inputs = specs[0] if len(specs) == 1 else specs
    out_shape = tuple(model.outputs[0].shape[1:]) if model.outputs else None
    if out_shape is None or None in out_shape:
        raise ModelError("the model's output shape is not fixed: return (model, (inputs, labels))")
    if _is_sparse_loss(model):
        return inputs, _one_spec(out_shape[:-1], tf.int32)
    return inputs, _one_spec(out_shape, tf.float32)


def _at_batch(spec: Any, batch: int) -> Any:
    """Zeros of `spec`'s shape with the batch filled in."""
    import tensorflow as tf

    return tf.nest.map_structure(lambda s: tf.zeros((batch, *s.shape[1:]), s.dtype), spec)


class StepTracer:
    """The model's training step, traced at one batch size after another."""

    def __init__(self, model: Any, signature: tuple[Any, Any]) -> None:
        if getattr(model, "optimizer", None) is None or getattr(model, "loss", None) is None:
            raise ModelError(
                "the model is not compiled: call model.compile(optimizer=..., loss=...) first"
            )
        self._signature = signature
        self._model = model
        # Variables are made here, not inside the traced step.
        model.optimizer.build(model.trainable_variables)

    def hlo(self, batch: int, stage: str = "hlo") -> str | bytes:
        """The step's HLO before XLA's passes: text, or with stage
        "hlo_serialized" the HloModuleProto's bytes."""
        import tensorflow as tf

        data = (_at_batch(self._signature[0], batch), _at_batch(self._signature[1], batch))
        # A function per batch: one function kept every batch's graph (6.7 GB
        # after 20 of ResNet-50's). TensorFlow still keeps some memory per
        # trace: fit.py replaces this process every TRACES_PER_PROCESS.
        step = tf.function(self._model.train_step, jit_compile=True)
        return step.experimental_get_compiler_ir(data)(stage=stage)


def _serve(tracer: StepTracer, out: Path) -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        batch = int(line)
        try:
            path = out / f"b{batch}.hlo"
            tmp = path.with_suffix(".tmp")
            tmp.write_text(str(tracer.hlo(batch)))
            tmp.replace(path)
            answer: dict[str, Any] = {"batch": batch, "hlo": str(path)}
        except Exception as e:  # noqa: BLE001 - this batch's failure, reported
            answer = {"batch": batch, "error": f"{type(e).__name__}: {str(e)[:300]}"}
        print(json.dumps(answer), flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="fit_dump")
    p.add_argument("--model", required=True)
    p.add_argument("--policy", choices=POLICIES, default="float32")
    p.add_argument("--input-shape", type=parse_shape, default=None)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import keras

    keras.mixed_precision.set_global_policy(args.policy)
    try:
        model, signature = load_model(args.model)
        if signature is None:
            signature = default_signature(model, args.input_shape)
        tracer = StepTracer(model, signature)
    except ModelError as e:
        print(f"remat-harness fit: {e}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    print(json.dumps({"ready": True}), flush=True)
    _serve(tracer, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
