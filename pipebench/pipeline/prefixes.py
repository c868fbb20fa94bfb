"""The prefixes of a pipeline that are measured, what each adds, how many cores its working stage may use and why,
and how its elements count: one rule for pipebench's own pipelines (a spec, profiled by pipebench.capacity) and a
user's (its walked stages, pipebench.pipeline.stages, diagnosed by pipebench.diagnose). No TensorFlow here.

A prefix is the pipeline built up to some stage: the source alone, then source + the next stage, and so on to the
whole pipeline. A stage's cost is what its prefix's CPU per row adds to the costliest prefix measured before it
(pipebench.capacity's prefix method). Stages are numbered source first (a spec's stage i is `spec.stages[i - 1]`); a
walked list is flat, an interleave's inner stages following it. An inner stage's prefix is the pipeline the
interleave's function built for one element, up to that stage, measured on its own (through the interleave, a
prefix that stops inside the function would pass every line across it one by one, which the whole pipeline never
does); so an interleave's inner stages are measured first, then the outer chain through the interleave, whose own
cost is what interleaving adds. Some stages get no prefix of their own and join a neighbour's, chain by chain:

- before an interleave or flat_map that reads files, the chain yields file names (or shard numbers), not rows:
  those stages join the interleave's prefix;
- before a cache, stages do no work once it is full (every epoch after the first reads the cache): they join the
  cache's prefix, measured in that steady state;
- `repeat` does nothing per row: the stage before it is measured with it (a finite prefix would run out); so
  does a walked `take`, and a walked `prefetch` of batches (a few µs an element is nothing per row there): each is
  measured with the stage before it, whose cost it is named for. real_tda_babyweight_make_csv's two prefetches and
  real_tfrs_ranking_cache's take each cost a prefix arm, ~10 s a diagnosis, to measure nothing. A spec's prefetch
  keeps its prefix: pipebench.capacity.model closes a group of stages at it.

Lanes: a stage may use one core (it runs in one thread: the why_sequential functions say why, from a spec's source
and stages or from what TensorFlow's graph says of a walked stage) or all of them; a stage of a pipeline an
interleave builds per element runs in each of the interleave's parallel inner pipelines, so a sequential one there
may use up to the interleave's parallelism (its cycle length, at most the cores). Stages that are not async run in
the thread of the next async one downstream, so several sequential stages may share one core; each is still
flagged on its own (what the capacity model caps).

A spec's prefix is measured in input mode in fresh workers (the worker reads `element_of` to count examples and to
sink single-example prefixes, pipebench.measure.worker); a walked one in one warm worker (pipebench.diagnose).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from pipebench.pipeline.spec import PipelineSpec
from pipebench.pipeline.stages import Stage

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


def why_spec_sequential(spec: PipelineSpec, kind: str) -> str | None:
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


@dataclass(frozen=True)
class Prefix:
    """One prefix to measure: the stages up to `end` (numbered source first), and those it adds to the one before."""

    end: int  # its last stage (a spec's: how many of its stages after the source are built)
    adds: tuple[int, ...]  # the stages it adds to the prefix before it
    stage: int  # the one of `adds` that does the work (not `passes_on`): the stage its cost is named for
    name: str  # that stage's name, as its cost carries it ("decode", "map(parse)")
    label: str  # the prefix in words ("source > batch > decode", "prefix 4")
    lanes: float | None  # the cores that stage may use; None: every core there is
    why_sequential: str | None  # why it is held to fewer cores than the machine has, or None

    @property
    def sequential(self) -> bool:
        return self.why_sequential is not None


def why_stage_sequential(stage: Stage) -> str | None:
    """Give why a stage runs in one thread, or None when it runs in parallel."""
    kind = stage.kind
    if kind == "source":
        reads = stage.params.get("num_parallel_reads")
        if "reader" in stage.params:
            return None if reads not in (None, 1) else f"one {stage.params['reader']} reader without parallel reads"
        return "the source yields its elements in one thread"
    if kind == "interleave" and stage.params.get("sloppy") is not None and stage.parallelism == "1":
        return "parallel_interleave with cycle_length 1 reads its inputs in one thread, handing each element over"
    if kind in ("map", "interleave", "batch", "parse_example", "map_and_batch") and stage.parallelism not in (None, "1"):
        return None
    if kind == "map":
        if stage.parallelism == "1":
            return "a map with num_parallel_calls 1 runs one call at a time"
        parallel = [said for said in stage.tf_does if "runs it in parallel" in said]
        return None if parallel else "; ".join(s for s in stage.tf_does if "map_parallelization" in s)
    return {"interleave": "interleave without num_parallel_calls reads its inputs in turn",
            "flat_map": "flat_map reads its inputs in turn",
            "batch": "batch takes its input elements one at a time (parallel_batch spreads only the copying)",
            "parse_example": "parse_example_dataset parses one batch at a time (num_parallel_calls 1)",
            "map_and_batch": "map_and_batch maps one element at a time (num_parallel_calls 1)",
            "shuffle_and_repeat": "shuffle fills and samples one buffer in one thread",
            "shuffle": "shuffle fills and samples one buffer in one thread",
            "prefetch": "prefetch moves elements in one background thread",
            "cache": "cache serves its elements in order from one iterator",
            "repeat": "repeat passes elements on in its consumer's thread"}.get(
        kind, f"{kind} runs in its consumer's thread")


def parallel_inputs(stage: Stage, cores: int) -> float:
    """Give how many of an interleave's inner pipelines run at once (1 for a flat_map or a sequential one)."""
    if stage.kind != "interleave" or stage.parallelism in (None, "1"):
        return 1.0
    found = cores
    for value in (stage.params.get("cycle_length"), stage.params.get("num_parallel_calls")):
        if isinstance(value, int) and value > 0:
            found = min(found, value)
    return float(max(1, found))


def lanes(stages: list[Stage], index: int, cores: int) -> tuple[float, str | None]:
    """Give the cores stage `index` may use and, when fewer than `cores`, why (module docstring)."""
    stage = stages[index]
    why = why_stage_sequential(stage)
    if why is None:
        return float(cores), None
    across = 1.0
    parent = stage.inside
    while parent is not None:
        across *= parallel_inputs(stages[parent], cores)
        parent = stages[parent].inside
    across = min(across, float(cores))
    if across >= cores:
        return float(cores), None
    return across, (why if across == 1 else f"{why}, in each of {across:g} inner pipelines at once")


def _chain_of(stages: Sequence[Link], inside: int | None) -> list[Link]:
    return [s for s in stages if s.inside == inside]


def skipped(stages: Sequence[Link], cache_filled: bool = True) -> set[int]:
    """Give the stages that get no prefix of their own (module docstring); `cache_filled=False`: a first pass, whose
    cache stores what the stages before it compute (they are measured, and the cache joins the stage before it)."""
    found: set[int] = set()
    walked = {s.inside for s in stages if s.inside is not None}
    for inside in {None, *walked}:
        chain = _chain_of(stages, inside)
        for position, stage in enumerate(chain):
            opens = stage.kind in ("interleave", "flat_map") and (stage.reads or stage.index in walked)
            if stage.kind == "cache" and not cache_filled and position > 0:
                found.add(chain[position - 1].index)
            elif opens or stage.kind == "cache":
                for earlier in chain[:position]:
                    found.add(earlier.index)
                    found |= built_by(stages, earlier.index)
            if passes_on(stage) and position > 0:
                found.add(chain[position - 1].index)
    return found


def passes_on(stage: Link) -> bool:
    """Tell whether a stage adds no work per row: a repeat, a walked take, a prefetch of batches (module docstring)."""
    return stage.kind in ("repeat", "take") or (stage.kind == "prefetch" and stage.batched)


def built_by(stages: Sequence[Link], index: int) -> set[int]:
    """Give the stages an interleave's function builds (and theirs), at any depth."""
    found, todo = set(), [index]
    while todo:
        parent = todo.pop()
        for stage in stages:
            if stage.inside == parent and stage.index not in found:
                found.add(stage.index)
                todo.append(stage.index)
    return found


def order(stages: Sequence[Link], inside: int | None = None) -> list[int]:
    """Give the stages in the order their prefixes are measured: a chain's stages in turn, an interleave's inner
    stages just before it (module docstring)."""
    found = []
    for stage in _chain_of(stages, inside):
        if any(s.inside == stage.index for s in stages):
            found += order(stages, stage.index)
        found.append(stage.index)
    return found


def measured_prefixes(stages: list[Stage], cores: int, cache_filled: bool = True) -> list[Prefix]:
    """Give a walked pipeline's prefixes to measure, in measurement order (`order`); each adds the stages since the
    one before (`cache_filled`: as `skipped`'s)."""
    return _grouped(stages, cache_filled, lambda i: (stages[i].label, f"prefix {i}", *lanes(stages, i, cores)))


def prefixes(spec: PipelineSpec) -> tuple[Prefix, ...]:
    """Give a spec's prefixes to measure, shortest first; the last is the whole pipeline."""
    names = (SOURCE, *spec.kinds)
    links = [_SpecLink(i, kind) for i, kind in enumerate(names)]

    def said(i: int) -> tuple[str, str, float | None, str | None]:
        why = why_spec_sequential(spec, names[i])
        return names[i], " > ".join(names[:i + 1]), (1.0 if why else None), why
    return tuple(_grouped(links, True, said))


class Link(Protocol):
    """What the grouping reads of a stage: where it sits and what it is."""

    index: int
    kind: str
    inside: int | None
    reads: str | None
    batched: bool


@dataclass(frozen=True)
class _SpecLink:
    """A spec's stage as the grouping reads it: one chain; its interleave opens the files the source lists. Its
    prefetch counts as one of single examples: it keeps a prefix of its own (module docstring)."""

    index: int
    kind: str
    inside: None = None
    batched: bool = False

    @property
    def reads(self) -> str | None:
        return "files" if self.kind == "interleave" else None


def _grouped(stages: Sequence[Link], cache_filled: bool,
             said: Callable[[int], tuple[str, str, float | None, str | None]]) -> list[Prefix]:
    """Give the prefixes in measurement order, each adding the stages since the one before (module docstring);
    `said(stage)`: the working stage's name, the prefix's label, its lanes and why it is sequential."""
    skip = skipped(stages, cache_filled)
    found: list[Prefix] = []
    pending: dict[int | None, list[int]] = {}  # by chain: the stages that join its next prefix
    for end in order(stages):
        chain = pending.setdefault(stages[end].inside, [])
        chain.append(end)
        if end in skip:
            continue
        adds = tuple(sorted(chain))
        chain.clear()
        working = [i for i in adds if not passes_on(stages[i])] or list(adds)
        stage = max(working)
        name, _, lanes_, why = said(stage)
        found.append(Prefix(end, adds, stage, name, said(end)[1], lanes_, why))
    return found
