"""The self-check in every diagnosis: a plain loop over the user's own function, timed beside the whole pipeline.

`for element in input_fn(...)`, in Python, rows counted as a plain loop counts them (the label's leading dimension,
pipebench.pipeline.rows.plain_rows): nothing of pipebench's walk, replay, capped buffers or rows rule is in it. Its
windows are paired with the whole pipeline's as the diagnosis measures it, in the second worker process's rounds
(after its warm-up, as the diagnosis's own arms are). When the two disagree by more than AGREE_WITHIN either way, the
summary says so first: a unit error (a batch counted as one row), a replay that builds another pipeline or a
cache replay reported for a one-pass pipeline can then never pass silently, on any code.

A Python loop pays for each element itself (each component becomes an eager tensor), which the diagnosis's arms (a
loop inside a tf.function, as Keras' fit runs) do not: an element of 28 components at ~900 elements/s cost the
plain loop ~40% of the rate (NVIDIA's split-TFRecords reader, 2026-12-02). So the loop's own cost per element is
read too, over one of its elements repeated from memory: run one after the other (no overlap of the pipeline's
threads with the loop's), that cost leaves `expected` = 1 / (1 + cost × elements/s) of the whole pipeline's rate,
and the plain loop agrees when it is shown equivalent within the band `expected` / AGREE_WITHIN .. AGREE_WITHIN (two
one-sided tests at 5%, Schuirmann's, as bioequivalence is judged: its ratio's EQUIVALENCE_CONFIDENCE interval lies in
the band), and disagrees when its 95% interval lies wholly outside; otherwise it is "inconclusive" (the noise cannot
decide, as any comparison here). A unit error is off by a batch size, far beyond. A pipeline with two speeds (it
read faster with idle cores kept awake, pipebench.measure.awake) may be read at either by a plain loop, whose pace
decides which (a Python loop's keeps a core busier): the band is widened by the factor between them, `spread`, either
way. A pipeline may switch speeds with no help from idle cores, too: tf1_tensors' (TextLine → map → batch) read
75-95k rows/s in most half-second windows and 37-40k in episodes of 2-6 s, with pipebench nowhere near it and its
idle cores kept awake (benchmarks/records/diagnose_tf1_tensors_modes_2026-12-05.md); paired over such episodes its
self-check read 1.35× (1.07-1.71×), inconclusive, though its plain loop read within its own speeds. So the band is
widened, too, by what the whole pipeline's own windows in the self-check's rounds show, `window_spread`
(pipebench.measure.stats.halves_ratio): the factor between the faster and the slower half of them (the larger of the
two spreads is taken; over the corpus at d8d0d09, 1.00-1.78×, median 1.2×: the band ran to 1.5-2.7×). A unit error
(a batch size, 32-1024×) and a cache replay reported for a one-pass pipeline (36× in the issue that asked for this
check) lie far beyond either; a 2× error on a pipeline that unsteady may agree. The benchmark's own plain loop
(benchmarks/diagnose.py) is judged by the band of the two speeds alone.

The loop re-iterates the dataset the function returned at the end of each pass, as Keras' fit does; a pipeline
whose first pass differs from the later ones (a cache, diagnosed on its first pass) is called again for each pass,
as a loop over `input_fn()` per epoch does. No TensorFlow import here: it is handed in.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from pipebench.diagnose.records import SelfCheck
from pipebench.measure.intervals import Interval, geometric_interval
from pipebench.measure.rounds import gain
from pipebench.measure.stats import halves_ratio
from pipebench.measure.windows import Arm

#: The plain loop and the diagnosis agree when the ratio of their rates lies within this factor of 1, either way.
AGREE_WITHIN = 1.5
NAME = "plain loop"
#: "Agrees" is an equivalence test (module docstring): two one-sided tests at 5% each are this interval within the
#: band. At 95% instead (2.5% a side), real_tfrs_ranking_cache's three rounds of whole passes, 0.89, 1.04 and 1.21×,
#: the most its time budget holds, gave 1.04× (0.73–1.50×): undecided, though every round lay inside (2026-12-04).
EQUIVALENCE_CONFIDENCE = 0.90
#: The loop's own cost per element is read over this long (module docstring).
LOOP_COST_SEC = 0.5
#: The plain loop starts a fresh iterator each window when its shuffle buffers fill in this long at most (`releases`).
FRESH_FILL_SEC = 2.0
#: While undecided, the self-check takes up to this many rounds past the diagnosis's: a Python loop beside a
#: pipeline's own threads can spread widely from window to window (real_bert_pretraining_interleave's 128 parallel
#: map calls on 2 vCPUs: 21k-66k rows/s over half-second windows, iterator kept or fresh, 2026-12-03), and five
#: pairs left its ratio's interval across the band's bound.
MORE_ROUNDS = 3


def plain_arm(tf, make_dataset: Callable[[], Any], fresh_per_pass: bool, cpu_clock: Callable[[], float],
              seen: dict[str, Any], releasable: bool = False) -> Arm:
    """Give the plain loop's arm: `make_dataset()` calls the user's function (once, or once a pass); the last
    element it read is left in `seen["element"]`. `releasable`: it starts a fresh iterator each window
    (`releases`)."""
    from pipebench.pipeline.rows import plain_rows

    def loop(iterator, steps: int) -> tuple[int, float]:
        rows = 0
        for _ in range(steps):
            element = next(iterator, None)
            if element is None:
                break
            rows += plain_rows(tf, element)
            seen["element"] = element
        return rows, 0.0

    if fresh_per_pass:
        return Arm(NAME, lambda: iter(make_dataset()), loop, releasable=False, cpu_clock=cpu_clock, start=False)
    dataset = make_dataset()
    return Arm(NAME, lambda: iter(dataset), loop, releasable=releasable, cpu_clock=cpu_clock, start=False)


def releases(cached: bool, fill_rows: int, rows_per_sec: float) -> bool:
    """Tell whether the plain loop starts a fresh iterator each window: unless that would lose a cache or refill
    shuffle buffers for more than FRESH_FILL_SEC. Kept, the user's own buffers (not capped, as the diagnosis's arms'
    are) refill behind every other arm's window: real_longmao_generator_criteo's prefetch(256) of 256-row batches
    banks 65,536 rows, 13 s of its Python generator; its plain loop then read 1.86-8.70× of the pipeline in one
    worker (2026-12-02), which a loop of its own reads at 1.0×."""
    return not cached and fill_rows <= FRESH_FILL_SEC * rows_per_sec


def how(fresh_per_pass: bool) -> str:
    return ("a Python loop over what your function returns, called again for each pass" if fresh_per_pass else
            "a Python loop over the dataset your function returns, iterated again at the end of each pass")


def loop_cost(tf, element: Any) -> float:
    """Give a Python loop's own seconds per element over elements like `element` (it, repeated from memory)."""
    from pipebench.pipeline.rows import plain_rows

    iterator = iter(tf.data.Dataset.from_tensors(element).repeat())
    for _ in range(10):
        plain_rows(tf, next(iterator))
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < LOOP_COST_SEC:
        plain_rows(tf, next(iterator))
        count += 1
    return (time.perf_counter() - start) / count


def expected_ratio(cost_sec: float, rows_per_element: int, whole_rows_per_sec: float) -> float:
    """Give the plain loop's rate over the whole pipeline's that the loop's own cost per element leaves."""
    return 1 / (1 + cost_sec * whole_rows_per_sec / max(1, rows_per_element))


def band(expected: float, spread: float = 1.0) -> tuple[float, float]:
    """Give the ratios of a plain loop's rate over the whole pipeline's that agree with it (`spread`: the factor
    between the pipeline's two speeds, pipebench.measure.awake.spread)."""
    return expected / (AGREE_WITHIN * spread), AGREE_WITHIN * spread


def verdict(ratio: Interval, expected: float, equivalence: Interval, spread: float = 1.0) -> bool | None:
    """Agrees (True) when the ratio's EQUIVALENCE_CONFIDENCE interval (`equivalence`) lies in the band, disagrees
    (False) when its 95% interval (`ratio`) lies wholly outside it, None (inconclusive) otherwise."""
    low, high = band(expected, spread)
    if not ratio.decided or not equivalence.decided:
        return None
    if low <= equivalence.low and equivalence.high <= high:
        return True
    if ratio.high < low or ratio.low > high:
        return False
    return None


def check(pairs: list, cost_sec: float, rows_per_element: int, whole_rows_per_sec: float,
          fresh_per_pass: bool, spread: float = 1.0) -> SelfCheck:
    """Give the self-check from the plain loop's (whole pipeline window, plain loop window) pairs, judged against what
    the loop's own cost per element leaves and the pipeline's two speeds, `spread` apart, or its own windows'
    spread, whichever is larger (module docstring)."""
    rate = geometric_interval([w.examples / w.seconds for _, w in pairs if w.seconds > 0])
    expected = expected_ratio(cost_sec, rows_per_element, whole_rows_per_sec)
    ratio, equivalence = gain(pairs), gain(pairs, EQUIVALENCE_CONFIDENCE)
    own = halves_ratio([whole.examples / whole.seconds for whole, _ in pairs if whole.seconds > 0])
    return SelfCheck(rate, ratio, verdict(ratio, expected, equivalence, max(spread, own)), how(fresh_per_pass),
                     cost_sec * 1e6, expected, equivalence, spread, own)


def disagreement(found: SelfCheck | None, rows_per_sec: Interval | None) -> str | None:
    """Give the line the summary opens with when the diagnosis and a plain loop of the user's function disagree."""
    if found is None or found.agrees is not False:
        return None
    reported = "" if rows_per_sec is None else f" (diagnose: {rows_per_sec.text(',.0f')} rows/s)"
    return (f"the diagnosis disagrees with a plain loop of your function: {found.plain_rows_per_sec.text(',.0f')} "
            f"rows/s{reported}, {found.ratio.text('.2f', unit='×')} of the whole pipeline as diagnosed, paired "
            f"window by window ({found.how}; its own cost, {found.loop_us_per_element:,.0f} µs an element, leaves "
            f"{found.expected:.2f}×); read its figures with care")
