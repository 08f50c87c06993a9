"""Training steps of models no one here tuned the engine for, beside ResNet.

Each is a Keras 3 model with its optimizer and a training step a caller can
compile whole (`tf.function(jit_compile=True)`) or leave to auto-jit, on
synthetic data of the model's own input shape:

- `mobilenet`: MobileNet-v1-style depthwise-separable CNN on 32x32x3 images.
- `transformer`: a 4-layer Transformer encoder (d=256, 4 heads) over 128 tokens.
- `lstm`: two stacked LSTM layers (256 units) over 64 steps: XLA compiles each
  into a while loop, and TensorFlow's gradient of a loop stacks per-step
  values (`TensorListPushBack`) for the backward loop.
- `wide_mlp`: a wide MLP trained with Adam: parameters and the two optimizer
  slots per parameter dominate the peak, so re-scheduling and recomputation
  have little to act on.
- `mobilenetv2`, `densenet121`, `vgg16`, `resnet50`: `keras.applications` as
  users take them (weights=None, 10 classes) on 32x32x3 images, so a step
  compiles in seconds: inverted residuals with depthwise convolutions; dense
  blocks whose concatenations keep every earlier feature map; a
  parameter-bound CNN; bottleneck residual blocks.
- `gru`: two stacked GRU layers, the recurrent loop in another cell shape.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import keras
import numpy as np

from models.trainer import Trainer
from remat_harness.catalogue import APPLICATIONS, base_name

NUM_CLASSES = 10


def _mobilenet() -> keras.Model:
    inputs = keras.Input(shape=(32, 32, 3))
    x = keras.layers.Conv2D(32, 3, padding="same", use_bias=False)(inputs)
    x = keras.layers.ReLU(6.0)(keras.layers.BatchNormalization()(x))
    for filters, strides in ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)):
        x = keras.layers.DepthwiseConv2D(3, strides=strides, padding="same", use_bias=False)(x)
        x = keras.layers.ReLU(6.0)(keras.layers.BatchNormalization()(x))
        x = keras.layers.Conv2D(filters, 1, use_bias=False)(x)
        x = keras.layers.ReLU(6.0)(keras.layers.BatchNormalization()(x))
    x = keras.layers.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, keras.layers.Dense(NUM_CLASSES)(x), name="mobilenet")


TOKENS, VOCAB, D_MODEL, HEADS, LAYERS = 128, 1000, 256, 4, 4


def _transformer() -> keras.Model:
    inputs = keras.Input(shape=(TOKENS,), dtype="int32")
    x = keras.layers.Embedding(VOCAB, D_MODEL)(inputs)
    for _ in range(LAYERS):
        attended = keras.layers.MultiHeadAttention(HEADS, D_MODEL // HEADS)(x, x)
        x = keras.layers.LayerNormalization()(x + attended)
        hidden = keras.layers.Dense(4 * D_MODEL, activation="gelu")(x)
        x = keras.layers.LayerNormalization()(x + keras.layers.Dense(D_MODEL)(hidden))
    x = keras.layers.GlobalAveragePooling1D()(x)
    return keras.Model(inputs, keras.layers.Dense(NUM_CLASSES)(x), name="transformer")


STEPS, FEATURES, UNITS = 64, 128, 256


def _lstm() -> keras.Model:
    inputs = keras.Input(shape=(STEPS, FEATURES))
    x = keras.layers.LSTM(UNITS, return_sequences=True)(inputs)
    x = keras.layers.LSTM(UNITS)(x)
    return keras.Model(inputs, keras.layers.Dense(NUM_CLASSES)(x), name="lstm")


def _application(build: Callable[..., keras.Model]) -> Callable[[], keras.Model]:
    """A keras.applications network, untrained, on the zoo's 32x32 images."""
    return lambda: build(
        input_shape=(32, 32, 3), weights=None, classes=NUM_CLASSES, classifier_activation=None
    )


def _attention_block(
    x: keras.KerasTensor, causal: bool, context: keras.KerasTensor | None = None
) -> keras.KerasTensor:
    """Self-attention (causal or not), attention to `context` when given,
    then the feed-forward layer; each with a residual and layer norm."""
    attended = keras.layers.MultiHeadAttention(HEADS, D_MODEL // HEADS)(
        x, x, use_causal_mask=causal
    )
    x = keras.layers.LayerNormalization()(x + attended)
    if context is not None:
        crossed = keras.layers.MultiHeadAttention(HEADS, D_MODEL // HEADS)(x, context)
        x = keras.layers.LayerNormalization()(x + crossed)
    hidden = keras.layers.Dense(4 * D_MODEL, activation="gelu")(x)
    return keras.layers.LayerNormalization()(x + keras.layers.Dense(D_MODEL)(hidden))


def _decoder() -> keras.Model:
    """A decoder-only Transformer: causal self-attention."""
    inputs = keras.Input(shape=(TOKENS,), dtype="int32")
    x = keras.layers.Embedding(VOCAB, D_MODEL)(inputs)
    for _ in range(LAYERS):
        x = _attention_block(x, causal=True)
    x = keras.layers.GlobalAveragePooling1D()(x)
    return keras.Model(inputs, keras.layers.Dense(NUM_CLASSES)(x), name="decoder")


def _encdec() -> keras.Model:
    """An encoder-decoder Transformer: the decoder attends causally to itself
    and to the encoder's output (source and target: the two token halves)."""
    inputs = keras.Input(shape=(TOKENS,), dtype="int32")
    embed = keras.layers.Embedding(VOCAB, D_MODEL)
    source, target = embed(inputs[:, : TOKENS // 2]), embed(inputs[:, TOKENS // 2 :])
    for _ in range(LAYERS // 2):
        source = _attention_block(source, causal=False)
    for _ in range(LAYERS // 2):
        target = _attention_block(target, causal=True, context=source)
    x = keras.layers.GlobalAveragePooling1D()(target)
    return keras.Model(inputs, keras.layers.Dense(NUM_CLASSES)(x), name="encdec")


def _gru() -> keras.Model:
    inputs = keras.Input(shape=(STEPS, FEATURES))
    x = keras.layers.GRU(UNITS, return_sequences=True)(inputs)
    x = keras.layers.GRU(UNITS)(x)
    return keras.Model(inputs, keras.layers.Dense(NUM_CLASSES)(x), name="gru")


def _wide_mlp() -> keras.Model:
    inputs = keras.Input(shape=(1024,))
    x = inputs
    for width in (4096, 4096, 4096):
        x = keras.layers.Dense(width, activation="relu")(x)
    return keras.Model(inputs, keras.layers.Dense(NUM_CLASSES)(x), name="wide_mlp")


@dataclass(frozen=True)
class ZooModel:
    build: Callable[[], keras.Model]
    optimizer: Callable[[], keras.optimizers.Optimizer]
    # Synthetic inputs for a batch: (batch, seed) -> (inputs, labels).
    data: Callable[[int, int], tuple[np.ndarray, np.ndarray]]


def _images(batch: int, seed: int, side: int = 32) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (
        rng.standard_normal((batch, side, side, 3), dtype=np.float32),
        rng.integers(0, NUM_CLASSES, batch).astype(np.int32),
    )


def _catalogue_application(class_name: str, side: int) -> ZooModel:
    build = getattr(keras.applications, class_name)
    return ZooModel(
        lambda: build(
            input_shape=(side, side, 3),
            weights=None,
            classes=NUM_CLASSES,
            classifier_activation=None,
        ),
        _sgd,
        lambda batch, seed: _images(batch, seed, side),
    )


def _mixed_bfloat16(entry: ZooModel) -> ZooModel:
    """The same model built under the "mixed_bfloat16" policy: bf16 compute,
    f32 variables (keras.mixed_precision)."""

    def build() -> keras.Model:
        keras.mixed_precision.set_global_policy("mixed_bfloat16")
        return entry.build()

    return ZooModel(build, entry.optimizer, entry.data)


def _tokens(batch: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (
        rng.integers(0, VOCAB, (batch, TOKENS)).astype(np.int32),
        rng.integers(0, NUM_CLASSES, batch).astype(np.int32),
    )


def _sequences(batch: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (
        rng.standard_normal((batch, STEPS, FEATURES), dtype=np.float32),
        rng.integers(0, NUM_CLASSES, batch).astype(np.int32),
    )


def _vectors(batch: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (
        rng.standard_normal((batch, 1024), dtype=np.float32),
        rng.integers(0, NUM_CLASSES, batch).astype(np.int32),
    )


def _sgd() -> keras.optimizers.Optimizer:
    return keras.optimizers.SGD(learning_rate=0.01, momentum=0.9)


def _adam() -> keras.optimizers.Optimizer:
    return keras.optimizers.Adam(learning_rate=1e-3)


ZOO: dict[str, ZooModel] = {
    "mobilenet": ZooModel(_mobilenet, _sgd, _images),
    "transformer": ZooModel(_transformer, _adam, _tokens),
    "lstm": ZooModel(_lstm, _adam, _sequences),
    "wide_mlp": ZooModel(_wide_mlp, _adam, _vectors),
    "mobilenetv2": ZooModel(_application(keras.applications.MobileNetV2), _sgd, _images),
    "densenet121": ZooModel(_application(keras.applications.DenseNet121), _sgd, _images),
    "vgg16": ZooModel(_application(keras.applications.VGG16), _sgd, _images),
    "resnet50": ZooModel(_application(keras.applications.ResNet50), _sgd, _images),
    "gru": ZooModel(_gru, _adam, _sequences),
    "decoder": ZooModel(_decoder, _adam, _tokens),
    "encdec": ZooModel(_encdec, _adam, _tokens),
}


def zoo_model(name: str) -> ZooModel | None:
    """A zoo model by name; "random<N>" is models/random_step.py's model N;
    a catalogue name (remat_harness/catalogue.py) ending in _bf16 trains in
    mixed bfloat16."""
    name, bf16 = base_name(name)
    if bf16:
        entry = zoo_model(name)
        return None if entry is None else _mixed_bfloat16(entry)
    if name in ZOO:
        return ZOO[name]
    if name in APPLICATIONS:
        return _catalogue_application(*APPLICATIONS[name])
    if name.startswith("random") and name[len("random") :].isdigit():
        from models.random_step import random_model

        seed = int(name[len("random") :])
        return ZooModel(
            lambda: random_model(seed).model,
            lambda: random_model(seed).optimizer,
            lambda batch, data_seed: random_model(seed).data(batch, data_seed),
        )
    return None


def zoo_trainer(name: str) -> Trainer:
    entry = zoo_model(name)
    if entry is None:
        raise ValueError(f"model {name!r}: valid models: {', '.join(sorted(ZOO))}, random<N>")
    model = entry.build()
    return Trainer.create(model, entry.optimizer())
