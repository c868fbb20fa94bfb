"""The diagnosis's time budget (pipebench.diagnose.subject): rounds past the first ones start only while they end
before the deadline, the first worker process leaving the second its reserve, and the rounds left out are said.
No TensorFlow, no clock read: the times are handed in or set far from now."""
from __future__ import annotations

import time

import pytest

from pipebench.diagnose.records import Request
from pipebench.diagnose.subject import SECOND_RESERVE_SEC, Subject, arms_within, round_sec, rounds_within


def test_rounds_within_counts_the_rounds_that_fit_at_the_cost_of_a_round():
    assert rounds_within(2, 10.0, 25.0) == 2
    assert rounds_within(2, 10.0, 15.0) == 1
    assert rounds_within(2, 10.0, 5.0) == 0
    assert rounds_within(2, 10.0, -40.0) == 0, "past the deadline: none"
    assert rounds_within(2, 0.0, 5.0) == 2, "nothing to cost them by: as asked"


def test_a_round_is_costed_by_its_visits_and_only_its_windows_grow():
    # babyweight, 2026-12-05: 1.4 s visits with half-second windows; its self-check alone beside the original
    assert round_sec(1, 1.4, 0.5) == pytest.approx(2.8), "one arm: its visit and one of the base"
    assert round_sec(1, 1.4, 0.5, longer=3) == pytest.approx(4.8), "windows 3x as long: 1 s more a visit, not 3x"
    assert round_sec(3, 1.4, 0.5) == pytest.approx(7.0), "three arms: five visits (A B A', then B C)"


def _subject(deadline: float | None, second_follows: bool, said: list[str]) -> Subject:
    subject = Subject.__new__(Subject)  # its __init__ starts TensorFlow; these steps read only the request and log
    subject.request = Request("f.py", "input_fn", {}, None, 5, 0.5, 0.2, 3.0, 100, "scratch", "progress",
                              second_follows=second_follows, deadline=deadline)
    subject.started, subject._log = time.monotonic(), said.append
    subject.second_fill_sec, subject._visits, subject.whole_passes_follow = 0.0, [0, 0.0], False
    subject.loop_fill_sec = 0.0
    subject.awake_follows = False
    return subject


def test_rounds_past_the_deadline_are_left_out_and_said():
    said: list[str] = []
    assert _subject(None, True, said)._rounds_left(2, 3, 10.0) == 2 and not said, "no deadline: every round"
    far = time.time() + 3600
    assert _subject(far, True, said)._rounds_left(2, 3, 10.0) == 2 and not said
    assert _subject(time.time() - 1, False, said)._rounds_left(2, 3, 10.0) == 0
    assert said and "rounds 4-5 not run" in said[-1] and "stays inconclusive" in said[-1]


def test_the_first_worker_leaves_the_second_its_reserve():
    said: list[str] = []
    deadline = time.time() + SECOND_RESERVE_SEC + 1000  # 1000 s left after the reserve: 10 s rounds fit
    assert _subject(deadline, True, said)._rounds_left(2, 3, 10.0) == 2
    deadline = time.time() + SECOND_RESERVE_SEC - 1  # within the reserve: the first stops, the second goes on
    assert _subject(deadline, True, said)._rounds_left(2, 3, 10.0) == 0
    assert _subject(deadline, False, said)._rounds_left(2, 3, 10.0) == 2, "the second runs to the deadline"


def test_the_first_worker_leaves_the_second_its_plain_loops_shuffle_fill_too():
    said: list[str] = []
    subject = _subject(time.time() + SECOND_RESERVE_SEC + 20, True, said)  # 20 s left after the fixed reserve
    assert subject._rounds_left(1, 3, 10.0) == 1
    subject.second_fill_sec = 15.0  # the user's shuffle buffers fill in 15 s at their mean rate: a pass's start
    assert subject._rounds_left(1, 3, 10.0) == 1, "the mean rate costs only a whole pass's start"
    subject.loop_fill_sec = 15.0  # a plain loop fills them in 15 s at the slow end: 5 s left, not a 10 s round
    assert subject._rounds_left(1, 3, 10.0) == 0 and "round 4 not run" in said[-1]


def test_a_second_worker_of_whole_passes_is_left_three_rounds_of_three_passes():
    from pipebench.diagnose.subject import EARLY_ROUNDS, WORKER_LOAD_SEC

    subject = _subject(None, True, [])
    subject.second_fill_sec = 4.8  # real_tfrs_ranking_cache's two shuffles fill in 2.3 and 2.5 s
    subject.loop_fill_sec = 5.3  # at the slow end of their rates
    assert subject.second_reserve_sec() == SECOND_RESERVE_SEC + 5.3, "windows of a repeated pipeline"
    subject.whole_passes_follow = True  # each visit a pass, its start those fills: 5 + 9 * 4.8 = 48.2 s
    assert subject.second_reserve_sec() == WORKER_LOAD_SEC + EARLY_ROUNDS * 3 * 4.8 > SECOND_RESERVE_SEC + 4.8
    subject.second_fill_sec, subject.loop_fill_sec = 0.5, 0.6  # short passes: the fixed reserve still
    assert subject.second_reserve_sec() == SECOND_RESERVE_SEC + 0.6


def test_the_first_worker_leaves_the_second_the_visits_of_its_arm_with_cores_kept_awake():
    from pipebench.diagnose.subject import AWAKE_VISITS, EARLY_ROUNDS, WORKER_LOAD_SEC

    subject = _subject(None, True, [])
    subject.loop_fill_sec, subject._visits = 15.0, [20, 28.0]  # 1.4 s a visit, as real_tda_babyweight_make_csv's
    assert subject.second_reserve_sec() == SECOND_RESERVE_SEC + 15.0
    subject.awake_follows = True  # its calibration, then itself and a base window of its own in each first round
    assert AWAKE_VISITS == 1 + 2 * EARLY_ROUNDS
    assert subject.second_reserve_sec() == pytest.approx(SECOND_RESERVE_SEC + 15.0 + AWAKE_VISITS * 1.4)
    subject._visits = [0, 0.0]
    assert subject.second_reserve_sec() == SECOND_RESERVE_SEC + 15.0, "no visit timed yet: nothing to cost it by"
    subject.whole_passes_follow, subject.second_fill_sec, subject.loop_fill_sec = True, 4.8, 5.3
    subject.awake_follows = False  # whole passes: the awake arm is not run
    assert subject.second_reserve_sec() == WORKER_LOAD_SEC + EARLY_ROUNDS * 3 * 4.8


def test_arms_within_keeps_the_arms_whose_first_rounds_fit_one_at_least():
    # k arms: calibration k + 1 visits, then each of 3 rounds k + ceil(k/2) visits, at 1 s a visit
    assert arms_within(4, 3, 1.0, 23.0) == 4  # 5 + 3 * 6
    assert arms_within(4, 3, 1.0, 22.9) == 3  # 4 + 3 * 5 = 19
    assert arms_within(4, 3, 1.0, 13.0) == 2  # 3 + 3 * 3 = 12
    assert arms_within(4, 3, 1.0, -5.0) == 1, "past the deadline: the best one still"
    assert arms_within(4, 3, None, 0.0) == 4 and arms_within(4, 3, 1.0, None) == 4, "nothing to cost them by: all"


def test_visits_are_costed_from_those_timed():
    subject = _subject(None, True, [])
    assert subject.visit_sec is None
    subject.count_visits(18, 27.0)
    subject.count_visits(6, 9.0)
    assert subject.visit_sec == 1.5


class _Arm:
    """An arm as _within_budget sees it: a name, and an iterator it gives up when left out (none here)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def close(self) -> list:
        return []


def test_the_rewrites_that_could_gain_the_most_are_measured_first_when_not_all_fit():
    from pipebench.diagnose.ceiling import GainCeiling, most_gain
    from pipebench.diagnose.worker import Diagnoser

    said: list[str] = []
    diagnoser = Diagnoser.__new__(Diagnoser)
    diagnoser.__dict__.update(vars(_subject(time.time() + SECOND_RESERVE_SEC + 13, True, said)))
    diagnoser.parked = []
    diagnoser.count_visits(10, 10.0)  # 1 s a visit, 13 s left: two arms' three rounds (12 visits), not three
    arms = [(0, _Arm("prefetch")), (1, _Arm("options")), (2, _Arm("vectorize"))]
    ceilings = {0: GainCeiling(1.3, "a prefix"), 1: None, 2: GainCeiling(6.0, "the cores")}
    changes = {0: (5,), 1: None, 2: (3, 4)}  # the bottleneck is stage 4
    most = {i: most_gain(ceilings[i], changes[i], 4) for i in ceilings}
    checked: dict = {}
    kept = diagnoser._within_budget(arms, most, checked)
    assert [arm.name for _, arm in kept] == ["prefetch", "vectorize"], "the highest ceilings, in the order proposed"
    assert list(checked) == [1] and "time budget" in checked[1] and "options: not measured" in said[-1]
    restructure = [(0, _Arm("prefetch")), (1, _Arm("parse CSV a batch at a time")), (2, _Arm("vectorize"))]
    kept = diagnoser._within_budget(restructure, most | {1: most_gain(None, (0, 1, 2, 3, 4), 4)}, {})
    assert [arm.name for _, arm in kept] == ["parse CSV a batch at a time", "vectorize"], \
        "one that changes the bottleneck with nothing to bound it first (babyweight's restructuring, 10.72×)"
    diagnoser.request = Request("f.py", "input_fn", {}, None, 5, 0.5, 0.2, 3.0, 100, "scratch", "progress")
    assert diagnoser._within_budget(arms, most, {}) == arms, "no deadline: every one"


def test_the_rounds_end_early_enough_for_the_diagnosis_to_finish_within_its_budget():
    from pipebench.diagnose.run import BUDGET_SEC, DEFAULT_ROUNDS, FINISH_SEC, rounds_deadline

    assert rounds_deadline(DEFAULT_ROUNDS, 1000.0) == 1000.0 + BUDGET_SEC - FINISH_SEC < 1000.0 + BUDGET_SEC
    assert rounds_deadline(2 * DEFAULT_ROUNDS, 0.0) == 2 * BUDGET_SEC - FINISH_SEC, "more rounds, more time"


def test_a_profile_that_would_end_past_the_deadline_is_not_run_and_says_why():
    from pipebench.diagnose.profiler import PROFILER_COST_SEC
    from pipebench.diagnose.worker import Diagnoser

    said: list[str] = []
    diagnoser = Diagnoser.__new__(Diagnoser)  # no TensorFlow: a profile that ran would need it, and fail here
    diagnoser.__dict__.update(vars(_subject(time.time() + SECOND_RESERVE_SEC + PROFILER_COST_SEC - 1, True, said)))
    found = diagnoser._profiler(bottleneck=0)
    assert not found.available and found.answer.startswith("unavailable: not run:") and "time budget" in found.answer
    assert "the TF Profiler: unavailable" in said[-1]
