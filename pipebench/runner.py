"""`pipebench run` and `pipebench worker`: make the data, set up the run folder, pick the planner
(grid or Optuna), run the one trial loop, print what was found.

This module only dispatches: the loop is pipebench.search.loop, the run folder
pipebench.results.run_folder, the planners pipebench.search.grid and pipebench.search.optuna_driver.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pipebench.config import Experiment
from pipebench.results import SUMMARY_FILE
from pipebench.results.run_folder import RunFolder, prepare_run_folder
from pipebench.search.loop import LoopResult, run_trials


@dataclass(frozen=True)
class RunOutcome:
    """Where a run's results are and how it ended."""

    run_dir: Path
    result: LoopResult


def _optuna_planner(experiment: Experiment, data, run: RunFolder, storage: str | None, study_name: str | None,
                    resumed: bool, log):
    from pipebench.search.liveness import reclaim_dead_slots
    from pipebench.search.optuna_driver import OptunaPlanner, open_storage, open_study
    from pipebench.search.plan import make_plan

    plan = make_plan(experiment, data, run.machine)
    for note in plan.pinned.values():
        log(note)
    study = open_study(experiment, plan, open_storage(storage, run.path), study_name, log)
    if resumed:
        reclaim_dead_slots(study, log, experiment["search"]["heartbeat_sec"])
    log(f"study {study.study_name} in {run.path}: {len(study.trials)} trial(s) so far")
    return OptunaPlanner(study, plan, log)


def run(experiment: Experiment, run_dir: Path | None = None, instance_type: str | None = None,
        log: Callable[[str], None] = print) -> RunOutcome:
    """Run (or resume, when run_dir is given) the experiment; give the run folder and how it ended."""
    from pipebench.datasets import materialise
    from pipebench.report.summary import best_table, verdicts

    data = materialise(experiment, log=log)
    run_folder = prepare_run_folder(experiment, data, run_dir, instance_type)
    if experiment["search"]["driver"] == "optuna":
        planner = _optuna_planner(experiment, data, run_folder, experiment["search"]["storage"], None,
                                  run_dir is not None, log)
    else:
        from pipebench.search.grid import GridPlanner, trials

        done = {r["trial_id"] for r in run_folder.rows()}
        planner = GridPlanner(trials(experiment, data), done)
        log(f"run {run_folder.path}: {planner.total()} trials planned, {len(done)} done before, "
            f"{planner.total() - len(done)} to run")
    result = run_trials(planner, run_folder, experiment, log=log)
    if experiment["search"]["driver"] == "optuna":
        from pipebench.search.optuna_driver import finish

        finish(planner.study, run_folder.path, planner.plan.pinned, log)
    log(best_table(result.rows))
    log("\n".join(verdicts(result.rows)))
    log(f"results: {run_folder.path} (summary: {run_folder.path / SUMMARY_FILE})"
        + (f"; stopped early: {result.stopped}" if result.stopped else ""))
    return RunOutcome(run_folder.path, result)


def join(experiment: Experiment, storage: str, study_name: str, run_dir: Path | None = None,
         instance_type: str | None = None, log: Callable[[str], None] = print) -> RunOutcome:
    """Join a shared study as one worker: run its waiting slots one at a time; give this worker's run folder."""
    from pipebench.datasets import materialise

    data = materialise(experiment, log=log)
    run_folder = prepare_run_folder(experiment, data, run_dir, instance_type)
    planner = _optuna_planner(experiment, data, run_folder, storage, study_name, True, log)
    log(f"worker joined study {planner.study.study_name}; rows go to {run_folder.path}")
    result = run_trials(planner, run_folder, experiment, log=log)
    log("worker done: no waiting trials left" + (f"; stopped early: {result.stopped}" if result.stopped else ""))
    return RunOutcome(run_folder.path, result)
