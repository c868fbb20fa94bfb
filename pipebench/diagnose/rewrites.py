"""The rewrites diagnose proposes, each only where its precondition holds (no TensorFlow here).

A rewrite is a transform of the pipeline's steps (pipebench.pipeline.stages.Step), found by the
stage a step comes from, so kept rewrites compose: the combination applies each in turn. Where its
precondition holds but pipebench cannot make it (a function it cannot vectorize, a py_function,
text parsing that a binary format would avoid), it is still named, with the share of the
pipeline's CPU it concerns. So is one that cannot act on the pipeline read alone, which is all a
diagnosis reads (a parallel interleave that only reads one file, a private thread pool): measuring
it would cost rounds and show nothing.

Restructurings a user would not find alone are proposed where their precondition holds: an in-memory source
(`from_tensor_slices` of a DataFrame's columns) shuffled and batched row by row becomes its row numbers shuffled
and batched, each batch's rows gathered at once (`gather`): ShuffleDataset draws its random choices whatever its
elements hold, so with the same seed the rows come in the same order. A pipeline make_csv_dataset made (CsvDataset
parsing one row at a time) is built by pipebench's equivalent of it, which batches lines and parses a batch at a
time (`restructured`), from the same arguments.

Never proposed: what TensorFlow already does (map_parallelization parallelises a stateless map,
inject_prefetch adds a final prefetch, parallel_batch, map_and_batch_fusion): the stage records say
so instead. Every proposal is measured before it is kept (pipebench.diagnose.worker), unless what it leaves as
it is bounds its gain below what a comparison could show (its `changes`, pipebench.diagnose.ceiling).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pipebench.pipeline.prefixes import built_by
from pipebench.pipeline.spec import AUTOTUNE
from pipebench.pipeline.stages import Stage, Step

#: A per-example map vectorised in place maps batches of this many examples, then unbatches them.
VECTOR_BATCH = 256
#: The longest a diagnosis fills a cache rewrite's epoch to measure it (a cache costs an epoch to fill).
CACHE_FILL_BUDGET_SEC = 15.0
#: A decode stage above this share of the pipeline's CPU makes parsing "dominant" (convert to a binary format).
PARSING_DOMINATES = 0.5
_PY_FUNCTIONS = {"EagerPyFunc", "PyFunc", "PyFuncStateless"}
Transform = Callable[[tuple[Step, ...]], tuple[Step, ...] | None]


@dataclass
class Proposal:
    """A proposed rewrite before it is measured."""

    name: str
    kind: str
    stage: int | None
    why: str
    change: str
    semantics: str | None
    automatic: bool
    transform: Transform | None = None
    options: dict[str, Any] = field(default_factory=dict)
    cost_share: float | None = None
    note: str | None = None  # a named rewrite's verdict
    fills_cache: bool = False  # its measurement must complete a cache first
    changes: tuple[int, ...] | None = None  # the stages whose work or threads it changes; None: any of them
    parts: tuple[str, ...] = ()  # a combination's: the kept rewrites it puts together, by name


def _index(steps: tuple[Step, ...], origin: int, kind: str | None = None, last: bool = False) -> int | None:
    found = [i for i, s in enumerate(steps) if s.origin == origin and (kind is None or s.kind == kind)]
    return (found[-1] if last else found[0]) if found else None


def _set(origin: int, kind: str, **changes: Any) -> Transform:
    """Give a transform that changes arguments of the step `kind` from stage `origin`."""
    def transform(steps: tuple[Step, ...]) -> tuple[Step, ...] | None:
        i = _index(steps, origin, kind)
        if i is None:
            return None
        return steps[:i] + (dataclasses.replace(steps[i], args={**steps[i].args, **changes}),) + steps[i + 1:]
    return transform


def _insert_after(origin: int, step: Step) -> Transform:
    def transform(steps: tuple[Step, ...]) -> tuple[Step, ...] | None:
        i = _index(steps, origin, last=True)
        return None if i is None else steps[:i + 1] + (step,) + steps[i + 1:]
    return transform


#: Stages a stateless, one-to-one map commutes with: batching first and mapping each batch after them gives the same
#: rows (a shuffle the same multiset, its draws over undecoded records).
_COMMUTES = ("shuffle", "repeat", "prefetch", "take", "skip")


def vectorize(origin: int, mechanism: str, libsvm: dict | None, batch_origin: int | None) -> Transform:
    """Give the transform that maps whole batches at stage `origin`: with `batch_origin` (the pipeline's batch,
    after only stages the map commutes with), the batch moves before the map, the stages between it and the map
    stay before the batch, and a prefetch of single examples among them gives way to one prefetch(AUTOTUNE) after
    the batched map; else batch(VECTOR_BATCH) → map → unbatch in place."""
    def transform(steps: tuple[Step, ...]) -> tuple[Step, ...] | None:
        i = _index(steps, origin, "map")
        if i is None:
            return None
        args = {**steps[i].args, **({"libsvm": libsvm} if libsvm else {})}
        mapped = dataclasses.replace(steps[i], args=args, function={"direct": "user"}.get(mechanism, mechanism))
        if batch_origin is not None:
            j = _index(steps, batch_origin, "batch")
            if j is None or j < i or any(s.kind not in _COMMUTES for s in steps[i + 1:j]):
                return None
            between = steps[i + 1:j]
            kept = tuple(s for s in between if s.kind != "prefetch")
            dropped = len(kept) < len(between)
            after = steps[j + 1:]
            tail = (Step("prefetch", {"buffer_size": AUTOTUNE}, None),) if dropped and not (
                after and after[0].kind == "prefetch") else ()
            return steps[:i] + kept + (steps[j], mapped) + tail + after
        batch = Step("batch", {"batch_size": VECTOR_BATCH, "drop_remainder": False, "num_parallel_calls": None,
                               "deterministic": None}, origin)
        return steps[:i] + (batch, mapped, Step("unbatch", {}, origin)) + steps[i + 1:]
    return transform


#: Stages between an in-memory source and its batch that only choose which rows come when, whatever they hold.
_ORDER_ONLY = ("shuffle", "repeat", "take", "skip")


def gather(batch_origin: int) -> Transform:
    """Give the transform that shuffles and batches an in-memory source's row numbers and gathers each batch's rows
    (module docstring of pipebench.diagnose.rewrites: `gather`): the source becomes range(rows), the stages up to the
    batch stay as they are, and a map gathering the rows follows the batch."""
    def transform(steps: tuple[Step, ...]) -> tuple[Step, ...] | None:
        j = _index(steps, batch_origin, "batch")
        if j is None or not steps or steps[0].kind != "source" or "rows" not in steps[0].args \
                or any(s.kind not in _ORDER_ONLY for s in steps[1:j]):
            return None
        source = dataclasses.replace(steps[0], args={"indices": steps[0].args["rows"]})
        mapped = Step("map", {"num_parallel_calls": AUTOTUNE, "deterministic": None}, None, function="gather")
        return (source, *steps[1:j + 1], mapped, *steps[j + 1:])
    return transform


def restructured(last: int, name: str) -> Transform:
    """Give the transform that builds the stages a library reader made (up to stage `last`) with pipebench's
    restructured equivalent of it, called with the same arguments (pipebench.pipeline.decoders)."""
    def transform(steps: tuple[Step, ...]) -> tuple[Step, ...] | None:
        if not steps or steps[0].kind != "source" or _index(steps, last) is None:
            return None
        return (Step("source", {"restructured": name}, last),
                *[s for s in steps if s.origin is None or s.origin > last])
    return transform


def compose(transforms: list[Transform], steps: tuple[Step, ...]) -> tuple[Step, ...] | None:
    """Give the steps after every transform in turn; None when one no longer finds what it changes."""
    for transform in transforms:
        steps = transform(steps)
        if steps is None:
            return None
    return steps


def _fn(stage: Stage) -> str:
    return stage.function.short if stage.function else stage.kind


def _batch_after(stages: list[Stage], index: int) -> int | None:
    """Give the batch stage after `index` in its chain when only stages a map commutes with lie between, else None."""
    for later in stages[index + 1:]:
        if later.inside != stages[index].inside:
            continue
        if later.kind == "batch":
            return later.index
        if later.kind not in _COMMUTES:
            return None
    return None


def _between(stages: list[Stage], index: int, batch: int) -> list[Stage]:
    return [s for s in stages[index + 1:batch] if s.inside == stages[index].inside]


def _random(stage: Stage) -> bool:
    return stage.kind == "shuffle" or bool(stage.stateful_ops)


def _inputs(outer: list[Stage], stage: Stage) -> int | None:
    """Give how many inputs (files) an outer interleave reads when its chain up to it is a file list, shuffled or
    not; None otherwise."""
    before = [s for s in outer if s.index < stage.index]
    if not before or before[0].kind != "source" or any(s.kind != "shuffle" for s in before[1:]):
        return None
    names = before[0].params.get("slices") or before[0].params.get("listed")
    return len(names) if isinstance(names, list) else None


#: the library readers that read files through the legacy parallel_interleave, and the argument that makes them use
#: interleave instead (TensorFlow's readers.py: AUTOTUNE takes the interleave branch)
LEGACY_READS = {"make_batched_features_dataset": "reader_num_threads", "make_csv_dataset": "num_parallel_reads"}


def _core_interleave(stage: Stage, outer: list[Stage], share: float | None, inner: Iterable[int]) -> Proposal:
    """Give the candidate that reads an interleave's inputs with interleave(num_parallel_calls=AUTOTUNE) in place of
    tf.data.experimental.parallel_interleave, which hands each element over between threads: a library reader's
    when its reads argument is AUTOTUNE (its cycle then AUTOTUNE too), a hand-written one's with its own cycle."""
    library = LEGACY_READS.get(stage.via or "")
    cycle = AUTOTUNE if library else stage.params["cycle_length"]
    files = _inputs(outer, stage)
    reorders = library and stage.params["cycle_length"] == 1 and (files is None or files > 1)
    fn = stage.function.name if stage.function else "its function"
    return Proposal(
        "interleave in place of parallel_interleave", "core_interleave", stage.index,
        "tf.data.experimental.parallel_interleave hands every element over from its reader threads one at a time",
        f"{stage.via}(..., {library}=tf.data.AUTOTUNE): it reads through interleave" if library else
        f"interleave({fn}, cycle_length={stage.params['cycle_length']}, num_parallel_calls=tf.data.AUTOTUNE"
        + (", deterministic=False)" if stage.params["sloppy"] else ")"),
        "order: records of several files come interleaved, not file after file" if reorders else None, True,
        _set(stage.index, "interleave", sloppy=None, buffer_output_elements=None, prefetch_input_elements=None,
             cycle_length=cycle, num_parallel_calls=AUTOTUNE, deterministic=False if stage.params["sloppy"] else None),
        cost_share=share, changes=(stage.index, *sorted(inner)))


def cache_point(stages: list[Stage]) -> int | None:
    """Give the highest stage of the outer chain a cache may follow: everything up to it finite, stateless and in
    order; None if none."""
    point = None
    for stage in [s for s in stages if s.inside is None][1:]:
        if _random(stage) or stage.kind in ("repeat", "cache", "take", "skip", "other", "shard"):
            break
        point = stage.index
    return point


@dataclass(frozen=True)
class PipelineFacts:
    """What every rule reads: the walked pipeline and what was measured of it (propose's arguments)."""

    stages: list[Stage]
    replayable: bool
    options: dict[str, Any]
    shares: dict[int, float]
    bottleneck: int
    batched: dict[int, Any]
    cache_bytes: float | None
    memory_budget_bytes: float
    parallel_stages: bool
    cache_fill_sec: float | None
    library: dict[int, tuple[str, dict]]

    @property
    def outer(self) -> list[Stage]:
        return [s for s in self.stages if s.inside is None]


def _vectorize(p: PipelineFacts, stage: Stage) -> Iterable[Proposal]:
    """A per-example, stateless map with a batched equivalent (pipebench.diagnose.vectorize): batch first."""
    if stage.kind != "map" or stage.index not in p.batched:
        return
    fn, share, result = _fn(stage), p.shares.get(stage.index), p.batched[stage.index]
    if stage.inside is not None:  # built by an interleave's function: named with its cost, changed by hand
        if result.mechanism:
            yield Proposal(f"vectorize {fn}", "vectorize", stage.index,
                           f"{fn} maps one example at a time inside {p.stages[stage.inside].call} and is "
                           f"stateless; {result.why}", "batch before it in that function, then map each batch", None,
                           False, cost_share=share, note="it runs inside the interleave's function, which "
                           "pipebench calls as it is: batch before it there")
        return
    if not (result.mechanism and p.replayable):
        yield Proposal(f"vectorize {fn}", "vectorize", stage.index, f"{fn} maps one example at a time and is stateless",
                       "write it to take a whole batch and map it after batch()", None, False, cost_share=share,
                       note=f"no batched equivalent found ({result.why}); rewrite it by hand to take a batch")
        return
    batch_origin = _batch_after(p.stages, stage.index)
    how = {"direct": f"{fn} itself takes a batch", "vectorized_map": f"tf.vectorized_map({fn}) over a batch",
           "parse_example": f"{fn} parsing the whole batch (parse_single_example as parse_example)",
           "libsvm": "pipebench's batched libsvm decoder in its place"}[result.mechanism]
    between = _between(p.stages, stage.index, batch_origin) if batch_origin is not None else []
    crossed = [s.call for s in between if s.kind != "prefetch"]
    dropped = [s.call for s in between if s.kind == "prefetch"]
    where = ("batch first, then map it over each batch" + (f" (the batch moves before {', '.join(crossed)})"
                                                          if crossed else "")
             + (f"; {', '.join(dropped)} of single examples gives way to prefetch(tf.data.AUTOTUNE) after "
                "the batched map" if dropped else "")
             if batch_origin is not None else f"batch({VECTOR_BATCH}) → map → unbatch() in its place")
    shuffles = [s for s in between if s.kind == "shuffle"]
    semantics = (f"order: {shuffles[0].call} now shuffles the records {fn} reads, not what it makes of "
                 "them: the same rows, in other draws" if shuffles else None)
    yield Proposal(f"vectorize {fn}", "vectorize", stage.index,
                   f"{fn} maps one example at a time and "
                   + ("is stateless" if not stage.stateful_ops else "decodes libsvm lines, which "
                      "pipebench's decoder decodes alike") + f"; {result.why}",
                   f"{where}: {how}", semantics, True,
                   vectorize(stage.index, result.mechanism, result.libsvm, batch_origin),
                   changes=tuple(range(stage.index, (batch_origin or stage.index) + 1)))


def _parallel_map(p: PipelineFacts, stage: Stage) -> Iterable[Proposal]:
    """A map TensorFlow leaves sequential (stateful ops, or map_parallelization off); a py_function is named."""
    if stage.inside is not None or stage.kind != "map" or stage.parallelism is not None or not (
            stage.stateful_ops or any("map_parallelization is off" in said for said in stage.tf_does)):
        return
    fn, share = _fn(stage), p.shares.get(stage.index)
    py = sorted(_PY_FUNCTIONS & set(stage.stateful_ops or ()))
    semantics = None
    if stage.stateful_ops:
        semantics = (f"random draws: its stateful ops ({', '.join(stage.stateful_ops)}) run for several "
                     "elements at once, so which element gets which draw changes from run to run, seeds "
                     "or not (tensorflow#13932)")
    yield Proposal(f"parallel map {fn}", "parallel_map", stage.index,
                   "TensorFlow leaves it sequential: " + "; ".join(stage.tf_does),
                   f"map({fn}, num_parallel_calls=tf.data.AUTOTUNE)", semantics, p.replayable,
                   _set(stage.index, "map", num_parallel_calls=AUTOTUNE) if p.replayable else None,
                   cost_share=share, note=None if p.replayable else "the pipeline cannot be replayed",
                   changes=(stage.index,))
    if py:
        yield Proposal(f"rewrite {fn} in TF ops", "py_function", stage.index,
                       f"{fn} calls Python through {', '.join(py)}, which holds the GIL",
                       "rewrite the Python part in TensorFlow ops", None, False, cost_share=share,
                       note="py_function holds the GIL: it runs one call at a time however many threads call it")


def _parallel_interleave(p: PipelineFacts, stage: Stage) -> Iterable[Proposal]:
    """A sequential interleave: its cycle read in parallel (named, not measured, when it has one file to read)."""
    if stage.inside is not None or stage.kind != "interleave" or stage.parallelism is not None or not p.replayable:
        return
    inner = [s.kind for s in p.stages if s.inside == stage.index]
    single = _inputs(p.outer, stage) == 1 and set(inner) <= {"source", "skip", "take"}
    yield Proposal(f"parallel interleave {_fn(stage)}", "parallel_interleave", stage.index,
                   "its cycle is opened and read one input at a time",
                   "interleave(..., num_parallel_calls=tf.data.AUTOTUNE): same cycle, same order",
                   None, not single, None if single else _set(stage.index, "interleave", num_parallel_calls=AUTOTUNE),
                   cost_share=p.shares.get(stage.index), note="not measured: it reads one file here and its function "
                   "only reads it, so there is nothing to run in parallel (with several files there would be)"
                   if single else None, changes=(stage.index, *sorted(built_by(p.stages, stage.index))))


def _legacy_interleave(p: PipelineFacts, stage: Stage) -> Iterable[Proposal]:
    """The legacy parallel_interleave: read through interleave (_core_interleave)."""
    if stage.inside is None and stage.kind == "interleave" and stage.params.get("sloppy") is not None \
            and p.replayable:
        yield _core_interleave(stage, p.outer, p.shares.get(stage.index), built_by(p.stages, stage.index))


def _parallel_reads(p: PipelineFacts, stage: Stage) -> Iterable[Proposal]:
    """A text or TFRecord reader reading several files one after another."""
    if stage.inside is None and stage.kind == "source" \
            and stage.params.get("reader") in ("TextLineDataset", "TFRecordDataset") \
            and stage.params.get("num_parallel_reads") is None and len(stage.params.get("files") or ()) > 1 \
            and p.replayable:
        yield Proposal("parallel reads", "parallel_reads", stage.index,
                       f"{stage.params['reader']} reads its {len(stage.params['files'])} files one after "
                       "another", f"{stage.params['reader']}(files, num_parallel_reads=tf.data.AUTOTUNE)",
                       "order: records of several files come interleaved, not file after file", True,
                       _set(stage.index, "source", num_parallel_reads=AUTOTUNE), cost_share=p.shares.get(stage.index),
                       changes=(stage.index,))


def _csv_by_batch(p: PipelineFacts) -> Iterable[Proposal]:
    """make_csv_dataset's per-row CsvDataset: lines batched, then one decode_csv per batch (restructured)."""
    for last, (name, kwargs) in p.library.items():
        made = [s for s in p.outer if s.index <= last]
        if name != "make_csv_dataset" or not p.replayable or not all(s.via == name for s in made):
            continue
        parse = [s.index for s in p.stages if s.kind == "source" and s.params.get("reader") == "CsvDataset"]
        yield Proposal(
            "parse CSV a batch at a time", "restructure", last,
            f"make_csv_dataset parses each row alone (CsvDataset, {sum(p.shares.get(i, 0) for i in parse):.0%} of the "
            "pipeline's CPU where measured), then batches the parsed rows",
            "make_csv_dataset → pipebench_make_csv_dataset (the same arguments): each file's lines read, "
            "shuffled, repeated and batched as before, then one decode_csv parses the batch",
            "a line that fails to parse fails its batch (ignore_errors=True dropped that row alone)"
            if kwargs.get("ignore_errors") else None, True, restructured(last, name),
            changes=tuple(s.index for s in p.stages if s.index <= last or s.inside is not None), note=None)


def _gather(p: PipelineFacts) -> Iterable[Proposal]:
    """An in-memory source shuffled and batched row by row: its row numbers batched, each batch gathered."""
    source = p.outer[0] if p.outer else None
    if source is None or "rows" not in source.params or not p.replayable:
        return
    batch = next((s for s in p.outer[1:] if s.kind not in _ORDER_ONLY), None)
    if batch is None or batch.kind != "batch":
        return
    between = [s.call for s in p.outer[1:] if s.index < batch.index]
    yield Proposal(
        "gather rows by batch", "gather", source.index,
        f"an in-memory source of {source.params['rows']:,} rows is sliced one row at a time"
        + (f" and {', '.join(between)} moves single rows" if between else "") + " before the batch",
        f"{' → '.join(['range(rows)', *between, batch.call.lstrip('.'), 'map(gather each batch of row numbers)'])}"
        ": the same rows in the same order (a shuffle draws alike whatever it holds: with the same seed, the "
        "same order)", None, True, gather(batch.index),
        changes=tuple(s.index for s in p.outer if s.index <= batch.index))


def _prefetch(p: PipelineFacts) -> Iterable[Proposal]:
    """A sequential bottleneck that shares its thread with the stages after it: a prefetch after it."""
    neck = p.stages[p.bottleneck]
    after = p.stages[p.bottleneck + 1] if p.bottleneck + 1 < len(p.stages) else None
    if p.replayable and after is not None and after.kind != "prefetch" and neck.parallelism is None \
            and neck.kind not in ("prefetch", "repeat") and neck.inside is None and after.inside is None:
        yield Proposal(f"prefetch after {neck.label}", "prefetch", neck.index,
                       f"{neck.label} is the bottleneck and runs in the thread of the stages after it",
                       f"insert prefetch(tf.data.AUTOTUNE) after {neck.call}", None, True,
                       _insert_after(neck.index, Step("prefetch", {"buffer_size": AUTOTUNE}, None)),
                       changes=(neck.index + 1,))


def _cache(p: PipelineFacts) -> Iterable[Proposal]:
    """A cache after the last finite, stateless, in-order stage: measured only when it fits and fills in time."""
    point = cache_point(p.outer)
    later = [s for s in p.outer if point is not None and s.index > point]
    if point is None or (later and later[0].kind == "cache"):
        return
    repeats = [s for s in later if s.kind == "repeat" and (s.params["count"] is None or s.params["count"] > 1)]
    where = p.stages[point]
    text, change = f"cache after {where.label}", f"insert cache() after {where.call}"
    why = f"stages up to {where.call} are finite, stateless and in order (no shuffle or random op above it)"
    cache_bytes, budget = p.cache_bytes, p.memory_budget_bytes
    if not repeats:
        yield Proposal(text, "cache", point, why, change, None, False,
                       note="this input_fn makes one pass (no repeat): a cache serves only epochs after "
                            "the first, so it helps only when training iterates the dataset again")
    elif cache_bytes is None or cache_bytes > budget:
        yield Proposal(text, "cache", point, why, change, None, False,
                       note=("its size is unknown" if cache_bytes is None else
                             f"it would hold ~{cache_bytes / 2**30:.1f} GiB, more than the memory "
                             f"budget {budget / 2**30:.1f} GiB"))
    elif p.cache_fill_sec is not None and p.cache_fill_sec > CACHE_FILL_BUDGET_SEC:
        yield Proposal(text, "cache", point, why, change, None, False,
                       note=f"filling it (an epoch, ~{cache_bytes / 2**20:,.0f} MiB) would take "
                            f"~{p.cache_fill_sec:,.0f} s at the rate measured, more than a diagnosis "
                            f"spends on one rewrite ({CACHE_FILL_BUDGET_SEC:.0f} s): not measured")
    elif p.replayable:
        yield Proposal(text, "cache", point, f"{why}; it holds ~{cache_bytes / 2**20:,.0f} MiB", change, None, True,
                       _insert_after(point, Step("cache", {"filename": ""}, None)), fills_cache=True,
                       changes=tuple(i for s in p.outer if s.index <= point
                                     for i in (s.index, *sorted(built_by(p.stages, s.index)))))


def cache_covering(kept: list[Proposal]) -> Proposal | None:
    """Give the kept cache rewrite that every other kept one only changes stages before (no options either), or None:
    after its first pass the cache skips their work, so the combination reads what the cache alone reads and is not
    measured (real_tft_sentiment_varlen_tf1: both 16.6×, the cache 16.7×, at the cost of a second fill and three
    rounds, 15 s, 2026-12-03)."""
    for cache in [c for c in kept if c.kind == "cache" and c.changes]:
        others = [c for c in kept if c is not cache]
        if others and all(c.changes is not None and not c.options and set(c.changes) <= set(cache.changes)
                          for c in others):
            return cache
    return None


def _options(p: PipelineFacts) -> Iterable[Proposal]:
    """Parallel stages: deterministic=False (measured), a private thread pool (named: the pipeline alone cannot
    show it)."""
    if not p.parallel_stages:
        return
    if p.options.get("deterministic") is not False:
        yield Proposal("options: deterministic=False", "options", None,
                       "parallel stages keep their input order, so one slow element holds back the rest",
                       "options.deterministic = False",
                       "order: parallel stages hand on elements as they finish, not in input order", True,
                       options={"deterministic": False})
    if "threading.private_threadpool_size" not in p.options:
        from pipebench.pinning import usable_cpus

        cores = len(usable_cpus())
        yield Proposal(f"options: private thread pool of {cores}", "options", None,
                       "tf.data's parallel stages share TensorFlow's inter-op pool with everything else",
                       f"options.threading.private_threadpool_size = {cores}", None, False,
                       options={"threading.private_threadpool_size": cores},
                       note="not measured: it acts only beside the training step's own ops; the "
                            "pipeline read alone leaves TensorFlow's inter-op pool to tf.data, so a "
                            "comparison of the pipeline alone cannot show it")


def _convert(p: PipelineFacts) -> Iterable[Proposal]:
    """Text parsing that dominates the pipeline's CPU: a binary format (named, made by `pipebench convert`)."""
    if p.stages[0].params.get("reader") != "TextLineDataset":
        return
    parse = [s for s in p.stages if s.kind == "map" and p.shares.get(s.index, 0) >= PARSING_DOMINATES]
    if parse:
        yield Proposal("convert to TFRecord", "convert", parse[0].index,
                       f"parsing text ({_fn(parse[0])}) takes {p.shares[parse[0].index]:.0%} of the "
                       "pipeline's CPU", "pipebench convert FILES --out DIR (TFRecord), then "
                       "TFRecordDataset → batch → map(parse_example)", None, False,
                       cost_share=p.shares[parse[0].index],
                       note="a binary format parses without splitting text; `pipebench convert` writes it once")


#: The rules each stage is read by, in order, and then the rules of the whole pipeline: the proposals come in this
#: order (stage by stage, then the pipeline's), which is the order they are measured and listed in.
STAGE_RULES: tuple[Callable[[PipelineFacts, Stage], Iterable[Proposal]], ...] = (
    _vectorize, _parallel_map, _parallel_interleave, _legacy_interleave, _parallel_reads)
RULES: tuple[Callable[[PipelineFacts], Iterable[Proposal]], ...] = (
    _csv_by_batch, _gather, _prefetch, _cache, _options, _convert)


def propose(stages: list[Stage], replayable: bool, options: dict[str, Any], shares: dict[int, float],
            bottleneck: int, batched: dict[int, Any], cache_bytes: float | None, memory_budget_bytes: float,
            parallel_stages: bool, cache_fill_sec: float | None = None,
            library: dict[int, tuple[str, dict]] | None = None) -> list[Proposal]:
    """Give the rewrites whose preconditions hold (module docstring; STAGE_RULES, then RULES).

    `library`: the library readers the user's function called (their names and keyword arguments), by the index of
    the last stage each made.

    `shares`: each stage's share of the pipeline's CPU (0 for one that joined another's prefix);
    `batched`: for each per-example, stateless map, what pipebench.diagnose.vectorize found;
    `cache_bytes`: what a cache at `cache_point` would hold (None: unknown); `cache_fill_sec`: how long an epoch
    of it takes to fill at the rate measured (None: unknown).
    """
    pipeline = PipelineFacts(stages, replayable, options, shares, bottleneck, batched, cache_bytes, memory_budget_bytes,
                        parallel_stages, cache_fill_sec, library or {})
    found = [c for stage in stages for rule in STAGE_RULES for c in rule(pipeline, stage)]
    found += [c for rule in RULES for c in rule(pipeline)]
    names = [c.name for c in found]  # a name is a rewrite's key (its arm, its gain): two stages' are told apart
    return [dataclasses.replace(c, name=f"{c.name} (stage {c.stage})") if names.count(c.name) > 1 else c
            for c in found]
