"""Test support that ships with the package (Optuna's `testing/`, pyperf's fake clocks): typed records
made to order, and a `measure` for the trial loop that spawns no worker and imports no TensorFlow.

Only the trial *loop* is faked here: drivers, rows, budgets and summaries run for real around it.
Nothing that pipebench measures is faked — a real trial goes through pipebench.measure.manager.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from pipebench.measure.manager import Limits, Outcome, ProcessFacts
from pipebench.measure.trial import PipelineLabel, Threads, TrialRecord, TrialSpec, TrialStatus, Window
from pipebench.pipeline.presets import preset
from pipebench.pipeline.spec import PipelineSpec

def trial_spec(files: tuple[str, ...] = ("data/part-*.tfrecord",), mode: str = "input",
               pipeline: PipelineSpec | None = None, **changes) -> TrialSpec:
    """Give a TrialSpec of `pipeline` (default: the aws-sample preset on `files`), with short measurement settings."""
    spec = pipeline or preset("aws-sample", files=files, batch_size=changes.pop("batch_size", 256), epochs=None)
    trial = TrialSpec(
        trial_id="t", configuration_id="c", repeat=0, mode=mode, config_key="k", pipeline_spec=spec.to_dict(),
        pipeline_fingerprint=spec.fingerprint(),
        label=PipelineLabel("aws-sample", spec.ordering, spec.source.format, spec.source.mode, "reference",
                            "preset", False),
        batch_size=int(spec.stage("batch")["batch_size"]), threads=Threads(None, None), env={},
        measurement={"warmup_max_sec": 1.0, "window_sec": 0.2, "windows": 2, "max_windows": 4, "steady_cv_pct": 50.0,
                     "cold_cache": False, "busy_other_cpu_pct": 25.0},
        model={"embedding_size": 4, "deep_layers": [8], "dropout": 0.5, "l2": 1e-4, "optimizer": "adam",
               "learning_rate": 0.0005},
        feature_size=117581, data_fingerprint="d", quality={"enabled": False}, holdout_files=(), sources={})
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


def three_formats(root: Path, rows: int, files: int, seed: int, rows_per_record: int) -> dict[str, str]:
    """Give {format: glob of its part files} of the same synthetic rows as libsvm, TFRecord and packed, made under `root`."""
    from converters.convert import ConvertRequest, convert
    from pipebench.synth import SynthSpec, synthesize

    synthesize(SynthSpec(rows=rows, out=root / "libsvm", files=files, seed=seed))
    libsvm = tuple(sorted((root / "libsvm").glob("part-*.libsvm")))
    convert(ConvertRequest(inputs=libsvm, out=root / "tfrecord", format="tfrecord", shards=files, workers=1))
    convert(ConvertRequest(inputs=libsvm, out=root / "packed", format="packed", shards=files, workers=1,
                           rows_per_record=rows_per_record))
    return {"libsvm": str(root / "libsvm" / "part-*.libsvm"), "tfrecord": str(root / "tfrecord" / "part-*.tfrecord"),
            "packed": str(root / "packed" / "part-*.packed.tfrecord")}
