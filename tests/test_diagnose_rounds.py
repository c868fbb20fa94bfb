"""Rounds in one worker (pipebench.diagnose.rounds): every arm measured each round, pairs side by side in ABBA
order, every iterator released after its window. Fake loops, no TensorFlow; nothing here reads a rate."""
from __future__ import annotations

from pipebench.diagnose.rounds import calibrate, interleaved_rounds, paired_rounds
from pipebench.measure.windows import Arm


def _arms(names, timeline):
    made = []

    def arm(name):
        def loop(iterator, steps):
            timeline.append(name)
            return steps, 0.0
        return Arm(name, lambda: object(), loop)
    for name in names:
        made.append(arm(name))
    return made


def test_paired_rounds_put_each_arm_beside_the_base_in_abba_order():
    base, *others = _arms(["original", "a", "b"], [])
    calibrate([base, *others])
    order: list[str] = []
    for arm in (base, *others):
        timed = arm.timed
        arm.timed = lambda seconds, index, arm=arm, timed=timed: (order.append(arm.name), timed(seconds, index))[1]
    pairs = paired_rounds(base, others, rounds=4, window_sec=0.001, settle_sec=0.0, settle_examples={}, seed=3)
    assert {name: len(found) for name, found in pairs.items()} == {"a": 4, "b": 4}
    assert all(w.arm == "original" and v.arm == name for name, found in pairs.items() for w, v in found)
    windows = [order[i:i + 2] for i in range(0, len(order), 2)]
    assert len(windows) == 8 and all("original" in pair and len(set(pair)) == 2 for pair in windows), \
        "each window of an arm is right beside one of the base"
    firsts = [pair[0] for pair in windows]
    assert "original" in firsts and set(firsts) - {"original"}, "the base goes first in some pairs, second in others"
    assert all(arm._iterator is None for arm in (base, *others)), "every iterator released after its window"


def test_interleaved_rounds_measure_every_arm_once_a_round():
    timeline: list[str] = []
    arms = _arms(["p0", "p1", "p2"], timeline)
    calibrate(arms)
    found = interleaved_rounds(arms, rounds=3, window_sec=0.001, settle_sec=0.0, settle_examples={}, seed=1)
    assert {name: [w.round for w in windows] for name, windows in found.items()} == \
        {"p0": [0, 1, 2], "p1": [0, 1, 2], "p2": [0, 1, 2]}
