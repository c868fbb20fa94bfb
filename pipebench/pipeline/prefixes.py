"""The prefixes of a pipeline that capacity profiling measures: what each adds, whether that runs on one
core at most and why, and how its elements count in examples.

A prefix is the pipeline built up to some stage (`pipebench.measure.build.build(spec, stages=N)`):
the source alone, then source + the next stage, and so on to the whole pipeline. Each is measured in
input mode in fresh workers; a stage's cost is its prefix's CPU-seconds per example less the one
before. Some stages do not get a prefix of their own; they join a neighbour's:

- before an `interleave` (a `shard` of the file list, the source itself) the pipeline yields file
  names, not records: they join the interleave's prefix;
- before a `cache`, stages do no work once the cache is full (every epoch after the first reads the
  cache): they join the cache's prefix, which is measured in that steady state;
- `repeat` does nothing per element: it joins the prefix of the stage before it.

Sequential (one core at most), read from pipebench.measure.build and TensorFlow's defaults:

- the source: one TextLine / TFRecord reader when `num_parallel_reads` is unset or 1 (a parallel
  interleave of the files otherwise); Pipe mode reads one FIFO per channel;
- interleave without parallel calls (or with 1), or with cycle_length 1;
- decode with num_parallel_calls 1; left unset, TensorFlow's map_parallelization (on by default in
  2.14 and 2.21 unless the spec's options turn it or apply_default_optimizations off) runs it in
  parallel, since the decoders are stateless (their asserts are exempt from that check);
- shuffle, cache, shard, batch (it takes its input elements one at a time; parallel_batch spreads only
  the copying) and prefetch (one background thread).

Stages that are not async run in the thread of the next async one downstream, so several sequential
stages may share one core; each is still flagged on its own (what the model caps).

No TensorFlow import here: the worker reads `element_of` to count examples and to sink single-example
prefixes (pipebench.measure.worker).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from pipebench.pipeline.spec import PipelineSpec

#: The worker consumes a prefix of single examples (or records) through shard(K, 0), K elements per
#: loop step, so that about this many examples pass per step: its per-step cost (~25 µs on one core)
#: would otherwise swamp what a record costs to read (~1 µs).
SINK_EXAMPLES = 1024
SOURCE = "source"


@dataclass(frozen=True)
class Element:
    """What one element of a prefix is, in examples."""

    unbatched: bool  # a single example or record: the worker sinks it (SINK_EXAMPLES)
    examples: int  # examples per element (a batch without drop_remainder, or the last packed record, may hold fewer)
    counts: str  # the same in words


@dataclass(frozen=True)
class Prefix:
    """One prefix to measure: the pipeline's first `stages` stages after its source."""

    spec: PipelineSpec  # the whole pipeline (a valid spec); the worker builds only its first `stages` stages
    stages: int  # 0: the source alone
    adds: tuple[str, ...]  # what it adds to the prefix before it ("source" and/or stage kinds)
    stage: str  # the one of `adds` that does the work: the name its StageCost carries
    why_sequential: str | None  # why that stage runs on one core at most; None when it runs in parallel
    element: Element

    @property
    def sequential(self) -> bool:
        return self.why_sequential is not None

    @property
    def kinds(self) -> tuple[str, ...]:
        return self.spec.kinds[:self.stages]

    @property
    def label(self) -> str:
        """Give the prefix as text, e.g. 'source > batch > decode'."""
        return " > ".join((SOURCE, *self.kinds))


def element_of(spec: PipelineSpec, stages: int) -> Element:
    """Give what an element of the spec's first `stages` stages is (how the worker counts its examples)."""
    applied = spec.kinds[:stages]
    source = spec.source
    packed = source.format == "packed"
    decoded = "decode" in applied
    if "batch" in applied:
        batch_size = int(spec.stage("batch")["batch_size"])
        if packed and not decoded:  # the builder batches whole records before a later decode
            records = -(-batch_size // source.rows_per_record)
            return Element(False, records * source.rows_per_record,
                           f"a batch of {records} packed records of {source.rows_per_record} examples")
        what = "examples" if decoded else "undecoded records (one example each)"
        return Element(False, batch_size, f"a batch of {batch_size} {what}")
    if packed and not decoded:
        return Element(True, source.rows_per_record,
                       f"one packed record of {source.rows_per_record} examples (the last may hold fewer)")
    return Element(True, 1, "one example" if decoded else "one record (one example)")


def sink_every(element: Element) -> int:
    """Give K for the worker's shard(K, 0) sink: elements per loop step (1: no sink, a batch is big enough)."""
    return math.ceil(SINK_EXAMPLES / element.examples) if element.unbatched else 1


def _map_parallelization(spec: PipelineSpec) -> bool:
    """Give whether TensorFlow parallelizes a map left without num_parallel_calls under the spec's options."""
    settings = dict(spec.options.settings)
    explicit = settings.get("experimental_optimization.map_parallelization")
    if explicit is not None:
        return bool(explicit)
    return settings.get("experimental_optimization.apply_default_optimizations") is not False


def why_sequential(spec: PipelineSpec, kind: str) -> str | None:
    """Give why the source or stage `kind` of `spec` runs on one core at most, or None when it runs in parallel."""
    source = spec.source
    if kind == SOURCE:
        if source.mode == "pipe":
            return "Pipe mode streams one FIFO per channel through one reader"
        reader = "TextLine" if source.format == "libsvm" else "TFRecord"
        if source.num_parallel_reads in (None, 1):
            return f"one {reader} reader without parallel reads (num_parallel_reads {source.num_parallel_reads})"
        return None
    stage = spec.stage(kind)
    if kind == "interleave":
        if stage["num_parallel_calls"] in (None, 1):
            return f"interleave with num_parallel_calls {stage['num_parallel_calls']} reads its files in turn"
        if stage["cycle_length"] == 1:
            return "interleave with cycle_length 1 reads one file at a time"
        return None
    if kind == "decode":
        calls = stage["num_parallel_calls"]
        if calls == 1:
            return "a map with num_parallel_calls 1 runs one call at a time"
        if calls is None and not _map_parallelization(spec):
            return "a map without num_parallel_calls, with map_parallelization off in the options"
        return None
    return {
        "shuffle": "shuffle fills and samples one buffer in one thread",
        "cache": "cache serves its elements in order from one iterator",
        "shard": "shard takes and skips its input elements in one thread",
        "batch": "batch takes its input elements one at a time (parallel_batch spreads only the copying)",
        "prefetch": "prefetch moves elements in one background thread",
        "repeat": "repeat passes elements on in its consumer's thread",
    }[kind]


def skipped_ends(kinds: tuple[str, ...]) -> set[int]:
    """Give the stage counts that get no prefix of their own (see the module docstring); `pipebench diagnose`
    groups a user's stages by the same rule."""
    skipped: set[int] = set()
    for opener in ("interleave", "cache"):
        if opener in kinds:
            skipped |= set(range(kinds.index(opener) + 1))
    if "repeat" in kinds:
        skipped.add(kinds.index("repeat"))
    return skipped


def prefixes(spec: PipelineSpec) -> tuple[Prefix, ...]:
    """Give the prefixes to measure for `spec`, shortest first; the last is the whole pipeline."""
    kinds = spec.kinds
    skipped = skipped_ends(kinds)
    found: list[Prefix] = []
    previous: int | None = None
    for end in range(len(kinds) + 1):
        if end in skipped:
            continue
        adds = ((SOURCE,) if previous is None else ()) + kinds[previous or 0:end]
        stage = [kind for kind in adds if kind != "repeat"][-1]
        found.append(Prefix(spec, end, adds, stage, why_sequential(spec, stage), element_of(spec, end)))
        previous = end
    return tuple(found)
