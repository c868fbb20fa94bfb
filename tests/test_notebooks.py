"""notebooks/*.ipynb run top to bottom against a results folder a short `pipebench run` just produced."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbclient
import nbformat
import pytest
import yaml

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


@pytest.fixture(scope="module")
def fresh_run(tmp_path_factory) -> Path:
    """Give the folder of a tiny real run: one preset, TFRecord, two batch sizes (a figure needs two points to
    compare), input / train / synthetic modes."""
    root = tmp_path_factory.mktemp("notebook-run")
    experiment = {
        "name": "tiny",
        "data": {"synth": {"rows": 2000, "files": 2}, "formats": ["tfrecord"], "holdout_rows": 0,
                 "cache_dir": str(root / "cache")},
        "model": {"embedding_size": 4, "deep_layers": [8]},
        "pipelines": {"presets": ["aws-sample"]},
        "grid": {"batch_size": [256, 512]},
        "modes": ["input", "train", "synthetic"],
        "measurement": {"warmup_max_sec": 0.5, "window_sec": 0.2, "windows": 2, "max_windows": 4, "steady_cv_pct": 50, "remeasure_busy": False},
        "budget": {"trial_timeout_sec": 120, "max_failure_rate": 1.0},
        "results": str(root / "results"),
    }
    (root / "tiny.yaml").write_text(yaml.safe_dump(experiment))
    done = subprocess.run([sys.executable, "-m", "pipebench", "run", str(root / "tiny.yaml")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    (run_dir,) = (root / "results" / "tiny").iterdir()
    return run_dir


@pytest.mark.parametrize("name", ["analysis", "checklist"])
def test_notebook_is_stored_without_outputs(name):
    notebook = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text())
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    assert code and all(not cell["outputs"] and cell["execution_count"] is None for cell in code)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["analysis", "checklist"])
def test_notebook_executes_against_a_fresh_run(fresh_run, name, monkeypatch):
    monkeypatch.setenv("PIPEBENCH_RUN_DIR", str(fresh_run))
    notebook = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    client = nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.execute()  # raises CellExecutionError naming the failing cell
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    if name == "analysis":
        assert sum("image/png" in o.get("data", {}) for o in outputs) >= 3  # the key plots were drawn
    else:
        assert any("Pre-migration checklist" in o.get("data", {}).get("text/markdown", "") for o in outputs)
