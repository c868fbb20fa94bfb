"""The confirmed winner of a search, as importances.json records it, in Markdown lines.

Shared by summary.md and the search's own log; reads only the saved record (no Optuna).
"""
from __future__ import annotations

from pipebench.results.study import StudyRecord


def winner_lines(study: StudyRecord) -> list[str]:
    """Give the winner an importances.json records — settings with units, interval, paired gains — as
    Markdown lines, or why it names none."""
    winner = study.winner
    if winner is None:
        return [f"Winner: none ({study.winner_withheld})."] if study.winner_withheld else []
    rate = winner.examples_per_sec
    lines = [f"Winner: **{winner.contender}**, {rate.text()} examples/s (mean over {rate.n} "
             f"confirmation rounds, 95% interval; trials {', '.join(winner.trial_ids)}):"]
    lines += [f"- {name}: {value}" for name, value in winner.settings.items()]
    for reference, gain in winner.gains.items():
        if gain.ratio is None:
            lines.append(f"- against {reference}: {gain.verdict}")
        else:
            lines.append(f"- against {reference}: {gain.ratio.text('.2f', unit='×')} (paired over {gain.ratio.n} "
                         f"rounds): {gain.verdict}")
    for name, last in winner.left_the_race.items():
        lines.append(f"- {name} left the race after round {last}")
    return lines
