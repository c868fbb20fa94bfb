"""The one rule for rows, wherever a figure counts them: a row is one example, and an element holds as many as the
leading dimension of its label (the second of a (features, label) pair; else its first component) where batching
happened (its stage's batch depth, pipebench.pipeline.walk), whatever wrapped the element (a dict, a TF1 iterator's
restructuring, a SparseTensor: its dense shape's first entry, a RaggedTensor: its rows); an element with no batch
dimension, or whose label is a scalar, holds one. A plain loop over the user's function counts the same way, reading
the label alone (`plain_rows`): the diagnosis checks its own figure against that loop (pipebench.diagnose.selfcheck).

No TensorFlow import here: the functions are handed the module.
"""
from __future__ import annotations

from typing import Any

#: Stage kinds (pipebench.pipeline.walk) that add a batch dimension to their elements, and that take one away.
BATCHING = frozenset({"batch", "padded_batch", "map_and_batch", "dense_to_sparse_batch"})
UNBATCHING = frozenset({"unbatch"})


def label_leaf(structure: Any) -> Any:
    """Give the leaf rows are counted on: the label's first leaf in a (features, label) pair, else the first leaf."""
    import tensorflow as tf

    if isinstance(structure, tuple) and len(structure) == 2:
        return tf.nest.flatten(structure[1], expand_composites=False)[0]
    return tf.nest.flatten(structure, expand_composites=False)[0]


def rows_tensor(tf, element: Any, batched: bool):
    """Give the rows an element holds as an int64 tensor (it runs inside a tf.function's loop)."""
    if not batched:
        return tf.constant(1, tf.int64)
    leaf = label_leaf(element)
    if isinstance(leaf, tf.SparseTensor):
        return tf.cast(leaf.dense_shape[0], tf.int64)
    if isinstance(leaf, tf.RaggedTensor):
        return tf.cast(leaf.nrows(), tf.int64)
    if leaf.shape.rank == 0:
        return tf.constant(1, tf.int64)
    return tf.cast(tf.shape(leaf)[0], tf.int64)


def plain_rows(tf, element: Any) -> int:
    """Give the rows of an element as a plain loop reads them: the label's leading dimension, 1 for a scalar."""
    leaf = label_leaf(element)
    if isinstance(leaf, tf.SparseTensor):
        return int(leaf.dense_shape[0])
    if isinstance(leaf, tf.RaggedTensor):
        return int(leaf.nrows())
    return int(leaf.shape[0]) if leaf.shape.rank else 1
