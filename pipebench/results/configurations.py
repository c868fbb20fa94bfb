"""Configurations, not trials: the repeats of one measured setting pooled, ranked and compared with intervals.

A configuration is what `configuration_id` names — a pipeline in a source mode and format, at a
batch size, thread setting and environment, in a mode — in one run. Its repeats (fresh processes,
spread across the run) are the rounds its throughput is judged over: the interval is Student's t
on the logs of the repeats' means when there are two or more (honestly wide with two), else on the
one process's windows (narrower than the noise between processes: the summary says which). The waiting share, slowdown and
synthetic ceiling pool every paired round of every repeat.

Two configurations compare by their paired ratio: repeat r of each ran in the same round of the
run (RMIT), so the ratio of their means per round cancels what the machine did in that round. A
search's exploration trials (repeat 0 of a study) ran one at a time, not in rounds, so they pair
with nothing; its confirmation trials are its rounds. Configurations rank by the same rule the
search's confirmation race picks its winner by (intervals.paired_order over their rounds), each
round's value the trial's geometric mean over its windows: a search and its report name one winner.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pipebench.measure.figures import EARLIER_BASIS, SLOWDOWN, Figures, figures
from pipebench.measure.intervals import Interval, difference_verdict, geometric_interval, paired_order, ratio_interval
from pipebench.measure.trial import Window
from pipebench.results.trial_row import TrialRow

#: How a configuration that shares fewer than two rounds with the fastest is compared with it.
NOT_COMPARED = "not compared (fewer than two shared rounds)"
#: What names a configuration in a row, beside its id (for tables).
LABEL_COLUMNS = ("mode", "pipeline", "format", "source_mode", "ordering", "batch_size", "intra_op_threads",
                 "inter_op_threads")
#: Which mode answers "which configuration is fastest": train when measured, else the pipeline alone.
BEST_MODES = ("train", "input")


def _windows(row: TrialRow, repeat_index: int) -> list[Window]:
    """Give a row's windows, their rounds renumbered so every repeat's rounds stay apart when pooled."""
    windows = json.loads(row.windows_json or "[]")
    return [Window(w["arm"], repeat_index * 10_000 + w["round"], w["examples"], w["seconds"], w["waited_sec"])
            for w in windows]


@dataclass(frozen=True)
class Configuration:
    """One configuration of one run: its ok rows (one per repeat) and the figures pooled over them."""

    run_id: str
    configuration_id: str
    rows: tuple[TrialRow, ...]
    pooled: Figures
    throughput: Interval
    busy: bool  # a repeat measured while other processes used the machine, and not measured again quietly

    @property
    def label(self) -> dict:
        return {column: getattr(self.rows[0], column) for column in LABEL_COLUMNS}

    @property
    def threads(self) -> str:
        """Its intra/inter-op threads as tables print them ('default' where TensorFlow chose)."""
        row = self.rows[0]
        return f"{row.intra_op_threads or 'default'}/{row.inter_op_threads or 'default'}"

    @property
    def mode(self) -> str:
        return self.rows[0].mode

    @property
    def repeats(self) -> int:
        return len(self.rows)

    @property
    def verdict(self) -> str | None:
        """The input-bound label; never a confident one from a busy machine, where other processes slow
        the step and the pipeline unevenly and so move the figure itself, not only its noise."""
        found = self.pooled.verdict
        return "inconclusive" if self.busy and found is not None else found

    @property
    def basis(self) -> str | None:
        """The figure its verdict reads (None outside train mode)."""
        return _basis(self.rows[0])

    @property
    def trainer(self) -> str | None:
        """The experiment's `measurement.trainer` its trials ran under (None for rows that did not record one)."""
        return self.rows[0].trainer

    def by_repeat(self) -> dict[int, float]:
        return {r.repeat: float(r.examples_per_sec_mean) for r in self.rows}

    def by_round(self) -> dict[int, float]:
        """Give its throughput per round of the run: each repeat's geometric mean, less what ran in no round with
        the others: a search's exploration trials (repeat 0 of a study, measured alone) and re-measures of busy
        trials (they keep their repeat index but ran at the end of the run)."""
        return {r.repeat: float(r.examples_per_sec_mean) for r in self.rows
                if (r.repeat > 0 or r.study is None) and not r.remeasure_of}


def _basis(row: TrialRow) -> str | None:
    """Give the figure a train row's verdict reads: its `input_bound_basis`, the waiting share for rows written
    before that column (results schema < 7), None outside train mode."""
    return (row.input_bound_basis or EARLIER_BASIS) if row.mode == "train" else None


def configurations(rows: Iterable[TrialRow]) -> list[Configuration]:
    """Give the configurations of ok rows (re-measured busy trials replace the busy ones they re-measure)."""
    ok = [r for r in rows if r.ok and r.windows_json]
    replaced = {r.remeasure_of for r in ok if r.remeasure_of}
    groups: dict[tuple[str, str], list[TrialRow]] = {}
    for row in ok:
        if row.trial_id in replaced:
            continue
        groups.setdefault((row.run_id, row.configuration_id), []).append(row)
    found = []
    for (run_id, configuration_id), members in groups.items():
        members.sort(key=lambda r: r.repeat)
        windows = [w for i, r in enumerate(members) for w in _windows(r, i)]
        pooled = figures(windows, _basis(members[0]) or SLOWDOWN)
        means = [float(r.examples_per_sec_mean) for r in members]
        throughput = geometric_interval(means) if len(means) > 1 else pooled.throughput
        found.append(Configuration(run_id, configuration_id, tuple(members), pooled, throughput,
                                   any(bool(r.busy_machine) for r in members)))
    return found


def paired_ratio(a: Configuration, b: Configuration) -> Interval | None:
    """Give a / b throughput from the rounds both were measured in (None when they share none).

    Repeat r of two runs ran at different times: only configurations of one run share rounds.
    """
    if a.run_id != b.run_id:
        return None
    left, right = a.by_round(), b.by_round()
    shared = sorted(set(left) & set(right))
    if not shared:
        return None
    return ratio_interval([left[r] for r in shared], [right[r] for r in shared])


def ranked(found: Sequence[Configuration]) -> list[tuple[Configuration, Interval | None, str]]:
    """Give configurations fastest first, each with its paired ratio to the fastest and how it compares.

    The order is intervals.paired_order over each configuration's rounds (runs apart: rounds pair only
    within a run); configurations measured in no round (a search's exploration alone) follow, by their
    mean. A configuration whose ratio interval holds 1 ties with the fastest ("no measurable
    difference"); with fewer than two shared rounds there is no interval and the comparison says so.
    """
    in_rounds = {(c.run_id, c.configuration_id): c for c in found if c.by_round()}
    by_run: dict[str, dict[tuple[str, str], dict[int, float]]] = {}
    for key, config in in_rounds.items():
        by_run.setdefault(config.run_id, {})[key] = config.by_round()
    # one run's order is paired; runs were measured at different times, so they merge by mean, each in its order
    queues = [[in_rounds[key] for key in paired_order(rounds)] for rounds in by_run.values()]
    order = []
    while any(queues):
        head = max((q for q in queues if q), key=lambda q: q[0].throughput.mean)
        order.append(head.pop(0))
    order += sorted((c for c in found if not c.by_round()), key=lambda c: -c.throughput.mean)
    if not order:
        return []
    best = order[0]
    out = [(best, None, "fastest")]
    for config in order[1:]:
        ratio = paired_ratio(config, best)
        if ratio is None or not ratio.decided:
            out.append((config, ratio, NOT_COMPARED))
        else:
            out.append((config, ratio, difference_verdict(ratio)))
    return out


def fastest(found: Sequence[Configuration], modes: Sequence[str] = BEST_MODES) -> Configuration | None:
    """Give the fastest configuration of the first of `modes` that has one (ranked), else None."""
    for mode in modes:
        order = ranked([c for c in found if c.mode == mode])
        if order:
            return order[0][0]
    return None
