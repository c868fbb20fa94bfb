"""Live check of the Optuna driver (issue 14, goal G3): does a study find the grid's best, and beat AUTOTUNE?

On a fixed space small enough to grid on a 2-core machine (pipeline × batch size × intra/inter-op
threads × decode parallelism = 48 configurations, input mode):

1. The grid's best. With `--grid-from RECORD...` it is the configuration with the best mean over
   every measurement those records hold (as search_replay.py judges); otherwise the grid is measured
   here `--grid-passes` times (each pass in its own random order), and, unless the surface is
   enriched (2.), its top `--confirm-top` are measured `--confirm` times again in turns, to pick it
   on a mean instead of the maximum of 48 noisy draws (the winner's curse).
2. Optionally, a richer surface for search_replay.py: `--enrich-top N --enrich-rounds R` measures
   the N best configurations (by mean over the records and this run) and the references (the deck's
   settings, TF defaults, AUTOTUNE everywhere) in R interleaved rounds, each in a fresh random order.
3. `--seeds` studies of `--budget` trials each, run by the real loop and planner (exploration, then
   the confirmation phase, all counted in the budget). Then the study's winner, the grid's best and
   the AUTOTUNE reference are measured in `--rounds` interleaved rounds (random order per round,
   fresh processes), and per seed it prints the paired ratio winner / grid best with its one-sided 90%
   lower bound, and winner / AUTOTUNE. Goal: in ≥ 2 of 3 seeds the ratio to the grid best is ≥ 0.95
   with its 90% lower bound ≥ 0.90, and the winner beats AUTOTUNE (its ratio's 90% lower bound > 1).
   A winner that is the grid's best itself passes the first half by identity (its ratio is 1); its
   two arms are then one configuration measured twice, printed as an A/A ratio: the check's noise.

`--save-grid FILE` writes every measurement of this run per configuration (keyed by its knob values,
see `record_params`) with the space and the references' settings, for benchmarks/search_replay.py.

    python benchmarks/search_efficiency.py [--seeds 3] [--budget 24] [--rounds 5] [--rows 20000]
        [--grid-from RECORD ...] [--enrich-top N --enrich-rounds R] [--save-grid FILE]
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

from pipebench.atomic import atomic_write_json
from pipebench.config import parse_experiment
from pipebench.datasets import materialise
from pipebench.measure.facts import MachineFacts
from pipebench.measure.intervals import ratio_interval
from pipebench.measure.machine import machine_facts
from pipebench.measure.round_order import round_order
from pipebench.measure.manager import Limits, run_worker
from pipebench.measure.sampler import Sampler
from pipebench.measure.trial import TrialSpec
from pipebench.results.run_folder import RunFolder
from pipebench.search.loop import run_trials
from pipebench.search.optuna_driver import OptunaPlanner, open_storage, open_study
from pipebench.search.plan import Plan, make_plan, reference_settings, worker_trial
from pipebench.search.settings import knob_values
from pipebench.search.confirm import decide

SPACE = {"pipeline": ["aws-sample", "lambdaji-libsvm"], "batch_size": [128, 512, 2048],
         "intra_op_threads": [1, 2], "inter_op_threads": [1, 2], "stage.decode.num_parallel_calls": [1, 2]}
LIMITS = Limits(timeout_sec=120, memory_cap_bytes=8 << 30)
#: A measurement is taken again while other processes use more than this share of a vCPU (%) during it.
BUSY_OTHER_CPU_PCT = 25.0
#: The one-sided lower bound G3 reads: the low end of the two-sided 80% interval.
LOWER_BOUND_CONFIDENCE = 0.80


def _experiment(folder: Path, rows: int, n_trials: int, seed: int, sampler: str = "tpe") -> dict:
    return {
        "name": "search-efficiency",
        "data": {"synth": {"rows": rows, "files": 2}, "formats": ["libsvm", "tfrecord"], "holdout_rows": 0,
                 "cache_dir": str(folder / "data")},
        "pipelines": {"presets": ["aws-sample", "lambdaji-libsvm"]},
        "grid": {"batch_size": [512]},
        "measurement": {"warmup_max_sec": 2.0, "window_sec": 0.5, "windows": 3, "steady_cv_pct": 10},
        "search": {"driver": "optuna", "n_trials": n_trials, "seed": seed, "space": SPACE, "sampler": sampler},
        "results": str(folder / "results"),
    }


def record_params(spec: TrialSpec, space: dict) -> dict:
    """Give a record's name for what a trial ran: its value of each knob of the space, and of
    source.num_parallel_reads when it reads files in parallel (AUTOTUNE everywhere does)."""
    values = knob_values(spec)
    found = {name: values[name] for name in space}
    if values["source.num_parallel_reads"] is not None:
        found["source.num_parallel_reads"] = values["source.num_parallel_reads"]
    return found


def _key(spec: TrialSpec, space: dict) -> str:
    return json.dumps(record_params(spec, space), sort_keys=True)


class Bench:
    """Measures configurations in fresh workers and keeps every measurement by configuration."""

    def __init__(self, plan: Plan, folder: Path, busy_retries: int) -> None:
        self.plan, self.folder, self.busy_retries, self.count, self.busy = plan, folder, busy_retries, 0, 0
        self.draws: dict[str, list[float]] = {}
        self.round_values: dict[str, int] = {}  # configuration → its last N draws are interleaved rounds 1..N

    def rate(self, params: dict) -> float:
        """Measure one configuration in a fresh worker; the rate is also kept in `draws`.

        The machine is shared: a measurement during which other processes used more than
        BUSY_OTHER_CPU_PCT of a vCPU is taken again (up to `busy_retries` times), and `busy` counts them.
        """
        for _ in range(self.busy_retries + 1):
            self.count += 1
            trial = dataclasses.replace(worker_trial(self.plan, params), trial_id=f"m{self.count}")
            outcome = run_worker(trial, self.folder / trial.trial_id, LIMITS,
                                 sampler_factory=lambda pid: Sampler(pid, 0.25))
            other = outcome.usage.other_cpu_pct_median if outcome.usage is not None else None
            if other is None or other <= BUSY_OTHER_CPU_PCT:
                break
            self.busy += 1
        rate = outcome.record.examples_per_sec_median or 0.0
        self.draws.setdefault(_key(trial, self.plan.space), []).append(rate)
        return rate

    def rounds(self, configs: list[dict], times: int, seed: object) -> list[list[float]]:
        """Give each configuration's rates over `times` rounds, each round in its own random order (RMIT)."""
        rates: list[list[float]] = [[] for _ in configs]
        for r in range(times):
            for j in round_order(range(len(configs)), r, seed):
                rates[j].append(self.rate(configs[j]))
        # the replay pairs a race's rounds by these (search_replay.py): only the last set measured side by side
        self.round_values = {_key(worker_trial(self.plan, params), self.plan.space): times for params in configs}
        return rates


def _load_records(paths: list[Path]) -> dict[str, list[float]]:
    draws: dict[str, list[float]] = {}
    for path in paths:
        for config in json.loads(path.read_text())["configurations"]:
            draws.setdefault(json.dumps(config["params"], sort_keys=True), []).extend(config["examples_per_sec"])
    return draws


def _save(path: Path, plan: Plan, machine: MachineFacts, bench: Bench, source: str) -> None:
    """Write the space, the references' settings and every measurement per configuration (temp name, then
    rename); `round_values`: how many of a configuration's last measurements are the interleaved rounds."""
    references = {name: record_params(worker_trial(plan, params), plan.space)
                  for name, params in reference_settings(plan, "tfrecord", "file").items()}
    recorded = {
        "recorded": datetime.date.today().isoformat(), "source": source,
        "machine": {"vcpus": machine.cpu.vcpus, "tensorflow": machine.tensorflow.version,
                    "python": platform.python_version()},
        "space": {name: list(dim.choices) for name, dim in plan.space.items()},
        "references": references,
        "configurations": [{"params": json.loads(key), "examples_per_sec": rates,
                            **({"round_values": bench.round_values[key]} if key in bench.round_values else {})}
                           for key, rates in bench.draws.items()],
    }
    atomic_write_json(path, recorded)


def _params(key: str) -> dict:
    """Give worker_trial's knob values for a record key (the space's names, plus source.num_parallel_reads)."""
    return json.loads(key)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--budget", type=int, default=24, help="search.n_trials, confirmation trials included")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds of the live check")
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--grid-from", type=Path, nargs="+", help="records whose best mean is the grid's best")
    parser.add_argument("--grid-passes", type=int, default=1, help="passes over the grid, each in its own order")
    parser.add_argument("--confirm-top", type=int, default=5, help="grid configurations measured again")
    parser.add_argument("--confirm", type=int, default=3, help="fresh measurements per confirmed configuration")
    parser.add_argument("--enrich-top", type=int, default=0, help="best configurations measured in rounds")
    parser.add_argument("--enrich-rounds", type=int, default=10)
    parser.add_argument("--busy-retries", type=int, default=2, help="measure again while the machine is busy")
    parser.add_argument("--save-grid", type=Path, help="write every measurement as JSON (for search_replay.py)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="pipebench-search-"))
    machine = machine_facts()
    experiment = parse_experiment(_experiment(folder, args.rows, args.budget, 0))
    data = materialise(experiment, log=lambda _: None)
    plan = make_plan(experiment, data, machine)
    bench = Bench(plan, folder / "measured", args.busy_retries)
    names = list(plan.space)
    grid_size = math.prod(len(plan.space[n].choices) for n in names)

    def means() -> dict[str, float]:
        pooled = _load_records(args.grid_from or [])
        for key, rates in bench.draws.items():
            pooled.setdefault(key, []).extend(rates)
        return {key: statistics.fmean(rates) for key, rates in pooled.items() if rates}

    if not args.grid_from:
        grid = [dict(zip(names, values)) for values in itertools.product(*(plan.space[n].choices for n in names))]
        for p in range(args.grid_passes):
            for i, params in enumerate(round_order(grid, p, "grid")):
                rate = bench.rate(params)
                print(f"grid pass {p + 1}, {i + 1}/{grid_size}: {params}: {rate:,.0f} ex/s", flush=True)
        if not args.enrich_top:
            top = sorted(bench.draws, key=lambda k: statistics.fmean(bench.draws[k]), reverse=True)[:args.confirm_top]
            bench.rounds([_params(k) for k in top], args.confirm, "confirm")
    in_space = {k: m for k, m in means().items()
                if set(json.loads(k)) == set(names) and all(plan.space[n].contains(v) for n, v in json.loads(k).items())}
    grid_best = max(in_space, key=in_space.get)
    print(f"grid best (best mean over {'the records' if args.grid_from else 'this run'}): {grid_best}: "
          f"{in_space[grid_best]:,.0f} ex/s", flush=True)
    references = reference_settings(plan, "tfrecord", "file")
    if args.enrich_top:
        top = sorted(in_space, key=in_space.get, reverse=True)[:args.enrich_top]
        configs = [_params(k) for k in top] + list(references.values())
        print(f"enriching: {len(top)} best configurations and {len(references)} references, "
              f"{args.enrich_rounds} interleaved rounds = {len(configs) * args.enrich_rounds} trials", flush=True)
        for i, rates in enumerate(bench.rounds(configs, args.enrich_rounds, "enrich")):
            label = top[i] if i < len(top) else list(references)[i - len(top)]
            print(f"  {label}: mean {statistics.fmean(rates):,.0f} ex/s over {len(rates)}", flush=True)
    if args.save_grid:
        source = ("search_efficiency.py" + ("" if args.grid_from else f": {args.grid_passes} grid pass(es)")
                  + (f"; the {args.enrich_top} best and the references in {args.enrich_rounds} interleaved rounds"
                     if args.enrich_top else ""))
        _save(args.save_grid, plan, machine, bench, source)
        print(f"every measurement: {args.save_grid} ({bench.count} trials, {bench.busy} taken again on a busy "
              "machine)", flush=True)

    passed = 0
    for seed in range(args.seeds):
        seeded = parse_experiment(_experiment(folder, args.rows, args.budget, seed))
        run_dir = folder / f"study-{seed}"
        run_dir.mkdir()
        seeded_plan = make_plan(seeded, data, machine)
        study = open_study(seeded, seeded_plan, open_storage(str(run_dir / "study.journal"), run_dir),
                           study_name=f"seed-{seed}", log=lambda _: None)
        planner = OptunaPlanner(study, seeded_plan, log=lambda _: None)
        result = run_trials(planner, RunFolder(run_dir, machine, data.facts()), seeded, log=lambda _: None)
        decision = decide(planner.race())
        if decision is None:
            print(f"seed {seed}: no winner ({len(result.rows)} trials, stopped: {result.stopped})", flush=True)
            continue
        found = decision.winner.params
        print(f"seed {seed}: {len(result.rows)} trials; winner {decision.winner.name} "
              f"{record_params(worker_trial(seeded_plan, found), plan.space)}: "
              f"{decision.throughput.text()} ex/s in its confirmation rounds", flush=True)
        live = bench.rounds([found, _params(grid_best), references["AUTOTUNE everywhere"]], args.rounds,
                            f"live-{seed}")
        to_best = ratio_interval(live[0], live[1], LOWER_BOUND_CONFIDENCE)
        to_autotune = ratio_interval(live[0], live[2], LOWER_BOUND_CONFIDENCE)
        # Found the grid's best itself: its ratio to it is 1, and the two arms measure one configuration
        # twice, an A/A comparison that shows the check's own noise instead of the search's miss.
        same = _key(worker_trial(seeded_plan, found), plan.space) == grid_best
        ok = (same or (to_best.mean >= 0.95 and to_best.low >= 0.90)) and to_autotune.low > 1.0
        passed += ok
        versus = (f"found = grid best (the same configuration), measured twice (A/A): {to_best.mean:.3f} "
                  f"(90% lower bound {to_best.low:.3f})" if same else
                  f"found / grid best {to_best.mean:.3f} (90% lower bound {to_best.low:.3f})")
        print(f"seed {seed}: {versus}; found / AUTOTUNE everywhere {to_autotune.mean:.3f} (90% lower bound "
              f"{to_autotune.low:.3f}); {args.rounds} interleaved rounds: {'pass' if ok else 'fail'}", flush=True)
    if args.seeds:
        print(f"G3: {passed} of {args.seeds} seeds pass (goal: at least 2 of 3): "
              f"{'MET' if passed >= min(2, args.seeds) else 'NOT MET'}", flush=True)
    if args.save_grid and args.seeds:
        _save(args.save_grid, plan, machine, bench, "search_efficiency.py, with its live checks")


if __name__ == "__main__":
    main()
