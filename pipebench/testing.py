"""Test support that ships with the package (Optuna's `testing/`, pyperf's fake clocks): typed records
made to order, a `measure` for the trial loop that spawns no worker and imports no TensorFlow, the
tiny experiment the end-to-end tests run, and `pipebench` as a process with the polling its tests need.

Only the trial *loop* is faked here: drivers, rows, budgets and summaries run for real around it.
Nothing that pipebench measures is faked — a real trial goes through pipebench.measure.manager.
"""
from __future__ import annotations

import copy
import dataclasses
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

import psutil

from pipebench.config import typed_block
from pipebench.measure.manager import Limits, Outcome, ProcessFacts
from pipebench.measure.trial import (Measurement, Model, PipelineLabel, Quality, Sources, Threads, TrialRecord,
                                     TrialSpec, TrialStatus, Window)
from pipebench.pipeline.presets import preset
from pipebench.pipeline.spec import PipelineSpec

T = TypeVar("T")


#: trial_spec's short measurement settings (the rest are the experiment's defaults).
SHORT_MEASUREMENT = {"warmup_max_sec": 1.0, "window_sec": 0.2, "windows": 2, "max_windows": 4, "steady_cv_pct": 50.0}
#: trial_spec's small model.
SMALL_MODEL = {"embedding_size": 4, "deep_layers": [8], "dropout": 0.5, "l2": 1e-4, "optimizer": "adam",
               "learning_rate": 0.0005}
_BLOCKS = {"measurement": Measurement, "model": Model, "quality": Quality, "sources": Sources}


def _block(name: str, given: Mapping) -> object:
    return typed_block(_BLOCKS[name], name, given)


def trial_spec(files: tuple[str, ...] = ("data/part-*.tfrecord",), mode: str = "input",
               pipeline: PipelineSpec | None = None, **changes) -> TrialSpec:
    """Give a TrialSpec of `pipeline` (default: the aws-sample preset on `files`), with short measurement settings.

    `measurement`, `model`, `quality` and `sources` may be given as mappings of some of their keys: a measurement's
    replace the short settings (without `max_windows` it stops at `windows`), and every key left out takes the
    experiment's default.
    """
    spec = pipeline or preset("aws-sample", files=files, batch_size=changes.pop("batch_size", 256), epochs=None)
    given = changes.get("measurement")
    if isinstance(given, Mapping):
        changes["measurement"] = {**SHORT_MEASUREMENT, "max_windows": given.get("windows", 4), **given}
    for name in _BLOCKS:
        if isinstance(changes.get(name), Mapping):
            changes[name] = _block(name, changes[name])
    trial = TrialSpec(
        trial_id="t", configuration_id="c", repeat=0, mode=mode, config_key="k", pipeline_spec=spec.to_dict(),
        pipeline_fingerprint=spec.fingerprint(),
        label=PipelineLabel("aws-sample", spec.ordering, spec.source.format, spec.source.mode, "reference",
                            "preset", False),
        batch_size=int(spec.stage("batch")["batch_size"]), threads=Threads(None, None), env={},
        measurement=_block("measurement", SHORT_MEASUREMENT), model=_block("model", SMALL_MODEL), feature_size=117581,
        data_fingerprint="d", quality=_block("quality", {}), holdout_files=(), sources=_block("sources", {}))
    return dataclasses.replace(trial, **changes)


def windows_at(mode: str, rates: list[float], synthetic: list[float] | None = None,
               waited: list[float] | None = None) -> tuple[Window, ...]:
    """Give one-second windows at these examples/sec, one per round: a train trial's beside its synthetic ones."""
    arm = "input" if mode == "input" else mode
    out = []
    for index, rate in enumerate(rates):
        wait = None if arm == "input" else (waited[index] if waited else 0.0)
        out.append(Window(arm, index, round(rate), 1.0, wait))
        if mode == "train":
            out.append(Window("synthetic", index, round((synthetic or rates)[index]), 1.0, 0.0))
    return tuple(out)


def fake_measure(result: Callable[[TrialSpec], float | TrialRecord]) -> Callable[..., Outcome]:
    """Give a `measure` for run_trials: `result(spec)` is the trial's examples/sec, or its whole TrialRecord.

    A rate becomes one window per round at that rate (train trials get a synthetic arm at the same
    rate). It calls `on_progress` once per window, as the manager does, and returns no samples.
    """
    def measure(spec: TrialSpec, trial_dir: Path, limits: Limits, sampler_factory=None,
                on_progress: Callable[[int, float], bool] | None = None) -> Outcome:
        found = result(spec)
        if not isinstance(found, TrialRecord):
            rate = float(found)
            found = TrialRecord(TrialStatus.OK, examples_per_sec_median=rate, examples_per_sec_p25=rate,
                                examples_per_sec_p75=rate, examples_per_sec_cv_pct=0.0, windows=2, stable=True,
                                window_rates=(rate, rate), windows_measured=windows_at(spec.mode, [rate, rate]),
                                rounds=2, rounds_cap_hit=False)
        record = found
        if on_progress is not None and record.status is TrialStatus.OK:
            for index, rate in enumerate(record.window_rates):
                if on_progress(index, rate):
                    record = TrialRecord(TrialStatus.PRUNED, f"pruned after window {index + 1}")
                    break
        return Outcome(record, ProcessFacts(0.0, 0, None, None, 0))
    return measure


def yields_no_examples(spec: TrialSpec) -> TrialRecord:
    """Give the record a real worker makes of a batch larger than the data (aws-sample drops the remainder):
    a fake_measure result for failure-budget tests (tests/test_manager.py checks a real worker says so)."""
    return TrialRecord(TrialStatus.INVALID, "the pipeline yields no examples (batch larger than the data with "
                                            "drop_remainder)")


def three_formats(root: Path, rows: int, files: int, seed: int, rows_per_record: int) -> dict[str, str]:
    """Give {format: glob of its part files} of the same synthetic rows as libsvm, TFRecord and packed, made under `root`."""
    from pipebench.converters.convert import ConvertRequest, convert
    from pipebench.synth import SynthSpec, synthesize

    synthesize(SynthSpec(rows=rows, out=root / "libsvm", files=files, seed=seed))
    libsvm = tuple(sorted((root / "libsvm").glob("part-*.libsvm")))
    convert(ConvertRequest(inputs=libsvm, out=root / "tfrecord", format="tfrecord", shards=files, workers=1))
    convert(ConvertRequest(inputs=libsvm, out=root / "packed", format="packed", shards=files, workers=1,
                           rows_per_record=rows_per_record))
    return {"libsvm": str(root / "libsvm" / "part-*.libsvm"), "tfrecord": str(root / "tfrecord" / "part-*.tfrecord"),
            "packed": str(root / "packed" / "part-*.packed.tfrecord")}


#: The tiny experiment of the end-to-end tests: one preset on 3,000 synthetic TFRecord rows, short windows, a
#: trial in seconds. A test changes what it checks (tiny_experiment's `changes`).
TINY = {
    "name": "tiny",
    "data": {"synth": {"rows": 3000, "files": 2}, "formats": ["tfrecord"], "holdout_rows": 0},
    "model": {"embedding_size": 4, "deep_layers": [8]},
    "pipelines": {"presets": ["aws-sample"]},
    "grid": {"batch_size": [256]},
    "modes": ["input"],
    "measurement": {"warmup_max_sec": 1.0, "window_sec": 0.2, "windows": 2, "max_windows": 4, "steady_cv_pct": 50,
                    "remeasure_busy": False, "repeats": 1},
    "budget": {"trial_timeout_sec": 120, "max_failure_rate": 1.0},
}


#: What the end-to-end run changes in TINY: two presets on libsvm and TFRecord, input, train and synthetic modes.
ALL_MODES = {"data": {"formats": ["libsvm", "tfrecord"]}, "pipelines": {"presets": ["lambdaji-libsvm", "aws-sample"]},
             "modes": ["input", "train", "synthetic"]}


def merged(base: dict, changes: dict) -> dict:
    """Give a copy of experiment document `base` with `changes` in: a mapping merges into the section it names."""
    out = copy.deepcopy(base)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def tiny_experiment(root: Path, **changes) -> dict:
    """Give TINY with its data cache (root/cache) and results (root/results) under `root`, `changes` merged in (a
    `data` change merges into the data section, keeping the cache under `root`)."""
    return merged(merged(TINY, {"data": {"cache_dir": str(root / "cache")}, "results": str(root / "results")}), changes)


def pipebench_command(*args: object) -> list[str]:
    """Give the command line of `pipebench ARGS` in a fresh interpreter of this Python."""
    return [sys.executable, "-m", "pipebench", *map(str, args)]


def start_pipebench(*args: object, **popen) -> subprocess.Popen:
    """Start `pipebench ARGS`, its stdout and stderr one text stream (proc.stdout)."""
    return subprocess.Popen(pipebench_command(*args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            **popen)


def run_pipebench(*args: object, timeout_sec: float = 600, **run) -> subprocess.CompletedProcess:
    """Run `pipebench ARGS` to its end; give its exit code, stdout and stderr (text)."""
    return subprocess.run(pipebench_command(*args), capture_output=True, text=True, timeout=timeout_sec, **run)


def wait_until(found: Callable[[], T], what: str, timeout_sec: float, proc: subprocess.Popen | None = None) -> T:
    """Give found()'s first true value, asked every 0.2 s; fail naming `what` when `timeout_sec` pass first, or
    with `proc`'s output when it ends first (a kill -9 test waits for its moment this way)."""
    deadline = time.monotonic() + timeout_sec
    while True:
        value = found()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            output = proc.stdout.read() if proc.stdout else ""
            raise AssertionError(f"waiting for {what}: the process ended first (exit {proc.returncode}): "
                                 f"{(output or '')[-3000:]}")
        if time.monotonic() > deadline:
            raise AssertionError(f"waiting for {what}: not within {timeout_sec:g} s")
        time.sleep(0.2)


def alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie has ended: it holds no port, FIFO or lock; its parent reaps it)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def all_gone(pids, within_sec: float) -> bool:
    """Give whether every process of `pids` has ended within `within_sec`."""
    deadline = time.monotonic() + within_sec
    while any(map(alive, pids)):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
