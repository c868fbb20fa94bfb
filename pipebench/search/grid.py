"""The grid driver: every combination of pipeline × format × batch size × threads × env × mode,
measured in `measurement.repeats` shuffled rounds (see `trials`); the candidates and their trials come from
pipebench.search.candidates.
"""
from __future__ import annotations

import collections
import itertools

from pipebench.config import Experiment
from pipebench.config.choices import ENV_KNOBS
from pipebench.datasets import DataSet
from pipebench.errors import ConfigError
from pipebench.measure.manager import shares_worker
from pipebench.measure.round_order import round_order
from pipebench.measure.trial import TrialSpec, trains_with
from pipebench.pipeline.function import FunctionPipeline
from pipebench.results.trial_row import TrialRow
from pipebench.search.candidates import Candidate, candidates, make_trial
from pipebench.search.loop import Planned




def trials(experiment: Experiment, data: DataSet) -> list[TrialSpec]:
    """Give every trial of the grid, in run order: `measurement.repeats` rounds, each measuring every
    configuration once in its own shuffled order (RMIT), so drift on the machine hits all of them alike.

    A train trial measures its synthetic ceiling itself, in the same worker (pipebench.measure.windows);
    a separate synthetic trial runs only when `modes` asks for synthetic without train. The order is
    seeded by the experiment, so a resumed run plans the same one.
    """
    pipelines = candidates(experiment, data)
    if not pipelines:
        raise ConfigError("pipelines: nothing to measure (no presets, no orderings)")
    grid = experiment["grid"]
    env_names = list(ENV_KNOBS)
    env_values = [grid["env"][name] for name in env_names]
    modes = experiment["modes"]
    configurations = []
    for batch_size, intra, inter, *env_combo in itertools.product(
            grid["batch_size"], grid["intra_op_threads"], grid["inter_op_threads"], *env_values):
        env = {name: value for name, value in zip(env_names, env_combo) if value is not None}
        setting = {"batch_size": batch_size, "threads": {"intra": intra, "inter": inter}, "env": env}
        if "synthetic" in modes and "train" not in modes:
            configurations.append(("synthetic", pipelines[0], setting))
        configurations += [(mode, candidate, setting) for candidate in pipelines
                           for mode in ("input", "train") if mode in modes
                           if _takes(candidate, batch_size, grid["batch_size"])]
    out = []
    for repeat in range(experiment["measurement"]["repeats"]):
        order = round_order(configurations, repeat, experiment.fingerprint())
        out += [make_trial(experiment, data, mode, candidate, setting, repeat) for mode, candidate, setting in order]
    return out


def _takes(candidate: Candidate, batch_size: int, batch_sizes: list[int]) -> bool:
    """Whether the grid measures `candidate` at `batch_size`: a function that batches as it is written runs once,
    at the first (the batch size does not reach it)."""
    spec = candidate.spec
    return not isinstance(spec, FunctionPipeline) or spec.batch_passed or batch_size == batch_sizes[0]


class GridPlanner:
    """Planner over the grid's trials, in run order, skipping those the run folder already holds."""

    remeasures_busy = True

    def __init__(self, planned: list[TrialSpec], done: set[str]) -> None:
        self._todo = collections.deque(t for t in planned if t.trial_id not in done)
        self._total = len(done) + len(self._todo)
        self._ids = {t.trial_id for t in planned} | done

    def trial_ids(self) -> set[str]:
        """Give the id of every trial the run holds, done before included (known before any runs)."""
        return self._ids

    def total(self) -> int:
        return self._total

    def next(self) -> Planned | None:
        return Planned(self._todo.popleft()) if self._todo else None

    def also(self, group: list[Planned], room: int) -> list[Planned]:
        """Give up to `room` of the next trials that may share the warm worker of `group`'s: of those up to the first
        that may not (the shuffled order of each repeat stands beyond it), the ones of the first trial's mode first
        (train trials in one worker time their arms in one measurement: pipebench.measure.trial.trains_with, those
        that train with the first before the other train trials), then the others, each in plan order."""
        specs, sharing = [p.spec for p in group], []
        for spec in self._todo:
            if not shares_worker(specs + sharing, spec):
                break
            sharing.append(spec)
        # stable: plan order within each; of the first's mode, those that train with it first (one batch shape)
        sharing.sort(key=lambda spec: (spec.mode != specs[0].mode, not trains_with(specs[0], spec)))
        taken = sharing[:room]
        ids = {spec.trial_id for spec in taken}
        self._todo = collections.deque(spec for spec in self._todo if spec.trial_id not in ids)
        return [Planned(spec) for spec in taken]

    def done(self, planned: Planned, row: TrialRow) -> None:
        """The grid needs no result to go on."""

    def finish(self, run) -> None:
        """The grid concludes nothing beyond its rows: summary.md ranks them."""
