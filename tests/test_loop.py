"""The one trial loop, driven by the grid and the Optuna planners with a fake measure (no TensorFlow):
same rows for the same settings, one failure accounting, budgets, and a summary for every driver."""
from __future__ import annotations

import io
import re

import pytest
from report_fixtures import machine

from pipebench.config import parse_experiment
from pipebench.datasets import DataSet
from pipebench.measure.facts import MachineFacts
from pipebench.measure.trial import TrialRecord, TrialStatus, trains_with
from pipebench.results import SUMMARY_FILE
from pipebench.results.run_folder import RunFolder
from pipebench.search.grid import GridPlanner, trials
from pipebench.search.loop import run_trials
from pipebench.testing import fake_measure

optuna = pytest.importorskip("optuna")

#: Columns that name where and when a row was made, or which driver made it: all else must agree.
_PROVENANCE = {"run_id", "trial_id", "started_utc", "ended_utc", "study", "optuna_trial_number"}


def _experiment(tmp_path, **search):
    return parse_experiment({
        "name": "loop", "modes": ["input"], "grid": {"batch_size": [256, 512]},
        "pipelines": {"presets": ["aws-sample"]},
        "search": {"n_trials": 2, "enqueue_reference": False, "sampler": "random", "seed": 0, "confirm_top": 0,
                   "pruner": "none", "space": {"batch_size": [256, 512]}, **search},
        "measurement": {"repeats": 1},  # one row per setting: what these tests compare across drivers
        "budget": {"max_failure_rate": 0.5}, "results": str(tmp_path / "results")})


def _data(tmp_path) -> DataSet:
    (tmp_path / "data").mkdir(exist_ok=True)
    files = [str(tmp_path / "data" / f"part-{i}.tfrecord") for i in range(2)]
    for name in files:
        open(name, "wb").close()
    return DataSet({"tfrecord": files}, fingerprint="data", rows=1000, rows_from="test")


def _run_folder(path, data: DataSet) -> RunFolder:
    path.mkdir(parents=True)
    return RunFolder(path, MachineFacts.from_json(machine(), "machine.json"), data.facts())


def _optuna_planner(experiment, data, run):
    from pipebench.search.optuna_driver import OptunaPlanner, open_storage, open_study
    from pipebench.search.plan import make_plan

    plan = make_plan(experiment, data, run.machine)
    return OptunaPlanner(open_study(experiment, plan, open_storage(None, run.path), log=lambda _: None), plan,
                         log=lambda _: None)


def _rate(spec) -> float:
    return 10.0 * spec.batch_size


def test_grid_and_optuna_give_identical_rows_for_identical_settings(tmp_path):
    experiment, data = _experiment(tmp_path), _data(tmp_path)
    grid_run = _run_folder(tmp_path / "grid", data)
    grid = run_trials(GridPlanner(trials(experiment, data), set()), grid_run, experiment, fake_measure(_rate),
                      stream=io.StringIO())
    search_run = _run_folder(tmp_path / "optuna", data)
    study = run_trials(_optuna_planner(experiment, data, search_run), search_run, experiment, fake_measure(_rate),
                       stream=io.StringIO())
    by_batch = {}
    for rows in (grid.rows, study.rows):
        for row in rows:
            by_batch.setdefault(row.batch_size, []).append({k: v for k, v in row.to_dict().items()
                                                            if k not in _PROVENANCE})
    assert sorted(by_batch) == [256, 512]
    for batch_size, (from_grid, from_optuna) in by_batch.items():
        assert from_grid == from_optuna, batch_size
    assert (grid_run.path / SUMMARY_FILE).exists() and (search_run.path / SUMMARY_FILE).exists()
    assert study.rows[0].study == "loop" and grid.rows[0].study is None


@pytest.mark.parametrize("driver", ["grid", "optuna"])
def test_unavailable_trials_do_not_spend_the_failure_budget_but_failed_ones_do(tmp_path, driver):
    """The Optuna driver used to count `unavailable` trials (Pipe mode outside TF 2.14) as failures."""
    experiment, data = _experiment(tmp_path, n_trials=6, space={"batch_size": [1, 2, 3, 4, 5, 6]}), _data(tmp_path)
    experiment = parse_experiment({**experiment.resolved, "grid": {**experiment["grid"], "batch_size": [1, 2, 3, 4, 5, 6]}})
    unavailable = fake_measure(lambda spec: TrialRecord(TrialStatus.UNAVAILABLE, "no PipeModeDataset here"))
    run = _run_folder(tmp_path / "u", data)
    planner = (GridPlanner(trials(experiment, data), set()) if driver == "grid"
               else _optuna_planner(experiment, data, run))
    result = run_trials(planner, run, experiment, unavailable, stream=io.StringIO())
    assert len(result.rows) == 6 and not result.failure_budget_spent and result.stopped is None
    failing = fake_measure(lambda spec: TrialRecord(TrialStatus.FAILED, "boom"))
    run = _run_folder(tmp_path / "f", data)
    planner = (GridPlanner(trials(experiment, data), set()) if driver == "grid"
               else _optuna_planner(experiment, data, run))
    result = run_trials(planner, run, experiment, failing, stream=io.StringIO())
    assert len(result.rows) == 4 and result.failure_budget_spent
    assert "4 of 4 trials failed, past budget.max_failure_rate 0.5" in result.stopped
    assert "Stopped early" in (run.path / SUMMARY_FILE).read_text()


@pytest.mark.parametrize("driver", ["grid", "optuna"])
def test_a_run_with_no_trial_ok_fails_whatever_its_size_and_budget(tmp_path, driver):
    """Regression (issue 28): the failure budget is judged from 4 trials on, so a run of 2 failed trials
    (or of any number with max_failure_rate 1.0) ended as a success."""
    experiment, data = _experiment(tmp_path), _data(tmp_path)  # 2 trials, max_failure_rate 0.5
    measures = {"failed": fake_measure(lambda spec: TrialRecord(TrialStatus.FAILED, "boom")),
                "unavailable": fake_measure(lambda spec: TrialRecord(TrialStatus.UNAVAILABLE, "no PipeModeDataset")),
                "half": fake_measure(lambda spec: _rate(spec) if spec.batch_size == 512 else
                                     TrialRecord(TrialStatus.FAILED, "boom"))}
    ended = {}
    for name, measure in measures.items():
        run = _run_folder(tmp_path / name, data)
        planner = (GridPlanner(trials(experiment, data), set()) if driver == "grid"
                   else _optuna_planner(experiment, data, run))
        result = run_trials(planner, run, experiment, measure, stream=io.StringIO())
        assert len(result.rows) == 2 and not result.failure_budget_spent and result.stopped is None
        ended[name] = (result.succeeded, result.failure())
    assert ended == {"failed": (False, "no trial succeeded (2 trials: 2 failed)"),
                     "unavailable": (False, "no trial succeeded (2 trials: 2 unavailable)"),
                     "half": (True, None)}


@pytest.mark.parametrize("driver", ["grid", "optuna"])
def test_max_trials_and_page_cache_hold_for_every_driver(tmp_path, driver):
    """The Optuna driver ignored budget.max_trials and measurement.page_cache."""
    experiment = parse_experiment({**_experiment(tmp_path, n_trials=2).resolved,
                                   "budget": {"max_trials": 1}, "measurement": {"page_cache": True}})
    data = _data(tmp_path)
    run = _run_folder(tmp_path / driver, data)
    watched: list[list[str]] = []

    measure = fake_measure(lambda spec: 1000.0)

    def measure_and_look(spec, trial_dir, limits, sampler_factory=None, on_progress=None):
        watched.append([str(p) for p in sampler_factory(0).data_files])
        return measure(spec, trial_dir, limits, sampler_factory, on_progress)

    planner = (GridPlanner(trials(experiment, data), set()) if driver == "grid"
               else _optuna_planner(experiment, data, run))
    result = run_trials(planner, run, experiment, measure_and_look, stream=io.StringIO())
    assert len(result.rows) == 1 and result.stopped == "budget.max_trials (1) reached"
    assert watched == [data.files["tfrecord"]]


def test_progress_says_done_of_total_and_the_summary_opens_with_the_action_then_the_machine(tmp_path):
    experiment, data = _experiment(tmp_path), _data(tmp_path)
    run = _run_folder(tmp_path / "run", data)
    stream = io.StringIO()
    run_trials(GridPlanner(trials(experiment, data), set()), run, experiment, fake_measure(_rate), stream=stream)
    lines = stream.getvalue().splitlines()
    # the grid's order is shuffled, seeded by the experiment
    # what tells trials apart (threads, environment, repeat) is on the line, and the figure has its interval
    assert re.match(r"\[1/2\] aws-sample tfrecord input b(256|512) threads default / default repeat 0: "
                    r"(2,560 \(2,560–2,560\)|5,120 \(5,120–5,120\)) ex/s \| [\d.,]+ trials/s", lines[0]), lines
    assert lines[1].startswith("[2/2]")
    summary = (run.path / SUMMARY_FILE).read_text().splitlines()
    # one round each: the fastest (batch 512) is named, and said not compared with the reference (batch 256)
    assert summary[2].startswith("**Fastest reading on this data: aws-sample on TFRecord, 5,120 (") and (
        "not compared with your reference aws-sample on TFRecord (fewer than two shared rounds" in summary[2])
    facts = run.machine
    assert summary[4] == (f"Machine: {facts.cpu.model}, {facts.cpu.vcpus} vCPUs / {facts.cpu.physical_cores} physical "
                          f"cores, TensorFlow {facts.tensorflow.version}.")
    assert summary[6] == f"OpenMP: {facts.tensorflow.openmp.statement}."
    assert summary[8].startswith("Data: ") and "1,000 rows" in summary[8]
    assert "?" not in "\n".join(summary[:10])


def test_the_synthetic_trial_names_no_format():
    """It serves one batch from memory: the format of whichever pipeline came first labelled it."""
    experiment = parse_experiment({"name": "s", "modes": ["synthetic", "input"], "pipelines": {"presets": ["aws-sample"]},
                                   "measurement": {"repeats": 1}})
    data = DataSet({"tfrecord": ["part-0.tfrecord"]}, fingerprint="d")
    # the grid shuffles its rounds, seeded by the experiment's fingerprint: find the trial, not its place
    (synthetic,) = [t for t in trials(experiment, data) if t.mode == "synthetic"]
    assert synthetic.label.format is None and synthetic.label.pipeline == "synthetic"


def test_the_grid_has_trials_of_one_repeat_and_environment_share_a_worker_and_the_rest_measured_alone(tmp_path):
    """Groups never mix repeats or environments, nor pass trials_per_worker; they take the trials of their first's mode
    first, those timed with it (one batch shape) before the other train trials, each in plan order; a trial its
    worker never reached is measured alone right after; every trial gets its row."""
    experiment = parse_experiment({
        "name": "loop", "modes": ["input", "train"], "pipelines": {"presets": ["aws-sample"]},
        "grid": {"batch_size": [256, 512], "env": {"KMP_AFFINITY": [None, "compact"]}},
        "measurement": {"repeats": 2}, "budget": {"trials_per_worker": 3},
        "results": "results"})  # not tmp_path: the plan's order is seeded by the experiment
    data = _data(tmp_path)
    run = _run_folder(tmp_path / "grid", data)
    one = fake_measure(_rate)
    groups, alone = [], []

    def measure(spec, trial_dir, limits, sampler_factory=None, on_progress=None):
        alone.append(spec.trial_id)
        return one(spec, trial_dir, limits, sampler_factory, on_progress)

    def measure_group(specs, dirs, limits, sampler_factory=None):
        groups.append(list(specs))
        found = [one(spec, folder, limits) for spec, folder in zip(specs, dirs)]
        return found[:-1] + [None] if len(groups) == 1 else found  # the first worker stopped before its last

    planned = trials(experiment, data)
    result = run_trials(GridPlanner(planned, set()), run, experiment, measure, stream=io.StringIO(),
                        measure_group=measure_group)
    assert sorted(r.trial_id for r in result.rows) == sorted(t.trial_id for t in planned)
    assert [r.repeat for r in result.rows] == sorted(r.repeat for r in result.rows), "repeats stay in their rounds"
    assert groups and max(len(g) for g in groups) == 3
    place = {t.trial_id: k for k, t in enumerate(planned)}
    for group in groups:
        assert len({(t.repeat, tuple(sorted(t.env.items())), t.threads) for t in group}) == 1
        assert len({t.configuration_id for t in group}) == len(group)
        modes = [t.mode for t in group]
        assert modes == sorted(modes, key=lambda mode: mode != modes[0]), "its first's mode first"
        together = [trains_with(group[0], t) for t in group if t.mode == "train"]
        assert together == sorted(together, reverse=True), "those timed with the first before other train trials"
        for mode in set(modes):
            for with_first in (True, False):
                ids = [place[t.trial_id] for t in group if t.mode == mode and trains_with(group[0], t) == with_first]
                assert ids == sorted(ids), "in plan order within each"
    assert any([t.mode for t in g[:2]] == ["train", "train"] for g in groups)
    assert groups[0][-1].trial_id in alone
    grouped = {t.trial_id for g in groups for t in g[: -1 if g is groups[0] else None]}
    assert grouped.isdisjoint(alone) and grouped | set(alone) == {t.trial_id for t in planned}
    # a caller that measures its own way and gives no group measure measures one trial at a time
    alone.clear()
    again = _run_folder(tmp_path / "alone", data)
    run_trials(GridPlanner(planned, set()), again, experiment, measure, stream=io.StringIO())
    assert alone == [t.trial_id for t in planned]
