"""The confirmation phase: the exploration's best candidates and the references, raced in interleaved rounds.

The best of many noisy single measurements is biased upwards (the winner's curse): with about 10%
spread between fresh processes, the exploration's top value says little about which configuration
is fastest. So after the exploration trials, the `search.confirm_top` configurations with the best
geometric mean of what was measured, and the references (budget.REFERENCES, on the leading candidate's format
and source mode), are measured again in *rounds*: each round measures every contender still in the
race once, as fresh trials in a seeded random order (RMIT, pipebench.measure.round_order), whose `repeat`
is the round (1, 2, ...), so pipebench.results.configurations pairs them like the grid's repeats.

From the second round on, a contender whose paired ratio to the leader (ratio_interval over the
rounds both ran) lies entirely below 1 leaves the race (racing, as irace and SMAC3's intensifier
do). A reference is in the race to state the winner's gain over it: after REFERENCE_ROUNDS rounds
(the fewest that give an interval) it leaves unless it leads, so the phase's trials go to telling
the close candidates apart. Rounds go on while the phase's share of `search.n_trials`
(`confirm_rounds` × `confirm_top` + REFERENCE_ROUNDS × the references) holds a round of at least two;
a round it cannot hold whole races the leader and its nearest challengers only. The leader, in a round
and at the end, is the first by paired comparison over the rounds contenders share
(intervals.paired_order, the rule pipebench.results.configurations ranks by, over the same values: each
trial's geometric mean over its windows), so the study's winner is the report's fastest. Its throughput
is the geometric mean over its rounds with Student's t over their logs (as every throughput), and its
gain over each reference is their paired ratio with its 95% interval. No Optuna import here.
"""
from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pipebench.config.budget import REFERENCE_ROUNDS, REFERENCES
from pipebench.measure.intervals import Interval, difference_verdict, geometric_interval, paired_order, ratio_interval
from pipebench.search.plan import Plan, reference_settings, worker_trial

#: How the exploration's best configurations are named in the race ("candidate 1" leads).
CANDIDATE = "candidate"


@dataclass(frozen=True)
class Explored:
    """One measured exploration trial: its number, configuration, whole knob values and throughput."""

    number: int
    configuration_id: str
    params: dict[str, Any]
    value: float


@dataclass(frozen=True)
class Contender:
    """A configuration in the race: a candidate ("candidate 2"), a reference, or both when they are one setting."""

    name: str
    params: dict[str, Any]
    configuration_id: str
    reads: str = ""  # its format and source mode ("tfrecord, file mode"): gains compare like with like
    explored: tuple[int, ...] = ()  # the exploration trials that measured it
    explored_mean: float | None = None

    @property
    def references(self) -> tuple[str, ...]:
        """Give the references this contender is (none for a candidate only)."""
        return tuple(part for part in self.name.split(" = ") if part in REFERENCES)

    @property
    def only_reference(self) -> bool:
        """Whether it is in the race only as a reference (no exploration candidate is this setting)."""
        return not self.name.startswith(CANDIDATE)


def choose_contenders(plan: Plan, explored: Sequence[Explored], top: int, with_references: bool) -> list[Contender]:
    """Give the race's contenders: the `top` configurations by geometric mean of their exploration values, then the
    references on the leader's format and source mode (a reference that is one of them joins its name)."""
    groups: dict[str, list[Explored]] = {}
    for trial in sorted(explored, key=lambda t: t.number):
        groups.setdefault(trial.configuration_id, []).append(trial)
    ranked = sorted(groups.values(), key=lambda g: (-statistics.geometric_mean(t.value for t in g), g[0].number))
    found = [Contender(f"{CANDIDATE} {i + 1}", dict(g[0].params), g[0].configuration_id, reads(plan, g[0].params),
                       tuple(t.number for t in g), statistics.geometric_mean(t.value for t in g))
             for i, g in enumerate(ranked[:top])]
    if not found or not with_references:
        return found
    leader = worker_trial(plan, found[0].params).label
    for name, params in reference_settings(plan, leader.format, leader.source_mode).items():
        configuration = worker_trial(plan, params).configuration_id
        same = next((i for i, c in enumerate(found) if c.configuration_id == configuration), None)
        if same is None:
            found.append(Contender(name, params, configuration, reads(plan, params)))
        else:
            found[same] = dataclasses.replace(found[same], name=f"{found[same].name} = {name}")
    return found


def reads(plan: Plan, params: dict[str, Any]) -> str:
    """Give the format and source mode a contender reads ("tfrecord, file mode")."""
    label = worker_trial(plan, params).label
    return f"{label.format or 'its own files'}, {label.source_mode} mode"


@dataclass
class Race:
    """The race so far: who ran in each round, what each measured, and the trials the phase may still use."""

    contenders: dict[str, Contender]  # by name
    rounds: dict[int, list[str]]  # round → the contenders planned in it
    values: dict[str, dict[int, float]] = field(default_factory=dict)  # contender → round → examples/sec
    budget: int = 0  # the phase's trials in all

    def used(self) -> int:
        return sum(len(names) for names in self.rounds.values())

    def last_round(self) -> int:
        return max(self.rounds, default=0)

    def ratio(self, a: str, b: str) -> Interval | None:
        """Give a / b paired over the rounds both measured, or None when they share fewer than two."""
        left, right = self.values.get(a, {}), self.values.get(b, {})
        shared = sorted(set(left) & set(right))
        if len(shared) < 2:
            return None
        return ratio_interval([left[r] for r in shared], [right[r] for r in shared])

    def mean(self, name: str) -> float | None:
        """Give the geometric mean of `name`'s rounds: how near the leader a challenger is when a round cannot
        hold them all (over shared rounds, a / b of these is the paired ratio's point estimate, and one
        outlying round moves it less than the arithmetic mean: a reference once won on one such round)."""
        measured = self.values.get(name, {})
        return statistics.geometric_mean(measured.values()) if measured else None

    def leader(self, names: Sequence[str]) -> str | None:
        """Give the first of `names` by paired comparison over the rounds they share (None if none measured)."""
        order = [n for n in self.contenders if n in names and self.values.get(n)]
        return paired_order({n: self.values[n] for n in order})[0] if order else None

    def left_after(self, round_number: int) -> list[str]:
        """Give the contenders that go on after `round_number`: its own, less those whose paired ratio to
        the leader lies wholly below 1 (judged from the second round on), and less the references that
        ran REFERENCE_ROUNDS rounds without leading."""
        names = self.rounds.get(round_number, [])
        leader = self.leader(names)
        if round_number < 2 or leader is None:
            return list(names)
        kept = []
        for name in names:
            if name == leader:
                kept.append(name)
                continue
            ratio = self.ratio(name, leader)
            if ratio is not None and ratio.decided and ratio.high < 1.0:
                continue
            ran = sum(name in seats for seats in self.rounds.values())
            if self.contenders[name].only_reference and ran >= REFERENCE_ROUNDS:
                continue
            kept.append(name)
        return kept

    def next_round(self) -> list[str] | None:
        """Give the contenders of the next round (in contender order), or None when the race is over.

        When the phase's trials left cannot hold every contender still in the race, the round is the
        leader and the challengers nearest it by mean, as many as fit: the last trials go to the closest
        comparison instead of being left unused.
        """
        if not self.rounds:
            names = list(self.contenders)
        else:
            names = self.left_after(self.last_round())
        room = self.budget - self.used()
        if len(names) > room:
            nearest = set(sorted(names, key=lambda n: -(self.mean(n) or 0.0))[:room])
            names = [name for name in names if name in nearest]
        return names if len(names) >= 2 else None


def contender_names(race: Race) -> list[str]:
    """Give every contender that ran in a round, in contender order."""
    ran = {name for names in race.rounds.values() for name in names}
    return [name for name in race.contenders if name in ran]


@dataclass(frozen=True)
class Decision:
    """The race's outcome: the winner, its throughput over its rounds, and its paired gain over each reference."""

    winner: Contender
    throughput: Interval
    gains: dict[str, tuple[Interval | None, str]]  # reference → (winner / reference, verdict)
    dropped: dict[str, int]  # contender → the last round it ran in, for those that left the race early


def decide(race: Race) -> Decision | None:
    """Give the winner, the first of every contender that ran by paired comparison over the rounds they share (as
    the report ranks them), or None until it has two rounds (an interval)."""
    last = race.last_round()
    if not last:
        return None
    finalists = race.left_after(last)
    leader = race.leader(contender_names(race))
    if leader is None or len(race.values[leader]) < 2:
        return None
    winner = race.contenders[leader]
    # geometric, as every throughput interval: with two rounds a Student t interval on the values went negative
    throughput = geometric_interval(list(race.values[leader].values()))
    gains: dict[str, tuple[Interval | None, str]] = {}
    playing = {reference: name for name, contender in race.contenders.items() for reference in contender.references}
    for reference in (r for r in REFERENCES if r in playing):
        name = playing[reference]
        reads_there = race.contenders[name].reads
        if name == leader:
            gains[reference] = (Interval(1.0, 1.0, 1.0, throughput.n), "the winner is this reference")
        elif reads_there != winner.reads:  # the gain would be mostly the format's
            gains[reference] = (None, f"not compared (the reference read {reads_there}, the winner {winner.reads})")
        else:
            ratio = race.ratio(leader, name)
            decided = ratio is not None and ratio.decided
            gains[reference] = (ratio, difference_verdict(ratio) if decided
                                else "not compared (fewer than two shared rounds)")
    dropped = {name: max(r for r, names in race.rounds.items() if name in names)
               for name in contender_names(race) if name not in finalists and name != leader}
    return Decision(winner, throughput, gains, dropped)
