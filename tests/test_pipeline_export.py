"""export(): standalone input_fn modules that, run in a fresh process, yield the builder's batches."""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from pipeline_fixtures import FORMATS, ROWS_PER_RECORD, data  # noqa: F401

from pipebench.cli import main
from pipebench.pipeline.build import build
from pipebench.pipeline.export import export
from pipebench.pipeline.presets import PRESETS, preset
from pipebench.pipeline.spec import PipelineSpec

# Runs every exported module in one fresh interpreter and saves each one's batches as .npz.
_CHILD = r"""
import importlib.util, json, sys
import numpy as np
for i, job in enumerate(json.loads(sys.argv[1])):
    loader = importlib.util.spec_from_file_location(f"exported_{i}", job["module"])
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    dataset = module.input_fn(*job["args"])
    arrays = {}
    for n, (features, labels) in enumerate(dataset.as_numpy_iterator()):
        arrays[f"ids{n}"], arrays[f"vals{n}"] = features["feat_ids"], features["feat_vals"]
        arrays[f"labels{n}"] = labels
    np.savez(job["out"], **arrays)
    with open(job["out"] + ".json", "w") as f:
        json.dump({"element_spec": repr(dataset.element_spec), "batches": n + 1}, f)
"""

# Stands in for the SageMaker package: the channel's "FIFO" is the files named in the environment.
_FAKE_SAGEMAKER = """
import json, os
import tensorflow as tf

def PipeModeDataset(channel, record_format):
    files = json.loads(os.environ["FAKE_PIPE_CHANNELS"])[channel]
    return (tf.data.TextLineDataset if record_format == "TextLine" else tf.data.TFRecordDataset)(files)
"""


def _spec(name: str, fmt: str, data: dict) -> PipelineSpec:
    spec = preset(name, format=fmt, files=(data[fmt],), batch_size=64, epochs=2, seed=9)
    spec = spec.with_option("deterministic", True)
    spec = spec.with_option("experimental_optimization.no_such_flag_anywhere", True)  # probed, warned, skipped
    return spec.with_source(rows_per_record=ROWS_PER_RECORD) if fmt == "packed" else spec


def _arrays(dataset) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    return [(f["feat_ids"], f["feat_vals"], labels) for f, labels in dataset.as_numpy_iterator()]


def test_exported_modules_in_a_fresh_process_yield_the_builders_batches(data, tmp_path):
    sagemaker = tmp_path / "fake" / "sagemaker_tensorflow"
    sagemaker.mkdir(parents=True)
    (sagemaker / "__init__.py").write_text(_FAKE_SAGEMAKER)
    jobs, expected, channels = [], [], {}
    cases = [(name, fmt, "file") for name in PRESETS for fmt in FORMATS]
    cases += [("aws-sample", fmt, "pipe") for fmt in FORMATS]
    cases += [("guide", fmt, "fastfile") for fmt in ("libsvm", "tfrecord")]  # the builder emulates, export reads
    for name, fmt, mode in cases:
        spec = _spec(name, fmt, data)
        if mode == "fastfile":
            spec = spec.with_source(mode="fastfile")
        built = build(spec)
        expected.append((f"{name}/{fmt}/{mode}", built, _arrays(built.dataset)))
        stem = str(tmp_path / f"{name}-{fmt}-{mode}")
        if mode == "pipe":
            channels[f"train_{fmt}"] = built.files
            spec = spec.with_source(mode="pipe", files=(), channel=f"train_{fmt}")
            args = []
        else:
            args = [data[fmt]]  # one glob string
        Path(stem + ".py").write_text(export(spec))
        jobs.append({"module": stem + ".py", "args": args, "out": stem + ".npz"})
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "fake"), FAKE_PIPE_CHANNELS=json.dumps(channels))
    child = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(jobs)], env=env, capture_output=True, text=True)
    assert child.returncode == 0, child.stderr[-3000:]
    assert child.stderr.count("no_such_flag_anywhere") == len(jobs)  # each module warned once, none failed
    for job, (case, built, batches) in zip(jobs, expected):
        assert built.unsupported_options == ["experimental_optimization.no_such_flag_anywhere"]
        meta = json.loads(Path(job["out"] + ".json").read_text())
        assert meta == {"element_spec": repr(built.dataset.element_spec), "batches": len(batches)}, case
        saved = np.load(job["out"])
        for n, (ids, vals, labels) in enumerate(batches):
            assert np.array_equal(saved[f"ids{n}"], ids), case
            assert np.array_equal(saved[f"vals{n}"], vals), case
            assert np.array_equal(saved[f"labels{n}"], labels), case


def test_exported_module_needs_only_tensorflow(data):
    for name in PRESETS:
        for fmt in FORMATS:
            tree = ast.parse(export(_spec(name, fmt, data)))
            imported = {alias.name for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                        for alias in node.names}
            imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
            assert imported == {"tensorflow"}, (name, fmt)
    pipe = preset("aws-sample").with_source(mode="pipe")
    text = export(pipe)
    assert "from sagemaker_tensorflow import PipeModeDataset" in text
    assert "def input_fn(channel='train', batch_size=1024, num_epochs=10):" in text
    assert "list_files" not in text


def test_exported_module_embeds_the_spec_and_its_fingerprint(data):
    spec = _spec("guide", "packed", data)
    text = export(spec)
    docstring = ast.get_docstring(ast.parse(text))
    assert spec.fingerprint() in docstring
    assert PipelineSpec.from_text(docstring.split("The spec:\n", 1)[1]) == spec
    assert "ROWS_PER_RECORD = 16" in text


def test_cli_export_writes_a_module_without_importing_tensorflow(tmp_path):
    out = tmp_path / "input_fn.py"
    code = ("import sys; from pipebench.cli import main; "
            f"rc = main(['pipelines', 'export', 'lambdaji-libsvm', '--out', {str(out)!r}]); "
            "print(rc, 'tensorflow' in sys.modules)")
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert child.stdout.splitlines()[-1] == "0 False"
    assert "decode > prefetch > shuffle > repeat > batch" in child.stdout
    compile(out.read_text(), str(out), "exec")


def test_cli_export_refuses_to_overwrite_without_force(tmp_path, capsys):
    out = tmp_path / "input_fn.py"
    out.write_text("# mine\n")
    assert main(["pipelines", "export", "guide", "--out", str(out)]) == 2
    assert "already exists (use --force to replace it)" in capsys.readouterr().err
    assert out.read_text() == "# mine\n"
    assert main(["pipelines", "export", "guide", "--out", str(out), "--force", "--format", "packed"]) == 0
    assert "packed_decoder(FIELD_SIZE, ROWS_PER_RECORD)" in out.read_text()


def test_cli_exports_a_spec_file(tmp_path, data):
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(_spec("guide", "libsvm", data).to_json())
    out = tmp_path / "input_fn.py"
    assert main(["pipelines", "export", str(spec_file), "--out", str(out)]) == 0
    text = out.read_text()
    assert "decode = libsvm_decoder(FIELD_SIZE)" in text and "seed=9" in text


@pytest.mark.parametrize("mode", ["file", "fastfile"])
def test_file_and_fastfile_exports_take_files(mode):
    text = export(preset("aws-sample").with_source(mode=mode))
    assert "def input_fn(files, batch_size=1024, num_epochs=10):" in text
    assert ("/opt/ml/input/data/train" in text) == (mode == "fastfile")
