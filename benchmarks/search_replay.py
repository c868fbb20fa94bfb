"""Replay the Optuna driver on a recorded surface (issue 14, goal G2): how often does a study pick a
configuration within 5% (10%) of the best, over hundreds of seeds?

`benchmarks/search_efficiency.py --save-grid FILE` records every fresh measurement of every
configuration of its space, and of the references (the deck's settings, TF defaults, AUTOTUNE
everywhere). This runs the real driver on those records, `--seeds` times: the trial loop
(pipebench.search.loop.run_trials) with the Optuna planner — starts, ordinal space, sampler, slots,
duplicates, and the confirmation phase (top candidates and references raced in interleaved rounds,
every round's trials counted in `search.n_trials`) — exactly as `pipebench run` drives them, with one
change: the `measure` function draws each trial's examples/sec from its configuration's recorded
measurements instead of starting a worker, so the machine's real between-process noise is in it
(`--noise-free` uses the mean). The chosen configuration is the confirmed winner; it is judged by its
configuration's mean over all its recorded measurements, against the best such mean among the
configurations the search could return (the space's and the references').

Beside it: random search at the same budget, one measurement per trial, picking the best measured
value (the real loop and planner with the random sampler and no confirmation phase), and the whole
grid measured once, picking its maximum. Goal (G2): with ≤ 24 trials the winner is ≥ 0.95·best in
≥ 67% of seeds and ≥ 0.90·best in ≥ 90%. Not replayed: pruning (pruned trials' windows are not
recorded; the median pruner only stops trials, it does not choose them).

    python benchmarks/search_replay.py FILE [FILE ...] [--seeds 300] [--budget 24]
        [--confirm TOP:ROUNDS ...] [--noise-free]
"""
from __future__ import annotations

import argparse
import dataclasses
import io
import json
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
from pipebench.search.confirm import decide
from pipebench.search.loop import run_trials
from pipebench.search.optuna_driver import OptunaPlanner, open_study
from pipebench.search.plan import make_plan
from pipebench.testing import fake_measure
from search_efficiency import record_params

GOALS = ((0.95, 0.67), (0.90, 0.90))  # (share of the best, share of seeds that must reach it)


def _load(paths: list[Path], need_references: bool) -> tuple[dict, dict, dict[str, list[float]], dict[str, str]]:
    """Give the space, the recording machine, the measurements per configuration and the references' keys."""
    space, machine, draws, references = None, None, {}, {}
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
        if isinstance(recorded.get("references"), dict):
            references.update({name: _key(params) for name, params in recorded["references"].items()})
        for config in recorded["configurations"]:
            draws.setdefault(_key(config["params"]), []).extend(config["examples_per_sec"])
    grid = [key for key in draws if _in_space(key, space)]
    size = 1
    for choices in space.values():
        size *= len(choices)
    if len(grid) < size:
        sys.exit(f"{paths[0]}: {size - len(grid)} configurations of the space were never measured")
    unrecorded = [name for name, key in references.items() if key not in draws]
    if not need_references:
        references = {name: key for name, key in references.items() if key in draws}
    elif not references or unrecorded:
        sys.exit(f"{paths[0]}: no measurements of the references {unrecorded or '(none named)'}; record them with "
                 "search_efficiency.py --enrich-top N --save-grid FILE")
    return space, machine, draws, references


def _key(params: dict) -> str:
    return json.dumps(params, sort_keys=True)


def _in_space(key: str, space: dict) -> bool:
    """Whether a record's configuration is one of the space's (not a reference's settings)."""
    params = json.loads(key)
    return set(params) == set(space) and all(value in space[name] for name, value in params.items())


class _InMemory(RunFolder):
    """A run folder whose rows stay in memory: hundreds of replayed studies need no Parquet."""

    def __init__(self, path: Path, machine: MachineFacts, data: DataSet) -> None:
        super().__init__(path, machine, data.facts())
        object.__setattr__(self, "kept", [])

    def rows(self) -> list[dict]:
        return list(self.kept)

    def append(self, row: dict, samples: list[dict]) -> None:
        self.kept.append(row)


@dataclasses.dataclass(frozen=True)
class Searcher:
    """One way of searching: its sampler and confirmation phase (top 0: none, pick the best measured value)."""

    sampler: str
    top: int
    rounds: int
    references: bool

    def label(self) -> str:
        if not self.top:
            return f"{self.sampler}, best measured value"
        return (f"{self.sampler} + confirmation (top {self.top}{' + 3 references' if self.references else ''}, "
                f"{self.rounds} rounds planned)")


def _experiment(space: dict, searcher: Searcher, seed: int, n_trials: int, folder: Path):
    return parse_experiment({
        "name": "replay", "modes": ["input"],
        "pipelines": {"presets": sorted({p.split(":")[0] for p in space["pipeline"]})},
        "data": {"formats": sorted({p.split(":")[1] for p in space["pipeline"]})},
        "grid": {"batch_size": [512]},
        "search": {"driver": "optuna", "n_trials": n_trials, "seed": seed, "sampler": searcher.sampler,
                   "pruner": "none", "space": space, "confirm_top": searcher.top,
                   "confirm_rounds": searcher.rounds, "enqueue_reference": searcher.references},
        "results": str(folder)})


def _replay(searcher: Searcher, seed: int, n_trials: int, space: dict, machine: MachineFacts,
            draws: dict[str, list[float]], noise_free: bool, folder: Path) -> tuple[str, int]:
    """Run one study through the real loop and planner; give its chosen configuration's key and trials measured."""
    rng = random.Random(seed)
    experiment = _experiment(space, searcher, seed, n_trials, folder)
    data = DataSet({fmt: [f"/replay/part-0.{fmt}"] for fmt in experiment["data"]["formats"]}, fingerprint="replay")
    plan = make_plan(experiment, data, machine)
    study = open_study(experiment, plan, optuna.storages.InMemoryStorage(), log=lambda _: None)

    def recorded(spec: TrialSpec) -> float:
        rates = draws[_key(record_params(spec, space))]
        return statistics.fmean(rates) if noise_free else rng.choice(rates)

    planner = OptunaPlanner(study, plan, log=lambda _: None)
    result = run_trials(planner, _InMemory(folder, machine, data), experiment, fake_measure(recorded),
                        log=lambda _: None, stream=io.StringIO())
    if searcher.top:
        params = decide(planner.race()).winner.params
    else:
        best = max((t for t in study.trials if t.values and "duplicate_of" not in t.user_attrs),
                   key=lambda t: t.values[0])
        params = best.user_attrs["settings"]
    from pipebench.search.plan import worker_trial

    return _key(record_params(worker_trial(plan, params), space)), len(result.rows)


def _line(label: str, trials: float, ratios: list[float]) -> str:
    shares = [sum(r >= goal for r in ratios) / len(ratios) for goal, _ in GOALS]
    met = all(share >= needed for share, (_, needed) in zip(shares, GOALS))
    return (f"| {label} | {trials:.1f} | {shares[0]:.0%} | {shares[1]:.0%} | {statistics.fmean(ratios):.3f} | "
            f"{'met' if met else 'not met'} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records", nargs="+", type=Path, help="files written by search_efficiency.py --save-grid")
    parser.add_argument("--seeds", type=int, default=300)
    parser.add_argument("--budget", type=int, default=24, help="search.n_trials, confirmation trials included")
    parser.add_argument("--confirm", nargs="+", default=["2:3"], metavar="TOP:ROUNDS",
                        help="confirmation phases to replay (search.confirm_top:search.confirm_rounds)")
    parser.add_argument("--no-references", action="store_true", help="race the top candidates alone")
    parser.add_argument("--noise-free", action="store_true", help="a trial's value is its configuration's mean")
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
    space, recorded_machine, draws, references = _load(args.records, not args.no_references)
    here = machine_facts()  # the recording machine's vCPUs decide the reference settings, not this one's
    machine = dataclasses.replace(here, cpu=dataclasses.replace(here.cpu, vcpus=recorded_machine["vcpus"]))
    folder = Path(tempfile.mkdtemp(prefix="pipebench-replay-"))
    means = {key: statistics.fmean(rates) for key, rates in draws.items()}
    grid = [key for key in draws if _in_space(key, space)]
    if args.no_references:
        references = {}
    choosable = grid + list(references.values())
    best = max(means[key] for key in choosable)
    top = sorted(choosable, key=means.get, reverse=True)
    print(f"{len(grid)} configurations and {len(references)} references, {sum(map(len, draws.values()))} "
          f"measurements from {len(args.records)} record(s); best mean {best:,.0f} ex/s; within 5%: "
          f"{sum(means[k] >= 0.95 * best for k in choosable)}, within 10%: {sum(means[k] >= 0.90 * best for k in choosable)}"
          f"; trial values: {'means' if args.noise_free else 'recorded measurements, drawn'}")
    for key in top[:6]:
        rates = draws[key]
        spread = statistics.stdev(rates) / statistics.fmean(rates) if len(rates) > 1 else float("nan")
        print(f"  {means[key] / best:.3f} of the best, {len(rates)} measurements, CV {spread:.0%}: {key}")
    for name, key in references.items():
        print(f"  reference {name}: {means[key] / best:.3f} of the best, {len(draws[key])} measurements")
    print(f"\n{args.seeds} seeds, budget {args.budget} trials (confirmation trials included)\n")
    print("| search | trials measured (mean) | ≥ 0.95·best | ≥ 0.90·best | mean ratio | G2 (67% / 90%) |")
    print("|---|---|---|---|---|---|")
    searchers = [Searcher("tpe", int(top_k), int(rounds), not args.no_references)
                 for top_k, rounds in (spec.split(":") for spec in args.confirm)]
    searchers += [Searcher("random", 0, 3, False), Searcher("tpe", 0, 3, False)]
    for searcher in searchers:
        picked = [_replay(searcher, seed, args.budget, space, machine, draws, args.noise_free, folder)
                  for seed in range(args.seeds)]
        print(_line(searcher.label(), statistics.fmean(n for _, n in picked), [means[k] / best for k, _ in picked]),
              flush=True)
    rng = random.Random(0)
    once = []
    for _ in range(args.seeds):
        measured = {key: rng.choice(draws[key]) for key in grid}
        once.append(means[max(measured, key=measured.get)] / best)
    print(_line("whole grid, measured once, its maximum", len(grid), once))


if __name__ == "__main__":
    main()
