"""Raw Criteo → DeepFM rows: the converter's ids and values against a plain-Python statement of the mapping."""
from __future__ import annotations

import gzip
import hashlib
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipebench.converters import criteo, libsvm, packed, tfrecord
from pipebench.converters.convert import ConvertRequest, convert
from pipebench.converters.inputs import InputFile
from pipebench.errors import DataError, UsageError
from pipebench.synth import SynthSpec, synthesize

CLIP = [20, 600, 100, 50, 64000, 500, 100, 50, 500, 10, 10, 10, 50]


def reference_map(lines: list[str], cutoff: int) -> dict:
    """State the mapping in plain Python: lambdaji's get_criteo_feature.py, with pipebench's documented changes."""
    lows, highs = [None] * 13, [None] * 13
    counts = [Counter() for _ in range(26)]
    for line in lines:
        columns = line.split("\t")
        for k in range(13):
            if columns[1 + k] != "":
                v = min(int(columns[1 + k]), CLIP[k])
                lows[k] = v if lows[k] is None else min(lows[k], v)
                highs[k] = v if highs[k] is None else max(highs[k], v)
        for j in range(26):
            if columns[14 + j] != "":
                counts[j][columns[14 + j]] += 1
    ids, offset = [], 14  # C1's "other" id is 14: lambdaji's 13 is I13's id
    for j in range(26):
        kept = sorted((key for key, n in counts[j].items() if n >= cutoff), key=lambda key: (-counts[j][key], key))
        ids.append((offset, {key: offset + 1 + rank for rank, key in enumerate(kept)}))
        offset += 1 + len(kept)
    return {"lows": lows, "highs": highs, "ids": ids, "feature_size": offset}


def reference_rows(lines: list[str], fmap: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Give (labels, ids, values) of lines by the plain-Python mapping."""
    labels, all_ids, all_values = [], [], []
    for line in lines:
        columns = line.split("\t")
        ids, values = [], []
        for k in range(13):
            text, lo, hi = columns[1 + k], fmap["lows"][k], fmap["highs"][k]
            value = 0.0
            if text != "" and lo is not None and hi > lo:
                value = min(1.0, max(0.0, (min(int(text), CLIP[k]) - lo) / (hi - lo)))
            ids.append(k + 1)
            values.append(value)
        for j in range(26):
            other, kept = fmap["ids"][j]
            ids.append(kept.get(columns[14 + j], other))
            values.append(1.0)
        labels.append(float(columns[0]))
        all_ids.append(ids)
        all_values.append(values)
    values = np.array(all_values, np.float64).astype(np.float32)  # float32 of the exact quotient
    return np.array(labels, np.float32), np.array(all_ids, np.int64), values


def read_packed_rows(folder: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Give every row of a packed output folder, in order, read without TensorFlow."""
    parts = []
    for shard in sorted(folder.glob("part-*")):
        with InputFile(shard) as stream:
            for _, records in tfrecord.record_batches(stream):
                parts += [packed.unpack_record(r, criteo.FIELD_SIZE) for r in records]
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))


def hand_written() -> list[str]:
    """Give raw lines with every kind of missing value, out-of-clip and negative integers, rare and frequent
    categories."""
    common = [f"{0xA0000000 + j:08x}" for j in range(26)]
    lines = []
    for i in range(60):  # frequent values: kept at cutoff 3
        ints = [str((i * (k + 3)) % 70 - 3) for k in range(13)]
        cats = common if i % 3 else [f"{0xB0000000 + j:08x}" for j in range(26)]
        lines.append("\t".join([str(i % 2), *ints, *cats]))
    lines.append("\t".join(["1", *[""] * 13, *[""] * 26]))  # every column missing
    lines.append("\t".join(["0", "", *["5"] * 12, *common[:-1], ""]))  # first integer and last category missing
    lines.append("\t".join(["1", *["99999"] * 12, "", "", *common[1:]]))  # last integer, first category missing
    lines.append("\t".join(["0", *["-3"] * 13, *[f"{0xC0000000 + j:08x}" for j in range(26)]]))  # rare values
    lines.append("\t".join(["1", *[str(c) for c in CLIP], *["0000000f"] * 26]))
    lines.append("\t".join(["0", *["7", ""] * 6, "7", *(["", common[0]] * 13)]))  # alternate gaps
    return lines


def write_lines(path: Path, lines: list[str], ending: str = "\n", final_newline: bool = True) -> Path:
    path.write_text(ending.join(lines) + (ending if final_newline else ""))
    return path


def assert_same_rows(got, want) -> None:
    for name, g, w in zip(("labels", "ids", "values"), got, want):
        assert g.shape == w.shape, name
        mismatch = np.argwhere(g != w)
        first = tuple(mismatch[0]) if len(mismatch) else None
        assert first is None, f"{name} differ first at {first}: {g[first]} != {w[first]}"


@pytest.mark.parametrize("ending,final_newline", [("\n", True), ("\r\n", False)])
def test_hand_written_lines_map_as_the_plain_statement_says(tmp_path, ending, final_newline):
    lines = hand_written()
    src = write_lines(tmp_path / "train.txt", lines, ending, final_newline)
    manifest = convert(ConvertRequest(inputs=(src,), out=tmp_path / "out", format="packed", from_format="criteo",
                                      cutoff=3, workers=2, chunk_bytes=700))
    fmap = reference_map(lines, 3)
    assert_same_rows(read_packed_rows(tmp_path / "out"), reference_rows(lines, fmap))
    assert manifest.feature_size == fmap["feature_size"]
    assert manifest.input_format == "criteo"
    saved = json.loads((tmp_path / "out" / criteo.FEATURE_MAP_FILE).read_text())
    assert saved["schema_version"] == criteo.FEATURE_MAP_VERSION and saved["cutoff"] == 3


def test_synthetic_raw_rows_map_as_the_plain_statement_says(tmp_path):
    described = synthesize(SynthSpec(rows=4000, out=tmp_path / "raw", files=2, format="criteo", seed=3))
    assert described.oracle_auc > 0.7
    shards = sorted((tmp_path / "raw").glob("part-*.txt"))
    lines = [line for shard in shards for line in shard.read_text().splitlines()]
    assert len(lines) == 4000 and all(len(line.split("\t")) == 40 for line in lines)
    assert any("\t\t" in line for line in lines)  # missing integers are written as empty columns
    m = convert(ConvertRequest(inputs=tuple(shards), out=tmp_path / "out", format="packed", from_format="criteo",
                               cutoff=10))
    assert_same_rows(read_packed_rows(tmp_path / "out"), reference_rows(lines, reference_map(lines, 10)))
    assert [s.sha256 for s in m.sources] == [hashlib.sha256(p.read_bytes()).hexdigest() for p in shards]


def test_a_saved_map_maps_other_files_unknown_values_to_the_other_id(tmp_path):
    train = hand_written()
    later = ["\t".join(["1", *["100000"] * 13, *[f"{0xD0000000 + j:08x}" for j in range(26)]]),  # unseen values
             "\t".join(["0", *["-50"] * 13, *[f"{0xA0000000 + j:08x}" for j in range(26)]])]  # below every low
    convert(ConvertRequest(inputs=(write_lines(tmp_path / "train.txt", train),), out=tmp_path / "train",
                           format="packed", from_format="criteo", cutoff=3))
    test = write_lines(tmp_path / "test.txt", later)
    with gzip.open(tmp_path / "test.txt.gz", "wt") as f:
        f.write(test.read_text())
    for name in ("test.txt", "test.txt.gz"):
        out = tmp_path / f"out-{name}"
        convert(ConvertRequest(inputs=(tmp_path / name,), out=out, format="packed", from_format="criteo",
                               feature_map=tmp_path / "train" / criteo.FEATURE_MAP_FILE))
        got = read_packed_rows(out)
        assert_same_rows(got, reference_rows(later, reference_map(train, 3)))
        saved = (tmp_path / "train" / criteo.FEATURE_MAP_FILE).read_bytes()
        assert (out / criteo.FEATURE_MAP_FILE).read_bytes() == saved  # the map travels with what it mapped
    assert got[2][0, :13].tolist() == [1.0] * 13 and got[2][1, :13].tolist() == [0.0] * 13  # clamped to [0, 1]


def test_libsvm_and_tfrecord_outputs_hold_the_same_rows(tmp_path):
    lines = hand_written()
    src = write_lines(tmp_path / "train.txt", lines)
    want = reference_rows(lines, reference_map(lines, 3))
    convert(ConvertRequest(inputs=(src,), out=tmp_path / "svm", format="libsvm", from_format="criteo", cutoff=3))
    parsed = libsvm.parse_chunk(next((tmp_path / "svm").glob("part-*")).read_bytes(), criteo.FIELD_SIZE)
    assert (parsed.status == libsvm.OK).all()
    np.testing.assert_array_equal(parsed.ids, want[1])
    np.testing.assert_allclose(parsed.values, want[2], rtol=1e-6)
    manifest = convert(ConvertRequest(inputs=(src,), out=tmp_path / "tfr", format="tfrecord", from_format="criteo",
                                      cutoff=3))
    assert manifest.rows == len(lines) and manifest.format == "tfrecord"


def test_output_does_not_depend_on_workers_or_chunking(tmp_path):
    src = synthesize(SynthSpec(rows=3000, out=tmp_path / "raw", format="criteo")).files[0].name
    outs = []
    for workers, chunk in ((1, 1 << 22), (3, 5000)):
        out = tmp_path / f"out-{workers}"
        convert(ConvertRequest(inputs=(tmp_path / "raw" / src,), out=out, format="packed", from_format="criteo",
                               cutoff=4, workers=workers, chunk_bytes=chunk))
        outs.append([(p.name, p.read_bytes()) for p in sorted(out.glob("part-*"))]
                    + [(criteo.FEATURE_MAP_FILE, (out / criteo.FEATURE_MAP_FILE).read_bytes())])
    assert outs[0] == outs[1]


def test_skip_leaves_bad_lines_out_of_both_passes(tmp_path):
    lines = hand_written()
    bad = ["1\t2", "x" + lines[0][1:], lines[0].replace("\t-3\t", "\t-3.5\t", 1), lines[0][:-8] + "zzzzzzzz"]
    src = write_lines(tmp_path / "train.txt", lines[:5] + bad + lines[5:])
    manifest = convert(ConvertRequest(inputs=(src,), out=tmp_path / "out", format="packed", from_format="criteo",
                                      cutoff=3, on_error="skip"))
    assert manifest.rejected.by_reason == {"bad_hex": 1, "bad_integer": 1, "bad_label": 1, "column_count": 1}
    assert_same_rows(read_packed_rows(tmp_path / "out"), reference_rows(lines, reference_map(lines, 3)))


def test_a_bad_line_fails_in_the_first_pass_with_file_and_line(tmp_path):
    lines = hand_written()
    src = write_lines(tmp_path / "train.txt", lines[:40] + ["0\t" + "\t".join(["1"] * 13)] + lines[40:])
    with pytest.raises(DataError, match=r"train\.txt:41: expected 40 tab-separated columns \(label, I1-I13, "
                                        r"C1-C26\), found 14$"):
        convert(ConvertRequest(inputs=(src,), out=tmp_path / "out", from_format="criteo", chunk_bytes=900))
    assert not (tmp_path / "out").exists()


def test_options_that_cannot_work_together_are_refused(tmp_path):
    src = write_lines(tmp_path / "train.txt", hand_written())
    with pytest.raises(UsageError, match="--from criteo"):
        convert(ConvertRequest(inputs=(src,), out=tmp_path / "o", cutoff=3))
    with pytest.raises(UsageError, match="not both"):
        convert(ConvertRequest(inputs=(src,), out=tmp_path / "o", from_format="criteo", cutoff=3, feature_map=src))
    with pytest.raises(UsageError, match="drop --field-size 10"):
        convert(ConvertRequest(inputs=(src,), out=tmp_path / "o", from_format="criteo", field_size=10))
    with pytest.raises(UsageError, match="feature map gives ids up to"):
        convert(ConvertRequest(inputs=(src,), out=tmp_path / "o", from_format="criteo", cutoff=3, feature_size=20))
    assert not (tmp_path / "o").exists()


def _plain_status(line: str) -> tuple[int, int]:
    """State the line rules in plain Python: (status, faulty column or columns found)."""
    if line == "":
        return criteo.EMPTY_LINE, 0
    columns = line.split("\t")
    if len(columns) != criteo.COLUMNS:
        return criteo.COLUMN_COUNT, len(columns)
    if columns[0] not in ("0", "1"):
        return criteo.BAD_LABEL, 0
    for k, text in enumerate(columns[1:14]):
        digits = text[1:] if text.startswith("-") else text
        if not (digits == "" or (digits.isascii() and digits.isdigit())) or len(digits) > 18 or text == "-":
            return criteo.BAD_INTEGER, 1 + k
    for j, text in enumerate(columns[14:]):
        if text and not (len(text) == 8 and all(c in "0123456789abcdef" for c in text)):
            return criteo.BAD_HEX, 14 + j
    return criteo.OK, 0


_TOKENS = ["", "0", "1", "2", "-", "-7", "12", "2.5", "9" * 18, "9" * 19, "-" + "9" * 18, "x", " 1",
           "0000abcd", "deadbeef", "DEADBEEF", "abcdef012", "abcdef0", "abcdefgh", "1\t2", "\t"]


@settings(max_examples=400, deadline=None)
@given(edits=st.lists(st.tuples(st.integers(0, 41), st.sampled_from(_TOKENS)), max_size=4),
       drop=st.integers(0, 3), add=st.integers(0, 2))
def test_the_line_rules_match_their_plain_statement(edits, drop, add):
    """Every line, however broken, gets the status and column the plain rules give (one compiled scan)."""
    columns = ["1", *["5"] * 13, *["0a1b2c3d"] * 26]
    for where, token in edits:
        if where < len(columns):
            columns[where] = token
    columns = columns[: len(columns) - drop] + ["7"] * add
    line = "\t".join(columns)
    parsed = criteo.parse_chunk(line.encode() + b"\n")
    assert (int(parsed.status[0]), int(parsed.detail[0])) == _plain_status(line), line


@settings(max_examples=100, deadline=None)
@given(keys=st.lists(st.tuples(st.integers(0, criteo.CATEGORICAL_FIELDS - 1), st.integers(0, 2**32 - 1)),
                     max_size=3000))
def test_the_radix_sort_sorts_every_key_a_chunk_can_hold(keys):
    packed_keys = np.array([(field << 32) | value for field, value in keys], dtype=np.uint64)
    assert criteo._sorted_keys(packed_keys.copy()).tolist() == sorted(packed_keys.tolist())


@settings(max_examples=50, deadline=None)
@given(kept=st.lists(st.lists(st.integers(0, 2**32 - 1), unique=True, max_size=40), min_size=26, max_size=26),
       probes=st.lists(st.integers(0, 2**32 - 1), max_size=30))
def test_the_lookup_tables_give_each_kept_value_its_id_and_the_rest_the_other_id(kept, probes):
    """Open addressing per field: every kept value is found, any other value (collisions included) is not."""
    fmap = criteo.FeatureMap(1, (None,) * 13, (None,) * 13, tuple(np.array(v, np.int64) for v in kept), 0, [])
    empty = ["1", *[""] * 39]
    for j, values in enumerate(kept):
        tries = values + probes
        rows = ["\t".join(empty[: 14 + j] + [f"{v:08x}"] + empty[15 + j :]) for v in tries] or ["\t".join(empty)]
        got = fmap.encode(criteo.parse_chunk(("\n".join(rows) + "\n").encode()))[1][: len(tries), 13 + j].tolist()
        assert got == [fmap.offsets[j] + 1 + values.index(v) if v in values else fmap.offsets[j] for v in tries]
