"""Random training steps for fuzzing the engine (`remat-harness fuzz --steps`).

`random_model(seed)` draws a small Keras model, its optimizer and its input
kind from a seed: image models (convolutions, depthwise convolutions, batch
norm, residual adds, pooling) or sequence models (attention, layer norm, 1-D
convolutions, LSTM/GRU loops, a `tf.scan` cumulative layer). Sizes are kept
small so a step compiles in seconds on CPU. The same seed gives the same model.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

import keras
import numpy as np
import tensorflow as tf

NUM_CLASSES = 10


@dataclass(frozen=True)
class RandomStep:
    model: keras.Model
    optimizer: keras.optimizers.Optimizer
    # (batch, seed) -> (inputs, labels)
    data: Callable[[int, int], tuple[np.ndarray, np.ndarray]]


class CumulativeScan(keras.layers.Layer):
    """A running sum over time written with tf.scan (a while loop in XLA)."""

    def call(self, x: tf.Tensor) -> tf.Tensor:
        steps_first = tf.transpose(x, [1, 0, 2])
        summed = tf.scan(lambda acc, row: acc * 0.5 + row, steps_first)
        return tf.transpose(summed, [1, 0, 2])


def _image_block(x: keras.KerasTensor, rng: random.Random) -> keras.KerasTensor:
    kind = rng.choice(("conv", "depthwise", "residual", "pool", "bn"))
    channels = x.shape[-1]
    if kind == "conv":
        return keras.layers.Conv2D(
            rng.choice((8, 16, 32, 48)),
            rng.choice((1, 3)),
            strides=rng.choice((1, 1, 2)),
            padding="same",
            activation=rng.choice((None, "relu")),
        )(x)
    if kind == "depthwise":
        return keras.layers.DepthwiseConv2D(3, padding="same", activation="relu")(x)
    if kind == "residual":
        y = keras.layers.Conv2D(channels, 3, padding="same", use_bias=False)(x)
        y = keras.layers.BatchNormalization()(y)
        return keras.layers.ReLU()(keras.layers.Add()([x, y]))
    if kind == "pool" and x.shape[1] >= 4:
        return keras.layers.MaxPooling2D()(x)
    return keras.layers.ReLU()(keras.layers.BatchNormalization()(x))


def _sequence_block(x: keras.KerasTensor, rng: random.Random) -> keras.KerasTensor:
    kind = rng.choice(("attention", "dense", "conv1d", "lstm", "gru", "scan"))
    width = x.shape[-1]
    if kind == "attention":
        attended = keras.layers.MultiHeadAttention(2, max(width // 2, 4))(x, x)
        return keras.layers.LayerNormalization()(x + attended)
    if kind == "dense":
        return keras.layers.Dense(rng.choice((16, 32, 64)), activation="gelu")(x)
    if kind == "conv1d":
        return keras.layers.Conv1D(rng.choice((16, 32)), 3, padding="same")(x)
    if kind == "lstm":
        return keras.layers.LSTM(rng.choice((16, 32)), return_sequences=True)(x)
    if kind == "gru":
        return keras.layers.GRU(rng.choice((16, 32)), return_sequences=True)(x)
    return CumulativeScan()(x)


def _optimizer(rng: random.Random) -> keras.optimizers.Optimizer:
    return rng.choice(
        (
            lambda: keras.optimizers.SGD(learning_rate=0.01),
            lambda: keras.optimizers.SGD(learning_rate=0.01, momentum=0.9),
            lambda: keras.optimizers.Adam(learning_rate=1e-3),
            lambda: keras.optimizers.RMSprop(learning_rate=1e-3),
            lambda: keras.optimizers.Adagrad(learning_rate=1e-2),
        )
    )()


def random_model(seed: int) -> RandomStep:
    rng = random.Random(seed)
    if rng.random() < 0.5:
        side = rng.choice((16, 32))
        shape: tuple[int, ...] = (side, side, 3)
        inputs = keras.Input(shape=shape)
        x = keras.layers.Conv2D(rng.choice((8, 16)), 3, padding="same")(inputs)
        for _ in range(rng.randint(2, 6)):
            x = _image_block(x, rng)
        x = keras.layers.GlobalAveragePooling2D()(x)
    else:
        shape = (rng.choice((8, 16, 24)), rng.choice((8, 16, 32)))
        inputs = keras.Input(shape=shape)
        x = keras.layers.Dense(rng.choice((16, 32)))(inputs)
        for _ in range(rng.randint(1, 4)):
            x = _sequence_block(x, rng)
        x = keras.layers.GlobalAveragePooling1D()(x)
    outputs = keras.layers.Dense(NUM_CLASSES)(x)
    model = keras.Model(inputs, outputs, name=f"random{seed}")

    def data(batch: int, data_seed: int) -> tuple[np.ndarray, np.ndarray]:
        gen = np.random.default_rng(data_seed)
        return (
            gen.standard_normal((batch, *shape), dtype=np.float32),
            gen.integers(0, NUM_CLASSES, batch).astype(np.int32),
        )

    return RandomStep(model, _optimizer(rng), data)
