"""The Optuna driver: ask in this process, run the trial in a worker process, tell the result.

A study holds exactly `search.n_trials` slots, enqueued when it is created: the reference deck's
settings and TensorFlow's defaults first, then empty ones the sampler fills in when a slot is asked
for. Every process (`pipebench run`, any number of `pipebench worker`s on any host) pops waiting
slots until none is left, so the study ends at its size whoever runs it. A slot whose worker died
(kill -9, a lost host) is failed and enqueued again with the same settings — by the next process on
that host, or by any worker once the trial's heartbeat stops — so no slot is lost and none is
measured twice; the last worker standing waits for the others' running trials before it ends. Settings this host already measured are
not measured again: the earlier values are told and the slot goes back to the sampler.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import socket
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

from pipebench.config import ENV_KNOBS, Experiment
from pipebench.datasets import DataSet
from pipebench.errors import ConfigError
from pipebench.pipeline.spec import PipelineSpec
from pipebench.search.grid import Candidate, candidates, make_trial
from pipebench.search.space import Dimension, default_space, parse_space, pin_inert

if TYPE_CHECKING:
    from pipebench.runner import Outcome

STUDY_FILE = "study.journal"
_DIRECTIONS = {"examples_per_sec": "maximize", "rss_peak_bytes": "minimize", "auc": "maximize",
               "cost_per_million_examples": "minimize"}
_RECORD_KEYS = {"examples_per_sec": "examples_per_sec_median", "rss_peak_bytes": "rss_peak_bytes", "auc": "auc"}
_MIN_TRIALS_FOR_FAILURE_BUDGET = 4


@dataclass
class Plan:
    """What turns an Optuna trial into a worker trial: the space and the pipelines it names."""

    experiment: Experiment
    data: DataSet
    pipelines: dict[str, Candidate]
    space: dict[str, Dimension]
    pinned: list[str]
    references: list[tuple[str, dict, dict]]  # name, searched knobs' values, fixed knobs' values
    price_per_hour: float | None = None  # this host's instance price, for the cost objective


def instance_price(experiment: Experiment, machine: dict) -> float | None:
    """Give this host's hourly price from the catalog when the cost objective needs it; ConfigError if unknown."""
    if "cost_per_million_examples" not in experiment["search"]["objectives"]:
        return None
    from pipebench.report.catalog import load_catalog

    catalog = load_catalog(experiment["search"]["catalog"])
    instance_type = (machine.get("sagemaker") or {}).get("instance_type")
    if instance_type is None:
        raise ConfigError("search.objectives: cost_per_million_examples needs this machine's instance type "
                          "(pipebench run/worker --instance-type T, or SageMaker's SM_CURRENT_INSTANCE_TYPE)")
    if instance_type not in catalog.instances:
        raise ConfigError(f"search.objectives: cost_per_million_examples: {instance_type} has no price in the "
                          f"catalog (search.catalog: a YAML file like pipebench/report/catalog.yaml)")
    return catalog.instances[instance_type].price_per_hour


def objective_values(row: dict, objectives: list[str], price_per_hour: float | None) -> list[float | None]:
    """Give the row's value for each objective; cost is the price of a million examples at its rate."""
    values = []
    for objective in objectives:
        if objective == "cost_per_million_examples":
            rate = row.get("examples_per_sec_median")
            values.append(price_per_hour / (rate * 3600) * 1e6 if rate and price_per_hour else None)
        else:
            values.append(row.get(_RECORD_KEYS[objective]))
    return values


def _match_pipeline(choice: str, pipelines: dict[str, Candidate], where: str) -> str:
    if choice in pipelines:
        return choice
    named = [label for label, c in pipelines.items() if c.name == choice]
    if len(named) == 1:
        return named[0]
    raise ConfigError(f"{where}: {choice!r} names no single pipeline (one of {', '.join(pipelines)})")


def make_plan(experiment: Experiment, data: DataSet, machine: dict) -> Plan:
    """Give the search plan: space (defaults filled in, inert knobs pinned), pipelines, reference settings."""
    cfg = experiment["search"]
    pipelines = {c.label: c for c in candidates(experiment, data)}
    if not pipelines:
        raise ConfigError("pipelines: nothing to search (no presets, no orderings)")
    vcpus = machine["cpu"]["vcpus"]
    defaults = default_space(list(pipelines), experiment["grid"]["batch_size"], vcpus)
    if cfg["space"] is None:
        space = defaults
    else:
        space = parse_space(cfg["space"])
        for name in ("pipeline", "batch_size", "intra_op_threads", "inter_op_threads"):
            space.setdefault(name, defaults[name].pin(defaults[name].choices[0]))
    pipeline = space["pipeline"]
    if pipeline.choices is None:
        raise ConfigError("search.space.pipeline: must be a list of pipelines")
    space["pipeline"] = Dimension("pipeline", tuple(
        _match_pipeline(str(c), pipelines, "search.space.pipeline") for c in pipeline.choices))
    reference = next((label for label, c in pipelines.items() if c.name == "aws-sample"), None)
    batch = experiment["grid"]["batch_size"][0]
    deck = {"pipeline": reference, "batch_size": batch, "intra_op_threads": vcpus, "inter_op_threads": vcpus,
            "env.KMP_AFFINITY": "disabled"}
    tf_defaults = {"pipeline": reference, "batch_size": batch, "intra_op_threads": 0, "inter_op_threads": 0,
                   **{f"env.{name}": None for name in ENV_KNOBS}}
    pinned: list[str] = []
    fixed = {name for name, dim in space.items() if dim.pinned}  # pinned by the user or left out of the space
    if cfg["pin_inert"]:
        space, pinned = pin_inert(space, machine, deck)
    references = []
    for name, params in (("reference deck", deck), ("TF defaults", tf_defaults)):
        searched = {k: v for k, v in params.items() if k in space and not space[k].pinned and space[k].contains(v)}
        # A knob the space does not search still takes the reference's value in the reference trial.
        overrides = {k: v for k, v in params.items()
                     if (k in fixed or k not in space) and (v is not None or k.startswith("env."))}
        references.append((name, searched, overrides))
    return Plan(experiment, data, pipelines, space, pinned, references if cfg["enqueue_reference"] else [],
                instance_price(experiment, machine))


def _apply_knob(spec: PipelineSpec, name: str, value: Any) -> PipelineSpec:
    """Give `spec` with one `stage.*`, `source.*` or `option.*` knob set; ConfigError if this spec cannot take it."""
    group, _, rest = name.partition(".")
    if group == "source":
        return spec.with_source(**{rest: value})
    if group == "option":
        return spec.with_option(rest, value)
    kind, param = rest.split(".")
    stage = spec.stage(kind)
    if stage is None:
        raise ConfigError(f"{spec.ordering} has no {kind} stage")
    if param == "enabled":  # space.py allows it only for stages that change speed, never the examples
        return spec if value else spec.without_stage(kind)
    return spec.with_stage(stage.replace(**{param: value}))


def worker_trial(plan: Plan, params: dict[str, Any]) -> dict:
    """Give the worker's trial dict for a full set of knob values.

    A pipeline knob that a chosen pipeline cannot take (no such stage, an option Pipe mode lacks)
    is left out for that trial and listed under `knobs_not_applied`.
    """
    candidate = plan.pipelines[params["pipeline"]]
    spec, not_applied = candidate.spec, []
    for name, value in sorted(params.items()):
        if name.startswith(("stage.", "source.", "option.")):
            try:
                spec = _apply_knob(spec, name, value)
            except ConfigError as err:
                not_applied.append(f"{name}: {err}")
    setting = {"batch_size": params["batch_size"],
               "threads": {"intra": params["intra_op_threads"] or None, "inter": params["inter_op_threads"] or None},
               "env": {name[4:]: value for name, value in params.items()
                       if name.startswith("env.") and value is not None}}
    trial = make_trial(plan.experiment, plan.data, plan.experiment["search"]["mode"],
                       dataclasses.replace(candidate, spec=spec), setting)
    return {**trial, "knobs_not_applied": not_applied}


def _without_password(url: str) -> str:
    return re.sub(r"(//[^/:@]*):[^/@]*@", r"\1:***@", url)


def open_storage(url: str | None, run_dir: Path | None, where: str = "search.storage"):
    """Give an Optuna storage: an RDB URL, connected, or a journal file (default: study.journal in the run).

    An RDB that does not answer is a one-line ConfigError naming `where` and the URL (password hidden).
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
            raise ConfigError(f"{where}: cannot reach {_without_password(url)} ({reason[:150]})") from None
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    return JournalStorage(JournalFileBackend(str(Path(url) if url else run_dir / STUDY_FILE)))


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
    directions = [_DIRECTIONS[o] for o in cfg["objectives"]]
    sampler, pruner = make_sampler(cfg), _pruner(experiment, log)
    try:
        study = optuna.create_study(storage=storage, study_name=name, sampler=sampler, pruner=pruner,
                                    directions=directions)
    except optuna.exceptions.DuplicatedStudyError:
        study = optuna.load_study(study_name=name, storage=storage, sampler=sampler, pruner=pruner)
        if [d.name.lower() for d in study.directions] != directions:
            raise ConfigError(f"search.objectives: {cfg['objectives']} do not match study {name!r}, which "
                              f"{'maximizes' if len(study.directions) == 1 else 'optimizes'} "
                              f"{study.user_attrs.get('objectives', [d.name.lower() for d in study.directions])}")
        deadline = time.monotonic() + wait_sec
        while "pipebench_slots" not in study.user_attrs:  # its creator is still enqueuing
            if time.monotonic() > deadline:
                raise ConfigError(f"search.study_name: study {name!r} exists but its slots were never all "
                                  f"enqueued (its creator died?); delete it or choose another name")
            time.sleep(0.5)
        return study
    for slot in range(cfg["n_trials"]):
        enqueued_as, params, overrides = plan.references[slot] if slot < len(plan.references) else ("sampled", {}, {})
        study.enqueue_trial(params, user_attrs={"slot": slot, "enqueued_as": enqueued_as, "overrides": overrides})
    study.set_user_attr("objectives", cfg["objectives"])
    study.set_user_attr("pipebench_slots", cfg["n_trials"])  # last: the sign for waiting workers
    return study


def _worker_id() -> str:
    me = psutil.Process()
    return f"{socket.gethostname()}:{me.pid}:{me.create_time():.3f}"


def _died_here(pid: str, created: str) -> bool:
    """Whether this host's process `pid`, started at `created`, is gone (a new process may reuse the pid)."""
    try:
        return f"{psutil.Process(int(pid)).create_time():.3f}" != created
    except psutil.NoSuchProcess:
        return True


#: A running trial whose heartbeat is older than this many heartbeat intervals is taken as lost.
_MISSED_HEARTBEATS = 4


def _lost(trial, heartbeat_sec: float) -> str | None:
    """Give why a running trial's worker is gone (died on this host, or silent on another), or None."""
    worker = trial.user_attrs.get("worker")
    if worker is None:
        return None
    host, pid, created = worker.rsplit(":", 2)
    if host == socket.gethostname():  # only this host can tell whether its process is alive
        return f"its worker {worker} died" if _died_here(pid, created) else None
    last = trial.user_attrs.get("heartbeat") or trial.datetime_start.timestamp()
    silent = time.time() - last
    if silent > _MISSED_HEARTBEATS * heartbeat_sec:
        return f"no heartbeat from its worker {worker} for {silent:.0f} s"
    return None


def reclaim_dead_slots(study, log=print, heartbeat_sec: float = 30.0) -> int:
    """Fail the running trials whose worker is gone and enqueue their settings again; give how many.

    A worker on this host is gone when its process is; one on another host when its heartbeat
    (a timestamp it stamps on the trial every `heartbeat_sec`) is `_MISSED_HEARTBEATS` intervals old.
    """
    from optuna.trial import TrialState

    reclaimed = 0
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        why = _lost(trial, heartbeat_sec)
        if why is None:
            continue
        try:
            study.tell(trial.number, state=TrialState.FAIL)
        except (RuntimeError, ValueError):
            continue  # another process reclaimed it first
        study.enqueue_trial(trial.params, user_attrs={**trial.user_attrs, "retry_of": trial.number, "worker": None,
                                                      "heartbeat": None})
        log(f"trial {trial.number}: {why}; its settings are enqueued again")
        reclaimed += 1
    return reclaimed


class _Heartbeat:
    """Stamps the running trial every `interval` seconds, so workers on other hosts can tell it is alive."""

    def __init__(self, trial, interval: float) -> None:
        import threading

        self._trial, self._interval, self._stop = trial, interval, threading.Event()
        self._thread = threading.Thread(target=self._beat, name="pipebench-heartbeat", daemon=True)

    def _beat(self) -> None:
        while not self._stop.wait(self._interval):
            self._trial.set_user_attr("heartbeat", time.time())

    def __enter__(self) -> _Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def suggest(trial, dim: Dimension) -> Any:
    """Give the trial's value of one knob (a pinned knob's only value is not asked for)."""
    if dim.pinned:
        return dim.choices[0]
    if dim.choices is not None:
        return trial.suggest_categorical(dim.name, list(dim.choices))
    return trial.suggest_int(dim.name, dim.low, dim.high, log=dim.log)


def _failures(study) -> tuple[int, int]:
    """Give (failed, finished) trials, leaving out reclaimed and surplus ones (they measured nothing)."""
    from optuna.trial import TrialState

    failed = finished = 0
    for trial in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)):
        if trial.state == TrialState.FAIL and "status" not in trial.user_attrs:
            continue
        finished += 1
        failed += trial.state == TrialState.FAIL
    return failed, finished


def run_study(study, plan: Plan, run_dir: Path, machine: dict, log=print) -> tuple[list[dict], str | None, bool]:
    """Run waiting slots one at a time until none is left or a budget is spent; give rows, why it stopped
    early (None if it did not), and whether that was the failure budget."""
    import optuna
    from optuna.trial import TrialState

    from pipebench.measure.manager import Limits, run_worker
    from pipebench.measure.sampler import Sampler
    from pipebench.results import SAMPLES_FILE, TRIALS_FILE
    from pipebench.results.schema import SAMPLE_SCHEMA, TRIAL_SCHEMA
    from pipebench.results.store import append_rows
    from pipebench.runner import trial_row

    experiment = plan.experiment
    budget, objectives = experiment["budget"], study.user_attrs.get("objectives", experiment["search"]["objectives"])
    limits = Limits(budget["trial_timeout_sec"], budget["memory_cap_mb"] << 20)
    hz = experiment["measurement"]["sample_hz"]
    heartbeat_sec = experiment["search"]["heartbeat_sec"]
    prunable = len(objectives) == 1 and not isinstance(study.pruner, optuna.pruners.NopPruner)
    deadline = time.monotonic() + budget["max_minutes"] * 60 if budget["max_minutes"] else None
    rows: list[dict] = []
    while True:
        if deadline is not None and time.monotonic() > deadline:
            return rows, f"time budget of {budget['max_minutes']} min used up", False
        failed, finished = _failures(study)
        if finished >= _MIN_TRIALS_FOR_FAILURE_BUDGET and failed / finished > budget["max_failure_rate"]:
            return rows, f"{failed} of {finished} trials failed, past max_failure_rate {budget['max_failure_rate']}", True
        if not study.get_trials(deepcopy=False, states=(TrialState.WAITING,)):
            # The last worker standing sees the study through: it waits for the others' running
            # trials and runs again any whose worker is gone.
            if not study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
                return rows, None, False
            if not reclaim_dead_slots(study, log, heartbeat_sec):
                time.sleep(min(heartbeat_sec, 2.0))
            continue
        trial = study.ask()
        if "slot" not in trial.user_attrs:  # another process took the last slot between the check and the ask
            trial.set_user_attr("surplus", True)
            study.tell(trial, state=TrialState.FAIL)
            return rows, None, False
        trial.set_user_attr("worker", _worker_id())
        trial.set_user_attr("host", socket.gethostname())
        trial.set_user_attr("heartbeat", time.time())
        params = {name: suggest(trial, dim) for name, dim in plan.space.items()}
        params.update(trial.user_attrs.get("overrides") or {})
        spec = worker_trial(plan, params)
        if _tell_duplicate(study, trial, f"{socket.gethostname()}:{spec['trial_id']}", plan, log):
            continue
        spec["trial_id"] = f"{study.study_name}-{trial.number}"
        if spec["knobs_not_applied"]:
            trial.set_user_attr("knobs_not_applied", spec["knobs_not_applied"])

        def on_progress(window: int, examples_per_sec: float) -> bool:
            trial.report(examples_per_sec, window)
            return trial.should_prune()

        started = time.time()
        with _Heartbeat(trial, heartbeat_sec):
            outcome = run_worker(spec, run_dir / "trials" / spec["trial_id"], limits,
                                 sampler_factory=lambda pid: Sampler(pid, 1.0 / hz, data_files=()),
                                 on_progress=on_progress if prunable else None)
        row = {**trial_row(spec, outcome.record, outcome.sampler_summary, run_dir.name, machine, started),
               "study": study.study_name, "optuna_trial_number": trial.number}
        values = objective_values(row, objectives, plan.price_per_hour)
        if row["status"] == "ok" and None in values:
            row["status"], row["reason"] = "invalid", f"no value for objective(s) {objectives} (auc needs quality.enabled)"
        append_rows(run_dir / TRIALS_FILE, TRIAL_SCHEMA, [row])
        if outcome.samples:
            append_rows(run_dir / SAMPLES_FILE, SAMPLE_SCHEMA,
                        [{**s, "run_id": run_dir.name, "trial_id": spec["trial_id"]} for s in outcome.samples])
        rows.append(row)
        try:
            _tell(study, trial, row, values)
        except (RuntimeError, ValueError) as err:  # taken as lost and reclaimed meanwhile (a stalled host)
            log(f"trial {trial.number}: could not be told ({err}); its row is kept, its slot was run again")
        rate = row.get("examples_per_sec_median")
        log(f"[trial {trial.number}, slot {trial.user_attrs['slot']}] {params['pipeline']} b{params['batch_size']} "
            f"intra {params['intra_op_threads']} inter {params['inter_op_threads']}: "
            + (f"{rate:,.0f} ex/s" if row["status"] == "ok" and rate else f"{row['status']}: {row['reason']}"))


def _space_size(space: dict[str, Dimension]) -> int | None:
    """Give how many settings the space holds, or None when it is too large to exhaust."""
    size = 1
    for dim in space.values():
        size *= len(dim.choices) if dim.choices is not None else dim.high - dim.low + 1
    return size if size < 100_000 else None


def gives_slot_back(earlier_duplicates: int, slots: int, sampled_measured: int, space_size: int | None) -> bool:
    """Whether a slot told a duplicate goes back to the sampler: while sampled settings remain
    unmeasured, and no more often than the study has slots, so a sampler that keeps proposing
    measured settings cannot keep a study going however large its space."""
    return earlier_duplicates <= slots and (space_size is None or sampled_measured < space_size)


def _tell_duplicate(study, trial, key: str, plan: Plan, log) -> bool:
    """Tell a trial whose settings this host measured before with those values, and give True.

    `key` is host and the grid's trial id, a hash of everything the worker is given.

    A small categorical space makes TPE propose the same settings again; measuring them again
    spends a slot on nothing new, so the earlier values are told and the slot is enqueued again
    (while the space has settings not yet measured here).
    """
    from optuna.trial import TrialState

    trial.set_user_attr("settings_key", key)
    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    earlier = next((t for t in complete if t.user_attrs.get("settings_key") == key), None)
    if earlier is None:
        return False
    trial.set_user_attr("duplicate_of", earlier.number)
    study.tell(trial, earlier.values)
    sampled = {t.user_attrs.get("settings_key") for t in complete
               if "duplicate_of" not in t.user_attrs and t.user_attrs.get("enqueued_as") == "sampled"}
    duplicates = sum("duplicate_of" in t.user_attrs for t in complete)
    if gives_slot_back(duplicates, study.user_attrs.get("pipebench_slots", 0), len(sampled), _space_size(plan.space)):
        study.enqueue_trial({}, user_attrs={"slot": trial.user_attrs["slot"], "enqueued_as": "sampled",
                                            "overrides": {}, "replaces_duplicate": trial.number})
    log(f"[trial {trial.number}, slot {trial.user_attrs['slot']}] same settings as trial {earlier.number}: "
        "told its values, not measured again")
    return True


def _tell(study, trial, row: dict, values: list) -> None:
    from optuna.trial import TrialState

    trial.set_user_attr("status", row["status"])
    if row["status"] == "ok":
        study.tell(trial, values)
    elif row["status"] == "pruned":
        study.tell(trial, state=TrialState.PRUNED)
    else:
        trial.set_user_attr("reason", row["reason"])
        study.tell(trial, state=TrialState.FAIL)


def importances(study) -> dict:
    """Give each objective's parameter importances (Optuna's default evaluator), or why there are none."""
    import optuna

    out = {}
    for i, objective in enumerate(study.user_attrs.get("objectives", ["examples_per_sec"])):
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


def finish(study, run_dir: Path, pinned: list[str], log=print) -> dict:
    """Save and print importances, how the best trial compares with the enqueued references; give the saved dict."""
    from optuna.trial import TrialState

    done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    found = {"study": study.study_name, "importances": importances(study), "pinned": pinned,
             "references": {t.user_attrs["enqueued_as"]: t.values for t in done
                            if t.user_attrs.get("enqueued_as", "sampled") != "sampled"}}
    if done and len(study.directions) == 1:
        best = study.best_trial
        found["best"] = {"number": best.number, "values": best.values, "params": best.params}
    from pipebench.atomic import atomic_write_json
    from pipebench.results import IMPORTANCES_FILE

    atomic_write_json(run_dir / IMPORTANCES_FILE, found, default=str)
    for objective, values in found["importances"].items():
        log(f"importances ({objective}): " + ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k}: {v}"
                                                      for k, v in values.items()))
    if "best" in found:
        beats = ", ".join(f"{name} {values[0]:,.0f}" for name, values in found["references"].items())
        log(f"best: trial {found['best']['number']} {found['best']['values'][0]:,.0f}"
            + (f" (references: {beats})" if beats else ""))
    return found


@contextlib.contextmanager
def _session(experiment: Experiment, run_dir: Path | None, url: str | None, study_name: str | None, where: str,
             log) -> Iterator[tuple[Path, dict, Plan, Any]]:
    """Yield (run folder, its machine facts, plan, study) with the folder's lock held.

    An existing run folder is locked before any work, so a second process on it is refused at once.
    A new one (`run_dir` None, or a worker's --run-dir not yet made) is created only once the data,
    the plan and a storage given by URL or path have answered, so their failures leave no folder.
    """
    from pipebench.datasets import materialise
    from pipebench.measure.machine import machine_facts
    from pipebench.results.run_folder import MACHINE_FILE, load_resumed, new_run_dir, own, read_machine

    with contextlib.ExitStack() as owned:
        existing = run_dir is not None and (run_dir / MACHINE_FILE).exists()
        if existing:
            load_resumed(run_dir)  # a worker's folder from before is checked as any resumed one
            owned.enter_context(own(run_dir, created=False))
        data = materialise(experiment, log=log)
        machine = read_machine(run_dir) if existing else machine_facts()
        plan = make_plan(experiment, data, machine)
        for note in plan.pinned:
            log(note)
        study = None
        if url is not None or existing:
            study = open_study(experiment, plan, open_storage(url, run_dir, where), study_name, log)
        if not existing:
            run_dir = new_run_dir(experiment, machine, run_dir)
            owned.enter_context(own(run_dir, created=True))
        if study is None:  # the default journal lives in the run folder
            study = open_study(experiment, plan, open_storage(None, run_dir, where), study_name, log)
        yield run_dir, machine, plan, study


def search(experiment: Experiment, run_dir: Path | None = None, log: Callable[[str], None] = print) -> Outcome:
    """Run (or resume, when run_dir is given) the experiment's Optuna study in this process; give the
    runner's Outcome (the run folder, and why it stopped early)."""
    from pipebench import runner

    resumed = run_dir is not None
    with _session(experiment, run_dir, experiment["search"]["storage"], None, "search.storage", log) as session:
        run_dir, machine, plan, study = session
        if resumed:
            reclaim_dead_slots(study, log, experiment["search"]["heartbeat_sec"])
        log(f"study {study.study_name} in {run_dir}: {len(study.trials)} trial(s) so far")
        _, stopped, spent = run_study(study, plan, run_dir, machine, log)
        finish(study, run_dir, plan.pinned, log)
    log(f"results: {run_dir}" + (f"; stopped early: {stopped}" if stopped else ""))
    return runner.Outcome(run_dir, stopped, spent)


def join(experiment: Experiment, storage: str, study_name: str, run_dir: Path | None = None,
         log: Callable[[str], None] = print) -> Outcome:
    """Join a shared study as one worker: run its waiting slots one at a time; give the runner's Outcome
    (this worker's run folder, and why it stopped early)."""
    from pipebench import runner

    with _session(experiment, run_dir, storage, study_name, "--storage", log) as session:
        run_dir, machine, plan, study = session
        reclaim_dead_slots(study, log, experiment["search"]["heartbeat_sec"])
        log(f"worker {os.getpid()} joined study {study.study_name}; rows go to {run_dir}")
        _, stopped, spent = run_study(study, plan, run_dir, machine, log)
    log("worker done: no waiting trials left" + (f"; stopped early: {stopped}" if stopped else ""))
    return runner.Outcome(run_dir, stopped, spent)
