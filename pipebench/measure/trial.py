"""What crosses the manager / worker boundary, typed: `TrialSpec` in, `TrialRecord` out, `TrialStatus`.

The manager writes a TrialSpec as trial.json and the worker loads it strictly; the worker writes a
TrialRecord as result.json, every key present, and the manager loads it strictly. A key read
under the wrong name is then an error in tests, not a `None` in a results row (Optuna's
FrozenTrial + TrialState, Hydra's JobReturn + JobStatus). The experiment's blocks a trial carries
(`measurement`, `model`, `quality`, `sources`) are typed records of exactly the schema's keys
(config.SCHEMA; config.typed_block makes them from a block); what capacity profiling, `run --profile` and the benchmarks change besides them
are TrialSpec fields of their own, never extra keys in a block.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipebench.typed import load_json, to_json


class TrialStatus(str, enum.Enum):
    """How a trial ended. Which endings spend the failure budget, and what Optuna is told, live here once."""

    OK = "ok"
    FAILED = "failed"  # the worker raised or crashed
    TIMEOUT = "timeout"  # killed at budget.trial_timeout_sec
    MEMORY_CAP = "memory_cap"  # killed past budget.memory_cap_mb
    INVALID = "invalid"  # a setting this pipeline or data cannot take
    UNAVAILABLE = "unavailable"  # what it needs does not exist here (PipeModeDataset outside TF 2.14)
    INTERRUPTED = "interrupted"  # Ctrl-C while it ran
    PRUNED = "pruned"  # stopped by the search's pruner between windows

    @property
    def counts_as_failure(self) -> bool:
        """Whether it spends budget.max_failure_rate: a trial that broke, not one that could not or need not run."""
        return self in (TrialStatus.FAILED, TrialStatus.TIMEOUT, TrialStatus.MEMORY_CAP, TrialStatus.INVALID)

    @property
    def optuna_state(self) -> str:
        """Give the name of the optuna.trial.TrialState a study is told for this ending."""
        return {TrialStatus.OK: "COMPLETE", TrialStatus.PRUNED: "PRUNED"}.get(self, "FAIL")


@dataclass(frozen=True)
class Threads:
    """TF's thread pools for the trial; None leaves TensorFlow's default."""

    intra: int | None
    inter: int | None


@dataclass(frozen=True)
class PipelineLabel:
    """How a results row names the pipeline a trial measured, and how it relates to its reference ordering."""

    pipeline: str  # preset name, "enumerated", a function pipeline's name, or "synthetic"
    ordering: str
    format: str | None  # None for a synthetic trial: the model alone, on a batch in memory
    source_mode: str
    semantics: str
    semantics_why: str
    breaks_semantics: bool


@dataclass(frozen=True)
class Measurement:
    """How a trial is measured: the experiment's `measurement` block (config.SCHEMA says what each key means)."""

    warmup_max_sec: float
    window_sec: float
    windows: int
    max_windows: int
    repeats: int
    steady_cv_pct: float
    sample_hz: float
    cold_cache: bool
    page_cache: bool
    busy_other_cpu_pct: float
    remeasure_busy: bool
    trainer: str



@dataclass(frozen=True)
class Model:
    """The DeepFM model a train trial runs: the experiment's `model` block."""

    embedding_size: int
    deep_layers: tuple[int, ...]
    dropout: float
    l2: float
    optimizer: str
    learning_rate: float



@dataclass(frozen=True)
class Quality:
    """The quality guard: the experiment's `quality` block."""

    enabled: bool
    train_examples: int
    eval_examples: int



@dataclass(frozen=True)
class FileSource:
    """Source mode `file` (sources.file)."""

    cold: bool


@dataclass(frozen=True)
class FastFileSource:
    """Source mode `fastfile` (sources.fastfile)."""

    emulate: bool
    first_read_latency_ms: float
    bandwidth_mb_per_sec: float | None


@dataclass(frozen=True)
class PipeSource:
    """Source mode `pipe` (sources.pipe)."""

    emulate: bool
    reader: str
    pipe_dir: str | None
    config_dir: str | None
    state_dir: str | None
    shuffle_seed: int | None
    bandwidth_mb_per_sec: float | None


@dataclass(frozen=True)
class ServiceSource:
    """Source mode `service` (sources.service)."""

    workers: int
    sharding_policy: str
    split_before: str
    read: str
    compression: str
    max_outstanding_requests: int | None
    worker_cpus: tuple[int, ...] | None
    fixed_worker_list: bool
    dispatcher: str | None


@dataclass(frozen=True)
class Sources:
    """How each source mode reads its files: the experiment's `sources` block."""

    file: FileSource
    fastfile: FastFileSource
    pipe: PipeSource
    service: ServiceSource



@dataclass(frozen=True)
class TrialSpec:
    """Everything a worker needs to run one trial; `trial_id` hashes it (with the repeat index)."""

    trial_id: str
    configuration_id: str  # the trial without its repeat index: repeats of one configuration share it
    repeat: int
    mode: str
    config_key: str  # the compute setting (batch, threads, env, model) train rows share with their ceiling
    pipeline_spec: dict[str, Any]  # PipelineSpec.to_dict(), files filled in; or a FunctionPipeline's
    pipeline_fingerprint: str
    label: PipelineLabel
    batch_size: int | None  # None: a function pipeline that batches as it is written
    threads: Threads
    env: dict[str, str]
    measurement: Measurement
    model: Model
    feature_size: int
    data_fingerprint: str
    quality: Quality
    holdout_files: tuple[str, ...]
    sources: Sources
    knobs_not_applied: tuple[str, ...] = ()  # search knobs this pipeline could not take
    pinned_knobs: tuple[str, ...] = ()  # knobs pipebench pinned because this machine cannot honour them
    remeasure_of: str | None = None  # the trial this one measures again (its machine was busy)
    # input mode only: measure the pipeline's first N stages, sunk (pipebench capacity's per-stage profiles)
    prefix_stages: int | None = None
    # a profiling re-run (pipebench.profiling): one window under the TensorFlow profiler into this folder
    profile_dir: str | None = None
    # a train trial times its synthetic ceiling in alternation with it; False times the train arm alone
    # (benchmarks/pairing.py's control)
    paired: bool = True
    # a paired train window follows a settling one, and a synthetic one waits for the pipeline to go idle; False
    # leaves both out (benchmarks/pairing.py's control)
    settle: bool = True
    fault: str | None = None  # tests only: make the worker fail this way

    def to_json(self) -> dict:
        return to_json(self)

    @classmethod
    def load(cls, path: Path) -> TrialSpec:
        return load_json(cls, path)


def trains_with(first: TrialSpec, trial: TrialSpec) -> bool:
    """Whether a warm worker (pipebench.measure.manager.shares_worker) times `trial`'s train arm in the rounds of
    `first`'s, beside one ceiling (pipebench.measure.windows): the same step on the same batch shape, measured the
    same way, with nothing else the worker does for one of them alone (a cold pass, the quality guard, a profile)."""
    def plain(t: TrialSpec) -> bool:
        return (t.mode == "train" and t.paired and t.batch_size is not None and t.profile_dir is None
                and t.fault is None and not t.measurement.cold_cache and not t.quality.enabled
                and _fields(t) is not None)  # a pipeline pipebench builds (a user's function trains alone)

    return (plain(first) and plain(trial) and trial.batch_size == first.batch_size and trial.model == first.model
            and trial.feature_size == first.feature_size and _fields(trial) == _fields(first)
            and trial.measurement == first.measurement and trial.settle == first.settle)


def _fields(trial: TrialSpec) -> object:
    """Give the field count F of a built pipeline's rows (its source's), which shapes the model."""
    source = trial.pipeline_spec.get("source")
    return source.get("field_size") if isinstance(source, dict) else None


#: The most train arms one measurement times: its rounds last as long as theirs together, within a trial's timeout.
MAX_TOGETHER = 4


def together(trials: list[TrialSpec]) -> list[int]:
    """Give, for each of a warm worker's trials in order, the index of the first trial of the measurement it is in:
    up to MAX_TOGETHER consecutive trials that `trains_with` the first of them share one."""
    found: list[int] = []
    for k, trial in enumerate(trials):
        joins = k and trains_with(trials[found[-1]], trial) and found.count(found[-1]) < MAX_TOGETHER
        found.append(found[-1] if joins else k)
    return found


def measured_with(firsts: list[int], k: int) -> range:
    """Give the indices of the trials measured with trial `k`, itself included, from `together`'s list (a
    measurement's trials are consecutive)."""
    return range(firsts[k], firsts[k] + firsts.count(firsts[k]))


@dataclass(frozen=True)
class Window:
    """One timed window of one arm (input, train or synthetic) in one round of a trial."""

    arm: str
    round: int
    examples: int
    seconds: float
    waited_sec: float | None  # train and synthetic arms: time the steps blocked fetching the next batch
    # a window after the train window of a cached pipeline (the synthetic one's, or another train arm's in pipebench
    # diagnose): seconds waited, untimed, for its background threads to go idle first (None: not waited; other
    # pipelines' iterators are released)
    idle_before_sec: float | None = None
    # CPU seconds (user + system) the worker's process tree used over the window (pipebench.measure.cpu_clock);
    # None in windows_json of runs made before it was recorded
    cpu_sec: float | None = None


@dataclass(frozen=True)
class TrialRecord:
    """What the worker measured (or why it could not); written whole, every key present.

    It refuses what cannot have happened (Optuna's FrozenTrial._validate): an ok trial timed windows, which its
    figures come from (a profiling re-run, which times none, says so: `profiled`); a trial that did not end ok
    says why and timed nothing a figure could be read from.
    """

    status: TrialStatus
    reason: str | None = None
    traceback: str | None = None
    tf_version: str | None = None
    worker_intra_op_threads: int | None = None
    worker_inter_op_threads: int | None = None
    env_seen: dict[str, str | None] = field(default_factory=dict)
    tensorflow_imported_before_settings: bool | None = None
    unsupported_options: tuple[str, ...] = ()
    source_note: str | None = None
    examples_per_sec_median: float | None = None
    examples_per_sec_p25: float | None = None
    examples_per_sec_p75: float | None = None
    examples_per_sec_cv_pct: float | None = None
    windows: int | None = None
    stable: bool | None = None
    window_rates: tuple[float, ...] = ()
    windows_measured: tuple[Window, ...] = ()
    rounds: int | None = None
    rounds_cap_hit: bool | None = None  # the verdict's figure was still undecided at measurement.max_windows
    # train and synthetic modes: the device type TensorFlow placed the train step on ("CPU", "GPU"), which
    # decides the verdict's basis under measurement.trainer auto (pipebench.measure.figures.verdict_basis)
    train_device: str | None = None
    warmup_sec: float | None = None
    warmup_steady: bool | None = None
    steps_per_call: int | None = None
    epochs_renewed: int | None = None
    # CLOCK_MONOTONIC (system-wide on Linux), so the manager's sampler can be cut to the windows.
    windows_started_sec: float | None = None
    windows_ended_sec: float | None = None
    cold_examples_per_sec: float | None = None
    page_cache_resident_after_evict: float | None = None
    fetch_stall_pct: float | None = None
    auc: float | None = None
    worker_sec: float | None = None
    # the CPUs the worker may run on as it started, read before TensorFlow was imported (sched_getaffinity)
    cpus_at_start: tuple[int, ...] = ()
    # TensorFlow's own view of them: the threads of its inter-op pool ("tf_Compute"), which it sizes from the
    # CPUs it may schedule on unless TF_NUM_INTEROP_THREADS says otherwise; None when it could not be read
    tf_inter_op_pool_threads: int | None = None
    # source mode `service`: bytes per example in the elements the service sends (before compression), read from
    # one element of the split part; × examples/s is what the client receives
    service_bytes_per_example: float | None = None
    # a profiling re-run (pipebench.profiling): one window under the TensorFlow profiler, nothing timed
    profiled: bool = False

    def __post_init__(self) -> None:
        if self.status is TrialStatus.OK:
            if self.reason is not None or self.traceback is not None:
                raise ValueError("status ok with a reason or traceback: a trial that ended ok has no failure to tell")
            if self.profiled and self.windows_measured:
                raise ValueError("a profiling re-run with windows_measured: the profiler's window is never timed")
            if not self.profiled and not self.windows_measured:
                raise ValueError("status ok with no windows_measured: an ok trial's figures come from its windows")
            return
        if not (self.reason or "").strip():
            raise ValueError(f"status {self.status.value} with no reason: a trial that did not end ok says why")
        if self.windows_measured:
            raise ValueError(f"status {self.status.value} with windows_measured: only an ok trial's windows are "
                             "figures")

    def to_json(self) -> dict:
        return to_json(self)

    @classmethod
    def load(cls, path: Path) -> TrialRecord:
        return load_json(cls, path)

