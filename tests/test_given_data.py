"""Given data (`data.files`, `data.holdout_files`): plain lists told apart by their bytes, missing formats made once."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipebench.converters.convert import ConvertRequest, convert
from pipebench.config import parse_experiment
from pipebench.data_files import format_of
from pipebench.datasets import materialise
from pipebench.errors import ConfigError
from pipebench.synth import SynthSpec, synthesize


@pytest.fixture()
def data(tmp_path, monkeypatch) -> Path:
    """Give a folder of the same 600 rows as libsvm (2 files), TFRecord and packed, with the cwd set to it."""
    monkeypatch.chdir(tmp_path)
    synthesize(SynthSpec(rows=600, out=tmp_path / "libsvm", files=2, feature_size=500, field_size=6))
    texts = tuple(sorted((tmp_path / "libsvm").glob("part-*")))
    for fmt in ("tfrecord", "packed"):
        convert(ConvertRequest(inputs=texts, out=tmp_path / fmt, format=fmt, field_size=6, rows_per_record=64))
    return tmp_path


def experiment(files, **data):
    return parse_experiment({"name": "x", "data": {"files": files, "synth": {"field_size": 6, "feature_size": 500},
                                                    "cache_dir": "cache", **data},
                             "pipelines": {"presets": ["aws-sample"], "formats": ["libsvm", "packed"]}})


def test_a_plain_list_is_grouped_by_the_formats_the_bytes_show(data):
    exp = experiment(["libsvm/part-*", "tfrecord/part-*", "packed/part-*"])
    assert {fmt: len(names) for fmt, names in exp["data"]["files"].items() if names} == \
        {"libsvm": 2, "tfrecord": 1, "packed": 1}
    for fmt in ("tfrecord", "packed"):  # without the converter's manifest, the first record decides
        (data / fmt / "manifest.json").unlink()
        assert format_of(str(next((data / fmt).glob("part-*")))) == fmt


def test_a_format_the_pipelines_read_is_made_once_and_the_rows_counted_once(data):
    logged = []
    first = materialise(experiment(["libsvm/part-*"]), log=logged.append)
    made = first.files["packed"]
    assert len(made) == 2 and all(Path(f).parent.parent.parent == Path("cache") for f in made)
    assert first.rows == 600 and first.rows_from.startswith("counted")
    assert logged and "converting 2 file(s) to packed" in logged[0]
    stamp = os.stat(made[0]).st_mtime_ns
    again = materialise(experiment(["libsvm/part-*"]), log=logged.append)
    assert again.files == first.files and again.fingerprint == first.fingerprint and len(logged) == 1
    assert os.stat(made[0]).st_mtime_ns == stamp


def test_formats_that_cannot_be_made_name_the_convert_command(data):
    exp = experiment({"tfrecord": ["s3://bucket/part-0.tfrecord"]})
    with pytest.raises(ConfigError, match=r"the pipelines read libsvm and no local libsvm or TFRecord files.*"
                                          r"pipebench convert FILE\.\.\. --format libsvm"):
        materialise(exp)


def test_libsvm_holdout_files_become_tfrecord_for_the_quality_guard(data):
    synthesize(SynthSpec(rows=100, out=data / "held", feature_size=500, field_size=6, stream=1))
    exp = experiment({"libsvm": ["libsvm/part-*"], "packed": ["packed/part-*"]}, holdout_files=["held/part-*"])
    got = materialise(exp, log=lambda text: None)
    assert len(got.holdout["tfrecord"]) == 1 and format_of(got.holdout["tfrecord"][0]) == "tfrecord"
    assert got.rows == 600 and got.rows_from.startswith("the converter's manifest")  # packed's manifest counts them


def test_raw_criteo_conversions_give_their_feature_size(data):
    synthesize(SynthSpec(rows=300, out=data / "raw", format="criteo"))
    manifest = convert(ConvertRequest(inputs=tuple((data / "raw").glob("part-*")), out=data / "criteo-tf",
                                      from_format="criteo", cutoff=2))
    exp = parse_experiment({"name": "x", "data": {"files": ["criteo-tf/part-*"]},
                            "pipelines": {"presets": ["aws-sample"]}})
    got = materialise(exp)
    assert got.feature_size == manifest.feature_size and got.field_size == 39 and got.rows == 300


def test_packed_holdout_files_are_refused_naming_the_key(data):
    exp = experiment({"libsvm": ["libsvm/part-*"], "packed": ["packed/part-*"]}, holdout_files=["packed/part-*"])
    with pytest.raises(ConfigError, match=r"^data\.holdout_files: packed/part-\S+ is packed; the quality guard reads "
                                          r"TFRecord or libsvm"):
        materialise(exp)


def test_every_glob_must_match_and_a_named_manifest_is_not_data(data):
    missing = experiment({"libsvm": ["libsvm/part-*", "nope/*.libsvm"], "packed": ["packed/part-*"]})
    with pytest.raises(ConfigError, match=r"^data\.files\.libsvm\[1\]: pattern 'nope/\*\.libsvm' matches no file$"):
        materialise(missing)
    named = materialise(experiment({"libsvm": ["libsvm/part-*"], "packed": ["packed/part-*", "packed/manifest.json"]}),
                        log=lambda text: None)
    assert [Path(f).parent.name for f in named.files["packed"]] == ["packed"]
    assert all(Path(f).name != "manifest.json" for f in named.files["packed"])
    only = experiment({"libsvm": ["libsvm/part-*"], "packed": ["packed/manifest.json"]})
    with pytest.raises(ConfigError, match=r"^data\.files\.packed: only the converter's manifest\.json matches; "):
        materialise(only)
