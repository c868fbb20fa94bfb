"""Intervals, verdicts and differences computed from recorded rounds: deterministic, no timing."""
from __future__ import annotations

import math

import pytest

from pipebench.measure.intervals import (Interval, difference_verdict, input_bound_verdict, mean_interval, paired_order,
                                         ratio_interval, share_interval, t_quantile)


@pytest.mark.parametrize("df,expected", [(1, 12.7062), (2, 4.3027), (4, 2.7764), (9, 2.2622), (29, 2.0452)])
def test_t_quantiles_match_the_tables(df, expected):
    assert t_quantile(0.975, df) == pytest.approx(expected, abs=1e-4)


def test_mean_interval_is_students_t_over_rounds():
    found = mean_interval([1.0, 2.0, 3.0, 4.0])
    half = 3.1824 * math.sqrt(5 / 3) / 2
    assert found.mean == 2.5 and found.n == 4
    assert found.low == pytest.approx(2.5 - half, abs=1e-3) and found.high == pytest.approx(2.5 + half, abs=1e-3)


def test_one_round_has_no_interval_and_decides_nothing():
    one = mean_interval([0.5])
    assert not one.decided and one.contains(123.0) and input_bound_verdict(one) == "inconclusive"
    assert "1 round, no interval" in one.text()


def test_every_interval_prints_one_way():
    assert Interval(1234.5, 1000.0, 1500.0, 3).text() == "1,234 (1,000–1,500)"
    assert Interval(0.25, 0.2, 0.3, 3).text(".0f", 100.0, "%") == "25% (20–30%)"
    assert Interval(12.0, None, None, 1).text(",.0f") == "12 (1 round, no interval)"
    assert Interval(12.0, None, None, 0).text(",.0f") == "12 (no interval)"
    assert Interval(12.0, 10.0, None, 3).text(",.0f", unit=" ex/s") == "12 ex/s (at least 10 ex/s; no upper end)"
    assert Interval(12.0, 10.0, math.inf, 3).text(",.0f") == "12 (at least 10; no upper end)"
    assert Interval(5.3, -0.8, 22.7, 3).text("+.1f", unit="%") == "+5.3% (-0.8 to +22.7%)"
    assert Interval(2.0, 1.0, 3.0, 3).scaled(0.5) == Interval(1.0, 0.5, 1.5, 3)
    assert Interval(2.0, None, None, 1).scaled(2.0) == Interval(4.0, None, None, 1)


def test_paired_ratio_cancels_what_both_arms_shared_in_a_round():
    # the machine slowed both arms by half in round 2: the pairs still say 2x, tightly
    fast, slow = [2000.0, 1000.0, 2010.0], [1000.0, 500.0, 1000.0]
    paired = ratio_interval(fast, slow)
    assert paired.low > 1.9 and paired.high < 2.1 and difference_verdict(paired) == "faster"
    unpaired = mean_interval(fast).low / mean_interval(slow).high
    assert unpaired < 1.0, "without pairing the same draws could not even tell which is faster"


@pytest.mark.parametrize("shares,label", [
    ([0.01, 0.02, 0.015, 0.012], "not input-bound"),
    ([0.50, 0.55, 0.52], "highly input-bound"),
    ([0.10, 0.12, 0.11, 0.13], "moderately input-bound"),
    ([0.02, 0.09, 0.04, 0.08], "inconclusive"),  # straddles 5%
    ([0.18, 0.24, 0.21], "inconclusive"),  # straddles 20%
])
def test_verdict_is_confident_only_when_the_interval_lies_on_one_side_of_each_threshold(shares, label):
    assert input_bound_verdict(share_interval(shares)) == label


def test_share_intervals_stay_within_zero_and_one():
    found = share_interval([0.0, 0.0, 0.03])
    assert found.low == 0.0 and found.high <= 1.0


def test_a_ratio_whose_interval_holds_one_is_no_measurable_difference():
    assert difference_verdict(ratio_interval([100.0, 104.0, 97.0], [101.0, 99.0, 100.0])) == "no measurable difference"
    assert difference_verdict(Interval(0.8, 0.7, 0.9, 3)) == "slower"


def test_an_unpaired_ratio_takes_its_bounds_from_the_ends_of_both():
    ratio = Interval(3.0, 2.0, 4.0, 5).over(Interval(2.0, 1.0, 4.0, 3))
    assert (ratio.mean, ratio.low, ratio.high, ratio.n) == (1.5, 0.5, 4.0, 3)
    assert not Interval(3.0, 2.0, 4.0, 5).over(Interval(2.0, None, None, 1)).decided
    assert not Interval(3.0, 2.0, 4.0, 5).over(Interval(2.0, 0.0, 4.0, 3)).decided  # no upper end to give


def test_the_paired_order_judges_each_pair_over_the_rounds_it_shares():
    """Three configurations in every round rank by geometric mean; one measured only in a slow round is not ranked
    first on its raw mean: against the others it is judged over that round alone."""
    complete = {"a": {0: 100.0, 1: 120.0, 2: 90.0}, "b": {0: 95.0, 1: 130.0, 2: 80.0}, "c": {0: 50.0, 1: 60.0, 2: 45.0}}
    assert paired_order(complete) == ["a", "b", "c"]  # geometric means 102.6, 99.7, 51.3
    # "late" ran only in round 2, when the machine was slow for everyone: 95 there beats a's 90 and b's 80,
    # though its raw mean is below a's and b's own means over rounds where it did not run
    assert paired_order({**complete, "late": {2: 95.0}}) == ["late", "a", "b", "c"]
    # sharing no round with anyone, a configuration goes by its own mean, after the ones it ties with
    assert paired_order({"x": {0: 10.0}, "y": {1: 20.0}}) == ["y", "x"]


def test_a_pooled_ratio_weighs_a_stalled_window_by_what_it_lasted():
    from pipebench.measure.intervals import geometric_interval, pooled_ratio_interval

    base = [(30_000, 1.0)] * 5
    stalled = [(145_000, 1.0), (4_000, 1.5), (146_000, 1.0), (153_000, 1.0), (137_000, 1.0)]
    pooled = pooled_ratio_interval(stalled, base)
    assert pooled.mean == pytest.approx((585_000 / 5.5) / 30_000)  # the rows over the seconds, of both arms
    assert pooled.low > 1.0  # decided: faster, the stall counted at its length
    one_of_five = geometric_interval([(r / s) / 30_000 for r, s in stalled])
    assert one_of_five.low < 1.0 < one_of_five.high  # a ratio per window: one stall of five leaves it undecided
    same = [(30_000 * f, 1.0) for f in (0.97, 1.02, 1.0, 0.99, 1.03)]
    assert pooled_ratio_interval(same, base).contains(1.0)
    assert not pooled_ratio_interval([(1, 1.0)], [(1, 1.0)]).decided  # one pair: no interval
    with pytest.raises(ValueError):
        pooled_ratio_interval([(1, 1.0)], [])
