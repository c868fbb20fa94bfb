"""The rules `pipebench diagnose` holds on any input_fn, each on the shape that broke it on code it had never seen
(issue 46): what TF runs is walked whoever built it (library readers, `apply` chains on tf.compat.v1 adapters);
one rule for rows; a sample compared with itself is read once; sparse, ragged and string elements are compared;
what a TF1 input_fn computes after get_next() is captured. Small pipelines built here, real TensorFlow, no timing."""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest

from lazy import lazy

pytestmark = pytest.mark.tf214
tf = lazy("tensorflow")
load = lazy("pipebench.pipeline.user_code", "load")
walk = lazy("pipebench.pipeline.walk", "walk")
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
    from pipebench.pipeline.rows import plain_rows, rows_tensor

    element = next(iter(loaded.dataset))  # shuffled batches: the file's last, partial one may come first
    rows = int(rows_tensor(tf, element, True))
    assert walked.stages[-1].batched and rows == plain_rows(tf, element) == int(tf.shape(element[1])[0]) > 1


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


def test_an_in_memory_source_shuffled_then_batched_is_gathered_by_batch_in_the_same_order():
    """from_tensor_slices of a DataFrame's columns → shuffle(seed) → batch: its row numbers shuffled and batched,
    each batch's rows gathered at once, give the same batches in the same order (a shuffle draws alike whatever it
    holds)."""
    import numpy as np

    from pipebench.measure.build import replay, steps_of
    from pipebench.diagnose.rewrites import compose, gather

    columns = {"a": np.arange(500, dtype=np.float64), "c": np.array([f"x{i}" for i in range(500)], dtype=object)}
    dataset = tf.data.Dataset.from_tensor_slices((columns, np.arange(500) % 2)).shuffle(100, seed=3).repeat(2) \
        .batch(32)
    walked = walk(dataset, {}, None)
    assert walked.stages[0].params == {"rows": 500}
    steps, _ = steps_of(walked)
    rewritten = replay(compose([gather(3)], steps), walked)
    assert [s.kind for s in walk(rewritten, {}, None).stages] == ["source", "shuffle", "repeat", "batch", "map"]
    mine, theirs = contents.read_epoch(rewritten, True, 5000), contents.read_epoch(dataset, True, 5000)
    assert mine.examples == theirs.examples and mine.batch_sizes == theirs.batch_sizes


def test_make_csv_dataset_restructured_parses_a_batch_at_a_time_and_yields_its_rows(csv_file):
    """pipebench's make_csv_dataset (lines batched, one decode_csv a batch) gives make_csv_dataset's batches, in
    its order with the same seed, its column types inferred by TensorFlow's own helpers."""
    from pipebench.pipeline.decoders import pipebench_make_csv_dataset

    kwargs = dict(column_names=["label", "a", "b", "c", "d"], label_name="label", field_delim="\t", header=False,
                  num_epochs=1, shuffle=True, shuffle_seed=5)
    theirs = tf.data.experimental.make_csv_dataset([csv_file], 16, **kwargs)
    mine = pipebench_make_csv_dataset([csv_file], 16, **kwargs)
    assert tf.nest.map_structure(lambda s: s.dtype, mine.element_spec) == \
        tf.nest.map_structure(lambda s: s.dtype, theirs.element_spec)
    first, second = contents.read_epoch(theirs, True, 5000), contents.read_epoch(mine, True, 5000)
    assert second.examples == first.examples and len(first.examples) == 600
    ops = {s.op for s in walk(mine, {}, None).stages if s.inside is None}
    assert "InterleaveDataset" in ops and not any("Csv" in op for op in ops), "lines read, CSV parsed per batch"


def _diagnosed(tmp_path: Path, body: str, kwargs: dict, **request):
    """Diagnose a user's module (both worker processes, in this one, calls kept short: no figure is asserted)."""
    import json

    from diagnose_fixtures import short_calls

    from pipebench.diagnose.records import Request
    from pipebench.diagnose.worker import Diagnoser

    tmp_path.mkdir(parents=True, exist_ok=True)
    path = _user(tmp_path, body)
    common = {**dict(rounds=2, window_sec=0.05, settle_sec=0.0, warmup_sec=0.5, content_cap_rows=2000,
                     progress_file="", train=False, profile=False), **request}
    with short_calls():
        first = Diagnoser(Request(path, "input_fn", kwargs, None, scratch=str(tmp_path / "a"), second_follows=True,
                                  **common), lambda text: None).run()
        (tmp_path / "first.json").write_text(json.dumps(first.to_json(), allow_nan=False))
        return Diagnoser(Request(path, "input_fn", kwargs, None, scratch=str(tmp_path / "b"),
                                 first=str(tmp_path / "first.json"), **common), lambda text: None).run()


def test_a_one_pass_pipeline_ending_in_cache_is_diagnosed_on_its_first_pass(tmp_path, csv_file):
    """`... .batch().cache()` with no repeat: training that calls input_fn per epoch reads only first passes (every
    row parsed), so that is what the figures, the bottleneck and the rewrites are of; the later passes (from the
    filled cache: 36x faster on a real one) are measured apart and said so. With a repeat after the cache, the later
    passes are what training mostly sees."""
    body = ("def input_fn(files, epochs=1):\n"
            "    def parse(line):\n"
            "        return tf.io.decode_csv(line, DEFAULTS, field_delim='\\t')\n"
            "    dataset = tf.data.TextLineDataset(files).map(parse).batch(32).cache()\n"
            "    return dataset.repeat(epochs) if epochs > 1 else dataset\n")
    found = _diagnosed(tmp_path / "one", body, {"files": [csv_file]})
    assert found.passes is not None and found.passes.main == "first" and found.passes.other.which == "later"
    assert any("first pass" in said for said in found.measured_as) and "one pass" in found.passes.sees
    assert found.self_check is not None and "called again for each pass" in found.self_check.how
    repeated = _diagnosed(tmp_path / "many", body, {"files": [csv_file], "epochs": 5})
    assert repeated.passes.main == "later" and repeated.passes.other.which == "first"
    assert "4 of its 5 passes" in repeated.passes.sees


def test_the_summary_opens_with_a_disagreement_with_a_plain_loop(tmp_path, csv_file, monkeypatch):
    """A unit error (here injected: every element counted as one row, the bug a TF1 restructuring once caused) makes
    the diagnosis's rate disagree with a plain loop over the user's function by the batch size: the summary says so
    first. The same diagnosis without the error agrees."""
    from pipebench.diagnose.report import summary_lines

    body = ("def input_fn(files):\n"
            "    return tf.data.TextLineDataset(files).batch(64).map(\n"
            "        lambda lines: tf.io.decode_csv(lines, DEFAULTS, field_delim='\\t'))\n")
    right = _diagnosed(tmp_path / "right", body, {"files": [csv_file]}, rounds=3, window_sec=0.3)
    assert right.self_check.agrees is not False, right.self_check  # agrees, or its interval crosses a bound
    assert not summary_lines(right)[0].startswith("the diagnosis disagrees")
    monkeypatch.setattr("pipebench.diagnose.subject.rows_tensor", lambda tf, element, batched: tf.constant(1, tf.int64))
    wrong = _diagnosed(tmp_path / "wrong", body, {"files": [csv_file]}, rounds=3, window_sec=0.3)
    assert wrong.self_check.agrees is False and wrong.self_check.ratio.mean > 10
    assert summary_lines(wrong)[0].startswith("the diagnosis disagrees with a plain loop of your function")


def test_a_seed_the_users_function_sets_seeds_what_it_builds_and_leaves_the_callers_process_unseeded(tmp_path):
    """An input_fn that calls tf.random.set_seed (as notebooks do) left its seed in the process that loaded it:
    every seeded shuffle built there afterwards yielded another order than in a fresh process."""
    from tensorflow.python.eager import context

    path = _user(tmp_path, "def input_fn():\n    tf.random.set_seed(42)\n"
                           "    return tf.data.Dataset.range(50).shuffle(50)\n")

    def order(dataset) -> list[int]:
        return [int(x) for x in dataset]

    fresh = order(tf.data.Dataset.range(50).shuffle(50, seed=9))
    first, _ = _stages(path)
    assert context.global_seed() is None
    assert order(tf.data.Dataset.range(50).shuffle(50, seed=9)) == fresh
    again, _ = _stages(path)
    assert order(first.dataset) == order(again.dataset)  # its own seed still seeds what it builds


def test_a_zip_of_companion_readers_is_the_source_of_the_chain_after_it(tmp_path):
    """A reader per companion file zipped together (NVIDIA's split-TFRecords reader) was refused ("ZipDataset
    combines 28 datasets"): the zip is the chain's source, measured as one, and what follows it is walked."""
    path = _user(tmp_path, "def input_fn():\n"
                           "    features = tf.data.Dataset.range(64).map(lambda i: tf.cast(i, tf.float32))\n"
                           "    labels = tf.data.Dataset.range(64).map(lambda i: i % 2)\n"
                           "    dataset = tf.data.Dataset.zip((features, labels))\n"
                           "    return dataset.batch(8).prefetch(2)\n")
    loaded, walked = _stages(path)
    assert [s.kind for s in walked.stages] == ["source", "batch", "prefetch"]
    assert walked.stages[0].call == "tf.data.Dataset.zip(2 datasets)" and walked.stages[0].place.line == 10
    assert [s.batched for s in walked.stages] == [False, True, True]


def test_an_endless_make_csv_dataset_restructured_yields_its_rows_over_one_epoch(tmp_path, csv_file):
    """make_csv_dataset's own default repeats forever and drops the last partial batch: its restructuring was read
    endlessly beside the original's one epoch ("0 of N rows differ" yet not kept), then over one epoch kept the partial
    batch. One epoch of each now batches alike; and a shuffle that keeps another subset under another seed does not
    make every column a random draw (the check then compared nothing)."""
    body = ("def input_fn(files):\n"
            "    return tf.data.experimental.make_csv_dataset(\n"
            "        files, 64, column_names=COLUMNS, column_defaults=DEFAULTS, label_name='label',\n"
            "        field_delim='\\t', header=False)\n")
    found = _diagnosed(tmp_path, body, {"files": [csv_file]})
    restructure = [r for r in found.rewrites if r.kind == "restructure"]
    assert len(restructure) == 1 and restructure[0].content is not None
    content = restructure[0].content
    assert content.same_elements, content.semantics
    assert content.examples == content.original_examples == 576  # 600 rows, 9 whole batches of 64
    assert not content.random_components


def test_records_that_each_hold_a_whole_batch_count_its_rows_though_nothing_batches(tmp_path):
    """NVIDIA's prebatched records (each parsed into a [256, 13] block and a [256, 1] label; no batch in the
    pipeline) were counted one row per element: 875 rows/s where a plain loop reads 132,337."""
    from pipebench.pipeline.rows import plain_rows, rows_tensor

    path = _user(tmp_path, "def input_fn():\n"
                           "    blocks = tf.data.Dataset.range(10).map(\n"
                           "        lambda i: (tf.fill([8, 3], tf.cast(i, tf.float32)), tf.zeros([8, 1], tf.int8)))\n"
                           "    return blocks.repeat().prefetch(1)\n")
    loaded, walked = _stages(path)
    assert all(s.batched for s in walked.stages)
    element = next(iter(loaded.dataset))
    assert int(rows_tensor(tf, element, walked.stages[-1].batched)) == plain_rows(tf, element) == 8


def test_a_python_loops_own_cost_per_element_is_not_called_a_disagreement(tmp_path):
    """The plain loop is Python: every component of an element becomes an eager tensor, which the diagnosis's arms
    (a loop inside a tf.function) never pay. NVIDIA's 28-component elements read 0.61× in the plain loop with nothing
    wrong in the diagnosis. Here 60 components an element, from memory: the loop's own cost is read and the ratio
    judged against what it leaves."""
    body = ("def input_fn():\n"
            "    element = {f'c{i}': tf.zeros([4]) for i in range(60)}, tf.zeros([4, 1])\n"
            "    return tf.data.Dataset.from_tensors(element).repeat()\n")
    found = _diagnosed(tmp_path, body, {}, rounds=3, window_sec=0.3)
    check = found.self_check
    assert check.loop_us_per_element > 0 and check.expected < 0.7, check
    assert check.ratio.mean < 1 / 1.5, check  # the ratio alone would have been called a disagreement
    assert check.agrees is not False, check


def test_the_self_check_is_inconclusive_when_its_interval_crosses_a_bound():
    """A ratio shown equivalent within the band agrees, one wholly outside it disagrees, the rest cannot decide:
    NVIDIA's reader read 0.67× (0.37–1.22×) where its loop's cost left 0.61× (band 0.41–1.5×)."""
    from pipebench.diagnose.selfcheck import verdict
    from pipebench.measure.intervals import Interval

    def judged(ratio: Interval, expected: float) -> bool | None:
        return verdict(ratio, expected, ratio)

    assert judged(Interval(0.9, 0.8, 1.1, 5), 1.0) is True
    assert judged(Interval(0.67, 0.37, 1.22, 5), 0.61) is None
    assert judged(Interval(1.4, 1.2, 1.7, 5), 1.0) is None
    assert judged(Interval(20.0, 15.0, 26.0, 5), 1.0) is False
    assert judged(Interval(0.2, 0.1, 0.3, 5), 0.61) is False
    assert judged(Interval(0.9, None, None, 1), 1.0) is None


def test_the_self_check_agrees_by_an_equivalence_test_and_disagrees_only_at_95_percent():
    """"Agrees within 1.5×" is an equivalence: two one-sided tests at 5%, the 90% interval inside the band
    (Schuirmann's, as bioequivalence is judged). real_tfrs_ranking_cache's three rounds of whole passes, 0.89, 1.04 and
    1.21×, every one inside the band, read 1.04× (0.73–1.50×) at 95% and stayed undecided (2026-12-04)."""
    from pipebench.diagnose.selfcheck import EQUIVALENCE_CONFIDENCE, check
    from pipebench.measure.trial import Window

    def pairs(ratios: list[float]) -> list:
        return [(Window("original", i, 20_000, 1.0, None), Window("plain loop", i, round(20_000 * r), 1.0, None))
                for i, r in enumerate(ratios)]

    found = check(pairs([0.89, 1.04, 1.21]), 0.0, 1, 20_000.0, True)
    assert found.ratio.high > 1.5 - 0.01, found.ratio  # at 95% it crosses the band's bound
    assert found.equivalence.low > 1 / 1.5 and found.equivalence.high < 1.5, found.equivalence
    assert EQUIVALENCE_CONFIDENCE == 0.90 and found.agrees is True
    # A unit error still disagrees, and one whose 95% interval reaches into the band does not yet.
    assert check(pairs([300.0, 250.0, 270.0]), 0.0, 1, 20_000.0, True).agrees is False
    assert check(pairs([1.2, 2.6, 1.9]), 0.0, 1, 20_000.0, True).agrees is None



def test_the_plain_loop_leaves_nothing_filling_behind_other_arms_unless_a_fresh_iterator_would_cost_much():
    """real_longmao_generator_criteo's prefetch(256) of batches refilled 65,536 rows of its Python generator behind
    every other arm's window while the plain loop kept its iterator: the self-check read 1.86-8.70× of the pipeline.
    Unless it would lose a cache or refill large shuffle buffers, the plain loop starts afresh each window, and
    nothing of it runs behind the next arm."""
    import tensorflow as tf

    from pipebench.diagnose.selfcheck import FRESH_FILL_SEC, plain_arm, releases

    assert releases(False, int(FRESH_FILL_SEC * 10_000), 10_000.0)
    assert not releases(True, 0, 10_000.0), "a fresh iterator would lose its cache"
    assert not releases(False, int(FRESH_FILL_SEC * 10_000) + 1, 10_000.0), "its shuffle would refill each window"
    for released in (True, False):
        produced: list[int] = []

        def rows(produced=produced):
            for i in range(10 ** 9):  # slow enough that its buffers cannot fill within the test on any machine
                time.sleep(0.001)
                produced.append(i)
                yield i

        dataset = tf.data.Dataset.from_generator(rows, output_signature=tf.TensorSpec([], tf.int64)) \
            .batch(4).prefetch(2_000)
        arm = plain_arm(tf, lambda dataset=dataset: dataset, False, time.process_time, {}, released)
        arm.timed(0.2, 0)
        assert arm.release() is released
        time.sleep(0.3)
        before = len(produced)
        time.sleep(0.5)
        if released:
            assert len(produced) == before, "its pipeline stopped with its window"
        else:
            assert len(produced) > before, "a kept iterator refills its buffers behind the next arm (why it is not)"
        arm.close()


def test_an_arm_of_single_examples_keeps_its_iterator_when_a_fresh_one_would_refill_large_shuffle_buffers(tmp_path):
    """real_tfrs_ranking_cache's prefixes past its shuffles of 100,000 rows settled 2-4 s before every 0.5 s window,
    refilling them in a fresh iterator. Such an arm keeps its iterator (its settle drains what it banked); one that
    fills little starts afresh each window, as before."""
    import tensorflow as tf

    from pipebench.diagnose.records import Request
    from pipebench.diagnose.subject import KEEP_FILL_ROWS
    from pipebench.diagnose.worker import Diagnoser

    request = Request(str(tmp_path / "f.py"), "input_fn", {}, None, rounds=2, window_sec=0.05, settle_sec=0.0,
                      warmup_sec=0.5, content_cap_rows=100, scratch=str(tmp_path), progress_file="")
    diagnoser = Diagnoser(request, lambda text: None)
    rows = tf.data.Dataset.range(100_000).shuffle(KEEP_FILL_ROWS)
    assert not diagnoser.input_arm("prefix", rows, False, KEEP_FILL_ROWS).releasable
    assert diagnoser.input_arm("prefix", rows, False, KEEP_FILL_ROWS - 1).releasable
    assert not diagnoser.input_arm("whole", rows.batch(64), True, 0).releasable, "a batched arm keeps it anyway"


@pytest.mark.parametrize("buffer", [50_000, 10_000, 100])
def test_a_rewrite_comparison_keeps_its_arms_iterators_when_a_fresh_one_would_refill_large_shuffle_buffers(
        tmp_path, buffer):
    """As a prefix arm's: a restart every few windows refilled real_tfrs_ranking_cache's two shuffles (~3 s) in the
    rewrites' rounds. Arms over a pipeline whose fill is under RESTART_FILL_ROWS still restart: never restarted,
    real_tft_sentiment_varlen_tf1's shuffle of 10,000 rows let tf.data's legacy prefetch autotuner double its
    prefetch(AUTOTUNE) every window, refilled for seconds before the next arm's."""
    from pipebench.diagnose.records import Request
    from pipebench.diagnose.subject import RESTART_FILL_ROWS
    from pipebench.diagnose.worker import Diagnoser

    request = Request(str(tmp_path / "f.py"), "input_fn", {}, None, rounds=2, window_sec=0.02, settle_sec=0.0,
                      warmup_sec=0.5, content_cap_rows=100, scratch=str(tmp_path), progress_file="")
    diagnoser = Diagnoser(request, lambda text: None)
    dataset = tf.data.Dataset.range(60_000).shuffle(buffer).batch(256).repeat()
    diagnoser.walked, diagnoser.notes, diagnoser.measure_steps = walk(dataset, {}, None), {}, ()
    original = diagnoser.input_arm("original", dataset, True)
    rewrite = diagnoser.input_arm("rewrite", dataset.map(lambda x: x + 1), True)
    assert original.restarts and rewrite.restarts, "an arm made without its fill restarts"
    pairs = diagnoser.paired(original, [rewrite])
    assert len(pairs["rewrite"]) == 2
    assert original.restarts is rewrite.restarts is (buffer < RESTART_FILL_ROWS)


def test_an_undecided_self_check_takes_more_rounds_alone_until_it_is_decided(tmp_path):
    """The self-check's arm, while its `still` says undecided, takes up to `more_still` rounds past the diagnosis's
    (real_bert_pretraining_interleave's plain loop ended inconclusive after 5: 0.73-2.14x), of longer windows, both
    its own and the original's it pairs with (tf1_tensors' rounds swung 0.51-1.27x over half-second windows); a
    rewrite arm does not, and the check stops as soon as it is decided."""
    from pipebench.diagnose.records import Request
    from pipebench.diagnose.subject import STILL_WINDOWS
    from pipebench.diagnose.worker import Diagnoser

    request = Request(str(tmp_path / "f.py"), "input_fn", {}, None, rounds=3, window_sec=0.1, settle_sec=0.0,
                      warmup_sec=0.5, content_cap_rows=100, scratch=str(tmp_path), progress_file="")
    diagnoser = Diagnoser(request, lambda text: None)
    dataset = tf.data.Dataset.range(40_000).batch(256).repeat()
    diagnoser.walked, diagnoser.notes, diagnoser.measure_steps = walk(dataset, {}, None), {}, ()

    def arms():
        return [diagnoser.input_arm(name, dataset, True) for name in ("original", "rewrite", "check")]
    original, rewrite, check = arms()
    pairs = diagnoser.paired(original, [rewrite, check], still={"check": lambda pairs: True}, more_still=2)
    assert (len(pairs["rewrite"]), len(pairs["check"])) == (3, 5)
    seconds = [[w.seconds for w in pair] for pair in pairs["check"]]
    assert min(min(s) for s in seconds[3:]) >= STILL_WINDOWS * request.window_sec, seconds
    diagnoser.request = dataclasses.replace(request, window_sec=0.02)
    original, rewrite, check = arms()
    pairs = diagnoser.paired(original, [rewrite, check], still={"check": lambda found: len(found["check"]) < 4},
                             more_still=2)
    assert (len(pairs["rewrite"]), len(pairs["check"])) == (3, 4)
    # its verdict may read another arm's pairs (the self-check's band widens by the cores-kept-awake arm's gain)
    original, rewrite, check = arms()
    pairs = diagnoser.paired(original, [rewrite, check], more_still=2,
                             still={"check": lambda found: len(found["rewrite"]) < 3})
    assert (len(pairs["rewrite"]), len(pairs["check"])) == (3, 3)


def test_a_self_check_left_alone_after_the_first_rounds_takes_the_rest_in_longer_windows(tmp_path):
    """Once no rewrite is open beside it, an undecided self-check's rounds past the first ones are of STILL_WINDOWS
    times longer windows: a visit's wait and settle do not grow with its window, and a longer window averages the
    half-second swing (real_tda_babyweight_make_csv's whole pipeline beside itself read 0.83-1.25x, 2026-12-05)."""
    from pipebench.diagnose.records import Request
    from pipebench.diagnose.subject import EARLY_ROUNDS, STILL_WINDOWS
    from pipebench.diagnose.worker import Diagnoser

    request = Request(str(tmp_path / "f.py"), "input_fn", {}, None, rounds=5, window_sec=0.1, settle_sec=0.0,
                      warmup_sec=0.5, content_cap_rows=100, scratch=str(tmp_path), progress_file="")
    diagnoser = Diagnoser(request, lambda text: None)
    dataset = tf.data.Dataset.range(40_000).batch(256).repeat()
    diagnoser.walked, diagnoser.notes, diagnoser.measure_steps = walk(dataset, {}, None), {}, ()
    slower = dataset.map(lambda x: tf.strings.to_number(tf.strings.as_string(x), tf.int64))  # no gain: it stops
    original, rewrite, check = (diagnoser.input_arm("original", dataset, True),
                                diagnoser.input_arm("rewrite", slower, True), diagnoser.input_arm("check", dataset, True))
    pairs = diagnoser.paired(original, [rewrite, check], still={"check": lambda found: True})
    assert (len(pairs["rewrite"]), len(pairs["check"])) == (EARLY_ROUNDS, 5)
    later = [[w.seconds for w in pair] for pair in pairs["check"][EARLY_ROUNDS:]]
    assert min(min(s) for s in later) >= STILL_WINDOWS * request.window_sec, later


def _tfrecords(folder: Path, files: int = 2, rows: int = 48) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for f in range(files):
        name = str(folder / f"part-{f}.tfrecord")
        with tf.io.TFRecordWriter(name) as writer:
            for i in range(rows):
                feature = {"label": tf.train.Feature(float_list=tf.train.FloatList(value=[i % 2])),
                           "x": tf.train.Feature(int64_list=tf.train.Int64List(value=[f, i]))}
                writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
        names.append(name)
    return names


LEGACY_READER = ("def input_fn(filenames):\n"
                 "    spec = {'label': tf.io.FixedLenFeature([], tf.float32), 'x': tf.io.FixedLenFeature([2], tf.int64)}\n"
                 "    return tf.data.experimental.make_batched_features_dataset(\n"
                 "        filenames, 16, spec, num_epochs=1, shuffle=False)\n")


def test_a_legacy_parallel_interleave_is_replayed_as_that_op_and_a_replay_running_other_ops_is_refused(tmp_path,
                                                                                                    monkeypatch):
    """make_batched_features_dataset and make_csv_dataset read files through tf.data.experimental.parallel_interleave
    unless told AUTOTUNE: another op than interleave's, handing each element over between threads. Replayed as
    interleave, real_tfx_taxi_batched_tf1 read 13× its own pipeline, and every rewrite measured as a replay beside it
    was credited with that (its deterministic=False: 12.80×). The walk reads the op, the replay runs it, and a replay
    that runs other ops than the user's pipeline is refused, whatever the op."""
    from pipebench.pipeline.stages import Step
    from pipebench.measure.build import replay, replay_differs, steps_of

    files = _tfrecords(tmp_path / "data")
    _, walked = _stages(_user(tmp_path, LEGACY_READER), filenames=files)
    (legacy,) = [s for s in walked.stages if s.kind == "interleave"]
    assert legacy.op == "ParallelInterleaveDataset" and legacy.params["sloppy"] is False, legacy
    assert legacy.label.startswith("parallel_interleave") and legacy.parallelism == "1", legacy
    steps, note = steps_of(walked)
    assert steps and note is None
    replayed = walk(replay(steps, walked), {}, None).stages
    assert "ParallelInterleaveDataset" in [s.op for s in replayed], [s.op for s in replayed]
    assert replay_differs(steps, walked) is None
    as_interleave = tuple(
        Step(s.kind, {k: v for k, v in s.args.items() if k not in ("sloppy", "buffer_output_elements",
                                                                      "prefetch_input_elements")}, s.origin, s.function)
        if s.kind == "interleave" else s for s in steps)  # how it was replayed before
    assert replay_differs(as_interleave, walked) is not None
    # the same calls, with the same arguments, run as another op: refused by the op alone
    import dataclasses

    import pipebench.measure.build as replays

    real_walk = replays.walk

    def other_op(dataset, *args):
        found = real_walk(dataset, *args)
        stages = [dataclasses.replace(s, op="InterleaveDataset") if s.op == "ParallelInterleaveDataset" else s
                  for s in found.stages]
        return dataclasses.replace(found, stages=stages)

    monkeypatch.setattr(replays, "walk", other_op)
    said = replay_differs(steps, walked)
    assert said is not None and "InterleaveDataset for ParallelInterleaveDataset" in said, said


@pytest.mark.parametrize("written", ["library", "by hand"])
def test_a_legacy_parallel_interleave_is_offered_as_interleave_written_as_the_library_readers_own_argument(
        tmp_path, written):
    """The rewrite to interleave(num_parallel_calls=AUTOTUNE) is measured like any other, and exported as what a
    user can write: a library reader's `reader_num_threads` / `num_parallel_reads=tf.data.AUTOTUNE` (TensorFlow
    then reads through interleave). One written by hand is listed call by call, no module written."""
    import dataclasses

    from pipebench.diagnose.patch import NoPatch, patched_text

    files = _tfrecords(tmp_path / "data")
    body = LEGACY_READER if written == "library" else (
        "def input_fn(filenames):\n"
        "    spec = {'label': tf.io.FixedLenFeature([], tf.float32), 'x': tf.io.FixedLenFeature([2], tf.int64)}\n"
        "    return tf.data.Dataset.from_tensor_slices(filenames).apply(\n"
        "        tf.data.experimental.parallel_interleave(tf.data.TFRecordDataset, cycle_length=2)).batch(16).map(\n"
        "        lambda s: tf.io.parse_example(s, spec))\n")
    found = _diagnosed(tmp_path, body, {"filenames": files})
    (rewrite,) = [r for r in found.rewrites if r.kind == "core_interleave"]
    # measured (and checked for the same rows) unless its ceiling says it cannot gain: here the handing over is a
    # few % of small batches' pipeline, real_tfx_taxi_batched_tf1's 85% (kept there: 1.35×)
    assert rewrite.automatic and (rewrite.same_elements or rewrite.ceiling is not None), rewrite
    text = Path(found.function.rpartition(":")[0]).read_text()
    if written == "library":
        assert "make_batched_features_dataset(..., reader_num_threads=tf.data.AUTOTUNE)" in rewrite.change
        patched = patched_text(found, dataclasses.replace(rewrite, kept=True), text)
        assert "spec, num_epochs=1, shuffle=False, reader_num_threads=tf.data.AUTOTUNE)" in patched, patched
    else:
        assert "interleave(TFRecordDatasetV2, cycle_length=2, num_parallel_calls=tf.data.AUTOTUNE)" in rewrite.change \
            or "cycle_length=2, num_parallel_calls=tf.data.AUTOTUNE)" in rewrite.change, rewrite.change
        with pytest.raises(NoPatch, match="no library reader made"):
            patched_text(found, dataclasses.replace(rewrite, kept=True), text)
