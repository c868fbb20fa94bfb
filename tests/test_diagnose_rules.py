"""The rules `pipebench diagnose` holds on any input_fn, each on the shape that broke it on code it had never seen
(issue 46): what TF runs is walked whoever built it (library readers, `apply` chains on tf.compat.v1 adapters);
one rule for rows; a sample compared with itself is read once; sparse, ragged and string elements are compared;
what a TF1 input_fn computes after get_next() is captured. Small pipelines built here, real TensorFlow, no timing."""
from __future__ import annotations

from pathlib import Path

import pytest

from lazy import lazy

pytestmark = pytest.mark.tf214
tf = lazy("tensorflow")
load = lazy("pipebench.pipeline.user_code", "load")
walk = lazy("pipebench.diagnose.walk", "walk")
contents = lazy("pipebench.diagnose.content")

COLUMNS = 5


@pytest.fixture(scope="module")
def csv_file(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("rules") / "rows.csv"
    path.write_text("".join(f"{i % 2}\t{i}\t{i * 3}\tx{i}\t{i / 7:.3f}\n" for i in range(600)))
    return str(path)


def _user(tmp_path: Path, body: str) -> str:
    """Write a user's module: the imports and `body`; give its path."""
    path = tmp_path / "user.py"
    path.write_text("import tensorflow as tf\n\nCOLUMNS = ['label', 'a', 'b', 'c', 'd']\n"
                    "DEFAULTS = [[0], [0], [0], [''], [0.0]]\n\n\n" + body)
    return str(path)


def _stages(path: str, **kwargs):
    loaded = load(path, "input_fn", kwargs)
    return loaded, walk(loaded.dataset, loaded.sites, loaded.module)


def test_a_library_reader_is_walked_op_by_op_each_stage_named_by_its_op_and_the_call_that_made_it(tmp_path, csv_file):
    """make_csv_dataset was one opaque stage: every op it makes is a stage, named by its op (read from the dataset's
    graph), placed at the user's line that called the library function, and its reader inside the interleave is
    walked too."""
    path = _user(tmp_path, "def input_fn(files, batch_size=32):\n"
                           "    return tf.data.experimental.make_csv_dataset(\n"
                           "        files, batch_size, column_names=COLUMNS, column_defaults=DEFAULTS, label_name='label',\n"
                           "        field_delim='\\t', header=False, num_epochs=1)\n")
    _, walked = _stages(path, files=[csv_file])
    kinds = [s.kind for s in walked.stages]
    assert kinds == ["source", "shuffle", "interleave", "source", "shuffle", "batch", "map", "prefetch"]
    assert walked.stages[3].inside == 2 and walked.stages[3].params["reader"] == "CsvDataset"
    assert all(s.via == "make_csv_dataset" and s.place.line == 8 for s in walked.stages)
    assert walked.stages[2].op.endswith("ParallelInterleaveDatasetV2") and walked.stages[5].op == "BatchDatasetV2"
    assert [s.batched for s in walked.stages] == [False] * 5 + [True] * 3


def test_apply_chains_on_tf1_adapters_are_seen_through_and_their_batching_counts_rows(tmp_path, csv_file):
    """A TF1 reader built with `Dataset.apply(map_and_batch(...))` hides its stages in DatasetV1Adapters, whose
    `_inputs()` skip them: walked through, the batching op is found, so an element is 16 rows, also after the label
    is popped after get_next() (27 rows/s was reported for 52k: a batch counted as one row)."""
    path = _user(tmp_path, "def input_fn(files):\n"
                           "    def parse(line):\n"
                           "        return dict(zip(COLUMNS, tf.io.decode_csv(line, DEFAULTS, field_delim='\\t')))\n"
                           "    dataset = tf.compat.v1.data.TextLineDataset(files).apply(\n"
                           "        tf.data.experimental.map_and_batch(parse, 16)).apply(tf.data.experimental.shuffle_and_repeat(64, 1))\n"
                           "    features = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()\n"
                           "    return features, features.pop('label')\n")
    loaded, walked = _stages(path, files=[csv_file])
    kinds = [s.kind for s in walked.stages]
    assert kinds[:3] == ["source", "map_and_batch", "shuffle_and_repeat"] and kinds[-1] == "map"
    assert walked.stages[1].via == "apply(map_and_batch)" and walked.stages[1].function.short == "parse"
    from pipebench.diagnose.rows import plain_rows, rows_tensor

    element = next(iter(loaded.dataset))
    assert walked.stages[-1].batched and int(rows_tensor(tf, element, True)) == 16 == plain_rows(tf, element)


def test_a_source_that_yields_batches_counts_their_rows(tmp_path):
    """A generator yielding batches (no batching op anywhere): its label's leading dimension of unknown size says the
    elements are batches; an unbatch after batches says so too."""
    path = _user(tmp_path, "import numpy as np\n\n\ndef input_fn():\n"
                           "    def batches():\n"
                           "        for start in range(0, 100, 25):\n"
                           "            yield np.zeros((25, 3), np.float32), np.arange(start, start + 25)\n"
                           "    return tf.data.Dataset.from_generator(batches, output_signature=(\n"
                           "        tf.TensorSpec([None, 3], tf.float32), tf.TensorSpec([None], tf.int64)))\n")
    _, walked = _stages(path)
    assert [s.batched for s in walked.stages] == [True]
    unbatched = walk(tf.data.Dataset.from_tensors(tf.zeros([6, 5])).unbatch().batch(3), {}, None)
    assert [s.batched for s in unbatched.stages] == [True, False, True], "the source holds one batch of 6"


def test_a_per_line_parser_behind_an_unseeded_shuffle_has_a_batched_equivalent(tmp_path, csv_file):
    """`shuffle(lines) → map(parse_csv)`: the sample the per-example and the batched outputs are compared on is read
    once (read twice through an unseeded shuffle, they were two samples: "direct: other values")."""
    from pipebench.diagnose.vectorize import batched_equivalent

    path = _user(tmp_path, "def parse_csv(value):\n"
                           "    columns = tf.io.decode_csv(value, record_defaults=DEFAULTS, field_delim='\\t')\n"
                           "    features = dict(zip(COLUMNS, columns))\n"
                           "    return features, features.pop('label')\n\n\n"
                           "def input_fn(files):\n"
                           "    return tf.data.TextLineDataset(files).shuffle(500).map(parse_csv, 5).batch(32)\n")
    _, walked = _stages(path, files=[csv_file])
    found = batched_equivalent(walked, 2)
    assert found.mechanism == "direct", found.why


def test_sparse_ragged_and_string_elements_are_compared_row_by_row(tmp_path):
    """VarLenFeature-style SparseTensors, ragged tensors and strings: one canonical row per example, the same whether
    read from a batch or one example at a time (the vectorize check and the content check read rows so); a row
    that differs in one value differs."""
    rows = [[1, 2], [3], [4, 5, 6]]
    ragged = tf.ragged.constant(rows)
    sparse = ragged.to_sparse()
    strings = tf.constant([b"a\0", b"bb", b""])
    for batch, singles in ((sparse, [tf.sparse.reshape(tf.ragged.constant([r]).to_sparse(), [-1]) for r in rows]),
                           (tf.ragged.constant([[r] for r in rows]), [tf.ragged.constant([[r] for r in rows])[i]
                                                                      for i in range(3)]),
                           (strings, [strings[i] for i in range(3)])):
        found = contents.canonical_rows(batch, True)
        assert len(found) == 3 and len(set(found)) == 3
        assert found == [contents.canonical_rows(s, False)[0] for s in singles]
    other = tf.ragged.constant([[1, 2], [3], [4, 5, 7]]).to_sparse()
    assert contents.canonical_rows(other, True)[:2] == contents.canonical_rows(sparse, True)[:2]
    assert contents.canonical_rows(other, True)[2] != contents.canonical_rows(sparse, True)[2]
    dataset = tf.data.Dataset.from_tensor_slices({"ids": sparse, "label": [0, 1, 0]}).batch(2)
    epoch = contents.read_epoch(dataset, True, 100)
    assert len(epoch.examples) == 3 and epoch.batch_sizes == [2, 1]
    contents.check_structure(dataset.element_spec)


def test_a_tf1_input_fn_that_looks_its_label_up_after_get_next_is_captured(tmp_path, csv_file):
    """A label looked up in a hash table after get_next(), then cast: traced as TF1 traces it, the computation is a
    map of the element (the table initialised once), and the pipeline did not run to capture it."""
    path = _user(tmp_path, "def input_fn(files):\n"
                           "    def parse(line):\n"
                           "        columns = tf.io.decode_csv(line, [[''], [0], [0], [''], [0.0]], field_delim='\\t')\n"
                           "        return dict(zip(COLUMNS, columns))\n"
                           "    dataset = tf.data.TextLineDataset(files).batch(8).map(parse)\n"
                           "    features = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()\n"
                           "    table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(\n"
                           "        tf.constant(['0', '1']), tf.constant([10, 20], tf.int64)), -1)\n"
                           "    label = tf.cast(table.lookup(features.pop('label')), tf.float32)\n"
                           "    return features, label\n")
    loaded, walked = _stages(path, files=[csv_file])
    assert "after get_next()" in loaded.tf1 and walked.stages[-1].kind == "map"
    features, label = next(iter(loaded.dataset))
    assert label.dtype == tf.float32 and [float(v) for v in label] == [10.0, 20.0] * 4
    assert sorted(features) == ["a", "b", "c", "d"]
