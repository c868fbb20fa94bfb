"""Experiment files: defaults, overrides, and one-line errors that name the YAML path."""
from __future__ import annotations

from pathlib import Path

import pytest

from pipebench.config import load_experiment, parse_experiment
from pipebench.errors import ConfigError

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
