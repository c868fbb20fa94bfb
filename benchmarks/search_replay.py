"""Replay the Optuna driver on a recorded grid: how often a search reaches the goal, over hundreds of studies.

`benchmarks/search_efficiency.py --save-grid FILE` records every fresh measurement of every
configuration of its space. This runs the real driver on that record, `--seeds` times: the trial
loop (pipebench.search.loop.run_trials) with the Optuna planner (references, sampler, slots,
duplicates) exactly as `pipebench run` drives them, with one change — the `measure` function draws
the trial's examples/sec from its configuration's recorded measurements instead of starting a
worker, so the machine's real between-process noise is in it (`--noise-free` uses the mean). A
study's best trial is judged by its configuration's mean over all recordings, against the best mean.

For each sampler and budget it prints the mean ratio, the share of single studies within 5% of the
best, and the share of three-seed medians within 5%. Not replayed: pruning (pruned trials' windows
are not recorded; the median pruner only stops trials, it does not choose them).

    python benchmarks/search_replay.py FILE [FILE ...] [--seeds 300] [--budget-pct 15 25 35]
        [--sampler tpe --sampler random] [--noise-free]
"""
from __future__ import annotations

import argparse
import dataclasses
import io
import json
import math
import random
import statistics
import sys
import tempfile
import warnings
from pathlib import Path

import optuna

from pipebench.config import parse_experiment
from pipebench.datasets import DataSet
from pipebench.measure.facts import MachineFacts
from pipebench.measure.machine import machine_facts
from pipebench.measure.trial import TrialSpec
from pipebench.results.run_folder import RunFolder
from pipebench.search.loop import run_trials
from pipebench.search.optuna_driver import OptunaPlanner, open_study
from pipebench.search.plan import make_plan
from pipebench.testing import fake_measure

GOAL = 0.95


def _load(paths: list[Path]) -> tuple[dict, dict, dict[str, list[float]]]:
    """Give the space, the recording machine and the measurements per configuration, merged over the files."""
    space, machine, draws = None, None, {}
    for path in paths:
        try:
            recorded = json.loads(path.read_text())
        except (OSError, ValueError) as err:
            sys.exit(f"{path}: cannot read it: {err}")
        missing = {"space", "machine", "configurations"} - set(recorded if isinstance(recorded, dict) else ())
        if missing:
            sys.exit(f"{path}: not a record of search_efficiency.py --save-grid (no {', '.join(sorted(missing))})")
        if space is None:
            space, machine = recorded["space"], recorded["machine"]
        elif recorded["space"] != space:
            sys.exit(f"{path}: a different space from {paths[0]}; replay records of one space together")
        for config in recorded["configurations"]:
            draws.setdefault(_key(config["params"]), []).extend(config["examples_per_sec"])
    missing = math.prod(len(c) for c in space.values()) - len(draws)
    if missing:
        sys.exit(f"{paths[0]}: {missing} configurations of the space were never measured")
    return space, machine, draws


def _key(params: dict) -> str:
    return json.dumps(params, sort_keys=True)


def _params_of(spec: TrialSpec, space: dict) -> dict:
    """Give the record's knob values of a trial the planner made (the inverse of plan.worker_trial)."""
    stages = {kind: params for stage in spec.pipeline_spec["stages"] for kind, params in stage.items()}
    values = {"pipeline": f"{spec.label.pipeline}:{spec.label.format}", "batch_size": spec.batch_size,
              "intra_op_threads": spec.threads.intra or 0, "inter_op_threads": spec.threads.inter or 0}
    for name in space:
        if name.startswith("stage."):
            _, kind, param = name.split(".")
            values[name] = stages[kind][param]
    return {name: values[name] for name in space}


class _InMemory(RunFolder):
    """A run folder whose rows stay in memory: hundreds of replayed studies need no Parquet."""

    def __init__(self, path: Path, machine: MachineFacts, data: DataSet) -> None:
        super().__init__(path, machine, data.facts())
        object.__setattr__(self, "kept", [])

    def rows(self) -> list[dict]:
        return list(self.kept)

    def append(self, row: dict, samples: list[dict]) -> None:
        self.kept.append(row)


def _experiment(space: dict, sampler: str, seed: int, n_trials: int, folder: Path):
    return parse_experiment({
        "name": "replay", "modes": ["input"], "pipelines": {"presets": sorted({p.split(":")[0] for p in space["pipeline"]})},
        "data": {"formats": sorted({p.split(":")[1] for p in space["pipeline"]})},
        "grid": {"batch_size": [512]},
        "search": {"driver": "optuna", "n_trials": n_trials, "seed": seed, "sampler": sampler, "pruner": "none",
                   "space": space},
        "results": str(folder)})


def _replay(sampler: str, seed: int, n_trials: int, space: dict, machine: MachineFacts,
            draws: dict[str, list[float]], noise_free: bool, folder: Path) -> str:
    """Run one study of `n_trials` slots through the real loop and planner; give its best trial's configuration key."""
    rng = random.Random(seed)
    experiment = _experiment(space, sampler, seed, n_trials, folder)
    data = DataSet({fmt: [f"/replay/part-0.{fmt}"] for fmt in experiment["data"]["formats"]}, fingerprint="replay")
    plan = make_plan(experiment, data, machine)
    study = open_study(experiment, plan, optuna.storages.InMemoryStorage(), log=lambda _: None)

    def recorded(spec: TrialSpec) -> float:
        rates = draws[_key(_params_of(spec, space))]
        return statistics.fmean(rates) if noise_free else rng.choice(rates)

    run_trials(OptunaPlanner(study, plan, log=lambda _: None), _InMemory(folder, machine, data), experiment,
               fake_measure(recorded), log=lambda _: None, stream=io.StringIO())
    best = study.best_trial
    return _key({name: best.params.get(name, dim.choices[0]) for name, dim in plan.space.items() if name in space})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records", nargs="+", type=Path, help="files written by search_efficiency.py --save-grid")
    parser.add_argument("--seeds", type=int, default=300)
    parser.add_argument("--budget-pct", type=float, nargs="+", default=[15.0, 25.0, 35.0])
    parser.add_argument("--sampler", action="append", choices=("tpe", "random"), help="default: tpe and random")
    parser.add_argument("--noise-free", action="store_true", help="a trial's value is its configuration's mean")
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
    space, recorded_machine, draws = _load(args.records)
    here = machine_facts()  # the recording machine's vCPUs decide the reference settings, not this one's
    machine = dataclasses.replace(here, cpu=dataclasses.replace(here.cpu, vcpus=recorded_machine["vcpus"]))
    folder = Path(tempfile.mkdtemp(prefix="pipebench-replay-"))
    means = {key: statistics.fmean(rates) for key, rates in draws.items()}
    best = max(means.values())
    near = sum(m >= GOAL * best for m in means.values())
    print(f"{len(draws)} configurations, {sum(map(len, draws.values()))} measurements from "
          f"{len(args.records)} record(s); {near} configuration(s) within {1 - GOAL:.0%} of the best mean "
          f"({best:,.0f} ex/s); trial values: {'means' if args.noise_free else 'recorded measurements, drawn'}")
    for sampler in args.sampler or ["tpe", "random"]:
        for pct in args.budget_pct:
            n_trials = max(1, int(len(draws) * pct / 100))
            ratios = [means[_replay(sampler, seed, n_trials, space, machine, draws, args.noise_free, folder)] / best
                      for seed in range(args.seeds)]
            medians = [statistics.median(ratios[i:i + 3]) for i in range(0, len(ratios) - 2, 3)]
            print(f"{sampler}, {n_trials} trials ({n_trials / len(draws):.0%} of the grid): best found / best "
                  f"{statistics.fmean(ratios):.1%} on average; single studies within {1 - GOAL:.0%}: "
                  f"{sum(r >= GOAL for r in ratios) / len(ratios):.0%}; three-seed medians within "
                  f"{1 - GOAL:.0%}: {sum(m >= GOAL for m in medians) / len(medians):.0%} of {len(medians)}",
                  flush=True)


if __name__ == "__main__":
    main()
