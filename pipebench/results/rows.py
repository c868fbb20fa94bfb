"""The one row builder: each trials.parquet column and the single thing that fills it.

A trial's facts come from four producers — the TrialSpec (what was asked), the worker's
TrialRecord (what it measured), the manager's ProcessFacts (what it saw from outside) and the
sampler's Usage over the measured windows — plus the run (where and when). Each column names
exactly one of them; tests/test_rows.py checks that every column has a producer and every field
a producer reports has a column (or is listed below as kept in the trial's folder only).
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from pipebench.config.choices import ENV_KNOBS
from pipebench.measure.facts import MachineFacts
from pipebench.measure.figures import SLOWDOWN, Figures, figures, verdict_basis
from pipebench.measure.manager import Outcome
from pipebench.measure.sampler import busy_machine
from pipebench.measure.trial import TrialSpec, TrialStatus
from pipebench.results.schema import TRIAL_SCHEMA
from pipebench.results.trial_row import TrialRow
from pipebench.typed import to_json

#: TrialRecord fields copied into the column of the same name.
RECORD_COLUMNS = (
    "status", "reason", "tf_version", "worker_intra_op_threads", "worker_inter_op_threads",
    "tensorflow_imported_before_settings", "unsupported_options", "source_note", "examples_per_sec_median",
    "examples_per_sec_p25", "examples_per_sec_p75", "examples_per_sec_cv_pct", "windows", "stable",
    "window_rates", "warmup_sec", "warmup_steady", "steps_per_call", "epochs_renewed", "windows_started_sec",
    "windows_ended_sec", "cold_examples_per_sec", "page_cache_resident_after_evict", "fetch_stall_pct", "auc",
    "worker_sec", "rounds", "rounds_cap_hit", "service_bytes_per_example", "train_device")
#: TrialRecord fields that stay in the trial's folder (trials/<id>/result.json), with why.
RECORD_ONLY = {"traceback": "too long for a table; the reason column has its cause",
               "env_seen": "stored as env_seen_json (a mapping has no Parquet column of its own)",
               "windows_measured": "stored as windows_json; the figure columns are computed from it",
               "cpus_at_start": "checks pinning (pipebench capacity reads it from the outcome); a run's own "
                                "workers are not pinned",
               "tf_inter_op_pool_threads": "checks pinning, beside cpus_at_start",
               "profiled": "a profiling re-run's record, which becomes no row (RunFolder.note sets profile_dir)"}
#: Usage (sampler, measured windows only) fields copied into the column of the same name.
USAGE_COLUMNS = ("cpu_pct_median", "cpu_pct_p95", "cpu_pct_of_vcpus_median", "cpu_pct_of_physical_cores_median",
                 "busiest_core_pct_median", "other_cpu_pct_median", "rss_median_bytes",
                 "page_cache_resident_fraction_start", "page_cache_resident_fraction_end", "gpu_util_pct_median",
                 "gpu_util_pct_p95", "gpu_mem_peak_bytes")
#: ProcessFacts (manager) fields copied into the column of the same name.
PROCESS_COLUMNS = ("duration_sec", "exit_code", "signal", "stderr_tail", "rss_peak_bytes", "worker_trials_before",
                   "measured_together")
#: TrialSpec.label fields copied into the column of the same name.
LABEL_COLUMNS = ("pipeline", "ordering", "format", "source_mode", "semantics", "semantics_why", "breaks_semantics")


@dataclass(frozen=True)
class RowContext:
    """Everything a row is built from."""

    spec: TrialSpec
    outcome: Outcome
    run_id: str
    host: str
    machine: MachineFacts
    started: float  # time.time() when the trial started
    ended: float
    study: str | None = None
    optuna_trial_number: int | None = None

    @functools.cached_property
    def basis(self) -> str | None:
        """The figure a train trial's verdict reads: the experiment's trainer and where the worker ran the step decide."""
        if self.spec.mode != "train":
            return None
        return verdict_basis(self.spec.measurement.trainer, self.outcome.record.train_device)

    @functools.cached_property
    def figures(self) -> Figures | None:
        """The trial's figures with their intervals, computed once from its windows."""
        if self.outcome.record.status is not TrialStatus.OK:
            return None
        return figures(self.outcome.record.windows_measured, self.basis or SLOWDOWN)


def _utc(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).isoformat(timespec="seconds")


def _params(c: RowContext) -> str:
    s = c.spec
    return json.dumps({"pipeline": s.pipeline_spec, "batch_size": s.batch_size,
                       "threads": {"intra": s.threads.intra, "inter": s.threads.inter}, "env": s.env,
                       "model": to_json(s.model), "measurement": to_json(s.measurement),
                       "sources": to_json(s.sources)}, sort_keys=True)


def _figure(name: str, part: str, scale: float = 1.0) -> Callable[[RowContext], float | None]:
    """Give the producer of one bound (mean, low or high) of one figure (pipebench.measure.figures)."""
    def get(c: RowContext) -> float | None:
        found = c.figures
        interval = None if found is None else getattr(found, name)
        value = None if interval is None else getattr(interval, part)
        return None if value is None else value * scale
    return get


def _input_bound(c: RowContext) -> str | None:
    """The trial's label on its basis; inconclusive on a busy machine (results.configurations.Configuration.verdict)."""
    if c.figures is None or c.figures.verdict is None:
        return None
    return "inconclusive" if _busy(c) else c.figures.verdict


def _input_bound_basis(c: RowContext) -> str | None:
    """The figure a train trial's verdict reads (`input_bound`, when it has one); None for other and failed trials."""
    return c.basis if c.figures is not None else None


def _busy(c: RowContext) -> bool | None:
    """Whether other processes used more than measurement.busy_other_cpu_pct during the windows."""
    return busy_machine(c.outcome.usage, c.spec.measurement.busy_other_cpu_pct)


def _service(c: RowContext) -> str | None:
    """The sources.service settings a service-mode trial ran with (its servers' addresses are in its stderr)."""
    if c.spec.label.source_mode != "service":
        return None
    return json.dumps(to_json(c.spec.sources.service), sort_keys=True)


def _from(part: str, name: str) -> Callable[[RowContext], Any]:
    def get(c: RowContext) -> Any:
        source = {"record": c.outcome.record, "usage": c.outcome.usage, "process": c.outcome.process,
                  "label": c.spec.label}[part]
        value = None if source is None else getattr(source, name)
        return value.value if isinstance(value, TrialStatus) else value
    get.producer = part
    return get


COLUMNS: dict[str, Callable[[RowContext], Any]] = {
    "run_id": lambda c: c.run_id,
    "trial_id": lambda c: c.spec.trial_id,
    "repeat": lambda c: c.spec.repeat,
    "host": lambda c: c.host,
    "host_fingerprint": lambda c: c.machine.host_fingerprint,
    "instance_type": lambda c: c.machine.sagemaker.instance_type,
    "instance_type_source": lambda c: c.machine.sagemaker.instance_type_source,
    "started_utc": lambda c: _utc(c.started),
    "ended_utc": lambda c: _utc(c.ended),
    "mode": lambda c: c.spec.mode,
    "pipeline_fingerprint": lambda c: c.spec.pipeline_fingerprint,
    "data_fingerprint": lambda c: c.spec.data_fingerprint,
    "config_key": lambda c: c.spec.config_key,
    "batch_size": lambda c: c.spec.batch_size,
    "intra_op_threads": lambda c: c.spec.threads.intra,
    "inter_op_threads": lambda c: c.spec.threads.inter,
    **{f"env_{name}": (lambda c, name=name: c.spec.env.get(name)) for name in ENV_KNOBS},
    "params_json": _params,
    "knobs_not_applied": lambda c: c.spec.knobs_not_applied,
    "pinned_knobs": lambda c: c.spec.pinned_knobs,
    "env_seen_json": lambda c: json.dumps(c.outcome.record.env_seen, sort_keys=True),
    "configuration_id": lambda c: c.spec.configuration_id,
    "remeasure_of": lambda c: c.spec.remeasure_of,
    "input_bound": _input_bound,
    "input_bound_basis": _input_bound_basis,
    **{f"examples_per_sec_{part}": _figure("throughput", part) for part in ("mean", "low", "high")},
    **{f"synthetic_examples_per_sec_{part}": _figure("synthetic", part) for part in ("mean", "low", "high")},
    "input_wait_pct": _figure("waiting", "mean", 100.0),
    "input_wait_low_pct": _figure("waiting", "low", 100.0),
    "input_wait_high_pct": _figure("waiting", "high", 100.0),
    "input_slowdown_pct": _figure("slowdown", "mean", 100.0),
    "input_slowdown_low_pct": _figure("slowdown", "low", 100.0),
    "input_slowdown_high_pct": _figure("slowdown", "high", 100.0),
    "busy_machine": _busy,
    "service_json": _service,
    "windows_json": lambda c: json.dumps(to_json(c.outcome.record.windows_measured)),
    "usage_samples": lambda c: None if c.outcome.usage is None else c.outcome.usage.samples,
    # profiling is never on while a trial is timed: a separate re-run after the run's trials captures it, and
    # pipebench.profiling records its folder in the row by `profiled_row` (RunFolder.note_profile)
    "profile_dir": lambda c: None,
    "study": lambda c: c.study,
    "optuna_trial_number": lambda c: c.optuna_trial_number,
    **{name: _from("record", name) for name in RECORD_COLUMNS},
    **{name: _from("usage", name) for name in USAGE_COLUMNS},
    **{name: _from("process", name) for name in PROCESS_COLUMNS},
    **{name: _from("label", name) for name in LABEL_COLUMNS},
}


def trial_row(context: RowContext) -> TrialRow:
    """Give the trials.parquet row of one finished trial, every column filled by its producer."""
    return TrialRow(**{name: COLUMNS[name](context) for name in TRIAL_SCHEMA.names})


def profiled_row(row: TrialRow, profile_dir: str) -> TrialRow:
    """Give a trial's row once a profiling re-run captured its trace (pipebench.profiling): `profile_dir`, its log
    folder relative to the run folder, is the one column filled after the trial ran."""
    return dataclasses.replace(row, profile_dir=profile_dir)


#: The columns that name a trial; a collected folder scopes them by the member run folder (`member_row`).
ID_COLUMNS = ("trial_id", "remeasure_of")


def member_id(member: str, trial_id: str | None) -> str | None:
    """Give a member run's trial id as a collected folder names it: `<member>/<id>` (unique across members)."""
    return None if trial_id is None else f"{member}/{trial_id}"


def member_row(row: dict[str, Any], member: str) -> dict[str, Any]:
    """Give a member run's row as a folder of several runs (`pipebench sagemaker collect`) holds it: every column
    as `trial_row` filled it, only the ids scoped by the member's folder, so they stay unique and a re-measure
    still names the trial it measures again."""
    return {**row, **{name: member_id(member, row[name]) for name in ID_COLUMNS}}


def unproduced_fields() -> dict[str, list[str]]:
    """Give the producers' fields no column takes (tests assert this is empty)."""
    from pipebench.measure.manager import ProcessFacts
    from pipebench.measure.sampler import Usage
    from pipebench.measure.trial import PipelineLabel, TrialRecord

    taken = {"record": set(RECORD_COLUMNS) | set(RECORD_ONLY), "usage": set(USAGE_COLUMNS) | {"samples"},
             "process": set(PROCESS_COLUMNS), "label": set(LABEL_COLUMNS)}
    kinds = {"record": TrialRecord, "usage": Usage, "process": ProcessFacts, "label": PipelineLabel}
    return {part: sorted({f.name for f in fields(kind)} - taken[part]) for part, kind in kinds.items()
            if {f.name for f in fields(kind)} - taken[part]}
