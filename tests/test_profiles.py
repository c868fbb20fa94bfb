"""`pipebench run --profile`: TensorBoard profiles of chosen trials, captured after the measured trials.

Real runs of a tiny experiment (two train trials) with real TensorFlow workers and the real profiler.
The trace is read back with TensorFlow's own XPlane protobuf module
(`tensorflow.tsl.profiler.protobuf.xplane_pb2`, in both the TF 2.14 and the latest wheel; what
TensorBoard's profile plugin reads): it must parse as an XSpace whose host plane holds the input
pipeline's iterator events, which the plugin's input-pipeline analyzer is built from.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from report_fixtures import row_of

import pipebench.results as results
from pipebench.errors import UsageError
from pipebench.profiling import PROFILES_DIR, chosen_rows, trace_files
from pipebench.results.trial_row import TrialRow
from pipebench.testing import run_pipebench, tiny_experiment, windows_at
from pipebench.typed import to_json


def _row(trial_id: str, mode: str, rate: float, configuration: str | None = None, repeat: int = 0,
         status: str = "ok") -> TrialRow:
    return row_of({"run_id": "r", "trial_id": trial_id, "configuration_id": configuration or trial_id,
                   "repeat": repeat, "mode": mode, "status": status, "examples_per_sec_mean": rate,
                   "busy_machine": False,
                   "windows_json": json.dumps(to_json(windows_at(mode, [rate, rate * 1.01, rate * 0.99])))})


def test_best_is_the_fastest_train_configuration_first_repeat_and_all_train_every_ok_train_trial():
    rows = [_row("in", "input", 9e6), _row("slow", "train", 1e4), _row("fast1", "train", 5e4, "fast", 1),
            _row("fast0", "train", 5e4, "fast", 0), _row("broken", "train", 1e5, status="failed")]
    assert [r.trial_id for r in chosen_rows(rows, "best", Path("run"))] == ["fast0"]
    assert [r.trial_id for r in chosen_rows(rows, "all-train", Path("run"))] == ["slow", "fast1", "fast0"]
    assert [r.trial_id for r in chosen_rows(rows, "slow", Path("run"))] == ["slow"]
    assert [r.trial_id for r in chosen_rows(rows[:1], "best", Path("run"))] == ["in"], "no train: the fastest input"
    with pytest.raises(UsageError, match=r"^run: --profile: no trial 'nope' in this run \(its trials: in, slow, "
                                         r"fast1, …; or give best or all-train\)$"):
        chosen_rows(rows, "nope", Path("run"))
    with pytest.raises(UsageError, match="no ok train trial"):
        chosen_rows(rows[:1], "all-train", Path("run"))


def _experiment(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tiny_experiment(tmp_path, pipelines={"formats": ["tfrecord"]},
                                                   grid={"batch_size": [256, 512]}, modes=["train"])))
    return path


def _parsed_trace(path: Path):
    """Give the XSpace of one .xplane.pb file, parsed by TensorFlow's own protobuf module."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    space.ParseFromString(path.read_bytes())
    return space


@pytest.mark.tf
def test_profile_best_then_all_train_on_resume(tmp_path):
    experiment = _experiment(tmp_path)
    # a grid's trial ids are known before it runs: an unknown one is refused before any trial, leaving no run folder
    refused = run_pipebench("run", experiment, "--profile", "no-such-trial")
    assert refused.returncode != 0 and refused.stderr.count("\n") == 1, refused.stderr
    assert refused.stderr.startswith(f"pipebench: error: {experiment}: --profile: no trial 'no-such-trial' in this run")
    assert not (tmp_path / "results" / "tiny").exists() or not list((tmp_path / "results" / "tiny").iterdir())

    done = run_pipebench("run", experiment, "--profile", "best")
    assert done.returncode == 0, done.stdout + done.stderr
    (run_dir,) = (tmp_path / "results" / "tiny").iterdir()
    trials = results.load(run_dir).trials
    assert list(trials["status"]) == ["ok", "ok"], trials[["status", "reason"]]
    best = trials.loc[trials["examples_per_sec_mean"].idxmax()]  # one repeat each: the fastest configuration
    assert best["profile_dir"] == f"{PROFILES_DIR}/{best['trial_id']}"
    assert trials["profile_dir"].isna().sum() == 1, "only the best trial is profiled"
    (trace,) = trace_files(run_dir / best["profile_dir"])
    space = _parsed_trace(trace)
    host = [plane for plane in space.planes if plane.name == "/host:CPU"]
    assert host and sum(len(line.events) for line in host[0].lines) > 0
    events = {meta.name for meta in host[0].event_metadata.values()}
    assert any(name.startswith("Iterator::") for name in events), "no input pipeline events in the trace"
    # the profiled re-run reports no figure: what the row reports was timed without the profiler
    rerun = json.loads((run_dir / best["profile_dir"] / "worker" / "result.json").read_text())
    assert rerun["status"] == "ok" and rerun["examples_per_sec_median"] is None and rerun["windows_measured"] == []
    assert rerun["profiled"] is True
    assert "tensorboard --logdir" in done.stdout

    again = run_pipebench("run", "--resume", run_dir, "--profile", "all-train")
    assert again.returncode == 0, again.stdout + again.stderr
    after = results.load(run_dir).trials
    assert f"profile: trial {best['trial_id']} was profiled before" in again.stdout
    assert after["profile_dir"].tolist() == [f"{PROFILES_DIR}/{t}" for t in after["trial_id"]]
    measured = [c for c in trials.columns if c != "profile_dir"]
    assert after[measured].equals(trials[measured]), "profiling changed a measured figure"
    for trial_id in after["trial_id"]:
        (trace,) = trace_files(run_dir / PROFILES_DIR / trial_id)
        assert _parsed_trace(trace).planes

    unknown = run_pipebench("run", "--resume", run_dir, "--profile", "no-such-trial")
    assert unknown.returncode != 0 and unknown.stderr.count("\n") == 1, unknown.stderr
    assert unknown.stderr.startswith(f"pipebench: error: {run_dir}: --profile: no trial 'no-such-trial' in this run")
