"""Rounds in one worker (pipebench.measure.rounds): every arm measured each round, each right beside the base
window it is paired with, every iterator released after its window. Fake loops, no TensorFlow; nothing here reads a rate."""
from __future__ import annotations

import pytest

from pipebench.measure.rounds import base_windows, calibrate, interleaved_rounds, paired_rounds
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


@pytest.mark.parametrize("names", [["original", "a", "b"], ["original", "a", "b", "c"]])
def test_paired_rounds_put_each_arm_right_beside_the_base_window_it_is_paired_with(names):
    """Two others share one base window between them (A B A'), an odd one out has its own; which goes first
    alternates, and every pair's base window is the one timed right beside the arm's."""
    base, *others = _arms(names, [])
    calibrate([base, *others])
    timed: list = []
    for arm in (base, *others):
        timed_of = arm.timed
        arm.timed = lambda seconds, index, timed_of=timed_of: (timed.append(timed_of(seconds, index)), timed[-1])[1]
    pairs = paired_rounds(base, others, rounds=4, window_sec=0.001, settle_sec=0.0, settle_examples={}, seed=3)
    assert {name: len(found) for name, found in pairs.items()} == {name: 4 for name in names[1:]}
    per_round = -(-len(others) // 2)
    assert sum(w.arm == "original" for w in timed) == 4 * per_round, "⌈k/2⌉ base windows a round"
    assert len(base_windows(pairs)) == 4 * per_round
    position = {id(w): i for i, w in enumerate(timed)}
    for name, found in pairs.items():
        assert all(b.arm == "original" and w.arm == name and abs(position[id(b)] - position[id(w)]) == 1
                   for b, w in found), "each arm's window is right beside the base window it is paired with"
    firsts = [position[id(w)] < position[id(b)] for found in pairs.values() for b, w in found]
    assert any(firsts) and not all(firsts), "an arm goes first in some pairs, after the base in others"
    assert all(arm._iterator is None for arm in (base, *others)), "every iterator released after its window"


def test_interleaved_rounds_measure_every_arm_once_a_round():
    timeline: list[str] = []
    arms = _arms(["p0", "p1", "p2"], timeline)
    calibrate(arms)
    found = interleaved_rounds(arms, rounds=3, window_sec=0.001, settle_sec=0.0, settle_examples={}, seed=1)
    assert {name: [w.round for w in windows] for name, windows in found.items()} == \
        {"p0": [0, 1, 2], "p1": [0, 1, 2], "p2": [0, 1, 2]}


def _settles(monkeypatch) -> list[tuple[str, int]]:
    """Record each settle's arm and the rows it must read first (pipebench.measure.rounds.settle, run as it is)."""
    from pipebench.measure import rounds

    settled: list[tuple[str, int]] = []
    real_settle = rounds.settle
    monkeypatch.setattr(rounds, "settle", lambda arm, seconds, examples, steady: (
        settled.append((arm.name, examples)), real_settle(arm, seconds, examples, steady))[1])
    return settled


def test_a_kept_iterator_starts_afresh_every_few_windows_and_none_is_dropped(monkeypatch):
    """A kept iterator's autotuned prefetch buffers double what they may bank each window (Arm.restart): every
    RESTART_WINDOWS windows the arm starts a fresh one, setting the old aside for the caller to keep, and the window
    after a restart settles long enough to fill its buffers; the first window does not, since calibration read the
    kept iterator (Arm.warm: a 512,000-row shuffle was filled twice so, 26 s)."""
    from pipebench.measure import rounds

    made: list[object] = []

    def arm(name):
        return Arm(name, lambda: made.append(object()) or made[-1], lambda iterator, steps: (steps, 0.0),
                   releasable=False, start=False)
    base, other = arm("original"), arm("a")
    settled = _settles(monkeypatch)
    calibrate([base, other])
    paired_rounds(base, [other], rounds=rounds.RESTART_WINDOWS * 2, window_sec=0.001, settle_sec=0.0,
                  settle_examples={"original": 7, "a": 7}, seed=3)
    kept = base.close() + other.close()
    assert len(made) == 2 * 2, "each arm's first iterator, and a fresh one after RESTART_WINDOWS windows"
    assert sorted(map(id, kept)) == sorted(map(id, made)), "every iterator is given up by close, none dropped"
    firsts = [i for i, (name, examples) in enumerate(settled) if name == "original" and examples]
    assert [i // 2 for i in firsts] == [4], "the base fills its buffers again after a restart, not after calibrating"


def test_an_arm_whose_fresh_start_refills_large_buffers_is_not_restarted():
    """babyweight's plain loop refilled its shuffle of 512,000 rows (16 s) at every restart: an arm that does not
    restart (Arm.restarts False) keeps its one iterator through every window."""
    made: list[object] = []
    base = Arm("original", lambda: made.append(object()) or made[-1], lambda iterator, steps: (steps, 0.0),
               releasable=False, start=False)
    base.restarts = False
    other = Arm("a", lambda: object(), lambda iterator, steps: (steps, 0.0), releasable=False, start=False)
    calibrate([base, other])
    from pipebench.measure.rounds import RESTART_WINDOWS

    paired_rounds(base, [other], rounds=RESTART_WINDOWS * 3, window_sec=0.001, settle_sec=0.0, settle_examples={},
                  seed=3)
    assert len(made) == 1 and base.close() == made


def _banked_arm(banked_calls: int):
    """An arm on a fake clock whose first `banked_calls` calls read banked rows (0.01 s a call), then 0.1 s a call."""
    now = [0.0]
    left = [banked_calls]

    def loop(iterator, steps):
        now[0] += 0.01 if left[0] > 0 else 0.1
        left[0] -= 1
        return steps, 0.0
    return Arm("a", lambda: object(), loop, clock=lambda: now[0]), left


def test_settle_reads_past_banked_rows_that_come_at_a_steady_rate():
    """Rows a user's big prefetch banked come from memory at a steady rate, so the rule that waits for the rate to
    stop falling stopped inside them; with the arm's earlier windows' rate, settle reads on until the bank is gone."""
    from pipebench.measure.rounds import settle

    arm, left = _banked_arm(40)
    settle(arm, 0.05, 0)
    assert left[0] > 0, "the falling-rate rule alone stops inside the bank (this test's premise)"
    arm, left = _banked_arm(40)
    settle(arm, 0.05, 0, steady=10.0)  # its windows read 1 row per 0.1 s
    assert left[0] < 0, "with the arm's steady rate, settle drains the bank and reads on"


def test_a_window_does_not_wait_for_a_spent_iterator_to_wind_down():
    """A pass that ends in the settle hands its spent iterator to the reaper. The window used to wait for it first,
    while the arm's pipeline banked rows (real_init2winit_criteo_tsv's 256 parallel map calls: 2x its rate in the
    windows after a 1-2 s drop); a spent iterator's drop waits without working, so the window starts at once."""
    import threading
    import time

    from pipebench.measure.rounds import settle

    release, calls = threading.Event(), []

    class Spent:
        def __del__(self):
            release.wait(5.0)  # winds down until the test lets it

    def loop(iterator, steps):
        calls.append(time.perf_counter())
        return (0, 0.0) if len(calls) == 2 else (steps, 0.0)  # the second call meets the end of the pass
    arm = Arm("a", Spent, loop, start=False)
    began = time.perf_counter()
    settle(arm, 0.0, 0)
    window = arm.timed(0.01, 0)
    try:
        assert arm.epochs_renewed == 1 and window.examples > 0
        assert time.perf_counter() - began < 2.0, "the settle or the window waited for the spent iterator's wind-down"
    finally:
        release.set()


@pytest.mark.parametrize("whole_passes", [False, True])
def test_a_settle_waits_for_earlier_windows_spent_iterators_before_it_reads_the_arm(whole_passes):
    """Earlier windows' spent iterators wind down before an arm settles (what it banks meanwhile is drained there);
    without it tf1_tensors' self-check was inconclusive in both corpus runs that had none. An arm of whole passes,
    which settles nothing, still waits there, not in its window."""
    import time

    from pipebench.measure.rounds import settle
    from pipebench.measure.windows import _REAPER

    dropped, calls = [], []

    class Spent:
        def __del__(self):
            time.sleep(0.3)
            dropped.append(time.perf_counter())

    def loop(iterator, steps):
        calls.append(time.perf_counter())
        return steps, 0.0
    arm = Arm("a", object, loop, start=False)
    arm.whole_passes = whole_passes
    _REAPER.take([Spent()])
    settle(arm, 0.0, 0)
    arm.timed(0.01, 0)
    assert dropped and calls and min(calls) > dropped[0], "the arm was read before the earlier spent iterator wound down"


def test_an_arm_of_whole_passes_calibrates_with_its_warm_up_and_reads_no_pass():
    """A whole pass of real_tfrs_ranking_cache is 4 s; its calibration read one per arm only to trace the loop: with a
    warm-up (the loop traced over one element in memory), it reads none; without one, it reads one pass."""
    reads, warmed = [], []
    arm = Arm("a", lambda: object(), lambda iterator, steps: (reads.append(steps), (steps, 0.0))[1], start=False)
    arm.steps, arm.whole_passes, arm.warm_up = 11, True, lambda: warmed.append(True)
    calibrate([arm])
    assert warmed == [True] and reads == [] and arm.steps == 11
    arm.warm_up = None
    calibrate([arm])
    assert reads == [11], "one pass, not more"


def test_only_an_undecided_comparison_that_shows_a_gain_is_measured_further():
    """After the first rounds: a decided comparison stops, and so does one whose mean shows no gain (real_longmao's
    prefetch 0.71x and parallel interleave 0.79x took two more rounds each of two windows)."""
    from pipebench.measure.rounds import still_open
    from pipebench.measure.trial import Window

    def pairs(*ratios):
        return [(Window("original", i, 1000, 1.0, None), Window("a", i, int(1000 * r), 1.0, None))
                for i, r in enumerate(ratios)]

    assert still_open(pairs(1.3, 0.9, 1.2), 0.99), "ahead but undecided: more rounds"
    assert not still_open(pairs(0.8, 1.1, 0.95), 0.99), "no gain seen: stops"
    assert not still_open(pairs(3.0, 3.1, 2.9), 0.99), "decided above 1: stops"
    assert not still_open(pairs(0.5, 0.52, 0.49), 0.99), "decided below 1: stops"
    assert still_open(pairs(1.06, 1.02, 1.08), 0.99), "a small gain, undecided: more rounds"
    assert not still_open(pairs(1.06, 1.02, 1.08), 0.99, 1.10), "under the smallest gain offered: stops"


def test_a_released_arm_fills_its_buffers_before_its_first_window(monkeypatch):
    """Calibrating released a releasable arm's iterator: its first window starts afresh, so its settle reads the
    rows that fill its buffers; a kept one's does not."""
    kept = Arm("kept", lambda: object(), lambda iterator, steps: (steps, 0.0), releasable=False, start=False)
    released = Arm("released", lambda: object(), lambda iterator, steps: (steps, 0.0), start=False)
    settled = _settles(monkeypatch)
    calibrate([kept, released])
    assert kept.warm and not released.warm
    interleaved_rounds([kept, released], rounds=2, window_sec=0.001, settle_sec=0.0,
                       settle_examples={"kept": 5, "released": 5}, seed=2)
    assert [examples for name, examples in settled if name == "kept"] == [0, 0]
    assert [examples for name, examples in settled if name == "released"] == [5, 5], "released after every window"


def test_an_arm_of_whole_passes_is_calibrated_by_one_untimed_pass():
    """Its steps are a pass's elements: calibrating it reads one pass (tracing its loop) and leaves its steps as they
    are; an arm of steps doubles them until a call lasts CALL_SEC."""
    calls: dict[str, list[int]] = {"passes": [], "steps": []}

    def loop_of(name):
        return lambda iterator, steps: (calls[name].append(steps), (steps, 0.0))[1]

    passes = Arm("passes", lambda: object(), loop_of("passes"), releasable=False, start=False)
    passes.steps, passes.whole_passes = 11, True
    steps = Arm("steps", lambda: object(), loop_of("steps"), start=False)
    calibrate([passes, steps])
    assert calls["passes"] == [11] and passes.steps == 11 and passes.warm
    assert len(calls["steps"]) > 2 and steps.steps > 1, "an arm of steps doubles them"
