"""The enumerator: legal orderings, their labels, and tests that each label tells the truth."""
from __future__ import annotations

import re
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from lazy import lazy
from pipeline_fixtures import FORMATS, ROWS, batches, expected_rows, flat, source

from pipebench.cli import main
from pipebench.errors import ConfigError
from pipebench.pipeline.orderings import DIFFERENCES, EQUIVALENT, Enumeration, differences, load
from pipebench.pipeline.spec import PipelineSpec, order_problem

tf = lazy("tensorflow")
build = lazy("pipebench.measure.build", "build")

STAGES = {
    "interleave": {"interleave": {"cycle_length": 2, "block_length": 4}},
    "shard": {"shard": {"num_shards": 2, "index": 0}},
    "shuffle": {"shuffle": {"buffer_size": 1000, "seed": 5}},
    "cache": "cache",
    "batch": {"batch": {"batch_size": 50, "drop_remainder": True}},
    "decode": "decode",
    "repeat": {"repeat": 2},
    "prefetch": "prefetch",
}


def _spec(kinds: str, fmt: str = "tfrecord", data=None, **stage_overrides) -> PipelineSpec:
    """Give a spec from 'a > b > c', stage parameters from STAGES unless overridden."""
    stages = [stage_overrides.get(k, STAGES[k]) for k in kinds.split(" > ")]
    src = source(data, fmt) if data else {"format": fmt}
    return PipelineSpec.from_dict({"source": src, "stages": stages})


def _names(kinds: str, reference: str, fmt: str = "tfrecord", **overrides) -> list[str]:
    return [d.name for d in differences(_spec(kinds, fmt, **overrides), _spec(reference, fmt, **overrides))]


# ---- labelling, no TensorFlow -------------------------------------------------------------------------

GUIDE = "cache > shuffle > batch > decode > repeat > prefetch"


@pytest.mark.parametrize("kinds, reference, fmt, names", [
    ("decode > cache > shuffle > batch > repeat > prefetch", GUIDE, "tfrecord", []),
    ("cache > shuffle > batch > repeat > decode > prefetch", GUIDE, "tfrecord", []),
    ("shuffle > cache > batch > decode > repeat > prefetch", GUIDE, "tfrecord", ["cache-after-shuffle"]),
    ("cache > batch > shuffle > decode > repeat > prefetch", GUIDE, "tfrecord", ["shuffle-after-batch"]),
    ("cache > repeat > shuffle > batch > decode > prefetch", GUIDE, "tfrecord",
     ["repeat-before-shuffle", "repeat-before-batch"]),
    ("repeat > cache > shuffle > batch > decode > prefetch", GUIDE, "tfrecord",
     ["repeat-before-shuffle", "repeat-before-cache", "repeat-before-batch"]),
    ("cache > shuffle > batch > repeat > decode > prefetch", GUIDE, "packed", ["repeat-before-batch"]),
    ("cache > decode > shuffle > batch > repeat > prefetch", GUIDE, "packed", ["shuffle-granularity"]),
    ("decode > shard > batch", "shard > decode > batch", "tfrecord", ["shard-after-expensive-work"]),
    ("cache > shard > decode > batch", "shard > cache > decode > batch", "tfrecord", ["shard-after-expensive-work"]),
    ("batch > shard > decode", "shard > batch > decode", "tfrecord", ["batch-before-shard"]),
    ("shard > interleave > batch > decode", "interleave > shard > batch > decode", "tfrecord", ["shard-by-file"]),
    ("decode > shard > batch", "shard > decode > batch", "packed", ["shard-granularity", "shard-after-expensive-work"]),
    ("shuffle > shard > batch > decode", "shard > shuffle > batch > decode", "tfrecord", ["shard-after-shuffle"]),
    ("repeat > shard > batch > decode", "shard > repeat > batch > decode", "tfrecord", ["repeat-before-shard"]),
    # the reference can hold the feature instead: the other direction gets its own name
    ("shard > decode > batch", "decode > shard > batch", "tfrecord", ["shard-before-expensive-work"]),
    (GUIDE, "shuffle > cache > batch > decode > repeat > prefetch", "tfrecord", ["cache-before-shuffle"]),
    ("shuffle > repeat > batch > decode", "shuffle > batch > decode > repeat", "tfrecord", ["repeat-before-batch"]),
    ("shuffle > batch > decode > repeat", "shuffle > repeat > batch > decode", "tfrecord", ["batch-before-repeat"]),
])
def test_labels(kinds, reference, fmt, names):
    assert _names(kinds, reference, fmt) == names


def test_unseeded_shuffle_before_shard_breaks_semantics():
    unseeded = {"shuffle": {"buffer_size": 100}}
    found = differences(_spec("shuffle > shard > batch > decode", shuffle=unseeded),
                        _spec("shard > shuffle > batch > decode", shuffle=unseeded))
    assert [(d.name, d.breaks_semantics) for d in found] == [("shard-after-unseeded-shuffle", True)]


def test_without_reshuffling_the_order_is_frozen_anyway():
    fixed = {"shuffle": {"buffer_size": 100, "seed": 1, "reshuffle_each_iteration": False}}
    assert _names("shuffle > cache > batch > decode > repeat", "cache > shuffle > batch > decode > repeat",
                  shuffle=fixed) == []


def test_every_difference_name_is_known():
    reference = _spec("shard > interleave > cache > shuffle > batch > decode > repeat > prefetch")
    seen = {d.name for o in Enumeration(reference, allow=("all",)).orderings() for d in o.differences}
    assert seen <= set(DIFFERENCES)


def test_guide_enumeration():
    orderings = Enumeration.of(_spec(GUIDE)).orderings()
    assert orderings[0].is_reference and orderings[0].spec == _spec(GUIDE)
    assert [o.label for o in orderings[1:5]] == [EQUIVALENT] * 4
    assert {o.label for o in orderings[5:]} == {"repeat-before-batch"}
    assert len(orderings) == 10
    for o in orderings:
        assert order_problem(o.spec.kinds) is None and o.spec.kinds[-1] == "prefetch"
        assert not o.breaks_semantics and not o.excluded
    assert len({o.spec.ordering for o in orderings}) == len(orderings)


def test_semantics_breaking_orderings_are_excluded_unless_allowed_and_then_marked():
    reference = _spec(GUIDE)
    everything = Enumeration.of(reference).orderings(include_excluded=True)
    assert len(everything) == 120
    excluded = [o for o in everything if o.excluded]
    assert excluded and all(o.breaks_semantics for o in excluded)
    allowed = Enumeration(reference, (("prefetch", "last"),), ("cache-after-shuffle",)).orderings()
    marked = [o for o in allowed if o.breaks_semantics]
    assert marked and not any(o.excluded for o in marked)
    assert {d.name for o in marked for d in o.differences if d.breaks_semantics} == {"cache-after-shuffle"}
    assert len(Enumeration(reference, (("prefetch", "last"),), ("all",)).orderings()) == 120


def test_pins_narrow_the_search_but_the_reference_stays():
    reference = _spec("decode > prefetch > shuffle > repeat > batch")  # lambdaji's order: prefetch mid-pipeline
    pinned = Enumeration.of(reference).orderings()
    assert pinned[0].spec == reference
    assert all(o.spec.kinds[-1] == "prefetch" for o in pinned[1:])
    free = Enumeration(reference).orderings()
    assert len(free) > len(pinned)
    first = Enumeration(reference, (("shuffle", "first"),)).orderings()
    assert all(o.spec.kinds[0] == "shuffle" for o in first[1:])


PIPELINES_YAML = """\
experiment: ignored here, read by the experiment loader
pipelines:
  source: {format: tfrecord, files: [data/part-*.tfrecord], num_parallel_reads: AUTOTUNE}
  stages:
    - cache: memory
    - shuffle: {buffer_size: 10000, seed: 7}
    - batch: {batch_size: 1024, drop_remainder: true}
    - decode: {num_parallel_calls: AUTOTUNE}
    - repeat: {epochs: 2}
    - prefetch
  enumerate:
    pin: {prefetch: last}
    allow: [cache-after-shuffle]
"""


def test_load_a_pipelines_block(tmp_path):
    path = tmp_path / "deepfm.yaml"
    path.write_text(PIPELINES_YAML)
    enumeration = load(path)
    assert enumeration.reference.ordering == GUIDE
    assert enumeration.pins == (("prefetch", "last"),)
    assert enumeration.allow == ("cache-after-shuffle",)


def test_load_the_block_an_experiment_embeds_under_orderings(tmp_path):
    path = tmp_path / "deepfm.yaml"
    body = PIPELINES_YAML.split("pipelines:\n", 1)[1]
    path.write_text("pipelines:\n  presets: [aws-sample]\n  orderings:\n" + textwrap.indent(body, "  "))
    assert load(path).reference.ordering == GUIDE
    path.write_text("pipelines:\n  presets: [aws-sample]\n  orderings:\n")
    with pytest.raises(ConfigError, match="deepfm.yaml: pipelines.orderings: empty"):
        load(path)


@pytest.mark.parametrize("old, new, message", [
    ("pin: {prefetch: last}", "pin: {map: last}", "deepfm.yaml: pipelines.enumerate.pin.map: no map stage"),
    ("pin: {prefetch: last}", "pin: {prefetch: end}",
     "deepfm.yaml: pipelines.enumerate.pin.prefetch: must be first or last"),
    ("pin: {prefetch: last}", "pin: {prefetch: last, repeat: last}",
     "deepfm.yaml: pipelines.enumerate.pin.repeat: another"),
    ("allow: [cache-after-shuffle]", "allow: [cache-after-shufle]",
     "deepfm.yaml: pipelines.enumerate.allow[0]: unknown difference 'cache-after-shufle'"),
    ("allow: [", "allov: [", "deepfm.yaml: pipelines.enumerate.allov: unknown key"),
    ("seed: 7}", "seed: -7}", "deepfm.yaml: pipelines.stages[1].shuffle.seed: must be an integer ≥ 0"),
    ("    - prefetch\n", "    - prefetch\n    - prefetch\n",
     "deepfm.yaml: pipelines.stages: stage prefetch appears 2 times"),
    ("buffer_size: 10000, seed", "buffer_size: [10000, seed", "deepfm.yaml:6: not valid YAML"),
])
def test_pipelines_errors_are_one_line_and_name_the_yaml_path(tmp_path, old, new, message):
    path = tmp_path / "deepfm.yaml"
    assert old in PIPELINES_YAML
    path.write_text(PIPELINES_YAML.replace(old, new))
    with pytest.raises(ConfigError) as err:
        load(path)
    assert str(err.value).startswith(f"{tmp_path}/{message}") and "\n" not in str(err.value)


@pytest.mark.parametrize("data, message", [
    (PIPELINES_YAML.replace("seed: 7}", "seed: 7, seed: 8}").encode(), ":6: duplicate key 'seed'"),
    (PIPELINES_YAML.replace("    pin:", "    allow: []\n    pin:").encode(), ":14: duplicate key 'allow'"),
    (PIPELINES_YAML.encode().replace(b"memory", b"mem\xe9ory"), ":5: not UTF-8 text (byte 0xe9)"),
    (PIPELINES_YAML.encode().replace(b"memory", b"mem\x00ory"), ":5: holds a NUL byte: not a text file"),
    (b"", ": pipeline: must be a mapping, not NoneType"),
    (b"- source\n", ": pipeline: must be a mapping, not list"),
])
def test_spec_files_with_duplicate_keys_or_binary_bytes_are_one_line_errors(tmp_path, data, message):
    """pipelines list/export read spec files through the experiments' strict reader: a key given twice
    was silently the last one, and a non-UTF-8 file was a traceback."""
    path = tmp_path / "deepfm.yaml"
    path.write_bytes(data)
    with pytest.raises(ConfigError) as err:
        load(path)
    assert str(err.value).startswith(f"{path}{message}") and "\n" not in str(err.value)


def test_cli_lists_orderings_with_label_and_why(tmp_path, capsys):
    path = tmp_path / "deepfm.yaml"
    path.write_text(PIPELINES_YAML)
    assert main(["pipelines", "list", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert re.split(r"\s{2,}", out[0]) == ["#", "ordering", "label", "why"]
    assert re.split(r"\s{2,}", out[1])[:3] == ["0", GUIDE, "reference"]
    assert any("cache-after-shuffle [breaks semantics]" in line for line in out)
    assert any("shuffle-after-batch" in line for line in out) is False  # still excluded: not allowed
    assert "excluded (--all lists them" in out[-1]
    assert main(["pipelines", "list", str(path), "--all"]) == 0
    assert "shuffle-after-batch [excluded]" in capsys.readouterr().out


def test_cli_list_errors_are_one_line(tmp_path, capsys):
    path = tmp_path / "deepfm.yaml"
    path.write_text(PIPELINES_YAML.replace("batch_size: 1024", "batch_size: 0"))
    assert main(["pipelines", "list", str(path)]) == 1
    err = capsys.readouterr().err
    assert err == f"pipebench: error: {path}: pipelines.stages[2].batch.batch_size: must be an integer ≥ 1, not 0\n"
    assert main(["pipelines", "list", "no-such-preset"]) == 2
    assert "neither a preset (aws-sample, lambdaji-libsvm, guide) nor a file" in capsys.readouterr().err


# ---- the labels tell the truth (TensorFlow) -----------------------------------------------------------


def _epochs(dataset, batches_per_epoch: int) -> list[list]:
    got = batches(dataset)
    return [flat(got[i : i + batches_per_epoch]) for i in range(0, len(got), batches_per_epoch)]


@pytest.mark.tf
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_equivalent_ordering_yields_the_reference_rows_each_epoch(data, fmt):
    # 600 rows, batch 50 with drop_remainder: 12 whole batches an epoch, so the multiset is exact.
    reference = _spec("interleave > cache > shuffle > batch > decode > repeat > prefetch", fmt, data)
    orderings = Enumeration(reference).orderings()  # no pins: prefetch may go anywhere
    equivalent = [o.spec for o in orderings if not o.differences]
    assert len(equivalent) >= (12 if fmt == "packed" else 30)
    ref_dataset = build(reference).dataset
    ref_epochs = _epochs(ref_dataset, 12)
    assert [Counter(e) for e in ref_epochs] == [Counter(expected_rows(data))] * 2
    for spec in equivalent[1:]:
        dataset = build(spec).dataset
        assert dataset.element_spec == ref_dataset.element_spec, spec.ordering
        assert [Counter(e) for e in _epochs(dataset, 12)] == [Counter(e) for e in ref_epochs], spec.ordering


def _rows(data, kinds: str, fmt: str = "tfrecord", **overrides) -> list:
    return flat(batches(build(_spec(kinds, fmt, data, **overrides)).dataset))


@pytest.mark.tf
def test_cache_after_shuffle_replays_one_order(data):
    assert _names("shuffle > cache > batch > decode > repeat", "cache > shuffle > batch > decode > repeat") \
        == ["cache-after-shuffle"]
    one_batch = {"batch": {"batch_size": ROWS}}
    frozen = _rows(data, "shuffle > cache > batch > decode > repeat", batch=one_batch)
    fresh = _rows(data, "cache > shuffle > batch > decode > repeat", batch=one_batch)
    assert frozen[:ROWS] == frozen[ROWS:]
    assert fresh[:ROWS] != fresh[ROWS:]


@pytest.mark.tf
def test_shuffle_after_batch_keeps_each_batch_together(data):
    assert _names("batch > shuffle > decode > repeat", "shuffle > batch > decode > repeat") == ["shuffle-after-batch"]
    rows = expected_rows(data)
    in_file = {frozenset(rows[i : i + 50]) for i in range(0, ROWS, 50)}
    by_batch = batches(build(_spec("batch > shuffle > decode > repeat", data=data)).dataset)
    by_row = batches(build(_spec("shuffle > batch > decode > repeat", data=data)).dataset)
    assert {frozenset(b) for b in by_batch} == in_file  # same 12 batches each epoch, only their order changes
    assert by_batch[:12] != by_batch[12:]
    assert not {frozenset(b) for b in by_row} & in_file


@pytest.mark.tf
def test_repeat_before_shuffle_mixes_epochs(data):
    assert _names("repeat > shuffle > batch > decode", "shuffle > repeat > batch > decode") == ["repeat-before-shuffle"]
    big_buffer = {"shuffle": {"buffer_size": 2 * ROWS, "seed": 5}}
    mixed = _rows(data, "repeat > shuffle > batch > decode", shuffle=big_buffer)
    kept = _rows(data, "shuffle > repeat > batch > decode", shuffle=big_buffer)
    everything = Counter(expected_rows(data))
    assert Counter(kept[:ROWS]) == everything
    assert Counter(mixed[:ROWS]) != everything  # the first epoch's worth repeats some rows and misses others
    assert Counter(mixed) == Counter(kept)


@pytest.mark.tf
def test_repeat_before_cache_stores_every_epoch(data, tmp_path):
    assert _names("batch > decode > repeat > cache", "batch > decode > cache > repeat") == ["repeat-before-cache"]

    def cached_bytes(kinds: str, folder: Path) -> int:
        folder.mkdir()
        _rows(data, kinds, cache={"cache": str(folder / "c")}, repeat={"repeat": 3})
        return sum(p.stat().st_size for p in folder.iterdir())

    once = cached_bytes("batch > decode > cache > repeat", tmp_path / "once")
    every_epoch = cached_bytes("batch > decode > repeat > cache", tmp_path / "every")
    assert every_epoch > 2.5 * once


@pytest.mark.tf
def test_repeat_before_batch_straddles_epoch_ends(data):
    assert _names("repeat > batch > decode", "batch > decode > repeat") == ["repeat-before-batch"]
    ragged = {"batch": {"batch_size": 64}}  # 600 = 9 × 64 + 24
    straddling = batches(build(_spec("repeat > batch > decode", data=data, batch=ragged)).dataset)
    per_epoch = batches(build(_spec("batch > decode > repeat", data=data, batch=ragged)).dataset)
    rows = expected_rows(data)
    assert [len(b) for b in per_epoch] == ([64] * 9 + [24]) * 2
    assert [len(b) for b in straddling] == [64] * 18 + [48]
    assert straddling[9] == rows[576:] + rows[:40]


SHARD_0_OF_2 = {"shard": {"num_shards": 2, "index": 0}}


@pytest.mark.tf
def test_shard_after_expensive_work_decodes_other_workers_rows(tmp_path):
    assert _names("decode > shard > batch", "shard > decode > batch") == ["shard-after-expensive-work"]
    path = tmp_path / "rows.libsvm"
    path.write_text("1 1:0.5 2:1\n0 1:0.25\n1 1:0.75 2:1\n0 1:1 2:1\n")  # row 1, worker 1's, is malformed
    src = {"format": "libsvm", "files": [str(path)], "field_size": 2}

    def worker_0(kinds: str) -> list:
        spec = PipelineSpec.from_dict({"source": src, "stages": [
            {"decode": None} if k == "decode" else SHARD_0_OF_2 if k == "shard" else {"batch": 2}
            for k in kinds.split(" > ")]})
        return flat(batches(build(spec).dataset))

    assert [row[0] for row in worker_0("shard > decode > batch")] == [1.0, 1.0]
    with pytest.raises(tf.errors.InvalidArgumentError, match="does not hold field_size"):
        worker_0("decode > shard > batch")


@pytest.mark.tf
def test_batch_before_shard_hands_out_whole_batches(data):
    assert _names("batch > shard > decode", "shard > batch > decode") == ["batch-before-shard"]
    rows = expected_rows(data)
    whole_batches = _rows(data, "batch > shard > decode", shard=SHARD_0_OF_2)
    every_other_row = _rows(data, "shard > batch > decode", shard=SHARD_0_OF_2)
    assert whole_batches == [r for i in range(0, ROWS, 100) for r in rows[i : i + 50]]
    assert every_other_row == rows[::2]


@pytest.mark.tf
def test_shard_by_file_hands_out_whole_files(data):
    assert _names("shard > interleave > batch > decode", "interleave > shard > batch > decode") == ["shard-by-file"]
    first_file = expected_rows(data)[:300]  # the synth wrote 300 rows per file
    by_file = _rows(data, "shard > interleave > batch > decode", shard=SHARD_0_OF_2, batch={"batch": 100})
    by_row = _rows(data, "interleave > shard > batch > decode", shard=SHARD_0_OF_2, batch={"batch": 100})
    assert Counter(by_file) == Counter(first_file)
    assert Counter(by_row) != Counter(first_file) and len(by_row) == 300


def _workers(data, kinds: str, num_shards: int, **overrides) -> list[list]:
    return [_rows(data, kinds, shard={"shard": {"num_shards": num_shards, "index": i}}, **overrides)
            for i in range(num_shards)]


@pytest.mark.tf
def test_shard_after_unseeded_shuffle_overlaps_workers(data):
    unseeded = {"shuffle": {"buffer_size": ROWS}}
    parts = _workers(data, "shuffle > shard > batch > decode", 2, shuffle=unseeded, batch={"batch": 100})
    assert Counter(parts[0] + parts[1]) != Counter(expected_rows(data))  # some rows twice, others never
    parts = _workers(data, "shard > shuffle > batch > decode", 2, shuffle=unseeded, batch={"batch": 100})
    assert Counter(parts[0] + parts[1]) == Counter(expected_rows(data))


@pytest.mark.tf
def test_shard_after_shuffle_moves_rows_between_workers_each_epoch(data):
    assert _names("shuffle > shard > batch > decode > repeat", "shard > shuffle > batch > decode > repeat") \
        == ["shard-after-shuffle"]
    one_batch = {"batch": {"batch_size": ROWS}}
    parts = _workers(data, "shuffle > shard > batch > decode > repeat", 2, batch=one_batch)
    half = ROWS // 2
    for epoch in (slice(0, half), slice(half, ROWS)):  # each epoch still splits all rows between the workers
        assert Counter(parts[0][epoch] + parts[1][epoch]) == Counter(expected_rows(data))
    assert set(parts[0][:half]) != set(parts[0][half:])
    fixed = _workers(data, "shard > shuffle > batch > decode > repeat", 2, batch=one_batch)
    assert set(fixed[0][:half]) == set(fixed[0][half:])


@pytest.mark.tf
def test_repeat_before_shard_shifts_a_workers_rows_between_epochs(data):
    one_batch = {"batch": {"batch_size": ROWS}}
    seven = {"shard": {"num_shards": 7, "index": 0}}  # 600 rows: 86 for worker 0 per epoch, 600 % 7 = 5
    shifting = _rows(data, "repeat > shard > batch > decode", shard=seven, batch=one_batch)
    steady = _rows(data, "shard > repeat > batch > decode", shard=seven, batch=one_batch)
    assert steady[:86] == steady[86:]
    assert set(shifting[:86]) != set(shifting[86:172])


@pytest.mark.tf
def test_packed_shuffle_before_decode_moves_whole_records(data):
    assert _names("shuffle > batch > decode", "decode > shuffle > batch", "packed") == ["shuffle-granularity"]
    successor = {row: nxt for row, nxt in zip(expected_rows(data), expected_rows(data)[1:])}

    def breaks(rows: list) -> int:
        return sum(successor.get(a) != b for a, b in zip(rows, rows[1:]))

    records = _rows(data, "shuffle > batch > decode", "packed")
    rows = _rows(data, "decode > shuffle > batch", "packed")
    assert breaks(records) <= ROWS // 16 + 1  # runs of 16 file rows: a record shuffled as one piece
    assert breaks(rows) > ROWS // 2
