"""Idle cores kept awake (pipebench.measure.awake): the second speed of a pipeline that hands elements between threads.

real_tft_sentiment_varlen_tf1 (make_batched_features_dataset: a parallel_interleave of one cycle hands every record
to its consumer) read 31-47k rows/s at 0.9 cores in most seconds and 90-150k in others on the 2-vCPU machine; with
idle cores kept polling, 99-148k in every second (2026-12-04). No speed is asserted here: what is tested is that the
request is held exactly over the arm's timed windows, read back from the kernel, and how a measured factor is used.
"""
from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from pipebench.measure import awake
from pipebench.measure.intervals import Interval
from pipebench.measure.windows import Arm

WHY_NOT = awake.unavailable()


def _requested() -> int:
    """The kernel's current wake-up latency target, in µs (reading the device gives it)."""
    fd = os.open(awake.DEVICE, os.O_RDONLY)
    try:
        return struct.unpack("i", os.read(fd, 4))[0]
    finally:
        os.close(fd)


def _held() -> bool:
    """Whether this process holds the request open (its own file descriptors: other processes, a diagnosis in
    another test worker, may hold one of theirs at the same time)."""
    fds = Path("/proc/self/fd")
    return any(os.path.realpath(fds / fd) == str(awake.DEVICE) for fd in os.listdir(fds))


@pytest.mark.skipif(WHY_NOT is not None, reason=f"the PM QoS request cannot be made here: {WHY_NOT}")
def test_an_arm_holds_the_request_over_its_timed_windows_only():
    seen: list[tuple[bool, int]] = []

    def loop(iterator, steps: int) -> tuple[int, float]:
        seen.append((_held(), _requested()))
        return steps, 0.0

    arm = Arm(awake.NAME, lambda: iter(()), loop)
    arm.hold = awake.hold
    arm.call()  # a call outside a timed window (calibration, a settle)
    arm.timed(0.05, 0)
    assert not seen[0][0] and seen[1:] and all(held and requested == 0 for held, requested in seen[1:]), seen
    assert not _held(), "released when the window ends"
    plain = Arm("original", lambda: iter(()), loop)  # an arm without a hold leaves the machine as it is
    seen.clear()
    plain.timed(0.05, 0)
    assert seen and not any(held for held, _ in seen)


def test_without_the_device_it_says_unavailable_and_why(tmp_path: Path):
    said = awake.unavailable(tmp_path / "cpu_dma_latency")
    assert said is not None and said.startswith("unavailable: ") and "does not exist" in said
    device = tmp_path / "read_only"
    device.write_bytes(b"")
    device.chmod(0o444)
    if os.geteuid() != 0:  # root writes a read-only file anyway
        assert "root" in awake.unavailable(device)


def test_only_a_shown_gain_makes_two_speeds():
    assert awake.spread(Interval(2.7, 2.4, 3.0, 5)) == pytest.approx(2.7)
    assert awake.spread(Interval(1.05, 0.97, 1.13, 5)) == 1.0, "its interval holds 1: one speed"
    assert awake.spread(Interval(0.9, 0.85, 0.95, 5)) == 1.0, "slower kept awake is not a second speed"
    assert awake.spread(Interval(1.4, None, None, 1)) == 1.0 and awake.spread(None) == 1.0


def test_a_plain_loop_may_read_either_speed_of_a_two_speed_pipeline():
    """At cbc6992 tft's self-check paired half-second windows that switched between its speeds: 1.45× (0.43-4.93×),
    inconclusive, while its rate read 2.7× faster kept awake. The band is widened by that factor, either way; a unit
    error (a batch of 256 counted as one row) still lies far outside it."""
    from pipebench.diagnose.selfcheck import AGREE_WITHIN, band, check
    from pipebench.measure.trial import Window

    def pairs(ratios: list[float]) -> list:
        return [(Window("original", i, 40_000, 1.0, None), Window("plain loop", i, round(40_000 * r), 1.0, None))
                for i, r in enumerate(ratios)]

    assert band(1.0, 2.7) == (pytest.approx(1 / (AGREE_WITHIN * 2.7)), pytest.approx(AGREE_WITHIN * 2.7))
    switching = pairs([1.9, 2.4, 2.1, 2.6, 2.2])
    assert check(switching, 0.0, 1, 40_000.0, False).agrees is False, "one speed: outside the band"
    assert check(switching, 0.0, 1, 40_000.0, False, spread=2.7).agrees is True
    assert check(pairs([1 / 256] * 5), 0.0, 1, 40_000.0, False, spread=2.7).agrees is False


def test_a_pipeline_that_switches_speeds_by_itself_widens_the_band_by_what_its_own_windows_show():
    """tf1_tensors (TextLine → map → batch) reads 75-95k rows/s in most half-second windows and 37-40k in episodes of
    2-6 s, with nothing of pipebench's near it and its idle cores kept awake (records/diagnose_tf1_tensors_modes_
    2026-12-05.md). At 10e6b60 its plain loop read 0.99, 0.64, 1.79, 1.21, 1.68, 2.13, 1.20 and 1.30× of the whole
    pipeline, paired over such episodes: inconclusive, its 90% interval across the band's 1.5×, though the kept-awake
    arm showed no second speed. Its own windows show two: the band is widened by the factor between their faster and
    slower half. A unit error and a cache replay reported for a one-pass pipeline still lie wholly outside it, and a
    pipeline of one speed widens it by little."""
    from pipebench.diagnose.selfcheck import check
    from pipebench.measure.stats import halves_ratio
    from pipebench.measure.trial import Window

    # Its whole pipeline's windows were not logged one by one: these are its two speeds as the probe read them.
    whole = [82_000, 86_000, 41_000, 78_000, 44_000, 39_000, 84_000, 80_000]

    def pairs(rates: list[int], ratios: list[float]) -> list:
        return [(Window("original", i, rate, 1.0, None), Window("plain loop", i, round(rate * r), 1.0, None))
                for i, (rate, r) in enumerate(zip(rates, ratios))]

    switching = pairs(whole, [0.99, 0.64, 1.79, 1.21, 1.68, 2.13, 1.20, 1.30])
    found = check(switching, 0.0, 1, 62_000.0, False)
    assert found.window_spread == pytest.approx(halves_ratio([w.examples / w.seconds for w, _ in switching]))
    assert found.spread == 1.0
    assert 1.6 < found.window_spread < 2.2 and found.widened == found.window_spread, found
    assert found.equivalence.high > 1.5, "at the band of one speed, this would stay inconclusive"
    assert found.agrees is True, found
    for error in (1 / 256, 1 / 36):  # a batch counted as a row; a replay from memory for a one-pass pipeline
        assert check(pairs(whole, [error * r for r in (0.9, 1.1, 1.0, 0.95, 1.05, 1.0, 0.9, 1.1)]), 0.0, 1, 62_000.0,
                     False).agrees is False
    steady = [40_000, 41_500, 38_800, 40_700, 39_300, 40_200]  # one speed, ±4%
    assert 1.0 < halves_ratio(steady) < 1.1
    assert halves_ratio([40_000]) == 1.0
    assert check(pairs(steady, [2.2, 2.6, 2.4, 2.3, 2.5, 2.7]), 0.0, 1, 40_000.0, False).agrees is False
