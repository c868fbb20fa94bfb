"""A pipeline's stages as TensorFlow runs them, and the calls that build them: the one stage model of a user's
pipeline, walked from its dataset's graph (pipebench.pipeline.walk), replayed into a dataset (pipebench.measure.build)
and written as code (pipebench.diagnose.export), so what was measured is what is exported.

A pipeline is a list of *stages*, source first, as the user wrote it (`Stage`); a *step* (`Step`) is one call that
builds a dataset, with its arguments as plain values ("AUTOTUNE" for tf.data.AUTOTUNE, pipebench.pipeline.spec). A
spec's stages (pipebench.pipeline.spec.StageSpec) are what an experiment asks for: a closed set of kinds, validated;
built and walked, they are stages too. No TensorFlow here: the records cross the worker's process boundary.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipebench.pipeline.function import Place


@dataclass(frozen=True)
class UserFunction:
    """A function a stage runs: its Python name, where it is defined, whether the export can import it."""

    name: str  # __qualname__: "decode", "input_fn.<locals>.decode", "<lambda>"
    place: Place | None
    importable: str | None  # its name at the top level of its module (the export imports it), else None
    module_file: str | None  # the file that module is

    @property
    def short(self) -> str:
        """Give the name without the functions it is nested in ("decode" for "input_fn.<locals>.decode")."""
        return self.name.rpartition(".<locals>.")[2]


@dataclass(frozen=True)
class Stage:
    """One stage of the user's pipeline, read from the dataset (pipebench.pipeline.walk)."""

    index: int  # 0: the source
    kind: str  # source, map, batch, shuffle, prefetch, repeat, cache, interleave, flat_map, filter, unbatch, ...
    ops: tuple[str, ...]  # TensorFlow's dataset classes this call made, root-most first
    call: str  # as the user would write it: ".map(decode, num_parallel_calls=10)"
    place: Place | None  # where the user wrote the call (None: not seen, e.g. built outside the function)
    function: UserFunction | None
    parallelism: str | None  # "AUTOTUNE", a number, or None (one element at a time)
    buffer_size: str | None  # "AUTOTUNE", a number, or None
    deterministic: bool | None  # None: TensorFlow's default (the options' deterministic, True unless set)
    drop_remainder: bool | None
    stateful_ops: tuple[str, ...] | None  # its function's stateful ops as map_parallelization reads them; None: no function
    tf_does: tuple[str, ...]  # what TensorFlow's static optimizations already do to it, given the options
    batched: bool  # its elements hold a batch: examples per element is the leading dimension
    reads: str | None  # the reader a source or interleave opens per file (TFRecordDataset, TextLineDataset)
    params: dict[str, Any]  # its arguments as plain values (batch_size, seed, count, cycle_length, ...)
    inside: int | None  # the interleave or flat_map stage whose function builds it per element; None: the outer chain
    op: str = ""  # the op TensorFlow runs for it, read from the dataset's graph ("ParseExampleDatasetV2")
    via: str | None = None  # the library function the user's line called that made it ("make_csv_dataset"), else None

    @property
    def label(self) -> str:
        """Give the stage in a few words: its kind (its op when it has no kind of its own) and the user's function
        name (without `input_fn.<locals>.`)."""
        kind = self.op if self.kind == "other" and self.op else \
            "parallel_interleave" if self.params.get("sloppy") is not None else self.kind
        return f"{kind}({self.function.short})" if self.function else kind


@dataclass(frozen=True)
class Step:
    """One call replayed into a dataset (the worker) or written as code (the export)."""

    kind: str  # source, map, batch, unbatch, shuffle, prefetch, repeat, cache, interleave, flat_map, filter, take, skip, shard
    args: dict[str, Any]  # plain values; "AUTOTUNE" for tf.data.AUTOTUNE
    origin: int | None  # the stage it comes from (its function, its source); None: added by a rewrite
    function: str | None = None  # how its function is made: "user", "vectorized_map", "libsvm" (see replay)
