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
(`--noise-free` uses the mean). A confirmation round replays one recorded interleaved round for every
contender the record measured in rounds (`round_values`), as the live race measures its contenders side
by side in each round; other draws are independent. Drawing the race's rounds independently too (the
replay before 2026-11-23) throws the pairing away and overstates the race's noise. The chosen configuration is the confirmed winner; it is judged by its
configuration's mean over all its recorded measurements, against the best such mean among the
configurations the search could return (the space's and the references').

Beside it: random search at the same budget, one measurement per trial, picking the best measured
value (the real loop and planner with the random sampler and no confirmation phase), and the whole
grid measured once, picking its maximum. Goal (G2): with ≤ 24 trials the winner is ≥ 0.95·best in
≥ 67% of seeds and ≥ 0.90·best in ≥ 90%. Not replayed: pruning (pruned trials' windows are not
recorded; the median pruner only stops trials, it does not choose them).

    python benchmarks/search_replay.py FILE [FILE ...] [--seeds 300] [--budget 24]
        [--confirm TOP:ROUNDS ...] [--noise-free] [--unpaired]
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
from pipebench.results.trial_row import TrialRow
from pipebench.search.confirm import decide
from pipebench.search.loop import run_trials
from pipebench.search.optuna_driver import OptunaPlanner, open_study
from pipebench.search import slots
from pipebench.search.plan import make_plan, worker_trial
from pipebench.testing import fake_measure
from search_efficiency import record_params

GOALS = ((0.95, 0.67), (0.90, 0.90))  # (share of the best, share of seeds that must reach it)


def _load(paths: list[Path], need_references: bool) -> tuple[dict, dict, dict[str, list[float]], dict[str, str],
                                                          dict[str, list[float]]]:
    """Give the space, the recording machine, the measurements per configuration, the references' keys and
    the interleaved rounds: for each configuration measured in them, its values in round order (the first
    record that has rounds; rounds of different records were not measured side by side)."""
    space, machine, draws, references, rounds = None, None, {}, {}, {}
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
        if not rounds:
            rounds = {_key(c["params"]): c["examples_per_sec"][-c["round_values"]:]
                      for c in recorded["configurations"] if c.get("round_values")}
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
    return space, machine, draws, references, rounds


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

    def rows(self) -> list[TrialRow]:
        return list(self.kept)

    def append(self, row: TrialRow, samples: list[dict]) -> None:
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
            draws: dict[str, list[float]], rounds: dict[str, list[float]], noise_free: bool,
            folder: Path) -> tuple[str, int, set[str], set[str]]:
    """Run one study through the real loop and planner; give its chosen configuration's key, the trials
    measured, the configurations its exploration measured and those it raced."""
    rng = random.Random(seed)
    # Confirmation round r replays one recorded round for every contender measured in rounds, so the
    # race keeps the pairing it has live (common drift in both sides); the recorded rounds are dealt
    # out in a random order per seed, without replacement while they last.
    dealt = rng.sample(range(min(map(len, rounds.values()), default=0)), k=min(map(len, rounds.values()), default=0))
    experiment = _experiment(space, searcher, seed, n_trials, folder)
    data = DataSet({fmt: [f"/replay/part-0.{fmt}"] for fmt in experiment["data"]["formats"]}, fingerprint="replay")
    plan = make_plan(experiment, data, machine)
    study = open_study(experiment, plan, optuna.storages.InMemoryStorage(), log=lambda _: None)

    def recorded(spec: TrialSpec) -> float:
        key = _key(record_params(spec, space))
        if noise_free:
            return statistics.fmean(draws[key])
        if spec.repeat >= 1 and key in rounds and dealt:  # a confirmation round
            return rounds[key][dealt[(spec.repeat - 1) % len(dealt)]]
        return rng.choice(draws[key])

    planner = OptunaPlanner(study, plan, log=lambda _: None)
    result = run_trials(planner, _InMemory(folder, machine, data), experiment, fake_measure(recorded),
                        log=lambda _: None, stream=io.StringIO())
    def key_of(params: dict) -> str:
        return _key(record_params(worker_trial(plan, params), space))

    explored = {key_of(t.user_attrs[slots.SETTINGS]) for t in study.trials
                if t.values and slots.round_of(t) is None and not slots.is_duplicate(t)}
    raced: set[str] = set()
    if searcher.top:
        race = planner.race()
        params = decide(race).winner.params
        raced = {key_of(contender.params) for contender in race.contenders.values()}
    else:
        best = max((t for t in study.trials if t.values and not slots.is_duplicate(t)), key=lambda t: t.values[0])
        params = best.user_attrs[slots.SETTINGS]
    return key_of(params), len(result.rows), explored, raced


def _line(label: str, trials: float, ratios: list[float], misses: str = "") -> str:
    shares = [sum(r >= goal for r in ratios) / len(ratios) for goal, _ in GOALS]
    met = all(share >= needed for share, (_, needed) in zip(shares, GOALS))
    return (f"| {label} | {trials:.1f} | {shares[0]:.0%} | {shares[1]:.0%} | {statistics.fmean(ratios):.3f} | "
            f"{'met' if met else 'not met'} | {misses} |")


def _misses(picked: list[tuple[str, int, set[str], set[str]]], means: dict[str, float], best: float) -> str:
    """Give where the picks below 0.90·best went wrong: no such configuration explored, explored but not
    raced, or raced and lost (for a search without a race: explored, not the best measured value)."""
    good = {key for key, mean in means.items() if mean >= 0.90 * best}
    missed = [(explored, raced) for key, _, explored, raced in picked if key not in good]
    unexplored = sum(not explored & good for explored, _ in missed)
    lost = sum(bool(raced & good) for _, raced in missed)
    return f"{unexplored} / {len(missed) - unexplored - lost} / {lost}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records", nargs="+", type=Path, help="files written by search_efficiency.py --save-grid")
    parser.add_argument("--seeds", type=int, default=300)
    parser.add_argument("--budget", type=int, default=24, help="search.n_trials, confirmation trials included")
    parser.add_argument("--confirm", nargs="+", default=["2:3"], metavar="TOP:ROUNDS",
                        help="confirmation phases to replay (search.confirm_top:search.confirm_rounds)")
    parser.add_argument("--no-references", action="store_true", help="race the top candidates alone")
    parser.add_argument("--noise-free", action="store_true", help="a trial's value is its configuration's mean")
    parser.add_argument("--unpaired", action="store_true",
                        help="draw the confirmation rounds independently too (throws the race's pairing away)")
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
    space, recorded_machine, draws, references, rounds = _load(args.records, not args.no_references)
    if args.unpaired:
        rounds = {}
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
          f"; trial values: {'means' if args.noise_free else 'recorded measurements, drawn'}"
          + ("" if args.noise_free else f"; confirmation rounds: {'recorded rounds, paired' if rounds else 'drawn independently'}"))
    for key in top[:6]:
        rates = draws[key]
        spread = statistics.stdev(rates) / statistics.fmean(rates) if len(rates) > 1 else float("nan")
        print(f"  {means[key] / best:.3f} of the best, {len(rates)} measurements, CV {spread:.0%}: {key}")
    for name, key in references.items():
        print(f"  reference {name}: {means[key] / best:.3f} of the best, {len(draws[key])} measurements")
    print(f"\n{args.seeds} seeds, budget {args.budget} trials (confirmation trials included)\n")
    print("| search | trials measured (mean) | ≥ 0.95·best | ≥ 0.90·best | mean ratio | G2 (67% / 90%) | misses "
          "< 0.90: never explored / explored, not raced (not picked) / raced, lost |")
    print("|---|---|---|---|---|---|---|")
    searchers = [Searcher("tpe", int(top_k), int(planned), not args.no_references)
                 for top_k, planned in (spec.split(":") for spec in args.confirm)]
    searchers += [Searcher("random", 0, 3, False), Searcher("tpe", 0, 3, False)]
    for searcher in searchers:
        picked = [_replay(searcher, seed, args.budget, space, machine, draws, rounds, args.noise_free, folder)
                  for seed in range(args.seeds)]
        print(_line(searcher.label(), statistics.fmean(n for _, n, _, _ in picked),
                    [means[k] / best for k, _, _, _ in picked], _misses(picked, means, best)), flush=True)
    rng = random.Random(0)
    once = []
    for _ in range(args.seeds):
        measured = {key: rng.choice(draws[key]) for key in grid}
        once.append(means[max(measured, key=measured.get)] / best)
    print(_line("whole grid, measured once, its maximum", len(grid), once, "—"))


if __name__ == "__main__":
    main()
