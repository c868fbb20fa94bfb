"""Checks for values users give (experiment files, `--set`, pipeline specs): numbers and echoed text.

One number check serves every numeric setting: it refuses NaN and infinity (they pass any `<`
comparison, so a `window_sec: .nan` would never end its window), integers that do not fit in 64
bits (TensorFlow's parameters are int64), and values outside the setting's stated range.
"""
from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pipebench.errors import ConfigError

INT64_MAX = 2**63 - 1
ECHO_CHARS = 60
#: A name that may be a folder name and a pipeline's name in tables and search spaces (no path, no dot folder).
PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
PLAIN_NAME_RULE = "1 to 100 letters, digits, '.', '_' or '-', the first a letter or digit"


@dataclass(frozen=True)
class _Text:
    """Literal repr text (a bracket, a separator) among the values on _repr_pieces' stack."""

    text: str


_BRACKETS = {list: ("[", "]"), tuple: ("(", ")"), set: ("{", "}"), frozenset: ("frozenset({", "})"), dict: ("{", "}")}
_SHOWN_INT_BITS = 10_000


def _repr_pieces(value: Any, budget: int) -> Iterator[str]:
    """Yield `value`'s repr in order, piece by piece, each cut to about `budget` characters.

    Walks containers with a stack instead of calling repr on them: a value read from YAML may share
    its parts (aliases), so its whole repr can be exponentially longer than the file that made it.
    """
    todo: list[Any] = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, _Text):
            yield item.text
        elif isinstance(item, (set, frozenset)) and not item:
            yield repr(item)
        elif isinstance(item, (list, tuple, set, frozenset, dict)):
            opening, closing = _BRACKETS[type(item)] if type(item) in _BRACKETS else (f"{type(item).__name__}(", ")")
            entries = itertools.islice(item.items() if isinstance(item, dict) else item, budget)
            parts: list[Any] = []
            for entry in entries:
                parts += [_Text(", ")] if parts else []
                parts += [entry[0], _Text(": "), entry[1]] if isinstance(item, dict) else [entry]
            if isinstance(item, tuple) and len(item) == 1:
                parts.append(_Text(","))
            todo += [_Text(closing), *reversed(parts)]
            yield opening
        elif isinstance(item, (str, bytes)):
            yield repr(item[: budget + 1])  # past the budget the cut hides the closing quote anyway
        elif isinstance(item, int) and item.bit_length() > _SHOWN_INT_BITS:  # repr refuses > 4300 digits
            yield f"<an integer of {item.bit_length():,} bits>"
        else:
            yield repr(item)[: budget + 1]


def echo(value: Any, limit: int = ECHO_CHARS) -> str:
    """Give `value`'s repr for an error message, cut to about `limit` characters (saying how long it was).

    The repr is built only as far as the cut (see _repr_pieces), whatever the size of `value`.
    """
    pieces, length = [], 0
    for piece in _repr_pieces(value, limit):
        pieces.append(piece)
        length += len(piece)
        if length > limit:
            break
    text = "".join(pieces)
    if length <= limit:
        return text
    size = ""
    if isinstance(value, str):
        size = f" ({len(value):,} characters)"
    elif isinstance(value, (list, tuple, set, frozenset, dict)):
        size = f" ({len(value):,} {'item' if len(value) == 1 else 'items'})"
    return f"{text[:limit]}…{size}"


def name_text(text: Any) -> str:
    """Give a name the user wrote (a key, a path) as is when short and printable, else quoted and cut by echo()."""
    return text if isinstance(text, str) and text.isprintable() and len(text) <= ECHO_CHARS else echo(text)


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
