"""The second worker process of a diagnosis: what one process cannot say about the processes a user will run.

A process has its own speed. On an idle 2-vCPU machine (2026-11-29) `real_deepctr_tfrecord_tf1`'s parse map cost 17
CPU-µs per row in one diagnosis and 31 in another, and a prefetch kept at 1.15× (1.01–1.32×) in one worker,
confirmed in fresh rounds of that worker, gave 1.03× (0.98–1.08×) in a fresh process. Rounds of one worker give
intervals that cannot hold that spread. So after the first worker (the stages, the bottleneck, every rewrite, the
profiler) a second one loads the function again and measures, side by side in paired rounds, the original and every
kept rewrite whose gain is small (under CONFIRM_BELOW: one that large does not vanish between processes): such a
rewrite stays kept only if the second process's interval lies above 1 too, and its gain, kept or not, is the second's (the first
rounds chose it among several: their figure is the winner's). The whole pipeline's rate is given over both
processes. The train terms are measured there, on the rewrite that is kept after it. No TensorFlow here.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

from pipebench.diagnose.records import Diagnosis, Machine, Rewrite, Train
from pipebench.measure.intervals import Interval

#: A kept gain under this is confirmed in the second worker process, not in fresh rounds of the first.
CONFIRM_BELOW = 1.5


def settled_there(kind: str, gain: Interval | None) -> bool:
    """Tell whether a rewrite's gain is left to the second process: a small one of a rewrite measured from the
    user's pipeline as it is (a cache to fill, or a combination of kept ones, is settled in the first)."""
    return kind not in ("cache", "combined") and gain is not None and gain.mean < CONFIRM_BELOW


def to_confirm(first: Diagnosis) -> list[Rewrite]:
    """Give the first process's kept rewrites the second measures again."""
    return [r for r in first.rewrites if r.kept and settled_there(r.kind, r.gain)]


def rate_over(processes: Sequence[Interval]) -> Interval:
    """Give the whole pipeline's rows/s over worker processes: the geometric mean of their means, from the lowest of
    their lows to the highest of their highs (it errs wide: two processes give no interval of their own)."""
    mean = math.exp(sum(math.log(p.mean) for p in processes) / len(processes))
    if not all(p.decided for p in processes):
        return Interval(mean, None, None, sum(p.n for p in processes))
    return Interval(mean, min(p.low for p in processes), max(p.high for p in processes), sum(p.n for p in processes))


def _confirmed(rewrite: Rewrite, again: Interval) -> Rewrite:
    first = rewrite.gain.text(".2f", unit="×")
    if again.decided and again.low > 1.0:
        return dataclasses.replace(rewrite, gain=again, verdict=f"kept: {again.text('.2f', unit='×')} faster in a "
                                   f"second worker process (in the first: {first})")
    return dataclasses.replace(rewrite, kept=False, gain=again, verdict=f"not kept: {first} in one worker process, "
                               f"not confirmed in a second: {again.text('.2f', unit='×')}")


def settle(first: Diagnosis, gains: Mapping[str, Interval], rate: Interval, train: Train | None,
           train_note: str | None, seconds: float, machine: Machine) -> Diagnosis:
    """Give the diagnosis with what the second process measured: each confirmed rewrite's verdict (`gains`, by name),
    a combination whose part was not confirmed dropped, the rate over both processes, the train terms."""
    rewrites = tuple(_confirmed(r, gains[r.name]) if r.name in gains else r for r in first.rewrites)
    dropped = [r.name for r in rewrites if r.name in gains and not r.kept]
    combined = first.combined
    if combined is not None and combined.kept and any(part in dropped for part in combined.parts):
        combined = dataclasses.replace(combined, kept=False, verdict="not kept: its part "
                                       f"{', '.join(p for p in combined.parts if p in dropped)} was not confirmed in "
                                       "a second worker process")
    processes = (*first.process_rows_per_sec, rate)
    busier = max(first.machine, machine, key=lambda m: m.others_cpu_pct)
    merged = Machine(busier.others_cpu_pct, max(first.machine.steal_pct, machine.steal_pct), busier.threshold_pct,
                     first.machine.busy or machine.busy)
    return dataclasses.replace(first, rewrites=rewrites, combined=combined, train=train, train_note=train_note,
                               rows_per_sec=rate_over(processes), process_rows_per_sec=processes,
                               seconds=first.seconds + seconds, machine=merged)
