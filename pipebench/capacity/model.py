"""Predicted input throughput on any number of cores, from a pipeline's measured per-stage CPU costs.

The allocation is Plumber's LP (MLSys'22, `LP_upper_bounds`) in closed form. Every example passes every
stage, so at X examples/s stage i keeps X·c_i cores busy, where c_i is its CPU-seconds per example.
Maximise X subject to: the sequential stages one thread runs get at most one core together
(X·Σ_{i in thread} c_i ≤ 1; `threads` says which share one), all stages together get at most the cores
left after the train step (X·Σc_i ≤ cores − train_cores), and X stays under the read ceiling when one is
known. Hence

    X = min( min over threads t of 1/Σ_{i in t} c_i,  (cores − train_cores) / Σ c_i,  I/O ceiling )

and the bottleneck is the term that wins: a thread's stages ("source + batch"), "cores" or "I/O".

No TensorFlow and no I/O here: the profile (pipebench.results.stage_costs) is read by the caller.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from pipebench.errors import DataError, UsageError
from pipebench.measure.intervals import Interval
from pipebench.results.stage_costs import CapacityProfile, StageCost
from pipebench.values import ABOVE_0, AT_LEAST_0, check_number

#: Printed wherever a prediction for another machine is: the model's one transfer assumption.
TRANSFER_ASSUMPTION = ("per-example CPU costs were measured on one machine and transfer to another only as far as "
                       "its per-core speed matches; a faster or slower core moves every prediction by that factor")
#: The allocation in one sentence, for reports.
MODEL_SUMMARY = ("at X examples/s stage i keeps X·c_i cores busy; the sequential stages one thread runs share at most "
                 "one core and all stages together at most the cores left after the train step, so X = min(1/Σc_i "
                 "over each thread's stages, cores / Σc_i, the I/O ceiling when one is known).")
CORES, IO = "cores", "I/O"


@dataclass(frozen=True)
class Prediction:
    """What the allocation predicts for one profile on `cores` cores."""

    examples_per_sec: Interval  # predicted input throughput, with its 95% interval (see `predict`)
    bottleneck: str  # the binding term: the stages of one thread ("source + batch"), "cores" or "I/O"
    cores_used: float  # cores the pipeline keeps busy at the predicted rate (≤ cores − train_cores)
    sequential_cap: float | None  # the slowest thread of sequential stages (examples/s on its one core); None: none
    heaviest_stage: str  # the stage that needs the most cores at the predicted rate (what more cores go to)
    stage_cores: tuple[tuple[str, float], ...]  # (stage, cores it keeps busy at the predicted rate), in order


def _half_width(interval: Interval) -> float | None:
    """Give the larger distance from the mean to a bound (None without an interval)."""
    return None if not interval.decided else max(interval.mean - interval.low, interval.high - interval.mean)


def stage_costs(profile: CapacityProfile) -> tuple[Interval, ...]:
    """Give each stage's own CPU-sec/example with its 95% interval (none when a prefix it reads has none).

    A stage's cost is its prefix's less the previous prefix's, each measured in its own workers: the
    half-widths add in quadrature, as for independent errors (when both prefixes ran in the same rounds
    and shared the machine's drift, the errors move together and this overstates the spread: it errs
    wide, never narrow). The low end is clipped at zero.
    """
    prefixes = [s.prefix_cpu_sec_per_example for s in profile.stages]
    found = []
    for i, stage in enumerate(profile.stages):
        used = prefixes[max(0, i - 1):i + 1]
        rounds = min(p.n for p in used)
        if not all(p.decided for p in used):
            found.append(Interval(stage.cpu_sec_per_example, None, None, rounds))
            continue
        half = math.sqrt(sum(_half_width(p) ** 2 for p in used))
        found.append(Interval(stage.cpu_sec_per_example, max(0.0, stage.cpu_sec_per_example - half),
                              stage.cpu_sec_per_example + half, rounds))
    return tuple(found)


def rates_per_core(profile: CapacityProfile) -> tuple[Interval | None, ...]:
    """Give each stage's examples per CPU-second (1 / its cost; the interval's ends swap; high = inf when the
    cost's interval reaches 0); None for a stage with no measurable cost."""
    found: list[Interval | None] = []
    for cost in stage_costs(profile):
        if cost.mean <= 0:
            found.append(None)
        elif not cost.decided:
            found.append(Interval(1 / cost.mean, None, None, cost.n))
        else:
            found.append(Interval(1 / cost.mean, 1 / cost.high, 1 / cost.low if cost.low > 0 else math.inf, cost.n))
    return tuple(found)


def _cost_bounds(profile: CapacityProfile) -> tuple[list[float], list[float]] | None:
    """Give each stage's CPU-sec/example at the low and at the high end of its interval (None: any has none)."""
    costs = stage_costs(profile)
    if not all(c.decided for c in costs):
        return None
    return [c.low for c in costs], [c.high for c in costs]


def _total_bounds(profile: CapacityProfile) -> tuple[float, float] | None:
    """Give Σc_i at the ends of the whole pipeline's measured CPU-sec/example interval (None: no interval).

    The stage costs telescope to the last prefix's, so the sum's uncertainty is that one measurement's,
    not the sum of every stage's (which would count each inner prefix twice).
    """
    whole = profile.stages[-1].prefix_cpu_sec_per_example
    if not whole.decided:
        return None
    total = sum(s.cpu_sec_per_example for s in profile.stages)
    return max(0.0, total - (whole.mean - whole.low)), total + (whole.high - whole.mean)


def threads(stages: tuple[StageCost, ...]) -> list[list[int]]:
    """Group the sequential stages by the one thread that runs them (indexes into `stages`).

    tf.data runs a stage that is not async in the thread that asks it for elements: the next async
    stage's downstream (a parallel map's or interleave's input runner, prefetch's background thread) or
    the consumer at the end. So consecutive sequential stages up to an async one share one core: a
    prefetch closes its group (its thread runs it and what precedes it), a parallel stage closes the
    group before it and runs its own calls on the core budget.
    """
    groups: list[list[int]] = []
    current: list[int] = []
    for index, stage in enumerate(stages):
        if not stage.sequential:
            groups += [current] if current else []
            current = []
            continue
        current.append(index)
        if stage.stage == "prefetch":
            groups.append(current)
            current = []
    return groups + ([current] if current else [])


def _terms(stages: tuple[StageCost, ...], costs: list[float], total: float, available: float,
           io: float | None) -> list[tuple[float, str]]:
    """Give every ceiling on X as (examples/s, its name): I/O first, then each thread of sequential stages
    (one core, all its stages' costs), then cores."""
    terms = [] if io is None else [(io, IO)]
    for group in threads(stages):
        cost = sum(costs[i] for i in group)
        terms.append((1.0 / cost if cost > 0 else math.inf, " + ".join(stages[i].stage for i in group)))
    terms.append((available / total if total > 0 else math.inf, CORES))
    return terms


def _io(profile: CapacityProfile, given: float | None) -> float | None:
    """Give the read ceiling in force: the caller's, else the profile's (checked: a finite rate above 0)."""
    io = profile.io_examples_per_sec if given is None else given
    return None if io is None else check_number(io, "io_examples_per_sec", float, ABOVE_0)


def _check_profile(profile: CapacityProfile) -> None:
    if not profile.stages:
        raise DataError(f"capacity profile {profile.configuration_id}: no stages")
    if sum(s.cpu_sec_per_example for s in profile.stages) <= 0:
        raise DataError(f"capacity profile {profile.configuration_id}: no stage has a CPU cost (every "
                        "cpu_sec_per_example is 0), so nothing limits it")


def predict(profile: CapacityProfile, cores: float, *, train_cores: float = 0.0,
            io_examples_per_sec: float | None = None) -> Prediction:
    """Give the predicted input throughput of `profile` on `cores` cores, its interval and its bottleneck.

    `train_cores` are the cores the train step keeps for itself; `io_examples_per_sec` is a read ceiling
    (the profile's own when not given). ConfigError for a value that is no finite number in range, UsageError
    for cores ≤ train_cores.

    The 95% interval: each stage's cost is taken at the low and at the high end of its interval (the
    prefix intervals, differences added in quadrature; the core-budget term uses the whole pipeline's
    measured interval), and X is evaluated at both ends. X only falls as a cost rises, so those two
    evaluations bound it. It covers the profile's measurement noise, not the transfer to another machine
    (TRANSFER_ASSUMPTION). Without an interval on every prefix there is none on the prediction (n = the
    fewest rounds); when the costs that bind can be 0 at their low end, `high` is inf (no upper end).
    """
    check_number(cores, "cores", float, ABOVE_0)
    check_number(train_cores, "train_cores", float, AT_LEAST_0)
    if cores <= train_cores:
        raise UsageError(f"cores ({cores:g}) must exceed train_cores ({train_cores:g}): no core is left for input")
    io = _io(profile, io_examples_per_sec)
    _check_profile(profile)
    available = cores - train_cores
    costs = [s.cpu_sec_per_example for s in profile.stages]
    total = sum(costs)
    terms = _terms(profile.stages, costs, total, available, io)
    rate, bottleneck = min(terms, key=lambda t: t[0])
    rounds = min(s.prefix_cpu_sec_per_example.n for s in profile.stages)
    bounds, totals = _cost_bounds(profile), _total_bounds(profile)
    if bounds is None or totals is None:
        interval = Interval(rate, None, None, rounds)
    else:
        (cheap, dear), (total_low, total_high) = bounds, totals
        low = min(t[0] for t in _terms(profile.stages, dear, total_high, available, io))
        high = min(t[0] for t in _terms(profile.stages, cheap, total_low, available, io))
        interval = Interval(rate, min(low, rate), max(high, rate), rounds)
    sequential = [t for t, name in terms if name not in (CORES, IO)]
    stage_cores = tuple((s.stage, rate * c) for s, c in zip(profile.stages, costs))
    return Prediction(examples_per_sec=interval, bottleneck=bottleneck, cores_used=rate * total,
                      sequential_cap=min(sequential) if sequential and min(sequential) < math.inf else None,
                      heaviest_stage=max(stage_cores, key=lambda sc: sc[1])[0], stage_cores=stage_cores)


def ceiling(profile: CapacityProfile, io_examples_per_sec: float | None = None) -> tuple[float, str] | None:
    """Give the rate no number of cores can pass and what sets it (a sequential stage or "I/O"); None: none does."""
    _check_profile(profile)
    io = _io(profile, io_examples_per_sec)
    costs = [s.cpu_sec_per_example for s in profile.stages]
    capped = [t for t in _terms(profile.stages, costs, sum(costs), 1.0, io)[:-1] if math.isfinite(t[0])]
    return min(capped, key=lambda t: t[0]) if capped else None


def feed_cores(profile: CapacityProfile, rate: float, io_examples_per_sec: float | None = None) -> Interval | None:
    """Give the cores the pipeline keeps busy at `rate` examples/s, with its interval; None when a ceiling is below.

    Cores = rate × Σc_i, its interval from the whole pipeline's measured CPU-sec/example (train cores
    not included: add them). None when a sequential stage or the I/O ceiling caps below `rate`.
    """
    check_number(rate, "rate", float, ABOVE_0)
    limit = ceiling(profile, io_examples_per_sec)
    if limit is not None and limit[0] < rate:
        return None
    rounds = profile.stages[-1].prefix_cpu_sec_per_example.n
    total = sum(s.cpu_sec_per_example for s in profile.stages)
    totals = _total_bounds(profile)
    if totals is None:
        return Interval(rate * total, None, None, rounds)
    return Interval(rate * total, rate * totals[0], rate * totals[1], rounds)


def cores_to_feed(profile: CapacityProfile, rate: float) -> float | None:
    """Give the cores the pipeline needs to deliver `rate` examples/s; None when a sequential stage (or the
    profile's I/O ceiling) caps below `rate`, so no number of cores will do."""
    found = feed_cores(profile, rate)
    return None if found is None else found.mean
