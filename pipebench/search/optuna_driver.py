"""The Optuna driver: a planner for the trial loop that asks the study here and tells it each row.

A study holds exactly `search.n_trials` slots (pipebench.search.slots). Every process (`pipebench
run`, any number of `pipebench worker`s on any host) pops waiting slots until none is left, so the
study ends at its size whoever runs it; the last worker standing waits for the others' running
trials and runs again any whose worker is gone (pipebench.search.liveness). Settings this host
already measured are told their earlier values, not measured again.
"""
from __future__ import annotations

import dataclasses
import socket
import time
import warnings
from collections.abc import Callable
from pathlib import Path

from pipebench.atomic import atomic_write_json
from pipebench.config import Experiment, redact_url
from pipebench.errors import ConfigError
from pipebench.measure.trial import TrialStatus
from pipebench.results import IMPORTANCES_FILE
from pipebench.search import slots
from pipebench.search.liveness import Heartbeat, reclaim_dead_slots, worker_id
from pipebench.search.loop import Planned
from pipebench.search.plan import DIRECTIONS, Plan, objective_values, worker_trial

STUDY_FILE = "study.journal"


def open_storage(url: str | None, run_dir: Path | None, where: str = "search.storage"):
    """Give an Optuna storage: an RDB URL, connected, or a journal file (default: study.journal in the run).

    An RDB that does not answer is a one-line ConfigError naming `where` and the URL (no password).
    """
    if url is not None and "://" in url:
        from optuna.storages import RDBStorage
        from sqlalchemy.exc import DBAPIError, SQLAlchemyError

        # SQLAlchemy 2.1 reads postgresql:// as psycopg 3; we ship psycopg2
        dialect = "postgresql+psycopg2://" + url[len("postgresql://"):] if url.startswith("postgresql://") else url
        try:
            return RDBStorage(dialect)
        except (SQLAlchemyError, ImportError) as err:
            cause = err.orig if isinstance(err, DBAPIError) else err
            reason = (str(cause).strip().splitlines() or [type(cause).__name__])[0]
            raise ConfigError(f"{where}: cannot reach {redact_url(url)} ({reason[:150]})") from None
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    return JournalStorage(JournalFileBackend(str(Path(url) if url else Path(run_dir) / STUDY_FILE)))


def make_sampler(cfg: dict):
    """Give the Optuna sampler `search.sampler` names, seeded with `search.seed`."""
    import optuna

    if cfg["sampler"] == "random":
        return optuna.samplers.RandomSampler(seed=cfg["seed"])
    with warnings.catch_warnings():  # multivariate is "experimental" in Optuna 4; the 5.x default
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        # Multivariate: batch size, threads and pipeline interact. Constant liar: workers sharing a
        # study see each other's running trials as bad, so they do not all try the same settings.
        return optuna.samplers.TPESampler(seed=cfg["seed"], multivariate=True, constant_liar=True,
                                          n_startup_trials=max(2, min(10, cfg["n_trials"] // 3)))


def _pruner(experiment: Experiment, log):
    import optuna

    cfg = experiment["search"]
    if len(cfg["objectives"]) > 1 and cfg["pruner"] != "none":
        log(f"search.pruner {cfg['pruner']} ignored: Optuna prunes single-objective studies only")
    elif cfg["pruner"] == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=2, n_warmup_steps=0)
    elif cfg["pruner"] == "hyperband":
        return optuna.pruners.HyperbandPruner(min_resource=1, max_resource=experiment["measurement"]["windows"])
    return optuna.pruners.NopPruner()


def open_study(experiment: Experiment, plan: Plan, storage, study_name: str | None = None, log=print,
               wait_sec: float = 120.0):
    """Give the study; the one process that creates it enqueues its slots, the others wait for them.

    Creating is atomic in every Optuna storage (a second create of the same name raises
    DuplicatedStudyError), so two workers starting together cannot both enqueue slots.
    """
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    cfg = experiment["search"]
    name = study_name or cfg["study_name"] or experiment.name
    directions = [DIRECTIONS[o] for o in cfg["objectives"]]
    sampler, pruner = make_sampler(cfg), _pruner(experiment, log)
    try:
        study = optuna.create_study(storage=storage, study_name=name, sampler=sampler, pruner=pruner,
                                    directions=directions)
    except optuna.exceptions.DuplicatedStudyError:
        study = optuna.load_study(study_name=name, storage=storage, sampler=sampler, pruner=pruner)
        if [d.name.lower() for d in study.directions] != directions:
            raise ConfigError(f"search.objectives: {cfg['objectives']} do not match study {name!r}, which "
                              f"{'maximizes' if len(study.directions) == 1 else 'optimizes'} "
                              f"{study.user_attrs.get(slots.STUDY_OBJECTIVES, [d.name.lower() for d in study.directions])}")
        slots.wait_for_slots(study, name, wait_sec)
        return study
    slots.enqueue_slots(study, plan)
    return study


class OptunaPlanner:
    """Planner over a study: `next()` asks (skipping settings measured before), `done()` tells."""

    def __init__(self, study, plan: Plan, log: Callable[[str], None] = print) -> None:
        import optuna

        self.study, self.plan, self.log = study, plan, log
        experiment = plan.experiment
        self.objectives = study.user_attrs.get(slots.STUDY_OBJECTIVES, experiment["search"]["objectives"])
        self.heartbeat_sec = experiment["search"]["heartbeat_sec"]
        self.prunable = len(self.objectives) == 1 and not isinstance(study.pruner, optuna.pruners.NopPruner)

    def total(self) -> int | None:
        return self.study.user_attrs.get(slots.STUDY_SLOTS)

    def next(self) -> Planned | None:
        from optuna.trial import TrialState

        while True:
            if not self.study.get_trials(deepcopy=False, states=(TrialState.WAITING,)):
                # The last worker standing sees the study through: it waits for the others' running
                # trials and runs again any whose worker is gone.
                if not self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
                    return None
                if not reclaim_dead_slots(self.study, self.log, self.heartbeat_sec):
                    time.sleep(min(self.heartbeat_sec, 2.0))
                continue
            trial = self.study.ask()
            if slots.slot_of(trial) is None:  # another process took the last slot between the check and the ask
                trial.set_user_attr(slots.SURPLUS, True)
                self.study.tell(trial, state=TrialState.FAIL)
                return None
            trial.set_user_attr(slots.WORKER, worker_id())
            trial.set_user_attr(slots.HOST, socket.gethostname())
            trial.set_user_attr(slots.HEARTBEAT, time.time())
            spec = worker_trial(self.plan, slots.params_of(trial, self.plan))
            if slots.tell_duplicate(self.study, trial, f"{socket.gethostname()}:{spec.trial_id}", self.plan, self.log):
                continue
            if spec.knobs_not_applied:
                trial.set_user_attr(slots.KNOBS_NOT_APPLIED, list(spec.knobs_not_applied))
            spec = dataclasses.replace(spec, trial_id=f"{self.study.study_name}-{trial.number}")

            def on_window(window: int, examples_per_sec: float, trial=trial) -> bool:
                trial.report(examples_per_sec, window)
                return trial.should_prune()

            return Planned(spec, on_window if self.prunable else None, Heartbeat(trial, self.heartbeat_sec),
                           self.study.study_name, trial.number, trial)

    def done(self, planned: Planned, row: dict) -> None:
        from optuna.trial import TrialState

        trial = planned.handle
        values = objective_values(row, self.objectives, self.plan.price_per_hour)
        status = TrialStatus(row["status"])
        trial.set_user_attr(slots.STATUS, status.value)
        try:
            if status is TrialStatus.OK and None not in values:
                self.study.tell(trial, values)
                return
            # measured without a value for an objective (a NaN AUC), or not measured: the study hears why
            why = row["reason"] if status is not TrialStatus.OK else f"no value for objective(s) {self.objectives}"
            if why:
                trial.set_user_attr(slots.REASON, why)
            state = "FAIL" if status is TrialStatus.OK else status.optuna_state
            self.study.tell(trial, state=getattr(TrialState, state))
        except (RuntimeError, ValueError) as err:  # taken as lost and reclaimed meanwhile (a stalled host)
            self.log(f"trial {trial.number}: could not be told ({err}); its row is kept, its slot was run again")


def importances(study) -> dict:
    """Give each objective's parameter importances (Optuna's default evaluator), or why there are none."""
    import optuna

    out = {}
    for i, objective in enumerate(study.user_attrs.get(slots.STUDY_OBJECTIVES, ["examples_per_sec"])):
        # Optuna 5's default evaluator (PED-ANOVA) explains low target values: negate what is maximised.
        sign = -1.0 if study.directions[i] == optuna.study.StudyDirection.MAXIMIZE else 1.0
        try:
            with warnings.catch_warnings():  # the direction warning: the sign above already answers it
                warnings.simplefilter("ignore", UserWarning)
                found = optuna.importance.get_param_importances(study, target=lambda t, i=i, s=sign: s * t.values[i])
            out[objective] = {name: float(value) for name, value in found.items()}
        except (RuntimeError, ValueError) as err:
            out[objective] = {"unavailable": str(err)}
    return out


def finish(study, run_dir: Path, pinned: dict[str, str], log=print) -> dict:
    """Save and print importances, how the best trial compares with the enqueued references; give the saved dict."""
    from optuna.trial import TrialState

    done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    found = {"study": study.study_name, "importances": importances(study), "pinned": list(pinned.values()),
             "references": {slots.enqueued_as(t): t.values for t in done if slots.enqueued_as(t) != slots.SAMPLED}}
    if done and len(study.directions) == 1:
        best = study.best_trial
        found["best"] = {"number": best.number, "values": best.values, "params": best.params}
    atomic_write_json(run_dir / IMPORTANCES_FILE, found, default=str)
    for objective, values in found["importances"].items():
        log(f"importances ({objective}): " + ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k}: {v}"
                                                      for k, v in values.items()))
    if "best" in found:
        beats = ", ".join(f"{name} {values[0]:,.0f}" for name, values in found["references"].items())
        log(f"best: trial {found['best']['number']} {found['best']['values'][0]:,.0f}"
            + (f" (references: {beats})" if beats else ""))
    return found
