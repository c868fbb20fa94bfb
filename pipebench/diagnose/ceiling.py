"""The most a rewrite can gain, read from the prefixes already measured (no TensorFlow here).

A rewrite changes some stages and leaves the others as they are. What it leaves bounds what the rewritten
pipeline can pass, whatever the rewrite does:

- the stages before the first one it changes: the rewritten pipeline still pulls every row through them, and they
  pass at most what their prefix passed alone (nothing else competing for the cores);
- the bottleneck, when it runs in one thread and the rewrite leaves it as it is: it passes at most what it passed
  in its own prefix, or what one thread does at its CPU per row (its capacity), whichever is more;
- the machine: the stages it leaves still cost their CPU per row, and the cores give at most their number of
  CPU-seconds a second (a rewrite adds threads or takes work away; none of ours makes the stages it leaves cheaper).

The ceiling is the lowest of these over the whole pipeline's rate. A rewrite whose ceiling is under
MEASURE_ABOVE is named with it and not measured: its rounds cost as much as any other's (a slow pipeline's
several seconds each) and could only show "no measurable difference" (a py_function at 1,300 rows/s measured
"parallel reads" of a source that passes 300,000 alone for 8 rounds). The figures are the prefixes' means, so
the ceiling is an estimate, said with "~"; a rewrite that changes what a stage runs on (options, a cache before
every stage) has none.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from pipebench.pipeline.stages import Stage
from pipebench.diagnose.records import PrefixCost

#: Measure a rewrite only when it could gain more than this over the whole pipeline's rate: prefixes are measured
#: in fewer rounds than a comparison, and fresh processes spread 5-10%.
MEASURE_ABOVE = 1.15


@dataclass(frozen=True)
class GainCeiling:
    """The most a rewrite can gain (× the whole pipeline's rows/s) and what bounds it, in words."""

    gain: float
    why: str

    @property
    def measurable(self) -> bool:
        return self.gain > MEASURE_ABOVE


def ceiling(changes: tuple[int, ...] | None, stages: list[Stage], costs: list[PrefixCost], bottleneck: int,
            cores: int) -> GainCeiling | None:
    """Give the ceiling of a rewrite that changes the stages `changes` (None: all of them) on `cores` cores, or None
    when nothing it leaves bounds it (module docstring). `costs`: the measured prefixes, the whole pipeline last."""
    if changes is None or not changes or not costs:
        return None
    whole = costs[-1].prefix_rows_per_sec.mean
    if whole <= 0:
        return None
    found: list[GainCeiling] = []
    first = min(changes)
    before = [c for c in costs if stages[c.stage].inside is None and max(c.stages) < first
              and all(stages[s].inside is None for s in c.stages)]
    if before:
        rate = before[-1].prefix_rows_per_sec.mean
        found.append(GainCeiling(rate / whole, f"it leaves the stages up to {stages[max(before[-1].stages)].call} as "
                                           f"they are, which pass ~{rate:,.0f} rows/s alone"))
    neck = next((c for c in costs if c.stage == bottleneck), None)
    if neck is not None and neck.sequential and not set(neck.stages) & set(changes):
        rate = max(neck.capacity_rows_per_sec or 0.0, neck.prefix_rows_per_sec.mean)
        found.append(GainCeiling(rate / whole, f"it leaves the bottleneck {stages[bottleneck].label} as it is, which "
                                           f"passes at most ~{rate:,.0f} rows/s ({neck.why_sequential})"))
    whole_cpu = costs[-1].prefix_cpu_us_per_row.mean
    left = whole_cpu - sum(c.cpu_us_per_row for c in costs if set(c.stages) & set(changes))
    if left > 1e-9 * whole_cpu:  # not a float's rounding of the costs summed back
        rate = cores * 1e6 / left
        found.append(GainCeiling(rate / whole, f"the stages it leaves cost ~{left:,.1f} CPU-µs per row, which {cores} "
                                           f"cores pass at most ~{rate:,.0f} times a second"))
    if not found:
        return None
    low = min(found, key=lambda c: c.gain)
    return GainCeiling(low.gain, f"{low.why}; the whole pipeline passes ~{whole:,.0f}")


def most_gain(found: GainCeiling | None, changes: tuple[int, ...] | None, bottleneck: int) -> float:
    """Give the most a rewrite could gain, to order rewrites by when not all can be measured: its ceiling `found`;
    unbounded when it has none and changes the bottleneck itself (a restructuring: nothing it leaves bounds it);
    0 when it has none otherwise (options, a cache: they change what stages run on, not a stage's work)."""
    if found is not None:
        return found.gain
    return math.inf if changes and bottleneck in changes else 0.0
