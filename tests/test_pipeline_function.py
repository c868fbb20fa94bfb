"""A user's function as an experiment's pipeline, read without TensorFlow: its definition, arguments, batch size,
placeholders and fingerprint (pipebench.pipeline.function), and what the experiment loader makes of an entry."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pipebench.config import load_experiment
from pipebench.errors import ConfigError, UsageError
from pipebench.pipeline.function import (FunctionPipeline, FunctionRef, check_kwargs, data_files, data_formats, expand,
                                         read_definition)

SOURCE = """\
import tensorflow as tf
from helpers import built_elsewhere


def input_fn(files, batch_size=512, *, shuffle=False, **options):
    return tf.data.TFRecordDataset(files).batch(batch_size)


def own_batch(files, size=256):
    return tf.data.TFRecordDataset(files).batch(size)


def fixed(files, /, batch_size=128):
    return tf.data.TFRecordDataset(files).batch(batch_size)


def needs_batch(files, batch_size):
    return tf.data.TFRecordDataset(files).batch(batch_size)


made = built_elsewhere()


@tf.function
def decorated(files):
    return files


try:
    from fast_io import guarded
except ImportError:
    def guarded(files):
        return files
"""


@pytest.fixture
def user_file(tmp_path) -> Path:
    path = tmp_path / "user_input.py"
    path.write_text(SOURCE)
    return path


def _definition(path: Path, name: str):
    return read_definition(FunctionRef(str(path), name))


def test_a_definition_is_read_from_the_source_without_running_it(user_file):
    found = _definition(user_file, "input_fn")
    assert found.line == 5 and found.signature == "input_fn(files, batch_size=512, *, shuffle=False, **options)"
    assert found.argument_problem({"files": "x", "anything": 1}) is None  # **options takes it
    assert "needs files" in _definition(user_file, "own_batch").argument_problem({})
    assert "takes no argument batch" in _definition(user_file, "own_batch").argument_problem({"files": 1, "batch": 2})
    assert "positional-only" in _definition(user_file, "fixed").argument_problem({"files": 1})
    # a batch_size without a default is the trial's to give, not missing
    assert _definition(user_file, "needs_batch").argument_problem({"files": 1}) is None
    # bound otherwise than by def (an import, an assignment): known once imported, so no static check
    assert _definition(user_file, "made").parameters is None
    assert _definition(user_file, "built_elsewhere").argument_problem({"x": 1}) is None
    # decorated or defined in a try / if: its signature is read once imported, in the worker
    assert _definition(user_file, "decorated").parameters is None and _definition(user_file, "guarded").parameters is None
    with pytest.raises(UsageError, match=r"no top-level function nope \(its functions: input_fn, own_batch, fixed, "
                                         r"needs_batch, decorated, guarded\)$"):
        _definition(user_file, "nope")


def test_the_batch_size_reaches_a_function_that_takes_it_and_is_not_fixed(user_file):
    assert _definition(user_file, "input_fn").batch_size({"files": "x"}) == (True, None)
    assert _definition(user_file, "input_fn").batch_size({"files": "x", "batch_size": 64}) == (False, 64)
    assert _definition(user_file, "own_batch").batch_size({"files": "x"}) == (False, None)
    assert _definition(user_file, "fixed").batch_size({"files": "x"}) == (True, None)  # batch_size is keyword
    user_file.write_text(SOURCE.replace("def fixed(files, /, batch_size=128)", "def fixed(files, batch_size=128, /)"))
    assert _definition(user_file, "fixed").batch_size({"files": "x"}) == (False, None)  # positional-only: not passed


def test_placeholders_become_the_runs_files_at_any_depth():
    kwargs = check_kwargs({"files": "${data.tfrecord}", "more": {"eval": ["${data.libsvm}", "other"]}, "n": 3}, "k")
    assert data_formats(kwargs) == ["tfrecord", "libsvm"]
    files = {"tfrecord": ["a.tfrecord", "b.tfrecord"], "libsvm": ["c.libsvm"]}
    assert expand(kwargs, files) == {"files": ["a.tfrecord", "b.tfrecord"], "more": {"eval": [["c.libsvm"], "other"]},
                                     "n": 3}
    for bad, says in (({"files": "${data.csv}"}, r"k\.files: '\$\{data\.csv\}' is no placeholder"),
                      ({"files": "${data.tfrecord}*"}, "is no placeholder"), ({"1x": 1}, r"k\.1x: not a Python"),
                      ({"rate": float("nan")}, "finite"), ({"f": {1: "a"}}, "a key must be text")):
        with pytest.raises(ConfigError, match=says):
            check_kwargs(bad, "k")


def test_the_fingerprint_holds_the_files_bytes_and_the_call():
    def pipeline(sha256: str, batch_size: int = 256) -> FunctionPipeline:
        return FunctionPipeline("mine", "/x/user.py", "input_fn", sha256, {"files": ["a"]}, batch_size, True,
                                {"tfrecord": ["a"]})

    one = pipeline("a" * 64)
    assert FunctionPipeline.from_dict(one.to_dict()) == one and data_files(one.to_dict()) == ["a"]
    assert one.fingerprint() == pipeline("a" * 64).fingerprint()
    assert one.fingerprint() != pipeline("b" * 64).fingerprint()  # the file changed: rows are told apart
    assert one.with_batch_size(1024).fingerprint() != one.fingerprint()
    assert one.with_batch_size(1024).call_kwargs == {"files": ["a"], "batch_size": 1024}


def test_the_experiment_resolves_a_relative_path_against_its_own_folder(tmp_path, user_file, monkeypatch):
    folder = tmp_path / "experiments"
    folder.mkdir()
    (folder / "fns").mkdir()
    (folder / "fns" / "user_input.py").write_text(SOURCE)
    (folder / "exp.yaml").write_text(yaml.safe_dump({"name": "x", "pipelines": {"functions": [
        {"function": "fns/user_input.py:input_fn", "kwargs": {"files": "${data.tfrecord}"}}]}}))
    monkeypatch.chdir(tmp_path)  # not the experiment's folder
    experiment = load_experiment(folder / "exp.yaml")
    (entry,) = experiment["pipelines"]["functions"]
    assert entry["function"] == f"{(folder / 'fns' / 'user_input.py').resolve()}:input_fn"
    assert entry["name"] == "input_fn" and len(entry["sha256"]) == 64
    assert "tfrecord" in experiment.read_formats()
    # the first function is the closing sentence's default reference: the user's own pipeline
    from pipebench.report.action import baseline_of

    assert baseline_of(experiment.resolved).name == "input_fn"
    # the stored document reads back, and without user_code no user file is read (a report of an old run)
    stored = tmp_path / "config.yaml"
    stored.write_text(experiment.to_yaml())
    assert load_experiment(stored).resolved == experiment.resolved
    (folder / "fns" / "user_input.py").write_text(SOURCE + "\n# edited\n")
    assert load_experiment(stored, user_code=False).resolved == experiment.resolved
    with pytest.raises(ConfigError, match=r"pipelines\.functions\[0\]\.sha256: .* changed since the experiment"):
        load_experiment(stored)


@pytest.mark.slow
def test_loading_an_experiment_with_functions_imports_no_tensorflow(tmp_path, user_file):
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump({"name": "x", "pipelines": {"functions": [
        {"function": "user_input.py:input_fn", "kwargs": {"files": "${data.tfrecord}"}}]}}))
    code = ("import sys\nfrom pipebench.config import load_experiment\nload_experiment('exp.yaml')\n"
            "assert 'tensorflow' not in sys.modules, 'TensorFlow imported'\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path)


# --- planning: the grid and the search treat a function like a preset (no TensorFlow: nothing is measured) ---------


def _planned(tmp_path: Path, user_file: Path, **extra):
    from pipebench.datasets import materialise

    doc = {"name": "x", "data": {"synth": {"rows": 300, "files": 1}, "formats": ["tfrecord"], "holdout_rows": 0,
                                 "cache_dir": str(tmp_path / "cache")},
           "pipelines": {"presets": ["aws-sample"], "functions": [
               {"function": f"{user_file}:input_fn", "kwargs": {"files": "${data.tfrecord}"}, "name": "mine"},
               {"function": f"{user_file}:own_batch", "kwargs": {"files": "${data.tfrecord}"}}]},
           "grid": {"batch_size": [128, 256]}, "modes": ["input"], "measurement": {"repeats": 1}, **extra}
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump(doc))
    experiment = load_experiment(tmp_path / "exp.yaml")
    return experiment, materialise(experiment, log=lambda _: None)


def test_the_grid_passes_its_batch_sizes_only_to_a_function_that_takes_them(tmp_path, user_file):
    from pipebench.search.grid import trials

    experiment, data = _planned(tmp_path, user_file)
    found = trials(experiment, data)
    by_pipeline = {}
    for trial in found:
        by_pipeline.setdefault(trial.label.pipeline, []).append(trial)
    assert sorted(t.batch_size for t in by_pipeline["mine"]) == [128, 256]
    assert [t.pipeline_spec["function"]["batch_size"] for t in by_pipeline["mine"]] == \
        [t.batch_size for t in by_pipeline["mine"]] and not any(t.knobs_not_applied for t in by_pipeline["mine"])
    (own,) = by_pipeline["own_batch"]  # measured once: the grid's batch sizes do not reach it
    assert own.batch_size is None and own.knobs_not_applied == (
        "batch_size: own_batch takes no batch_size parameter; it batches as it is written",)
    label = own.label
    assert (label.ordering, label.semantics, label.format, label.source_mode) == (
        "user function", "reference", "tfrecord", "file")
    assert own.pipeline_spec["function"]["kwargs"]["files"] == data.files["tfrecord"]
    assert len({t.configuration_id for t in found}) == len(found) == 5
    # editing the function's file changes what its rows are fingerprinted with: stale rows are told apart
    before = {t.label.pipeline: t.pipeline_fingerprint for t in found if t.batch_size in (None, 128)}
    user_file.write_text(SOURCE + "\n# edited\n")
    experiment, data = _planned(tmp_path, user_file)
    after = {t.label.pipeline: t.pipeline_fingerprint for t in trials(experiment, data) if t.batch_size in (None, 128)}
    assert after["aws-sample"] == before["aws-sample"] and after["mine"] != before["mine"]


def test_the_search_space_offers_functions_as_pipelines(tmp_path, user_file):
    from pipebench.measure.facts import MachineFacts
    from pipebench.search.plan import make_plan, reference_settings, worker_trial
    from report_fixtures import machine

    experiment, data = _planned(tmp_path, user_file, search={"driver": "optuna", "n_trials": 8, "confirm_top": 0})
    plan = make_plan(experiment, data, MachineFacts.from_json(machine(vcpus=2, physical_cores=2), "machine.json"))
    assert {"mine:tfrecord", "own_batch:tfrecord", "aws-sample:tfrecord"} <= set(plan.space["pipeline"].choices)
    params = {"pipeline": "mine:tfrecord", "batch_size": 1024, "intra_op_threads": 1, "inter_op_threads": 0,
              "stage.prefetch.buffer_size": 4}
    trial = worker_trial(plan, params)
    assert trial.batch_size == 1024 and trial.pipeline_spec["function"]["batch_size"] == 1024
    assert trial.threads.intra == 1
    assert trial.knobs_not_applied == ("stage.prefetch.buffer_size: input_fn is a user function: pipebench changes "
                                       "none of its stages",)
    own = worker_trial(plan, {**params, "pipeline": "own_batch:tfrecord"})
    assert own.batch_size is None and own.knobs_not_applied[0].startswith("batch_size: own_batch takes no")
    # the references race in the function's own format
    assert reference_settings(plan, "tfrecord", "file")["reference deck"]["pipeline"] == "aws-sample:tfrecord"
    # and a function reading files of its own (no format) races them in the deck's own format
    assert reference_settings(plan, None, "file")["TF defaults"]["pipeline"] == "aws-sample:tfrecord"
    named = _planned(tmp_path, user_file, search={"driver": "optuna", "n_trials": 8, "confirm_top": 0,
                                                  "space": {"pipeline": ["mine", "aws-sample"]}})
    plan = make_plan(*named, MachineFacts.from_json(machine(vcpus=2, physical_cores=2), "machine.json"))
    assert plan.space["pipeline"].choices == ("mine:tfrecord", "aws-sample:tfrecord")


def test_the_shipped_experiment_with_functions_loads():
    experiment = load_experiment(Path(__file__).parents[1] / "experiments" / "functions.yaml")
    mine, theirs = experiment["pipelines"]["functions"]
    assert (mine["name"], theirs["name"]) == ("my-tfrecord", "libsvm_input_fn")
    assert mine["function"].endswith("experiments/functions/ctr_input.py:tfrecord_input_fn")
    assert experiment.read_formats() >= {"tfrecord", "libsvm"}
