"""`pipebench convert`: exact numbers, strict errors, sharding, manifest, compression, inverse."""
from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tfdata import read_examples, read_packed, write_sample_tfrecord

from pipebench.converters import tfrecord
from pipebench.converters.convert import CHUNK_LINES, MAX_LINE_BYTES, ConvertRequest, convert
from pipebench.converters.inputs import InputFile
from pipebench.converters.manifest import Rejected, read_manifest
from pipebench.atomic import atomic_write_json
from pipebench.cli import main
from pipebench.errors import DataError, UsageError

F = 4


def libsvm_text(labels, ids, values) -> str:
    return "".join(f"{label} " + " ".join(f"{i}:{v}" for i, v in zip(r, vs)) + "\n"
                   for label, r, vs in zip(labels, ids, values))


def write(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def expected(labels, ids, values):
    return (np.array([np.float32(float(label)) for label in labels], np.float32), np.array(ids, np.int64),
            np.array([[np.float32(float(v)) for v in row] for row in values], np.float32).reshape(len(ids), -1))


def assert_rows(got, want):
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        assert np.array_equal(g, w), (g, w)


value_text = st.one_of(st.floats(-1e30, 1e30, allow_nan=False).map(repr),
                       st.floats(width=32, allow_nan=False, allow_infinity=False).map(lambda x: str(np.float32(x))),
                       st.integers(0, 10**5).map(lambda k: f"{k / 1e5:.5f}"), st.just("1"))
rows = st.integers(1, 40).flatmap(lambda n: st.tuples(
    st.lists(st.sampled_from(["0", "1", "0.25", "1.0"]), min_size=n, max_size=n),
    st.lists(st.lists(st.integers(0, 2**31 - 1), min_size=F, max_size=F), min_size=n, max_size=n),
    st.lists(st.lists(value_text, min_size=F, max_size=F), min_size=n, max_size=n)))


@pytest.mark.tf
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=rows, fmt=st.sampled_from(["tfrecord", "packed"]), rows_per_record=st.sampled_from([1, 3, 16]))
def test_libsvm_to_tensors_is_exact(tmp_path_factory, rows, fmt, rows_per_record):
    tmp = tmp_path_factory.mktemp("exact")
    src = write(tmp / "in.libsvm", libsvm_text(*rows))
    convert(ConvertRequest(inputs=(src,), out=tmp / "out", format=fmt, field_size=F, workers=2,
                           rows_per_record=rows_per_record, chunk_bytes=256))
    got = read_examples(tmp / "out") if fmt == "tfrecord" else read_packed(tmp / "out")
    assert_rows(got, expected(*rows))


float32s = st.floats(width=32, allow_nan=False, allow_infinity=False)


@pytest.mark.tf
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.integers(1, 30).flatmap(lambda n: st.tuples(
    st.lists(st.floats(0, 1, width=32), min_size=n, max_size=n),
    st.lists(st.lists(st.integers(0, 2**62), min_size=F, max_size=F), min_size=n, max_size=n),
    st.lists(st.lists(float32s, min_size=F, max_size=F), min_size=n, max_size=n))))
def test_tfrecord_libsvm_tfrecord_round_trip(tmp_path_factory, data):
    tmp = tmp_path_factory.mktemp("trip")
    labels, ids, values = (np.array(data[0], np.float32), np.array(data[1], np.int64), np.array(data[2], np.float32))
    write_sample_tfrecord(tmp / "sample.tfrecord", labels, ids, values)
    convert(ConvertRequest(inputs=(tmp / "sample.tfrecord",), out=tmp / "text", format="libsvm", field_size=F))
    texts = sorted((tmp / "text").glob("part-*.libsvm"))
    convert(ConvertRequest(inputs=tuple(texts), out=tmp / "again", field_size=F))
    assert_rows(read_examples(tmp / "again"), (labels, ids, values))


MALFORMED = [
    ("1 1:1 2:1 3:1", "expected 4 id:value pairs, found 3"),
    ("", "empty line"),
    ("x 1:1 2:1 3:1 4:1", "label 'x' is not a number"),
    ("1 1:1 2 3:1 4:1", "pair 2 '2' has no ':'"),
    ("1 1:1 b:1 3:1 4:1", "id 'b' is not a non-negative 64-bit integer"),
    ("1 1:1 -2:1 3:1 4:1", "id is negative"),
    ("1 1:1 2:1 3:1 99:1", "id 99 is not below feature_size 50"),
    ("1 1:1 2:one 3:1 4:1", "value 'one' is not a number"),
    ("1 1:1\t2:1 3:1 4:1", "a tab"),
    ("1 1:1  2:1 3:1 4:1", "a repeated, leading or trailing space"),
]


@pytest.mark.parametrize("bad,reason", MALFORMED, ids=[r for _, r in MALFORMED])
def test_malformed_line_names_file_line_and_reason_and_leaves_nothing(tmp_path, cli, bad, reason):
    good = "1 1:1 2:0.5 3:1 4:1\n"
    src = write(tmp_path / "in.libsvm", good * 5 + bad + "\n" + good * 3)
    out = tmp_path / "out"
    code, _, err = cli("convert", src, "--out", out, "--field-size", F, "--feature-size", 50)
    assert code == 1
    assert err.strip() == f"pipebench: error: {src}:6: {err.split(':6: ', 1)[1].strip()}"
    assert reason in err and err.count("\n") == 1
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.libsvm"]


def test_first_error_is_reported_even_across_chunks_and_workers(tmp_path, cli):
    good = "1 1:1 2:0.5 3:1 4:1\n"
    src = write(tmp_path / "in.libsvm", good * 3000 + "1 1:1\n" + good * 10 + "bad\n")
    code, _, err = cli("convert", src, "--out", tmp_path / "out", "--field-size", F, "--workers", 2)
    assert code == 1 and f"{src}:3001: expected 4 id:value pairs, found 1" in err


def _bytes_read() -> int:
    """Give the bytes this process has read so far (read() calls on any file), from /proc/self/io."""
    with open("/proc/self/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("rchar:"))


def test_a_line_without_end_is_refused_after_reading_about_the_limit(tmp_path):
    """A 128 MiB file of NULs (a hole: no disk) is one line; it is refused after ~2 reads, not at its end."""
    src = tmp_path / "in.libsvm"
    with open(src, "wb") as f:
        f.truncate(128 << 20)
    before = _bytes_read()
    with pytest.raises(DataError) as err:
        convert(ConvertRequest(inputs=(src,), out=tmp_path / "o", field_size=39, workers=2))
    assert str(err.value) == (f"{src}:1: line longer than {MAX_LINE_BYTES:,} bytes (not line-oriented text: a binary "
                              "or damaged file?)")
    assert _bytes_read() - before < 3 * MAX_LINE_BYTES
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("chunk_bytes", [4096, (1 << 20) + 7, 4 << 20])
def test_the_line_limit_holds_wherever_reads_split_the_line_and_whatever_on_error(tmp_path, chunk_bytes):
    good = b"1 1:1 2:0.5 3:1 4:1\n"
    at_limit = write(tmp_path / "a.libsvm", good * 3 + b"x" * MAX_LINE_BYTES + b"\n" + good)
    found = convert(ConvertRequest(inputs=(at_limit,), out=tmp_path / "a", field_size=F, on_error="skip",
                                   chunk_bytes=chunk_bytes))
    assert found.rows == 4 and found.rejected.by_reason == {"bad_label": 1}
    over = write(tmp_path / "b.libsvm", good * 3 + b"x" * (MAX_LINE_BYTES + 1) + b"\n" + good)
    with pytest.raises(DataError, match=rf"^{over}:4: line longer than {MAX_LINE_BYTES:,} bytes"):
        convert(ConvertRequest(inputs=(over,), out=tmp_path / "b", field_size=F, on_error="skip",
                               chunk_bytes=chunk_bytes))


def test_files_of_many_short_lines_count_and_number_every_line(tmp_path):
    """Chunks hold at most CHUNK_LINES lines (a parser's arrays have a row per line); numbering runs on across them."""
    good = b"1 1:1 2:0.5 3:1 4:1\n"
    blank = 3 * CHUNK_LINES + 5
    src = write(tmp_path / "in.libsvm", good + b"\n" * blank + good + b"bad\n")
    found = convert(ConvertRequest(inputs=(src,), out=tmp_path / "q", field_size=F, on_error="quarantine"))
    assert found.rows == 2 and found.rejected.by_reason == {"bad_label": 1, "empty_line": blank}
    last = (tmp_path / "q" / "quarantine.jsonl").read_text().splitlines()[-1]
    assert json.loads(last)["line"] == blank + 3 and found.sources[0].lines == blank + 3


@pytest.mark.tf
def test_skip_and_quarantine_count_rejected_lines(tmp_path):
    good = "1 1:1 2:0.5 3:1 4:1\n"
    lines = [good] * 4 + ["1 1:1\n", good, "\n", "2 1:1 2:1 3:1 4:1\n", good]
    src = write(tmp_path / "in.libsvm", "".join(lines))
    skip = convert(ConvertRequest(inputs=(src,), out=tmp_path / "skip", field_size=F, on_error="skip"))
    assert skip.rows == 6
    assert skip.rejected == Rejected(3, {"empty_line": 1, "label_range": 1, "pair_count": 1})
    assert not (tmp_path / "skip" / "quarantine.jsonl").exists()
    quarantine = convert(ConvertRequest(inputs=(src,), out=tmp_path / "q", field_size=F, on_error="quarantine"))
    assert quarantine.rejected == skip.rejected
    entries = [json.loads(line) for line in (tmp_path / "q" / "quarantine.jsonl").read_text().splitlines()]
    assert [(e["line"], e["code"], e["text"]) for e in entries] == [
        (5, "pair_count", "1 1:1"), (7, "empty_line", ""), (8, "label_range", "2 1:1 2:1 3:1 4:1")]
    assert all(e["file"] == str(src) and e["reason"] for e in entries)
    assert len(read_examples(tmp_path / "q")[0]) == 6


@pytest.mark.tf
def test_gzip_and_crlf_input(tmp_path):
    text = "1 1:1 2:0.5 3:1 4:1\r\n0 5:1 6:0.25 7:1 8:2\r\n"
    plain = convert(ConvertRequest(inputs=(write(tmp_path / "a.libsvm", text),), out=tmp_path / "a", field_size=F))
    gz = write(tmp_path / "b.data", gzip.compress(text.encode()))
    zipped = convert(ConvertRequest(inputs=(gz,), out=tmp_path / "b", field_size=F))
    assert zipped.sources[0].compression == "gzip"
    assert zipped.sources[0].sha256 == hashlib.sha256(gz.read_bytes()).hexdigest()
    assert plain.rows == zipped.rows == 2
    labels, ids, values = read_examples(tmp_path / "b")
    assert ids.tolist() == [[1, 2, 3, 4], [5, 6, 7, 8]] and values[1].tolist() == [1, 0.25, 1, 2]
    assert (tmp_path / "a" / plain.shards[0].name).read_bytes() == \
        (tmp_path / "b" / zipped.shards[0].name).read_bytes()


def _rows_text(n: int) -> str:
    return "".join(f"{i % 2} {i}:1 {i + 1}:0.5 {i + 2}:0.25 {i + 3}:1\n" for i in range(n))


def test_shard_count_gives_exactly_n_balanced_files(tmp_path):
    src = write(tmp_path / "in.libsvm", _rows_text(1001))
    manifest = convert(ConvertRequest(inputs=(src,), out=tmp_path / "o", field_size=F, shards=4))
    assert [s.rows for s in manifest.shards] == [251, 251, 251, 248]
    assert [s.name for s in manifest.shards] == [f"part-{i:05d}-of-00004.tfrecord" for i in range(4)]
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == sorted(
        [s.name for s in manifest.shards] + ["manifest.json"])
    packed = convert(ConvertRequest(inputs=(src,), out=tmp_path / "p", field_size=F, shards=3, format="packed",
                                    rows_per_record=100))
    assert [s.rows for s in packed.shards] == [400, 400, 201]
    more = convert(ConvertRequest(inputs=(src,), out=tmp_path / "m", field_size=F, shards=1200))
    assert len(more.shards) == 1200 and sum(s.rows for s in more.shards) == 1001


def test_shard_mb_bounds_each_file(tmp_path):
    src = write(tmp_path / "in.libsvm", _rows_text(3000))
    budget_mb = 0.02
    manifest = convert(ConvertRequest(inputs=(src,), out=tmp_path / "o", field_size=F, shard_mb=budget_mb))
    sizes = [s.bytes for s in manifest.shards]
    record_bytes = sizes[0] / manifest.shards[0].rows
    assert len(sizes) > 3
    assert all(size <= budget_mb * 2**20 for size in sizes)
    assert all(size > budget_mb * 2**20 - 2 * record_bytes for size in sizes[:-1])
    assert sum(s.rows for s in manifest.shards) == 3000


@pytest.mark.tf
def test_manifest_describes_output_and_sources(tmp_path):
    first = write(tmp_path / "a.libsvm", "1 1:1 2:0.5 3:1 4:1\n0 5:1 6:1 7:1 80:1\n")
    second = write(tmp_path / "b.libsvm", "1 9:1 10:1 11:1 12:1\n")
    m = convert(ConvertRequest(inputs=(first, second), out=tmp_path / "o", field_size=F, feature_size=100,
                               compression="gzip"))
    assert m.rows == 3 and m.field_size == F and m.feature_size == 100
    assert m.feature_size_seen == 81
    assert m.positive_rate == pytest.approx(2 / 3)
    assert m.schema == {"label": {"dtype": "float32", "shape": [1]}, "ids": {"dtype": "int64", "shape": [F]},
                           "values": {"dtype": "float32", "shape": [F]}}
    assert m.format == "tfrecord" and m.compression == "gzip" and m.tf_compression_type == "GZIP"
    assert m.rejected == Rejected(0, {})
    assert m.converter.version
    assert [(s.path, s.bytes, s.lines) for s in m.sources] == [(str(first), first.stat().st_size, 2),
                                                                           (str(second), second.stat().st_size, 1)]
    for source in m.sources:
        assert source.sha256 == hashlib.sha256(Path(source.path).read_bytes()).hexdigest()
    for shard in m.shards:
        data = (tmp_path / "o" / shard.name).read_bytes()
        assert shard.bytes == len(data) and shard.sha256 == hashlib.sha256(data).hexdigest()
    assert json.loads((tmp_path / "o" / "manifest.json").read_text()) == m.to_json()
    assert read_manifest(tmp_path / "o" / "manifest.json") == m
    assert read_examples(tmp_path / "o")[1][:, 3].tolist() == [4, 80, 12]


@pytest.mark.tf
@pytest.mark.parametrize("compression", ["none", "gzip", "zlib"])
def test_output_does_not_depend_on_worker_count(tmp_path, compression):
    src = write(tmp_path / "in.libsvm", _rows_text(5000))
    outputs = []
    for workers in (1, 3):
        out = tmp_path / f"w{workers}"
        convert(ConvertRequest(inputs=(src,), out=out, field_size=F, workers=workers, chunk_bytes=4096,
                               compression=compression))
        outputs.append({p.name: p.read_bytes() for p in out.glob("part-*")})
    assert outputs[0] == outputs[1]
    assert len(read_examples(tmp_path / "w3")[0]) == 5000


@pytest.mark.tf
def test_existing_output_needs_force(tmp_path, cli):
    src = write(tmp_path / "in.libsvm", _rows_text(3))
    (tmp_path / "out").mkdir()
    code, _, err = cli("convert", src, "--out", tmp_path / "out", "--field-size", F)
    assert code == 2 and "already exists (use --force" in err
    code, out, _ = cli("convert", src, "--out", tmp_path / "out", "--field-size", F, "--force")
    assert code == 0 and "wrote 3 rows" in out
    assert len(read_examples(tmp_path / "out")[0]) == 3


def test_packed_refuses_ids_beyond_int32(tmp_path, cli):
    src = write(tmp_path / "in.libsvm", f"1 1:1 2:1 3:1 {2**31}:1\n")
    code, _, err = cli("convert", src, "--out", tmp_path / "o", "--field-size", F, "--format", "packed")
    assert code == 1 and "does not fit the packed format's int32 id column" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.tf
def test_sample_tfrecords_convert_to_packed(tmp_path):
    labels = np.array([1, 0, 1], np.float32)
    ids = np.arange(12).reshape(3, F)
    values = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, F)
    write_sample_tfrecord(tmp_path / "s.tfrecord", labels, ids, values)
    m = convert(ConvertRequest(inputs=(tmp_path / "s.tfrecord",), out=tmp_path / "p", field_size=F, format="packed",
                               rows_per_record=2))
    assert m.input_format == "tfrecord" and m.rows == 3
    assert_rows(read_packed(tmp_path / "p"), (labels, ids, values))


@pytest.mark.tf
def test_tfrecord_of_another_schema_is_a_clear_error(tmp_path, cli):
    write_sample_tfrecord(tmp_path / "s.tfrecord", [1.0], [[1, 2, 3]], [[1.0, 2.0, 3.0]])
    code, _, err = cli("convert", tmp_path / "s.tfrecord", "--out", tmp_path / "o", "--format", "libsvm",
                       "--field-size", F)
    assert code == 1 and err.count("\n") == 1
    assert f"s.tfrecord:1: a tf.train.Example not of the schema label float[1], ids int64[{F}]" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.tf
def test_packed_skips_a_chunk_with_no_good_line(tmp_path):
    """A chunk whose every line is rejected packs no row (it once crashed reshaping an empty array)."""
    src = write(tmp_path / "in.libsvm", _rows_text(50) + "bad\n" * 200 + _rows_text(50))
    m = convert(ConvertRequest(inputs=(src,), out=tmp_path / "p", field_size=F, format="packed", on_error="skip",
                               chunk_bytes=256, workers=2))
    assert m.rows == 100 and m.rejected.by_reason == {"bad_label": 200}
    assert len(read_packed(tmp_path / "p")[0]) == 100


def test_gzip_members_and_zlib_input_read_like_plain(tmp_path):
    """Concatenated gzip members (zero padding after them too) are one stream; a zlib stream is read as zlib."""
    text = _rows_text(300).encode()
    plain = convert(ConvertRequest(inputs=(write(tmp_path / "a.libsvm", text),), out=tmp_path / "a", field_size=F))
    members = write(tmp_path / "b.gz", gzip.compress(text[:1000]) + gzip.compress(text[1000:]) + bytes(512))
    zlibbed = write(tmp_path / "c.zz", zlib.compress(text))
    for src, out in ((members, "b"), (zlibbed, "c")):
        m = convert(ConvertRequest(inputs=(src,), out=tmp_path / out, field_size=F))
        assert m.rows == 300
        assert m.sources[0].sha256 == hashlib.sha256(src.read_bytes()).hexdigest()
        assert (tmp_path / out / m.shards[0].name).read_bytes() == \
            (tmp_path / "a" / plain.shards[0].name).read_bytes()


def _nan_means_invalid(text: str) -> None:
    raise ValueError(f"not strict JSON: {text}")


@pytest.mark.tf
def test_tfrecord_rows_obey_the_libsvm_rules_and_quarantine_names_records(tmp_path):
    """Item 2: labels outside [0, 1], NaN/inf and negative ids in TFRecord input are rejected like libsvm lines."""
    nan, inf = float("nan"), float("inf")
    labels = [1.0, 2.0, nan, 0.5, 0.0, 1.0]
    ids = [[1, 2, 3, 4], [1, 2, 3, 4], [1, 2, 3, 4], [1, -1, 3, 4], [1, 2, 3, 4], [5, 6, 7, 8]]
    values = [[1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1], [1, inf, 1, nan], [1, 0.5, 1, 1]]
    write_sample_tfrecord(tmp_path / "s.tfrecord", labels, ids, values)
    for fmt in ("libsvm", "tfrecord", "packed"):
        m = convert(ConvertRequest(inputs=(tmp_path / "s.tfrecord",), out=tmp_path / fmt, field_size=F, format=fmt,
                                   on_error="quarantine"))
        assert m.rows == 2 and m.positive_rate == 1.0
        assert m.rejected == Rejected(4, {"bad_label": 1, "bad_value": 1, "label_range": 1, "negative_id": 1})
        manifest_text = (tmp_path / fmt / "manifest.json").read_text()
        assert json.loads(manifest_text, parse_constant=_nan_means_invalid) == m.to_json()
        assert m.sources[0].sha256 == hashlib.sha256((tmp_path / "s.tfrecord").read_bytes()).hexdigest()
        entries = [json.loads(line) for line in (tmp_path / fmt / "quarantine.jsonl").read_text().splitlines()]
        assert [(e["record"], e["code"]) for e in entries] == [
            (2, "label_range"), (3, "bad_label"), (4, "negative_id"), (5, "bad_value")]
        assert entries[2]["reason"] == "pair 2 '-1:1': id is negative"
        assert entries[3]["reason"] == "pair 2 '2:inf': value 'inf' is not a number"
        records = [r for _, batch in tfrecord.record_batches(InputFile(tmp_path / "s.tfrecord"), 100) for r in batch]
        assert [base64.b64decode(e["data_base64"]) for e in entries] == records[1:5]
    assert_rows(read_examples(tmp_path / "tfrecord"), expected(["1", "1"], [ids[0], ids[5]], [values[0], values[5]]))


def test_converter_json_is_strict():
    """Item 2: NaN can never be written as JSON (`NaN` is not JSON; strict readers refuse the file)."""
    with pytest.raises(ValueError):
        atomic_write_json(Path("/nonexistent/never-written.json"), {"positive_rate": float("nan")}, allow_nan=False)


def test_shard_mb_must_be_finite(capsys):
    """Item 3: --shard-mb inf or nan is refused by the option's type, and by the request for API callers."""
    for text in ("inf", "nan", "-inf"):
        with pytest.raises(SystemExit) as exit_info:
            main(["convert", "x.libsvm", "--out", "o", f"--shard-mb={text}"])
        assert exit_info.value.code == 2 and "must be above 0 and at most 1,048,576" in capsys.readouterr().err
    for value in (float("inf"), float("nan"), 1e308):
        with pytest.raises(UsageError, match="--shard-mb must be a number above 0 and at most"):
            ConvertRequest(inputs=(Path(__file__),), out=Path("o"), shard_mb=value).check()


def _without_file_capabilities() -> list[str]:
    """Give a command prefix under which file permissions hold, as they do for a non-root user.

    Root passes every permission check (CAP_DAC_OVERRIDE); dropping that capability, and
    CAP_DAC_READ_SEARCH, from the child's bounding set makes chmod 000 / a read-only folder real.
    """
    if os.geteuid() != 0:
        return []
    if not shutil.which("setpriv"):
        pytest.skip("running as root and setpriv (util-linux) is missing: permissions cannot be made to bite")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


def _refusal(args: list[str], folder: Path) -> tuple[int, str]:
    """Run the CLI without file capabilities in `folder`; give (exit code, the one stderr line)."""
    env = {k: v for k, v in os.environ.items() if k != "PIPEBENCH_DEBUG"}
    result = subprocess.run([*_without_file_capabilities(), sys.executable, "-m", "pipebench.cli", *args],
                            cwd=folder, env=env, capture_output=True, text=True, timeout=240)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("pipebench: error: ") and len(lines[0]) < 300, result.stderr
    return result.returncode, lines[0][len("pipebench: error: "):]


@pytest.mark.slow
def test_unreadable_input_is_one_line(tmp_path):
    """Item 3: an input that cannot be opened (chmod 000) is named, with the reason."""
    write(tmp_path / "in.libsvm", _rows_text(3)).chmod(0)
    code, line = _refusal(["convert", "in.libsvm", "--out", "o", "--field-size", str(F)], tmp_path)
    assert (code, line) == (2, "in.libsvm: cannot read: Permission denied")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.libsvm"]


@pytest.mark.slow
def test_read_only_output_folder_is_one_line(tmp_path):
    """Item 3: --out in a folder that cannot be written is named, with the reason, and nothing is left."""
    write(tmp_path / "in.libsvm", _rows_text(3))
    (tmp_path / "ro").mkdir()
    (tmp_path / "ro").chmod(0o555)
    try:
        code, line = _refusal(["convert", "in.libsvm", "--out", "ro/o", "--field-size", str(F)], tmp_path)
        synth_code, synth_line = _refusal(["data", "synth", "--rows", "5", "--out", "ro/s"], tmp_path)
    finally:
        (tmp_path / "ro").chmod(0o755)
    assert (code, line) == (2, "ro/o: cannot create the output folder: Permission denied")
    assert (synth_code, synth_line) == (2, "ro/s: cannot create the output folder: Permission denied")
    assert list((tmp_path / "ro").iterdir()) == []


@pytest.fixture
def small_disk(tmp_path):
    """Give a 256 KiB tmpfs folder: a real full disk. Needs root and `mount`; skipped otherwise."""
    folder = tmp_path / "small"
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0755", "tmpfs", str(folder)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs to fill ({mounted.stderr.strip() or 'mount failed'})")
    yield folder
    subprocess.run(["umount", str(folder)], check=True)


@pytest.mark.slow
def test_disk_full_while_writing_is_one_line_and_leaves_nothing(tmp_path, small_disk):
    """Item 3: the disk filling up mid-write (a real 256 KiB tmpfs) is one line; the temp folder is removed."""
    write(tmp_path / "in.libsvm", _rows_text(20000))  # about 4 MB of TFRecord: far more than fits
    code, line = _refusal(["convert", "in.libsvm", "--out", "small/o", "--field-size", str(F)], tmp_path)
    assert (code, line) == (1, "small/o: writing the output failed: No space left on device; nothing was written")
    code, line = _refusal(["data", "synth", "--rows", "20000", "--out", "small/s"], tmp_path)
    assert (code, line) == (1, "small/s: writing the output failed: No space left on device; nothing was written")
    assert list(small_disk.iterdir()) == []


_HOLD_A_TEMP = """
import sys, time
from pipebench.atomic import atomic_dir
with atomic_dir(sys.argv[1]) as tmp:
    (tmp / "part-00000").write_bytes(b"half written")
    print("ready", flush=True)
    time.sleep(600)
"""


@pytest.mark.slow
def test_temp_of_a_killed_writer_is_swept_by_the_next_write_beside_it(tmp_path, cli):
    """Item 4: a temp left by kill -9 goes at the next write beside it, and never while its writer lives."""
    src = write(tmp_path / "in.libsvm", _rows_text(3))
    holder = subprocess.Popen([sys.executable, "-c", _HOLD_A_TEMP, str(tmp_path / "a")], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline() == "ready\n"
        [left] = [p for p in tmp_path.iterdir() if p.name.startswith(".a.tmp-")]
        assert left.name.startswith(f".a.tmp-{holder.pid}-")
        assert cli("convert", src, "--out", tmp_path / "b", "--field-size", F)[0] == 0
        assert (left / "part-00000").exists(), "a live writer's temp was removed"
    finally:
        holder.kill()
        holder.wait()
    assert left.exists()
    assert cli("convert", src, "--out", tmp_path / "c", "--field-size", F)[0] == 0
    assert not left.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b", "c", "in.libsvm"]


def test_force_over_a_folder_holding_a_hard_link_of_the_input_leaves_the_input_whole(tmp_path, cli):
    """A hard link is the input's file under another name: replacing --out unlinks that name, never the data."""
    src = write(tmp_path / "in.libsvm", _rows_text(3))
    (tmp_path / "o").mkdir()
    os.link(src, tmp_path / "o" / "in.libsvm")
    before = src.read_bytes()
    code, _, err = cli("convert", src, "--out", tmp_path / "o", "--field-size", F, "--force")
    assert code == 0, err
    assert src.read_bytes() == before and src.stat().st_nlink == 1
    assert not (tmp_path / "o" / "in.libsvm").exists()


_CONVERT_PAUSED_AT_THE_END = """
import os, sys
import pipebench.converters.convert as convert
from pipebench.cli import main

write_manifest = convert.atomic_write_json

def write_then_wait(*args, **kwargs):  # the manifest is the last file written into the temp folder
    write_manifest(*args, **kwargs)
    os.write(1, b"ready\\n")  # past the progress display, which holds sys.stdout while it runs
    sys.stdin.readline()

convert.atomic_write_json = write_then_wait
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_two_converts_into_one_out_the_one_finishing_second_fails_and_the_first_output_stays(tmp_path):
    """Regression (issue 28): the check for an existing --out ran only at the start and the final rename
    replaced what appeared meanwhile, so both converts said they wrote it and the later one won silently.

    Deterministic: the first convert stops just before its final rename until the second has finished.
    """
    first_in = write(tmp_path / "first.libsvm", _rows_text(3))
    second_in = write(tmp_path / "second.libsvm", _rows_text(5))
    env = {k: v for k, v in os.environ.items() if k != "PIPEBENCH_DEBUG"}
    first = subprocess.Popen([sys.executable, "-c", _CONVERT_PAUSED_AT_THE_END, "convert", str(first_in), "--out", "o",
                              "--field-size", str(F)], cwd=tmp_path, env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    watchdog = threading.Timer(240, first.kill)  # should it never get ready, readline() returns at its end
    watchdog.start()
    try:
        progress = []
        while (line := first.stdout.readline()) not in ("ready\n", ""):
            progress.append(line)
        assert line == "ready\n", f"{progress} {first.stderr.read()}"
        second = subprocess.run([sys.executable, "-m", "pipebench.cli", "convert", str(second_in), "--out", "o",
                                 "--field-size", str(F)], cwd=tmp_path, env=env, capture_output=True, text=True,
                                timeout=240)
        assert second.returncode == 0, second.stderr
        written = {p.name: p.read_bytes() for p in (tmp_path / "o").iterdir()}
        out, err = first.communicate("\n", timeout=240)
    finally:
        watchdog.cancel()
        first.kill()
        first.wait()
    assert first.returncode == 2 and "Traceback" not in err, err
    assert err == ("pipebench: error: o: appeared while this command wrote it (another process?); nothing was "
                   "written (use --force to replace it)\n")
    assert "wrote" not in out
    assert {p.name: p.read_bytes() for p in (tmp_path / "o").iterdir()} == written
    assert json.loads(written["manifest.json"])["rows"] == 5  # the second's, whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["first.libsvm", "o", "second.libsvm"]


def test_a_later_pass_does_not_hash_again_but_refuses_a_changed_file(tmp_path):
    """Raw Criteo's second pass and --shards' count read an input again: hashed once, checked by size and mtime."""
    from pipebench.converters.convert import _line_chunks, _Source

    path = write(tmp_path / "a.libsvm", _rows_text(50))
    source = _Source(path)
    first = list(_line_chunks(source, 256))
    assert source.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert source.reading.sha256 is not None
    assert list(_line_chunks(source, 256)) == first
    assert source.reading.sha256 is None  # not hashed again
    with open(path, "a") as f:
        f.write("1 1:1 2:1 3:1 4:1\n")
    with pytest.raises(DataError, match=r"a\.libsvm: changed while it was being converted"):
        list(_line_chunks(source, 256))


def test_sharded_output_names_the_checksum_of_the_first_pass(tmp_path):
    src = write(tmp_path / "a.libsvm", _rows_text(40))
    m = convert(ConvertRequest(inputs=(src,), out=tmp_path / "o", field_size=F, shards=3))
    assert m.rows == 40 and len(m.shards) == 3
    assert m.sources[0].sha256 == hashlib.sha256(src.read_bytes()).hexdigest()


def test_a_record_longer_than_a_read_is_read_in_one_more_call_not_topped_up_a_read_at_a_time(tmp_path):
    """A 40 MiB record spans ten 4 MiB reads: topping the buffer up a read at a time copied it once per read
    (quadratic in the record's length: a record claiming 2 GiB took hours). Once its header is checked, the
    rest is asked for in one call."""
    data = bytes(range(256)) * (160 << 10)  # 40 MiB
    payload = np.frombuffer(data + b"small", dtype=np.uint8)
    (tmp_path / "big.tfrecord").write_bytes(tfrecord.frame(payload, [len(data), len(data) + 5])[0].tobytes())
    sizes = []
    with InputFile(tmp_path / "big.tfrecord") as stream:
        read = stream.read
        stream.read = lambda size: sizes.append(size) or read(size)
        records = [r for _, batch in tfrecord.record_batches(stream) for r in batch]
    assert records == [data, b"small"]
    assert len(sizes) <= 4, f"{len(sizes)} reads of {sizes}"  # the header, the rest, the next record, the end
