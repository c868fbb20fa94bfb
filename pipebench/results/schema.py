"""The results tables' columns and version. Change a column → bump SCHEMA_VERSION (and upgrade)."""
from __future__ import annotations

import pyarrow as pa

SCHEMA_VERSION = 9
VERSION_KEY = b"pipebench.schema_version"

#: trials.parquet: one row per trial (also failed, timed-out, killed and unavailable ones).
TRIAL_FIELDS = [
    ("run_id", pa.string()), ("trial_id", pa.string()), ("repeat", pa.int64()),
    ("host", pa.string()), ("host_fingerprint", pa.string()), ("instance_type", pa.string()),
    ("tf_version", pa.string()), ("started_utc", pa.string()), ("ended_utc", pa.string()),
    ("duration_sec", pa.float64()),
    ("status", pa.string()), ("reason", pa.string()),
    ("mode", pa.string()), ("pipeline", pa.string()), ("ordering", pa.string()),
    ("semantics", pa.string()), ("semantics_why", pa.string()), ("breaks_semantics", pa.bool_()),
    ("format", pa.string()), ("source_mode", pa.string()),
    ("pipeline_fingerprint", pa.string()), ("data_fingerprint", pa.string()), ("config_key", pa.string()),
    ("batch_size", pa.int64()), ("intra_op_threads", pa.int64()), ("inter_op_threads", pa.int64()),
    ("env_OMP_NUM_THREADS", pa.string()), ("env_KMP_AFFINITY", pa.string()), ("env_KMP_BLOCKTIME", pa.string()),
    ("env_KMP_SETTINGS", pa.string()), ("env_TF_ENABLE_ONEDNN_OPTS", pa.string()),
    ("params_json", pa.string()),
    ("examples_per_sec_median", pa.float64()), ("examples_per_sec_p25", pa.float64()),
    ("examples_per_sec_p75", pa.float64()), ("examples_per_sec_cv_pct", pa.float64()),
    ("windows", pa.int64()), ("warmup_sec", pa.float64()), ("warmup_steady", pa.bool_()), ("stable", pa.bool_()),
    ("input_bound", pa.string()), ("fetch_stall_pct", pa.float64()), ("auc", pa.float64()),
    ("cold_examples_per_sec", pa.float64()),
    ("cpu_pct_median", pa.float64()), ("cpu_pct_p95", pa.float64()), ("cpu_pct_of_vcpus_median", pa.float64()),
    ("cpu_pct_of_physical_cores_median", pa.float64()), ("busiest_core_pct_median", pa.float64()),
    ("rss_peak_bytes", pa.int64()),
    ("gpu_util_pct_median", pa.float64()), ("gpu_mem_peak_bytes", pa.int64()),
    ("worker_intra_op_threads", pa.int64()), ("worker_inter_op_threads", pa.int64()),
    ("exit_code", pa.int64()), ("signal", pa.int64()), ("stderr_tail", pa.string()),
    ("study", pa.string()), ("optuna_trial_number", pa.int64()),  # v2: the Optuna driver's rows
    # v3: every fact the worker, the manager and the sampler report has its column
    ("instance_type_source", pa.string()), ("source_note", pa.string()),
    ("unsupported_options", pa.list_(pa.string())), ("knobs_not_applied", pa.list_(pa.string())),
    ("pinned_knobs", pa.list_(pa.string())), ("env_seen_json", pa.string()),
    ("tensorflow_imported_before_settings", pa.bool_()), ("steps_per_call", pa.int64()),
    ("epochs_renewed", pa.int64()), ("window_rates", pa.list_(pa.float64())),
    ("windows_started_sec", pa.float64()), ("windows_ended_sec", pa.float64()),
    ("page_cache_resident_after_evict", pa.float64()), ("worker_sec", pa.float64()),
    ("usage_samples", pa.int64()), ("other_cpu_pct_median", pa.float64()), ("rss_median_bytes", pa.int64()),
    ("page_cache_resident_fraction_start", pa.float64()), ("page_cache_resident_fraction_end", pa.float64()),
    ("gpu_util_pct_p95", pa.float64()),
    # v4: figures with their 95% intervals, from paired rounds (pipebench.measure.figures)
    ("configuration_id", pa.string()), ("remeasure_of", pa.string()),
    ("examples_per_sec_mean", pa.float64()), ("examples_per_sec_low", pa.float64()),
    ("examples_per_sec_high", pa.float64()), ("synthetic_examples_per_sec_mean", pa.float64()),
    ("synthetic_examples_per_sec_low", pa.float64()), ("synthetic_examples_per_sec_high", pa.float64()),
    ("input_wait_pct", pa.float64()), ("input_wait_low_pct", pa.float64()), ("input_wait_high_pct", pa.float64()),
    ("input_slowdown_pct", pa.float64()), ("input_slowdown_low_pct", pa.float64()),
    ("input_slowdown_high_pct", pa.float64()), ("rounds", pa.int64()), ("rounds_cap_hit", pa.bool_()),
    ("busy_machine", pa.bool_()), ("windows_json", pa.string()),
    # v5: where `pipebench run --profile` put the trial's TensorBoard profile (pipebench.profiling)
    ("profile_dir", pa.string()),
    # v6: source mode `service`: the sources.service settings the trial ran with (null in other modes)
    ("service_json", pa.string()), ("service_bytes_per_example", pa.float64()),
    # v7: the figure the input-bound verdict read (slowdown | waiting) and where the train step ran
    ("input_bound_basis", pa.string()), ("train_device", pa.string()),
    # v8: trials a warm worker measured before this one (budget.trials_per_worker; 0: a fresh process)
    ("worker_trials_before", pa.int64()),
    # v9: train trials timed in one measurement with this one, itself included (one ceiling beside their arms)
    ("measured_together", pa.int64()),
]

#: samples.parquet: the sampler's time series, one row per sample per trial.
SAMPLE_FIELDS = [
    ("run_id", pa.string()), ("trial_id", pa.string()), ("t_sec", pa.float64()), ("wall_time", pa.float64()),
    ("processes", pa.int64()), ("threads", pa.int64()), ("cpu_pct", pa.float64()),
    ("cpu_pct_of_vcpus", pa.float64()), ("cpu_pct_of_physical_cores", pa.float64()),
    ("per_core_pct", pa.list_(pa.float64())), ("rss_bytes", pa.int64()), ("root_rss_peak_bytes", pa.int64()),
    ("page_cache_resident_fraction", pa.float64()), ("gpu_util_pct", pa.float64()),
    ("gpu_mem_used_bytes", pa.int64()), ("gpu_util_pct_per_device", pa.list_(pa.float64())),
]

TRIAL_SCHEMA = pa.schema(TRIAL_FIELDS)
SAMPLE_SCHEMA = pa.schema(SAMPLE_FIELDS)
