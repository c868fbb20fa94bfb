"""Rounds across a run (RMIT) and trials measured again when other processes shared the machine."""
from __future__ import annotations

import dataclasses
import io

from test_loop import _data, _experiment, _run_folder

from pipebench.config import parse_experiment
from pipebench.measure.manager import Outcome, ProcessFacts
from pipebench.measure.sampler import Usage
from pipebench.measure.trial import TrialRecord, TrialStatus
from pipebench.results import SUMMARY_FILE
from pipebench.search.grid import GridPlanner, trials
from pipebench.search.loop import run_trials
from pipebench.testing import windows_at


def test_each_repeat_is_a_round_measuring_every_configuration_once_in_its_own_order(tmp_path):
    # Eight configurations: the seed comes from the experiment (tmp_path is in it), and three rounds of 8! orders
    # all coming out alike by chance is ~1e-9, where four configurations made it 1 in 576 (it happened in CI).
    sizes = [16, 32, 64, 128, 256, 512, 1024, 2048]
    experiment = parse_experiment({**_experiment(tmp_path).resolved, "grid": {"batch_size": sizes},
                                   "measurement": {"repeats": 3}})
    planned = trials(experiment, _data(tmp_path))
    rounds = [planned[i:i + 8] for i in range(0, 24, 8)]
    assert [sorted(t.batch_size for t in r) for r in rounds] == [sizes] * 3
    assert [[t.repeat for t in r] for r in rounds] == [[0] * 8, [1] * 8, [2] * 8]
    assert len({tuple(t.batch_size for t in r) for r in rounds}) > 1, "each round in its own random order"
    assert [t.trial_id for t in planned] == [t.trial_id for t in trials(experiment, _data(tmp_path))], "seeded"
    assert len({t.configuration_id for t in planned}) == 8 and len({t.trial_id for t in planned}) == 24


def test_a_trial_measured_on_a_busy_machine_is_measured_again_once_and_the_summary_says_so(tmp_path):
    experiment, data = _experiment(tmp_path), _data(tmp_path)
    run = _run_folder(tmp_path / "run", data)
    calls = []

    def measure(spec, trial_dir, limits, sampler_factory=None, on_progress=None):
        calls.append(spec)
        trial_dir.mkdir(parents=True, exist_ok=True)
        (trial_dir / "trial.json").write_text(__import__("json").dumps(spec.to_json()))
        other = 90.0 if spec.batch_size == 256 else 0.0  # the 256 trial shares the machine, every time
        usage = Usage(**{f.name: None for f in dataclasses.fields(Usage)} | {"samples": 3,
                                                                             "other_cpu_pct_median": other})
        record = TrialRecord(TrialStatus.OK, windows_measured=windows_at("input", [100.0, 100.0]))
        return Outcome(record, ProcessFacts(1.0, 0, None, None, 1), usage=usage)

    result = run_trials(GridPlanner(trials(experiment, data), set()), run, experiment, measure, stream=io.StringIO(),
                        busy_now=lambda: 0.0)  # quiet again when the run comes to measure it again
    again = [s for s in calls if s.remeasure_of]
    assert len(calls) == 3 and len(again) == 1 and again[0].batch_size == 256
    assert again[0].trial_id == again[0].remeasure_of + "-again"
    assert [r.busy_machine for r in result.rows].count(True) == 2
    summary = (run.path / SUMMARY_FILE).read_text()
    assert "**Busy machine:** 1 of 3 trials" in summary and "0 quiet the second time" in summary


def test_busy_trials_are_not_measured_again_while_the_machine_is_still_busy_and_the_summary_says_why(tmp_path):
    experiment, data = _experiment(tmp_path), _data(tmp_path)
    run = _run_folder(tmp_path / "run", data)
    calls, readings = [], []

    def measure(spec, trial_dir, limits, sampler_factory=None, on_progress=None):
        calls.append(spec)
        trial_dir.mkdir(parents=True, exist_ok=True)
        (trial_dir / "trial.json").write_text(__import__("json").dumps(spec.to_json()))
        usage = Usage(**{f.name: None for f in dataclasses.fields(Usage)} | {"samples": 3,
                                                                             "other_cpu_pct_median": 90.0})
        record = TrialRecord(TrialStatus.OK, windows_measured=windows_at("input", [100.0, 100.0]))
        return Outcome(record, ProcessFacts(1.0, 0, None, None, 1), usage=usage)

    def busy_now():
        readings.append(1)
        return 95.0

    log = []
    result = run_trials(GridPlanner(trials(experiment, data), set()), run, experiment, measure, log=log.append,
                        stream=io.StringIO(), busy_now=busy_now)
    assert len(calls) == 2 and not any(s.remeasure_of for s in calls), "a busy machine is not measured again"
    assert len(readings) == 1, "the machine is read once, then the rest stay flagged"
    assert [r.busy_machine for r in result.rows] == [True, True]
    summary = (run.path / SUMMARY_FILE).read_text()
    assert ("not measured again: 2 (left flagged: the machine was still busy when the run would measure them "
            "again (other processes used 95% of a vCPU))") in summary
    assert any("busy trials not measured again" in line for line in log)
