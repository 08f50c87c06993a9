"""The training step every model of this checkout runs: forward, softmax
cross-entropy on integer labels (taken in f32 when the logits are not, as
under mixed bfloat16), optional L2 weight decay on the kernels, backward,
the optimizer's update."""

from __future__ import annotations

from dataclasses import dataclass

import keras
import tensorflow as tf


@dataclass
class Trainer:
    """Holds a model, its optimizer and a training step to compile."""

    model: keras.Model
    optimizer: keras.optimizers.Optimizer
    weight_decay: float = 0.0  # times the kernels' L2 loss, added to the loss

    @classmethod
    def create(
        cls, model: keras.Model, optimizer: keras.optimizers.Optimizer, weight_decay: float = 0.0
    ) -> Trainer:
        optimizer.build(model.trainable_variables)
        return cls(model, optimizer, weight_decay)

    def train_step(self, inputs: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            logits = self.model(inputs, training=True)
            if logits.dtype != tf.float32:
                logits = tf.cast(logits, tf.float32)
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
            )
            total = loss
            if self.weight_decay:
                kernels = [v for v in self.model.trainable_variables if "kernel" in v.path]
                total = loss + self.weight_decay * tf.add_n([tf.nn.l2_loss(v) for v in kernels])
        grads = tape.gradient(total, self.model.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables, strict=True))
        return loss

    def compiled_step(self, jit_compile: bool):  # noqa: ANN201 - tf.function type
        return tf.function(self.train_step, jit_compile=jit_compile)
