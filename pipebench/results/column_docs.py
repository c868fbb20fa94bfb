"""What each results column means, in a user's words (docs/reference/results-format.md is made from this).

The columns themselves are schema.py's; tests/test_docs.py checks that every column of both tables
has its description here and that nothing here names a column the tables lack. Units are in the
names (`_sec`, `_bytes`, `_pct`: 100 = one vCPU for CPU figures of a process tree).
"""
from __future__ import annotations

from pipebench.config.choices import ENV_KNOBS

TRIAL_COLUMN_DOCS: dict[str, str] = {
    "run_id": "The run folder's name (`YYYYmmdd-HHMMSS-<4 hex digits>`).",
    "trial_id": "The trial: a hash of its spec and repeat index; its files are in `trials/<trial_id>/`. In a folder "
                "`pipebench sagemaker collect` wrote, `<instance type>/<input mode>/<host>/<trial_id>`.",
    "repeat": "Which repeat of its configuration (0, 1, ...): one fresh process per round of the run.",
    "host": "The host name the trial ran on.",
    "host_fingerprint": "A hash of the machine facts that decide speed (machine.json); runs on different hosts "
                        "differ here.",
    "instance_type": "The instance type: SageMaker's, or the one you asserted with `--instance-type`.",
    "tf_version": "TensorFlow's version in the worker.",
    "started_utc": "When the trial started (ISO 8601, UTC).",
    "ended_utc": "When it ended.",
    "duration_sec": "Worker start to exit; in a warm worker (`worker_trials_before`), from the trial before's result "
                    "to this one's (the first holds the worker's start, the last its exit); trials timed in one "
                    "measurement (`measured_together`) each hold its whole span.",
    "status": "How the trial ended: `ok`, `failed`, `timeout`, `memory_cap`, `invalid`, `unavailable`, "
              "`pruned` or `interrupted`.",
    "reason": "Why a trial that is not `ok` ended so (one line).",
    "mode": "`input` (the pipeline alone), `train` (the train step on the pipeline, with its ceiling) or "
            "`synthetic` (the ceiling alone).",
    "pipeline": "A preset name, `enumerated` (an ordering of `pipelines.orderings`) or `synthetic`.",
    "ordering": "The stages in order, e.g. `cache > shuffle > batch > decode > repeat > prefetch`.",
    "semantics": "`equivalent` to the reference ordering, or the named difference (e.g. `cache-after-shuffle`).",
    "semantics_why": "What that difference means for training, and what a source mode dropped.",
    "breaks_semantics": "Whether this ordering changes what training sees (allowed only by `enumerate.allow`).",
    "format": "`libsvm`, `tfrecord` or `packed`; null for a synthetic trial.",
    "source_mode": "`file`, `fastfile`, `pipe` or `service`.",
    "pipeline_fingerprint": "A hash of the resolved pipeline spec.",
    "data_fingerprint": "A hash of the data (data.json): runs on other data are not compared.",
    "config_key": "The compute setting (batch, threads, environment, model) a train row shares with its ceiling.",
    "batch_size": "Examples per batch.",
    "intra_op_threads": "The intra-op pool size asked for; null: TensorFlow's default.",
    "inter_op_threads": "The inter-op pool size asked for; null: TensorFlow's default.",
    **{f"env_{knob}": f"`{knob}` as set for the trial; null: unset." for knob in ENV_KNOBS},
    "params_json": "Everything the trial ran with as JSON: pipeline spec, batch size, threads, environment, "
                   "model, measurement and `sources` settings.",
    "examples_per_sec_median": "The worker's median over its windows (a diagnostic only: rankings read "
                               "`examples_per_sec_mean`).",
    "examples_per_sec_p25": "25th percentile of the per-window throughput.",
    "examples_per_sec_p75": "75th percentile of the per-window throughput.",
    "examples_per_sec_cv_pct": "Coefficient of variation of the per-window throughput.",
    "windows": "Timed windows of the measured arm.",
    "warmup_sec": "Seconds spent warming up.",
    "warmup_steady": "Whether warm-up steadied (three slices within `steady_cv_pct`) before `warmup_max_sec`; in a "
                     "train trial, the ceiling's and a cached pipeline's (a train arm released between its windows is "
                     "calibrated, not warmed: each window starts it afresh after a settle window).",
    "stable": "Whether the windows' coefficient of variation is within 10% (a pyperf-style check).",
    "input_bound": "The verdict: `not input-bound`, `moderately input-bound`, `highly input-bound` or "
                   "`inconclusive` (always inconclusive on a busy machine); train trials only.",
    "fetch_stall_pct": "With `measurement.cold_cache`: 1 − cold / warm throughput, in %: what fetching from storage "
                       "costs (DS-Analyzer's fetch stall).",
    "auc": "With `quality.enabled`: the fresh model's AUC on the held-out rows.",
    "cold_examples_per_sec": "With `measurement.cold_cache`: throughput of the pass after the page cache was "
                             "evicted.",
    "cpu_pct_median": "CPU of the trial's process tree over the measured windows, median (100 = one vCPU).",
    "cpu_pct_p95": "Its 95th percentile.",
    "cpu_pct_of_vcpus_median": "CPU as a share of the vCPUs the trial may use, median.",
    "cpu_pct_of_physical_cores_median": "CPU as a share of the physical cores, median.",
    "busiest_core_pct_median": "The busiest core's busy %, median.",
    "rss_peak_bytes": "Peak RSS of the process tree (the largest of the manager's polls, the sampler's and the "
                      "root's VmHWM); a warm worker's trial reads the sampler's samples of its own span (after its first, "
                      "the tree's RSS only: VmHWM keeps the earlier trials' peaks), or the worker's peak when its "
                      "span has none.",
    "gpu_util_pct_median": "GPU utilisation (NVML), median; null without a GPU.",
    "gpu_mem_peak_bytes": "Peak GPU memory used.",
    "worker_intra_op_threads": "The intra-op pool size TensorFlow reported using.",
    "worker_inter_op_threads": "The inter-op pool size TensorFlow reported using.",
    "exit_code": "The worker's exit code; null for a trial its warm worker went on from.",
    "signal": "The signal that ended the worker, if one did.",
    "stderr_tail": "The end of the worker's stderr (all of it is in `trials/<id>/stderr.txt`; a warm worker's, "
                   "all its trials', is in each).",
    "worker_trials_before": "Trials its worker measured before this one: 0, a fresh process; more, a warm worker "
                            "(`budget.trials_per_worker`: same repeat, environment and threads). Null in "
                            "tables before v8.",
    "measured_together": "Train trials timed in one measurement with this one, itself included: a warm worker's train "
                         "trials of one batch shape time each one's train arm beside one ceiling, in the same rounds "
                         "(each trial's synthetic figures read the ceiling's windows of the rounds its arm was timed "
                         "in; an arm leaves once its verdict is decided). They share the measurement's process "
                         "columns (duration, worker_trials_before, rss_peak_bytes, samples); the usage columns (CPU, "
                         "rss_median_bytes, other processes' CPU, so busy_machine) read the whole tree's samples from "
                         "the first round to the last its own arm was timed in. 1: alone. Null in tables before v9.",
    "study": "The Optuna study's name (Optuna runs only).",
    "optuna_trial_number": "The Optuna trial's number (Optuna runs only).",
    "instance_type_source": "Where `instance_type` came from: `SM_CURRENT_INSTANCE_TYPE` inside a job, "
                            "`asserted (--instance-type)` when you named it.",
    "source_note": "What the source did differently, e.g. the labelled pure-Python Pipe fallback.",
    "unsupported_options": "tf.data options this TensorFlow lacks (reported, not crashed on).",
    "knobs_not_applied": "Search knobs this pipeline could not take (no such stage, an option Pipe mode lacks).",
    "pinned_knobs": "Knobs pipebench pinned because this machine cannot honour them (`search.pin_inert`).",
    "env_seen_json": "The environment knobs as the worker saw them, as JSON.",
    "tensorflow_imported_before_settings": "Whether TensorFlow was already imported when the settings were "
                                           "applied (then they could not act).",
    "steps_per_call": "Steps per timed call, from calibration.",
    "epochs_renewed": "How often the pipeline ran out and its iterator was made again while measuring.",
    "window_rates": "Examples/s of each window of the measured arm.",
    "windows_started_sec": "When the first window started (CLOCK_MONOTONIC), to cut the samples to the windows.",
    "windows_ended_sec": "When the last window ended (of trials timed together, the last round its arm was "
                         "timed in).",
    "page_cache_resident_after_evict": "With `measurement.cold_cache`: the data files' page-cache residency "
                                       "right after eviction.",
    "worker_sec": "Seconds the worker ran, on its own clock.",
    "usage_samples": "Sampler readings over the measured windows.",
    "other_cpu_pct_median": "CPU used by processes outside the trial during its windows, median (100 = one "
                            "vCPU): what competed with it.",
    "rss_median_bytes": "RSS of the process tree, median.",
    "page_cache_resident_fraction_start": "With `measurement.page_cache`: the data files' page-cache residency "
                                          "at the first window.",
    "page_cache_resident_fraction_end": "The same at the last window.",
    "gpu_util_pct_p95": "GPU utilisation, 95th percentile.",
    "configuration_id": "The configuration: what its repeats share (12 hex digits).",
    "remeasure_of": "The trial this one measures again, its machine having been busy.",
    "examples_per_sec_mean": "Throughput: the geometric mean over the windows (the figure every ranking reads).",
    "examples_per_sec_low": "Low end of its 95% interval.",
    "examples_per_sec_high": "High end of its 95% interval.",
    "synthetic_examples_per_sec_mean": "Train and synthetic trials: the compute ceiling (the step on one batch "
                                       "from memory), geometric mean.",
    "synthetic_examples_per_sec_low": "Low end of its 95% interval.",
    "synthetic_examples_per_sec_high": "High end of its 95% interval.",
    "input_wait_pct": "Waiting: the share of train-step wall time spent blocked fetching the next batch.",
    "input_wait_low_pct": "Low end of its 95% interval.",
    "input_wait_high_pct": "High end of its 95% interval.",
    "input_slowdown_pct": "Slowdown: 1 − train / ceiling throughput over the paired rounds, in %.",
    "input_slowdown_low_pct": "Low end of its 95% interval.",
    "input_slowdown_high_pct": "High end of its 95% interval.",
    "rounds": "Rounds measured (each times one window of every arm).",
    "rounds_cap_hit": "Whether the verdict's figure was still undecided at `measurement.max_windows`.",
    "busy_machine": "Whether other processes used more than `measurement.busy_other_cpu_pct` during the windows.",
    "windows_json": "Every measured window (arm, round, examples, seconds, waiting, CPU) as JSON: the figures are "
                    "computed from it.",
    "profile_dir": "Where `run --profile` put the trial's TensorBoard profile, relative to the run folder; null "
                   "when not profiled.",
    "service_json": "Source mode `service`: the `sources.service` settings the trial ran with.",
    "service_bytes_per_example": "Source mode `service`: bytes per example the service sends (before "
                                 "compression).",
    "input_bound_basis": "The figure the verdict read: `slowdown` (a CPU trainer) or `waiting` (an accelerator).",
    "train_device": "The device TensorFlow placed the train step on (`CPU`, `GPU`).",
}

SAMPLE_COLUMN_DOCS: dict[str, str] = {
    "run_id": "The run folder's name.",
    "trial_id": "The trial sampled.",
    "t_sec": "When (CLOCK_MONOTONIC seconds), comparable with `windows_started_sec` / `windows_ended_sec`.",
    "wall_time": "When, as `time.time()`.",
    "processes": "Processes in the trial's tree.",
    "threads": "Threads in the trial's tree.",
    "cpu_pct": "CPU of the tree (100 = one vCPU).",
    "cpu_pct_of_vcpus": "CPU as a share of the vCPUs.",
    "cpu_pct_of_physical_cores": "CPU as a share of the physical cores.",
    "per_core_pct": "Each core's busy %.",
    "rss_bytes": "RSS of the tree.",
    "root_rss_peak_bytes": "The worker's own VmHWM.",
    "page_cache_resident_fraction": "With `measurement.page_cache`: the data files' page-cache residency.",
    "gpu_util_pct": "GPU utilisation (NVML).",
    "gpu_mem_used_bytes": "GPU memory used.",
    "gpu_util_pct_per_device": "Utilisation of each GPU.",
}
