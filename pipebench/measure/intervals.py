"""95% intervals from rounds, and the verdicts and rankings that read them.

A *round* is one measurement of every arm being compared, taken back to back in a random order
(RMIT: randomized multiple interleaved trials), so drift on the machine hits each arm alike. A
figure's interval is Student's t interval of the mean over its rounds; a ratio's is the same
interval of the per-round log ratios, taken back with exp (paired, so what both arms shared in a
round cancels). Fewer than two rounds give no interval, and then nothing is called decided.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

CONFIDENCE = 0.95
#: The input-bound thresholds: the TF Profiler's, on the share of step time spent waiting for input; the same
#: on the slowdown (the share of training speed input costs) for a model training on the pipeline's CPUs.
INPUT_BOUND_LOW, INPUT_BOUND_HIGH = 0.05, 0.20
K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Interval:
    """A mean with its two-sided interval over `n` rounds; low/high are None with fewer than two rounds."""

    mean: float
    low: float | None  # None with fewer than two rounds
    high: float | None  # None with fewer than two rounds; infinite (written null beside a low) with no upper end
    n: int  # the rounds it is over (0: not known, or a figure given rather than measured)

    @property
    def decided(self) -> bool:
        return self.low is not None

    def contains(self, value: float) -> bool:
        """Whether `value` lies inside the interval (True when there is no interval: nothing is excluded)."""
        return not self.decided or self.low <= value <= self.high

    def width(self) -> float | None:
        return None if not self.decided else self.high - self.low

    def scaled(self, factor: float) -> Interval:
        """Give the interval in other units: every end times `factor` (> 0)."""
        return Interval(self.mean * factor, None if self.low is None else self.low * factor,
                        None if self.high is None else self.high * factor, self.n)

    def over(self, other: Interval) -> Interval:
        """Give self / other, its interval from the ends of the two (errs wide: for figures whose rounds were not
        paired); none unless both have one and other's low end is above 0."""
        mean, rounds = self.mean / other.mean, min(self.n, other.n)
        if not (self.decided and other.decided) or other.low <= 0:
            return Interval(mean, None, None, rounds)
        return Interval(mean, self.low / other.high, self.high / other.low, rounds)

    def __json__(self) -> dict:
        """Give the interval's one JSON shape, {"mean", "low", "high", "n"}: low and high null without an
        interval (fewer than two rounds), high alone null when it has no upper end (it is infinite)."""
        high = None if self.high is None or math.isinf(self.high) else self.high
        return {"mean": self.mean, "low": self.low, "high": high, "n": self.n}

    @classmethod
    def __from_json__(cls, read: Interval) -> Interval:
        """Give the interval `read` field by field from its JSON shape (pipebench.typed): a null high above a
        low end is no upper end."""
        return read if read.low is None or read.high is not None else cls(read.mean, read.low, math.inf, read.n)

    def text(self, fmt: str = ",.0f", scale: float = 1.0, unit: str = "") -> str:
        """Give 'mean (low–high)unit': the one way an interval is printed, in reports, logs and advice.

        Without an interval: 'mean (N rounds, no interval)', or 'mean (no interval)' when n is 0 (the
        rounds are not known); with no upper end (high None or infinite): 'mean (at least low; no upper
        end)'; signed ends are joined by ' to ' (a dash beside a minus sign reads as one).
        """
        mean = f"{self.mean * scale:{fmt}}{unit}"
        if not self.decided:
            return f"{mean} ({self.n} round{'s' if self.n != 1 else ''}, no interval)" if self.n else f"{mean} (no interval)"
        low = f"{self.low * scale:{fmt}}"
        if self.high is None or math.isinf(self.high):
            return f"{mean} (at least {low}{unit}; no upper end)"
        return f"{mean} ({low}{' to ' if low[:1] in '+-' else '–'}{self.high * scale:{fmt}}{unit})"


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularized incomplete beta function (Numerical Recipes' betacf)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 3e-16:
            break
    return h


def _incomplete_beta(a: float, b: float, x: float) -> float:
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """Give Student's t distribution function at `t` with `df` degrees of freedom."""
    tail = 0.5 * _incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """Give the `p` quantile of Student's t with `df` degrees of freedom (bisection on t_cdf)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), not {p}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        high *= 2.0
    for _ in range(200):
        mid = (low + high) / 2.0
        if t_cdf(mid, df) < p:
            low = mid
        else:
            high = mid
        if high - low < 1e-12 * max(1.0, high):
            break
    return (low + high) / 2.0


def mean_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """Give the mean of per-round values with its Student t interval."""
    values = [float(v) for v in values]
    if not values:
        raise ValueError("no rounds")
    mean = statistics.fmean(values)
    if len(values) < 2:
        return Interval(mean, None, None, len(values))
    half = t_quantile(0.5 + confidence / 2.0, len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return Interval(mean, mean - half, mean + half, len(values))


def geometric_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """Give the geometric mean of positive per-round values with its interval (Student t on their logs).

    Throughput varies by factors, not by amounts: on the log scale the interval stays positive and
    symmetric in ratio, however few rounds there are.
    """
    logs = mean_interval([math.log(v) for v in values], confidence)
    return Interval(math.exp(logs.mean), None if logs.low is None else math.exp(logs.low),
                    None if logs.high is None else math.exp(logs.high), logs.n)


def ratio_interval(numerators: Sequence[float], denominators: Sequence[float],
                   confidence: float = CONFIDENCE) -> Interval:
    """Give the paired ratio numerator/denominator: the geometric mean of per-round ratios, with its interval."""
    if len(numerators) != len(denominators):
        raise ValueError("paired rounds must have both arms")
    return geometric_interval([a / b for a, b in zip(numerators, denominators)], confidence)


def pooled_ratio_interval(numerators: Sequence[tuple[float, float]], denominators: Sequence[tuple[float, float]],
                          confidence: float = CONFIDENCE) -> Interval:
    """Give the paired ratio of two rates pooled over their windows, (Σ rows / Σ seconds) of the numerators over
    that of the denominators, with its jackknife interval (Student t on the logs of the leave-one-pair-out
    pseudo-values); each window is (rows, seconds).

    A window with a stall (tf.data's autotuning held a 1 s window for most of a second on 2 vCPUs) weighs what
    it lasted, as in a long run, rather than as one ratio of five: one such window of 0.09× among four of ~5×
    gave (0.24–19.9×) as a geometric mean of ratios, and decides here.
    """
    if len(numerators) != len(denominators) or not numerators:
        raise ValueError("paired rounds must have both arms")

    def log_ratio(keep: Sequence[int]) -> float:
        rows_n = sum(numerators[i][0] for i in keep) / sum(numerators[i][1] for i in keep)
        rows_d = sum(denominators[i][0] for i in keep) / sum(denominators[i][1] for i in keep)
        return math.log(rows_n / rows_d)

    n = len(numerators)
    whole = log_ratio(range(n))
    if n < 2:
        return Interval(math.exp(whole), None, None, n)
    pseudo = [n * whole - (n - 1) * log_ratio([j for j in range(n) if j != i]) for i in range(n)]
    half = t_quantile(0.5 + confidence / 2.0, n - 1) * statistics.stdev(pseudo) / math.sqrt(n)
    return Interval(math.exp(whole), math.exp(whole - half), math.exp(whole + half), n)


def share_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """Give the mean of per-round shares (0..1) with its interval clipped to [0, 1]."""
    found = mean_interval(values, confidence)
    if not found.decided:
        return found
    return Interval(found.mean, max(0.0, found.low), min(1.0, found.high), found.n)


def input_bound_verdict(share: Interval) -> str:
    """Give the label of an input cost (a waiting share or a slowdown) when its whole interval lies on one side
    of each threshold, else inconclusive."""
    low, high = (share.low, share.high) if share.decided else (None, None)
    if low is not None and high < INPUT_BOUND_LOW:
        return "not input-bound"
    if low is not None and low > INPUT_BOUND_HIGH:
        return "highly input-bound"
    if low is not None and low >= INPUT_BOUND_LOW and high <= INPUT_BOUND_HIGH:
        return "moderately input-bound"
    return "inconclusive"


def paired_order(rounds: Mapping[K, Mapping[int, float]]) -> list[K]:
    """Give the keys fastest first, each pair judged over the rounds both ran in (one rule for every ranking).

    `rounds` maps each key to its throughput per round. Two keys that share a round are ordered by the
    geometric mean of their per-round ratios over the rounds they share (the paired ratio's estimate,
    so drift between rounds cancels); a key's standing is how many keys it is ahead of less how many
    it is behind. Equal standings, and keys that share no round, go by the geometric mean over their
    own rounds, then by the order given. With every key in every round this is the order of their
    geometric means.
    """
    keys = list(rounds)
    own = {k: statistics.geometric_mean(rounds[k].values()) if rounds[k] else 0.0 for k in keys}
    standing = dict.fromkeys(keys, 0)
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            shared = sorted(set(rounds[a]) & set(rounds[b]))
            if not shared:
                continue
            log_ratio = statistics.fmean(math.log(rounds[a][r] / rounds[b][r]) for r in shared)
            if log_ratio != 0.0:
                ahead, behind = (a, b) if log_ratio > 0 else (b, a)
                standing[ahead] += 1
                standing[behind] -= 1
    return sorted(keys, key=lambda k: (-standing[k], -own[k], keys.index(k)))


def difference_verdict(ratio: Interval) -> str:
    """Give how A compares with B from their paired ratio A/B: faster, slower, or no measurable difference."""
    if ratio.contains(1.0):
        return "no measurable difference"
    return "faster" if ratio.low > 1.0 else "slower"
