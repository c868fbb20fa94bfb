"""DeepFM as the AWS SageMaker DeepFM sample trains it (lambdaji/tf_repos lineage), for Keras 2 and 3.

    logit = b + Σ_f w[id_f]·x_f                                    FM first order
          + ½ Σ_k ((Σ_f V[id_f,k]·x_f)² − Σ_f (V[id_f,k]·x_f)²)    FM second order
          + MLP(concat_f V[id_f]·x_f)                              deep part: ReLU layers, dropout
    p     = sigmoid(logit)
    loss  = mean log loss + l2·(‖w‖²/2 + ‖V‖²/2)

The L2 term covers the whole first-order and embedding tables, as in the sample, so every step
updates both tables densely: that is part of the cost the sample's input pipeline has to feed. The
MLP is not regularised: the sample gives its layers regularizers but its loss never adds them.
`dropout` is the drop rate (the sample's flag is a keep probability; at its 0.5 default they agree).

The model is written against `tf.keras` only through Model, add_weight, Dense, Dropout and the
optimizers, the parts Keras 2 (TF ≤ 2.15) and Keras 3 share.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import tensorflow as tf

from pipebench.errors import ConfigError, DataError
from pipebench.model import OPTIMIZERS


class DeepFM(tf.keras.Model):
    """Maps `{"feat_ids": int64[B, F], "feat_vals": float32[B, F]}` to click probabilities float32[B]."""

    def __init__(self, field_size: int, feature_size: int, embedding_size: int, deep_layers: Sequence[int],
                 dropout: float, l2: float, seed: int) -> None:
        super().__init__(name="deepfm")
        self.field_size = field_size
        self.embedding_size = embedding_size
        self.l2 = l2
        glorot_normal = tf.keras.initializers.GlorotNormal
        glorot_uniform = tf.keras.initializers.GlorotUniform  # tf.contrib fully_connected's default
        self.fm_bias = self.add_weight(name="fm_bias", shape=(1,), initializer="zeros")
        self.fm_w = self.add_weight(name="fm_w", shape=(feature_size,), initializer=glorot_normal(seed=seed))
        self.fm_v = self.add_weight(name="fm_v", shape=(feature_size, embedding_size),
                                    initializer=glorot_normal(seed=seed + 1))
        self.hidden = [tf.keras.layers.Dense(units, activation="relu", name=f"mlp{i}",
                                             kernel_initializer=glorot_uniform(seed=seed + 2 + i))
                       for i, units in enumerate(deep_layers)]
        self.dropouts = [tf.keras.layers.Dropout(dropout, seed=seed + 2 + len(deep_layers) + i)
                         for i in range(len(deep_layers))]
        self.deep_out = tf.keras.layers.Dense(
            1, name="deep_out", kernel_initializer=glorot_uniform(seed=seed + 2 + 2 * len(deep_layers)))

    def logits(self, features: dict, training: bool = False) -> tf.Tensor:
        """Give the logit float32[B]; the train step needs it for a numerically stable log loss."""
        ids = features["feat_ids"]
        values = tf.cast(features["feat_vals"], tf.float32)
        first_order = tf.reduce_sum(tf.gather(self.fm_w, ids) * values, axis=1)
        embedded = tf.gather(self.fm_v, ids) * values[:, :, None]  # [B, F, K]: v_i·x_i
        second_order = 0.5 * tf.reduce_sum(
            tf.square(tf.reduce_sum(embedded, axis=1)) - tf.reduce_sum(tf.square(embedded), axis=1), axis=1)
        deep = tf.reshape(embedded, [-1, self.field_size * self.embedding_size])
        for dense, dropout in zip(self.hidden, self.dropouts):
            deep = dropout(dense(deep), training=training)
        deep = tf.reshape(self.deep_out(deep), [-1])
        return self.fm_bias + first_order + second_order + deep

    def call(self, inputs: dict, training: bool = False) -> tf.Tensor:
        return tf.sigmoid(self.logits(inputs, training=training))

    def penalized_log_loss(self, features: dict, labels: tf.Tensor, training: bool = True) -> tf.Tensor:
        """Give the training objective: mean log loss plus the sample's L2 on the FM tables."""
        labels = tf.reshape(tf.cast(labels, tf.float32), [-1])
        log_loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
            labels=labels, logits=self.logits(features, training=training)))
        return log_loss + self.l2 * (tf.nn.l2_loss(self.fm_w) + tf.nn.l2_loss(self.fm_v))


def build_deepfm(field_size: int, feature_size: int, embedding_size: int = 32,
                 deep_layers: Sequence[int] = (256, 128, 64), dropout: float = 0.5, l2: float = 1e-4,
                 seed: int = 0) -> DeepFM:
    """Give a built DeepFM: its variables exist, so tf.functions over it never create variables."""
    model = DeepFM(field_size, feature_size, embedding_size, tuple(deep_layers), dropout, l2, seed)
    model({"feat_ids": tf.zeros([1, field_size], tf.int64), "feat_vals": tf.zeros([1, field_size], tf.float32)})
    return model


def train_device(model: DeepFM) -> str:
    """Give the device type ("CPU", "GPU", ...) TensorFlow placed the model's weights on, where every step's
    updates run: with a GPU visible TensorFlow puts them there itself."""
    weight = model.fm_w
    device = getattr(weight, "device", None) or weight.value.device  # Keras 3 wraps the tf.Variable as .value
    return tf.DeviceSpec.from_string(device).device_type or "CPU"


def make_optimizer(name: str, learning_rate: float) -> tf.keras.optimizers.Optimizer:
    """Give the Keras optimizer `name` (see OPTIMIZERS) set as the AWS sample sets it."""
    optimizers = tf.keras.optimizers
    key = name.lower()
    if key == "adam":
        return optimizers.Adam(learning_rate, beta_1=0.9, beta_2=0.999, epsilon=1e-8)
    if key == "adagrad":
        return optimizers.Adagrad(learning_rate, initial_accumulator_value=1e-8)
    if key == "ftrl":
        return optimizers.Ftrl(learning_rate)
    if key == "momentum":
        return optimizers.SGD(learning_rate, momentum=0.95)
    if key == "rmsprop":
        return optimizers.RMSprop(learning_rate)
    if key == "sgd":
        return optimizers.SGD(learning_rate)
    raise ConfigError(f"model.optimizer: unknown optimizer {name!r} (choose from {', '.join(OPTIMIZERS)})")


def make_train_step(model: DeepFM, optimizer: str = "adam", learning_rate: float = 0.0005) -> Callable:
    """Give `step(features, labels) -> loss`: one optimizer update, compiled as a tf.function.

    The optimizer is built here, eagerly, so the step may also be called from inside another
    tf.function (see make_train_loop). It is reachable as `step.optimizer`.
    """
    opt = make_optimizer(optimizer, learning_rate)
    variables = model.trainable_variables
    opt.build(variables)

    @tf.function(reduce_retracing=True)
    def step(features: dict, labels: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            loss = model.penalized_log_loss(features, labels, training=True)
        opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    step.optimizer = opt
    return step


def make_train_loop(step: Callable) -> Callable[[tf.data.Iterator, int], tuple[int, float]]:
    """Give `loop(iterator, steps) -> (examples consumed, seconds spent waiting for input)`: `steps` train
    steps run inside one tf.function.

    Timing a window around one loop call measures the pipeline and the step without per-batch
    Python work. The wait is the TF Profiler's input time: how long each step blocked in the
    iterator's get_next, timed in the graph (tf.timestamp) with control dependencies that keep the
    clock reads on either side of the fetch, after the previous step's update. The loop stops early,
    without error, when the iterator runs out; the count (read back as a Python int, which also
    waits for the work to finish) says how far it got.
    """

    @tf.function
    def run(iterator: tf.data.Iterator, steps: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        examples = tf.constant(0, tf.int64)
        waited = tf.constant(0.0, tf.float64)
        done = tf.constant(0.0, tf.float32)  # the previous step's loss: the next fetch starts after it
        for _ in tf.range(steps):
            with tf.control_dependencies([done]):
                asked = tf.timestamp()
            with tf.control_dependencies([asked]):
                element = iterator.get_next_as_optional()
                has_value = element.has_value()
            with tf.control_dependencies([has_value]):
                waited += tf.timestamp() - asked
            if not has_value:
                break
            features, labels = element.get_value()
            done = tf.cast(step(features, labels), tf.float32)
            examples += tf.shape(labels, out_type=tf.int64)[0]
        with tf.control_dependencies([done]):
            return tf.identity(examples), tf.identity(waited)

    def loop(iterator: tf.data.Iterator, steps: int) -> tuple[int, float]:
        # A tensor, not a Python int, so a new step count does not retrace the loop.
        examples, waited = run(iterator, tf.constant(steps, tf.int64))
        return int(examples), float(waited)

    return loop


def evaluate_auc(model: DeepFM, dataset: tf.data.Dataset, max_batches: int | None = None) -> float:
    """Give the exact ROC AUC of the model's probabilities over `dataset` (see exact_auc)."""
    predict = tf.function(lambda features: model(features, training=False), reduce_retracing=True)
    if max_batches is not None:
        dataset = dataset.take(max_batches)
    labels, scores = [], []
    for features, batch_labels in dataset:
        scores.append(predict(features).numpy().reshape(-1))
        labels.append(batch_labels.numpy().reshape(-1))
    if not labels:
        raise DataError("the held-out data set is empty, so it has no AUC")
    return exact_auc(np.concatenate(labels), np.concatenate(scores))


def exact_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """Give the exact ROC AUC (Mann-Whitney, ties counted half), NaN when a score is not finite.

    Exact rather than tf.keras.metrics.AUC's 200-threshold approximation, whose error depends on
    how scores spread over [0, 1] and would blur small quality differences between trials.
    """
    positive = np.asarray(labels).reshape(-1) > 0.5
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    positives = int(positive.sum())
    negatives = positive.size - positives
    if not positives or not negatives:
        raise DataError(f"AUC needs both labels, but all {positive.size} held-out examples are labelled "
                        f"{int(positives > 0)}")
    if not np.isfinite(scores).all():
        return float("nan")
    order = np.argsort(scores, kind="mergesort")
    _, first, counts = np.unique(scores[order], return_index=True, return_counts=True)
    ranks = np.repeat(first + (counts + 1) / 2, counts)  # 1-based, ties share their average rank
    rank_sum = ranks[positive[order]].sum()
    return float((rank_sum - positives * (positives + 1) / 2) / (positives * negatives))
