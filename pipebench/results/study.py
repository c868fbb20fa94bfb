"""importances.json, typed: what an Optuna study concluded (its importances, pins and confirmed winner).

The Optuna driver writes one `StudyRecord` (pipebench.search.optuna_driver.finish) and everything that reads
the file — summary.md, the report's importance figure, `pipebench pipelines export`, the notebooks — reads
it through `read_study`, strictly (pipebench.typed): a missing or unknown key is a one-line error naming the
file and key, never a guess. Files written before 2026-11-27 read as they did: without `winner_withheld` (a
study with a winner left it out), and with the winner's intervals in their own shapes ({"mean", "low", "high",
"rounds"}; a gain's {"ratio", "low", "high", "rounds", "verdict"}) instead of the interval's one shape.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipebench.atomic import atomic_write_json
from pipebench.errors import DataError
from pipebench.measure.intervals import Interval
from pipebench.typed import from_json, read_json, to_json

#: Written by the Optuna driver after a study.
IMPORTANCES_FILE = "importances.json"


@dataclass(frozen=True)
class Unavailable:
    """An objective without importances, and why (too few exploration trials, or Optuna's reason)."""

    unavailable: str


@dataclass(frozen=True)
class WinnerGain:
    """The winner against one reference: their paired ratio (null when no round paired them) and its verdict."""

    ratio: Interval | None
    verdict: str


@dataclass(frozen=True)
class Winner:
    """The confirmed winner of the study's race (pipebench.search.confirm)."""

    contender: str  # its name in the race ("candidate 1", "reference deck", ...)
    trial_ids: tuple[str, ...]  # its confirmation trials' rows (trial_id in trials.parquet)
    configuration_id: str  # configuration_id in trials.parquet
    explored_trials: tuple[int, ...]  # the Optuna trial numbers that explored its settings
    settings: dict[str, str]  # knob → value with its unit (pipebench.search.settings.settings_text)
    examples_per_sec: Interval  # geometric mean over its confirmation rounds, with its 95% interval
    gains: dict[str, WinnerGain]  # reference → the winner's paired gain over it
    left_the_race: dict[str, int]  # contender → the last round it ran


@dataclass(frozen=True)
class StudyRecord:
    """What an Optuna study concluded: its importances, the knobs pinned here, and its winner or why none."""

    study: str  # the study's name
    importances: dict[str, Unavailable | dict[str, float]]  # objective → parameter → importance
    pinned: tuple[str, ...]  # why each knob was pinned or narrowed on this machine, as a sentence
    winner: Winner | None  # null: no winner (winner_withheld says why)
    winner_withheld: str | None  # why there is no winner (null when there is one)

    def to_json(self) -> dict:
        return to_json(self)


def write_study(run_dir: Path, record: StudyRecord) -> None:
    """Write RUN_DIR/importances.json, whole or not at all (refusing a record that would not read back)."""
    path = Path(run_dir) / IMPORTANCES_FILE
    document = record.to_json()
    from_json(StudyRecord, document, str(path))
    atomic_write_json(path, document)


def read_study(run_dir: Path) -> StudyRecord | None:
    """Give an Optuna run's importances.json, None for a grid run; DataError `FILE: key: reason` if it cannot be
    read."""
    path = Path(run_dir) / IMPORTANCES_FILE
    if not path.exists():
        return None
    found = read_json(path)
    if not isinstance(found, dict):
        raise DataError(f"{path}: must be a JSON object, not {type(found).__name__}")
    if found.get("winner") is not None and "winner_withheld" not in found:  # written before it always was
        found = {**found, "winner_withheld": None}
    if isinstance(found.get("winner"), dict):
        found = {**found, "winner": _one_interval_shape(found["winner"])}
    return from_json(StudyRecord, found, str(path))


def _one_interval_shape(winner: dict) -> dict:
    """Give a winner written before 2026-11-27 with its intervals in the interval's one JSON shape."""
    def interval(old: dict, mean_key: str) -> dict:
        return {"mean": old[mean_key], "low": old.get("low"), "high": old.get("high"), "n": old["rounds"]}
    out = dict(winner)
    rate = winner.get("examples_per_sec")
    if isinstance(rate, dict) and "rounds" in rate:
        out["examples_per_sec"] = interval(rate, "mean")
    gains = winner.get("gains")
    if isinstance(gains, dict):
        out["gains"] = {name: {"ratio": None if gain.get("ratio") is None else interval(gain, "ratio"),
                               "verdict": gain.get("verdict")}
                        if isinstance(gain, dict) and "rounds" in gain else gain for name, gain in gains.items()}
    return out
