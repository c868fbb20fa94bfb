"""How close the Optuna driver gets to the grid's best, and with how few trials.

On a fixed space small enough to grid exhaustively on a 2-core machine (pipeline × batch size ×
intra/inter-op threads × decode parallelism = 48 configurations, input mode), it runs the grid once,
then the Optuna driver (enqueued references, median pruning, TPE; `--sampler random` adds random
search beside it) with `--budget-pct` of the grid's trials for each of `--seeds` seeds, and prints the best-found / grid-best ratio and the share of the
grid's trials each search measured. Goal: within 5% of the grid best using ≤ 15% of its trials
(median over seeds).

A maximum over 48 noisy measurements is biased upwards (the winner's curse), and so is a study's
best value. So the grid's top `--confirm-top` configurations are measured again, `--confirm` times
each in fresh processes and in turns, to pick the grid best; then each study's best and the grid
best are measured `--confirm` times in turns (the machine's speed drifts over minutes, and turns
make the drift hit both alike), and the ratio compares those means. The raw ratio (the study's
best value / the grid's maximum, both single draws) is printed beside it.

`--save-grid FILE` writes every fresh measurement of every configuration (grid, confirmations,
paired checks) and the study's enqueued references as JSON, for `benchmarks/search_replay.py`.

    python benchmarks/search_efficiency.py [--seeds 3] [--budget-pct 15] [--rows 20000] [--save-grid FILE]
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import itertools
import json
import math
import platform
import statistics
import tempfile
from pathlib import Path

import optuna

from pipebench.atomic import atomic_write_json
from pipebench.config import parse_experiment
from pipebench.datasets import materialise
from pipebench.measure.machine import machine_facts
from pipebench.measure.facts import MachineFacts
from pipebench.measure.manager import Limits, run_worker
from pipebench.results.run_folder import RunFolder
from pipebench.search import slots
from pipebench.search.loop import run_trials
from pipebench.search.optuna_driver import OptunaPlanner, open_storage, open_study
from pipebench.search.plan import Plan, make_plan, suggest, worker_trial

SPACE = {"pipeline": ["aws-sample", "lambdaji-libsvm"], "batch_size": [128, 512, 2048],
         "intra_op_threads": [1, 2], "inter_op_threads": [1, 2], "stage.decode.num_parallel_calls": [1, 2]}
LIMITS = Limits(timeout_sec=120, memory_cap_bytes=8 << 30)


def _experiment(folder: Path, rows: int, n_trials: int, seed: int, sampler: str = "tpe") -> dict:
    return {
        "name": "search-efficiency",
        "data": {"synth": {"rows": rows, "files": 2}, "formats": ["libsvm", "tfrecord"], "holdout_rows": 0,
                 "cache_dir": str(folder / "data")},
        "pipelines": {"presets": ["aws-sample", "lambdaji-libsvm"]},
        "grid": {"batch_size": [512]},
        "measurement": {"warmup_max_sec": 2.0, "window_sec": 0.5, "windows": 3, "steady_cv_pct": 10},
        "search": {"driver": "optuna", "n_trials": n_trials, "seed": seed, "space": SPACE, "pruner": "median",
                   "sampler": sampler},
        "results": str(folder / "results"),
    }


def _key(params: dict) -> str:
    return json.dumps({name: params[name] for name in SPACE}, sort_keys=True)


def _rate(plan: Plan, params: dict, folder: Path, tag: str, draws: dict[str, list[float]]) -> float:
    """Measure one configuration in a fresh worker; the rate is also added to `draws`."""
    trial = dataclasses.replace(worker_trial(plan, params), trial_id=tag)
    rate = run_worker(trial, folder / tag, LIMITS).record.examples_per_sec_median or 0.0
    draws.setdefault(_key(params), []).append(rate)
    return rate


def _round_robin(plan: Plan, configs: list[dict], folder: Path, tag: str, times: int,
                 draws: dict[str, list[float]]) -> list[float]:
    """Give each configuration's mean of `times` fresh measurements, taken in turns so drift hits all alike."""
    rates: list[list[float]] = [[] for _ in configs]
    for i in range(times):
        for j, params in enumerate(configs):
            rates[j].append(_rate(plan, params, folder, f"{tag}-{j}-{i}", draws))
    return [statistics.fmean(r) for r in rates]


def _save_grid(path: Path, plan: Plan, machine: MachineFacts, draws: dict[str, list[float]]) -> None:
    """Write the space, the enqueued references and every measurement per configuration (temp name, then rename)."""
    recorded = {
        "recorded": datetime.date.today().isoformat(),
        "machine": {"vcpus": machine.cpu.vcpus, "tensorflow": machine.tensorflow.version,
                    "python": platform.python_version()},
        "space": {name: list(dim.choices) for name, dim in plan.space.items()},
        "references": [reference.searched for reference in plan.references],
        "configurations": [{"params": json.loads(key), "examples_per_sec": rates} for key, rates in draws.items()],
    }
    atomic_write_json(path, recorded)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--budget-pct", type=float, default=15.0)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--confirm-top", type=int, default=5, help="grid configurations measured again")
    parser.add_argument("--confirm", type=int, default=3, help="fresh measurements per confirmed configuration")
    parser.add_argument("--sampler", action="append", choices=("tpe", "random"),
                        help="search.sampler to compare (repeatable; default: tpe)")
    parser.add_argument("--save-grid", type=Path, help="write every measurement as JSON (for search_replay.py)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="pipebench-search-"))
    machine = machine_facts()
    grid_size = math.prod(len(v) for v in SPACE.values())
    n_trials = max(1, int(grid_size * args.budget_pct / 100))
    experiment = parse_experiment(_experiment(folder, args.rows, n_trials, 0))
    data = materialise(experiment, log=lambda _: None)
    plan = make_plan(experiment, data, machine)

    names = list(plan.space)
    draws: dict[str, list[float]] = {}
    grid: dict[tuple, float] = {}
    for i, values in enumerate(itertools.product(*(plan.space[n].choices for n in names))):
        grid[values] = _rate(plan, dict(zip(names, values)), folder / "grid", f"grid-{i}", draws)
        print(f"grid {i + 1}/{grid_size}: {dict(zip(names, values))}: {grid[values]:,.0f} ex/s", flush=True)
    grid_max = max(grid.values())
    top = sorted(grid, key=grid.get, reverse=True)[:args.confirm_top]
    means = _round_robin(plan, [dict(zip(names, values)) for values in top], folder / "confirm", "top", args.confirm,
                         draws)
    confirmed = dict(zip(top, means))
    best_values = max(confirmed, key=confirmed.get)
    grid_best = confirmed[best_values]
    print(f"grid best (top {len(top)} measured {args.confirm}× again): {dict(zip(names, best_values))}: "
          f"{grid_best:,.0f} ex/s; top {len(top)} confirmed within "
          f"{1 - min(confirmed.values()) / grid_best:.1%} of each other", flush=True)
    if args.save_grid:
        _save_grid(args.save_grid, plan, machine, draws)

    for sampler in args.sampler or ["tpe"]:
        ratios, raw_ratios, shares = [], [], []
        for seed in range(args.seeds):
            seeded = parse_experiment(_experiment(folder, args.rows, n_trials, seed, sampler))
            run_dir = folder / f"{sampler}-{seed}"
            run_dir.mkdir()
            seeded_plan = make_plan(seeded, data, machine)
            study = open_study(seeded, seeded_plan, open_storage(str(run_dir / "study.journal"), run_dir),
                               study_name=f"{sampler}-{seed}")
            run_trials(OptunaPlanner(study, seeded_plan, log=lambda _: None), RunFolder(run_dir, machine, data.facts()),
                       seeded, log=lambda _: None)
            best = study.best_trial
            params = {name: suggest(optuna.trial.FixedTrial(best.params), dim)
                      for name, dim in seeded_plan.space.items()}
            params.update(best.user_attrs.get(slots.OVERRIDES) or {})
            # found and grid best measured in turns, now: the machine's drift since the grid cancels out
            found, best_now = _round_robin(seeded_plan, [params, dict(zip(names, best_values))], folder / "confirm",
                                           f"{sampler}-{seed}", args.confirm, draws)
            measured = sum(not slots.is_duplicate(t) for t in study.trials)
            ratios.append(found / best_now)
            raw_ratios.append(best.values[0] / grid_max)
            shares.append(measured / grid_size)
            print(f"{sampler} seed {seed}: best {({k: params[k] for k in names})} measured again {found:,.0f} ex/s = "
                  f"{ratios[-1]:.1%} of the grid best measured in turns with it ({best_now:,.0f}) (raw: {best.values[0]:,.0f} = {raw_ratios[-1]:.1%} of the "
                  f"grid maximum {grid_max:,.0f}); {measured} trials measured ({len(study.trials) - measured} "
                  f"duplicates told) = {shares[-1]:.0%} of the grid", flush=True)
        ratio, share = statistics.median(ratios), statistics.median(shares)
        verdict = "MET" if ratio >= 0.95 and share <= 0.15 else "NOT MET"
        print(f"{sampler}: median over {args.seeds} seeds: best-found / grid-best {ratio:.1%} "
              f"(raw {statistics.median(raw_ratios):.1%}) using {share:.0%} of the grid's {grid_size} trials — "
              f"goal (≥ 95% using ≤ 15%): {verdict}", flush=True)
    if args.save_grid:
        _save_grid(args.save_grid, plan, machine, draws)
        print(f"every measurement: {args.save_grid}")


if __name__ == "__main__":
    main()
