"""build(): the output contract for every format and decode form, presets, options, sources, errors."""
from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest
from lazy import lazy
from pipeline_fixtures import FORMATS, ROWS, ROWS_PER_RECORD, batches, expected_rows, flat, source

from pipebench.converters.convert import ConvertRequest, convert
from pipebench.errors import ConfigError
from pipebench.pipeline.presets import PRESETS, preset
from pipebench.pipeline.spec import PipelineSpec

pytestmark = pytest.mark.tf214
tf = lazy("tensorflow")
build = lazy("pipebench.measure.build", "build")

FIELDS = 39


def _spec(data, fmt, stages, **src) -> PipelineSpec:
    return PipelineSpec.from_dict({"source": source(data, fmt, **src), "stages": stages})


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("decode_first", [True, False], ids=["scalar", "vectorized"])
@pytest.mark.parametrize("batch_size, drop", [(32, False), (50, True), (7, False)])
def test_every_format_and_decode_form_yields_the_contract(data, fmt, decode_first, batch_size, drop):
    # 32 is a multiple of the packed rows_per_record (16), 50 is not, 7 is smaller: all must give the same batches.
    batch = {"batch": {"batch_size": batch_size, "drop_remainder": drop}}
    stages = ["decode", batch] if decode_first else [batch, "decode"]
    dataset = build(_spec(data, fmt, stages + ["prefetch"])).dataset
    size = batch_size if drop else None
    features_spec, label_spec = dataset.element_spec
    assert features_spec == {"feat_ids": tf.TensorSpec([size, FIELDS], tf.int64),
                             "feat_vals": tf.TensorSpec([size, FIELDS], tf.float32)}
    assert label_spec == tf.TensorSpec([size], tf.float32)
    rows = expected_rows(data)
    if drop:
        rows = rows[: len(rows) // batch_size * batch_size]
    assert batches(dataset) == [rows[i : i + batch_size] for i in range(0, len(rows), batch_size)]


@pytest.mark.parametrize("fmt", FORMATS)
def test_interleave_and_parallel_reads_keep_every_row(data, fmt):
    rows = Counter(expected_rows(data))
    interleaved = _spec(data, fmt, [{"interleave": {"cycle_length": 2, "block_length": 3}}, {"batch": 64}, "decode"])
    parallel = _spec(data, fmt, [{"batch": 64}, "decode"], num_parallel_reads="AUTOTUNE")
    for spec in (interleaved, parallel):
        assert Counter(flat(batches(build(spec).dataset))) == rows


def test_file_cache_serves_the_second_epoch(data, tmp_path):
    spec = _spec(data, "tfrecord", [{"batch": 100}, "decode", {"cache": str(tmp_path / "cache")}, {"repeat": 2}])
    got = flat(batches(build(spec).dataset))
    assert got == expected_rows(data) * 2
    assert any(p.name.startswith("cache") for p in tmp_path.iterdir())


@pytest.mark.parametrize("compression", ["gzip", "zlib"])
def test_compressed_tfrecords(data, tmp_path, compression):
    libsvm = tuple(sorted(Path(data["libsvm"]).parent.glob("part-*.libsvm")))
    out = tmp_path / "z"
    convert(ConvertRequest(inputs=libsvm, out=out, format="tfrecord", compression=compression, workers=1))
    files = [str(out / "part-*")]
    spec = PipelineSpec.from_dict({"source": {"format": "tfrecord", "files": files, "compression": compression},
                                   "stages": [{"batch": 128}, "decode"]})
    assert flat(batches(build(spec).dataset)) == expected_rows(data)
    with pytest.raises(ConfigError, match=f"source.compression: 'none', but .*manifest.json says '{compression}'"):
        build(spec.with_source(compression="none"))


@pytest.mark.parametrize("name", PRESETS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_presets_build_and_run_on_every_format(data, name, fmt):
    spec = preset(name, format=fmt, files=(data[fmt],), batch_size=64, epochs=2, seed=1)
    if fmt == "packed":
        spec = spec.with_source(rows_per_record=ROWS_PER_RECORD)
    rows = flat(batches(build(spec).dataset))
    if name == "aws-sample":  # drop_remainder: 600 rows make 9 whole batches of 64 per epoch
        assert rows == expected_rows(data)[: ROWS // 64 * 64] * 2
    else:
        assert Counter(rows) == Counter(expected_rows(data) * 2)


def test_aws_sample_reads_tfrecords_written_the_aws_sample_way(data, tmp_path):
    # The sample's tools/libsvm_to_tfrecord.py: one tf.train.Example per line, written with TFRecordWriter.
    rows = expected_rows(data)[:100]
    path = tmp_path / "train.tfrecords"
    with tf.io.TFRecordWriter(str(path)) as writer:
        for label, ids, values in rows:
            example = tf.train.Example(features=tf.train.Features(feature={
                "label": tf.train.Feature(float_list=tf.train.FloatList(value=[label])),
                "ids": tf.train.Feature(int64_list=tf.train.Int64List(value=ids)),
                "values": tf.train.Feature(float_list=tf.train.FloatList(value=values)),
            }))
            writer.write(example.SerializeToString())
    spec = preset("aws-sample", files=(str(path),), batch_size=32, epochs=1)
    assert flat(batches(build(spec).dataset)) == rows[:96]


def test_options_are_set_and_missing_ones_reported(data):
    spec = _spec(data, "tfrecord", [{"batch": 64}, "decode"])
    spec = spec.with_option("deterministic", False).with_option("autotune.ram_budget", 1 << 28)
    spec = spec.with_option("threading.private_threadpool_size", 2)
    spec = spec.with_option("experimental_optimization.no_such_flag_anywhere", True)
    built = build(spec)
    options = built.dataset.options()
    assert options.deterministic is False
    assert options.autotune.ram_budget == 1 << 28
    assert options.threading.private_threadpool_size == 2
    assert built.unsupported_options == ["experimental_optimization.no_such_flag_anywhere"]
    assert len(flat(batches(built.dataset))) == ROWS


def test_fastfile_builds_emulated_unless_told_otherwise(data):
    spec = _spec(data, "tfrecord", [{"batch": 64}, "decode"]).with_source(mode="fastfile")
    assert build(spec).source_note.startswith("EMULATED FastFile: 20 ms first-read latency per file")
    assert build(spec, {"fastfile": {"emulate": False}}).source_note is None  # tests/test_sources_* read them


def test_missing_files_are_a_config_error(tmp_path):
    spec = PipelineSpec.from_dict({"source": {"format": "libsvm", "files": [str(tmp_path / "*.libsvm")]},
                                   "stages": [{"batch": 8}, "decode"]})
    with pytest.raises(ConfigError, match="^source.files: pattern .* matches no file$"):
        build(spec)


@pytest.mark.parametrize("decode_first", [True, False], ids=["scalar", "vectorized"])
def test_a_short_libsvm_line_fails_loudly(tmp_path, decode_first):
    path = tmp_path / "bad.libsvm"
    path.write_text("1 1:0.5 2:1 3:1\n0 1:0.25 2:1\n")
    stages = ["decode", {"batch": 2}] if decode_first else [{"batch": 2}, "decode"]
    spec = PipelineSpec.from_dict({"source": {"format": "libsvm", "files": [str(path)], "field_size": 3},
                                   "stages": stages})
    with pytest.raises(tf.errors.InvalidArgumentError):
        batches(build(spec).dataset)


def test_packed_rows_per_record_must_match_the_data(data, tmp_path):
    with pytest.raises(ConfigError, match="source.rows_per_record: 8, but .*manifest.json says 16"):
        build(_spec(data, "packed", [{"batch": 64}, "decode"]).with_source(rows_per_record=8))
    for part in Path(data["packed"]).parent.glob("part-*"):  # without a manifest, decode's check catches it
        shutil.copy(part, tmp_path)
    spec = _spec(data, "packed", [{"batch": 64}, "decode"])
    spec = spec.with_source(files=(str(tmp_path / "part-*"),), rows_per_record=8)
    with pytest.raises(tf.errors.InvalidArgumentError, match="more rows than rows_per_record"):
        batches(build(spec).dataset)
