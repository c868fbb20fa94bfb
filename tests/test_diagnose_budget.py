"""The diagnosis's time budget (pipebench.diagnose.subject): rounds past the first ones start only while they end
before the deadline, the first worker process leaving the second its reserve, and the rounds left out are said.
No TensorFlow, no clock read: the times are handed in or set far from now."""
from __future__ import annotations

import time

from pipebench.diagnose.records import Request
from pipebench.diagnose.subject import SECOND_RESERVE_SEC, Subject, rounds_within


def test_rounds_within_counts_the_rounds_that_fit_at_the_cost_of_those_done():
    assert rounds_within(2, 3, 30.0, 25.0) == 2  # 10 s a round
    assert rounds_within(2, 3, 30.0, 15.0) == 1
    assert rounds_within(2, 3, 30.0, 5.0) == 0
    assert rounds_within(2, 3, 30.0, -40.0) == 0, "past the deadline: none"
    assert rounds_within(2, 0, 0.0, 5.0) == 2, "nothing done to cost them by: as asked"


def _subject(deadline: float | None, second_follows: bool, said: list[str]) -> Subject:
    subject = Subject.__new__(Subject)  # its __init__ starts TensorFlow; these steps read only the request and log
    subject.request = Request("f.py", "input_fn", {}, None, 5, 0.5, 0.2, 3.0, 100, "scratch", "progress",
                              second_follows=second_follows, deadline=deadline)
    subject.started, subject._log = time.monotonic(), said.append
    return subject


def test_rounds_past_the_deadline_are_left_out_and_said():
    said: list[str] = []
    assert _subject(None, True, said)._rounds_left(2, 3, 30.0, 1.0) == 2 and not said, "no deadline: every round"
    far = time.time() + 3600
    assert _subject(far, True, said)._rounds_left(2, 3, 30.0, 1.0) == 2 and not said
    assert _subject(time.time() - 1, False, said)._rounds_left(2, 3, 30.0, 1.0) == 0
    assert said and "rounds 4-5 not run" in said[-1] and "stays inconclusive" in said[-1]


def test_the_first_worker_leaves_the_second_its_reserve():
    said: list[str] = []
    deadline = time.time() + SECOND_RESERVE_SEC + 1000  # 1000 s left after the reserve: 10 s rounds fit
    assert _subject(deadline, True, said)._rounds_left(2, 3, 30.0, 1.0) == 2
    deadline = time.time() + SECOND_RESERVE_SEC - 1  # within the reserve: the first stops, the second goes on
    assert _subject(deadline, True, said)._rounds_left(2, 3, 30.0, 1.0) == 0
    assert _subject(deadline, False, said)._rounds_left(2, 3, 30.0, 1.0) == 2, "the second runs to the deadline"


def test_a_round_of_fewer_open_arms_costs_their_share():
    said: list[str] = []
    deadline = time.time() + 6  # 3 rounds of 4 arms took 30 s; one arm left: 2.5 s a round
    assert _subject(deadline, False, said)._rounds_left(2, 3, 30.0, 0.25) == 2
    assert _subject(deadline, False, said)._rounds_left(2, 3, 30.0, 1.0) == 0
