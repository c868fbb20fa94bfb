"""notebooks/*.ipynb run top to bottom against the results folder of a short `pipebench run` (the tiny_run
fixture)."""
from __future__ import annotations

import json
from pathlib import Path

import nbclient
import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


@pytest.mark.parametrize("name", ["analysis", "checklist"])
def test_notebook_is_stored_without_outputs(name):
    notebook = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text())
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    assert code and all(not cell["outputs"] and cell["execution_count"] is None for cell in code)


@pytest.mark.tf
@pytest.mark.parametrize("name", ["analysis", "checklist"])
def test_notebook_executes_against_a_fresh_run(tiny_run, name, monkeypatch):
    monkeypatch.setenv("PIPEBENCH_RUN_DIR", str(tiny_run[0]))
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
