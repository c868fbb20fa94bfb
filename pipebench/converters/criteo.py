"""Raw Criteo rows (Kaggle Display Advertising layout) → DeepFM rows, through a saved feature map.

Input, per line (LF or CRLF ending; the last line may lack one): 40 tab-separated columns,

    label <TAB> I1 ... I13 <TAB> C1 ... C26

label is `0` or `1`; I1..I13 are decimal integers (`-` allowed); C1..C26 are 8 lowercase hex
digits (Criteo's hashed categories); an empty I or C column is a missing value. Anything else is
a bad line (`FILE:LINE: reason`), by the same rules whichever pass meets it.

The feature map is the one lambdaji's `deep_ctr/Feature_pipeline/get_criteo_feature.py` builds
(first pass over the training files):

- I_k (k = 1..13) becomes id k with value (min(v, clip_k) - lo_k) / (hi_k - lo_k), where clip_k
  is lambdaji's per-field 95% quantile (`CLIP`) and lo_k / hi_k the least and greatest clipped
  value seen; a missing I_k has value 0.
- C_j keeps the values seen at least `cutoff` times (default 200), numbered by count, most
  frequent first, ties by the hex text; every other value, and a missing one, shares the field's
  one "other" id. Values are 1.

Differences from lambdaji's ids, on purpose:

- Ids: field C_j's "other" id is offset_j and its kept values offset_j + 1, ...; offset_1 = 14,
  offset_(j+1) = offset_j + 1 + kept_j. lambdaji starts C1 at 13, so its C1 "other" id collides with
  I13's id; every categorical id here is lambdaji's libsvm id + 1 (which is also the id its own
  `feature_map` file lists), and feature_size is one more than lambdaji's.
- Values: an integer is clipped before scaling (lambdaji clips only when finding lo/hi, so values
  above clip_k come out above 1), and a value outside [lo_k, hi_k] in a later file (validation,
  test) is clamped to [0, 1]; a field whose lo_k = hi_k (or never seen) gives 0, not a division
  by zero. Values are float32 of the exact quotient, not of its 6-decimal text.
- A file without labels (Kaggle's test.txt, 39 columns) is refused, not given the last training
  label as lambdaji's script does.

Memory: the first pass holds one count per distinct (field, value) seen, 16 bytes each (about 0.5
GB for Kaggle's 45M rows, 33M distinct values), however many rows; the second pass holds only the
kept values. Both passes work on chunks of whole lines in compiled kernels that release the GIL.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np

import pipebench
from pipebench.converters.inputs import InputFile
from pipebench.converters.libsvm import _shown
from pipebench.converters.manifest import Made, SourceFile
from pipebench.errors import DataError
from pipebench.typed import to_json
from pipebench.versioned import WAS, load_versioned

INTEGER_FIELDS = 13
CATEGORICAL_FIELDS = 26
COLUMNS = 1 + INTEGER_FIELDS + CATEGORICAL_FIELDS
FIELD_SIZE = INTEGER_FIELDS + CATEGORICAL_FIELDS
#: lambdaji's clip points: the 95% quantile of each integer field on the Kaggle data.
CLIP = (20, 600, 100, 50, 64000, 500, 100, 50, 500, 10, 10, 10, 50)
DEFAULT_CUTOFF = 200
FEATURE_MAP_FILE = "feature_map.json"
FEATURE_MAP_VERSION = 1
FIELD_NAMES = ("label", *(f"I{k}" for k in range(1, INTEGER_FIELDS + 1)),
               *(f"C{j}" for j in range(1, CATEGORICAL_FIELDS + 1)))

OK = 0
EMPTY_LINE = 1
COLUMN_COUNT = 2
BAD_LABEL = 3
BAD_INTEGER = 4
BAD_HEX = 5
#: Manifest keys for rejected-line counts, by status code.
REASON_KEYS = {EMPTY_LINE: "empty_line", COLUMN_COUNT: "column_count", BAD_LABEL: "bad_label",
               BAD_INTEGER: "bad_integer", BAD_HEX: "bad_hex"}

_TAB, _MINUS = 9, 45
_HEAD_BYTES = 1 << 16


def looks_like_raw(path: Path) -> bool:
    """Tell raw Criteo text by its first line: 40 tab-separated columns (libsvm has none)."""
    with InputFile(path, hash=False) as stream:
        head = stream.read(_HEAD_BYTES)
    return head.split(b"\n", 1)[0].count(b"\t") == COLUMNS - 1
_MAX_INTEGER_DIGITS = 18  # fits int64 whatever the digits
_NO_VALUE = np.iinfo(np.int64).max
_CLIP = np.array(CLIP, dtype=np.int64)


_HEX_DIGIT = np.full(256, -1, np.int64)  # byte -> its value as a lowercase hex digit, -1 if it is not one
for _digit, _char in enumerate(b"0123456789abcdef"):
    _HEX_DIGIT[_char] = _digit


@numba.njit(cache=True, nogil=True)
def _columns(buf, start, end):
    columns = 1
    for i in range(start, end):
        if buf[i] == _TAB:
            columns += 1
    return columns


@numba.njit(cache=True, nogil=True)
def _parse_line(buf, start, end, labels, ints, int_seen, cats, cat_seen, row):
    """Validate and convert one line; give (status, column of the fault or columns found).

    One scan: a good line is read once; a line found bad is scanned again to count its columns,
    so a wrong column count is the reason given whatever else is wrong with the line.
    """
    if end == start:
        return EMPTY_LINE, 0
    status, column = _parse_fields(buf, start, end, labels, ints, int_seen, cats, cat_seen, row)
    if status != OK:
        columns = _columns(buf, start, end)
        if columns != COLUMNS:
            return COLUMN_COUNT, columns
    return status, column


@numba.njit(cache=True, nogil=True)
def _parse_fields(buf, start, end, labels, ints, int_seen, cats, cat_seen, row):
    """Parse a line as 40 columns; any fault (a missing or extra column included) is a status."""
    i = start
    if i + 1 < end and buf[i + 1] == _TAB and (buf[i] == 48 or buf[i] == 49):
        labels[row] = buf[i] - 48
    else:
        return BAD_LABEL, 0
    i += 2
    for k in range(INTEGER_FIELDS):
        j = i
        neg = j < end and buf[j] == _MINUS
        if neg:
            j += 1
        value = 0
        digits = 0
        while j < end and 48 <= buf[j] <= 57:
            value = value * 10 + (buf[j] - 48)
            digits += 1
            j += 1
        if j >= end:
            return COLUMN_COUNT, 0  # too few columns
        if buf[j] != _TAB or (neg and digits == 0) or digits > _MAX_INTEGER_DIGITS:
            return BAD_INTEGER, 1 + k
        int_seen[row, k] = digits > 0
        ints[row, k] = -value if neg else value
        i = j + 1
    for k in range(CATEGORICAL_FIELDS):
        j = i
        value = 0
        while j < end and j - i < 9:
            d = _HEX_DIGIT[buf[j]]
            if d < 0:
                break
            value = value * 16 + d
            j += 1
        if j < end and buf[j] != _TAB:
            return BAD_HEX, 1 + INTEGER_FIELDS + k
        if j - i != 8 and j > i:
            return BAD_HEX, 1 + INTEGER_FIELDS + k
        if (j < end) != (k < CATEGORICAL_FIELDS - 1):
            return COLUMN_COUNT, 0  # too few or too many columns
        cat_seen[row, k] = j > i
        cats[row, k] = value
        i = j + 1
    return OK, 0


@numba.njit(cache=True, nogil=True)
def _parse_chunk(buf, newlines, labels, ints, int_seen, cats, cat_seen, status, detail, starts, ends):
    pos = 0
    for row in range(labels.size):
        e = newlines[row] if row < newlines.size else buf.size
        line_end = e - 1 if e > pos and buf[e - 1] == 13 else e
        starts[row] = pos
        ends[row] = line_end
        status[row], detail[row] = _parse_line(buf, pos, line_end, labels, ints, int_seen, cats, cat_seen, row)
        pos = e + 1


@dataclass
class RawChunk:
    """Rows of one chunk of raw lines: arrays for every line, `status` 0 where the line is good."""

    labels: np.ndarray  # int8[n]
    ints: np.ndarray  # int64[n, 13]; 0 where missing
    int_seen: np.ndarray  # bool[n, 13]
    cats: np.ndarray  # int64[n, 26]: the hex value; 0 where missing
    cat_seen: np.ndarray  # bool[n, 26]
    status: np.ndarray  # int8[n]
    detail: np.ndarray  # int32[n]: the faulty column (0-based) or the columns found
    starts: np.ndarray
    ends: np.ndarray

    def line(self, chunk: bytes, row: int) -> bytes:
        """Give the text of line `row` without its line ending."""
        return chunk[self.starts[row] : self.ends[row]]

    @property
    def good(self) -> np.ndarray:
        return self.status == OK


def parse_chunk(chunk: bytes) -> RawChunk:
    """Parse and validate every line of `chunk` (whole lines only) in one compiled pass."""
    buf = np.frombuffer(chunk, dtype=np.uint8)
    newlines = np.flatnonzero(buf == 10)
    n = len(newlines) + (len(chunk) > 0 and chunk[-1:] != b"\n")
    parsed = RawChunk(np.zeros(n, np.int8), np.zeros((n, INTEGER_FIELDS), np.int64),
                      np.zeros((n, INTEGER_FIELDS), np.bool_), np.zeros((n, CATEGORICAL_FIELDS), np.int64),
                      np.zeros((n, CATEGORICAL_FIELDS), np.bool_), np.zeros(n, np.int8), np.zeros(n, np.int32),
                      np.zeros(n, np.int64), np.zeros(n, np.int64))
    _parse_chunk(buf, newlines, parsed.labels, parsed.ints, parsed.int_seen, parsed.cats, parsed.cat_seen,
                 parsed.status, parsed.detail, parsed.starts, parsed.ends)
    return parsed


def reason(parsed: RawChunk, chunk: bytes, row: int) -> str:
    """Give the one-line reason why line `row` of the chunk was rejected."""
    code, detail = int(parsed.status[row]), int(parsed.detail[row])
    if code == EMPTY_LINE:
        return "empty line"
    if code == COLUMN_COUNT:
        hint = " (Kaggle's test.txt has no label column)" if detail == COLUMNS - 1 else ""
        return f"expected {COLUMNS} tab-separated columns (label, I1-I13, C1-C26), found {detail}{hint}"
    text = parsed.line(chunk, row).split(b"\t")[detail]
    if code == BAD_LABEL:
        return f"label {_shown(text)} is not 0 or 1"
    if code == BAD_INTEGER:
        return f"{FIELD_NAMES[detail]} {_shown(text)} is not an integer (at most {_MAX_INTEGER_DIGITS} digits)"
    if code == BAD_HEX:
        return f"{FIELD_NAMES[detail]} {_shown(text)} is not 8 lowercase hex digits"
    raise AssertionError(f"unknown status {code}")


@dataclass
class ChunkCounts:
    """What the first pass needs of one chunk's good rows: clipped integer ranges and category counts."""

    rows: int
    int_min: np.ndarray  # int64[13]; _NO_VALUE where the field had no value
    int_max: np.ndarray  # int64[13]; -_NO_VALUE where the field had no value
    keys: np.ndarray  # uint64: field << 32 | value, sorted, distinct
    counts: np.ndarray  # int64, per key


_RADIX_BITS = 13  # three passes cover a key's 37 bits (5 of field, 32 of value)


@numba.njit(cache=True, nogil=True)
def _sorted_keys(keys):
    """Sort keys below 2**39 (field << 32 | value): an LSD radix sort, ~4× faster here than np.sort."""
    radix = 1 << _RADIX_BITS
    mask = np.uint64(radix - 1)
    src, dst = keys, np.empty_like(keys)
    starts = np.empty(radix, np.int64)
    for shift in (0, _RADIX_BITS, 2 * _RADIX_BITS):
        shift_by = np.uint64(shift)
        starts[:] = 0
        for i in range(src.size):
            starts[(src[i] >> shift_by) & mask] += 1
        total = 0
        for d in range(radix):
            total, starts[d] = total + starts[d], total
        for i in range(src.size):
            d = (src[i] >> shift_by) & mask
            dst[starts[d]] = src[i]
            starts[d] += 1
        src, dst = dst, src
    return src


@numba.njit(cache=True, nogil=True)
def _count(status, ints, int_seen, cats, cat_seen):
    """Give (rows, clipped integer minima, maxima, sorted distinct keys, their counts) of the good rows."""
    int_min = np.full(INTEGER_FIELDS, _NO_VALUE, np.int64)
    int_max = np.full(INTEGER_FIELDS, -_NO_VALUE, np.int64)
    keys = np.empty(status.size * CATEGORICAL_FIELDS, np.uint64)
    n = 0
    rows = 0
    for row in range(status.size):
        if status[row] != OK:
            continue
        rows += 1
        for k in range(INTEGER_FIELDS):
            if int_seen[row, k]:
                v = min(ints[row, k], _CLIP[k])
                int_min[k] = min(int_min[k], v)
                int_max[k] = max(int_max[k], v)
        for j in range(CATEGORICAL_FIELDS):
            if cat_seen[row, j]:
                keys[n] = (np.uint64(j) << np.uint64(32)) | np.uint64(cats[row, j])
                n += 1
    keys = _sorted_keys(keys[:n])
    distinct = np.empty(n, np.uint64)
    counts = np.empty(n, np.int64)
    m = 0
    for i in range(n):
        if m and distinct[m - 1] == keys[i]:
            counts[m - 1] += 1
        else:
            distinct[m] = keys[i]
            counts[m] = 1
            m += 1
    return rows, int_min, int_max, distinct[:m], counts[:m]


def count_chunk(parsed: RawChunk) -> ChunkCounts:
    """Give the first pass's statistics of the good rows of a chunk."""
    return ChunkCounts(*_count(parsed.status, parsed.ints, parsed.int_seen, parsed.cats, parsed.cat_seen))


class Counter:
    """Exact counts of (field, value) over many chunks, merged in runs of growing size (amortised n log n)."""

    def __init__(self) -> None:
        self.rows = 0
        self.int_min = np.full(INTEGER_FIELDS, _NO_VALUE, np.int64)
        self.int_max = np.full(INTEGER_FIELDS, -_NO_VALUE, np.int64)
        self._keys = np.empty(0, np.uint64)
        self._counts = np.empty(0, np.int64)
        self._pending: list[ChunkCounts] = []
        self._pending_size = 0

    def add(self, chunk: ChunkCounts) -> None:
        self.rows += chunk.rows
        np.minimum(self.int_min, chunk.int_min, out=self.int_min)
        np.maximum(self.int_max, chunk.int_max, out=self.int_max)
        self._pending.append(chunk)
        self._pending_size += len(chunk.keys)
        if self._pending_size > max(len(self._keys), 1 << 20):
            self._merge()

    def _merge(self) -> None:
        keys = np.concatenate([self._keys, *(c.keys for c in self._pending)])
        counts = np.concatenate([self._counts, *(c.counts for c in self._pending)])
        self._keys, inverse = np.unique(keys, return_inverse=True)
        self._counts = np.bincount(inverse, weights=counts, minlength=len(self._keys)).astype(np.int64)
        self._pending, self._pending_size = [], 0

    def feature_map(self, cutoff: int, sources: tuple[SourceFile, ...]) -> FeatureMap:
        """Give the feature map of everything counted."""
        self._merge()
        fields = (self._keys >> np.uint64(32)).astype(np.int64)
        values = (self._keys & np.uint64(0xFFFFFFFF)).astype(np.int64)
        kept = []
        for j in range(CATEGORICAL_FIELDS):
            mine = (fields == j) & (self._counts >= cutoff)
            field_values, field_counts = values[mine], self._counts[mine]
            order = np.lexsort((field_values, -field_counts))  # most frequent first, ties by hex text
            kept.append(field_values[order])
        seen = self.int_min != _NO_VALUE
        return FeatureMap(cutoff, tuple(int(v) if s else None for v, s in zip(self.int_min, seen)),
                          tuple(int(v) if s else None for v, s in zip(self.int_max, seen)), tuple(kept), self.rows,
                          sources)


_FIBONACCI = np.uint64(11400714819323198485)  # 2**64 / golden ratio: multiplicative hashing


@numba.njit(cache=True, nogil=True)
def _slot(value, bits):
    return np.int64((np.uint64(value) * _FIBONACCI) >> np.uint64(64 - bits))


@numba.njit(cache=True, nogil=True)
def _build_lookup(kept, ids, bounds, bits, base, slot_values, slot_ids):
    """Fill each field's open-addressing table (linear probing, at most half full; -1 = empty)."""
    for j in range(bounds.size - 1):
        mask = (1 << bits[j]) - 1
        for i in range(bounds[j], bounds[j + 1]):
            slot = _slot(kept[i], bits[j])
            while slot_values[base[j] + slot] != -1:
                slot = (slot + 1) & mask
            slot_values[base[j] + slot] = kept[i]
            slot_ids[base[j] + slot] = ids[i]


@numba.njit(cache=True, nogil=True)
def _encode(status, raw_labels, ints, int_seen, cats, cat_seen, bits, base, slot_values, slot_ids, offsets,
            has_range, lows, spans, labels, ids, values):
    """Map good rows: integers clipped and min-max scaled into [0, 1], categories by a hash lookup per field."""
    out = 0
    for row in range(status.size):
        if status[row] != OK:
            continue
        labels[out] = raw_labels[row]
        for k in range(INTEGER_FIELDS):
            ids[out, k] = k + 1
            value = 0.0
            if int_seen[row, k] and has_range[k]:
                value = (min(ints[row, k], _CLIP[k]) - lows[k]) / spans[k]
                value = min(1.0, max(0.0, value))
            values[out, k] = value
        for j in range(CATEGORICAL_FIELDS):
            found = offsets[j]
            if cat_seen[row, j]:
                target = cats[row, j]
                mask = (1 << bits[j]) - 1
                slot = _slot(target, bits[j])
                while slot_values[base[j] + slot] != -1:
                    if slot_values[base[j] + slot] == target:
                        found = slot_ids[base[j] + slot]
                        break
                    slot = (slot + 1) & mask
            ids[out, INTEGER_FIELDS + j] = found
            values[out, INTEGER_FIELDS + j] = 1.0
        out += 1


@dataclass(frozen=True)
class IntegerField:
    name: str  # I1..I13
    id: int
    clip: int  # values above it count as it
    min: int | None  # over the rows counted; None: never seen
    max: int | None


@dataclass(frozen=True)
class CategoricalField:
    name: str  # C1..C26
    other_id: int  # the id of every value not kept
    values: tuple[str, ...]  # the kept values (8 hex digits), in id order after other_id


@dataclass(frozen=True)
class FeatureMapFile:
    """What feature_map.json holds."""

    schema_version: int  # the layout version (pipebench.versioned)
    made_by: Made
    layout: str
    cutoff: int  # a categorical value seen fewer times than this maps to its field's other_id
    rows: int  # the rows counted
    feature_size: int
    integer_fields: tuple[IntegerField, ...]
    categorical_fields: tuple[CategoricalField, ...]
    sources: tuple[SourceFile, ...]  # the files counted


@dataclass(frozen=True, eq=False)
class FeatureMap:
    """Raw values → ids and values: integer ranges and, per categorical field, the kept values in id order."""

    cutoff: int
    int_min: tuple[int | None, ...]
    int_max: tuple[int | None, ...]
    kept: tuple[np.ndarray, ...]  # per categorical field: int64 hex values, id order
    rows: int
    sources: tuple[SourceFile, ...]

    def __post_init__(self) -> None:
        # For the compiled lookup: per field, a hash table of its kept values (at most half full) and their ids.
        offsets = np.array(self.offsets, dtype=np.int64)
        sizes = np.array([len(v) for v in self.kept], dtype=np.int64)
        bits = np.array([max(1, int(2 * n - 1).bit_length()) for n in sizes], dtype=np.int64)
        base = np.concatenate([[0], np.cumsum(1 << bits)]).astype(np.int64)
        slot_values = np.full(base[-1], -1, np.int64)
        slot_ids = np.zeros(base[-1], np.int64)
        kept = np.concatenate([np.asarray(v, dtype=np.int64) for v in self.kept] + [np.empty(0, np.int64)])
        kept_ids = np.concatenate([offsets[j] + 1 + np.arange(n, dtype=np.int64) for j, n in enumerate(sizes)]
                                  + [np.empty(0, np.int64)])
        _build_lookup(kept, kept_ids, np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64), bits, base,
                      slot_values, slot_ids)
        seen = np.array([lo is not None and hi > lo for lo, hi in zip(self.int_min, self.int_max)])
        lows = np.array([lo if s else 0 for lo, s in zip(self.int_min, seen)], dtype=np.int64)
        spans = np.array([hi - lo if s else 1 for lo, hi, s in zip(self.int_min, self.int_max, seen)], dtype=np.int64)
        tables = (bits, base, slot_values, slot_ids, offsets, seen, lows, spans)
        object.__setattr__(self, "_tables", tables)

    @property
    def offsets(self) -> list[int]:
        """Give each categorical field's first id (its "other" id); the last entry is feature_size."""
        offsets = [INTEGER_FIELDS + 1]
        for values in self.kept:
            offsets.append(offsets[-1] + 1 + len(values))
        return offsets

    @property
    def feature_size(self) -> int:
        return self.offsets[-1]

    def encode(self, parsed: RawChunk) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Give (labels float32[n], ids int64[n, 39], values float32[n, 39]) of the chunk's good rows."""
        n = int(parsed.good.sum())
        labels = np.empty(n, np.float32)
        ids = np.empty((n, FIELD_SIZE), np.int64)
        values = np.empty((n, FIELD_SIZE), np.float32)
        _encode(parsed.status, parsed.labels, parsed.ints, parsed.int_seen, parsed.cats, parsed.cat_seen,
                *self._tables, labels, ids, values)
        return labels, ids, values

    def to_json(self) -> dict:
        """Give the map as the versioned JSON saved beside the output."""
        return to_json(FeatureMapFile(
            FEATURE_MAP_VERSION, Made("pipebench convert --from criteo", pipebench.__version__),
            "lambdaji get_criteo_feature.py; categorical ids are its libsvm ids + 1 (no clash with I13)",
            self.cutoff, self.rows, self.feature_size,
            tuple(IntegerField(f"I{k + 1}", k + 1, CLIP[k], self.int_min[k], self.int_max[k])
                  for k in range(INTEGER_FIELDS)),
            tuple(CategoricalField(f"C{j + 1}", offset, tuple(f"{v:08x}" for v in kept))
                  for j, (offset, kept) in enumerate(zip(self.offsets, self.kept))),
            self.sources))

    def save(self, path: Path) -> None:
        from pipebench.atomic import atomic_write_json

        atomic_write_json(path, self.to_json(), allow_nan=False)

    @classmethod
    def load(cls, path: Path) -> FeatureMap:
        """Read a saved map; a file that is not one (or of another version) is one DataError naming it."""
        path = Path(path)
        doc = load_versioned(FeatureMapFile, path, FEATURE_MAP_VERSION, "a feature map",
                             "make it again with pipebench convert --from criteo", WAS[FEATURE_MAP_FILE])
        try:
            if len(doc.integer_fields) != INTEGER_FIELDS or len(doc.categorical_fields) != CATEGORICAL_FIELDS:
                raise ValueError(f"{len(doc.integer_fields)} integer and {len(doc.categorical_fields)} categorical "
                                 "fields")
            kept = tuple(np.array([int(v, 16) for v in c.values], dtype=np.int64) for c in doc.categorical_fields)
        except ValueError as err:
            raise DataError(f"{path}: a damaged feature map ({type(err).__name__}: {err})"[:280]) from None
        fmap = cls(doc.cutoff, tuple(f.min for f in doc.integer_fields), tuple(f.max for f in doc.integer_fields),
                   kept, doc.rows, doc.sources)
        if fmap.feature_size != doc.feature_size:
            raise DataError(f"{path}: a damaged feature map (its ids add up to {fmap.feature_size}, "
                            f"not its feature_size {doc.feature_size!r})")
        return fmap
