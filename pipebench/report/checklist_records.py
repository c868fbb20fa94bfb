"""What `pipebench checklist --format json` prints, typed (pipebench.typed): the rules' items, the cost ranking
with measured and projected rows apart, the model's error, the service sizing and the migration notes.

CI gates read it, so its shape is versioned (CHECKLIST_VERSION) and every interval in it, evidence
included, is written in the one shape {"mean", "low", "high", "n"} (pipebench.measure.intervals.Interval).
Measured and projected rows live in separate lists so a gate can never rank a guess above a measurement.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipebench.measure.intervals import Interval
from pipebench.typed import to_json

#: 2 (2026-11-26): typed; every interval {"mean", "low", "high", "n"} (before: `pct`/`low_pct`/`high_pct`,
#: `gain`/`gain_low`/`gain_high`, `examples_per_sec_low`/`_high` beside the mean, and others); `basis` gone
#: (the list a row is in says it); the version key is `schema_version` (was `version`).
CHECKLIST_VERSION = 2
#: What an item advises when an interval cannot decide: more rounds narrow it.
MORE_ROUNDS = ("add repeats (measurement.repeats) or raise the round cap (measurement.max_windows) and measure "
               "again before deciding")


@dataclass(frozen=True)
class Item:
    """One rule's verdict over the runs: what it measured (with the interval it judged on) and what to do."""

    id: str
    title: str
    status: str  # PASS, WARN, FAIL or N/A
    evidence: dict[str, Any]  # the rule's own figures; its intervals in the one interval shape
    advice: str


@dataclass(frozen=True)
class MeasuredCost:
    """Cost per epoch of an instance type at its fastest train configuration, measured."""

    instance_type: str
    examples_per_sec: Interval  # the configuration's repeats pooled
    epoch_sec: float  # at the mean
    price_per_hour: float | None  # None: not in the catalog
    cost_per_epoch: float | None
    run_dirs: tuple[str, ...]
    configuration_id: str
    busy_machine: bool
    note: str | None


@dataclass(frozen=True)
class ProjectedCost:
    """Cost per epoch of a catalog type nobody measured: projected (linear per-core scaling or the per-stage model)."""

    instance_type: str
    model: str  # "linear" or "per-stage model"
    examples_per_sec: Interval  # linear: the mean alone (no interval, n 0)
    epoch_sec: float
    price_per_hour: float
    cost_per_epoch: float
    assumption: str
    busy_machine: bool  # built on a throughput measured on a busy machine
    bottleneck: str | None  # the per-stage model's only, as are the two below
    configuration_id: str | None
    profile_run_dir: str | None


@dataclass(frozen=True)
class ModelError:
    """The per-stage model's prediction for a run's machine beside what that run measured."""

    instance_type: str | None
    run_dir: str
    host_fingerprint: str
    vcpus: int
    mode: str  # input, or train against min(the run's synthetic ceiling, input)
    configuration_id: str
    profiled_here: bool  # in-sample: the profile's own run
    predicted: Interval
    measured: Interval
    error_pct: Interval  # predicted / measured − 1, in percent, bounds from both intervals' ends (n 0)


@dataclass(frozen=True)
class Ranking:
    epoch_examples: int
    region: str
    prices_as_of: str
    currency: str
    measured: tuple[MeasuredCost, ...]
    projected: tuple[ProjectedCost, ...]
    projected_by: str  # "linear" or "per-stage model"
    model_error: tuple[ModelError, ...]  # empty for linear


@dataclass(frozen=True)
class MigrationNote:
    id: str
    title: str
    advice: str
    helper: str  # what in pipebench does it


@dataclass(frozen=True)
class Checklist:
    """What `pipebench checklist --format json` prints."""

    schema_version: int  # the layout version (pipebench.versioned)
    items: tuple[Item, ...]
    ranking: Ranking
    service: Item  # apart from the rules: it applies only to runs that measured the tf.data service
    migration: tuple[MigrationNote, ...]

    def to_json(self) -> dict:
        return to_json(self)
