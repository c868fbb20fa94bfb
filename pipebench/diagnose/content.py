"""One epoch's examples, canonicalised, to tell whether a rewrite yields what the original yields.

Each example (a batch is split along its first dimension) becomes one digest per component (its
dtype, shape and bytes). A rewrite has the same elements when its epoch holds the same multiset of
examples, in batches of the same sizes, as the original's. The original is read twice first, and
components whose values differ between its own two reads are left out of the comparison and named (a
read that is not reproducible: random augmentation, or an endless unseeded stream whose first rows are
another subset each time). A whole epoch read a third time under another seed finds the random draws
of a seeded one: components whose values are mostly new there; one whose read holds other rows of the
same values (a shuffle that drops a last partial batch keeps another subset under another seed) is no
random draw and stays compared. When the original's order differs between two reads the order of a
rewrite is not compared either (a shuffled pipeline has no order to keep).

When they differ, the change is named: the last partial batch, batch boundaries, the order, or how
many examples differ. An endless epoch (no repeat to remove, an endless source) is cut at a cap and
says so.
"""
from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
import tensorflow as tf

from pipebench.diagnose.records import Content
from pipebench.errors import UsageError


@dataclass
class Epoch:
    """One epoch read: per example, one digest per component; the batch sizes; whether it was cut at the cap."""

    components: tuple[str, ...]
    examples: list[tuple[bytes, ...]]
    batch_sizes: list[int]
    capped: bool


def component_names(spec: Any, prefix: str = "") -> list[str]:
    """Give each flattened component's path in the element ("[0]['feat_ids']"), in tf.nest.flatten order."""
    if isinstance(spec, dict):
        return [n for k in sorted(spec) for n in component_names(spec[k], f"{prefix}[{k!r}]")]
    if isinstance(spec, (tuple, list)):
        return [n for i, v in enumerate(spec) for n in component_names(v, f"{prefix}[{i}]")]
    return [prefix or "element"]


def check_structure(spec: Any) -> None:
    """Raise UsageError when an element holds something diagnose cannot compare (a dataset, an optional, ...):
    dense, sparse and ragged tensors of any dtype, in any nesting, it compares."""
    for name, leaf in zip(component_names(spec), tf.nest.flatten(spec)):
        if not isinstance(leaf, (tf.TensorSpec, tf.RaggedTensorSpec, tf.SparseTensorSpec)):
            raise UsageError(f"unsupported dataset structure: element component {name} is a "
                             f"{type(leaf).__name__}; diagnose compares dense, sparse and ragged tensors")


def canonical_rows(value: Any, batched: bool) -> list[bytes]:
    """Give one canonical byte string per example of one component of one element: a dense tensor's dtype, shape
    and bytes (strings by their lengths and bytes), a ragged one's values, a sparse one's indices and values (not
    its dense shape, which in a batch is the longest row's). `batched`: split along the first dimension."""
    if isinstance(value, tf.RaggedTensor):
        rows = value.to_list() if batched else [value.to_list()]
        return [repr(r).encode() for r in rows]
    if isinstance(value, tf.SparseTensor):
        indices, values = value.indices.numpy(), value.values.numpy()
        head = f"sparse {values.dtype.str} rank {indices.shape[1] - batched}".encode()
        if not batched:
            return [head + _bytes(indices) + b"|" + _bytes(values)]
        count = int(value.dense_shape[0])
        rows = indices[:, 0] if len(indices) else np.zeros(0, np.int64)
        return [head + _bytes(indices[rows == i, 1:]) + b"|" + _bytes(values[rows == i]) for i in range(count)]
    array = value.numpy()
    array = np.asarray(array, dtype=object) if isinstance(array, bytes) else array
    if not batched:
        array = array[None, ...]
    head = f"{array.dtype.str}{array.shape[1:]}".encode()
    return [head + _bytes(row) for row in array]


def _bytes(value: Any) -> bytes:
    """Give an array's (or one value's) values as bytes: strings each by its length and bytes (a fixed-width bytes
    array drops trailing NULs, an object array holds them)."""
    array = np.asarray(value, dtype=object) if isinstance(value, bytes) else np.asarray(value)
    if array.dtype == object or array.dtype.kind == "S":
        return b"\0".join(len(x).to_bytes(8, "little") + bytes(x) for x in np.asarray(array, dtype=object).reshape(-1))
    return np.ascontiguousarray(array).tobytes()


def read_epoch(dataset, batched: bool, cap_examples: int) -> Epoch:
    """Give one epoch of `dataset` canonicalised (module docstring), at most about `cap_examples` examples."""
    names = tuple(component_names(dataset.element_spec))
    examples: list[tuple[bytes, ...]] = []
    sizes: list[int] = []
    for element in dataset:
        columns = [[hashlib.blake2b(r, digest_size=16).digest() for r in canonical_rows(v, batched)]
                   for v in tf.nest.flatten(element, expand_composites=False)]
        count = len(columns[0]) if columns else 0
        examples.extend(zip(*columns))
        sizes.append(count)
        if len(examples) >= cap_examples:
            return Epoch(names, examples, sizes, True)
    return Epoch(names, examples, sizes, False)


def compare(original: Epoch, again: Epoch, rewrite: Epoch, reseeded: Epoch | None = None) -> Content:
    """Give how a rewrite's epoch compares with the original's (`again`: the original read a second time; `reseeded`:
    a whole epoch of it read under another seed, whose components that change are random draws)."""
    width = len(original.components)
    random = tuple(name for j, name in enumerate(original.components)
                   if Counter(e[j] for e in original.examples) != Counter(e[j] for e in again.examples)
                   or (reseeded is not None and _drawn(original, reseeded, j)))
    stable = [j for j, name in enumerate(original.components) if name not in random]
    key = lambda e: tuple(e[j] for j in stable)  # noqa: E731
    order_random = [key(e) for e in original.examples] != [key(e) for e in again.examples]
    capped = original.capped or rewrite.capped
    if len(rewrite.components) != width:
        return Content(False, None, len(rewrite.examples), len(original.examples),
                       f"its elements hold {len(rewrite.components)} components, not {width}", random, capped)
    if original.capped and len(original.examples) > len(rewrite.examples):
        return _compare_first(original, rewrite, key, order_random, random)
    mine, theirs = Counter(map(key, original.examples)), Counter(map(key, rewrite.examples))
    same_sizes = Counter(original.batch_sizes) == Counter(rewrite.batch_sizes)
    semantics = None
    if mine == theirs and same_sizes:
        same_order = None if order_random else [key(e) for e in original.examples] == [key(e) for e in rewrite.examples]
        if same_order is False:
            semantics = "order: the same rows come in another order"
        return Content(True, same_order, len(rewrite.examples), len(original.examples), semantics, random, capped)
    largest = max(original.batch_sizes, default=1)
    missing, extra = mine - theirs, theirs - mine
    if mine == theirs:
        semantics = (f"batch boundaries: the same rows in batches of other sizes "
                     f"({_sizes(original.batch_sizes)} → {_sizes(rewrite.batch_sizes)})")
    elif not extra and sum(missing.values()) < largest:
        semantics = f"the last partial batch: {sum(missing.values())} rows of the epoch are dropped"
    elif not missing and sum(extra.values()) < largest:
        semantics = f"the last partial batch: {sum(extra.values())} more rows are kept"
    else:
        semantics = (f"{sum(missing.values())} of {len(original.examples)} rows differ"
                     + (f" (compared without the random component(s) {', '.join(random)})" if random else ""))
    return Content(False, None, len(rewrite.examples), len(original.examples), semantics, random, capped)


#: A component is a random draw when more than this share of another read's values are not among the first read's.
DRAWN_SHARE = 0.5


def _drawn(first: Epoch, other: Epoch, j: int) -> bool:
    """Whether component `j` is drawn anew from read to read (module docstring)."""
    seen = Counter(e[j] for e in first.examples)
    theirs = Counter(e[j] for e in other.examples)
    return sum((theirs - seen).values()) > DRAWN_SHARE * max(1, sum(theirs.values()))


def _compare_first(original: Epoch, rewrite: Epoch, key, order_random: bool, random: tuple[str, ...]) -> Content:
    """Compare a rewrite's first rows with the original's first rows read a margin further (pipebench.diagnose.check):
    the same rows when every row of the rewrite is among them and every row of the original but the margin's is
    among the rewrite's; whole batches of the same sizes but the last."""
    n = len(rewrite.examples)
    margin = len(original.examples) - n
    mine, theirs = Counter(map(key, original.examples)), Counter(map(key, rewrite.examples))
    head = Counter(map(key, original.examples[:max(0, n - margin)]))
    extra, missing = theirs - mine, head - theirs
    sizes = rewrite.batch_sizes[:-1] == original.batch_sizes[:len(rewrite.batch_sizes) - 1]
    if not extra and not missing and sizes:
        in_order = [key(e) for e in original.examples[:n]] == [key(e) for e in rewrite.examples]
        same_order = None if order_random else in_order
        semantics = None if in_order or order_random else "order: the same rows come in another order"
        return Content(True, same_order, n, n, semantics, random, True)
    semantics = ("batch boundaries: the same rows in batches of other sizes" if not extra and not missing else
                 f"{sum(extra.values()) + sum(missing.values())} of the first {n:,} rows differ"
                 + (f" (compared without the random component(s) {', '.join(random)})" if random else ""))
    return Content(False, None, n, n, semantics, random, True)


def _sizes(sizes: list[int]) -> str:
    common = Counter(sizes).most_common(3)
    return ", ".join(f"{n}×{size}" for size, n in common) + (", …" if len(set(sizes)) > 3 else "")


def element_text(spec: Any) -> str:
    """Give the element structure in words: each component's name, dtype and shape."""
    return ", ".join(f"{name}: {leaf.dtype.name}{list(leaf.shape) if leaf.shape.rank is not None else '[?]'}"
                     for name, leaf in zip(component_names(spec), tf.nest.flatten(spec)))
