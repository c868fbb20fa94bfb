"""Checks for values users give (experiment files, `--set`, pipeline specs): numbers and echoed text.

One number check serves every numeric setting: it refuses NaN and infinity (they pass any `<`
comparison, so a `window_sec: .nan` would never end its window), integers that do not fit in 64
bits (TensorFlow's parameters are int64), and values outside the setting's stated range.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pipebench.errors import ConfigError

INT64_MAX = 2**63 - 1
ECHO_CHARS = 60


def echo(value: Any, limit: int = ECHO_CHARS) -> str:
    """Give `value`'s repr for an error message, cut to about `limit` characters (saying how long it was)."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(value) if isinstance(value, str) else len(text):,} characters)"


def name_text(text: str) -> str:
    """Give a name the user wrote (a key, a path) as is when short and printable, else quoted and cut by echo()."""
    return text if text.isprintable() and len(text) <= ECHO_CHARS else echo(text)


def _bound(x: float) -> str:
    return repr(x) if isinstance(x, float) and not x.is_integer() else str(int(x))


@dataclass(frozen=True)
class Range:
    """Where a number may lie: `low` and `high` (None: unbounded), each included unless `*_open`."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def holds(self, x: float) -> bool:
        """Give whether `x` lies in the range."""
        if self.low is not None and (x <= self.low if self.low_open else x < self.low):
            return False
        return self.high is None or (x < self.high if self.high_open else x <= self.high)

    def __str__(self) -> str:
        if self.low is not None and self.high is not None:
            return (f"in {'(' if self.low_open else '['}{_bound(self.low)}, {_bound(self.high)}"
                    f"{')' if self.high_open else ']'}")
        if self.low is not None:
            return f"{'above' if self.low_open else 'at least'} {_bound(self.low)}"
        if self.high is not None:
            return f"{'below' if self.high_open else 'at most'} {_bound(self.high)}"
        return "any finite number"


ANY = Range()
AT_LEAST_0, AT_LEAST_1, ABOVE_0 = Range(0), Range(1), Range(0, low_open=True)
PROBABILITY = Range(0, 1)


def check_number(value: Any, where: str, kind: type = float, allowed: Range = ANY) -> int | float:
    """Give `value` as `kind` (int or float) if it is a finite number in `allowed`; ConfigError naming `where`.

    An int is a float where a float is asked for; a bool is neither; a float is no int.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and isinstance(value, float)):
        raise ConfigError(f"{where}: must be {kind.__name__}, not {type(value).__name__} {echo(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        stated = "" if allowed == ANY else f" ({allowed})"
        raise ConfigError(f"{where}: must be a finite number{stated}, not {value}")
    if isinstance(value, int) and not -INT64_MAX - 1 <= value <= INT64_MAX:
        raise ConfigError(f"{where}: must fit in 64 bits, not {echo(value)}")
    if not allowed.holds(value):
        raise ConfigError(f"{where}: must be {allowed}, not {value!r}")
    return float(value) if kind is float else value


def refuse_non_finite(value: Any, where: str) -> None:
    """Raise ConfigError if `value` is a float NaN or infinity (wherever a number may appear at all)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{where}: must be a finite number, not {value}")
