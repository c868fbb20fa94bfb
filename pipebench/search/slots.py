"""A study's slots: at most `search.n_trials` trials, and the attributes pipebench keeps on them.

Every attribute name lives here once (Optuna keeps its own in-storage keys as constants read
through helpers: a misspelt key must fail, not read None). The process whose `create_study`
succeeds enqueues the exploration slots — the starts first, then empty ones the sampler fills — and
sets `STUDY_SLOTS` last, the sign the others wait for; so two workers starting at once cannot both
enqueue. The remaining slots belong to the confirmation phase (pipebench.search.confirm): each of
its rounds is enqueued once the trials before it have finished, one trial per *seat* (round and
contender). Should two processes enqueue one round at once, the lower-numbered trial of a seat is
measured and the other is failed as surplus, unmeasured.
"""
from __future__ import annotations

import time
from typing import Any

from pipebench.config.budget import reserved_trials
from pipebench.config.space import Dimension
from pipebench.errors import ConfigError
from pipebench.search.plan import Plan, encode, suggest
from pipebench.values import echo

# Trial user_attrs pipebench sets.
SLOT = "slot"  # which of the study's slots this trial fills
ENQUEUED_AS = "enqueued_as"  # a reference's name, or "sampled"
OVERRIDES = "overrides"  # knob values a reference fixes outside the searched space
WORKER = "worker"  # host:pid:create-time of the process measuring it
HOST = "host"
HEARTBEAT = "heartbeat"  # time.time() the worker last stamped
STATUS = "status"  # the results row's status, once measured
REASON = "reason"
SETTINGS_KEY = "settings_key"  # host + the trial's id: equal settings measured on this host
DUPLICATE_OF = "duplicate_of"  # the trial whose values were told instead of measuring again
REPLACES_DUPLICATE = "replaces_duplicate"
RETRY_OF = "retry_of"  # the trial whose worker died, run again
SURPLUS = "surplus"  # asked after the last slot was taken, or a seat taken twice: failed, never measured
KNOBS_NOT_APPLIED = "knobs_not_applied"
SETTINGS = "settings"  # the trial's whole knob values (values, not the sampler's indices)
CONFIGURATION = "configuration_id"  # the trial's configuration (TrialSpec.configuration_id)
ROUND = "confirm_round"  # a confirmation trial's round (1, 2, ...): its repeat index
CONTENDER = "contender"  # a confirmation trial's contender ("candidate 1", "TF defaults", ...)
# Study user_attrs.
STUDY_SLOTS = "pipebench_slots"
STUDY_EXPLORATION = "pipebench_exploration_slots"  # the slots before the confirmation phase
STUDY_OBJECTIVES = "objectives"
SAMPLED = "sampled"
CONFIRMATION = "confirmation"


def slot_of(trial) -> int | None:
    return trial.user_attrs.get(SLOT)


def enqueued_as(trial) -> str:
    return trial.user_attrs.get(ENQUEUED_AS, SAMPLED)


def is_duplicate(trial) -> bool:
    return DUPLICATE_OF in trial.user_attrs


def was_measured(trial) -> bool:
    """Whether a finished trial ran a worker here (reclaimed, surplus and duplicate trials did not)."""
    return STATUS in trial.user_attrs


def round_of(trial) -> int | None:
    """Give a confirmation trial's round, None for an exploration trial."""
    return trial.user_attrs.get(ROUND)


def exploration_slots(study) -> int:
    """Give how many slots the study explores with (all of them in a study made before confirmation phases)."""
    return study.user_attrs.get(STUDY_EXPLORATION, study.user_attrs.get(STUDY_SLOTS, 0))


def enqueue_slots(study, plan: Plan) -> None:
    """Enqueue the study's exploration slots (starts first), then mark it ready for other workers."""
    cfg = plan.experiment["search"]
    exploring = cfg["n_trials"] - reserved_trials(cfg)
    for slot in range(exploring):
        start = plan.starts[slot] if slot < len(plan.starts) else None
        study.enqueue_trial(encode(start.searched, plan.space) if start else {},
                            user_attrs={SLOT: slot, ENQUEUED_AS: start.name if start else SAMPLED,
                                        OVERRIDES: start.overrides if start else {}})
    study.set_user_attr(STUDY_OBJECTIVES, cfg["objectives"])
    study.set_user_attr(STUDY_EXPLORATION, exploring)
    study.set_user_attr(STUDY_SLOTS, cfg["n_trials"])  # last: the sign for waiting workers


def enqueue_round(study, round_number: int, names: list[str], contenders: dict, seed: object) -> None:
    """Enqueue one confirmation round: a trial per contender, in the round's shuffled order."""
    from pipebench.measure.round_order import round_order

    seats = {(round_of(t), t.user_attrs.get(CONTENDER)) for t in study.get_trials(deepcopy=False)
             if round_of(t) is not None}
    first = exploration_slots(study) + len(seats)
    for i, name in enumerate(round_order(names, round_number, seed)):
        contender = contenders[name]
        study.enqueue_trial({}, user_attrs={SLOT: first + i, ENQUEUED_AS: CONFIRMATION, OVERRIDES: {},
                                            ROUND: round_number, CONTENDER: name, SETTINGS: contender.params,
                                            CONFIGURATION: contender.configuration_id})


def seat_taken(study, trial) -> bool:
    """Whether a lower-numbered trial of this confirmation trial's seat is waiting, running or done."""
    from optuna.trial import TrialState

    seat = (round_of(trial), trial.user_attrs.get(CONTENDER))
    return any((round_of(t), t.user_attrs.get(CONTENDER)) == seat and t.number < trial.number
               for t in study.get_trials(deepcopy=False, states=(TrialState.WAITING, TrialState.RUNNING,
                                                                 TrialState.COMPLETE)))


def wait_for_slots(study, name: str, wait_sec: float) -> None:
    """Wait until the study's creator has enqueued its slots; ConfigError when it never does."""
    deadline = time.monotonic() + wait_sec
    while STUDY_SLOTS not in study.user_attrs:
        if time.monotonic() > deadline:
            raise ConfigError(f"search.study_name: study {echo(name)} exists but its slots were never all "
                              f"enqueued (its creator died?); delete it or choose another name")
        time.sleep(0.5)


def space_size(space: dict[str, Dimension]) -> int | None:
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


def tell_duplicate(study, trial, key: str, plan: Plan, log) -> bool:
    """Tell a trial whose settings this host measured before with those values, and give True.

    `key` is host and the trial's id, a hash of everything the worker is given. A small space makes
    TPE propose the same settings again; measuring them again spends a slot on nothing new, so the
    earlier values are told and the slot is enqueued again (while the space has settings not yet
    measured here).
    """
    from optuna.trial import TrialState

    trial.set_user_attr(SETTINGS_KEY, key)
    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    earlier = next((t for t in complete if t.user_attrs.get(SETTINGS_KEY) == key), None)
    if earlier is None:
        return False
    trial.set_user_attr(DUPLICATE_OF, earlier.number)
    study.tell(trial, earlier.values)
    sampled = {t.user_attrs.get(SETTINGS_KEY) for t in complete if not is_duplicate(t) and enqueued_as(t) == SAMPLED}
    duplicates = sum(is_duplicate(t) for t in complete)
    if gives_slot_back(duplicates, study.user_attrs.get(STUDY_SLOTS, 0), len(sampled), space_size(plan.space)):
        study.enqueue_trial({}, user_attrs={SLOT: slot_of(trial), ENQUEUED_AS: SAMPLED, OVERRIDES: {},
                                            REPLACES_DUPLICATE: trial.number})
    log(f"[trial {trial.number}, slot {slot_of(trial)}] same settings as trial {earlier.number}: "
        "told its values, not measured again")
    return True


def params_of(trial, plan: Plan) -> dict[str, Any]:
    """Give a trial's full knob values: the sampler's (or the enqueued ones), then a reference's overrides."""
    params = {name: suggest(trial, dim) for name, dim in plan.space.items()}
    params.update(trial.user_attrs.get(OVERRIDES) or {})
    return params
