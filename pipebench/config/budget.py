"""The search budget's split between exploration and the confirmation phase, and the references raced.

Read by the experiment check (pipebench.config) before anything is planned, so it imports nothing
from the package: config, plan and confirm all depend on it, never the other way.
"""
from __future__ import annotations

from collections.abc import Mapping

#: The references the confirmation phase races, in the order they are reported.
REFERENCES = ("reference deck", "TF defaults", "AUTOTUNE everywhere")
#: Rounds a reference runs before it leaves the race unless it leads: two give its gain an interval.
REFERENCE_ROUNDS = 2
#: The confirmation picks a winner only on the one objective it can race: throughput.
RACED_OBJECTIVE = "examples_per_sec"


def confirms(search: Mapping) -> bool:
    """Whether a study with these `search` settings ends with a confirmation phase."""
    return search["confirm_top"] > 0 and list(search["objectives"]) == [RACED_OBJECTIVE]


def reserved_trials(search: Mapping) -> int:
    """Give how many of `search.n_trials` the confirmation phase holds: confirm_rounds × (confirm_top + references)."""
    if not confirms(search):
        return 0
    references = len(REFERENCES) if search["enqueue_reference"] else 0
    return search["confirm_rounds"] * search["confirm_top"] + REFERENCE_ROUNDS * references


def exploration_problem(search: Mapping) -> str | None:
    """Give why `search.n_trials` leaves too few trials to explore after the confirmation phase, or None."""
    reserved = reserved_trials(search)
    needed = search["confirm_top"] + 1  # more explored settings than the top it confirms: a choice to make
    if not reserved or search["n_trials"] - reserved >= needed:
        return None
    references = f" + {REFERENCE_ROUNDS} × {len(REFERENCES)} references" if search["enqueue_reference"] else ""
    return (f"{search['n_trials']} leaves {max(0, search['n_trials'] - reserved)} trials to explore after the "
            f"confirmation phase's {reserved} (confirm_rounds {search['confirm_rounds']} × confirm_top "
            f"{search['confirm_top']}{references}); give at least {reserved + needed}, or lower "
            "search.confirm_rounds / search.confirm_top (0: no confirmation phase)")


def race_problem(search: Mapping) -> str | None:
    """Give why the confirmation phase would race fewer than two contenders, or None."""
    if confirms(search) and search["confirm_top"] == 1 and not search["enqueue_reference"]:
        return ("1 with search.enqueue_reference: false races one configuration alone; confirm at least 2, "
                "enqueue the references, or 0 (no confirmation phase)")
    return None
