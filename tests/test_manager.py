"""The manager: every way a worker can fail becomes a record; settings reach the worker in time."""
from __future__ import annotations

import json
import shutil

import pytest

from converters.convert import ConvertRequest, convert
from pipebench.measure.manager import Limits, run_worker, trial_environment
from pipebench.pipeline.presets import preset
from pipebench.synth import SynthSpec, synthesize

MEASURE = {"warmup_max_sec": 1.0, "window_sec": 0.2, "windows": 2, "steady_cv_pct": 50.0}
LIMITS = Limits(timeout_sec=60, memory_cap_bytes=4 << 30)


@pytest.fixture(scope="module")
def tfrecords(tmp_path_factory):
    folder = tmp_path_factory.mktemp("data")
    synthesize(SynthSpec(rows=3000, out=folder / "text", seed=1))
    convert(ConvertRequest(inputs=tuple(sorted((folder / "text").glob("part-*"))), out=folder / "tf"))
    return sorted(str(p) for p in (folder / "tf").glob("part-*"))


def _trial(files, **extra) -> dict:
    spec = preset("aws-sample", files=tuple(files), batch_size=extra.pop("batch_size", 256), epochs=None)
    return {"trial_id": "t", "mode": "input", "pipeline": spec.to_dict(), "threads": {}, "env": {},
            "measurement": MEASURE, "feature_size": 117581, **extra}


@pytest.mark.parametrize("fault,status,reason", [
    ("segfault", "failed", "worker killed by SIGSEGV"),
    ("hang", "timeout", "no result after 3 s (killed)"),
    ("memory", "memory_cap", "passed the memory cap 300 MiB (killed)"),
])
def test_a_broken_worker_becomes_a_record(tmp_path, fault, status, reason):
    outcome = run_worker({"trial_id": "t", "fault": fault}, tmp_path / "t", Limits(3, 300 << 20))
    assert outcome.record["status"] == status
    assert reason in outcome.record["reason"]
    assert outcome.record["duration_sec"] < 60


def test_invalid_setting_is_a_record_with_the_reason(tmp_path, tfrecords):
    outcome = run_worker(_trial(tfrecords, batch_size=100_000), tmp_path / "t", LIMITS)
    assert outcome.record["status"] == "invalid"
    assert "yields no examples" in outcome.record["reason"]


def test_env_and_threads_reach_the_worker_before_tensorflow(tmp_path, tfrecords):
    trial = _trial(tfrecords, env={"OMP_NUM_THREADS": "3", "KMP_AFFINITY": "disabled"},
                   threads={"intra": 1, "inter": 2})
    record = run_worker(trial, tmp_path / "t", LIMITS).record
    assert record["status"] == "ok", record
    assert record["tensorflow_imported_before_settings"] is False
    assert record["env_seen"] == {"OMP_NUM_THREADS": "3", "KMP_AFFINITY": "disabled",
                                  "TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "2"}
    assert (record["worker_intra_op_threads"], record["worker_inter_op_threads"]) == (1, 2)
    assert record["examples_per_sec_median"] > 0 and len(record["window_rates"]) == 2


def test_null_env_values_unset_inherited_variables(monkeypatch):
    monkeypatch.setenv("KMP_AFFINITY", "compact")
    env = trial_environment({"env": {"KMP_AFFINITY": None, "OMP_NUM_THREADS": 4}, "threads": {"intra": None}})
    assert "KMP_AFFINITY" not in env and env["OMP_NUM_THREADS"] == "4" and "TF_NUM_INTRAOP_THREADS" not in env


def test_trial_files_are_kept_for_inspection(tmp_path):
    run_worker({"trial_id": "t", "fault": "segfault"}, tmp_path / "t", LIMITS)
    assert json.loads((tmp_path / "t" / "trial.json").read_text())["fault"] == "segfault"
    assert (tmp_path / "t" / "stderr.txt").exists()


def test_each_window_is_heard_while_the_worker_runs(tmp_path, tfrecords):
    heard: list[tuple[int, float]] = []
    trial = _trial(tfrecords, measurement={**MEASURE, "windows": 3})
    record = run_worker(trial, tmp_path / "t", LIMITS, on_progress=lambda w, r: heard.append((w, r)) or False).record
    assert record["status"] == "ok", record
    assert heard == list(enumerate(record["window_rates"]))


def test_a_true_from_on_progress_prunes_the_trial(tmp_path, tfrecords):
    trial = _trial(tfrecords, measurement={**MEASURE, "windows": 50})
    record = run_worker(trial, tmp_path / "t", LIMITS, on_progress=lambda w, r: True).record
    assert record["status"] == "pruned" and record["reason"].startswith("pruned after window 1:")
    assert record["signal"] == 9


def test_a_failed_trial_says_what_tensorflow_said_not_only_graph_execution_error(tmp_path, tfrecords):
    """TF's graph errors open with "Graph execution error:"; the cause follows the op's stack.

    The records hold 39 fields and the spec says 10 (the files are copied away from their manifest,
    which pipebench would otherwise check first), so parsing fails inside the compiled loop."""
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in tfrecords:
        shutil.copy(name, bare)
    spec = preset("aws-sample", files=(str(bare / "part-*"),), batch_size=256, epochs=None, field_size=10)
    trial = {"trial_id": "t", "mode": "input", "pipeline": spec.to_dict(), "threads": {}, "env": {},
             "measurement": MEASURE, "feature_size": 117581}
    record = run_worker(trial, tmp_path / "t", LIMITS).record
    assert record["status"] == "failed"
    assert record["reason"].startswith("InvalidArgumentError: ") and "Graph execution error" not in record["reason"]
    assert "Values size: 39" in record["reason"] and len(record["reason"]) <= 500, record["reason"]
