"""A function pipeline's trial in the worker: the user's dataset, checked against the DeepFM contract.

The worker (pipebench.measure.worker) imports the user's module and calls the function with the
trial's keyword arguments (pipebench.pipeline.user_code): once for the measured pipeline, and again
for each fresh one a cold pass or the quality guard needs. Its elements must fit the DeepFM contract
(pipebench.model.contract): in every mode the label counts the examples, as a preset's does, and a
train trial trains DeepFM on the ids and values through the contract's adapter. Anything else is a
trial that cannot run (`invalid`, with the reason); what the user's code raises is a UserCodeError
naming the user's file and line (a `failed` trial).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipebench.errors import TrialError
from pipebench.pipeline.function import FunctionPipeline


@dataclass
class Called:
    """The dataset one call of the user's function returned, and how the trial reads it."""

    dataset: Any
    function: Any  # the user's function (where a failure while it runs is placed when nothing names a line)
    positions: tuple[int, int, int]  # the flat positions of ids, values and label (pipebench.model.contract)
    field_size: int | None  # F when the element spec says it, else None (read from an element)
    cached: bool  # it holds a cache stage: a fresh iterator would lose its partly filled cache


def _caches(dataset: Any) -> bool:
    """Tell whether a cache stage feeds the dataset (its inputs read as pipebench.pipeline.walk reads them)."""
    todo, seen = [dataset], set()
    while todo:
        node = todo.pop()
        if type(node).__name__ == "CacheDataset":
            return True
        seen.add(id(node))
        todo += [d for d in node._inputs() if id(d) not in seen]
    return False


def call(pipeline: FunctionPipeline) -> Called:
    """Give the dataset the user's function returns for this trial; TrialError when its elements do not fit DeepFM."""
    from pipebench.model.contract import deepfm_contract
    from pipebench.pipeline.user_code import SHA256_ATTRIBUTE, load

    loaded = load(pipeline.path, pipeline.function, pipeline.call_kwargs, give="pipelines.functions kwargs: {}")
    ran = getattr(loaded.module, SHA256_ATTRIBUTE, None)
    if ran != pipeline.sha256:  # its rows would name code that did not run
        raise TrialError(f"{pipeline.path}: changed since the run began (sha256 {pipeline.sha256[:12]}… then, "
                         f"{(ran or '?')[:12]}… when this trial loaded it): a row must name the code that ran; "
                         "put the file back, or start a new run")
    spec = loaded.dataset.element_spec
    found = deepfm_contract(spec)
    if isinstance(found, str):
        code = loaded.function.__code__ if hasattr(loaded.function, "__code__") else None
        where = f"{pipeline.path}:{code.co_firstlineno}" if code is not None else pipeline.path
        raise TrialError(f"{where}: {pipeline.function}'s elements do not fit the DeepFM contract ({found}): an "
                         "experiment counts examples by the label [B] and trains DeepFM on integer ids and float "
                         f"values [B, F]; `pipebench diagnose {Path(pipeline.path).name}:{pipeline.function}` reads "
                         "any pipeline")
    import tensorflow as tf

    ids = tf.nest.flatten(spec)[found[0]]
    return Called(loaded.dataset, loaded.function, found, ids.shape[1] if ids.shape[1] is not None else None,
                  _caches(loaded.dataset))


def examples_counter(tf, positions: tuple[int, int, int]):
    """Give count(element) → int64 examples: the size of its label."""
    def count(element):
        return tf.size(tf.nest.flatten(element)[positions[2]], out_type=tf.int64)
    return count


def field_size_of(tf, called: Called) -> int:
    """Give F: the element spec's, else the first element's (TrialError when the pipeline yields none)."""
    if called.field_size is not None:
        return called.field_size
    first = next(iter(called.dataset.take(1)), None)
    if first is None:
        raise TrialError("the pipeline yields no element")
    return int(tf.nest.flatten(first)[called.positions[0]].shape[1])
