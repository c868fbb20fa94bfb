"""Interference is data: the one rule for a measurement whose windows shared the machine with busy processes.

A measurement is *busy* when other processes used more than `measurement.busy_other_cpu_pct` of a
vCPU over its windows (pipebench.measure.sampler.busy_machine, the row's `busy_machine`). It is kept,
flagged, and measured once more after everything else (the end of a run, the last of a capacity
profile's rounds), so a neighbour that passed has had time to go: measured again at once, the machine
was read seconds after the busy worker ended, while the neighbour was usually still there. Before each
measurement again the machine is read (`busy_now`): while it is still past the threshold, a second
measurement would be as busy as the first, so none of the rest is measured again and `skipped` says
why. The second measurement stands for the first in what is reported, whatever it shows; a
measurement is never taken a third time.

The trial loop (pipebench.search.loop.RemeasureBusy) and capacity profiles
(pipebench.capacity.profile.measure_rounds) both follow this rule through `BusyRule`.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pipebench.measure.sampler import Usage, busy_machine


@dataclass
class BusyRule:
    """When a busy measurement is measured again (module docstring); `skipped` says why the rest were not."""

    threshold_pct: float  # measurement.busy_other_cpu_pct: other processes' CPU, in % of a vCPU
    busy_now: Callable[[], float]  # other processes' CPU now, in % of a vCPU (sampler.others_busy_pct)
    skipped: str | None = None

    def busy(self, usage: Usage | None) -> bool:
        """Whether a measurement with this usage shared the machine with busy processes."""
        return bool(busy_machine(usage, self.threshold_pct))

    def may_measure_again(self) -> bool:
        """Whether the next busy measurement is measured again now: the machine is quiet (read now), and it was
        every time before; once it is not, no other is (`skipped` says why)."""
        if self.skipped is not None:
            return False
        busy = self.busy_now()
        if busy > self.threshold_pct:
            self.skipped = (f"the machine was still busy when the run would measure them again (other processes "
                            f"used {busy:.0f}% of a vCPU)")
            return False
        return True
