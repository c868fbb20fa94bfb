"""Training on the user's pipeline: the train step and its compute ceiling, with the original and the rewrite.

When the elements match the DeepFM contract (pipebench.model.contract: one integer and one float
tensor of shape [B, F] and a label [B], in any nesting, named anything), pipebench's DeepFM (the
experiment defaults of pipebench.config's `model` block) trains on them through the contract's
adapter map (ids clamped to the largest id of the first batches, so an unseen larger id cannot fail
the step). `--model PATH.py:FUNCTION` gives a compiled Keras model instead, trained on the elements as
they are ((features, labels) pairs, as `fit` takes them).

The arms are the trial worker's (pipebench.measure.worker): the step on each pipeline (`train`, and
`train:rewritten` for the rewrite) and on one batch served from memory (`synthetic`, the ceiling), in rounds of
pipebench.measure.windows, all in one measurement; the slowdown is pipebench.measure.figures' (1 − train /
ceiling), each train arm's beside the ceiling's windows of the same rounds.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import tensorflow as tf

from pipebench.diagnose.content import component_names
from pipebench.errors import UsageError
from pipebench.model.contract import adapter, deepfm_contract

#: Batches read to find the largest feature id (the embedding table's size).
ID_SAMPLE_BATCHES = 20


@dataclass
class Trainer:
    """How to train on a pipeline's elements: the step, the adapter map, and what was matched."""

    step: Any
    adapt: Any  # element → (features, labels) for the step; None: the elements are already that
    model: str
    why: str
    # the steps in one tf.function, shared by every arm: traced once per element signature (the synthetic batch's
    # is static, so it has a trace of its own)
    loop: Any = field(init=False, repr=False)

    def __post_init__(self) -> None:
        from pipebench.model.deepfm import make_train_loop

        self.loop = make_train_loop(self.step)


def deepfm_trainer(dataset) -> Trainer | str:
    """Give the DeepFM trainer for the dataset's elements, or why they do not match the contract."""
    from pipebench.config import resolve_block
    from pipebench.model.deepfm import build_deepfm, make_train_step

    found = deepfm_contract(dataset.element_spec)
    if isinstance(found, str):
        return found
    ids_at, values_at, label_at = found
    names = component_names(dataset.element_spec)
    largest, field_size = 0, None
    for element in dataset.take(ID_SAMPLE_BATCHES):
        leaves = tf.nest.flatten(element)
        largest = max(largest, int(tf.reduce_max(leaves[ids_at])))
        field_size = int(leaves[ids_at].shape[1])
    if field_size is None:
        return "the pipeline yields no element"
    feature_size = largest + 1
    adapt = adapter(found, field_size, feature_size)
    m = resolve_block("model", None)
    model = build_deepfm(field_size, feature_size, m["embedding_size"], tuple(m["deep_layers"]), m["dropout"], m["l2"])
    step = make_train_step(model, m["optimizer"], m["learning_rate"])
    return Trainer(step, adapt, "pipebench's DeepFM (the experiment defaults)",
                   f"ids {names[ids_at]}, values {names[values_at]}, label {names[label_at]}; F={field_size}, "
                   f"{feature_size:,} feature ids (the largest in the first {ID_SAMPLE_BATCHES} batches)")


def keras_trainer(model: Any, where: str, dataset) -> Trainer:
    """Give a trainer for a compiled Keras model on (features, labels) elements; UsageError otherwise."""
    if not isinstance(model, tf.keras.Model):
        raise UsageError(f"{where} returned a {type(model).__name__}, not a compiled Keras model")
    if getattr(model, "optimizer", None) is None:
        raise UsageError(f"{where}: the model is not compiled (call model.compile(optimizer=..., loss=...))")
    spec = dataset.element_spec
    if not (isinstance(spec, tuple) and len(spec) == 2):
        raise UsageError(f"{where}: the pipeline's elements are not (features, labels) pairs, as fit takes them")

    def step(features, labels):
        logs = model.train_step((features, labels))
        return tf.reduce_sum(tf.cast(tf.nest.flatten(logs)[0], tf.float32))

    return Trainer(step, None, f"the model {where} gives", "(features, labels) pairs, as fit takes them")


def train_arms(trainer: Trainer, pipelines: Sequence[tuple[str, Any, bool]]) -> list:
    """Give a train arm per pipeline (name, dataset, releasable), its elements adapted to the trainer, and the
    synthetic arm: the trial worker's arms (pipebench.measure.loops.train_arms), measured together."""
    from pipebench.measure.loops import train_arms as arms_of

    return arms_of(tf, trainer.loop, [(name, dataset.map(trainer.adapt) if trainer.adapt is not None else dataset,
                                       releasable) for name, dataset, releasable in pipelines])[0]
