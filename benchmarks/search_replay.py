"""Replay the Optuna driver on a recorded grid: how often a search reaches the goal, over hundreds of studies.

`benchmarks/search_efficiency.py --save-grid FILE` records every fresh measurement of every
configuration of its space. This replays the driver's study on that record, `--seeds` times: the
same enqueued references, the driver's own sampler (`pipebench.search.study.make_sampler`), the
same slots and the same handling of settings proposed twice (told the earlier value, the slot
given back). A trial's value is one of its configuration's recorded measurements drawn at random,
so the machine's real between-process noise is in it (`--noise-free` uses the mean instead). A
study's best trial is judged by its configuration's mean over all recordings, against the best
mean.

For each sampler and budget it prints the mean ratio, the share of single studies within 5% of the
best, and the share of three-seed medians within 5% (the goal's statistic: the chance that one
run of search_efficiency.py meets the goal). Three seeds on the machine take 20 minutes; this
judges a sampler over hundreds in seconds. Not replayed: pruning (pruned trials' windows are not
recorded; the median pruner only stops trials, it does not choose them).

    python benchmarks/search_replay.py FILE [FILE ...] [--seeds 300] [--budget-pct 15 25 35]
        [--sampler tpe --sampler random] [--noise-free]
"""
from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import warnings
from pathlib import Path

import optuna

from pipebench.search.space import Dimension
from pipebench.search.study import gives_slot_back, make_sampler, suggest

GOAL = 0.95


def _load(paths: list[Path]) -> tuple[dict[str, Dimension], list[dict], dict[str, list[float]]]:
    """Give the space, the references and the measurements per configuration, merged over the files."""
    space, references, draws = None, None, {}
    for path in paths:
        try:
            recorded = json.loads(path.read_text())
        except (OSError, ValueError) as err:
            sys.exit(f"{path}: cannot read it: {err}")
        missing = {"space", "references", "configurations"} - set(recorded if isinstance(recorded, dict) else ())
        if missing:
            sys.exit(f"{path}: not a record of search_efficiency.py --save-grid (no {', '.join(sorted(missing))})")
        if space is None:
            space, references = recorded["space"], recorded["references"]
        elif recorded["space"] != space:
            sys.exit(f"{path}: a different space from {paths[0]}; replay records of one space together")
        for config in recorded["configurations"]:
            draws.setdefault(json.dumps(config["params"], sort_keys=True), []).extend(config["examples_per_sec"])
    missing = math.prod(len(c) for c in space.values()) - len(draws)
    if missing:
        sys.exit(f"{paths[0]}: {missing} configurations of the space were never measured")
    return {name: Dimension(name, tuple(choices)) for name, choices in space.items()}, references, draws


def _replay(sampler: str, seed: int, n_trials: int, space: dict[str, Dimension], references: list[dict],
            draws: dict[str, list[float]], noise_free: bool) -> str:
    """Run one study of `n_trials` slots on the record; give its best trial's configuration key."""
    rng = random.Random(seed)
    study = optuna.create_study(direction="maximize",
                                sampler=make_sampler({"sampler": sampler, "seed": seed, "n_trials": n_trials}))
    enqueued = references[:n_trials]
    for params in enqueued:
        study.enqueue_trial(params)
    told: dict[str, float] = {}
    sampled: set[str] = set()
    slots, duplicates = n_trials, 0
    while slots:
        trial = study.ask()
        key = json.dumps({name: suggest(trial, dim) for name, dim in space.items()}, sort_keys=True)
        if key in told:  # as the driver does: tell the earlier value, give the slot back (capped)
            study.tell(trial, told[key])
            if not gives_slot_back(duplicates, n_trials, len(sampled), len(draws)):
                slots -= 1
            duplicates += 1
            continue
        told[key] = statistics.fmean(draws[key]) if noise_free else rng.choice(draws[key])
        if trial.number >= len(enqueued):
            sampled.add(key)
        study.tell(trial, told[key])
        slots -= 1
    return max(told, key=told.get)


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
    space, references, draws = _load(args.records)
    means = {key: statistics.fmean(rates) for key, rates in draws.items()}
    best = max(means.values())
    near = sum(m >= GOAL * best for m in means.values())
    print(f"{len(draws)} configurations, {sum(map(len, draws.values()))} measurements from "
          f"{len(args.records)} record(s); {near} configuration(s) within {1 - GOAL:.0%} of the best mean "
          f"({best:,.0f} ex/s); trial values: {'means' if args.noise_free else 'recorded measurements, drawn'}")
    for sampler in args.sampler or ["tpe", "random"]:
        for pct in args.budget_pct:
            n_trials = max(1, int(len(draws) * pct / 100))
            ratios = [means[_replay(sampler, seed, n_trials, space, references, draws, args.noise_free)] / best
                      for seed in range(args.seeds)]
            medians = [statistics.median(ratios[i:i + 3]) for i in range(0, len(ratios) - 2, 3)]
            print(f"{sampler}, {n_trials} trials ({n_trials / len(draws):.0%} of the grid): best found / best "
                  f"{statistics.fmean(ratios):.1%} on average; single studies within {1 - GOAL:.0%}: "
                  f"{sum(r >= GOAL for r in ratios) / len(ratios):.0%}; three-seed medians within "
                  f"{1 - GOAL:.0%}: {sum(m >= GOAL for m in medians) / len(medians):.0%} of {len(medians)}",
                  flush=True)


if __name__ == "__main__":
    main()
