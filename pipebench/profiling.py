"""TensorBoard profiles of chosen trials: `pipebench run ... --profile best|all-train|TRIAL_ID`.

Profiling is never on while a reported figure is timed. Once the run's trials are measured, each
chosen trial is run again in a fresh worker with the same settings (environment, threads, pipeline,
model): it warms up as a measured trial does, then runs one window of `measurement.window_sec`
under the TensorFlow profiler (`tf.profiler.experimental.start` / `stop`) and times nothing. The
trace lands in `RUN_DIR/profiles/<trial_id>/plugins/profile/<timestamp>/<host>.xplane.pb`, so
`tensorboard --logdir RUN_DIR/profiles` lists one profile run per trial (trace viewer, input-pipeline
analyzer, with the tensorboard-plugin-profile package), and the trial's row says where
(`profile_dir`, relative to the run folder). A trial already profiled is not profiled again.
"""
from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pipebench.errors import UsageError

if TYPE_CHECKING:
    from pipebench.results.trial_row import TrialRow

#: The run folder's subfolder holding one TensorBoard log folder per profiled trial.
PROFILES_DIR = "profiles"
#: What --profile takes besides a trial id.
CHOICES = ("best", "all-train")


def trace_files(logdir: Path) -> list[Path]:
    """Give the XPlane trace files the TensorFlow profiler wrote under `logdir` (as TensorBoard finds them)."""
    return sorted(Path(logdir).glob("plugins/profile/*/*.xplane.pb"))


def _unknown_trial(choice: str, trial_ids: list[str], run_dir: Path) -> UsageError:
    """Give the error for a `--profile` trial id the run does not hold, naming a few it does."""
    ids = ", ".join(trial_ids[:3]) + (", …" if len(trial_ids) > 3 else "")
    return UsageError(f"{run_dir}: --profile: no trial {choice[:60]!r} in this run (its trials: {ids or 'none'}; "
                      f"or give {' or '.join(CHOICES)})")


def chosen_rows(rows: list[TrialRow], choice: str, run_dir: Path) -> list[TrialRow]:
    """Give the rows of the trials `--profile choice` names.

    best: the first repeat of the run's fastest configuration (train, else input: results.configurations.fastest);
    all-train: every ok train trial; anything else is a trial id of the run.
    """
    if choice == "best":
        from pipebench.results.configurations import configurations
        from pipebench.results.configurations import fastest

        best = fastest(configurations(rows))
        if best is None:
            raise UsageError(f"{run_dir}: --profile best: no ok train or input trial to profile")
        return [best.rows[0]]
    if choice == "all-train":
        found = [r for r in rows if r.mode == "train" and r.ok]
        if not found:
            raise UsageError(f"{run_dir}: --profile all-train: the run has no ok train trial")
        return found
    found = [r for r in rows if r.trial_id == choice]
    if not found:
        raise _unknown_trial(choice, [r.trial_id for r in rows], run_dir)
    return found


def refuse_unknown_trial(choice: str, trial_ids: set[str], run_dir: Path) -> None:
    """Raise UsageError when `--profile choice` names a trial id the run will not hold (checked before the
    trials run, where the plan is known: a grid's)."""
    if choice not in CHOICES and choice not in trial_ids:
        raise _unknown_trial(choice, sorted(trial_ids), run_dir)


def profile_trials(run, rows: list[TrialRow], choice: str, limits, measure: Callable | None = None,
                   log: Callable[[str], None] = print) -> list[str]:
    """Profile the chosen trials of `run` (a RunFolder) in separate workers; give the ids profiled now.

    A trial whose worker fails, or writes no trace, keeps a null `profile_dir`, and the log says why.
    """
    from pipebench.measure.manager import TRIAL_FILE, run_worker
    from pipebench.measure.trial import TrialSpec, TrialStatus

    measure = measure or run_worker
    profiled = []
    for row in chosen_rows(rows, choice, run.path):
        trial_id = row.trial_id
        if row.profile_dir:
            log(f"profile: trial {trial_id} was profiled before: {run.path / row.profile_dir}")
            continue
        spec = TrialSpec.load(run.trial_dir(trial_id) / TRIAL_FILE)
        logdir = run.path / PROFILES_DIR / trial_id
        shutil.rmtree(logdir, ignore_errors=True)  # what an earlier, failed attempt left
        spec = dataclasses.replace(spec, profile_dir=str(logdir))
        outcome = measure(spec, logdir / "worker", limits)
        traces = trace_files(logdir)
        if outcome.record.status is not TrialStatus.OK or not traces:
            why = outcome.record.reason if outcome.record.status is not TrialStatus.OK else "no trace file written"
            log(f"profile: trial {trial_id} not profiled: {why}")
            continue
        run.note_profile(trial_id, f"{PROFILES_DIR}/{trial_id}")
        profiled.append(trial_id)
        log(f"profile: trial {trial_id} ({row.mode}, {row.pipeline} b{row.batch_size}): {traces[0]} — "
            f"tensorboard --logdir {run.path / PROFILES_DIR}")
    return profiled
