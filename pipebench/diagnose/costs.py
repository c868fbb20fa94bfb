"""Which prefixes of a user's pipeline are measured, and how many cores each stage may use (no TensorFlow here).

A stage's cost is what its prefix's CPU per row adds to the costliest prefix measured before it
(pipebench.capacity's prefix method). The list of stages is flat: an interleave's inner stages follow it
(pipebench.diagnose.walk). An inner stage's prefix is the pipeline the interleave's function built for one element,
up to that stage, measured on its own: through the interleave, a prefix that stops inside the function would pass
every line across it one by one, which the whole pipeline never does (it passes batches), and the interleave's
per-element cost would be the inner source's. So an interleave's inner stages are measured first, then the outer
chain through the interleave, whose own cost is what interleaving adds. Some stages get no prefix of their own
and join a neighbour's, chain by chain (the outer chain, each inner one):

- before an interleave or flat_map that reads files, the chain yields file names (or shard numbers), not rows:
  those stages join the interleave's prefix;
- before a cache, stages do no work once it is full: they join the cache's prefix;
- `repeat` does nothing per row: the stage before it is measured with it (a finite prefix would run out).

Lanes: a stage may use one core (it runs in one thread: why_sequential says why) or all of them; a stage of a
pipeline an interleave builds per element runs in each of the interleave's parallel inner pipelines, so a
sequential one there may use up to the interleave's parallelism (its cycle length, at most the cores).
"""
from __future__ import annotations

from dataclasses import dataclass

from pipebench.diagnose.records import Stage


@dataclass(frozen=True)
class Prefix:
    """A prefix to measure: the stages up to `end` (a flat index), and the stages it adds to the one before."""

    end: int
    adds: tuple[int, ...]
    stage: int  # the one of `adds` that does the work (not a repeat): the stage its cost is named for
    lanes: float  # the cores that stage may use
    why_sequential: str | None  # why it is held to fewer cores than the machine has, or None

    @property
    def sequential(self) -> bool:
        return self.why_sequential is not None


def why_sequential(stage: Stage) -> str | None:
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
    why = why_sequential(stage)
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


def _chain_of(stages: list[Stage], inside: int | None) -> list[Stage]:
    return [s for s in stages if s.inside == inside]


def skipped(stages: list[Stage], cache_filled: bool = True) -> set[int]:
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
            if stage.kind == "repeat" and position > 0:
                found.add(chain[position - 1].index)
    return found


def built_by(stages: list[Stage], index: int) -> set[int]:
    """Give the stages an interleave's function builds (and theirs), at any depth."""
    found, todo = set(), [index]
    while todo:
        parent = todo.pop()
        for stage in stages:
            if stage.inside == parent and stage.index not in found:
                found.add(stage.index)
                todo.append(stage.index)
    return found


def order(stages: list[Stage], inside: int | None = None) -> list[int]:
    """Give the stages in the order their prefixes are measured: a chain's stages in turn, an interleave's inner
    stages just before it (module docstring)."""
    found = []
    for stage in _chain_of(stages, inside):
        if any(s.inside == stage.index for s in stages):
            found += order(stages, stage.index)
        found.append(stage.index)
    return found


def measured_prefixes(stages: list[Stage], cores: int, cache_filled: bool = True) -> list[Prefix]:
    """Give the prefixes to measure, in measurement order (`order`); each adds the stages since the one before
    (`cache_filled`: as `skipped`'s)."""
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
        working = [i for i in adds if stages[i].kind != "repeat"] or list(adds)
        stage = max(working)
        cores_it_may_use, why = lanes(stages, stage, cores)
        found.append(Prefix(end, adds, stage, cores_it_may_use, why))
    return found
