"""`pipebench run` and `pipebench worker`: make the data, set up and lock the run folder, pick the planner
(grid or Optuna), run the one trial loop, print what was found: the best table, the verdicts, the action
(what to use and its measured gain, pipebench.report.action) and the commands that read the run.

This module only dispatches: the loop is pipebench.search.loop, the run folder
pipebench.results.run_folder, the planners pipebench.search.grid and pipebench.search.optuna_driver.
The process running or resuming a folder holds its lock, so a second one is refused instead of
running the same trials again. A new folder is created only once the data, the plan and a storage
given by URL have answered, so their failures leave no folder behind.
"""
from __future__ import annotations

import contextlib
import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from pipebench.config import Experiment
from pipebench.datasets import DataSet
from pipebench.results import SUMMARY_FILE
from pipebench.results.run_folder import MACHINE_FILE, RunFolder, create_run_folder, load_resumed, open_run_folder, own
from pipebench.search.loop import LoopResult, run_trials, trial_limits


@dataclass(frozen=True)
class RunOutcome:
    """Where a run's results are and how it ended (the CLI exits 3 past the failure budget)."""

    run_dir: Path
    result: LoopResult


@contextlib.contextmanager
def _folder(experiment: Experiment, run_dir: Path | None, instance_type: str | None, storage: str | None,
            study_name: str | None, where: str, log) -> Iterator[tuple[RunFolder, DataSet, object]]:
    """Yield (run folder, data, planner) with the folder's lock held.

    An existing folder is checked and locked before any work. A new one (`run_dir` None, or a
    worker's --run-dir not made yet) is created after the data, the plan and a storage given by URL.
    """
    from pipebench.datasets import materialise
    from pipebench.measure.machine import machine_facts

    optuna = experiment["search"]["driver"] == "optuna"
    with contextlib.ExitStack() as owned:
        existing = run_dir is not None and (Path(run_dir) / MACHINE_FILE).exists()
        if existing:
            load_resumed(run_dir)
            owned.enter_context(own(run_dir, created=False))
        data = materialise(experiment, log=log)
        machine = open_run_folder(run_dir).machine if existing else machine_facts(instance_type)
        planner = None
        if optuna:
            from pipebench.search.plan import make_plan

            plan = make_plan(experiment, data, machine)
            for note in plan.pinned.values():
                log(note)
            if storage is not None or existing:
                planner = _optuna_planner(experiment, plan, storage, run_dir, study_name, where, log)
        else:
            from pipebench.search.grid import trials

            planned = trials(experiment, data)
        run = open_run_folder(run_dir) if existing else create_run_folder(experiment, data, machine, run_dir)
        if not existing:
            owned.enter_context(own(run.path, created=True))
        if optuna and planner is None:  # the default journal lives in the run folder
            planner = _optuna_planner(experiment, plan, None, run.path, study_name, where, log)
        if not optuna:
            from pipebench.search.grid import GridPlanner

            done = {r.trial_id for r in run.rows()}
            planner = GridPlanner(planned, done)
            log(f"run {run.path}: {planner.total()} trials planned, {len(done)} done before, "
                f"{planner.total() - len(done)} to run")
        yield run, data, planner


def _optuna_planner(experiment: Experiment, plan, storage: str | None, run_dir: Path | None,
                    study_name: str | None, where: str, log):
    from pipebench.search.liveness import reclaim_dead_slots
    from pipebench.search.optuna_driver import OptunaPlanner, open_storage, open_study

    study = open_study(experiment, plan, open_storage(storage, run_dir, where), study_name, log)
    reclaim_dead_slots(study, log, experiment["search"]["heartbeat_sec"])
    log(f"study {study.study_name}: {len(study.trials)} trial(s) so far")
    return OptunaPlanner(study, plan, log)


def run(experiment: Experiment, run_dir: Path | None = None, instance_type: str | None = None,
        log: Callable[[str], None] = print, profile: str | None = None) -> RunOutcome:
    """Run (or resume, when run_dir is given) the experiment; give the run folder and how it ended.

    `profile` (best, all-train or a trial id) captures TensorBoard profiles of those trials once they are
    measured (pipebench.profiling).
    """
    from pipebench.report.action import action, baseline_of
    from pipebench.report.summary import best_table
    from pipebench.report.verdicts import verdicts
    from pipebench.search.grid import GridPlanner

    with _folder(experiment, run_dir, instance_type, experiment["search"]["storage"], None, "search.storage",
                 log) as (run_folder, _, planner):
        if profile is not None and isinstance(planner, GridPlanner):  # a study's trials are not known yet
            from pipebench.profiling import refuse_unknown_trial

            refuse_unknown_trial(profile, planner.trial_ids(), run_dir or experiment.source or run_folder.path)
        result = run_trials(planner, run_folder, experiment, log=log)
        if profile is not None:
            from pipebench.profiling import profile_trials

            profile_trials(run_folder, run_folder.rows(), profile, trial_limits(experiment), log=log)
    log(best_table(result.rows))
    log("\n".join(verdicts(result.rows)))
    log(action(result.rows, baseline_of(experiment.resolved), run_folder.path))
    log(f"results: {run_folder.path} (summary: {run_folder.path / SUMMARY_FILE})"
        + (f"; stopped early: {result.stopped}" if result.stopped else "")
        + (f"; `pipebench run --resume {shlex.quote(str(run_folder.path))}` measures the trials it did not reach"
           if result.unfinished else ""))
    if result.succeeded:  # with nothing measured there is nothing to report on or export
        from pipebench.report.next_steps import next_steps

        log("\n".join(next_steps(run_folder.path)))
    return RunOutcome(run_folder.path, result)


def join(experiment: Experiment, storage: str, study_name: str, run_dir: Path | None = None,
         instance_type: str | None = None, log: Callable[[str], None] = print) -> RunOutcome:
    """Join a shared study as one worker: run its waiting slots one at a time; give this worker's run folder."""
    experiment = Experiment({**experiment.resolved, "search": {**experiment["search"], "driver": "optuna"}},
                            experiment.source)
    with _folder(experiment, run_dir, instance_type, storage, study_name, "--storage", log) as (run_folder, _, planner):
        log(f"worker joined study {planner.study.study_name}; rows go to {run_folder.path}")
        result = run_trials(planner, run_folder, experiment, log=log)
    log("worker done: no waiting trials left" + (f"; stopped early: {result.stopped}" if result.stopped else ""))
    return RunOutcome(run_folder.path, result)
