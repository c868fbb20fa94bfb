"""pipebench diagnose on input_fns taken from public repositories (tests/diagnose_corpus/real: each file names its
repository, path, commit and licence; only wiring changed): the stages it reads, inside an interleave's function
too; rows, not elements; TF1 functions captured behind their iterator and exported as TF2; every rewrite it builds
yields the original's rows; and the exported module, called with other values of every parameter that feeds a
stage, yields what the user's own function yields with them. Never timing: rounds and windows are minimal, and no
assertion reads a gain."""
from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path

import pytest

from diagnose_fixtures import REAL, exported, import_file, kwargs_of, make_data, path_of, short_calls
from lazy import lazy

from pipebench.diagnose.records import Diagnosis, Request
from pipebench.typed import from_json

pytestmark = pytest.mark.tf
contents = lazy("pipebench.diagnose.content")
load = lazy("pipebench.pipeline.user_code", "load")
walk = lazy("pipebench.pipeline.walk", "walk")
#: The rows a test reads of a pipeline (some repeat forever).
CAP = 4_000


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, list[str]]:
    return make_data(tmp_path_factory.mktemp("diagnose-real-data"))


def _diagnose(name: str, data, scratch: Path) -> Diagnosis:
    from pipebench.diagnose.worker import Diagnoser

    request = Request(str(path_of(name)), "input_fn", kwargs_of(name, data), None, rounds=2, window_sec=0.05,
                      settle_sec=0.0, warmup_sec=0.5, content_cap_rows=CAP, scratch=str(scratch), progress_file="",
                      train=False, profile=False)
    found = Diagnoser(request, lambda text: None).run()
    return from_json(Diagnosis, json.loads(json.dumps(found.to_json(), allow_nan=False)), "diagnosis")


@pytest.fixture(scope="module")
def diagnoses(data, tmp_path_factory) -> dict[str, Diagnosis]:
    with short_calls():
        return {name: _diagnose(name, data, tmp_path_factory.mktemp(name)) for name in REAL}


def _epoch(dataset, batched: bool = True):
    return contents.read_epoch(dataset, batched, CAP)


#: Reads of the user's function, at most, to see that it is random (`_compare`).
READS = 10


def _compare(name: str, kwargs: dict, mine, reads: list):
    """Compare `mine` with the user's function (`reads`: its epochs read so far, kept for the next call). Two reads do
    not show all of a random pipeline's randomness: an unseeded shuffle of three file names (real_algoperf_criteo1tb)
    repeats its order in one read of six, and under a repeat and a take the rows themselves depend on it; a shuffled
    epoch cut at the cap (real_deepctr_tfrecord_tf1 with num_epochs=2) holds another sample of rows each read, and
    two samples can hold the same count of each label by chance, so the label looks fixed and a rewrite's other
    (equally possible) count counts as a difference. So while `mine` differs, read again, at most READS reads, and
    compare beside the read that shows the most randomness (`_differing`)."""
    while len(reads) < 2:
        reads.append(_epoch(_users_dataset(name, kwargs)))
    found = contents.compare(reads[0], _differing(reads), mine)
    while not found.same_elements and len(reads) < READS:
        reads.append(_epoch(_users_dataset(name, kwargs)))
        found = contents.compare(reads[0], _differing(reads), mine)
    return found


def _same_rows(one, other) -> bool:
    return Counter(one.examples) == Counter(other.examples)


def _differing(reads: list):
    """Give the read that differs most from reads[0]: in the most components, then in its rows, then in order."""
    first = reads[0]
    return max(reads[1:], key=lambda r: (len(contents.compare(first, r, r).random_components),
                                         not _same_rows(r, first), r.examples != first.examples))


def _users_dataset(name: str, kwargs: dict):
    """Give the dataset the user's own function gives (a TF1 one's behind its iterator, as a TF2 caller gets it; one
    with TF1 names TF 2 lacks: its tf_upgrade_v2 conversion's, what it can run as under TF 2)."""
    import tempfile

    from pipebench.pipeline.tf1_capture import dataset_of_tf1
    from pipebench.pipeline.tf1_upgrade import upgrade

    module = import_file(path_of(name), f"users_{name}")
    try:
        return dataset_of_tf1(module.input_fn, **kwargs)
    except AttributeError:
        converted = upgrade(str(path_of(name)), Path(tempfile.mkdtemp(prefix="pipebench-test-upgrade-")))
        return dataset_of_tf1(import_file(converted.path, f"upgraded_{name}").input_fn, **kwargs)


def test_every_real_input_fn_names_its_source_and_licence():
    for name in REAL:
        head = path_of(name).read_text()[:3000]
        for key in ("Repository: ", "Path: ", "Commit: ", "Licence: ", "Wiring changed: "):
            assert key in head, f"{name} does not say its {key.strip(': ')}"
        commit = head.split("Commit: ")[1].split()[0]
        assert len(commit) == 40 and all(c in "0123456789abcdef" for c in commit), name


def test_the_model_gardens_reader_is_listed_with_the_stages_its_interleave_builds(data):
    loaded = load(str(path_of("real_tfmodels_criteo_tsv")), "input_fn", kwargs_of("real_tfmodels_criteo_tsv", data))
    walked = walk(loaded.dataset, loaded.sites, loaded.module)
    stages = walked.stages
    kinds = [(s.kind, s.inside) for s in stages]
    assert kinds == [("source", None), ("interleave", None), ("source", 1), ("batch", 1), ("map", 1),
                     ("prefetch", None)], kinds
    file = str(path_of("real_tfmodels_criteo_tsv"))
    assert all(s.place is not None and s.place.file == file for s in stages), "each at the line that wrote it"
    assert stages[4].function.short == "_parse_fn" and stages[3].params["drop_remainder"] is True
    assert stages[1].batched and stages[-1].batched, "batching inside the interleave: its elements are batches"
    # an inner stage's prefix is the interleave with its function stopped there: lines, then batches of lines
    lines = next(iter(walked.prefix(2)))
    batch = next(iter(walked.prefix(3)))
    assert lines.dtype.name == "string" and lines.shape.rank == 0 and batch.shape.rank == 1


def test_rows_count_the_label_of_a_batch_not_the_element(data):
    import tensorflow as tf

    from pipebench.pipeline.rows import rows_tensor as element_rows

    loaded = load(str(path_of("real_tfmodels_criteo_tsv")), "input_fn", kwargs_of("real_tfmodels_criteo_tsv", data))
    features, label = next(iter(loaded.dataset))
    assert label.shape == (256, 1)
    assert int(element_rows(tf, (features, label), True)) == 256 and int(element_rows(tf, label[0], False)) == 1


def test_tf1_input_fns_are_captured_behind_their_iterator_before_anything_runs(data, tmp_path):
    for name in ("real_aws_deepfm_ps_tf1", "real_deepctr_tfrecord_tf1"):
        loaded = load(str(path_of(name)), "input_fn", kwargs_of(name, data), upgrade_into=tmp_path / name)
        assert "make_one_shot_iterator" in loaded.tf1
        first = next(iter(loaded.dataset))
        assert isinstance(first, tuple) and len(first) == 2, "features and labels, as get_next() gave them"
    # the AWS sample keeps TF1 names TF 2 lacks (tf.parse_example, dataset.make_one_shot_iterator()): converted
    aws = load(str(path_of("real_aws_deepfm_ps_tf1")), "input_fn", kwargs_of("real_aws_deepfm_ps_tf1", data),
               upgrade_into=tmp_path / "again")
    assert aws.upgraded is not None and aws.upgraded.changes >= 4
    assert "tf.io.parse_example" in aws.upgraded.path.read_text()
    assert "tf.parse_example(" in path_of("real_aws_deepfm_ps_tf1").read_text(), "the user's file is unchanged"
    marker = tmp_path / "ran"
    (tmp_path / "computes.py").write_text(
        "import tensorflow as tf\n\n\ndef input_fn(files):\n"
        f"    def touch(x):\n        open({str(marker)!r}, 'w').close()\n        return x\n"
        "    dataset = tf.data.TextLineDataset(files).map(lambda x: tf.py_function(touch, [x], tf.string))\n"
        "    features = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()\n"
        "    return tf.strings.length(features)\n")
    # what it computes after get_next() is traced as a function of the element and mapped on the dataset, which
    # nothing ran to capture
    computed = load(str(tmp_path / "computes.py"), "input_fn", {"files": data["libsvm"]})
    assert not marker.exists(), "captured without running the pipeline"
    lines = [len(line) for line in Path(data["libsvm"][0]).read_bytes().splitlines()[:5]]
    assert [int(n) for n in computed.dataset.take(5)] == lines
    assert "after get_next()" in computed.tf1


def test_every_real_reader_replays_and_a_decoder_of_string_columns_takes_a_batch(diagnoses):
    """list_files is one stage a replay starts from as it is (real_longmao_csv_criteo and real_algoperf_criteo1tb
    were not replayed, so nothing was rewritten and their large prefetch was refilled before every window), and a
    decode_csv into a dict of string columns gives the same values on a batch (a batch's strings are objects,
    single ones stacked are bytes: they were compared as other values)."""
    assert {name: diagnoses[name].replay_note for name in REAL} == dict.fromkeys(REAL)
    csv = [r for r in diagnoses["real_longmao_csv_criteo"].rewrites if r.kind == "vectorize"]
    assert len(csv) == 1 and csv[0].automatic and csv[0].same_elements, csv


@pytest.mark.parametrize("name", REAL)
def test_every_rewrite_built_yields_the_originals_rows_and_so_does_its_export(name, data, diagnoses, tmp_path):
    """Each rewrite, exported as if it alone were kept (the user's file with it written into their calls, and the
    module that builds from that copy, imported as a user would), yields the user's function's rows; a rewrite
    that cannot be written into their file writes no module, and says why."""
    found = diagnoses[name]
    assert 0 <= found.bottleneck < len(found.stages) and found.costs
    assert all(c.prefix_rows_per_sec.mean > 0 for c in found.costs)
    reads: list = []
    written = []
    for index, rewrite in enumerate(found.rewrites):
        if not rewrite.automatic or rewrite.content is None or not rewrite.same_elements:
            continue
        as_kept = dataclasses.replace(rewrite, kept=True)
        alone = dataclasses.replace(found, rewrites=(as_kept,), combined=None)
        dataset = exported(alone, as_kept, tmp_path / f"r{index}", kwargs_of(name, data))
        if dataset is None:
            continue
        written.append(rewrite.kind)
        assert _compare(name, kwargs_of(name, data), _epoch(dataset), reads).same_elements, \
            f"{name}: exported {rewrite.name}"
        if rewrite.kind != "options":
            assert _ops(dataset) != _ops(_users_dataset(name, kwargs_of(name, data))), \
                f"{name}: the module exported for {rewrite.name} builds the original"
    if name in ("real_longmao_csv_criteo", "real_longmao_generator_criteo", "real_aws_deepfm_ps_tf1"):
        assert written, f"{name}: a rewrite of its own calls is exported"


def _ops(dataset) -> tuple:
    """Give the ops of a dataset's chain in order (a rewrite moves some), and of its functions (it changes some)."""
    import tensorflow as tf

    from pipebench.pipeline.walk import _chain, graph_ops

    graph = tf.compat.v1.GraphDef.FromString(dataset._as_serialized_graph().numpy())
    return tuple(graph_ops(dataset, _chain(dataset))), Counter([n.op for n in graph.node] + [
        n.op for f in graph.library.function for n in f.node_def])


def _other_values(kwargs: dict) -> list[dict]:
    """Give the kwargs with another value of each integer parameter and of the file list, one at a time."""
    changed = []
    for name, value in kwargs.items():
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, int):
            changed.append({**kwargs, name: value * 2 if value > 1 else 2})
        elif isinstance(value, list) and len(value) > 1:
            changed.append({**kwargs, name: value[::-1]})
    return changed


@pytest.mark.parametrize("name", REAL)
def test_the_export_takes_other_values_of_every_parameter_as_the_users_function_does(name, data, diagnoses,
                                                                                     tmp_path):
    """The module calls the user's own function (in the patched copy), so a batch size, an epoch count or a file
    list other than the ones diagnosed reach it as they reach theirs: the same rows as their function gives. The
    first rewrite of its calls that can be written is exported, measured or not (the tests' 0.05 s windows decide
    which ones are measured; this test compares the rows itself)."""
    found = diagnoses[name]
    kwargs = kwargs_of(name, data)
    others = _other_values(kwargs)
    candidates = [r for r in found.rewrites if r.automatic and r.steps and r.same_elements is not False
                  and r.kind != "options"]
    if not candidates or not others:
        pytest.skip(f"{name}: no rewrite of its calls was proposed" if not candidates else f"{name}: no parameter")
    for index, rewrite in enumerate(candidates):
        as_kept = dataclasses.replace(rewrite, kept=True)
        alone = dataclasses.replace(found, rewrites=(as_kept,), combined=None)
        mine = [exported(alone, as_kept, tmp_path / f"r{index}v{position}", other)
                for position, other in enumerate(others)]
        if all(dataset is None for dataset in mine):
            continue
        assert None not in mine, f"{name}: {rewrite.name} is written for some values of its parameters only"
        for other, dataset in zip(others, mine):
            assert _compare(name, other, _epoch(dataset), []).same_elements, \
                f"{name}: {rewrite.name} with {[k for k in other if other[k] != kwargs[k]]}"
        return
    pytest.skip(f"{name}: none of {', '.join(r.name for r in candidates)} is written into its calls")
