"""Experiment files: defaults, overrides, and one-line errors that name the YAML path."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pipebench.config import SCHEMA, Field, load_experiment, parse_experiment
from pipebench.errors import ConfigError
from pipebench.results import CONFIG_FILE
from pipebench.values import ANY

ROOT = Path(__file__).resolve().parents[1]


def test_shipped_experiment_and_its_quick_variant_load():
    full = load_experiment(ROOT / "experiments" / "deepfm.yaml")
    quick = load_experiment(ROOT / "experiments" / "deepfm.yaml", quick=True)
    assert full.name == quick.name == "deepfm"
    assert full["grid"]["batch_size"] == [1024, 4096] and quick["grid"]["batch_size"] == [1024]
    assert full["pipelines"]["orderings"]["stages"][0] == {"cache": "memory"} and quick["pipelines"]["orderings"] is None
    assert quick["data"]["synth"]["rows"] == 100_000 and quick["data"]["synth"]["files"] == 4
    assert full.fingerprint() != quick.fingerprint()


def test_defaults_fill_everything_and_scalars_become_lists():
    exp = parse_experiment({"name": "x", "grid": {"batch_size": 256, "env": {"OMP_NUM_THREADS": 2}}})
    assert exp["grid"]["batch_size"] == [256]
    assert exp["grid"]["env"]["OMP_NUM_THREADS"] == ["2"]
    assert exp["model"]["embedding_size"] == 32 and exp["model"]["deep_layers"] == [256, 128, 64]
    assert exp["modes"] == ["input", "train", "synthetic"]


def test_set_overrides_parse_yaml_values():
    exp = parse_experiment({"name": "x"}, overrides=("grid.batch_size=[512, 2048]", "measurement.windows=3",
                                                     "grid.env.KMP_AFFINITY=[disabled]"))
    assert exp["grid"]["batch_size"] == [512, 2048] and exp["measurement"]["windows"] == 3
    assert exp["grid"]["env"]["KMP_AFFINITY"] == ["disabled"]


@pytest.mark.parametrize("doc,message", [
    ({"name": "x", "grid": {"batch_sise": [1]}}, "grid.batch_sise: unknown key"),
    ({"name": "x", "modle": {}}, "modle: unknown key"),
    ({"name": "x", "grid": {"batch_size": ["big"]}}, "grid.batch_size[0]: must be int, not str 'big'"),
    ({"name": "x", "measurement": {"windows": 0}}, "measurement.windows: must be at least 1"),
    ({"name": "x", "modes": ["train", "fast"]}, "modes[1]: must be one of input, train, synthetic"),
    ({"name": "x", "model": {"dropout": "half"}}, "model.dropout: must be float"),
    ({"grid": {}}, "name: required"),
    ({"name": "x", "budget": {"memory_cap_mb": True}}, "budget.memory_cap_mb: must be int, not bool"),
])
def test_bad_documents_name_the_path(doc, message):
    with pytest.raises(ConfigError) as err:
        parse_experiment(doc, "exp.yaml")
    assert str(err.value).startswith("exp.yaml: ") and message in str(err.value)
    assert "\n" not in str(err.value)


def test_cli_reports_config_errors_on_one_line(tmp_path, cli):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ngrid:\n  batch_size: [1024]\n  threads: 4\n")
    code, _, err = cli("run", bad)
    assert code == 1
    assert err == f"pipebench: error: {bad}: grid.threads: unknown key (expected one of batch_size, " \
                  "intra_op_threads, inter_op_threads, env)\n"
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: x\ngrid: [1,\n")
    code, _, err = cli("run", broken)
    assert code == 1 and err.startswith(f"pipebench: error: {broken}:") and "not valid YAML" in err


# ---- issue 12: numbers ------------------------------------------------------------------------------------

def _numeric_fields(schema: dict = SCHEMA, prefix: str = "") -> list[tuple[str, Field]]:
    found = []
    for key, sub in schema.items():
        path = f"{prefix}{key}"
        if isinstance(sub, dict):
            found += _numeric_fields(sub, f"{path}.")
        elif sub.kind in (int, float) or (isinstance(sub.kind, tuple) and sub.kind[1] in (int, float)):
            found.append((path, sub))
    return found


def _doc_with(path: str, value) -> dict:
    doc: dict = {"name": "x"}
    node = doc
    *parents, key = path.split(".")
    for name in parents:
        node = node.setdefault(name, {})
    node[key] = value
    return doc


def test_every_numeric_key_states_a_range():
    fields = _numeric_fields()
    assert len(fields) > 30
    assert [path for path, field in fields if field.allowed == ANY] == []


@pytest.mark.parametrize("path", [path for path, _ in _numeric_fields()])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_nan_and_infinity_are_refused_for_every_numeric_key(path, value):
    """NaN passed every `value < minimum` check: `window_sec: .nan` hung a trial, `sample_hz: .inf` spun the sampler."""
    with pytest.raises(ConfigError) as err:
        parse_experiment(_doc_with(path, value), "exp.yaml")
    message = str(err.value)
    assert message.startswith(f"exp.yaml: {path}") and (f"not {value}" in message or f"float {value}" in message)


@pytest.mark.parametrize("path, value, message", [
    ("model.dropout", 1.0, "model.dropout: must be in [0, 1), not 1.0"),
    ("model.dropout", -0.1, "model.dropout: must be in [0, 1), not -0.1"),
    ("model.learning_rate", 0, "model.learning_rate: must be above 0, not 0"),
    ("model.learning_rate", -1e-3, "model.learning_rate: must be above 0, not -0.001"),
    ("budget.max_failure_rate", 1.5, "budget.max_failure_rate: must be in [0, 1], not 1.5"),
    ("budget.max_minutes", 0, "budget.max_minutes: must be above 0, not 0"),
    ("data.synth.positive_rate", 0, "data.synth.positive_rate: must be in (0, 1), not 0"),
    ("data.synth.feature_size", 2**31 + 1, "data.synth.feature_size: must be in [1, 2147483648], not 2147483649"),
    ("measurement.sample_hz", 1000, "measurement.sample_hz: must be in [0.5, 100], not 1000"),
    ("measurement.window_sec", 0.01, "measurement.window_sec: must be at least 0.05, not 0.01"),
    ("search.seed", 2**32, "search.seed: must be in [0, 4294967295], not 4294967296"),
    ("grid.batch_size", [64, 0], "grid.batch_size[1]: must be at least 1, not 0"),
    ("data.synth.rows", 10**20, "data.synth.rows: must fit in 64 bits, not 100000000000000000000"),
    ("budget.memory_cap_mb", 1.5, "budget.memory_cap_mb: must be int, not float 1.5"),
])
def test_numbers_outside_their_range_are_refused_and_the_range_is_stated(path, value, message):
    with pytest.raises(ConfigError) as err:
        parse_experiment(_doc_with(path, value), "exp.yaml")
    assert str(err.value) == f"exp.yaml: {message}"


@pytest.mark.parametrize("path, value", [("model.dropout", 0), ("budget.max_failure_rate", 0),
                                         ("budget.max_failure_rate", 1), ("data.synth.positive_rate", 0.5),
                                         ("measurement.sample_hz", 100), ("search.seed", 2**32 - 1)])
def test_range_ends_that_belong_to_the_range_are_accepted(path, value):
    exp = parse_experiment(_doc_with(path, value))
    parent, _, key = path.rpartition(".")
    node = exp.resolved
    for name in parent.split("."):
        node = node[name]
    assert node[key] == value


# ---- issue 12: YAML that is no experiment -------------------------------------------------------------------

@pytest.mark.parametrize("text, line, key", [
    ("name: x\nname: y\n", 2, "name"),
    ("name: x\nmeasurement:\n  windows: 3\n  window_sec: 1\n  windows: 4\n", 5, "windows"),
    ("name: x\npipelines:\n  orderings:\n    source: {format: libsvm, format: tfrecord}\n", 4, "format"),
    ("name: x\nquick:\n  - {a: 1, a: 2}\n", 3, "a"),
])
def test_duplicate_keys_are_refused_at_any_depth_with_file_and_line(tmp_path, text, line, key):
    path = tmp_path / "exp.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_experiment(path)
    assert str(err.value) == f"{path}:{line}: duplicate key '{key}'"


def test_merge_keys_may_still_be_overridden(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text("name: x\nmeasurement:\n  <<: {windows: 3, window_sec: 1}\n  windows: 4\n")
    assert load_experiment(path)["measurement"]["windows"] == 4


def test_python_object_tags_stay_refused(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text(f"name: !!python/object/apply:os.mkdir [{str(tmp_path / 'made')!r}]\n")
    with pytest.raises(ConfigError, match=r":1: not valid YAML: could not determine a constructor for the tag"):
        load_experiment(path)
    assert not (tmp_path / "made").exists()


@pytest.mark.parametrize("data, message", [
    (b"name: x\nresults: \xff\n", ":2: not UTF-8 text (byte 0xff)"),
    (b"name: x\n\x00", ":2: holds a NUL byte: not a text file"),
    (b"name: x\nresults: a\x1bb\n", ":2: not valid YAML: character U+001B is not allowed"),
    (b"", ": empty: an experiment needs at least `name: ...`"),
    (b"# only a comment\n", ": empty: an experiment needs at least `name: ...`"),
    (b"- name: x\n", ": the experiment must be a mapping, not list"),
    (b"42\n", ": the experiment must be a mapping, not int"),
    (b"name: x\n---\nname: y\n", ":2: not valid YAML: expected a single document in the stream, but found another "
                                  "document"),
])
def test_binary_empty_and_non_mapping_files_are_one_line_errors(tmp_path, data, message):
    path = tmp_path / "exp.yaml"
    path.write_bytes(data)
    with pytest.raises(ConfigError) as err:
        load_experiment(path)
    assert str(err.value) == f"{path}{message}"


# ---- issue 12: --set gets the same checks and names itself --------------------------------------------------

@pytest.mark.parametrize("assignment, message", [
    ("measurement.window_sec=.nan", "--set measurement.window_sec: must be a finite number (at least 0.05), not nan"),
    ("model.dropout=1.5", "--set model.dropout: must be in [0, 1), not 1.5"),
    ("grid.batch_size=[64, -1]", "--set grid.batch_size: grid.batch_size[1]: must be at least 1, not -1"),
    ("grid.threads=4", "--set grid.threads: unknown key (expected one of batch_size, intra_op_threads, "
                       "inter_op_threads, env)"),
    ("grid={batch_size: [1], batch_size: [2]}", "--set grid: duplicate key 'batch_size'"),
    ("model.dropout.rate=0.1", "--set model.dropout.rate: model.dropout: must be float, not dict {'rate': 0.1}"),
    ("name.first=x", "--set name.first: name is a str, not a mapping"),
    ("measurement.windows", "--set 'measurement.windows': expected KEY=VALUE, e.g. grid.batch_size=[512,1024]"),
    ("=3", "--set '=3': expected KEY=VALUE, e.g. grid.batch_size=[512,1024]"),
    ("grid..batch_size=3", "--set 'grid..batch_size': an empty name in the key"),
    ("name=../..", "--set name: must be a plain folder name (1 to 100 letters, digits, '.', '_' or '-', the first a "
                   "letter or digit), not '../..'"),
    ("search.space={batch_size: [.inf]}", "--set search.space: search.space.batch_size[0]: must be a finite number, "
                                          "not inf"),
])
def test_set_values_get_the_same_checks_and_the_error_names_the_set_key(assignment, message):
    with pytest.raises(ConfigError) as err:
        parse_experiment({"name": "x"}, "exp.yaml", overrides=(assignment,))
    assert str(err.value) == message


def test_a_file_error_is_blamed_on_the_file_not_on_an_unrelated_set():
    with pytest.raises(ConfigError) as err:
        parse_experiment({"name": "x", "model": {"dropout": 2.0}}, "exp.yaml", overrides=("model.l2=0.1",))
    assert str(err.value) == "exp.yaml: model.dropout: must be in [0, 1), not 2.0"
    fixed = parse_experiment({"name": "x", "model": {"dropout": 2.0}}, "exp.yaml", overrides=("model.dropout=0.2",))
    assert fixed["model"]["dropout"] == 0.2


def test_a_quick_item_error_names_the_file_and_the_item():
    doc = {"name": "x", "quick": ["measurement.windows=2", "measurement.sample_hz=.inf"]}
    with pytest.raises(ConfigError) as err:
        parse_experiment(doc, "exp.yaml", quick=True)
    assert str(err.value) == ("exp.yaml: quick[1]: measurement.sample_hz: must be a finite number (in [0.5, 100]), "
                              "not inf")


@pytest.mark.parametrize("block, message", [
    ({"search": {"space": {"batch_size": [64, float("nan")]}}}, "search.space.batch_size[1]: must be a finite number"),
    ({"search": {"space": {"intra_op_threads": {"low": -1, "high": 4}}}},
     "search.space.intra_op_threads.low: must be at least 0, not -1"),
    ({"search": {"space": {"batch_size": {"low": 0, "high": 64, "log": True}}}},
     "search.space.batch_size.low: must be at least 1, not 0"),
    ({"search": {"space": {"stage.prefetch.buffer_size": [0]}}},
     "search.space.stage.prefetch.buffer_size[0]: must be AUTOTUNE or an integer ≥ 1, not 0"),
    ({"search": {"space": {"stage.batch.size": [64]}}},
     "search.space.stage.batch.size: a batch stage has no parameter size (it has batch_size, drop_remainder)"),
    ({"search": {"space": {"env.OMP_NUM_THREADS": [float("inf")]}}},
     "search.space.env.OMP_NUM_THREADS[0]: must be a finite number, not inf"),
    ({"pipelines": {"orderings": {"source": {"format": "libsvm"},
                                  "stages": [{"batch": float("nan")}, "decode"]}}},
     "pipelines.orderings.stages[0].batch.batch_size: must be an integer ≥ 1, not nan"),
    ({"pipelines": {"orderings": {"source": {"format": "libsvm"},
                                  "stages": [{"shuffle": {"buffer_size": 10, "seed": -1}}, "batch", "decode"]}}},
     "pipelines.orderings.stages[0].shuffle.seed: must be an integer ≥ 0 or null, not -1"),
])
def test_space_and_orderings_blocks_are_checked_when_the_experiment_loads(block, message):
    """search.space and pipelines.orderings were handed on unchecked: a bad value surfaced only after
    the data was made (or, for a search choice, trial by trial)."""
    with pytest.raises(ConfigError) as err:
        parse_experiment({"name": "x", **block}, "exp.yaml")
    assert str(err.value).startswith(f"exp.yaml: {message}")


# ---- issue 12: paths and secrets -----------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["../..", "/tmp/elsewhere", "a/b", "a\\b", "a\0b", ".", "..", "", ".hidden",
                                  "-rf", "x" * 101, "tab\there", "new\nline", "ünïcode"])
def test_experiment_name_must_be_a_plain_folder_name(name):
    """A name of `../..` or an absolute path put the run folder outside results/."""
    with pytest.raises(ConfigError) as err:
        parse_experiment({"name": name}, "exp.yaml")
    message = str(err.value)
    assert message.startswith("exp.yaml: name: must be a plain folder name (1 to 100 letters, digits, '.', '_' or "
                              "'-', the first a letter or digit), not ") and "\n" not in message


@pytest.mark.parametrize("name", ["deepfm", "DeepFM-v2.1_quick", "x" * 100, "7"])
def test_plain_folder_names_are_accepted(name):
    assert parse_experiment({"name": name}).name == name


@pytest.mark.parametrize("url, written", [
    ("postgresql://user:secret@db.example.com:5432/studies", "postgresql://user@db.example.com:5432/studies"),
    ("postgresql://user:p%40ss:w@db/studies?sslmode=require", "postgresql://user@db/studies?sslmode=require"),
    ("postgresql://user@db/studies?password=secret&sslmode=require", "postgresql://user@db/studies?sslmode=require"),
    ("mysql+pymysql://root:secret@127.0.0.1/optuna", "mysql+pymysql://root@127.0.0.1/optuna"),
    ("sqlite:////runs/study.db", "sqlite:////runs/study.db"),
    ("sqlite:////runs/study.db?password=x", "sqlite:////runs/study.db"),
    ("runs/study.journal", "runs/study.journal"),
])
def test_storage_password_is_never_written_and_does_not_change_the_fingerprint(tmp_path, url, written):
    """config.yaml (run folders are shared; SageMaker jobs upload them) held the storage URL's password."""
    from pipebench.results.run_folder import read_experiment

    exp = parse_experiment({"name": "x", "search": {"driver": "optuna", "storage": url}})
    assert exp["search"]["storage"] == url  # this process still connects with it
    text = exp.to_yaml()
    assert "secret" not in text and "p%40ss" not in text
    assert yaml.safe_load(text)["search"]["storage"] == written
    without = parse_experiment({"name": "x", "search": {"driver": "optuna", "storage": written}})
    assert exp.fingerprint() == without.fingerprint()
    # A resumed run reads config.yaml: the same experiment, the password left to PGPASSWORD / ~/.pgpass.
    (tmp_path / CONFIG_FILE).write_text(text)
    resumed = read_experiment(tmp_path)
    assert resumed["search"]["storage"] == written and resumed.fingerprint() == exp.fingerprint()


def test_a_run_over_given_files_stores_no_synthetic_settings_it_never_used():
    """config.yaml of a data.files run listed data.synth, packed and holdout_rows: 20000 that it never used."""
    experiment = parse_experiment({"name": "x", "data": {"files": {"libsvm": ["d/*.libsvm"]}},
                                   "pipelines": {"presets": ["lambdaji-libsvm"]}})
    stored = yaml.safe_load(experiment.to_yaml())["data"]
    assert stored["formats"] == ["libsvm"] and stored["files"]["libsvm"] == ["d/*.libsvm"]
    assert not {"synth", "holdout_rows", "cache_dir", "rows_per_record"} & set(stored)
    assert parse_experiment(yaml.safe_load(experiment.to_yaml())).fingerprint() == experiment.fingerprint()
    # Formats the pipelines read but the files lack are made from them, in cache_dir: that setting is kept.
    making = parse_experiment({"name": "x", "data": {"files": {"libsvm": ["d/*.libsvm"]}},
                               "pipelines": {"formats": ["packed"]}})
    assert {"cache_dir", "rows_per_record"} <= set(yaml.safe_load(making.to_yaml())["data"])
