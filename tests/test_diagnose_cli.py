"""`pipebench diagnose` end to end through its worker process: the summary, the output folder written whole."""
from __future__ import annotations

import json
import os

import pytest

from diagnose_fixtures import CORPUS, make_data
from pipebench.testing import run_pipebench

pytestmark = pytest.mark.tf


def test_diagnose_writes_its_folder_when_the_diagnosis_completes(tmp_path):
    data = make_data(tmp_path / "data")
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k != "PIPEBENCH_DEBUG"}
    result = run_pipebench("diagnose", f"{CORPUS}/well_built.py:input_fn",
                           "--set", f"files={json.dumps(data['tfrecord'])}", "--set", "batch_size=256",
                           "--rounds", "2", "--out", out, env=env, timeout_sec=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "bottleneck: stage" in result.stdout and f"wrote {out}" in result.stdout
    assert "measuring" in result.stdout, "the worker's progress is shown"
    written = {p.name for p in out.iterdir()}
    found = json.loads((out / "diagnosis.json").read_text())
    kept = [r for r in found["rewrites"] if r["kept"]]
    exported = {"rewritten_well_built.py", "patched_well_built.py", "rewritten_well_built.patch"}
    assert written - {"diagnosis.json", "diagnosis.md"} <= (exported if kept else set()), \
        "a module (and the patched copy it builds from) only for a kept rewrite"
    assert ("None written" in (out / "diagnosis.md").read_text()) == ("rewritten_well_built.py" not in written)
    assert found["self_check"] is not None
    assert "self-check: a plain loop" in result.stdout or "disagrees with a plain loop" in result.stdout
    assert [s["kind"] for s in found["stages"]] == ["source", "batch", "map", "prefetch"]
    assert found["train"] is not None and {t["pipeline"] for t in found["train"]["terms"]} >= {"original"}
    assert len(found["process_rows_per_sec"]) == 2 and "a second worker process" in result.stdout, \
        "the rate is over two worker processes"
    assert "whole pipeline: " in result.stdout
    assert "## Where the time goes" in (out / "diagnosis.md").read_text()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")], "no temp folder left beside it"
