"""Models as a user brings them to `remat-harness fit`: each callable
returns a compiled Keras model at its real input size (ImageNet images,
1024-token sequences), its last layer giving logits for the loss. The
README's and docs/measured.md's answers are for these:

    remat-harness fit --model models.fit_examples:resnet50 --gpu a100_sxm_40
"""

from __future__ import annotations

import keras

IMAGE = (224, 224, 3)
CLASSES = 1000
# A GPT-style language model: causal self-attention, a loss per token.
TOKENS, VOCAB, D_MODEL, HEADS, LAYERS = 1024, 32000, 512, 8, 6


def _compiled(model: keras.Model) -> keras.Model:
    model.compile(
        optimizer=keras.optimizers.SGD(0.1, momentum=0.9),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    return model


def resnet50() -> keras.Model:
    return _compiled(
        keras.applications.ResNet50(weights=None, input_shape=IMAGE, classifier_activation=None)
    )


def mobilenetv2() -> keras.Model:
    return _compiled(
        keras.applications.MobileNetV2(weights=None, input_shape=IMAGE, classifier_activation=None)
    )


def densenet121() -> keras.Model:
    return _compiled(
        keras.applications.DenseNet121(weights=None, input_shape=IMAGE, classifier_activation=None)
    )


def decoder() -> keras.Model:
    """Token and position embeddings, LAYERS pre-norm causal blocks, logits
    per token."""
    tokens = keras.Input(shape=(TOKENS,), dtype="int32")
    positions = keras.ops.arange(TOKENS)
    x = keras.layers.Embedding(VOCAB, D_MODEL)(tokens)
    x = x + keras.layers.Embedding(TOKENS, D_MODEL)(positions)
    for _ in range(LAYERS):
        h = keras.layers.LayerNormalization()(x)
        h = keras.layers.MultiHeadAttention(HEADS, D_MODEL // HEADS)(h, h, use_causal_mask=True)
        x = x + h
        h = keras.layers.LayerNormalization()(x)
        h = keras.layers.Dense(4 * D_MODEL, activation="gelu")(h)
        x = x + keras.layers.Dense(D_MODEL)(h)
    x = keras.layers.LayerNormalization()(x)
    logits = keras.layers.Dense(VOCAB, dtype="float32")(x)
    opt = keras.optimizers.AdamW(3e-4)
    model = keras.Model(tokens, logits, name="decoder")
    model.compile(optimizer=opt, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model
