"""Small hand-made run folders for report and checklist tests: fast, deterministic, no TensorFlow.

Every row is what the real row builder (pipebench.results.rows.trial_row) makes of a trial whose worker
timed the given windows (pipebench.testing.windows_at): figures, intervals, verdicts and the busy flag
are computed, never typed in, so a fixture cannot claim what its windows do not show.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import statistics
from collections.abc import Callable
from pathlib import Path

import yaml

from pipebench.datasets import DATA_VERSION, DataFacts
from pipebench.measure.facts import MachineFacts
from pipebench.measure.manager import Outcome, ProcessFacts
from pipebench.measure.sampler import Usage
from pipebench.config.choices import ENV_KNOBS
from pipebench.measure.intervals import Interval
from pipebench.measure.trial import PipelineLabel, Threads, TrialRecord, TrialStatus
from pipebench.pipeline.presets import preset
from pipebench.pipeline.spec import PipelineSpec
from pipebench.results import CONFIG_FILE, DATA_FILE, MACHINE_FILE, SAMPLES_FILE, TRIALS_FILE
from pipebench.results.rows import PROCESS_COLUMNS, RECORD_COLUMNS, USAGE_COLUMNS, RowContext, trial_row
from pipebench.results.schema import SAMPLE_SCHEMA, TRIAL_SCHEMA
from pipebench.results.store import append_rows
from pipebench.results.study import StudyRecord, Winner
from pipebench.results.trial_row import TrialRow
from pipebench.testing import trial_spec, windows_at
from pipebench.typed import from_json, to_json

VECTORIZED = [{"cache": "memory"}, {"shuffle": {"buffer_size": 100, "seed": 7}},
              {"batch": {"batch_size": 1024, "drop_remainder": True}}, {"decode": {"num_parallel_calls": "AUTOTUNE"}},
              {"repeat": {"epochs": None}}, {"prefetch": "AUTOTUNE"}]
SCALAR = [{"decode": {"num_parallel_calls": "AUTOTUNE"}}, {"shuffle": {"buffer_size": 100, "seed": 7}},
          {"batch": {"batch_size": 1024, "drop_remainder": True}}, {"repeat": {"epochs": None}}, {"prefetch": "AUTOTUNE"}]
DATA_FILE_BYTES = 1000
GOLDEN_MACHINE = Path(__file__).parent / "golden" / "machine.json"
#: The TrialSpec fields a fixture row may set (the rest of `extra` goes to the worker, manager or sampler).
_SPEC_FIELDS = ("data_fingerprint", "config_key", "remeasure_of", "pinned_knobs", "knobs_not_applied")


def machine(vcpus: int = 4, physical_cores: int = 2, memory_bytes: int = 16 * 2**30, openmp_linked: bool = False,
            host_count: int | None = None, instance_type: str | None = None) -> dict:
    """Give a machine.json document: the golden one (a real machine_facts()) with these facts replaced."""
    facts = json.loads(GOLDEN_MACHINE.read_text())
    facts["cpu"].update(model="Test CPU", vcpus=vcpus, physical_cores=physical_cores)
    facts["memory_bytes"] = memory_bytes
    facts["tensorflow"]["openmp"].update(linked=openmp_linked, runtimes=["libiomp5.so"] if openmp_linked else [],
                                         statement="linked" if openmp_linked else "no OpenMP runtime linked")
    facts["sagemaker"].update(host_count=host_count, instance_type=instance_type,
                              instance_type_source="asserted (--instance-type)" if instance_type else None)
    facts["host_fingerprint"] = "hosttest"
    return facts


FACTS = MachineFacts.from_json(machine(), "machine.json")

#: A small instance catalog (catalog.yaml): its header and three c5 sizes; a test adds the instances it needs.
CATALOG_C5 = """
region: us-east-1
prices_as_of: "2024-06"
currency: USD
instances:
  ml.c5.xlarge:   {family: c5, vcpus: 4, physical_cores: 2, memory_gib: 8, gpus: 0, price_per_hour: 0.2}
  ml.c5.2xlarge:  {family: c5, vcpus: 8, physical_cores: 4, memory_gib: 16, gpus: 0, price_per_hour: 0.4}
  ml.c5.4xlarge:  {family: c5, vcpus: 16, physical_cores: 8, memory_gib: 32, gpus: 0, price_per_hour: 0.8}
"""


def _pipeline(mode: str, fmt: str, stages: list[dict], files: list[str], source_mode: str,
              num_parallel_reads: int | None, batch_size: int) -> PipelineSpec:
    if mode == "synthetic" or not stages:  # the model alone: a real batch of the reference pipeline, in memory
        spec = preset("aws-sample", files=tuple(files), epochs=None)
    else:
        if source_mode == "pipe":  # PipeModeDataset has no parallel reads
            num_parallel_reads = None
        spec = PipelineSpec.from_dict({"source": {"format": fmt, "mode": source_mode, "files": files,
                                                  "compression": "none", "num_parallel_reads": num_parallel_reads,
                                                  "field_size": 39},
                                       "stages": copy.deepcopy(stages)})
    return spec.with_stage(spec.stage("batch").replace(batch_size=batch_size))


def trial(trial_id: str, mode: str, pipeline: str, fmt: str, stages: list[dict], examples_per_sec: float,
          files: list[str], source_mode: str = "file", num_parallel_reads: int | None = 4, *, repeat: int = 0,
          configuration_id: str | None = None, rates: list[float] | None = None, waiting: float = 0.01,
          synthetic: float | None = None, busy: bool = False, run_id: str = "run", **extra) -> TrialRow:
    """Give the trials.parquet row the row builder makes of one trial timed at about `examples_per_sec`.

    Three rounds (`rates` sets them exactly); a train trial's steps wait `waiting` of their time, ±10% between
    rounds, and its synthetic arm runs at `synthetic`, by default as fast as the step would without that wait
    (rate / (1 − waiting): input costs it what it waits, so both bases give one verdict). `busy` has other
    processes use 80% of a vCPU during the windows. Any other column is set through the producer that
    owns it (spec, worker record, sampler, manager), or on the row when it describes the machine.
    """
    extra = dict(extra)
    batch_size = extra.pop("batch_size", 1024)
    spec = _pipeline(mode, fmt, stages, files, source_mode, num_parallel_reads, batch_size)
    label = PipelineLabel(pipeline, spec.ordering, fmt, source_mode, "reference", "preset", False)
    if mode == "synthetic":
        label = PipelineLabel("synthetic", "in-memory batch", None, source_mode, "n/a", "the model alone", False)
    spec_changes = {name: extra.pop(name) for name in _SPEC_FIELDS if name in extra}
    for name in ("pinned_knobs", "knobs_not_applied"):
        if name in spec_changes:
            spec_changes[name] = tuple(spec_changes[name])
    env = {name: extra.pop(f"env_{name}") for name in ENV_KNOBS if extra.get(f"env_{name}") is not None}
    for name in ENV_KNOBS:
        extra.pop(f"env_{name}", None)
    threads = Threads(extra.pop("intra_op_threads", None), extra.pop("inter_op_threads", None))
    spec_trial = trial_spec(mode=mode, pipeline=spec, trial_id=trial_id, repeat=repeat,
                            configuration_id=configuration_id or trial_id, label=label, batch_size=batch_size,
                            threads=threads, env=env, **({"data_fingerprint": "datatest", "config_key": "key"}
                                                         | spec_changes))
    rates = rates or [examples_per_sec * f for f in (1 / 1.005, 1.0, 1.005)]  # geometric mean: examples_per_sec
    status = TrialStatus(extra.pop("status", "ok"))
    if status is TrialStatus.OK:
        waits = [waiting * (0.9, 1.0, 1.1)[i % 3] for i in range(len(rates))]
        windows = windows_at(mode, rates, None if mode != "train" else [synthetic or r / (1 - w)
                                                                        for r, w in zip(rates, waits)],
                             None if mode != "train" else waits)
        ordered = sorted(rates)
        record = {"examples_per_sec_median": statistics.median(rates), "examples_per_sec_p25": ordered[0],
                  "examples_per_sec_p75": ordered[-1],
                  "examples_per_sec_cv_pct": 100 * statistics.pstdev(rates) / statistics.fmean(rates),
                  "windows": len(rates), "stable": True, "warmup_steady": True, "window_rates": tuple(rates),
                  "windows_measured": windows, "rounds": len(rates), "rounds_cap_hit": False}
    else:
        record = {"reason": f"{status.value} (a test row)"}
    record |= {name: extra.pop(name) for name in RECORD_COLUMNS if name in extra}
    usage = {f.name: None for f in dataclasses.fields(Usage)} | {"samples": 6, "other_cpu_pct_median": 80.0 if busy
                                                                 else 2.0}
    usage |= {name: extra.pop(name) for name in USAGE_COLUMNS if name in extra}
    process = {"duration_sec": 5.0, "exit_code": 0, "signal": None, "stderr_tail": None, "rss_peak_bytes": 10**8}
    process |= {name: extra.pop(name) for name in PROCESS_COLUMNS if name in extra}
    outcome = Outcome(TrialRecord(status, **{k: v for k, v in record.items() if k != "status"}),
                      ProcessFacts(**process), usage=Usage(**usage) if status is TrialStatus.OK else None)
    context = RowContext(spec_trial, outcome, run_id, "host", FACTS, 0.0, 5.0, extra.pop("study", None),
                         extra.pop("optuna_trial_number", None))
    row = trial_row(context)
    unknown = set(extra) - set(TRIAL_SCHEMA.names)
    if unknown:
        raise TypeError(f"no column for {sorted(unknown)}")
    return dataclasses.replace(row, **extra)  # facts of the machine (host_fingerprint, instance_type): MachineFacts holds them


def row_of(columns: dict) -> TrialRow:
    """Give a row with these columns and every other one null, read as the reader reads a stored row (types checked)."""
    return from_json(TrialRow, {name: None for name in TRIAL_SCHEMA.names} | columns, "a test row")


def study_record(study: str = "s", importances: dict | None = None,
                 trial_ids: tuple[str, ...] | None = None) -> StudyRecord:
    """Give an importances.json record with these importances and a winner whose confirmation trials are
    `trial_ids` (None: no winner, withheld)."""
    winner = None if trial_ids is None else Winner("candidate 1", tuple(trial_ids), "c", (0,),
                                                   {"batch_size": "1024 examples"},
                                                   Interval(1000.0, 990.0, 1010.0, 3), {}, {})
    return StudyRecord(study, importances or {}, (), winner,
                       None if winner else "the run stopped before the confirmation phase")


def configuration(name: str, mode: str, pipeline: str, fmt: str, stages: list[dict], examples_per_sec: float,
                  files: list[str], repeats: int = 3, spread: float = 0.02, **kwargs) -> list[TrialRow]:
    """Give the rows of one configuration measured in `repeats` rounds of the run (trial ids NAME-r0, NAME-r1...).

    Repeat means differ by a factor of 1 ± `spread` in an order that depends on the name, so two
    configurations' paired ratios vary a little from round to round, as they do on a real machine;
    their geometric mean (what configurations report) is `examples_per_sec`.
    """
    offset = sum(map(ord, name)) % 3
    return [trial(f"{name}-r{r}", mode, pipeline, fmt, stages,
                  examples_per_sec * (1 + spread) ** (0, 1, -1)[(r + offset) % 3], files, repeat=r,
                  configuration_id=name, **kwargs)
            for r in range(repeats)]


def passing_configurations(files: list[str]) -> dict[str, dict]:
    """Give, by name, the configurations of a run on which every checklist rule passes (the keyword
    arguments of `configuration`; a FAIL case changes one thing before `rows_of` builds them)."""
    return {
        "t-train-tfr": dict(mode="train", pipeline="aws-sample", fmt="tfrecord", stages=VECTORIZED,
                            examples_per_sec=40000, intra_op_threads=4, waiting=0.01, gpu_util_pct_median=85.0,
                            cpu_pct_of_physical_cores_median=70.0, cpu_pct_of_vcpus_median=35.0, auc=0.780),
        "t-train-big": dict(mode="train", pipeline="aws-sample", fmt="tfrecord", stages=VECTORIZED,
                            examples_per_sec=30000, batch_size=4096, intra_op_threads=2, waiting=0.02,
                            cpu_pct_of_physical_cores_median=60.0, auc=0.782),
        "t-train-tfr-svm": dict(mode="train", pipeline="aws-sample", fmt="libsvm", stages=VECTORIZED,
                                examples_per_sec=25000, intra_op_threads=4, waiting=0.1,
                                cpu_pct_of_physical_cores_median=80.0),
        "t-train-svm": dict(mode="train", pipeline="lambdaji-libsvm", fmt="libsvm", stages=SCALAR,
                            examples_per_sec=20000, intra_op_threads=2, waiting=0.5,
                            cpu_pct_of_physical_cores_median=90.0),
        "t-input-tfr": dict(mode="input", pipeline="aws-sample", fmt="tfrecord", stages=VECTORIZED,
                            examples_per_sec=900000),
        "t-input-tfr-svm": dict(mode="input", pipeline="aws-sample", fmt="libsvm", stages=VECTORIZED,
                                examples_per_sec=150000),
        "t-input-svm": dict(mode="input", pipeline="lambdaji-libsvm", fmt="libsvm", stages=SCALAR,
                            examples_per_sec=30000),
    }


def rows_of(configurations: dict[str, dict], files: list[str]) -> list[TrialRow]:
    """Give the rows of these configurations (by name, as passing_configurations gives them)."""
    return [row for name, kwargs in configurations.items() for row in configuration(name, files=files, **kwargs)]


def passing_rows(files: list[str]) -> list[TrialRow]:
    """Give a run on which every checklist rule passes (the FAIL cases change one thing each)."""
    return rows_of(passing_configurations(files), files)


def data_files(root: Path, count: int = 4) -> list[str]:
    """Write `count` data files of DATA_FILE_BYTES each; give their paths."""
    root.mkdir(parents=True, exist_ok=True)
    paths = []
    for index in range(count):
        path = root / f"part-{index}.tfrecord"
        path.write_bytes(b"x" * DATA_FILE_BYTES)
        paths.append(str(path))
    return paths


def make_run(run_dir: Path, rows: list[TrialRow], facts: dict, rows_per_epoch: int = 100000,
             data_fingerprint: str = "datatest") -> Path:
    """Write a run folder (trials, a few samples per trial, machine.json, config.yaml); give its path."""
    run_dir.mkdir(parents=True)
    append_rows(run_dir / TRIALS_FILE, TRIAL_SCHEMA, [r.to_dict() for r in rows])
    samples = [{"run_id": r.run_id, "trial_id": r.trial_id, "t_sec": 100.0 + i * 0.25, "cpu_pct": 100.0 + i,
                "cpu_pct_of_vcpus": 40.0 + 5 * i, "cpu_pct_of_physical_cores": 80.0, "rss_bytes": 10**8}
               for r in rows for i in range(6)]
    append_rows(run_dir / SAMPLES_FILE, SAMPLE_SCHEMA, samples)
    (run_dir / MACHINE_FILE).write_text(json.dumps(facts))
    (run_dir / CONFIG_FILE).write_text(yaml.safe_dump({"name": "handmade", "data": {"synth": {"rows": rows_per_epoch}}}))
    data = DataFacts(DATA_VERSION, "synthetic", data_fingerprint, rows_per_epoch, "the synthesizer", ("tfrecord",), {"tfrecord": 4},
                     None)
    (run_dir / DATA_FILE).write_text(json.dumps(data.to_json()))
    return run_dir


def passing_run(folder: Path) -> Path:
    """Write a run folder of passing rows at folder/run, its data files under folder/data; give the run folder."""
    return make_run(folder / "run", passing_rows(data_files(folder / "data")), machine())


def run_holding(name: str, text: str) -> Callable[[Path], None]:
    """Give a bad-input case's make(): a passing run folder at folder/run with `text` written as its file `name`."""
    def make(folder: Path) -> None:
        (passing_run(folder) / name).write_text(text)
    return make


def job_record(instance_type: str, run_dir: str) -> dict:
    """Give one entry of a collected folder's jobs.json: the job record of a File-mode job's host `algo-1`."""
    from pipebench.results.job import JOB_VERSION, JobFacts

    return to_json(JobFacts(JOB_VERSION, "tiny-job", instance_type, "File", "file", "FullyReplicated", ("algo-1",),
                            "algo-1", 4, 0, "tfrecord", "trainer", None, None, (), run_dir))
