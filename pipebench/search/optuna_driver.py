"""The Optuna driver: a planner for the trial loop that asks the study here and tells it each row.

A study holds at most `search.n_trials` slots (pipebench.search.slots): the exploration's, then the
confirmation phase's (pipebench.search.confirm), whose rounds are enqueued here once the trials
before them have finished. Every process (`pipebench run`, any number of `pipebench worker`s on any
host) pops waiting slots until none is left, so the study ends at its size whoever runs it; the last
worker standing waits for the others' running trials and runs again any whose worker is gone
(pipebench.search.liveness). Settings this host already measured in the exploration are told their
earlier values, not measured again; confirmation trials measure again on purpose.

The study ends like the grid: importances (once enough exploration trials finished to mean
something) and the confirmed winner — settings with units, throughput interval, paired gain over
each reference — go to importances.json and the log before the loop writes summary.md.
"""
from __future__ import annotations

import dataclasses
import socket
import time
import warnings
from collections.abc import Callable
from pathlib import Path

from pipebench.config import Experiment, redact_url
from pipebench.config.budget import confirms, reserved_trials
from pipebench.report.winner import winner_lines
from pipebench.errors import ConfigError
from pipebench.measure.trial import TrialStatus
from pipebench.results.run_folder import RunFolder
from pipebench.results.study import StudyRecord, Unavailable, Winner, WinnerGain, write_study
from pipebench.results.trial_row import TrialRow
from pipebench.search import slots
from pipebench.search.confirm import Contender, Explored, Race, choose_contenders, decide, reads
from pipebench.search.liveness import Heartbeat, reclaim_dead_slots, worker_id
from pipebench.search.loop import Planned
from pipebench.search.plan import DIRECTIONS, Plan, objective_values, worker_trial
from pipebench.search.pruning import make_pruner
from pipebench.search.settings import settings_text

STUDY_FILE = "study.journal"
#: Optuna's default importance evaluator (PED-ANOVA) compares the trials in the top TOP_QUANTILE with the
#: rest; its documentation asks for at least MIN_TOP_TRIALS there to be stable. Fewer exploration trials
#: than that give importances that are noise, so they are withheld, with the reason.
TOP_QUANTILE, MIN_TOP_TRIALS = 0.1, 5
MIN_TRIALS_FOR_IMPORTANCES = round(MIN_TOP_TRIALS / TOP_QUANTILE)


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
        # Few random startup trials: the starts and an ordinal space give TPE its bearings early, and on
        # search_replay.py's recorded surface 3 found the best setting more often than 8 in the same budget.
        exploring = cfg["n_trials"] - reserved_trials(cfg)
        return optuna.samplers.TPESampler(seed=cfg["seed"], multivariate=True, constant_liar=True,
                                          n_startup_trials=max(3, min(10, exploring // 6)))


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
    sampler = make_sampler(cfg)
    pruner = make_pruner(cfg, experiment["measurement"]["windows"], log)
    try:
        study = optuna.create_study(storage=storage, study_name=name, sampler=sampler, pruner=pruner,
                                    directions=directions)
    except optuna.exceptions.DuplicatedStudyError:
        study = optuna.load_study(study_name=name, storage=storage, sampler=sampler, pruner=pruner)
        if [d.name.lower() for d in study.directions] != directions:
            raise ConfigError(f"search.objectives: {cfg['objectives']} do not match study {name!r}, which "
                              f"{'maximizes' if len(study.directions) == 1 else 'optimizes'} "
                              f"{study.user_attrs.get(slots.STUDY_OBJECTIVES, [d.name.lower() for d in study.directions])}") from None
        slots.wait_for_slots(study, name, wait_sec)
        return study
    slots.enqueue_slots(study, plan)
    return study


class OptunaPlanner:
    """Planner over a study: `next()` asks (skipping settings measured before), `done()` tells; after the
    exploration it enqueues the confirmation rounds, and `finish()` records the winner."""

    remeasures_busy = False  # every trial is in the study's budget (pipebench.search.loop.Planner)

    def __init__(self, study, plan: Plan, log: Callable[[str], None] = print) -> None:
        import optuna

        self.study, self.plan, self.log = study, plan, log
        experiment = plan.experiment
        self.objectives = study.user_attrs.get(slots.STUDY_OBJECTIVES, experiment["search"]["objectives"])
        self.heartbeat_sec = experiment["search"]["heartbeat_sec"]
        self.prunable = len(self.objectives) == 1 and not isinstance(study.pruner, optuna.pruners.NopPruner)
        cfg = experiment["search"]
        self.seed = cfg["seed"] if cfg["seed"] is not None else study.study_name

    def total(self) -> int | None:
        return self.study.user_attrs.get(slots.STUDY_SLOTS)

    def next(self) -> Planned | None:
        from optuna.trial import TrialState

        while True:
            if not self.study.get_trials(deepcopy=False, states=(TrialState.WAITING,)):
                # The last worker standing sees the study through: it waits for the others' running
                # trials, runs again any whose worker is gone, then enqueues the next confirmation round.
                if not self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
                    if self._enqueue_round():
                        continue
                    return None
                if not reclaim_dead_slots(self.study, self.log, self.heartbeat_sec):
                    time.sleep(min(self.heartbeat_sec, 2.0))
                continue
            trial = self.study.ask()
            if slots.slot_of(trial) is None or (slots.round_of(trial) is not None
                                                and slots.seat_taken(self.study, trial)):
                # another process took the last slot between the check and the ask, or enqueued this round too
                trial.set_user_attr(slots.SURPLUS, True)
                self.study.tell(trial, state=TrialState.FAIL)
                if slots.slot_of(trial) is None:
                    return None
                continue
            trial.set_user_attr(slots.WORKER, worker_id())
            trial.set_user_attr(slots.HOST, socket.gethostname())
            trial.set_user_attr(slots.HEARTBEAT, time.time())
            round_number = slots.round_of(trial)
            if round_number is None:
                params = slots.params_of(trial, self.plan)
                spec = worker_trial(self.plan, params)
                trial.set_user_attr(slots.SETTINGS, params)
                trial.set_user_attr(slots.CONFIGURATION, spec.configuration_id)
                if slots.tell_duplicate(self.study, trial, f"{socket.gethostname()}:{spec.trial_id}", self.plan,
                                        self.log):
                    continue
            else:  # a confirmation trial: its contender's settings again, as repeat `round`
                spec = dataclasses.replace(worker_trial(self.plan, trial.user_attrs[slots.SETTINGS]),
                                           repeat=round_number)
            if spec.knobs_not_applied:
                trial.set_user_attr(slots.KNOBS_NOT_APPLIED, list(spec.knobs_not_applied))
            spec = dataclasses.replace(spec, trial_id=f"{self.study.study_name}-{trial.number}")

            def on_window(window: int, examples_per_sec: float, trial=trial) -> bool:
                trial.report(examples_per_sec, window)
                return trial.should_prune()

            # a confirmation trial is never pruned: its rounds are what the race compares
            prunable = self.prunable and round_number is None
            return Planned(spec, on_window if prunable else None, Heartbeat(trial, self.heartbeat_sec),
                           self.study.study_name, trial.number, trial)

    def done(self, planned: Planned, row: TrialRow) -> None:
        from optuna.trial import TrialState

        trial = planned.handle
        values = objective_values(row, self.objectives, self.plan.price_per_hour)
        status = TrialStatus(row.status)
        trial.set_user_attr(slots.STATUS, status.value)
        try:
            if status is TrialStatus.OK and None not in values:
                self.study.tell(trial, values)
                return
            # measured without a value for an objective (a NaN AUC), or not measured: the study hears why
            why = row.reason if status is not TrialStatus.OK else f"no value for objective(s) {self.objectives}"
            if why:
                trial.set_user_attr(slots.REASON, why)
            state = "FAIL" if status is TrialStatus.OK else status.optuna_state
            self.study.tell(trial, state=getattr(TrialState, state))
        except (RuntimeError, ValueError) as err:  # taken as lost and reclaimed meanwhile (a stalled host)
            self.log(f"trial {trial.number}: could not be told ({err}); its row is kept, its slot was run again")

    def race(self) -> Race | None:
        """Give the confirmation race as the study holds it, or None when the study has no confirmation phase."""
        cfg = self.plan.experiment["search"]
        if not confirms(cfg) or slots.STUDY_EXPLORATION not in self.study.user_attrs:
            return None
        return study_race(self.study, self.plan)

    def _enqueue_round(self) -> bool:
        """Enqueue the next confirmation round once every trial before it finished; give whether one was."""
        race = self.race()
        names = race.next_round() if race is not None else None
        if names is None:
            return False
        round_number = race.last_round() + 1
        if round_number == 1:
            self.log(f"confirmation: {len(names)} contenders ({', '.join(names)}) race in interleaved rounds, "
                     f"{race.budget} trials at most")
        slots.enqueue_round(self.study, round_number, names, race.contenders, self.seed)
        return True

    def finish(self, run: RunFolder) -> None:
        finish(self.study, self.plan, run.path, self.log)


def _explored(study) -> list:
    """Give the study's measured exploration trials (complete, not told a duplicate's values, not confirming)."""
    from optuna.trial import TrialState

    return [t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
            if slots.round_of(t) is None and not slots.is_duplicate(t)]


def study_race(study, plan: Plan) -> Race:
    """Give the confirmation race from the study's trials: its contenders (chosen from the exploration until
    the first round names them), the seats of each round, and what each measured."""
    from optuna.trial import TrialState

    trials = study.get_trials(deepcopy=False)
    confirming = [t for t in trials if slots.round_of(t) is not None and not t.user_attrs.get(slots.SURPLUS)]
    rounds: dict[int, list[str]] = {}
    contenders = {}
    for trial in sorted(confirming, key=lambda t: t.number):
        name = trial.user_attrs[slots.CONTENDER]
        seats = rounds.setdefault(slots.round_of(trial), [])
        if name not in seats:
            seats.append(name)
        contenders.setdefault(name, trial)
    cfg = plan.experiment["search"]
    explored = [Explored(t.number, t.user_attrs[slots.CONFIGURATION], t.user_attrs[slots.SETTINGS], t.values[0])
                for t in _explored(study) if slots.CONFIGURATION in t.user_attrs]
    chosen = {c.name: c for c in choose_contenders(plan, explored, cfg["confirm_top"], cfg["enqueue_reference"])}
    if contenders:  # the first round named them: the exploration cannot have changed since, but the study is the record
        chosen = {name: chosen.get(name) or _contender(trial, plan) for name, trial in contenders.items()}
    race = Race(chosen, {r: rounds[r] for r in sorted(rounds)},
                budget=study.user_attrs.get(slots.STUDY_SLOTS, 0) - slots.exploration_slots(study))
    for trial in confirming:
        if trial.state == TrialState.COMPLETE:
            race.values.setdefault(trial.user_attrs[slots.CONTENDER], {})[slots.round_of(trial)] = trial.values[0]
    return race


def _contender(trial, plan: Plan):
    """Give the contender a confirmation trial names, from its own attributes."""
    params = trial.user_attrs[slots.SETTINGS]
    return Contender(trial.user_attrs[slots.CONTENDER], params, trial.user_attrs[slots.CONFIGURATION],
                     reads(plan, params))


def importances(study) -> dict[str, Unavailable | dict[str, float]]:
    """Give each objective's parameter importances over the measured exploration trials (Optuna's default
    evaluator), or why there are none: fewer than MIN_TRIALS_FOR_IMPORTANCES of them, or Optuna's reason."""
    import optuna

    explored = _explored(study)
    objectives = study.user_attrs.get(slots.STUDY_OBJECTIVES, ["examples_per_sec"])
    if len(explored) < MIN_TRIALS_FOR_IMPORTANCES:
        why = (f"withheld: {len(explored)} exploration trials finished, and Optuna's default evaluator (PED-ANOVA) "
               f"needs {MIN_TOP_TRIALS} in its top {TOP_QUANTILE:.0%} ({MIN_TRIALS_FOR_IMPORTANCES} trials) to be "
               "stable; with fewer, importances follow the noise")
        return {objective: Unavailable(why) for objective in objectives}
    # over the exploration alone: confirmation trials measure chosen settings again, and carry no parameters
    explored_study = optuna.create_study(directions=study.directions)
    explored_study.add_trials(explored)
    out = {}
    evaluator = optuna.importance.PedAnovaImportanceEvaluator(target_quantile=TOP_QUANTILE)
    for i, objective in enumerate(objectives):
        # PED-ANOVA explains low target values: negate what is maximised.
        sign = -1.0 if study.directions[i] == optuna.study.StudyDirection.MAXIMIZE else 1.0
        try:
            with warnings.catch_warnings():  # the direction warning: the sign above already answers it
                warnings.simplefilter("ignore", UserWarning)
                found = optuna.importance.get_param_importances(explored_study, evaluator=evaluator,
                                                                target=lambda t, i=i, s=sign: s * t.values[i])
            out[objective] = {name: float(value) for name, value in found.items()}
        except (RuntimeError, ValueError) as err:
            out[objective] = Unavailable(str(err))
    return out


def winner_record(study, plan: Plan, race: Race) -> Winner | None:
    """Give the confirmed winner as importances.json records it, or None when no round finished."""
    decision = decide(race)
    if decision is None:
        return None
    from optuna.trial import TrialState

    winner = decision.winner
    trials = [t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
              if slots.round_of(t) is not None and t.user_attrs.get(slots.CONTENDER) == winner.name]
    rate = decision.throughput
    gains = {reference: WinnerGain(ratio, verdict) for reference, (ratio, verdict) in decision.gains.items()}
    return Winner(winner.name, tuple(f"{study.study_name}-{t.number}" for t in trials), winner.configuration_id,
                  tuple(int(n) for n in winner.explored), settings_text(worker_trial(plan, winner.params)),
                  rate, gains,
                  {name: int(last) for name, last in decision.dropped.items()})


def _withheld(study, plan: Plan, race: Race | None) -> str:
    """Give why a study names no winner."""
    cfg = plan.experiment["search"]
    if race is None and cfg["confirm_top"] == 0:
        return "no confirmation phase (search.confirm_top: 0): no single trial's value is a winner under noise"
    if race is None and list(cfg["objectives"]) != ["examples_per_sec"]:
        return f"the objectives {cfg['objectives']} form a Pareto front; the confirmation phase races examples/sec alone"
    if race is None:
        return "the study was made before confirmation phases (no exploration/confirmation split)"
    if not race.contenders:
        return "no exploration trial finished, so there was nothing to confirm"
    if not race.rounds:
        return "the run stopped before the confirmation phase"
    return "the run stopped before a contender finished two confirmation rounds"


def finish(study, plan: Plan, run_dir: Path, log=print) -> StudyRecord:
    """Save and print importances and the confirmed winner; give the saved record."""
    race = study_race(study, plan) if confirms(plan.experiment["search"]) and slots.STUDY_EXPLORATION in study.user_attrs else None
    winner = winner_record(study, plan, race) if race is not None else None
    found = StudyRecord(study.study_name, importances(study), tuple(plan.pinned.values()), winner,
                        None if winner is not None else _withheld(study, plan, race))
    write_study(run_dir, found)
    for objective, values in found.importances.items():
        log(f"importances ({objective}): " + (f"unavailable: {values.unavailable}" if isinstance(values, Unavailable)
                                              else ", ".join(f"{k} {v:.2f}" for k, v in values.items())))
    for line in winner_lines(found):
        log(line)
    return found
