r"""Strict libsvm parsing: one compiled pass over a chunk of lines, exact messages for bad lines.

Accepted grammar, per line (LF or CRLF ending; the last line may lack one):

    label SP id:value (SP id:value){field_size - 1}

label and value are decimal numbers, `[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?` (`.5` and `5.` too,
as `float()` and `strtod` read them; docs/guides/your-data.md states the same, and
tests/test_libsvm_grammar.py checks this parser against that statement); the label lies in [0, 1]; id is a non-negative
integer (< feature_size when that is given). Exactly one space separates tokens; tabs, repeated,
leading or trailing spaces are errors, because a tolerant split is how a short line slips through
to training time.

Numbers convert as Python's `float(text)` cast to float32 does (the AWS sample converter's
rounding): exact decimal → float64 on the Clinger fast path, and `float()` for the rare token
beyond it, so output never depends on which path ran.
"""
from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

OK = 0
EMPTY_LINE = 1
PAIR_COUNT = 2
BAD_LABEL = 3
LABEL_RANGE = 4
MISSING_COLON = 5
BAD_ID = 6
NEGATIVE_ID = 7
ID_RANGE = 8
BAD_VALUE = 9
VALUE_RANGE = 10
WHITESPACE = 11

#: Manifest keys for rejected-line counts, by status code.
REASON_KEYS = {
    EMPTY_LINE: "empty_line",
    PAIR_COUNT: "pair_count",
    BAD_LABEL: "bad_label",
    LABEL_RANGE: "label_range",
    MISSING_COLON: "missing_colon",
    BAD_ID: "bad_id",
    NEGATIVE_ID: "negative_id",
    ID_RANGE: "id_range",
    BAD_VALUE: "bad_value",
    VALUE_RANGE: "value_range",
    WHITESPACE: "whitespace",
}

_POW10 = np.array([10.0**k for k in range(23)], dtype=np.float64)
_MAX_EXACT_MANTISSA = 2**53
_MAX_ID = np.uint64(2**63 - 1)
_FLOAT32_MAX = float(np.finfo(np.float32).max)
_SP, _COLON, _DOT, _MINUS, _PLUS = 32, 58, 46, 45, 43


@numba.njit(inline="always")
def _is_space(c: int) -> bool:
    return c == 9 or c == 11 or c == 12 or c == 13 or c == 32


@numba.njit(cache=True, nogil=True)
def _number(buf, i, end):
    """Parse a decimal at buf[i:end]; give (stop, value, code): code 0 ok, 1 bad, 2 needs float()."""
    neg = False
    if i < end and (buf[i] == _MINUS or buf[i] == _PLUS):
        neg = buf[i] == _MINUS
        i += 1
    mantissa = np.uint64(0)
    digits = 0
    scale = 0
    overflow = False
    while i < end and 48 <= buf[i] <= 57:
        if mantissa < np.uint64(10**18):
            mantissa = mantissa * np.uint64(10) + np.uint64(buf[i] - 48)
        else:
            overflow = True
            scale -= 1
        digits += 1
        i += 1
    if i < end and buf[i] == _DOT:
        i += 1
        while i < end and 48 <= buf[i] <= 57:
            if mantissa < np.uint64(10**18):
                mantissa = mantissa * np.uint64(10) + np.uint64(buf[i] - 48)
                scale += 1
            else:
                overflow = True
            digits += 1
            i += 1
    if digits == 0:
        return i, 0.0, 1
    exponent = 0
    if i < end and (buf[i] == 101 or buf[i] == 69):
        i += 1
        eneg = False
        if i < end and (buf[i] == _MINUS or buf[i] == _PLUS):
            eneg = buf[i] == _MINUS
            i += 1
        edigits = 0
        while i < end and 48 <= buf[i] <= 57:
            if exponent < 100000:
                exponent = exponent * 10 + (buf[i] - 48)
            edigits += 1
            i += 1
        if edigits == 0:
            return i, 0.0, 1
        if eneg:
            exponent = -exponent
    power = exponent - scale
    if mantissa == 0:
        value = 0.0
    elif overflow or mantissa > np.uint64(_MAX_EXACT_MANTISSA) or power < -22 or power > 22:
        return i, 0.0, 2
    elif power >= 0:
        value = float(mantissa) * _POW10[power]
    else:
        value = float(mantissa) / _POW10[-power]
    return i, -value if neg else value, 0


@numba.njit(cache=True, nogil=True)
def _diagnose_pair(buf, i, end, start, k):
    """Name what is wrong with the pair starting at buf[i] (the fast path refused it)."""
    if i >= end or buf[i] == _SP:
        return WHITESPACE, i - start, False
    token_end = i
    colon = -1
    while token_end < end and buf[token_end] != _SP:
        c = buf[token_end]
        if _is_space(c):
            return WHITESPACE, token_end - start, False
        if c == _COLON and colon < 0:
            colon = token_end
        token_end += 1
    if colon < 0:
        return MISSING_COLON, k + 1, False
    first_digit = i + 1 if buf[i] == _MINUS else i
    if colon == first_digit or colon - first_digit > 19:
        return BAD_ID, k + 1, False
    digits = np.uint64(0)
    for j in range(first_digit, colon):
        if not 48 <= buf[j] <= 57:
            return BAD_ID, k + 1, False
        digits = digits * np.uint64(10) + np.uint64(buf[j] - 48)
    if digits > _MAX_ID:
        return BAD_ID, k + 1, False
    if first_digit > i:
        return NEGATIVE_ID, k + 1, False
    return BAD_VALUE, k + 1, False


@numba.njit(cache=True, nogil=True)
def _parse_line(buf, start, end, field_size, feature_size, labels, ids, values, row):
    """Validate and convert one line; give (status, detail, needs_float)."""
    if end == start:
        return EMPTY_LINE, 0, False
    if _is_space(buf[start]):
        return WHITESPACE, 0, False
    i, label, code = _number(buf, start, end)
    needs_float = code == 2
    if i < end and buf[i] != _SP:
        if _is_space(buf[i]):
            return WHITESPACE, i - start, False
        return BAD_LABEL, 0, False
    if code == 1:
        return BAD_LABEL, 0, False
    if code == 0 and not (0.0 <= label <= 1.0):
        return LABEL_RANGE, 0, False
    labels[row] = np.float32(label)
    for k in range(field_size):
        if i >= end:
            return PAIR_COUNT, k, False
        i += 1  # the single space before the pair
        # Fast path: digits ':' number, ending at a space or the line end; anything else is diagnosed.
        j = i
        digits = np.uint64(0)
        while j < end and 48 <= buf[j] <= 57:
            digits = digits * np.uint64(10) + np.uint64(buf[j] - 48)
            j += 1
        if j == i or j - i > 19 or digits > _MAX_ID or j >= end or buf[j] != _COLON:
            return _diagnose_pair(buf, i, end, start, k)
        feature_id = np.int64(digits)
        stop, value, code = _number(buf, j + 1, end)
        if code == 1 or j + 1 == stop or (stop < end and buf[stop] != _SP):
            return _diagnose_pair(buf, i, end, start, k)
        if feature_size > 0 and feature_id >= feature_size:
            return ID_RANGE, k + 1, False
        token_end = stop
        if code == 2:
            needs_float = True
        elif abs(value) > _FLOAT32_MAX and np.isinf(np.float32(value)):
            return VALUE_RANGE, k + 1, False
        ids[row, k] = feature_id
        values[row, k] = np.float32(value)
        i = token_end
    if i < end:
        if i + 1 >= end or buf[i + 1] == _SP:
            return WHITESPACE, i - start, False
        found = field_size
        j = i
        while j < end:
            if buf[j] == _SP and j + 1 < end and buf[j + 1] != _SP:
                found += 1
            j += 1
        return PAIR_COUNT, found, False
    return OK, 0, needs_float


@numba.njit(cache=True, nogil=True)
def _parse_chunk(buf, newlines, field_size, feature_size, labels, ids, values, status, detail, starts, ends,
                 needs_float):
    pos = 0
    for row in range(labels.size):
        e = newlines[row] if row < newlines.size else buf.size
        line_end = e - 1 if e > pos and buf[e - 1] == 13 else e
        starts[row] = pos
        ends[row] = line_end
        code, det, slow = _parse_line(buf, pos, line_end, field_size, feature_size, labels, ids, values, row)
        status[row] = code
        detail[row] = det
        needs_float[row] = slow
        pos = e + 1


@dataclass
class ParsedChunk:
    """Rows of one chunk: arrays for every line, `status` 0 where the line is good."""

    labels: np.ndarray  # float32[n]; rows whose status is not OK hold garbage
    ids: np.ndarray  # int64[n, field_size]
    values: np.ndarray  # float32[n, field_size]
    status: np.ndarray  # int8[n]
    detail: np.ndarray  # int32[n]: pair number, found pair count or byte column
    starts: np.ndarray  # int64[n]: byte offset of each line in the chunk
    ends: np.ndarray  # int64[n]: end of the line's content (before CR/LF)

    def line(self, chunk: bytes, row: int) -> bytes:
        """Give the text of line `row` without its line ending."""
        return chunk[self.starts[row] : self.ends[row]]


def count_lines(chunk: bytes) -> int:
    """Give the number of lines in `chunk`, counting a final line without a newline."""
    if not chunk:
        return 0
    return chunk.count(b"\n") + (chunk[-1:] != b"\n")


def parse_chunk(chunk: bytes, field_size: int, feature_size: int | None = None) -> ParsedChunk:
    """Parse and validate every line of `chunk` (whole lines only) in one compiled pass."""
    buf = np.frombuffer(chunk, dtype=np.uint8)
    newlines = np.flatnonzero(buf == 10)  # vectorized: cheaper than finding line ends in the kernel
    n = len(newlines) + (len(chunk) > 0 and chunk[-1:] != b"\n")
    labels = np.empty(n, dtype=np.float32)
    ids = np.empty((n, field_size), dtype=np.int64)
    values = np.empty((n, field_size), dtype=np.float32)
    status = np.zeros(n, dtype=np.int8)
    detail = np.zeros(n, dtype=np.int32)
    starts = np.zeros(n, dtype=np.int64)
    ends = np.zeros(n, dtype=np.int64)
    needs_float = np.zeros(n, dtype=np.bool_)
    _parse_chunk(buf, newlines, field_size, feature_size or 0, labels, ids, values, status, detail, starts, ends, needs_float)
    parsed = ParsedChunk(labels, ids, values, status, detail, starts, ends)
    for row in np.flatnonzero(needs_float):
        _convert_with_float(parsed, chunk, int(row))
    return parsed


def _convert_with_float(parsed: ParsedChunk, chunk: bytes, row: int) -> None:
    """Convert a line the fast path declined (>18 digits or a large exponent) with float()."""
    tokens = parsed.line(chunk, row).split(b" ")
    label = float(tokens[0])
    if not 0.0 <= label <= 1.0:
        parsed.status[row], parsed.detail[row] = LABEL_RANGE, 0
        return
    parsed.labels[row] = label
    for k, token in enumerate(tokens[1:]):
        value = float(token.split(b":", 1)[1])
        with np.errstate(over="ignore"):  # the overflow is the finding, reported as the line's reason
            overflows = abs(value) > _FLOAT32_MAX and np.isinf(np.float32(value))
        if overflows:
            parsed.status[row], parsed.detail[row] = VALUE_RANGE, k + 1
            return
        parsed.values[row, k] = value


_SHOWN_BYTES = 40


def _shown(token: bytes) -> str:
    """Give `token` quoted for a message: a long one cut short, with its size, so a line stays short."""
    if len(token) <= _SHOWN_BYTES:
        return repr(token.decode("utf-8", "backslashreplace"))
    head = token[:_SHOWN_BYTES].decode("utf-8", "backslashreplace")
    return f"{head + '…'!r} ({len(token):,} bytes)"


def reason(parsed: ParsedChunk, chunk: bytes, row: int, field_size: int, feature_size: int | None) -> str:
    """Give the one-line reason why line `row` of the chunk was rejected."""
    code, detail = int(parsed.status[row]), int(parsed.detail[row])
    text = parsed.line(chunk, row)
    tokens = text.split(b" ")

    if code == EMPTY_LINE:
        return "empty line"
    if code == PAIR_COUNT:
        return f"expected {field_size} id:value pairs, found {detail}"
    if code == BAD_LABEL:
        return f"label {_shown(tokens[0])} is not a number"
    if code == LABEL_RANGE:
        return f"label {_shown(tokens[0])} is outside [0, 1] (CTR labels are 0/1 or probabilities)"
    if code == WHITESPACE:
        char = text[detail : detail + 1]
        what = {b"\t": "a tab", b" ": "a repeated, leading or trailing space", b"\r": "a carriage return"}
        return (f"unexpected whitespace at column {detail + 1}: {what.get(char, 'a space')}"
                " (tokens are separated by exactly one space)")
    token = tokens[detail]
    pair = f"pair {detail} {_shown(token)}"
    if code == MISSING_COLON:
        return f"{pair} has no ':' between id and value"
    id_text, value_text = token.split(b":", 1)
    if code == NEGATIVE_ID:
        return f"{pair}: id is negative"
    if code == BAD_ID:
        return f"{pair}: id {_shown(id_text)} is not a non-negative 64-bit integer"
    if code == ID_RANGE:
        return f"{pair}: id {int(id_text)} is not below feature_size {feature_size}"
    if code == BAD_VALUE:
        return f"{pair}: value {_shown(value_text)} is not a number"
    if code == VALUE_RANGE:
        return f"{pair}: value {_shown(value_text)} overflows float32"
    raise AssertionError(f"unknown status {code}")
