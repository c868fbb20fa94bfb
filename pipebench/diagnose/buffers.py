"""The rows a diagnosis counts, and the user's large buffers: which are measured capped, what each holds in rows and
memory, and how long it takes to fill.

A buffer of the user's that holds MEASURE_CAP_ROWS rows or more is measured capped: a prefetch's or a shuffle's work
per element does not depend on its depth, and refilling a million rows before every window would cost the diagnosis
minutes per window. The figures say so (`capped`'s notes), and a rewrite is exported with the user's own sizes.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

from pipebench.pipeline.stages import Stage, Step
from pipebench.diagnose.records import Buffer, PrefixCost
from pipebench.measure.intervals import Interval
from pipebench.pipeline.rows import BATCHING, rows_tensor

#: A buffer of the user's holding at least this many rows is measured capped (module docstring). At 50,000 a pass of
#: real_tfrs_ranking_cache refilled 100,000 rows of capped shuffles, 2.5 s in the settle before every few windows.
MEASURE_CAP_ROWS = 10_000
#: A prefetch so capped is measured this many rows deep (two elements at least): full in milliseconds, so an arm
#: waiting for its next window is idle. AUTOTUNE would not do: its buffer grows, within half the RAM, behind every
#: other arm's window (a round of 1 s windows took 29 s of waiting, and one window read 0.10× of the others).
PREFETCH_MEASURE_ROWS = 1_024
#: A buffer of the user's holding at least this many rows (or elements) is named, with its memory and fill time.
NAMED_BUFFER_ROWS = 10_000
#: Elements read to estimate what a row holds in memory.
BYTES_SAMPLE_ELEMENTS = 64
#: Stages whose rows hold what the rows before them hold: what a row holds is read before them (`same_rows_from`).
SAME_ROWS = frozenset({"shuffle", "prefetch", "take", "skip", "repeat", "cache", "batch", "unbatch", "shard", "filter"})


def rows_per_element(stages: list[Stage], stage: Stage) -> int:
    """Give the rows one element at `stage` holds: the batch size of the batch before it in its chain; past an
    interleave whose function batches (the chain holds no batch after it), what an element of that function's
    pipeline holds; else 1."""
    if not stage.batched:
        return 1
    chain = [s for s in stages if s.inside == stage.inside and s.index <= stage.index]
    for s in reversed(chain):
        if s.kind in BATCHING or s.kind == "rebatch":
            size = s.params.get("batch_size")
            return size if isinstance(size, int) and size > 0 else 1
        inner = [t for t in stages if t.inside == s.index]
        if inner:  # an interleave's elements are those of the pipeline its function builds
            return rows_per_element(stages, inner[-1])
    return 1


def capped(steps: tuple[Step, ...], stages: list[Stage], whole_passes: bool = False
           ) -> tuple[tuple[Step, ...], dict[int, str]]:
    """Give the steps the measurements replay: the user's buffers of MEASURE_CAP_ROWS rows or more capped (a
    prefetch to PREFETCH_MEASURE_ROWS rows, two elements at least; a shuffle to MEASURE_CAP_ROWS rows) and every
    `take(n)` left out (an epoch of n elements would make a window mostly the pipeline's start); and how each stage so
    changed was measured. `whole_passes`: windows are whole passes, whose start is what training pays each pass, so
    only prefetches are capped (a shuffle's fill and a take are the pass)."""
    notes: dict[int, str] = {}
    found = []
    for step in steps:
        stage = stages[step.origin] if step.origin is not None else None
        size = step.args.get("buffer_size")
        if whole_passes and step.kind != "prefetch":
            found.append(step)
            continue
        if stage is not None and step.kind == "take" and isinstance(step.args.get("count"), int) \
                and step.args["count"] >= 0:
            rows = step.args["count"] * rows_per_element(stages, stage)
            notes[stage.index] = (f"measured without {stage.call}: an epoch of {rows:,} rows would make a "
                                  "window mostly the pipeline's start")
            continue
        if stage is not None and step.kind in ("prefetch", "shuffle") and isinstance(size, int):
            per = rows_per_element(stages, stage)
            if size * per >= MEASURE_CAP_ROWS:
                if step.kind == "prefetch":
                    depth = max(2, PREFETCH_MEASURE_ROWS // per)
                    step = dataclasses.replace(step, args={**step.args, "buffer_size": depth})
                    notes[stage.index] = f"measured as prefetch({depth:,}): a prefetch does the same work per " \
                                         "element whatever its depth"
                elif (cap := max(1, MEASURE_CAP_ROWS // per)) < size:
                    step = dataclasses.replace(step, args={**step.args, "buffer_size": cap})
                    notes[stage.index] = f"measured with its buffer capped at {cap:,} elements: a shuffle " \
                                         "does the same work per element whatever its buffer"
        found.append(step)
    return tuple(found), notes


def fill_rows(stages: list[Stage], upto: list[Stage], steps: tuple[Step, ...] = ()) -> int:
    """Give the rows a fresh iterator reads before the shuffle buffers among `upto` are full (as measured: the sizes
    of `steps`, capped)."""
    sizes = {s.origin: s.args.get("buffer_size") for s in steps if s.kind == "shuffle"}
    total = 0
    for stage in upto:
        if stage.kind == "shuffle":
            size = sizes.get(stage.index, stage.params["buffer_size"])
            if isinstance(size, int):
                total += size * rows_per_element(stages, stage)
    return total


def bytes_per_row(tf, dataset, batched: bool) -> float | None:
    """Give what a row of `dataset` holds in memory, from a few elements (pipebench.measure.loops.element_bytes);
    None when they cannot be read."""
    from pipebench.measure.loops import element_bytes

    rows, size = 0, 0
    try:
        for element in dataset.take(BYTES_SAMPLE_ELEMENTS if not batched else 2):
            size += element_bytes(tf, element)
            rows += int(rows_tensor(tf, element, batched))
    except (tf.errors.OpError, ValueError, TypeError):
        return None
    return size / rows if rows else None


def same_rows_from(stages: list[Stage], index: int) -> int:
    """Give the earliest stage of `index`'s chain whose rows hold what stage `index`'s rows hold (back through
    SAME_ROWS stages): a shuffle's prefix first fills the buffer to give one element, real_tfrs_ranking_cache's
    two 100,000-row shuffles 2.5 s each only to read what a row holds (2026-12-03)."""
    stage = stages[index]
    while stage.kind in SAME_ROWS:
        chain = [s for s in stages if s.inside == stage.inside and s.index < stage.index]
        if not chain:
            break
        stage = chain[-1]
    return stage.index


def large_buffers(stages: list[Stage], costs: list[PrefixCost], notes: dict[int, str],
                  per_row: Callable[[int], float | None], log: Callable[[str], None]) -> list[Buffer]:
    """Give the user's buffers of NAMED_BUFFER_ROWS rows or elements or more: what each holds, in rows and memory (`per_row` of
    the stage's prefix), and how long it takes to fill at the measured rate of the prefix before it."""
    found = []
    for stage in stages:
        size = stage.params.get("buffer_size")
        if stage.kind not in ("prefetch", "shuffle") or not isinstance(size, int):
            continue
        rows = size * rows_per_element(stages, stage)
        if rows < NAMED_BUFFER_ROWS and size < NAMED_BUFFER_ROWS:
            continue
        held = per_row(same_rows_from(stages, stage.index))
        rate = None if (before := rate_before(costs, stage.index)) is None else before.mean
        fill = rows / rate if rate else None
        measured = notes.get(stage.index, "measured as written")
        found.append(Buffer(stage.index, stage.kind, size, rows, None if held is None else rows * held / 2**20, fill,
                            measured))
        log(f"buffer: {stage.call} holds {rows:,} rows"
            + (f" (~{rows * held / 2**20:,.0f} MiB)" if held else "")
            + (f", ~{fill:,.1f} s to fill at {rate:,.0f} rows/s" if fill else "")
            + f"; {measured}")
    return found


def rate_before(costs: list[PrefixCost], index: int) -> Interval | None:
    """Give the measured rate of the longest prefix that ends before stage `index` (None: none measured)."""
    before = [c for c in costs if max(c.stages) < index]
    return before[-1].prefix_rows_per_sec if before else None


def slow_fill_sec(buffer: Buffer, costs: list[PrefixCost]) -> float:
    """Give how long `buffer` takes to fill at the low end of its rate's interval (the mean with fewer than two
    rounds; 0.0: not measured): what the second worker's plain loop's fill of it is planned at. A fresh process
    fills slower than the warm prefix was measured at: real_tda_babyweight_make_csv's 512,000-row shuffle, 14.3 s at
    its mean rate, took ~18-26 s of that worker's first round (2026-12-04/05), and its self-check's later rounds
    did not fit."""
    rate = rate_before(costs, buffer.stage)
    slow = None if rate is None else rate.low or rate.mean
    return buffer.rows / slow if slow else 0.0


def cached_at(stages: list[Stage]) -> int | None:
    """Give the outer chain's cache whose first pass and later ones differ (no repeat before it), or None."""
    for stage in [s for s in stages if s.inside is None]:
        if stage.kind == "repeat":
            return None
        if stage.kind == "cache":
            return stage.index
    return None


def main_pass(stages: list[Stage]) -> tuple[str, str] | None:
    """Give which pass of a cached pipeline training mostly sees, "first" or "later", and why, in words; None
    without such a cache. A repeat after the cache makes one first pass and later ones; none makes one pass."""
    cache = cached_at(stages)
    if cache is None:
        return None
    repeats = [s for s in stages if s.inside is None and s.index > cache and s.kind == "repeat"
               and s.params.get("count") != 1]
    if repeats:
        count = repeats[0].params.get("count")
        share = f" ({count - 1} of its {count} passes)" if isinstance(count, int) and count > 1 else ""
        return "later", (f"it repeats after its cache ({repeats[0].call}): training sees one first pass, then later "
                         f"passes{share}")
    return "first", ("it makes one pass (no repeat after its cache): a loop that calls input_fn for each epoch sees "
                     "first passes only; one that iterates the same dataset again (Keras fit, epochs=N) sees a first "
                     "pass, then later ones")


def first_pass(steps: tuple[Step, ...], stages: list[Stage]) -> tuple[Step, ...]:
    """Give the steps a first pass is measured with: the outer cache left out (every row computed, as the fill
    does; storing it costs a copy)."""
    cache = cached_at(stages)
    return tuple(s for s in steps if not (s.kind == "cache" and s.origin == cache))
