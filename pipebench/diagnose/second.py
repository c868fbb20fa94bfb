"""The second worker process of a diagnosis: what one process cannot say about the processes a user will run.

A process has its own speed. On an idle 2-vCPU machine (2026-11-29) `real_deepctr_tfrecord_tf1`'s parse map cost 17
CPU-µs per row in one diagnosis and 31 in another, and a prefetch kept at 1.15× (1.01–1.32×) in one worker,
confirmed in fresh rounds of that worker, gave 1.03× (0.98–1.08×) in a fresh process. Rounds of one worker give
intervals that cannot hold that spread. So after the first worker (the stages, the bottleneck, every rewrite, the
profiler) a second one loads the function again and measures, side by side in paired rounds, the original and every
rewrite the first kept, with their combination (instead of the first's fresh rounds and its combination's
measurement; not a cache's, whose measuring fills it first: the first process confirms those): a rewrite stays
kept only if the second process's interval lies above 1 too and its gain is SMALLEST_OFFERED at least, and its
gain, kept or not, is the second's (the first rounds chose it among several: their figure is the winner's). The
whole pipeline's rate is given over both processes. The train terms are measured there, on the rewrite kept after
it. No TensorFlow here.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

from pipebench.diagnose.records import Diagnosis, Machine, Rewrite, Train
from pipebench.measure.intervals import Interval

#: The smallest gain offered, its interval above 1 too (asv compare's default factor): a smaller one is inside the
#: spread between processes. On 2026-11-29 a prefetch after batch read 1.09× (1.01–1.17×) in both worker processes
#: and 1.04× (1.00–1.09×) over 15 rounds of the exported module beside the user's function.
SMALLEST_OFFERED = 1.10


def confirmed_there(kind: str) -> bool:
    """Tell whether a kept rewrite of `kind` is confirmed in the second process (a cache is not: its measuring fills
    it first, which the first process does)."""
    return kind != "cache"


def to_confirm(first: Diagnosis) -> list[Rewrite]:
    """Give the first process's kept rewrites the second measures: every one but a cache, and the combination
    unless it holds one."""
    caches = {r.name for r in first.rewrites if r.kind == "cache"}
    combined = first.combined
    return [r for r in first.rewrites if r.kept and confirmed_there(r.kind)] + (
        [combined] if combined is not None and combined.kept and not caches & set(combined.parts) else [])


def rate_over(processes: Sequence[Interval]) -> Interval:
    """Give the whole pipeline's rows/s over worker processes: the geometric mean of their means, from the lowest of
    their lows to the highest of their highs (it errs wide: two processes give no interval of their own)."""
    mean = math.exp(sum(math.log(p.mean) for p in processes) / len(processes))
    if not all(p.decided for p in processes):
        return Interval(mean, None, None, sum(p.n for p in processes))
    return Interval(mean, min(p.low for p in processes), max(p.high for p in processes), sum(p.n for p in processes))


def _confirmed(rewrite: Rewrite, again: Interval) -> Rewrite:
    first = "not measured" if rewrite.gain is None else rewrite.gain.text(".2f", unit="×")
    if again.decided and again.low > 1.0 and again.mean >= SMALLEST_OFFERED:
        return dataclasses.replace(rewrite, gain=again, verdict=f"kept: {again.text('.2f', unit='×')} faster in a "
                                   f"second worker process (in the first: {first})")
    if again.decided and again.low > 1.0:
        return dataclasses.replace(rewrite, kept=False, gain=again, verdict=f"not kept: {again.text('.2f', unit='×')} "
                                   f"in a second worker process (in the first: {first}): under "
                                   f"{SMALLEST_OFFERED:.2f}×, inside the spread between processes")
    return dataclasses.replace(rewrite, kept=False, gain=again, verdict=f"not kept: {first} in one worker process, "
                               f"not confirmed in a second: {again.text('.2f', unit='×')}")


def settled(first: Diagnosis, gains: Mapping[str, Interval]) -> tuple[tuple[Rewrite, ...], Rewrite | None]:
    """Give the rewrites and the combination with the second process's gains (`gains`, by name): each confirmed or
    dropped, a combination with a dropped part dropped."""
    rewrites = tuple(_confirmed(r, gains[r.name]) if r.name in gains else r for r in first.rewrites)
    dropped = [r.name for r in rewrites if r.name in gains and not r.kept]
    combined = first.combined
    if combined is not None and combined.kept and any(part in dropped for part in combined.parts):
        combined = dataclasses.replace(combined, kept=False, verdict="not kept: its part "
                                       f"{', '.join(p for p in combined.parts if p in dropped)} was not confirmed in "
                                       "a second worker process")
    elif combined is not None and combined.name in gains:
        combined = _confirmed(combined, gains[combined.name])
    return rewrites, combined


def settle(first: Diagnosis, gains: Mapping[str, Interval], rate: Interval, train: Train | None,
           train_note: str | None, seconds: float, machine: Machine, pass_elements: int | None = None) -> Diagnosis:
    """Give the diagnosis with what the second process measured: the rewrites `settled`, the rate over both
    processes (or, measured in whole passes of `pass_elements`, the second's: the first's is of another quantity, the
    steady rate past a pass's start), the train terms, its seconds added and the busier machine."""
    rewrites, combined = settled(first, gains)
    processes = (*first.process_rows_per_sec, rate)
    busier = max(first.machine, machine, key=lambda m: m.others_cpu_pct)
    merged = Machine(busier.others_cpu_pct, max(first.machine.steal_pct, machine.steal_pct), busier.threshold_pct,
                     first.machine.busy or machine.busy)
    return dataclasses.replace(first, rewrites=rewrites, combined=combined, train=train, train_note=train_note,
                               rows_per_sec=rate if pass_elements is not None else rate_over(processes),
                               process_rows_per_sec=processes, seconds=first.seconds + seconds, machine=merged,
                               pass_elements=pass_elements)
