"""The one trial loop every driver runs (Optuna's `_optimize` for every sampler; Hydra's launcher).

A driver is a *planner*: `next()` gives the next trial (None when it has no more), `done()`
hears each finished row and `finish()` writes what it concludes. The loop owns everything else,
once: limits, the sampler (cut to the measured windows), the row, appends, the deadline,
`budget.max_trials`, the failure budget, progress, the input fraction and summary.md (after the
planner's `finish()`, so it can show a study's winner). `measure` is injectable, so driver logic
is tested without TensorFlow and the replay benchmark drives the real planners.

A planner that can say which of its next trials may share a warm worker (`also`: the grid's) has them measured
together, up to budget.trials_per_worker (pipebench.measure.manager.run_group); a trial the worker never
reached is measured alone right after. Each still gets its own row, appended once the worker has ended, so the
manager writes nothing while a worker measures (progress then moves a group at a time).
"""
from __future__ import annotations

import contextlib
import dataclasses
import socket
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from pipebench.config import Experiment
from pipebench.measure.busy import BusyRule
from pipebench.measure.intervals import Interval
from pipebench.measure.manager import TRIAL_FILE, Limits, Outcome, run_group, run_worker
from pipebench.measure.sampler import Sampler
from pipebench.measure.trial import TrialSpec, TrialStatus
from pipebench.pipeline.function import data_files
from pipebench.results.rows import RowContext, trial_row
from pipebench.results.run_folder import RunFolder
from pipebench.results.trial_row import TrialRow

#: The failure budget is judged only once this many trials have finished (one early crash is not a rate);
#: a run that ends with no trial ok fails whatever its size (LoopResult.failure).
MIN_TRIALS_FOR_FAILURE_BUDGET = 4


@dataclass
class Planned:
    """One trial a planner wants measured, with what the loop needs around it."""

    spec: TrialSpec
    on_window: Callable[[int, float], bool] | None = None  # hears each window; True stops (prunes) the trial
    measuring: contextlib.AbstractContextManager = field(default_factory=contextlib.nullcontext)
    study: str | None = None
    optuna_trial_number: int | None = None
    handle: Any = None  # the planner's own reference (an Optuna trial)


class Planner(Protocol):
    """What the loop asks of a driver."""

    #: Whether trials measured on a busy machine are measured again at the end (measurement.remeasure_busy):
    #: the grid's are; a search's would be trials outside its budget that it never hears of, and its
    #: confirmation race already measures its contenders again, paired.
    remeasures_busy: bool

    def total(self) -> int | None:
        """Give how many trials the run holds in all (done before included), for progress; None if unknown."""

    def next(self) -> Planned | None:
        """Give the next trial to measure, or None when there is none left."""

    def done(self, planned: Planned, row: TrialRow) -> None:
        """Hear a measured trial's row (Optuna tells its study)."""

    def finish(self, run: RunFolder) -> None:
        """Write what the driver concludes into the run folder (a study's importances and winner), before
        the loop writes summary.md."""

    # Optional: `also(group, room) -> list[Planned]`, up to `room` of its next trials that may share the warm worker
    # of `group`'s (pipebench.measure.manager.shares_worker), taken from its plan. A planner without it (a study,
    # whose next trial depends on this one's result) has each trial measured in a worker of its own.


Measure = Callable[..., Outcome]
MeasureGroup = Callable[..., list[Outcome | None]]


@dataclass
class LoopResult:
    """The run's rows (earlier ones included), and why it stopped early (None when it ran to the end)."""

    rows: list[TrialRow]
    stopped: str | None = None
    failure_budget_spent: bool = False
    unfinished: bool = False  # stopped by the time budget with trials left: `run --resume` measures them

    @property
    def succeeded(self) -> bool:
        """Whether any trial of the run ended ok (a run without rows has nothing that failed either)."""
        return not self.rows or any(r.ok for r in self.rows)

    def failure(self) -> str | None:
        """Give why the run failed as a whole (the CLI exits 3), or None: past the failure budget, or no trial ok."""
        if self.failure_budget_spent:
            return f"stopped early: {self.stopped}"
        if not self.succeeded:
            ended = Counter(r.status for r in self.rows)
            return (f"no trial succeeded ({len(self.rows)} trials: "
                    f"{', '.join(f'{n} {status}' for status, n in sorted(ended.items()))})")
        return None


class TrialProgress:
    """The run's progress (pipebench.progress): a line per finished trial saying what it measured, with
    the knobs that tell trials apart (threads, environment, repeat), its figure and interval, and the
    best train configuration so far; on a terminal also a live bar of trials done, rate and ETA."""

    def __init__(self, total: int | None, already: int, stream=None, clock=time.monotonic) -> None:
        from pipebench.progress import Progress

        self.total, self.done = total, already
        self.display = Progress("run", total, "trials", stream, clock, already)
        self.best: tuple[float, str, str] | None = None  # (rate, figure with its interval, label)

    def __enter__(self) -> TrialProgress:
        self.display.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.display.__exit__(*exc)

    def update(self, row: TrialRow) -> None:
        from pipebench.report.tables import env_text, threads_text

        self.done += 1
        source = f"@{row.source_mode}" if row.source_mode not in (None, "file") else ""
        batch = f"b{row.batch_size}" if row.batch_size is not None else "its own batch"
        label = f"{row.pipeline} {row.format or ''}{source} {row.mode} {batch}".replace("  ", " ")
        label += f" threads {threads_text(row)}" + (f" env {env_text(row)}" if env_text(row) != "none set" else "")
        label += f" repeat {row.repeat}"  # a grid's later round, or a confirmation round
        rate = row.examples_per_sec_mean or row.examples_per_sec_median
        result = f"{row.status}: {row.reason}"
        if rate:
            spread = Interval(rate, row.examples_per_sec_low, row.examples_per_sec_high, row.rounds or 0)
            result = f"{spread.text(',.0f')} ex/s"
            if row.mode == "train" and (self.best is None or rate > self.best[0]):
                self.best = (rate, result, label)
        if row.remeasure_of:
            label += " (again: its first measurement shared the machine)"
        elif row.busy_machine:
            result += " [busy machine]"
        best = f" | best train {self.best[1]} ({self.best[2]})" if self.best else ""
        total = self.total if self.total is not None and self.total >= self.done else "?"
        self.display.advance(1, f"best train {self.best[1]}" if self.best else "")
        self.display.unit_done(f"[{self.done}/{total}] {label}: {result}{best}")


def trial_limits(experiment: Experiment) -> Limits:
    """Give the timeout and memory cap every trial worker of the experiment runs under (budget.*)."""
    return Limits.of_budget(experiment["budget"])


def failures(rows: list[TrialRow]) -> int:
    """Give how many rows spend the failure budget (TrialStatus.counts_as_failure)."""
    return sum(TrialStatus(r.status).counts_as_failure for r in rows)


class RemeasureBusy:
    """A planner's trials, then once more each ok trial its windows shared with busy other processes, by the one
    busy rule (pipebench.measure.busy: at the end, while the machine is quiet; `skipped` says why not).

    The re-measure is a new row naming the trial it measures again (`remeasure_of`); reports read the
    quieter one in its place. A trial still busy the second time stays flagged: it is not retried again.
    """

    def __init__(self, planner: Planner, rows: list[TrialRow], run: RunFolder, rule: BusyRule) -> None:
        self.planner, self.rows, self.run, self.rule = planner, rows, run, rule
        self._driver_done = False

    @property
    def skipped(self) -> str | None:
        return self.rule.skipped

    def total(self) -> int | None:
        return self.planner.total()

    def next(self) -> Planned | None:
        if not self._driver_done:
            planned = self.planner.next()
            if planned is not None:
                return planned
            self._driver_done = True
        again = {r.remeasure_of for r in self.rows if r.remeasure_of}
        for row in self.rows:
            path = self.run.trial_dir(row.trial_id) / TRIAL_FILE
            if (row.ok and row.busy_machine and not row.remeasure_of
                    and row.trial_id not in again and path.exists()):
                if not self.rule.may_measure_again():
                    return None
                spec = TrialSpec.load(path)
                return Planned(dataclasses.replace(spec, trial_id=f"{spec.trial_id}-again", remeasure_of=spec.trial_id))
        return None

    def also(self, group: list[Planned], room: int) -> list[Planned]:
        """The planner's trials share workers as it says; the ones measured again, each a worker of its own."""
        also = getattr(self.planner, "also", None)
        return also(group, room) if also is not None and not self._driver_done else []

    def done(self, planned: Planned, row: TrialRow) -> None:
        if planned.spec.remeasure_of is None:
            self.planner.done(planned, row)

    def finish(self, run: RunFolder) -> None:
        self.planner.finish(run)


def _sampler_factory(measurement: dict, spec: TrialSpec) -> Callable[[int], Sampler]:
    """Give what starts a trial's sampler on its worker's pid (its data files watched in the page cache, if asked)."""
    files = data_files(spec.pipeline_spec) if measurement["page_cache"] else ()
    return lambda pid: Sampler(pid, 1.0 / measurement["sample_hz"], data_files=files)


def _budget_spent(result: LoopResult, rows: list[TrialRow], budget: dict, past_deadline: bool,
                  total: Callable[[], int | None]) -> bool:
    """Tell whether a budget stops the run before its next trial (too many failures, the time budget, max_trials),
    saying which in `result`."""
    failed = failures(rows)
    if len(rows) >= MIN_TRIALS_FOR_FAILURE_BUDGET and failed / len(rows) > budget["max_failure_rate"]:
        result.stopped = (f"{failed} of {len(rows)} trials failed, past budget.max_failure_rate "
                          f"{budget['max_failure_rate']}")
        result.failure_budget_spent = True
        return True
    if past_deadline:
        result.stopped = f"time budget of {budget['max_minutes']:g} min used up"
        result.unfinished = len(rows) < (total() or len(rows) + 1)  # unknown: say how to go on
        return True
    if budget["max_trials"] is not None and len(rows) >= budget["max_trials"]:
        result.stopped = f"budget.max_trials ({budget['max_trials']}) reached"
        return True
    return False


def run_trials(planner: Planner, run: RunFolder, experiment: Experiment, measure: Measure = run_worker,
               log: Callable[[str], None] = print, clock: Callable[[], float] = time.monotonic,
               stream=None, busy_now: Callable[[], float] | None = None,
               measure_group: MeasureGroup | None = None) -> LoopResult:
    """Measure the planner's trials into the run folder until it has none, or a budget stops the run.

    `measure_group` measures trials that share a warm worker (default: run_group when `measure` is the default
    run_worker; a caller that measures its own way measures one trial at a time unless it gives one too)."""
    from pipebench.measure.sampler import others_busy_pct
    from pipebench.report.action import baseline_of
    from pipebench.report.summary import write_summary

    busy_now = busy_now or others_busy_pct
    if measure_group is None and measure is run_worker:
        measure_group = run_group
    budget, measurement = experiment["budget"], experiment["measurement"]
    limits = trial_limits(experiment)
    deadline = clock() + budget["max_minutes"] * 60 if budget["max_minutes"] else None
    rows = run.rows()
    if measurement["remeasure_busy"] and planner.remeasures_busy:
        planner = RemeasureBusy(planner, rows, run, BusyRule(measurement["busy_other_cpu_pct"], busy_now))
    host = socket.gethostname()
    result = LoopResult(rows)

    def measured(group: list[Planned]) -> list[tuple[Planned, Outcome, float, float]]:
        """Measure `group` (one trial, or several in one warm worker); give each with its outcome, start and end."""
        started = time.time()
        if len(group) == 1:
            planned = group[0]
            with planned.measuring:
                outcome = measure(planned.spec, run.trial_dir(planned.spec.trial_id), limits,
                                  sampler_factory=_sampler_factory(measurement, planned.spec), on_progress=planned.on_window)
            return [(planned, outcome, started, time.time())]
        specs = [p.spec for p in group]
        with contextlib.ExitStack() as stack:
            for planned in group:
                stack.enter_context(planned.measuring)
            outcomes = measure_group(specs, [run.trial_dir(s.trial_id) for s in specs], limits,
                                     sampler_factory=_sampler_factory(measurement, specs[0]))
        found = []
        for planned, outcome in zip(group, outcomes):
            if outcome is None:  # its worker stopped before it: measured alone
                found += measured([planned])
            else:
                span = outcome.span or (started, time.time())
                found.append((planned, outcome, *span))
        return found

    with TrialProgress(planner.total(), len(rows), stream, clock) as progress:
        while True:
            if _budget_spent(result, rows, budget, deadline is not None and clock() > deadline, planner.total):
                break
            planned = planner.next()
            if planned is None:
                break
            group = [planned]
            also = getattr(planner, "also", None)
            if measure_group is not None and also is not None and planned.on_window is None:
                room = budget["trials_per_worker"] - 1
                if budget["max_trials"] is not None:
                    room = min(room, budget["max_trials"] - len(rows) - 1)
                group += also(group, room) if room > 0 else []
            for planned, outcome, started, ended in measured(group):
                spec = planned.spec
                row = trial_row(RowContext(spec, outcome, run.run_id, host, run.machine, started, ended,
                                           planned.study, planned.optuna_trial_number))
                run.append(row, outcome.samples)
                rows.append(row)
                planner.done(planned, row)
                progress.update(row)
    planner.finish(run)
    skipped = planner.skipped if isinstance(planner, RemeasureBusy) else None
    if skipped:
        log(f"busy trials not measured again: {skipped}")
    write_summary(run, rows, result.stopped, measurement["busy_other_cpu_pct"], skipped,
                  baseline_of(experiment.resolved))
    return result
