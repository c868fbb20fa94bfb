"""A study's slots: exactly `search.n_trials` trials, enqueued once, and the attributes pipebench keeps on them.

Every attribute name lives here once (Optuna keeps its own in-storage keys as constants read
through helpers: a misspelt key must fail, not read None). The process whose `create_study`
succeeds enqueues the slots — references first, then empty ones the sampler fills — and sets
`STUDY_SLOTS` last, the sign the others wait for; so two workers starting at once cannot both enqueue.
"""
from __future__ import annotations

import time
from typing import Any

from pipebench.errors import ConfigError
from pipebench.search.plan import Plan, suggest
from pipebench.search.space import Dimension

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
SURPLUS = "surplus"  # asked after the last slot was taken: failed, never measured
KNOBS_NOT_APPLIED = "knobs_not_applied"
# Study user_attrs.
STUDY_SLOTS = "pipebench_slots"
STUDY_OBJECTIVES = "objectives"
SAMPLED = "sampled"


def slot_of(trial) -> int | None:
    return trial.user_attrs.get(SLOT)


def enqueued_as(trial) -> str:
    return trial.user_attrs.get(ENQUEUED_AS, SAMPLED)


def is_duplicate(trial) -> bool:
    return DUPLICATE_OF in trial.user_attrs


def was_measured(trial) -> bool:
    """Whether a finished trial ran a worker here (reclaimed, surplus and duplicate trials did not)."""
    return STATUS in trial.user_attrs


def enqueue_slots(study, plan: Plan) -> None:
    """Enqueue the study's slots (references first), then mark it ready for other workers."""
    n_trials = plan.experiment["search"]["n_trials"]
    for slot in range(n_trials):
        reference = plan.references[slot] if slot < len(plan.references) else None
        study.enqueue_trial(reference.searched if reference else {},
                            user_attrs={SLOT: slot, ENQUEUED_AS: reference.name if reference else SAMPLED,
                                        OVERRIDES: reference.overrides if reference else {}})
    study.set_user_attr(STUDY_OBJECTIVES, plan.experiment["search"]["objectives"])
    study.set_user_attr(STUDY_SLOTS, n_trials)  # last: the sign for waiting workers


def wait_for_slots(study, name: str, wait_sec: float) -> None:
    """Wait until the study's creator has enqueued its slots; ConfigError when it never does."""
    deadline = time.monotonic() + wait_sec
    while STUDY_SLOTS not in study.user_attrs:
        if time.monotonic() > deadline:
            raise ConfigError(f"search.study_name: study {name!r} exists but its slots were never all "
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
