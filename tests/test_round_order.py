"""One round order (pipebench.measure.round_order) for every interleaved measurement, and every caller takes it.

Each caller is run with its `round_order` replaced by a plain, recognisable order (reversed on odd rounds): a
caller that shuffled on its own again would not follow it. A scan of the sources catches a new shuffle."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from pipebench.measure.round_order import round_order

ROOT = Path(__file__).resolve().parents[1]
#: The only shuffles outside round_order: what a pipeline reads, not the order of a measurement.
DATA_SHUFFLES = {"pipebench/sources/pipe_emulator.py": "ShuffleConfig's file order per epoch",
                 "pipebench/synth.py": "synthetic feature weights",
                 "benchmarks/hostile_inputs.py": "random libsvm lines",
                 "benchmarks/search_replay.py": "replayed draws dealt out per seed, not a measuring order"}


def _recognisable(items, round_index, seed):
    """A stand-in order: as given on even rounds, reversed on odd ones."""
    return list(items)[::-1] if round_index % 2 else list(items)


def test_a_round_order_is_a_permutation_fixed_by_seed_and_round_alone():
    names = [f"c{i}" for i in range(8)]
    first = round_order(names, 0, "fingerprint")
    assert sorted(first) == names and first == round_order(tuple(names), 0, "fingerprint")
    assert len({tuple(round_order(names, r, "fingerprint")) for r in range(4)}) > 1, "each round its own order"
    assert round_order(names, 0, "another") != first, "the seed names what is measured"
    assert round_order(range(3), 2, 7) == round_order([0, 1, 2], 2, "7"), "a seed is taken as its text"
    # pinned: the order is the same in every process and Python (a text seed is hashed with SHA-512)
    assert round_order("abcdef", 1, "pin") == ["f", "e", "a", "b", "d", "c"]


def test_no_module_shuffles_a_measurement_on_its_own():
    found = []
    for path in sorted([*ROOT.glob("pipebench/**/*.py"), *ROOT.glob("benchmarks/*.py")]):
        name = str(path.relative_to(ROOT))
        if name == "pipebench/measure/round_order.py" or name in DATA_SHUFFLES:
            continue
        if re.search(r"random\.Random\(|\brandom\.(shuffle|sample)\(|\brng\.(shuffle|sample)\(", path.read_text()):
            found.append(name)
    assert found == [], "shuffle through pipebench.measure.round_order (or list a data shuffle in DATA_SHUFFLES)"


def test_the_grid_measures_each_repeat_in_the_round_order(tmp_path, monkeypatch):
    from test_loop import _data, _experiment

    from pipebench.config import parse_experiment
    from pipebench.search import grid

    seeds = []
    monkeypatch.setattr(grid, "round_order", lambda items, r, seed: seeds.append(seed) or _recognisable(items, r, seed))
    experiment = parse_experiment({**_experiment(tmp_path).resolved, "grid": {"batch_size": [16, 32, 64]},
                                   "measurement": {"repeats": 2}})
    planned = grid.trials(experiment, _data(tmp_path))
    assert [t.batch_size for t in planned] == [16, 32, 64, 64, 32, 16]
    assert seeds == [experiment.fingerprint()] * 2


def test_capacity_measures_each_round_in_the_round_order(monkeypatch):
    from test_capacity_profile import BASE, LIMITS, SPEC, _outcome

    from pipebench.capacity import profile
    from pipebench.pipeline.prefixes import prefixes
    from pipebench.pinning import Pinning

    monkeypatch.setattr(profile, "round_order", _recognisable)
    pinned = [profile.PinnedPrefix(Pinning((0,)), p) for p in prefixes(SPEC)]
    seen = []

    def measure(trial, folder, limits, pinning):
        seen.append(trial.prefix_stages)
        return _outcome(trial)

    profile.measure_rounds(BASE, pinned, 2, LIMITS, "here", log=lambda text: None, measure=measure)
    stages = [p.prefix.end for p in pinned]
    assert seen == stages + stages[::-1]


def test_sharding_measures_each_round_in_the_round_order(monkeypatch):
    from pipebench.sharding import cluster

    monkeypatch.setattr(cluster, "round_order", _recognisable)
    assert cluster.measuring_order(["a", "b", "c"], 2, "cfg/2") == [(0, "a"), (0, "b"), (0, "c"),
                                                                    (1, "c"), (1, "b"), (1, "a")]


def test_a_train_trials_arms_alternate_in_the_round_order(monkeypatch):
    from test_windows import M, _arms

    from pipebench.measure import windows

    monkeypatch.setattr(windows, "round_order", _recognisable)
    found = windows.measure(_arms([0.5]), dataclasses.replace(M, windows=4, max_windows=4), seed="trial")
    assert [w.arm for w in found["windows_measured"]] == ["train", "synthetic", "synthetic", "train"] * 2


@pytest.mark.parametrize("paired", [False, True])
def test_diagnose_rounds_visit_the_arms_in_the_round_order(monkeypatch, paired):
    from test_rounds_paired import _arms

    from pipebench.measure import rounds

    monkeypatch.setattr(rounds, "round_order", _recognisable)
    timeline: list[str] = []
    base, *others = _arms(["base", "p0", "p1", "p2"], timeline)
    arms = [base, *others] if not paired else others
    rounds.calibrate([base, *others])
    visited = []
    for arm in arms:
        timed = arm.timed
        arm.timed = lambda seconds, index, arm=arm, timed=timed: (visited.append(arm.name), timed(seconds, index))[1]
    if paired:
        rounds.paired_rounds(base, others, rounds=2, window_sec=0.001, settle_sec=0.0, settle_examples={}, seed="d")
        assert visited == ["p0", "p1", "p2", "p2", "p1", "p0"]
    else:
        rounds.interleaved_rounds(arms, rounds=2, window_sec=0.001, settle_sec=0.0, settle_examples={}, seed="d")
        assert visited == ["base", "p0", "p1", "p2", "p2", "p1", "p0", "base"]


def test_a_confirmation_round_is_enqueued_in_the_round_order(monkeypatch):
    import optuna

    from pipebench.search import slots

    monkeypatch.setattr("pipebench.measure.round_order.round_order", _recognisable)
    study = optuna.create_study(storage=optuna.storages.InMemoryStorage())
    contenders = {name: SimpleNamespace(params={"x": i}, configuration_id=name) for i, name in enumerate("abc")}
    slots.enqueue_round(study, 1, ["a", "b", "c"], contenders, "study")
    assert [t.user_attrs.get(slots.CONTENDER) for t in study.get_trials(deepcopy=False)] == ["c", "b", "a"]
