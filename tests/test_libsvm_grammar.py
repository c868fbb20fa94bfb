"""The compiled libsvm parser against a plain-Python statement of the grammar: the one the docs state."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pipebench.converters import libsvm

F = 3
GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guides" / "your-data.md"


def stated_number() -> str:
    """Give the number grammar docs/guides/your-data.md states for libsvm input, as the regular expression it writes."""
    text = GUIDE.read_text().split("**The accepted libsvm grammar**", 1)[1].split("\n\n", 1)[0]
    found = re.search(r"Numbers\s+are decimals matching `([^`]+)`", text)
    assert found, "docs/guides/your-data.md no longer states the number grammar as a regular expression"
    return re.sub(r"(?<!\\)\((?!\?)", "(?:", found.group(1))  # its groups do not capture: LINE numbers its own


NUMBER = stated_number()
LINE = re.compile(rf"({NUMBER})((?: \d{{1,19}}:{NUMBER}){{{F}}})")


def reference(line: bytes, feature_size: int | None) -> tuple[float, list[int], list[float]] | None:
    """The grammar in the module docstring, written the obvious way; None for a rejected line."""
    text = line.decode("latin-1")
    match = LINE.fullmatch(text)
    if not match:
        return None
    label = float(match.group(1))
    pairs = [p.split(":") for p in match.group(2).split(" ")[1:]]
    ids = [int(i) for i, _ in pairs]
    values = [float(v) for _, v in pairs]
    if not 0.0 <= label <= 1.0 or any(np.isinf(np.float32(v)) for v in values):
        return None
    if any(i >= 2**63 for i in ids) or (feature_size is not None and any(i >= feature_size for i in ids)):
        return None
    return label, ids, values


numbers = st.one_of(
    st.integers(0, 10**6).map(str),
    st.floats(allow_nan=False, allow_infinity=False, width=32).map(repr),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.decimals(allow_nan=False, allow_infinity=False, places=7).map(str),
    st.from_regex(rf"\A{NUMBER}\Z"),
    st.builds("{}e{}".format, st.integers(1, 2**60), st.integers(-45, 45)),
    st.builds("{}.{}e{}".format, st.integers(0, 10**9), st.integers(0, 10**12), st.integers(-30, 30)),
)
labels = st.sampled_from(["0", "1", "0.5", "1.0", "0e0", ".25", "1."]) | numbers
good_lines = st.builds(
    lambda label, ids, vals: (label + "".join(f" {i}:{v}" for i, v in zip(ids, vals))).encode(),
    labels, st.lists(st.integers(0, 2**40) | st.integers(2**63 - 5, 10**19 + 5), min_size=F, max_size=F), st.lists(numbers, min_size=F, max_size=F),
)
noise = st.sampled_from([b" ", b"  ", b"\t", b":", b"-", b"+", b".", b"e", b"x", b"\r", b"1", b"\xff", b""])


@st.composite
def mutated_lines(draw) -> bytes:
    line = bytearray(draw(good_lines))
    for _ in range(draw(st.integers(0, 3))):
        pos = draw(st.integers(0, len(line)))
        if draw(st.booleans()) and pos < len(line):
            del line[pos]
        else:
            line[pos:pos] = draw(noise)
    return bytes(line).replace(b"\n", b"")


@settings(max_examples=600, deadline=None)
@given(st.lists(mutated_lines(), min_size=1, max_size=8), st.sampled_from([None, 1000, 2**41]))
@example([b"1 1:1 2:1 3:1e400"], None)
@example([b"1 1:1 2:1 3:1" + b"9" * 30], None)
@example([b"0 1:0.1234567890123456789 2:1e-30 3:123456789012345678901234e-10"], None)
def test_parser_accepts_exactly_the_grammar_and_converts_like_float(lines, feature_size):
    chunk = b"\n".join(lines) + b"\n"
    parsed = libsvm.parse_chunk(chunk, F, feature_size)
    assert len(parsed.status) == len(lines)
    for row, line in enumerate(lines):
        expected = reference(line.rstrip(b"\r"), feature_size) if b"\r" not in line[:-1] else None
        if expected is None:
            assert parsed.status[row] != libsvm.OK, line
            message = libsvm.reason(parsed, chunk, row, F, feature_size)
            assert message and "\n" not in message
        else:
            assert parsed.status[row] == libsvm.OK, (line, libsvm.reason(parsed, chunk, row, F, feature_size))
            label, ids, values = expected
            assert parsed.labels[row] == np.float32(label)
            assert parsed.ids[row].tolist() == ids
            assert np.array_equal(parsed.values[row], np.array(values, dtype=np.float64).astype(np.float32))


def test_crlf_and_missing_final_newline():
    parsed = libsvm.parse_chunk(b"1 1:1 2:2 3:3\r\n0 4:0.5 5:6 6:7", F)
    assert parsed.status.tolist() == [0, 0]
    assert parsed.ids.tolist() == [[1, 2, 3], [4, 5, 6]]
    assert parsed.values[1].tolist() == [0.5, 6.0, 7.0]


def test_each_reason_names_the_problem():
    cases = {
        b"": ("empty line", libsvm.EMPTY_LINE),
        b"1 1:1 2:1": ("expected 3 id:value pairs, found 2", libsvm.PAIR_COUNT),
        b"1 1:1 2:1 3:1 4:1": ("expected 3 id:value pairs, found 4", libsvm.PAIR_COUNT),
        b"yes 1:1 2:1 3:1": ("label 'yes' is not a number", libsvm.BAD_LABEL),
        b"-1 1:1 2:1 3:1": ("label '-1' is outside [0, 1]", libsvm.LABEL_RANGE),
        b"1 1:1 21 3:1": ("pair 2 '21' has no ':'", libsvm.MISSING_COLON),
        b"1 1:1 a:1 3:1": ("pair 2 'a:1': id 'a' is not a non-negative 64-bit integer", libsvm.BAD_ID),
        b"1 1:1 2:1 -3:1": ("pair 3 '-3:1': id is negative", libsvm.NEGATIVE_ID),
        b"1 1:1 2:1 30:1": ("pair 3 '30:1': id 30 is not below feature_size 10", libsvm.ID_RANGE),
        b"1 1:1 2:nan 3:1": ("pair 2 '2:nan': value 'nan' is not a number", libsvm.BAD_VALUE),
        b"1 1:1 2:1e39 3:1": ("pair 2 '2:1e39': value '1e39' overflows float32", libsvm.VALUE_RANGE),
        b"1 1:1\t2:1 3:1": ("unexpected whitespace at column 6: a tab", libsvm.WHITESPACE),
        b"1 1:1  2:1 3:1": ("unexpected whitespace at column 7: a repeated", libsvm.WHITESPACE),
        b"1 1:1 2:1 3:1 ": ("unexpected whitespace at column 14", libsvm.WHITESPACE),
    }
    for line, (message, code) in cases.items():
        chunk = line + b"\n"
        parsed = libsvm.parse_chunk(chunk, F, 10)
        assert parsed.status[0] == code, line
        assert libsvm.reason(parsed, chunk, 0, F, 10).startswith(message), line


@pytest.mark.parametrize("label, accepted", [
    ("1", True), ("0.5", True), (".5", True), ("1.", True), ("+.5e0", True), ("5E-1", True), ("0e0", True),
    ("inf", False), ("nan", False), ("0x1p-1", False), ("1_0", False), (".", False), ("-.e1", False), ("1e", False),
])
def test_the_readme_grammar_and_the_parser_agree_on_labels(label, accepted):
    assert (re.fullmatch(NUMBER, label) is not None) == accepted
    assert (libsvm.parse_chunk(f"{label} 1:1 2:1 3:1\n".encode(), F).status[0] == libsvm.OK) == accepted
