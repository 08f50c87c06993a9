"""ResNet for CIFAR-10 (He et al. 2016), v1 and v2 (pre-activation), in Keras 3.

Depth is 6n+2 (20, 32, 44, 56, 110). The training step (SGD with momentum,
L2 weight decay, softmax cross-entropy) is a plain function so that callers can
compile it whole (`tf.function(jit_compile=True)`) or let auto-jit cluster it.
"""

from __future__ import annotations

import keras

from models.trainer import Trainer

VALID_SIZES = (20, 32, 44, 56, 110)
NUM_CLASSES = 10
WEIGHT_DECAY = 2e-4


def _conv(filters: int, strides: int = 1) -> keras.layers.Conv2D:
    return keras.layers.Conv2D(
        filters,
        3,
        strides=strides,
        padding="same",
        use_bias=False,
        kernel_initializer="he_normal",
    )


def _block_v1(x: keras.KerasTensor, filters: int, strides: int) -> keras.KerasTensor:
    shortcut = x
    if strides != 1 or x.shape[-1] != filters:
        shortcut = keras.layers.Conv2D(filters, 1, strides=strides, use_bias=False)(x)
        shortcut = keras.layers.BatchNormalization()(shortcut)
    y = _conv(filters, strides)(x)
    y = keras.layers.BatchNormalization()(y)
    y = keras.layers.ReLU()(y)
    y = _conv(filters)(y)
    y = keras.layers.BatchNormalization()(y)
    return keras.layers.ReLU()(keras.layers.Add()([y, shortcut]))


def _block_v2(x: keras.KerasTensor, filters: int, strides: int) -> keras.KerasTensor:
    pre = keras.layers.ReLU()(keras.layers.BatchNormalization()(x))
    shortcut = x
    if strides != 1 or x.shape[-1] != filters:
        shortcut = keras.layers.Conv2D(filters, 1, strides=strides, use_bias=False)(pre)
    y = _conv(filters, strides)(pre)
    y = keras.layers.ReLU()(keras.layers.BatchNormalization()(y))
    y = _conv(filters)(y)
    return keras.layers.Add()([y, shortcut])


def build_resnet(resnet_size: int = 20, version: int = 1) -> keras.Model:
    """Builds the CIFAR ResNet of the given depth and version (1 or 2)."""
    if resnet_size not in VALID_SIZES and (resnet_size - 2) % 6 != 0:
        raise ValueError(f"resnet_size={resnet_size} is not 6n+2; valid sizes: {VALID_SIZES}")
    if version not in (1, 2):
        raise ValueError(f"resnet_version={version}; valid versions: 1, 2")
    blocks_per_stage = (resnet_size - 2) // 6
    block = _block_v1 if version == 1 else _block_v2
    inputs = keras.Input(shape=(32, 32, 3))
    x = _conv(16)(inputs)
    if version == 1:
        x = keras.layers.ReLU()(keras.layers.BatchNormalization()(x))
    for stage, filters in enumerate((16, 32, 64)):
        for i in range(blocks_per_stage):
            strides = 2 if stage > 0 and i == 0 else 1
            x = block(x, filters, strides)
    if version == 2:
        x = keras.layers.ReLU()(keras.layers.BatchNormalization()(x))
    x = keras.layers.GlobalAveragePooling2D()(x)
    outputs = keras.layers.Dense(NUM_CLASSES)(x)
    return keras.Model(inputs, outputs, name=f"resnet{resnet_size}_v{version}")


def resnet_trainer(resnet_size: int, version: int, learning_rate: float = 0.1) -> Trainer:
    """The CIFAR ResNet with SGD and momentum, and weight decay on its kernels."""
    model = build_resnet(resnet_size, version)
    optimizer = keras.optimizers.SGD(learning_rate=learning_rate, momentum=0.9)
    return Trainer.create(model, optimizer, WEIGHT_DECAY)
