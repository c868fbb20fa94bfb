"""`pipebench run` end to end on a tiny experiment: results folder, verdicts, kill -9, --resume and two resumes
at once (real workers); the failure budget's exit code (the trial loop measuring with fake_measure)."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import socket

import psutil
import pytest
import yaml

import pipebench.results as results
from pipebench.results.schema import TRIAL_SCHEMA
from pipebench.results.store import read_table
from pipebench.testing import (ALL_MODES, all_gone, fake_measure, start_pipebench, tiny_experiment, wait_until,
                               yields_no_examples)


def _experiment(tmp_path, **changes) -> str:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tiny_experiment(tmp_path, **{**ALL_MODES, **changes})))
    return str(path)


def _run_dir(tmp_path):
    (found,) = (tmp_path / "results" / "tiny").iterdir()
    return found


@pytest.mark.tf
def test_run_writes_results_with_all_modes_and_a_verdict(tiny_run):
    run_dir, out = tiny_run
    for name in ("config.yaml", "machine.json", "trials.parquet", "samples.parquet", "summary.md"):
        assert (run_dir / name).exists(), name
    loaded = results.load(run_dir)
    trials = loaded.trials
    # a train trial measures its synthetic ceiling itself: no separate synthetic trial
    assert sorted(trials["mode"]) == ["input", "input", "train", "train"]
    assert (trials["status"] == "ok").all(), trials[["mode", "status", "reason"]]
    assert set(trials["pipeline"]) == {"lambdaji-libsvm", "aws-sample"}
    train = trials[trials["mode"] == "train"]
    assert train["input_wait_pct"].notna().all() and train["input_slowdown_pct"].notna().all()
    assert train["input_bound"].notna().all() and train["synthetic_examples_per_sec_mean"].notna().all()
    # the worker says where it placed the step (no GPU here), so the verdict reads the slowdown: a CPU trainer's
    assert (train["train_device"] == "CPU").all() and (train["input_bound_basis"] == "slowdown").all()
    assert (trials["examples_per_sec_median"] > 0).all()
    assert trials["trial_id"].is_unique and trials["data_fingerprint"].nunique() == 1
    assert not loaded.samples.empty and set(loaded.samples["trial_id"]) <= set(trials["trial_id"])
    summary = (run_dir / "summary.md").read_text()
    assert "Is the input pipeline the bottleneck?" in summary and "for a CPU trainer (its train step ran on the CPUs)" in summary
    assert "results:" in out
    # the action comes after the verdicts and before the next steps, and opens summary.md
    action = next(line for line in out.splitlines() if "export it with `pipebench pipelines export" in line)
    assert summary.splitlines()[2] == f"**{action}**"
    lines = out.splitlines()
    assert lines.index(action) < lines.index("Next steps:")
    assert any(" for a CPU trainer " in line for line in lines[:lines.index(action)])


def _trial_ids(run_dir) -> list[str]:
    return read_table(run_dir / "trials.parquet", TRIAL_SCHEMA).column("trial_id").to_pylist()


@pytest.mark.tf
def test_kill_minus_nine_then_two_resumes_at_once_lose_and_repeat_nothing(tmp_path):
    """kill -9 mid-run leaves no worker and no trial half-counted; then, regression, two `run --resume RUN_DIR` at
    once both ran the missing trials (7 rows for 4 trials): now the second is refused by the folder's lock with
    one line naming the first, and the first completes the run. Four input trials of one pipeline (what trials
    measure is not what this checks: test_run_writes_results_with_all_modes_and_a_verdict's run covers it). Two
    trials a warm worker: its rows land together as it ends, and it is killed with its manager in the second."""
    experiment = _experiment(tmp_path, data={"formats": ["tfrecord"]}, pipelines={"presets": ["aws-sample"]},
                             modes=["input"], grid={"batch_size": [64, 128, 256, 512]},
                             budget={"trials_per_worker": 2})
    proc = start_pipebench("run", experiment, start_new_session=True)

    def two_rows():
        dirs = list((tmp_path / "results" / "tiny").glob("*")) if (tmp_path / "results" / "tiny").exists() else []
        return dirs[0] if dirs and read_table(dirs[0] / "trials.parquet", TRIAL_SCHEMA).num_rows >= 2 else None

    run_dir = wait_until(two_rows, "the run's first two rows", 300, proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    workers = [p for p in psutil.process_iter(["cmdline"]) if "pipebench.measure.worker" in " ".join(
        p.info["cmdline"] or []) and str(run_dir) in " ".join(p.info["cmdline"] or [])]
    # 10 s: a worker still importing (before it asks to die with its parent) sees its parent gone at its next check
    assert all_gone([p.pid for p in workers], within_sec=10.0), "a worker outlived its manager"
    before = _trial_ids(run_dir)
    assert 2 <= len(before) < 4
    both = [start_pipebench("run", "--resume", str(run_dir)) for _ in range(2)]
    outs = [proc.communicate(timeout=600)[0] for proc in both]
    assert sorted(proc.returncode for proc in both) == [0, 2], outs
    winner = next(proc for proc in both if proc.returncode == 0)
    refused = outs[[proc.returncode for proc in both].index(2)]
    assert re.fullmatch(rf"pipebench: error: {re.escape(str(run_dir))}: already running \(pid {winner.pid} on "
                        rf"{re.escape(socket.gethostname())} since [\d:T+-]+\)\n", refused), refused
    assert f"{len(before)} done before" in outs[both.index(winner)]
    after = _trial_ids(run_dir)
    assert after[: len(before)] == before and len(after) == 4 and len(set(after)) == 4, after
    assert sorted(p.name for p in (run_dir / "trials").iterdir()) == sorted(after), "a trial ran twice or not at all"
    assert not (run_dir / ".lock").exists()


def test_a_run_stopped_past_its_failure_budget_exits_3_after_writing_rows_and_summary(tmp_path, cli, fake_trials):
    """Regression: a run stopped by budget.max_failure_rate exited 0, so CI and scripts could not see it."""
    fake_trials(fake_measure(yields_no_examples))
    experiment = _experiment(tmp_path, modes=["input"], pipelines={"presets": ["aws-sample"]},
                             grid={"batch_size": [100_000, 200_000, 300_000, 400_000, 500_000]},
                             budget={"trial_timeout_sec": 120, "max_failure_rate": 0.5})
    code, _, err = cli("run", experiment)
    run_dir = _run_dir(tmp_path)
    assert code == 3, err
    assert err.splitlines()[-1] == (f"pipebench: error: {run_dir}: stopped early: 4 of 4 trials failed, past "
                                    "budget.max_failure_rate 0.5; the rows so far are written")
    rows = results.load(run_dir).trials
    assert len(rows) == 4 and set(rows["status"]) == {"invalid"}, rows[["status", "reason"]]
    assert "4 of 4 trials failed" in (run_dir / "summary.md").read_text()


def test_a_run_cut_by_its_time_budget_ends_with_the_action_and_says_how_to_finish(tmp_path, cli, fake_trials,
                                                                                  monkeypatch):
    """Issue 35: a quick run that hit its time budget ended without the action sentence, and without a word on how
    to measure what it did not reach. Each trial takes 45 s of a fake clock; the budget is one minute."""
    import functools

    import pipebench.runner
    import pipebench.search.loop

    now = [0.0]
    measure = fake_measure(lambda spec: float(spec.batch_size))

    def slow_measure(*args, **kwargs):
        now[0] += 45.0
        return measure(*args, **kwargs)

    fake_trials(measure)
    monkeypatch.setattr(pipebench.runner, "run_trials", functools.partial(
        pipebench.search.loop.run_trials, measure=slow_measure, clock=lambda: now[0]))
    experiment = _experiment(tmp_path, modes=["input"], pipelines={"presets": ["aws-sample"]},
                             grid={"batch_size": [256, 512, 1024, 2048, 4096]}, budget={"max_minutes": 1})
    code, out, err = cli("run", experiment)
    run_dir = _run_dir(tmp_path)
    assert code == 0, err
    assert len(results.load(run_dir).trials) == 2
    assert "Fastest reading on this data: aws-sample on TFRecord" in out, out
    assert (f"stopped early: time budget of 1 min used up; `pipebench run --resume {run_dir}` measures the trials "
            "it did not reach") in out, out
    code, out, err = cli("run", "--resume", str(run_dir))
    assert code == 0 and len(results.load(run_dir).trials) == 4 and "--resume" in out, err
    code, out, err = cli("run", "--resume", str(run_dir))
    assert code == 0 and len(results.load(run_dir).trials) == 5, err
    assert "stopped early" not in out and "--resume" not in out, out


def test_a_run_in_which_no_trial_succeeded_exits_3_whatever_its_size(tmp_path, cli, fake_trials):
    """Regression (issue 28): a run whose every trial failed exited 0 when it had fewer than 4 trials (the failure
    budget's minimum) and ended advising to export "the fastest configuration"."""
    fake_trials(fake_measure(yields_no_examples))
    experiment = _experiment(tmp_path, modes=["input"], pipelines={"presets": ["aws-sample"]},
                             grid={"batch_size": [100_000, 200_000]})
    code, out, err = cli("run", experiment)
    run_dir = _run_dir(tmp_path)
    assert code == 3, err
    assert err.splitlines()[-1] == (f"pipebench: error: {run_dir}: no trial succeeded (2 trials: 2 invalid); "
                                    "the rows so far are written")
    assert "pipelines export" not in out and "Next steps" not in out, out
    assert len(results.load(run_dir).trials) == 2


def test_unknown_key_fails_before_any_work(tmp_path, cli):
    code, out, err = cli("run", _experiment(tmp_path, budgte={}))
    assert code == 1 and "budgte: unknown key" in err and "Traceback" not in out + err
    assert not (tmp_path / "results").exists()


HAVE_PIPE = importlib.util.find_spec("sagemaker_tensorflow") is not None


def _source_modes_run(tmp_path):
    """Run aws-sample on TFRecord, input only, read as file, FastFile (emulated) and Pipe; give the rows."""
    experiment = _experiment(
        tmp_path, pipelines={"presets": ["aws-sample"], "formats": ["tfrecord"],
                             "source_modes": ["file", "fastfile", "pipe"]},
        modes=["input"], measurement={"warmup_max_sec": 0.5, "window_sec": 0.1})
    proc = start_pipebench("run", experiment)
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out
    run_dir = _run_dir(tmp_path)
    assert not list(run_dir.glob("trials/*/scratch")), "a trial left its emulated FIFOs behind"
    trials = results.load(run_dir).trials.set_index("source_mode")
    assert sorted(trials.index) == ["fastfile", "file", "pipe"]
    assert (trials.loc[["file", "fastfile"], "status"] == "ok").all(), trials[["status", "reason"]]
    assert json.loads(trials.loc["fastfile", "params_json"])["sources"]["fastfile"]["emulate"] is True
    return trials


@pytest.mark.tf
@pytest.mark.skipif(HAVE_PIPE, reason="checks an environment without sagemaker_tensorflow (the latest TF)")
def test_pipe_trial_is_an_unavailable_row_where_sagemaker_tensorflow_is_missing(tmp_path):
    pipe = _source_modes_run(tmp_path).loc["pipe"]
    assert pipe["status"] == "unavailable"
    assert pipe["reason"].startswith("unavailable: sagemaker_tensorflow is not importable in this environment")


@pytest.mark.tf
@pytest.mark.skipif(not HAVE_PIPE, reason="sagemaker_tensorflow exists only in the TF 2.14 env "
                                          "(scripts/setup.sh tf214)")
def test_pipe_trial_through_the_emulator_is_a_row_beside_file_and_fastfile(tmp_path):
    trials = _source_modes_run(tmp_path)
    assert trials.loc["pipe", "status"] == "ok", trials.loc["pipe", "reason"]
    assert (trials["examples_per_sec_median"] > 0).all()
