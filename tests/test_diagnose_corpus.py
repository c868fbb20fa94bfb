"""pipebench diagnose on the corpus of user-style pipelines (tests/diagnose_corpus): the stages it reads, the
rewrites whose preconditions hold, that every rewrite it can build yields the original's elements (or names
what it changes), and that the exported module yields them too. Never timing: rounds and windows are minimal,
and no assertion reads a gain."""
from __future__ import annotations

import dataclasses
import importlib.util
import json
from pathlib import Path

import pytest

from diagnose_fixtures import CORPUS, PIPELINES, exported, kwargs_of, make_data, short_calls
from lazy import lazy

from pipebench.diagnose.ceiling import MEASURE_ABOVE
from pipebench.diagnose.records import Diagnosis, Request
from pipebench.errors import UsageError
from pipebench.measure.intervals import Interval
from pipebench.typed import from_json

pytestmark = pytest.mark.tf214
contents = lazy("pipebench.diagnose.content")
load = lazy("pipebench.pipeline.user_code", "load")
walk = lazy("pipebench.pipeline.walk", "walk")


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, list[str]]:
    return make_data(tmp_path_factory.mktemp("diagnose-data"))


def _walked(name: str, data):
    loaded = load(str(CORPUS / f"{name}.py"), "input_fn", kwargs_of(name, data))
    return loaded, walk(loaded.dataset, loaded.sites, loaded.module)


#: What the walk must read of each pipeline: its stage kinds, then facts of some stages.
EXPECTED = {
    "lambdaji_libsvm": ["source", "map", "prefetch", "shuffle", "repeat", "batch"],
    "parse_single": ["source", "map", "batch"],
    "many_files": ["source", "interleave", "batch", "map"],
    "py_function": ["source", "map", "batch"],
    "augment": ["source", "batch", "map", "unbatch", "map", "batch"],
    "dict_features": ["source", "map", "batch", "prefetch"],
    "well_built": ["source", "batch", "map", "prefetch"],
    "cached": ["source", "interleave", "cache", "shuffle", "batch", "map", "repeat", "prefetch"],
}


@pytest.mark.parametrize("name", PIPELINES)
def test_the_walk_reads_the_stages_as_written(name, data):
    loaded, walked = _walked(name, data)
    stages = walked.stages
    assert [s.kind for s in stages] == EXPECTED[name]
    assert all(s.place is not None and s.place.file == str(CORPUS / f"{name}.py") for s in stages), \
        "every stage is placed at the line that wrote it"
    assert stages[-1].batched and not stages[0].batched


def test_the_walk_reads_parameters_functions_and_what_tensorflow_does(data):
    _, lambdaji = _walked("lambdaji_libsvm", data)
    decode = lambdaji.stages[1]
    assert decode.function.short == "decode_libsvm" and decode.function.importable is None  # nested in input_fn
    assert decode.parallelism == "10" and decode.stateful_ops == ()
    assert lambdaji.stages[2].params == {"buffer_size": 500000}
    assert lambdaji.stages[3].params["buffer_size"] == 256 and lambdaji.stages[4].params == {"count": 1}
    assert lambdaji.stages[5].params["batch_size"] == 256 and lambdaji.stages[5].drop_remainder is False
    assert lambdaji.stages[0].params["reader"] == "TextLineDataset" and len(lambdaji.stages[0].params["files"]) == 3

    _, single = _walked("parse_single", data)
    parse = single.stages[1]
    assert parse.function.importable == "parse_record" and parse.parallelism is None
    assert any("map_parallelization runs it in parallel" in t for t in parse.tf_does)
    assert any("map_and_batch_fusion" in t for t in parse.tf_does)
    assert any("inject_prefetch" in t for t in single.stages[2].tf_does)

    _, py = _walked("py_function", data)
    assert "EagerPyFunc" in py.stages[1].stateful_ops
    assert any("leaves it sequential" in t for t in py.stages[1].tf_does)

    _, augment = _walked("augment", data)
    jitter = augment.stages[4]
    assert jitter.function.short == "jitter" and "RandomUniform" in jitter.stateful_ops

    _, files = _walked("many_files", data)
    assert files.stages[1].function.importable == "tf.data.TFRecordDataset" and files.stages[1].reads == "TFRecordDataset"
    assert files.stages[1].parallelism is None and files.stages[1].params["block_length"] == 16

    _, well = _walked("well_built", data)
    assert well.stages[0].params["num_parallel_reads"] == "AUTOTUNE" and well.stages[1].drop_remainder is True
    assert well.stages[2].parallelism == "AUTOTUNE" and not any("inject_prefetch" in t for t in well.stages[3].tf_does)


def test_a_tf1_function_returning_tensors_is_captured_behind_its_iterator(data):
    loaded = load(str(CORPUS / "tf1_tensors.py"), "input_fn", kwargs_of("tf1_tensors", data))
    assert loaded.tf1 == "tf.compat.v1.data.make_one_shot_iterator"
    assert next(iter(loaded.dataset)).shape == (256,)


def test_tensors_not_from_a_tf1_iterator_are_refused_in_one_line(data, tmp_path):
    (tmp_path / "eager.py").write_text("import tensorflow as tf\n\n\ndef input_fn(files):\n"
                                       "    return next(iter(tf.data.TextLineDataset(files).batch(2)))\n")
    with pytest.raises(UsageError, match=r"eager\.py:4: input_fn returned tensors .*return the dataset"):
        load(str(tmp_path / "eager.py"), "input_fn", {"files": data["libsvm"]})


def test_vectorize_finds_a_batched_equivalent_only_where_one_gives_the_same_values(data):
    from pipebench.diagnose.vectorize import batched_equivalent

    assert batched_equivalent(_walked("lambdaji_libsvm", data)[1], 1).mechanism == "libsvm"
    assert batched_equivalent(_walked("parse_single", data)[1], 1).mechanism == "parse_example"
    assert batched_equivalent(_walked("dict_features", data)[1], 1).mechanism == "parse_example"
    # a function that reads the wrong token on a batch is refused, not vectorised with other values
    assert "other values" in batched_equivalent(_walked("lambdaji_libsvm", data)[1], 1).why \
        or batched_equivalent(_walked("lambdaji_libsvm", data)[1], 1).mechanism == "libsvm"


def _diagnose(name: str, data, scratch: Path, train: bool = False) -> tuple[Diagnosis, list[str]]:
    from pipebench.diagnose.worker import Diagnoser

    said: list[str] = []
    request = Request(str(CORPUS / f"{name}.py"), "input_fn", kwargs_of(name, data), None, rounds=2,
                      window_sec=0.05, settle_sec=0.0, warmup_sec=0.5, content_cap_rows=EPOCH_CAP,
                      scratch=str(scratch), progress_file="", train=train, profile=False)
    found = Diagnoser(request, said.append).run()
    return from_json(Diagnosis, json.loads(json.dumps(found.to_json(), allow_nan=False)), "diagnosis"), said


@pytest.fixture(scope="module")
def diagnoses(data, tmp_path_factory) -> dict[str, Diagnosis]:
    with short_calls():
        return {name: _diagnose(name, data, tmp_path_factory.mktemp(name), train=name == "well_built")[0]
                for name in PIPELINES}


#: How many examples a test reads of a pipeline that repeats forever (the `cached` one): three whole epochs of its
#: 3,000 rows and part of a fourth, enough to see a rewrite change what an epoch holds or how epochs follow.
EPOCH_CAP = 10_000


def _epoch(dataset):
    return contents.read_epoch(dataset, True, EPOCH_CAP)


def _module_epoch(found: Diagnosis, rewrite, folder: Path, data, name: str):
    """Give one epoch of what the export of `rewrite` builds (the module imported as a user would), or None when no
    module is written (said why)."""
    dataset = exported(found, rewrite, folder, kwargs_of(name, data))
    return None if dataset is None else _epoch(dataset)


#: The rewrites each pipeline's preconditions admit (built and measured), by kind.
PROPOSED = {
    "lambdaji_libsvm": {"vectorize", "parallel_reads", "options"},
    "parse_single": {"vectorize", "parallel_reads"},
    "many_files": {"parallel_interleave"},
    "py_function": {"parallel_map", "parallel_reads"},
    "augment": {"parallel_map", "parallel_reads"},
    "dict_features": {"vectorize", "parallel_reads", "options"},
    "well_built": {"options"},
    "cached": {"parallel_interleave", "options"},
}


@pytest.mark.parametrize("name", PIPELINES)
def test_every_rewrite_built_yields_the_same_elements_and_the_export_does_too(name, data, diagnoses, tmp_path):
    found = diagnoses[name]
    assert 0 <= found.bottleneck < len(found.stages) and found.costs
    automatic = {r.kind for r in found.rewrites if r.automatic}
    assert PROPOSED[name] <= automatic, f"{name}: proposed {automatic}"
    assert not {"parallel_map"} & automatic or name in ("py_function", "augment"), "no parallel map for stateless maps"
    loaded = load(str(CORPUS / f"{name}.py"), "input_fn", kwargs_of(name, data))
    original, again = _epoch(loaded.dataset), _epoch(loaded.dataset)
    for index, rewrite in enumerate(found.rewrites):
        if not rewrite.automatic:
            assert rewrite.gain is None and not rewrite.kept
            continue
        if rewrite.kind in ("parallel_reads",):
            assert rewrite.semantics and rewrite.semantics.startswith("order")
        if rewrite.kind == "parallel_map" and name == "augment":
            assert "random draws" in rewrite.semantics
        unmeasured = rewrite.ceiling is not None and rewrite.ceiling <= MEASURE_ABOVE
        assert unmeasured == rewrite.verdict.startswith("not measured"), f"{rewrite.name}: {rewrite.verdict}"
        if unmeasured:  # named with its ceiling; built here all the same
            assert rewrite.gain is None and rewrite.content is None and f"~{rewrite.ceiling:.2f}×" in rewrite.verdict
        else:
            assert rewrite.content is not None, f"{rewrite.name}: its epoch was read"
            assert rewrite.same_elements, f"{rewrite.name}: {rewrite.content.semantics}"
        # the export of this rewrite, as if it alone were kept, yields the original's elements
        as_kept = dataclasses.replace(rewrite, kept=True, gain=rewrite.gain or Interval(1.0, 1.0, 1.0, 2))
        alone = dataclasses.replace(found, rewrites=(as_kept,), combined=None)
        mine = _module_epoch(alone, as_kept, tmp_path / f"{rewrite.kind}{index}", data, name)
        if mine is not None:
            assert contents.compare(original, again, mine).same_elements, f"{name}: exported {rewrite.name}"
        assert mine is not None or rewrite.kind != "vectorize", f"{name}: {rewrite.name} is exported"
    best = _module_epoch(found, None, tmp_path / "best", data, name)
    assert best is None or contents.compare(original, again, best).same_elements


def test_named_rewrites_carry_their_measured_share(diagnoses):
    py = {r.kind: r for r in diagnoses["py_function"].rewrites}
    assert not py["py_function"].automatic and py["py_function"].cost_share is not None
    assert "GIL" in py["py_function"].verdict
    # vectorizing the py_function leaves only the reads, which pass far more rows than it does: a high ceiling
    assert py["vectorize"].ceiling is not None and py["vectorize"].ceiling > 10 * MEASURE_ABOVE
    lambdaji = {r.kind: r for r in diagnoses["lambdaji_libsvm"].rewrites}
    assert lambdaji["cache"].automatic is False and "one pass" in lambdaji["cache"].verdict  # repeat(1)
    assert diagnoses["augment"].rewrites and all(r.kind != "cache" or not r.automatic or r.stage < 4
                                                 for r in diagnoses["augment"].rewrites), "no cache above a random op"
    assert not [r for r in diagnoses["cached"].rewrites if r.kind == "cache"], "no second cache beside its own"


def test_the_content_check_reads_a_sample_of_the_files_spread_across_them(diagnoses):
    assert diagnoses["lambdaji_libsvm"].content_scope == ("a sample of 3 of 3 file(s) (filenames): 3,000 rows from "
                                                          "the start, middle and end of each")
    assert diagnoses["many_files"].content_scope.startswith("a sample of 4 of 12 file(s) (files): 1,000 rows")


def test_a_huge_prefetch_is_named_with_what_it_holds_and_measured_capped(diagnoses):
    (buffer,) = [b for b in diagnoses["lambdaji_libsvm"].buffers if b.kind == "prefetch"]
    assert (buffer.stage, buffer.elements, buffer.rows) == (2, 500_000, 500_000)
    assert buffer.mib is not None and buffer.mib > 10 and buffer.fill_sec is not None and buffer.fill_sec > 0
    assert "measured as prefetch(1,024)" in buffer.measured_as
    assert diagnoses["lambdaji_libsvm"].measured_as[0].startswith("stage 2: measured as prefetch")


def test_the_diagnosis_round_trips_as_json_with_the_documented_keys(diagnoses):
    found = diagnoses["lambdaji_libsvm"].to_json()
    assert isinstance(found["stages"], list) and isinstance(found["bottleneck"], int)
    for rewrite in found["rewrites"]:
        assert {"name", "kept", "gain", "same_elements", "semantics"} <= set(rewrite)
        if rewrite["gain"] is not None:
            assert set(rewrite["gain"]) == {"mean", "low", "high", "n"}


def test_a_busy_machine_is_said_first_with_its_share_and_a_quiet_one_is_said_too(diagnoses):
    from pipebench.diagnose.records import Machine
    from pipebench.diagnose.report import summary_lines, to_markdown

    found = diagnoses["lambdaji_libsvm"]
    assert set(found.to_json()["machine"]) == {"others_cpu_pct", "steal_pct", "threshold_pct", "busy"}
    busy = dataclasses.replace(found, machine=Machine(80.0, 30.0, 25.0, True))
    assert summary_lines(busy)[0].startswith("BUSY: other processes used 80% of a vCPU while it measured (30% of it "
                                             "the hypervisor's steal")
    assert "**The machine was busy**" in to_markdown(busy) and "diagnose again on a quiet machine" in to_markdown(busy)
    quiet = dataclasses.replace(found, machine=Machine(3.0, 0.0, 25.0, False))
    assert not summary_lines(quiet)[0].startswith("BUSY")
    assert "The machine was quiet: other processes used 3% of a vCPU while it measured (busy past 25%)." \
        in to_markdown(quiet)


def test_a_keras_model_given_with_model_trains_on_the_original_pipeline(data, tmp_path):
    from pipebench.diagnose.worker import Diagnoser

    request = Request(str(CORPUS / "well_built.py"), "input_fn", kwargs_of("well_built", data),
                      f"{CORPUS / 'keras_model.py'}:build_model", rounds=2, window_sec=0.05, settle_sec=0.0,
                      warmup_sec=0.5, content_cap_rows=100_000, scratch=str(tmp_path), progress_file="",
                      profile=False)
    found = Diagnoser(request, lambda text: None).run()
    assert found.train is not None and "keras_model.py:build_model" in found.train.model
    original = found.train.terms[0]
    assert original.pipeline == "original" and original.train_rows_per_sec.mean > 0
    assert original.slowdown.n == 2


def test_a_cache_after_an_interleave_that_batches_is_filled_and_counted_in_rows(tmp_path):
    """The cache to fill is found by its index among all the stages (the interleave's own stages come right after
    it), and an epoch of it is counted in rows: 4 files of 100 rows, batched by 10 inside the interleave."""
    import tensorflow as tf

    from pipebench.diagnose.worker import Diagnoser

    dataset = tf.data.Dataset.range(4).interleave(
        lambda i: tf.data.Dataset.range(100).map(lambda x: x + i).batch(10), cycle_length=2).cache()
    request = Request(str(CORPUS / "well_built.py"), "input_fn", {}, None, rounds=2, window_sec=0.05,
                      settle_sec=0.0, warmup_sec=0.5, content_cap_rows=1_000, scratch=str(tmp_path), progress_file="",
                      profile=False)
    diagnoser = Diagnoser(request, lambda text: None)
    diagnoser.walked, diagnoser.notes = walk(dataset, {}, None), {}
    assert [s.kind for s in diagnoser.walked.stages][-1] == "cache" and len(diagnoser.walked.stages) > 3
    diagnoser._fill_own_cache()
    assert diagnoser.cache_rows == 400 and diagnoser.notes == {}


def test_what_a_row_holds_counts_a_sparse_feature_by_its_components():
    """A VarLenFeature's SparseTensor (TF1 input_fns parse them) is counted by its indices, values and dense shape,
    not read as a dense array (it has none: the diagnosis of such a pipeline once failed on it)."""
    import tensorflow as tf

    from pipebench.diagnose.buffers import bytes_per_row

    dataset = tf.data.Dataset.range(8).map(lambda i: ({"ids": tf.sparse.SparseTensor([[0]], [i], [5]),
                                                       "x": tf.fill([3], 1.0)}, tf.constant(1.0)))
    assert bytes_per_row(tf, dataset, False) == 3 * 8 + 3 * 4 + 4


def test_the_module_builds_the_rewrite_from_a_patched_copy_and_takes_other_values(diagnoses, data, tmp_path):
    """The export is the user's file with the rewrite written into its calls, beside a module that calls it: it
    builds the rewrite however the stage's function is defined (lambdaji's decoder is nested in input_fn: the module
    called the user's own function and built the original, issue 46), and takes other values of every parameter as
    the user's function does (the batch size here)."""
    found = diagnoses["lambdaji_libsvm"]
    vectorize = [r for r in found.rewrites if r.kind == "vectorize"][0]
    as_kept = dataclasses.replace(vectorize, kept=True, gain=vectorize.gain or Interval(2.0, 1.5, 2.5, 3))
    alone = dataclasses.replace(found, rewrites=(as_kept,), combined=None)
    user_file = CORPUS / "lambdaji_libsvm.py"
    before = user_file.read_text()
    kwargs = {**kwargs_of("lambdaji_libsvm", data), "batch_size": 100}
    mine = exported(alone, as_kept, tmp_path / "out", kwargs)
    patched = (tmp_path / "out" / "patched_lambdaji_libsvm.py").read_text()
    assert patched != before and user_file.read_text() == before, "the user's own file is unchanged"
    theirs = load(str(user_file), "input_fn", kwargs).dataset
    assert contents.compare(_epoch(theirs), _epoch(theirs), _epoch(mine)).same_elements
    assert _ops(mine) != _ops(theirs), "the module builds the rewrite, not the original"


def _ops(dataset) -> list[str]:
    import tensorflow as tf

    graph = tf.compat.v1.GraphDef.FromString(dataset._as_serialized_graph().numpy())
    return sorted([n.op for n in graph.node] + [n.op for f in graph.library.function for n in f.node_def])


def test_the_tf_profiler_answers_beside_pipebench_on_the_same_pipeline(data):
    """The test set-up installs the profiler's tools: xprof with the latest TensorFlow (its input pipeline
    analysis), tensorboard-plugin-profile 2.19 with TF 2.14 (its tf.data bottleneck analysis)."""
    from pipebench.diagnose.profiler import profile

    loaded, walked = _walked("lambdaji_libsvm", data)
    found = profile(loaded.dataset, walked.stages, 1)
    assert found.available, found.answer
    assert found.iterator.startswith("Iterator::") and found.stage is not None
    assert found.agrees is (found.stage == 1)
    assert "tf_data_bottleneck_analysis" in found.answer or "input_pipeline_analyzer" in found.answer
    if importlib.util.find_spec("tensorboard_plugin_profile") is not None:  # 2.19 (TF 2.14's) still has the tool
        assert found.answer.startswith("tensorboard_plugin_profile's tf_data_bottleneck_analysis: Iterator::")


def test_a_second_worker_process_confirms_or_drops_a_small_gain_and_gives_the_rate_over_both(diagnoses, data,
                                                                                              tmp_path):
    """A process has its own speed (pipebench.diagnose.second): a gain kept in the first worker is measured again,
    beside the original, in a second one that loads the function anew; it stays kept only if the second
    agrees, with the second's gain. The whole pipeline's rate is over both processes. No assertion reads a gain:
    the rewrite is made to look kept, and either verdict is the second process's own."""
    from pipebench.diagnose.second import SMALLEST_OFFERED, to_confirm
    from pipebench.diagnose.worker import Diagnoser

    name, first, measured = next((name, found, r) for name, found in diagnoses.items() for r in found.rewrites
                                 if r.automatic and r.gain is not None and r.steps and r.kind != "cache")
    small = dataclasses.replace(measured, kept=True, gain=Interval(1.2, 1.05, 1.4, 5), verdict="kept for now")
    first = dataclasses.replace(first, rewrites=tuple(small if r is measured else r for r in first.rewrites),
                                combined=None)
    path = tmp_path / "first.json"
    path.write_text(json.dumps(first.to_json(), allow_nan=False))
    said: list[str] = []
    request = Request(str(CORPUS / f"{name}.py"), "input_fn", kwargs_of(name, data), None, rounds=2,
                      window_sec=0.05, settle_sec=0.0, warmup_sec=0.5, content_cap_rows=EPOCH_CAP,
                      scratch=str(tmp_path / "scratch"), progress_file="", train=False, profile=False,
                      first=str(path))
    with short_calls():
        found = Diagnoser(request, said.append).run()
    again = next(r for r in found.rewrites if r.name == small.name)
    assert "second worker process" in again.verdict or "in a second" in again.verdict, again.verdict
    assert again.gain.n >= 2 and again.gain.n != small.gain.n, "its gain is the second process's own, measured there"
    assert again.kept == (again.gain.decided and again.gain.low > 1.0 and again.gain.mean >= SMALLEST_OFFERED)
    confirmed = {r.name for r in to_confirm(first)}
    assert small.name in confirmed
    assert [r for r in found.rewrites if r.name not in confirmed] == [r for r in first.rewrites
                                                                       if r.name not in confirmed], \
        "what was not kept (or is a cache) is the first process's"
    first_rate, second_rate = found.process_rows_per_sec
    assert first_rate == first.rows_per_sec and second_rate.n >= 2
    assert min(first_rate.low, second_rate.low) == found.rows_per_sec.low
    assert min(first_rate.mean, second_rate.mean) <= found.rows_per_sec.mean <= max(first_rate.mean, second_rate.mean)
    assert any(f"and {len(confirmed)} rewrite(s) to confirm" in line for line in said), \
        "every kept rewrite but a cache is confirmed there"
    assert found.self_check is not None and found.self_check.plain_rows_per_sec.mean > 0, \
        "a plain loop over the function is timed beside the whole pipeline there"


def test_a_function_that_builds_another_pipeline_when_called_again_is_refused_in_one_line(diagnoses, data, tmp_path):
    from pipebench.diagnose.worker import Diagnoser

    path = tmp_path / "first.json"
    path.write_text(json.dumps(diagnoses["well_built"].to_json(), allow_nan=False))
    request = Request(str(CORPUS / "parse_single.py"), "input_fn", kwargs_of("parse_single", data), None, rounds=2,
                      window_sec=0.05, settle_sec=0.0, warmup_sec=0.5, content_cap_rows=EPOCH_CAP,
                      scratch=str(tmp_path / "scratch"), progress_file="", train=False, profile=False,
                      first=str(path))
    with pytest.raises(UsageError, match=r"^parse_single\.py:input_fn: called again with the same arguments, it "
                                         r"built another pipeline"):
        Diagnoser(request, lambda text: None).run()


def test_a_combination_whose_part_the_second_process_drops_is_not_kept(diagnoses):
    from pipebench.diagnose.records import Machine
    from pipebench.diagnose.second import rate_over, settle, to_confirm

    first = diagnoses["lambdaji_libsvm"]
    a, b = (dataclasses.replace(r, kept=True, gain=Interval(g, g - 0.1, g + 0.1, 5))
            for r, g in zip([r for r in first.rewrites if r.automatic][:2], (1.2, 3.0)))
    combined = dataclasses.replace(a, name="combined: both", kind="combined", parts=(a.name, b.name))
    first = dataclasses.replace(first, rewrites=(a, b), combined=combined)
    assert to_confirm(first) == [a, b, combined], "every kept rewrite but a cache's, and the combination"
    assert to_confirm(dataclasses.replace(first, rewrites=(a, dataclasses.replace(b, kind="cache")))) == [a], \
        "a cache, and a combination holding one, are confirmed in the first process (measuring fills them)"
    rate = Interval(first.rows_per_sec.mean * 2, None, None, 1)
    found = settle(first, {a.name: Interval(1.01, 0.9, 1.1, 5)}, rate, None, "not asked", 3.0,
                   Machine(40.0, 0.0, 25.0, True))
    assert not found.rewrites[0].kept and "not confirmed in a second" in found.rewrites[0].verdict
    assert found.rewrites[1] == b, "a large gain is the first process's"
    assert not found.combined.kept and a.name in found.combined.verdict
    assert found.machine.busy and found.seconds == first.seconds + 3.0
    assert found.rows_per_sec == rate_over((first.rows_per_sec, rate)) and found.rows_per_sec.low is None
    kept = settle(first, {a.name: Interval(1.3, 1.1, 1.5, 5)}, rate, None, None, 1.0, first.machine)
    assert kept.rewrites[0].kept and kept.rewrites[0].gain.mean == 1.3 and kept.combined.kept
    tiny = settle(first, {a.name: Interval(1.06, 1.02, 1.10, 5)}, rate, None, None, 1.0, first.machine)
    assert not tiny.rewrites[0].kept and "under 1.10×, inside the spread between processes" in tiny.rewrites[0].verdict
    both = settle(first, {a.name: Interval(1.3, 1.1, 1.5, 5), combined.name: Interval(1.0, 0.9, 1.1, 5)}, rate, None,
                  None, 1.0, first.machine)
    assert not both.combined.kept and "not confirmed in a second" in both.combined.verdict
