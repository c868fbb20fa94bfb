"""A trial's figures, each with its 95% interval, from the windows its worker timed (one producer).

- throughput: examples/sec of the trial's own arm (input, train or synthetic), over its windows;
- synthetic: the compute ceiling measured beside a train arm, in the same rounds;
- waiting share: the TF Profiler's input time — the share of train-step wall time spent blocked in
  get_next — over the train windows;
- slowdown: 1 − train / synthetic from the paired rounds (DS-Analyzer's prep stall): what input costs
  training speed in total. On CPU it also holds the pipeline competing with the model for cores, so it
  can be large while the waiting share is small.

The input-bound verdict reads one of the two, its *basis*, chosen by where the model trains: the
slowdown when it trains on the same CPUs as the pipeline (there the pipeline slows the step by taking
cores, whether or not the step waits), the waiting share when it trains on an accelerator fed by the
host (which only idles while it waits, the case the TF Profiler's definition was made for).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pipebench.measure.intervals import (Interval, geometric_interval, input_bound_verdict, ratio_interval,
                                         share_interval)
from pipebench.measure.trial import Window

#: The measure a train trial's verdict reads (the `input_bound_basis` column).
SLOWDOWN, WAITING = "slowdown", "waiting"
#: The basis of rows written before pipebench chose one (results schema < 7): their verdict read the waiting share.
EARLIER_BASIS = WAITING


def verdict_basis(trainer: str, train_device: str | None) -> str:
    """Give the measure a train verdict reads: the waiting share for an accelerator trainer, else the slowdown.

    `trainer` is the experiment's assumption (TRAINERS); under auto, `train_device` decides — the device
    type the worker placed the train step on ("CPU", "GPU"; None when it reported none, as on CPU).
    """
    if trainer == "accelerator" or (trainer == "auto" and train_device not in (None, "CPU")):
        return WAITING
    return SLOWDOWN


@dataclass(frozen=True)
class Figures:
    throughput: Interval
    synthetic: Interval | None = None
    waiting: Interval | None = None
    slowdown: Interval | None = None
    basis: str = SLOWDOWN  # which of waiting and slowdown the verdict reads (verdict_basis)

    @property
    def input_cost(self) -> Interval | None:
        """The figure the verdict reads: the slowdown or the waiting share, as `basis` says (None in input mode)."""
        return self.waiting if self.basis == WAITING else self.slowdown

    @property
    def verdict(self) -> str | None:
        return None if self.waiting is None or self.input_cost is None else input_bound_verdict(self.input_cost)


def _rates(windows: Sequence[Window], arm: str) -> list[float]:
    return [w.examples / w.seconds for w in windows if w.arm == arm]


def figures(windows: Sequence[Window], basis: str = SLOWDOWN) -> Figures | None:
    """Give the figures of a trial's windows (None when it timed none); a train trial's verdict reads `basis`."""
    if not windows:
        return None
    arms = {w.arm for w in windows}
    if "train" not in arms:
        (arm,) = arms
        return Figures(geometric_interval(_rates(windows, arm)), basis=basis)
    train = _rates(windows, "train")
    waiting = share_interval([w.waited_sec / w.seconds for w in windows if w.arm == "train"])
    if "synthetic" not in arms:
        return Figures(geometric_interval(train), waiting=waiting, basis=basis)
    by_round = {}
    for w in windows:
        by_round.setdefault(w.round, {})[w.arm] = w.examples / w.seconds
    pairs = [(r["train"], r["synthetic"]) for r in by_round.values() if "train" in r and "synthetic" in r]
    ratio = ratio_interval([t for t, _ in pairs], [s for _, s in pairs])
    slowdown = Interval(1.0 - ratio.mean, None if ratio.high is None else 1.0 - ratio.high,
                        None if ratio.low is None else 1.0 - ratio.low, ratio.n)
    return Figures(geometric_interval(train), geometric_interval(_rates(windows, "synthetic")), waiting, slowdown,
                   basis)
