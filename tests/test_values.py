"""Echoed values: an error message quotes what the user gave, cut while it is formatted, never built whole."""
from __future__ import annotations

import pytest

from pipebench.values import ECHO_CHARS, echo, name_text


class _NeverShown:
    """A value whose repr must never be asked for: it lies past the cut."""

    def __repr__(self) -> str:
        raise AssertionError("repr of a value past the cut was built")


def _laughs(levels: int) -> list:
    """Give YAML's "billion laughs" as Python builds it from aliases: 9**levels strings, 10 lists."""
    value: list = ["lol"] * 9
    for _ in range(levels):
        value = [value] * 9
    return value


@pytest.mark.parametrize("value", [
    "abc", 12, -1.5, None, True, [1, "a", (2,)], {"k": [1, {2}], "e": set()}, (), frozenset({3}), [[]] * 3, b"x\0",
])
def test_a_short_value_is_its_repr(value):
    assert echo(value) == repr(value)


def test_a_long_text_is_cut_with_its_length():
    assert echo("x" * 10_000_000) == "'" + "x" * (ECHO_CHARS - 1) + "… (10,000,000 characters)"


def test_a_long_list_is_cut_before_the_values_past_the_cut_are_formatted():
    shown = echo(["a"] * 100 + [_NeverShown()])
    assert shown.startswith("['a', 'a', ") and shown.endswith("… (101 items)") and len(shown) < 100


def test_shared_references_are_not_expanded():
    """9**9 strings by reference (what a 400-byte YAML file builds): the repr would be 2.7 GB."""
    shown = echo({"name": _laughs(8)})
    assert shown == repr({"name": [[[[[[[[["lol"] * 9]]]]]]]]})[:ECHO_CHARS] + "… (1 item)"


def test_deep_nesting_and_a_cycle_are_cut_not_recursed():
    deep: list = []
    for _ in range(100_000):  # repr() of this raises RecursionError
        deep = [deep]
    assert echo(deep) == "[" * ECHO_CHARS + "… (1 item)"
    cycle: list = [1]
    cycle.append(cycle)
    assert echo(cycle).startswith("[1, [1, [1, ")


def test_an_integer_too_long_for_repr_is_described():
    assert echo(10**5000) == "<an integer of 16,610 bits>"


def test_name_text_quotes_what_is_not_a_short_printable_name():
    assert name_text("batch_size") == "batch_size"
    assert name_text("a\nb") == "'a\\nb'"
    assert name_text(7) == "7"
    assert name_text(_laughs(8)).endswith("… (9 items)")
