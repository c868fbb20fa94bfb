"""A trial's figures, each with its 95% interval, from the windows its worker timed (one producer).

- throughput: examples/sec of the trial's own arm (input, train or synthetic), over its windows;
- synthetic: the compute ceiling measured beside a train arm, in the same rounds;
- waiting share: the TF Profiler's input time — the share of train-step wall time spent blocked in
  get_next — over the train windows; the input-bound verdict reads it;
- slowdown: 1 − train / synthetic from the paired rounds (DS-Analyzer's prep stall). On CPU it also
  holds the pipeline competing with the model for cores, so it can be large while the waiting share
  is small: it says what input costs in total, not whether the step waits.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pipebench.measure.intervals import Interval, geometric_interval, input_bound_verdict, ratio_interval, share_interval
from pipebench.measure.trial import Window


@dataclass(frozen=True)
class Figures:
    throughput: Interval
    synthetic: Interval | None = None
    waiting: Interval | None = None
    slowdown: Interval | None = None

    @property
    def verdict(self) -> str | None:
        return None if self.waiting is None else input_bound_verdict(self.waiting)


def _rates(windows: Sequence[Window], arm: str) -> list[float]:
    return [w.examples / w.seconds for w in windows if w.arm == arm]


def figures(windows: Sequence[Window]) -> Figures | None:
    """Give the figures of a trial's windows (None when it timed none)."""
    if not windows:
        return None
    arms = {w.arm for w in windows}
    if "train" not in arms:
        (arm,) = arms
        return Figures(geometric_interval(_rates(windows, arm)))
    train = _rates(windows, "train")
    waiting = share_interval([w.waited_sec / w.seconds for w in windows if w.arm == "train"])
    if "synthetic" not in arms:
        return Figures(geometric_interval(train), waiting=waiting)
    by_round = {}
    for w in windows:
        by_round.setdefault(w.round, {})[w.arm] = w.examples / w.seconds
    pairs = [(r["train"], r["synthetic"]) for r in by_round.values() if len(r) == 2]
    ratio = ratio_interval([t for t, _ in pairs], [s for _, s in pairs])
    slowdown = Interval(1.0 - ratio.mean, None if ratio.high is None else 1.0 - ratio.high,
                        None if ratio.low is None else 1.0 - ratio.low, ratio.n)
    return Figures(geometric_interval(train), geometric_interval(_rates(windows, "synthetic")), waiting, slowdown)
