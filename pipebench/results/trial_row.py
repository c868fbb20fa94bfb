"""One trials.parquet row, typed (`TrialRow`), and the one reader that gives them, from Parquet or a DataFrame.

Every consumer (reports, checklist, compare, what-if, capacity, profiles, the loop's progress and the
search's planners) reads a row's columns as attributes, never as `row.get("column")`: a column read
under a wrong name is an AttributeError in tests, not a None in a report. The row builder
(pipebench.results.rows) makes a TrialRow, the store appends `to_dict()`, and `rows_of` / `records`
read them back through pipebench.typed, so a cell of the wrong type is a one-line DataError naming the
row. Rows of an older schema version (v2 to v6, which the store still reads) have None in the
columns added since. The few facts kept as JSON in a column (params_json, service_json) are read
here too, so that nobody else digs into them with `.get` chains.
"""
from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pipebench.results.schema import TRIAL_SCHEMA
from pipebench.typed import from_json

if TYPE_CHECKING:
    import pandas
    import pyarrow as pa


@dataclass(frozen=True)
class TrialRow:
    """One trial's row of trials.parquet: every column of results schema v9, in schema order
    (pipebench.results.column_docs says what each holds; tests check the two agree)."""

    run_id: str
    trial_id: str
    repeat: int
    host: str | None
    host_fingerprint: str | None
    instance_type: str | None
    tf_version: str | None
    started_utc: str | None
    ended_utc: str | None
    duration_sec: float | None
    status: str
    reason: str | None
    mode: str
    pipeline: str | None
    ordering: str | None
    semantics: str | None
    semantics_why: str | None
    breaks_semantics: bool | None
    format: str | None
    source_mode: str | None
    pipeline_fingerprint: str | None
    data_fingerprint: str | None
    config_key: str | None
    batch_size: int | None
    intra_op_threads: int | None
    inter_op_threads: int | None
    env_OMP_NUM_THREADS: str | None
    env_KMP_AFFINITY: str | None
    env_KMP_BLOCKTIME: str | None
    env_KMP_SETTINGS: str | None
    env_TF_ENABLE_ONEDNN_OPTS: str | None
    params_json: str | None
    examples_per_sec_median: float | None
    examples_per_sec_p25: float | None
    examples_per_sec_p75: float | None
    examples_per_sec_cv_pct: float | None
    windows: int | None
    warmup_sec: float | None
    warmup_steady: bool | None
    stable: bool | None
    input_bound: str | None
    fetch_stall_pct: float | None
    auc: float | None
    cold_examples_per_sec: float | None
    cpu_pct_median: float | None
    cpu_pct_p95: float | None
    cpu_pct_of_vcpus_median: float | None
    cpu_pct_of_physical_cores_median: float | None
    busiest_core_pct_median: float | None
    rss_peak_bytes: int | None
    gpu_util_pct_median: float | None
    gpu_mem_peak_bytes: int | None
    worker_intra_op_threads: int | None
    worker_inter_op_threads: int | None
    exit_code: int | None
    signal: int | None
    stderr_tail: str | None
    study: str | None
    optuna_trial_number: int | None
    instance_type_source: str | None
    source_note: str | None
    unsupported_options: tuple[str, ...] | None
    knobs_not_applied: tuple[str, ...] | None
    pinned_knobs: tuple[str, ...] | None
    env_seen_json: str | None
    tensorflow_imported_before_settings: bool | None
    steps_per_call: int | None
    epochs_renewed: int | None
    window_rates: tuple[float, ...] | None
    windows_started_sec: float | None
    windows_ended_sec: float | None
    page_cache_resident_after_evict: float | None
    worker_sec: float | None
    usage_samples: int | None
    other_cpu_pct_median: float | None
    rss_median_bytes: int | None
    page_cache_resident_fraction_start: float | None
    page_cache_resident_fraction_end: float | None
    gpu_util_pct_p95: float | None
    configuration_id: str | None
    remeasure_of: str | None
    examples_per_sec_mean: float | None
    examples_per_sec_low: float | None
    examples_per_sec_high: float | None
    synthetic_examples_per_sec_mean: float | None
    synthetic_examples_per_sec_low: float | None
    synthetic_examples_per_sec_high: float | None
    input_wait_pct: float | None
    input_wait_low_pct: float | None
    input_wait_high_pct: float | None
    input_slowdown_pct: float | None
    input_slowdown_low_pct: float | None
    input_slowdown_high_pct: float | None
    rounds: int | None
    rounds_cap_hit: bool | None
    busy_machine: bool | None
    windows_json: str | None
    profile_dir: str | None
    service_json: str | None
    service_bytes_per_example: float | None
    input_bound_basis: str | None
    train_device: str | None
    worker_trials_before: int | None
    measured_together: int | None

    @property
    def ok(self) -> bool:
        """Whether the trial ended ok (it has windows and figures)."""
        return self.status == "ok"

    @functools.cached_property
    def params(self) -> dict[str, Any]:
        """Give the settings the trial ran with (params_json: pipeline, batch_size, threads, env, model,
        measurement, sources); empty for a row without them."""
        return json.loads(self.params_json) if self.params_json else {}

    @property
    def pipeline_spec(self) -> dict[str, Any]:
        """Give the pipeline the trial measured (PipelineSpec.to_dict() form, or a FunctionPipeline's)."""
        return self.params["pipeline"]

    def source_setting(self, name: str) -> Any:
        """Give one setting of the pipeline's source (`mode`, `num_parallel_reads`, ...); None when it has none."""
        return ((self.params.get("pipeline") or {}).get("source") or {}).get(name)

    @property
    def stage_kinds(self) -> list[str]:
        """Give the kinds of the pipeline's stages, in order (empty for a function pipeline or an unreadable one)."""
        try:
            stages = (self.params.get("pipeline") or {}).get("stages") or []
        except (TypeError, ValueError):
            return []
        return [next(iter(stage)) for stage in stages if isinstance(stage, dict) and stage]

    @property
    def trainer(self) -> str | None:
        """Give the experiment's `measurement.trainer` the trial ran under (None for rows that did not record one)."""
        return (self.params.get("measurement") or {}).get("trainer")

    @property
    def service(self) -> dict[str, Any]:
        """Give the sources.service settings a service-mode trial ran with (empty in other modes)."""
        return json.loads(self.service_json) if self.service_json else {}

    def to_dict(self) -> dict[str, Any]:
        """Give the row as the store appends it: column → value, lists as lists."""
        return {f.name: list(v) if isinstance(v, tuple) else v
                for f in dataclasses.fields(self) for v in (getattr(self, f.name),)}


def rows_of(table: pa.Table, where: str) -> list[TrialRow]:
    """Give a trials table's rows, typed; DataError `WHERE: row N.column: reason` for a cell of the wrong type."""
    return [from_json(TrialRow, row, f"{where}: row {index + 1}")
            for index, row in enumerate(table.select(TRIAL_SCHEMA.names).to_pylist())]


def records(trials: pandas.DataFrame) -> list[TrialRow]:
    """Give the rows of a trials DataFrame (RunResults.trials, several runs' concatenated, or a part of one), typed.

    Through Arrow, with the results schema: pandas holds a whole-number column with nulls as floats
    and NaN, and lists as arrays; the schema gives them back as ints, None and lists.
    """
    import pyarrow as pa

    table = pa.Table.from_pandas(trials[TRIAL_SCHEMA.names], schema=TRIAL_SCHEMA, preserve_index=False)
    return rows_of(table, "trials")
