"""The diagnosis as plain typed data: what the worker finds and the CLI reports and exports (no TensorFlow).

It crosses a process boundary (the worker writes it, the CLI reads it strictly, pipebench.typed) and
is what diagnosis.json holds, so every figure a user sees comes from here: one producer.

A pipeline is a list of *stages*, source first, as the user wrote it (`Stage`). A *step* (`Step`)
is one call that builds a dataset, with its arguments as plain values: the worker replays a list
of steps into a dataset (pipebench.diagnose.replay) and the export writes the same list as code
(pipebench.diagnose.export), so what was measured is what is exported.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipebench.measure.intervals import Interval
from pipebench.pipeline.function import Place
from pipebench.typed import load_json, to_json

#: 2 (2026-11-26): a rewrite's gain is an Interval {"mean", "low", "high", "n"} (was {"ratio", "low", "high",
#: "rounds"}); the version key is `schema_version` (was `diagnosis_version`).
DIAGNOSIS_VERSION = 2
AUTOTUNE = "AUTOTUNE"


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
    """One stage of the user's pipeline, read from the dataset (pipebench.diagnose.walk)."""

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

    @property
    def label(self) -> str:
        """Give the stage in a few words: its kind and the user's function name (without `input_fn.<locals>.`)."""
        return f"{self.kind}({self.function.short})" if self.function else self.kind


@dataclass(frozen=True)
class Step:
    """One call replayed into a dataset (the worker) or written as code (the export)."""

    kind: str  # source, map, batch, unbatch, shuffle, prefetch, repeat, cache, interleave, flat_map, filter, take, skip, shard
    args: dict[str, Any]  # plain values; "AUTOTUNE" for tf.data.AUTOTUNE
    origin: int | None  # the stage it comes from (its function, its source); None: added by a rewrite
    function: str | None = None  # how its function is made: "user", "vectorized_map", "libsvm" (see replay)
    tied: dict[str, str] | None = None  # argument → the input_fn parameter that gave its value


@dataclass(frozen=True)
class StageCost:
    """What one measured prefix adds (pipebench.capacity's prefix method, in one warm worker)."""

    stages: tuple[int, ...]  # the stages this prefix adds (a stage before an interleave or cache joins it)
    stage: int  # the one that does the work
    sequential: bool
    why_sequential: str | None
    prefix_examples_per_sec: Interval
    prefix_cpu_us_per_example: Interval
    cpu_us_per_example: float  # its own: what its prefix adds to the most any shorter prefix cost
    share: float  # of the whole pipeline's CPU per example
    capacity_examples_per_sec: float | None  # cores it may use / its own CPU per example; None when it costs nothing


@dataclass(frozen=True)
class Content:
    """How one epoch of a rewrite compares with one epoch of the original (pipebench.diagnose.content)."""

    same_elements: bool  # the same multiset of examples (of the components the original reproduces)
    same_order: bool | None  # None: the original's own order is random
    examples: int  # in the rewrite's epoch
    original_examples: int
    semantics: str | None  # the exact change when not the same elements, or the order when that changed
    random_components: tuple[str, ...]  # components that differ between two runs of the original itself
    capped: bool  # the epoch was cut at the cap (an endless pipeline): the first N examples were compared


@dataclass(frozen=True)
class Rewrite:
    """One rewrite: proposed where its precondition holds, tried, kept only when faster with the same content."""

    name: str  # "vectorize decode", "parallel map augment", "cache after decode", ...
    kind: str  # vectorize, parallel_map, parallel_interleave, parallel_reads, cache, prefetch, shrink_prefetch,
    #            options, convert, py_function
    stage: int | None
    why: str  # the precondition that holds, in words
    change: str  # what it changes in the pipeline, in words
    semantics: str | None  # a change in what training sees that the rewrite brings by construction
    automatic: bool  # pipebench builds and measures it; False: named with its measured cost only
    steps: tuple[Step, ...]  # the rewritten pipeline (empty when not automatic)
    options: dict[str, Any]  # tf.data options it sets ("deterministic": False, ...)
    gain: Interval | None  # over the original, paired per round; None: not measured (not automatic or not built)
    same_elements: bool | None  # one epoch yields the same examples (content.semantics names what changed); None: not read
    content: Content | None
    kept: bool
    verdict: str  # why kept or not, in one line
    cost_share: float | None = None  # for a named rewrite: the measured share of the pipeline's CPU it concerns


@dataclass(frozen=True)
class TrainTerms:
    """The train step and its ceiling with one pipeline (pipebench.measure.figures' slowdown)."""

    pipeline: str  # "original" or "rewritten"
    train_examples_per_sec: Interval
    ceiling_examples_per_sec: Interval
    slowdown: Interval  # 1 − train / ceiling, paired per round
    waiting: Interval  # share of step time blocked in get_next


@dataclass(frozen=True)
class Train:
    """Training in the diagnosis: which model, why, and what input costs it before and after."""

    model: str  # "DeepFM (pipebench's)" or the user's --model function
    why: str  # how the elements were matched to the model
    terms: tuple[TrainTerms, ...]


@dataclass(frozen=True)
class Profiler:
    """The TF Profiler's tf.data bottleneck analysis beside pipebench's, or why it is unavailable."""

    available: bool
    answer: str  # its bottleneck and hint, or "unavailable: reason"


@dataclass(frozen=True)
class Diagnosis:
    """What `pipebench diagnose` found: written whole as diagnosis.json."""

    schema_version: int  # the layout version (pipebench.versioned)
    function: str  # PATH.py:FUNCTION
    signature: str  # the user's, e.g. "(filenames, batch_size=32, num_epochs=1)"
    parameters: tuple[str, ...]  # its parameter names, in order
    defaults: dict[str, Any]  # the defaults that are plain values (the export writes them)
    kwargs: dict[str, Any]  # what it was called with (--set)
    tf_version: str
    cores: int
    element: str  # the element structure, in words
    options: dict[str, Any]  # tf.data options set on the root (those not at their defaults)
    stages: tuple[Stage, ...]
    steps: tuple[Step, ...]  # the original pipeline as replayable steps (empty when a stage cannot be replayed)
    content_scope: str  # what the content check read: one epoch of all files, or of the first K of them
    replay_note: str | None  # why the original cannot be replayed, if it cannot
    costs: tuple[StageCost, ...]
    bottleneck: int  # an index into stages
    bottleneck_why: str
    profiler: Profiler
    rewrites: tuple[Rewrite, ...]
    combined: Rewrite | None  # the kept rewrites together, measured again; None when fewer than two were kept
    train: Train | None
    train_note: str | None  # why there are no train terms, if there are none
    seconds: float  # the diagnosis took, in the worker

    def to_json(self) -> dict:
        return to_json(self)

    @classmethod
    def load(cls, path: Path) -> Diagnosis:
        return load_json(cls, path)


@dataclass(frozen=True)
class Request:
    """What the CLI asks the worker: the function, its arguments, the measurement settings."""

    function: str  # path (absolute)
    name: str
    kwargs: dict[str, Any]
    model: str | None  # path:name of a --model function
    rounds: int
    window_sec: float
    settle_sec: float
    warmup_sec: float  # the train arms' warm-up cap (pipebench.measure.windows)
    content_sec: float  # an epoch the content check reads should take about this long at the original's rate
    content_min_examples: int  # but hold at least this many examples
    epoch_cap_examples: int  # the content check compares at most this many examples of an endless epoch
    progress_file: str

    def to_json(self) -> dict:
        return to_json(self)

    @classmethod
    def load(cls, path: Path) -> Request:
        return load_json(cls, path)


@dataclass(frozen=True)
class Outcome:
    """The worker's answer: a diagnosis, or the one line saying why there is none."""

    diagnosis: Diagnosis | None
    error: str | None
    error_kind: str | None  # "usage" (the user's code or arguments), "data", "failed" (pipebench's own fault)

    def to_json(self) -> dict:
        return to_json(self)

    @classmethod
    def load(cls, path: Path) -> Outcome:
        return load_json(cls, path)
