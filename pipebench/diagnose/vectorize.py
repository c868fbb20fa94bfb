"""Vectorize a per-example map by batching first: find a function that maps a whole batch to what mapping each
example gives, checked on a sample.

Three ways, tried in order; the first whose batch output holds, row by row, the per-example outputs (the same
structure, and the content check's canonical rows: dtypes, shapes and values, sparse and ragged tensors and strings
alike) on SAMPLE_EXAMPLES examples is the one offered. The examples are read once and kept: read twice through an
unseeded shuffle above the stage, they were two samples, and no way matched (issue 46):

1. `direct`: the user's own function, called on a batch (it may be written with batch-safe ops);
2. `parse_example`: the user's function traced with `tf.io.parse_single_example` standing for
   `tf.io.parse_example` (pipebench.pipeline.decoders.batched_parse), when it parses Examples: one op
   parses the batch, and what the function does with the parsed features (picking, renaming,
   casting) runs on the batch;
3. `vectorized_map`: `tf.vectorized_map` of the user's function (pfor; its while-loop fallback is
   off, since a loop over the batch is no faster than mapping each example): pfor has batched
   equivalents for many ops;
4. `libsvm`: a known batched equivalent for a per-line libsvm decoder: when every output of the
   user's function on a sample of lines is the line's label, ids or values (any dtype, any shape of
   that many numbers), pipebench's batched libsvm decoder (pipebench.pipeline.decoders, two
   `tf.strings.split` over the whole batch) reshaped to the user's structure. Only this one is tried
   for a stateful function (a `py_function` decoding in Python): it does not run the user's function,
   and its values are checked on the sample here and on the content check's rows.

The sample check is the precondition; the whole epoch is compared again before a rewrite is kept
(pipebench.diagnose.content).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import tensorflow as tf

from pipebench.pipeline.walk import Walked

SAMPLE_EXAMPLES = 64
_ROLES = ("label", "ids", "values")


@dataclass
class Batched:
    """A way to map whole batches that the sample check accepted, or why none was found."""

    mechanism: str | None  # "direct", "vectorized_map", "libsvm"; None: none found
    libsvm: dict | None  # the libsvm decoder's spec (field_size, structure)
    why: str  # what was tried, in words


def _structure_spec(value: Any, roles: list[dict]) -> Any:
    """Give a JSON description of a nested structure whose leaves are taken from `roles` in flatten order."""
    if isinstance(value, dict):
        return {"dict": {str(k): _structure_spec(value[k], roles) for k in sorted(value)}}
    if isinstance(value, (tuple, list)):
        return {"tuple" if isinstance(value, tuple) else "list": [_structure_spec(v, roles) for v in value]}
    return roles.pop(0)


def _same(batch: Any, outputs: list[Any]) -> bool:
    """Tell whether a batch holds, row by row, what mapping each example gave (the content check's canonical rows:
    dense, ragged, sparse and strings alike)."""
    from pipebench.diagnose.content import canonical_rows

    try:
        for output in outputs:
            tf.nest.assert_same_structure(batch, output, expand_composites=False)
    except (ValueError, TypeError):
        return False
    batch_leaves = tf.nest.flatten(batch, expand_composites=False)
    for position, leaf in enumerate(batch_leaves):
        rows = canonical_rows(leaf, True)
        one = [canonical_rows(tf.nest.flatten(o, expand_composites=False)[position], False)[0] for o in outputs]
        if rows != one:
            return False
    return True


def _libsvm_spec(lines: list[bytes], outputs: list[Any]) -> dict | None:
    """Give the libsvm decoder spec when every output leaf is each line's label, ids or values, else None."""
    parsed = []
    for line in lines:
        tokens = line.decode("utf-8", "replace").split(" ")
        try:
            pairs = [t.split(":") for t in tokens[1:]]
            parsed.append((float(tokens[0]), [int(p[0]) for p in pairs], [float(p[1]) for p in pairs]))
        except (ValueError, IndexError):
            return None
    fields = {len(p[1]) for p in parsed}
    if len(fields) != 1:
        return None
    field_size = fields.pop()
    roles = []
    for position, leaf in enumerate(tf.nest.flatten(outputs[0])):
        leaves = [tf.nest.flatten(o)[position] for o in outputs]
        found = [role for index, role in enumerate(_ROLES)
                 if all(np.asarray(leaf_value).size == len(np.atleast_1d(p[index])) and np.array_equal(
                     np.asarray(leaf_value).reshape(-1), np.asarray(np.atleast_1d(p[index])).astype(leaf.dtype))
                     for leaf_value, p in zip(leaves, parsed))]
        if len(found) != 1 or leaf.dtype.kind not in "iuf":
            return None
        roles.append({"role": found[0], "dtype": leaf.dtype.name, "shape": list(leaf.shape)})
    return {"field_size": field_size, "structure": _structure_spec(outputs[0], roles)}


def _parses_examples(walked: Walked, stage: int) -> bool:
    """Tell whether the stage's traced function parses tf.train.Examples."""
    node = walked.nodes[stage]
    try:
        ops = {op.type for op in node._map_func.function.graph.get_operations()}
    except AttributeError:
        return False
    return any(op.startswith(("ParseExample", "ParseSingleExample")) for op in ops)


def batched_equivalent(walked: Walked, stage: int, known_only: bool = False) -> Batched:
    """Give how to map whole batches in place of per-example stage `stage` (a map), checked on a sample;
    `known_only`: only pipebench's own batched equivalents (a stateful function's)."""
    function = walked.functions[stage]
    # read once: every way is checked on the same examples (a shuffle above the stage draws others at each read)
    upstream = walked.prefix(stage - 1).take(SAMPLE_EXAMPLES).cache()
    try:
        for _ in upstream:
            pass
        outputs = list(upstream.map(function))
    except Exception as err:  # noqa: BLE001 — the user's function may fail on what it maps, which is for the run to say
        return Batched(None, None, f"the function failed on a sample ({type(err).__name__})")
    if not outputs:
        return Batched(None, None, "the stage's input yields no element to check on")
    from pipebench.pipeline.decoders import batched_parse, libsvm_batch_decoder, vectorized

    tried = []
    ways = [("direct", lambda: function)]
    if _parses_examples(walked, stage):
        ways.append(("parse_example", lambda: batched_parse(function)))
    ways.append(("vectorized_map", lambda: vectorized(function)))
    for mechanism, make in [] if known_only else ways:
        try:
            batch = next(iter(upstream.batch(SAMPLE_EXAMPLES).map(make())))
        except Exception as err:  # noqa: BLE001 — a function that does not take a batch: the next way is tried
            tried.append(f"{mechanism}: {type(err).__name__}")
            continue
        if _same(batch, outputs):
            return Batched(mechanism, None, f"{mechanism} gives the per-example values on {len(outputs)} examples")
        tried.append(f"{mechanism}: other values")
    spec = upstream.element_spec
    if isinstance(spec, tf.TensorSpec) and spec.dtype == tf.string and spec.shape.rank == 0:
        lines = [line.numpy() for line in upstream]
        dense = all(isinstance(leaf, tf.Tensor) for o in outputs for leaf in tf.nest.flatten(o))
        found = _libsvm_spec(lines, [tf.nest.map_structure(lambda t: np.asarray(t.numpy()), o) for o in outputs]) if dense \
            else None
        if found is not None:
            try:
                batch = next(iter(upstream.batch(SAMPLE_EXAMPLES).map(libsvm_batch_decoder(found))))
            except Exception as err:  # noqa: BLE001 — lines the batched decoder refuses
                tried.append(f"libsvm: {type(err).__name__}")
            else:
                if _same(batch, outputs):
                    return Batched("libsvm", found, f"its outputs are each line's libsvm fields on {len(outputs)} "
                                                    "lines, as pipebench's batched libsvm decoder gives them")
                tried.append("libsvm: other values")
        else:
            tried.append("libsvm: its outputs are not a line's label, ids and values")
    return Batched(None, None, "; ".join(tried) or "it holds stateful ops, so only pipebench's own batched "
                   "equivalents are tried, and none fits its input")
