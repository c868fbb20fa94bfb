"""How close the Optuna driver gets to the grid's best, and with how few trials.

On a fixed space small enough to grid exhaustively on a 2-core machine (pipeline × batch size ×
intra/inter-op threads × decode parallelism = 48 configurations, input mode), it runs the grid once,
then the Optuna driver (enqueued references, TPE, median pruning) with `--budget-pct` of the grid's
trials for each of `--seeds` seeds, and prints the best-found / grid-best ratio and the share of the
grid's trials each search used. Goal: within 5% of the grid best using ≤ 15% of its trials (median
over seeds).

    python benchmarks/search_efficiency.py [--seeds 3] [--budget-pct 15] [--rows 20000]
"""
from __future__ import annotations

import argparse
import itertools
import math
import statistics
import tempfile
from pathlib import Path

from pipebench.config import parse_experiment
from pipebench.datasets import materialise
from pipebench.measure.machine import machine_facts
from pipebench.measure.manager import Limits, run_worker
from pipebench.search.study import make_plan, open_storage, open_study, run_study, worker_trial

SPACE = {"pipeline": ["aws-sample", "lambdaji-libsvm"], "batch_size": [128, 512, 2048],
         "intra_op_threads": [1, 2], "inter_op_threads": [1, 2], "stage.decode.num_parallel_calls": [1, 2]}


def _experiment(folder: Path, rows: int, n_trials: int, seed: int) -> dict:
    return {
        "name": "search-efficiency",
        "data": {"synth": {"rows": rows, "files": 2}, "formats": ["libsvm", "tfrecord"], "holdout_rows": 0,
                 "cache_dir": str(folder / "data")},
        "pipelines": {"presets": ["aws-sample", "lambdaji-libsvm"]},
        "grid": {"batch_size": [512]},
        "measurement": {"warmup_max_sec": 2.0, "window_sec": 0.3, "windows": 3, "steady_cv_pct": 10},
        "search": {"driver": "optuna", "n_trials": n_trials, "seed": seed, "space": SPACE, "pruner": "median"},
        "results": str(folder / "results"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--budget-pct", type=float, default=15.0)
    parser.add_argument("--rows", type=int, default=20_000)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="pipebench-search-"))
    machine = machine_facts()
    grid_size = math.prod(len(v) for v in SPACE.values())
    n_trials = max(1, int(grid_size * args.budget_pct / 100))
    experiment = parse_experiment(_experiment(folder, args.rows, n_trials, 0))
    data = materialise(experiment, log=lambda _: None)
    plan = make_plan(experiment, data, machine)
    limits = Limits(timeout_sec=120, memory_cap_bytes=8 << 30)

    names = list(plan.space)
    grid_best = 0.0
    for i, values in enumerate(itertools.product(*(plan.space[n].choices for n in names))):
        trial = {**worker_trial(plan, dict(zip(names, values))), "trial_id": f"grid-{i}"}
        record = run_worker(trial, folder / "grid" / trial["trial_id"], limits).record
        rate = record.get("examples_per_sec_median") or 0.0
        grid_best = max(grid_best, rate)
        print(f"grid {i + 1}/{grid_size}: {dict(zip(names, values))}: {rate:,.0f} ex/s", flush=True)

    ratios, shares = [], []
    for seed in range(args.seeds):
        seeded = parse_experiment(_experiment(folder, args.rows, n_trials, seed))
        run_dir = folder / f"optuna-{seed}"
        run_dir.mkdir()
        seeded_plan = make_plan(seeded, data, machine)
        study = open_study(seeded, seeded_plan, open_storage(str(run_dir / "study.journal"), run_dir),
                           study_name=f"seed-{seed}")
        run_study(study, seeded_plan, run_dir, machine, log=lambda _: None)
        best = study.best_value
        ratios.append(best / grid_best)
        shares.append(len(study.trials) / grid_size)
        print(f"optuna seed {seed}: best {best:,.0f} ex/s = {ratios[-1]:.1%} of grid best {grid_best:,.0f}, "
              f"{len(study.trials)} trials = {shares[-1]:.0%} of the grid", flush=True)
    ratio, share = statistics.median(ratios), statistics.median(shares)
    verdict = "MET" if ratio >= 0.95 and share <= 0.15 else "NOT MET"
    print(f"median over {args.seeds} seeds: best-found / grid-best {ratio:.1%} using {share:.0%} of the grid's "
          f"{grid_size} trials — goal (≥ 95% using ≤ 15%): {verdict}")


if __name__ == "__main__":
    main()
