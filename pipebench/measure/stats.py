"""Throughput statistics of one process's windows: medians and spread, steadiness, stalls (intervals: intervals.py)."""
from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

#: A result whose windows vary more than this is flagged unstable (pyperf-style check as output).
UNSTABLE_CV_PCT = 10.0


def quantile(values: Sequence[float], q: float) -> float:
    """Give the q-quantile by linear interpolation (numpy's default method)."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    pos = (len(ordered) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def cv_pct(values: Sequence[float]) -> float:
    """Give the coefficient of variation in percent (0 for fewer than two values)."""
    if len(values) < 2:
        return 0.0
    mean = statistics.fmean(values)
    return 100.0 * statistics.stdev(values) / mean if mean else float("inf")


def summarize_rates(rates: Sequence[float]) -> dict:
    """Give median, p25, p75 and CV of per-window examples/sec, and whether it is stable."""
    cv = cv_pct(rates)
    return {
        "examples_per_sec_median": statistics.median(rates),
        "examples_per_sec_p25": quantile(rates, 0.25),
        "examples_per_sec_p75": quantile(rates, 0.75),
        "examples_per_sec_cv_pct": cv,
        "windows": len(rates),
        "stable": cv <= UNSTABLE_CV_PCT,
    }


def is_steady(rates: Sequence[float], tolerance_pct: float, last: int = 3) -> bool:
    """Tell whether the last `last` rates agree within tolerance_pct (CV): warm-up is over."""
    return len(rates) >= last and cv_pct(rates[-last:]) <= tolerance_pct


def halves_ratio(rates: Sequence[float]) -> float:
    """Give the factor between the faster and the slower half of rates (the geometric means of each; a middle one of
    an odd count is in neither), 1 with fewer than two: how far apart a pipeline's own speeds lie."""
    logs = sorted(math.log(rate) for rate in rates if rate > 0)
    half = len(logs) // 2
    return math.exp((sum(logs[-half:]) - sum(logs[:half])) / half) if half else 1.0


def stall_pct(slow_rate: float, fast_rate: float) -> float:
    """Give the share of the slow setting's time per example lost against the fast one (DS-Analyzer)."""
    return max(0.0, 100.0 * (1.0 - slow_rate / fast_rate))
