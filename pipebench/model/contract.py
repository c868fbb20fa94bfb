"""What pipebench's DeepFM takes from a pipeline pipebench did not write, and the map that adapts it.

The contract: one integer and one float tensor of shape [B, F] (or [B, F, 1]) and a label [B] (or
[B, 1]), in any nesting, named anything. `adapter` maps such an element to the model's
`({"feat_ids": int64[B, F], "feat_vals": float32[B, F]}, label float32[B])`, its ids clamped below
the model's feature count (an id the embedding table lacks would fail the step; the clamp costs
one elementwise minimum per batch).

`pipebench diagnose` trains on a user's pipeline through it (pipebench.diagnose.train), and an
experiment's function pipelines are measured through it: their labels count the examples
(pipebench.measure.function_trial).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf


def _matrix(spec: Any) -> int | None:
    """Give F when `spec` is [B, F] or [B, F, 1] (F may be unknown: -1), else None."""
    shape = spec.shape
    if shape.rank == 2 or (shape.rank == 3 and shape[2] == 1):
        return shape[1] if shape[1] is not None else -1
    return None


def deepfm_contract(spec: Any) -> tuple[int, int, int] | str:
    """Give the flat positions of (ids, values, label) when the elements match the DeepFM contract, or why not."""
    leaves = tf.nest.flatten(spec)
    if not all(isinstance(leaf, tf.TensorSpec) for leaf in leaves):
        return "its elements hold ragged or other composite tensors"
    ids = [i for i, s in enumerate(leaves) if s.dtype.is_integer and _matrix(s) is not None]
    values = [i for i, s in enumerate(leaves) if s.dtype.is_floating and _matrix(s) is not None]
    labels = [i for i, s in enumerate(leaves) if (s.dtype.is_floating or s.dtype.is_integer)
              and (s.shape.rank == 1 or (s.shape.rank == 2 and s.shape[1] == 1))]
    if len(ids) != 1 or len(values) != 1 or len(labels) != 1:
        return (f"its elements hold {len(ids)} integer and {len(values)} float [B, F] tensors and {len(labels)} "
                "[B] labels, not one of each")
    return ids[0], values[0], labels[0]


def adapter(positions: tuple[int, int, int], field_size: int, feature_size: int) -> Callable:
    """Give the map from a contract element (its flat `positions` of ids, values, label) to the model's input."""
    ids_at, values_at, label_at = positions

    def adapt(*element):
        leaves = tf.nest.flatten(element)
        ids = tf.minimum(tf.cast(tf.reshape(leaves[ids_at], [-1, field_size]), tf.int64), feature_size - 1)
        values = tf.cast(tf.reshape(leaves[values_at], [-1, field_size]), tf.float32)
        return {"feat_ids": ids, "feat_vals": values}, tf.reshape(tf.cast(leaves[label_at], tf.float32), [-1])

    return adapt
