"""Rows of given data files are known once: from the converter's manifest, else counted."""
from __future__ import annotations

import gzip

import pytest

from pipebench.converters.convert import ConvertRequest, convert
from pipebench.datasets import count_rows


def test_rows_of_libsvm_files_are_their_lines_even_without_a_last_newline(tmp_path):
    (tmp_path / "a.libsvm").write_text("1 1:1\n0 1:1\n")
    (tmp_path / "b.libsvm.gz").write_bytes(gzip.compress(b"1 1:1\n0 1:1\n1 1:1"))
    rows, how = count_rows({"libsvm": [str(tmp_path / "a.libsvm"), str(tmp_path / "b.libsvm.gz")]})
    assert (rows, how) == (5, "counted (libsvm lines)")


def test_rows_come_from_the_manifest_when_it_lists_the_files_and_from_records_otherwise(tmp_path):
    (tmp_path / "in.libsvm").write_text("".join(f"{i % 2} 1:1 2:1\n" for i in range(7)))
    convert(ConvertRequest(inputs=(tmp_path / "in.libsvm",), out=tmp_path / "tf", field_size=2, shards=2))
    files = sorted(str(p) for p in (tmp_path / "tf").glob("part-*"))
    rows, how = count_rows({"tfrecord": files})
    assert rows == 7 and how.startswith("the converter's manifest")
    (tmp_path / "tf" / "manifest.json").unlink()
    assert count_rows({"tfrecord": files}) == (7, "counted (tfrecord records)")
    assert count_rows({"tfrecord": ["s3://bucket/part-0"]})[0] is None


def test_a_damaged_cache_description_is_one_line_saying_how_to_remake_it(tmp_path):
    from pipebench.config import parse_experiment
    from pipebench.datasets import materialise
    from pipebench.errors import DataError

    experiment = parse_experiment({"name": "x", "data": {"synth": {"rows": 50, "files": 1, "field_size": 3,
                                                                   "feature_size": 100},
                                                         "formats": ["libsvm"], "holdout_rows": 0,
                                                         "cache_dir": str(tmp_path)}})
    folder = materialise(experiment, log=lambda _: None).folder
    (folder / "libsvm" / "synth.json").write_text('{"rows": 50}')
    with pytest.raises(DataError, match=rf"^{folder}/libsvm/synth\.json: generator: missing; remove {folder} to make "
                                        rf"the data again$"):
        materialise(experiment, log=lambda _: None)
