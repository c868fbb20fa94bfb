"""The per-stage allocation (pipebench.capacity.model) on hand-made stage costs: no TensorFlow, no timing."""
from __future__ import annotations

import math
from dataclasses import replace

import pytest

from capacity_fixtures import profile

from pipebench.capacity.model import (CORES, IO, ceiling, cores_to_feed, feed_cores, predict, rates_per_core,
                                      stage_costs, threads)
from pipebench.errors import PipebenchError
from pipebench.results.stage_costs import CapacityProfile

# A single reader (sequential, 2 µs/example: 500k ex/s on its one core), a parallel decode (8 µs) and a
# batch that costs nothing of its own: 10 µs per example in all.
STAGES = [("source", 2e-6, True), ("decode", 8e-6, False), ("batch", 0.0, False)]


def test_core_budget_binds_on_few_cores():
    found = predict(profile(STAGES), 2)
    assert found.examples_per_sec.mean == pytest.approx(2 / 10e-6)
    assert found.bottleneck == CORES
    assert found.cores_used == pytest.approx(2)
    assert found.heaviest_stage == "decode"
    assert dict(found.stage_cores) == pytest.approx({"source": 0.4, "decode": 1.6, "batch": 0.0})


def test_sequential_stage_caps_at_one_core():
    found = predict(profile(STAGES), 16)
    assert found.examples_per_sec.mean == pytest.approx(500_000)
    assert found.bottleneck == "source"
    assert found.sequential_cap == pytest.approx(500_000)
    assert dict(found.stage_cores)["source"] == pytest.approx(1.0)
    assert found.cores_used == pytest.approx(5.0)  # the rest of the 16 cores have nothing to do


def test_sequential_stages_in_one_thread_share_its_core():
    """The guide order: cache, shuffle and batch run in the parallel decode's input thread; prefetch in its own."""
    guide = profile([("cache", 1e-6, True), ("shuffle", 0.5e-6, True), ("batch", 0.5e-6, True),
                     ("decode", 4e-6, False), ("prefetch", 0.25e-6, True)])
    assert threads(guide.stages) == [[0, 1, 2], [4]]
    found = predict(guide, 64)
    assert found.examples_per_sec.mean == pytest.approx(500_000)  # 1 / (1 + 0.5 + 0.5 µs), not 1 / 1 µs
    assert found.bottleneck == "cache + shuffle + batch" and found.sequential_cap == pytest.approx(500_000)
    assert ceiling(guide) == (pytest.approx(500_000), "cache + shuffle + batch")
    after = profile([("source", 1e-6, True), ("prefetch", 1e-6, True), ("shuffle", 1e-6, True),
                     ("batch", 1e-6, True)])
    assert threads(after.stages) == [[0, 1], [2, 3]]  # the consumer runs what follows the last prefetch


def test_a_parallel_stage_is_never_capped():
    found = predict(profile([("source", 2e-6, False), ("decode", 8e-6, False)]), 64)
    assert found.examples_per_sec.mean == pytest.approx(64 / 10e-6)
    assert found.bottleneck == CORES and found.sequential_cap is None


def test_io_ceiling_from_the_profile_and_from_the_caller():
    assert predict(profile(STAGES, io=150_000.0), 2).bottleneck == IO
    assert predict(profile(STAGES, io=150_000.0), 2).examples_per_sec.mean == pytest.approx(150_000)
    given = predict(profile(STAGES), 16, io_examples_per_sec=300_000.0)
    assert (given.bottleneck, given.examples_per_sec.mean) == (IO, pytest.approx(300_000))
    assert predict(profile(STAGES, io=1e9), 2).bottleneck == CORES  # a ceiling above the others does not bind


def test_train_cores_are_taken_out_of_the_budget():
    found = predict(profile(STAGES), 8, train_cores=7)
    assert found.examples_per_sec.mean == pytest.approx(1 / 10e-6)
    assert found.bottleneck == CORES and found.cores_used == pytest.approx(1.0)


def test_the_allocation_is_the_lp_optimum():
    """θ_i = X·c_i is feasible (sequential ≤ 1, Σ ≤ budget) and X cannot rise by 1% without breaking one."""
    found = predict(profile(STAGES), 3.5, train_cores=0.5)
    for rate in (found.examples_per_sec.mean, found.examples_per_sec.mean * 1.01):
        theta = [(rate * cost, sequential) for _, cost, sequential in STAGES]
        feasible = sum(t for t, _ in theta) <= 3.0 + 1e-9 and all(t <= 1 + 1e-9 for t, seq in theta if seq)
        assert feasible == (rate == found.examples_per_sec.mean)


def test_interval_comes_from_the_measured_prefix_intervals():
    noisy = profile(STAGES, spread=0.1)
    found = predict(noisy, 2).examples_per_sec
    whole = noisy.stages[-1].prefix_cpu_sec_per_example
    total = sum(s.cpu_sec_per_example for s in noisy.stages)
    assert found.low == pytest.approx(2 / (total + whole.high - whole.mean))
    assert found.high == pytest.approx(2 / (total - (whole.mean - whole.low)))
    assert found.low < found.mean < found.high and found.n == 5
    capped = predict(noisy, 16).examples_per_sec  # the source's cap: its own prefix interval
    assert capped.low < 500_000 < capped.high
    exact = predict(profile(STAGES), 2).examples_per_sec
    assert exact.low == exact.mean == exact.high


def test_no_interval_without_two_rounds():
    found = predict(profile(STAGES, rounds=1), 2).examples_per_sec
    assert not found.decided and found.n == 1 and found.mean == pytest.approx(200_000)


def test_cores_to_feed():
    assert cores_to_feed(profile(STAGES), 300_000) == pytest.approx(3.0)
    assert cores_to_feed(profile(STAGES), 600_000) is None  # the single reader caps at 500k
    assert cores_to_feed(profile(STAGES, io=250_000.0), 300_000) is None
    spread = feed_cores(profile(STAGES, spread=0.1), 300_000)
    assert spread.low < 3.0 < spread.high
    assert ceiling(profile(STAGES)) == (pytest.approx(500_000), "source")
    assert ceiling(profile([("decode", 1e-6, False)])) is None


def _free(found: CapacityProfile) -> CapacityProfile:
    """Give `found` with every stage's own cost 0 (a profile that limits nothing)."""
    return replace(found, stages=tuple(replace(s, cpu_sec_per_example=0.0, rate_per_core=None) for s in found.stages))


@pytest.mark.parametrize("call, says", [
    (lambda p: predict(p, 2, train_cores=2), r"cores \(2\) must exceed train_cores \(2\)"),
    (lambda p: predict(p, 0), "cores: must be above 0, not 0"),
    (lambda p: predict(p, math.nan), "cores: must be a finite number \\(above 0\\), not nan"),
    (lambda p: predict(p, 4, train_cores=-1), "train_cores: must be at least 0, not -1"),
    (lambda p: predict(p, 4, io_examples_per_sec=0.0), "io_examples_per_sec: must be above 0, not 0.0"),
    (lambda p: cores_to_feed(p, -5), "rate: must be above 0, not -5"),
    (lambda p: predict(_free(p), 4), "cfg-a: no stage has a CPU cost"),
])
def test_nonsense_is_one_line_error(call, says):
    with pytest.raises(PipebenchError, match=says) as caught:
        call(profile(STAGES))
    assert "\n" not in str(caught.value)


def test_a_stage_cost_interval_adds_its_two_prefixes_in_quadrature():
    noisy = profile(STAGES, spread=0.1)
    source, decode, batch = stage_costs(noisy)
    first, second = (s.prefix_cpu_sec_per_example for s in noisy.stages[:2])
    assert source.high - source.mean == pytest.approx(first.high - first.mean)
    assert decode.high - decode.mean == pytest.approx(math.hypot(first.high - first.mean, second.high - second.mean))
    assert batch.low == 0.0 and batch.mean == pytest.approx(0.0, abs=1e-18)  # clipped: a cost is never negative
    assert not any(c.decided for c in stage_costs(profile(STAGES, rounds=1)))


def test_rates_per_core_invert_the_costs_and_their_interval():
    source, decode, batch = rates_per_core(profile(STAGES, spread=0.1))
    costs = stage_costs(profile(STAGES, spread=0.1))
    assert decode.mean == pytest.approx(125_000) and decode.low == pytest.approx(1 / costs[1].high)
    assert source.high == pytest.approx(1 / costs[0].low) and batch is None  # no measurable cost: no rate
