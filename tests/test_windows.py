"""Rounds inside a worker, with loops that stand in for TensorFlow: alternation, settle windows, the
adaptive stop and its cap. The loops run on a clock of their own (FakeClock: a call of N steps takes N ms of
it, nothing sleeps), so the rounds decide the same way on any machine, however fast or loaded; nothing here
asserts a duration."""
from __future__ import annotations

import dataclasses
import itertools
import time

import pytest

from pipebench.errors import PipebenchError
from pipebench.measure.windows import Arm, Timing, measure

M = Timing(warmup_max_sec=0.05, steady_cv_pct=100.0, window_sec=0.01, windows=3, max_windows=8)
STEP_SEC = 0.001


class FakeClock:
    """Seconds that pass only when a loop says its call took them."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def take(self, steps: int) -> float:
        """A call of `steps` steps: STEP_SEC each; give the seconds it took."""
        self.now += STEP_SEC * steps
        return STEP_SEC * steps


def _loop(clock: FakeClock, shares):
    """A loop whose calls take 1 ms a step and say they waited `share` of that time, the shares taken in turn.

    Calibration grows a call past the 10 ms windows, so each window is one call and takes one share."""
    turn = itertools.cycle(shares)

    def loop(iterator, steps):
        return 10 * steps, clock.take(steps) * next(turn)
    return loop


def _arms(train_shares):
    clock = FakeClock()
    return [Arm("train", lambda: None, _loop(clock, train_shares), clock=clock),
            Arm("synthetic", lambda: None, _loop(clock, [0.0]), clock=clock)]


def test_a_decided_waiting_share_stops_at_the_minimum_rounds():
    found = measure(_arms([0.01]), M, seed=1, basis="waiting")
    assert found["rounds"] == 3 and found["rounds_cap_hit"] is False
    arms = [w.arm for w in found["windows_measured"]]
    assert arms.count("train") == arms.count("synthetic") == 3


def test_an_undecided_share_measures_more_rounds_and_says_when_the_cap_was_hit():
    """Windows wait 2% to 9% of their time, around 5%: the interval keeps straddling the threshold."""
    found = measure(_arms([0.02, 0.09, 0.05, 0.08, 0.03]), M, seed=1, basis="waiting")
    assert found["rounds"] == 8 and found["rounds_cap_hit"] is True


def _paired(train_share_of_ceiling, waited: float):
    """A train arm making the given shares of the synthetic arm's examples in the same time, in turn, and waiting
    `waited` of its time; the synthetic arm makes a million examples a second."""
    clock = FakeClock()
    turn = itertools.cycle(train_share_of_ceiling)

    def train(iterator, steps):
        took = clock.take(steps)
        return round(1_000_000 * took * next(turn)), took * waited

    def synthetic(iterator, steps):
        return round(1_000_000 * clock.take(steps)), 0.0
    return [Arm("train", lambda: None, train, clock=clock), Arm("synthetic", lambda: None, synthetic, clock=clock)]


def test_rounds_follow_the_basis_the_verdict_reads():
    """A CPU trainer's verdict reads the slowdown: the step barely waits (1%) yet trains at half its ceiling, which
    decides at once; a slowdown wavering around 5% keeps the rounds going, however decided the waiting share is."""
    half = measure(_paired([0.5], 0.01), M, seed=1, basis="slowdown")
    assert half["rounds"] == 3 and half["rounds_cap_hit"] is False
    wavering = [0.98, 0.91, 0.95, 0.92, 0.97]  # slowdowns of 2% to 9%, around 5%
    found = measure(_paired(wavering, 0.01), M, seed=1, basis="slowdown")
    assert found["rounds"] == 8 and found["rounds_cap_hit"] is True
    assert measure(_paired(wavering, 0.01), M, seed=1, basis="waiting")["rounds"] == 3


def test_a_busy_machine_stops_the_rounds_at_the_minimum():
    """An undecided verdict measured while other processes were busy stops at `windows`: it stays inconclusive
    whatever its rounds. The `busy` reading is asked only once the minimum is measured."""
    wavering = [0.98, 0.91, 0.95, 0.92, 0.97]
    asked = []

    def busy():
        asked.append(True)
        return True
    found = measure(_paired(wavering, 0.01), M, seed=1, basis="slowdown", busy=busy)
    assert found["rounds"] == 3 and found["rounds_cap_hit"] is False and len(asked) == 1
    quiet = measure(_paired(wavering, 0.01), M, seed=1, basis="slowdown", busy=lambda: False)
    assert quiet["rounds"] == 8 and quiet["rounds_cap_hit"] is True


@pytest.mark.slow
def test_the_others_meter_leaves_out_this_process_tree():
    """A child this process started and waited for is its tree's work, not a neighbour's: over the same second,
    the meter that counts the tree as its own reads less than the one that counts this process alone by the CPU
    the child used. (On a loaded machine the child gets less than a vCPU, and the host's total cannot pass 200%
    on two: the difference is the child's own CPU, whatever else the machine does meanwhile.)"""
    import os
    import subprocess
    import sys

    from pipebench.measure.cpu_clock import process_tree_cpu_sec
    from pipebench.measure.sampler import OthersCpu

    tree, alone = OthersCpu(process_tree_cpu_sec), OthersCpu()
    before, start = os.times(), time.monotonic()
    subprocess.run([sys.executable, "-c", "import time\nend = time.time() + 1\nwhile time.time() < end: pass"],
                   check=True)
    after = os.times()
    gap = alone.pct() - tree.pct()
    elapsed = time.monotonic() - start
    child = 100.0 * (after.children_user - before.children_user + after.children_system - before.children_system)
    child /= elapsed
    assert child > 20.0, f"the child ran ({child:.0f}% of a vCPU)"
    assert gap == pytest.approx(child, abs=15.0), f"the meters differ by {gap:.0f}%, the child used {child:.0f}%"


def test_rounds_alternate_the_arms_in_a_seeded_random_order():
    orders = []
    for seed in (1, 2):
        windows = measure(_arms([0.5]), dataclasses.replace(M, windows=6, max_windows=6), seed=seed)["windows_measured"]
        orders.append([w.arm for w in windows])
    assert all(sorted(o[i:i + 2]) == ["synthetic", "train"] for o in orders for i in range(0, 12, 2))
    assert orders[0] != orders[1], "the order is random per round"
    assert orders[0] == [w.arm for w in measure(_arms([0.5]), dataclasses.replace(M, windows=6, max_windows=6),
                                                seed=1)["windows_measured"]]


def test_an_input_trial_has_one_arm_and_no_waiting():
    clock = FakeClock()
    found = measure([Arm("input", lambda: None, _loop(clock, [0.0]), clock=clock)], M, seed=0)
    assert found["rounds"] == 3 and {w.arm for w in found["windows_measured"]} == {"input"}
    assert all(w.waited_sec is None for w in found["windows_measured"])


def test_an_empty_pipeline_is_a_clear_error():
    arm = Arm("input", lambda: None, lambda iterator, steps: (0, 0.0), clock=FakeClock())
    with pytest.raises(PipebenchError, match="yields no examples"):
        measure([arm], M, seed=0)


def _tracking_arms(releasable: bool):
    """A train arm whose loop records, per call, which iterator it ran on (a fresh one per make_iterator)."""
    clock = FakeClock()
    made, used = itertools.count(), []
    step = _loop(clock, [0.0])

    def loop(iterator, steps):
        used.append(iterator)
        return step(iterator, steps)
    train = Arm("train", lambda: next(made), loop, releasable=releasable, clock=clock)
    return [train, Arm("synthetic", lambda: None, _loop(clock, [0.0]), clock=clock)], used


def test_the_pipeline_does_not_run_while_the_synthetic_arm_is_timed():
    """The train arm's iterator is dropped before a synthetic window that follows a train window (its
    threads stop, its buffers are not refilled meanwhile); the next train window runs on a fresh one."""
    arms, used = _tracking_arms(releasable=True)
    windows = measure(arms, dataclasses.replace(M, windows=6, max_windows=6), seed=1)["windows_measured"]
    order = [w.arm for w in windows]
    released = [i for i, pair in enumerate(zip(order, order[1:])) if pair == ("train", "synthetic")]
    assert released
    trained_again = sum(1 for i in released if "train" in order[i + 2:])  # the last release may end the trial
    assert len(set(used)) >= 1 + trained_again, "every train window after a synthetic one starts a fresh iterator"
    assert all(w.idle_before_sec is None for w in windows), "a released pipeline needs no wait"


def test_a_cached_pipeline_keeps_its_iterator_and_the_synthetic_window_waits_for_idle():
    arms, used = _tracking_arms(releasable=False)
    windows = measure(arms, dataclasses.replace(M, windows=6, max_windows=6), seed=1)["windows_measured"]
    assert len(set(used)) == 1, "a fresh iterator would throw away a partly filled cache"
    order = [w.arm for w in windows]
    waited = [w for prev, w in zip(order, windows[1:]) if prev == "train" and w.arm == "synthetic"]
    assert waited and all(w.idle_before_sec is not None and w.idle_before_sec >= 0 for w in waited)
    assert all(w.idle_before_sec is None for w in windows if w.arm == "train")


def test_calibration_does_not_time_the_first_call_which_traces_the_loop():
    """A first call slower than a whole call (tracing, the pipeline starting) once left one step per call, so
    the call's own dispatch counted as the pipeline's; the steps grow past it, even past the warm-up deadline."""
    clock, calls = FakeClock(), []

    def loop(iterator, steps):
        clock.now += 0.3 if not calls else STEP_SEC * steps  # the first call traces; then 1 ms a step
        calls.append(steps)
        return 10 * steps, 0.0

    found = measure([Arm("input", lambda: None, loop, clock=clock)],
                    dataclasses.replace(M, warmup_max_sec=0.05, windows=1), seed=1)
    assert calls[0] == 1 and found["steps_per_call"] >= 8, calls


def test_a_spent_iterator_is_dropped_off_the_measuring_thread():
    """Dropping a TensorFlow iterator waits for its threads (seconds with autotune): at the end of the data the
    arm starts the next epoch's iterator and leaves the spent one to a thread of its own."""
    import threading

    dropped: dict[int, int] = {}
    made = itertools.count()

    class Spent:
        def __init__(self) -> None:
            self.number = next(made)

        def __del__(self) -> None:
            dropped[self.number] = threading.get_ident()

    def loop(iterator: Spent, steps: int) -> tuple[int, float]:
        return (0, 0.0) if iterator.number == 0 else (steps, 0.0)  # the first epoch is already over

    arm = Arm("input", Spent, loop, clock=FakeClock())
    assert arm.call() == (1, 0.0) and arm.epochs_renewed == 1
    arm.timed(0.0, 0)  # a window starts once the drops of earlier ones have finished
    assert 0 in dropped, "the spent iterator was dropped before the next window"
    assert dropped[0] != threading.get_ident(), "not on the thread that measures"
    assert 1 not in dropped, "the new epoch's iterator is the arm's"


def test_a_second_train_arm_is_timed_beside_the_same_ceiling():
    """pipebench diagnose times the rewrite's train arm (`train:rewritten`) in the same rounds as the original's and
    the ceiling: the train/ceiling figures of one train arm read only its own windows beside the ceiling's, and
    the figures of all three read the train and synthetic pairs of each round."""
    from pipebench.measure.figures import figures

    clock = FakeClock()
    arms = [Arm("train", lambda: None, _loop(clock, [0.5]), clock=clock),
            Arm("train:rewritten", lambda: None, _loop(clock, [0.01]), clock=clock),
            Arm("synthetic", lambda: None, _loop(clock, [0.0]), clock=clock)]
    found = measure(arms, dataclasses.replace(M, windows=3, max_windows=3), seed=1)
    windows = found["windows_measured"]
    assert [w.arm for w in windows].count("train:rewritten") == 3 and found["rounds"] == 3
    original = figures([w for w in windows if w.arm in ("train", "synthetic")])
    rewritten = figures([dataclasses.replace(w, arm="train") if w.arm == "train:rewritten" else w
                         for w in windows if w.arm in ("train:rewritten", "synthetic")])
    assert original.waiting.mean > 0.4 and rewritten.waiting.mean < 0.05
    assert figures(windows).slowdown is not None, "three arms in a round: the pairs read train and synthetic"


def test_no_train_arms_pipeline_runs_beside_another_arms_window():
    """Two train arms (pipebench diagnose's original and rewrite) in one round: the one timed first is released
    before the other's settle and timed windows, as before the ceiling's (its buffers would refill beside them),
    the warm-up's too."""
    clock = FakeClock()
    alive_beside: list[str] = []

    class Watched(Arm):
        def timed(self, seconds, round_index):
            if round_index >= 0:  # the rounds' settle and timed windows (the warm-up's slices are -1)
                alive_beside.extend(f"{other.name} beside {self.name}" for other in arms
                                    if other is not self and other.name.startswith("train")
                                    and other._iterator is not None)
            return super().timed(seconds, round_index)

    arms = [Watched("train", object, _loop(clock, [0.5]), clock=clock),
            Watched("train:rewritten", object, _loop(clock, [0.01]), clock=clock),
            Watched("synthetic", object, _loop(clock, [0.0]), clock=clock)]
    found = measure(arms, dataclasses.replace(M, windows=4, max_windows=4), seed=1)
    orders = [[w.arm for w in found["windows_measured"] if w.round == r] for r in range(4)]
    assert any(abs(o.index("train") - o.index("train:rewritten")) == 1 for o in orders), orders
    assert alive_beside == []



def test_train_arms_timed_together_each_leave_the_rounds_once_their_verdict_is_decided():
    """A warm worker's train trials share one ceiling's rounds (`train:ID` each): past the minimum, an arm whose
    verdict is decided leaves the rounds and the others go on beside the ceiling, up to the cap; each trial's record
    reads its own arm's windows beside the ceiling's."""
    from pipebench.measure.windows import arm_fields

    def arms(second_shares):
        clock = FakeClock()
        return [Arm("train:a", lambda: None, _loop(clock, [0.01]), clock=clock),
                Arm("train:b", lambda: None, _loop(clock, second_shares), clock=clock),
                Arm("synthetic", lambda: None, _loop(clock, [0.0]), clock=clock)]

    decided = measure(arms([0.6]), M, seed=1, basis="waiting")
    assert decided["rounds"] == 3 and decided["rounds_cap_hit"] is False
    together = arms([0.02, 0.09, 0.05, 0.08, 0.03])  # the second's share keeps straddling 5%
    found = measure(together, M, seed=1, basis="waiting")
    assert found["rounds"] == 8 and found["rounds_cap_hit"] is True
    first, second = (arm_fields(found, arm, "waiting") for arm in together[:2])
    assert first["rounds_cap_hit"] is False and second["rounds_cap_hit"] is True, "the cap hit only the undecided"
    assert (first["rounds"], second["rounds"]) == (3, 8), "the decided arm left after the minimum"
    for fields, arm in zip((first, second), together):
        assert {w.arm for w in fields["windows_measured"]} == {"train", "synthetic"}
        assert fields["windows"] == len(fields["window_rates"]) == fields["rounds"]
        assert fields["steps_per_call"] == arm.steps
    synthetic = [w for w in found["windows_measured"] if w.arm == "synthetic"]
    assert len(synthetic) == 8 and [w for w in second["windows_measured"] if w.arm == "synthetic"] == synthetic
    assert [w for w in first["windows_measured"] if w.arm == "synthetic"] == synthetic[:3], "the ceiling beside it"
    # the machine's business is read over the rounds each arm was timed in: a trial decided in quiet rounds is not
    # flagged by later ones
    assert found["windows_started_sec"] < first["windows_ended_sec"] < second["windows_ended_sec"]
    assert second["windows_ended_sec"] <= found["windows_ended_sec"]


def test_a_released_train_arm_is_calibrated_not_warmed_and_the_ceiling_warms_until_steady():
    """In paired rounds a train arm starts each window from a fresh iterator, so the warm-up's slices go to the
    ceiling (the step the process keeps warm) and to a pipeline with a cache (kept); a released pipeline is calibrated,
    then released at once, not to fill its buffers beside the others' warm-up."""
    from pipebench.measure.windows import WARMUP_SLICE_SEC

    clock = FakeClock()
    events: list[tuple[str, str]] = []

    class Watched(Arm):
        def timed(self, seconds, round_index):
            if round_index < 0 and seconds == WARMUP_SLICE_SEC:
                events.append(("slice", self.name))
            return super().timed(seconds, round_index)

        def release(self):
            events.append(("release", self.name))
            return super().release()

    arms = [Watched("train:a", lambda: None, _loop(clock, [0.01]), clock=clock),
            Watched("train:b", lambda: None, _loop(clock, [0.01]), releasable=False, clock=clock),
            Watched("synthetic", lambda: None, _loop(clock, [0.0]), clock=clock)]
    found = measure(arms, dataclasses.replace(M, warmup_max_sec=10.0, steady_cv_pct=5.0), seed=1)
    assert found["warmup_steady"] is True and arms[0].steps > 1, "calibrated"
    sliced = {name for kind, name in events if kind == "slice"}
    assert "train:a" not in sliced and {"train:b", "synthetic"} <= sliced
    assert events.index(("release", "train:a")) < events.index(("slice", "synthetic")), "released before the slices"
    alone = [Watched("train", lambda: None, _loop(clock, [0.01]), clock=clock)]
    measure(alone, dataclasses.replace(M, warmup_max_sec=10.0, steady_cv_pct=5.0), seed=1)
    assert ("slice", "train") in events, "a train arm timed alone (pairing's control) warms as before"
