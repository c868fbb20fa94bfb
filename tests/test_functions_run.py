"""`pipebench run` over a function pipeline beside a preset, end to end: its rows, the closing sentence, report,
checklist, `pipelines export RUN_DIR` (whose module yields what the function yields), and a resume refused once the
function's file changed. One small real run, shared by the tests of this module (TF 2.14 and the latest)."""
from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import pipebench.results as results
from pipebench.results.trial_row import TrialRow

pytestmark = pytest.mark.tf

CTR_INPUT = Path(__file__).parents[1] / "experiments" / "functions" / "ctr_input.py"
ROWS, BATCH = 3000, 256
#: A small run's measurement and budget: a few short windows, every failure allowed (the tests read the rows).
SHORT = {"warmup_max_sec": 1.0, "window_sec": 0.2, "windows": 2, "max_windows": 2, "steady_cv_pct": 50,
         "remeasure_busy": False, "repeats": 1}
BUDGET = {"trial_timeout_sec": 300, "max_failure_rate": 1.0}

pytestmark = pytest.mark.tf


def _pipebench(*args: object, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipebench", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=900)


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[Path, str]:
    """Run a small experiment: the lambdaji-libsvm preset and experiments/functions' libsvm_input_fn (the same
    pipeline as the user wrote it), input and train mode; give (the run folder, what run printed)."""
    folder = tmp_path_factory.mktemp("functions")
    (folder / "fns").mkdir()
    shutil.copy(CTR_INPUT, folder / "fns" / "ctr_input.py")
    doc = {
        "name": "fns",
        "data": {"synth": {"rows": ROWS, "files": 2}, "formats": ["libsvm"], "holdout_rows": 0,
                 "cache_dir": str(folder / "cache")},
        "model": {"embedding_size": 4, "deep_layers": [8]},
        "pipelines": {"presets": ["lambdaji-libsvm"], "functions": [
            {"function": "fns/ctr_input.py:libsvm_input_fn", "name": "mine",
             "kwargs": {"filenames": "${data.libsvm}", "num_epochs": None}}]},
        "grid": {"batch_size": [BATCH]},
        "modes": ["input", "train"],
        "measurement": SHORT, "budget": BUDGET,
        "results": str(folder / "results"),
    }
    (folder / "exp.yaml").write_text(yaml.safe_dump(doc))
    done = _pipebench("run", "exp.yaml", cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    (run_dir,) = (folder / "results" / "fns").iterdir()
    return run_dir, done.stdout


def _rows(run_dir: Path) -> list[TrialRow]:
    return results.load(run_dir).rows


def test_a_function_pipeline_is_measured_like_a_preset(run):
    run_dir, out = run
    rows = _rows(run_dir)
    assert sorted((r.pipeline, r.mode) for r in rows) == [
        ("lambdaji-libsvm", "input"), ("lambdaji-libsvm", "train"), ("mine", "input"), ("mine", "train")]
    assert all(r.status == "ok" for r in rows), [(r.pipeline, r.mode, r.reason) for r in rows]
    mine = [r for r in rows if r.pipeline == "mine"]
    for row in mine:
        assert (row.ordering, row.format, row.source_mode, row.batch_size) == (
            "user function", "libsvm", "file", BATCH)
        assert row.examples_per_sec_mean > 0 and not row.knobs_not_applied
        function = json.loads(row.params_json)["pipeline"]["function"]
        assert function["path"] == str((run_dir.parents[2] / "fns" / "ctr_input.py").resolve())
        assert function["function"] == "libsvm_input_fn" and function["batch_size"] == BATCH
        assert function["kwargs"]["num_epochs"] is None and len(function["kwargs"]["filenames"]) == 2
        assert function["sha256"] == json.loads(row.params_json)["pipeline"]["function"]["sha256"]
    train = next(r for r in mine if r.mode == "train")
    assert train.input_slowdown_pct is not None and train.synthetic_examples_per_sec_mean > 0
    preset = next(r for r in rows if r.pipeline == "lambdaji-libsvm")
    assert preset.pipeline_fingerprint != mine[0].pipeline_fingerprint
    # the user's own function is the closing sentence's reference
    action = next(line for line in out.splitlines() if "export it with" in line or "Keep your reference" in line)
    assert "mine (your function) on libsvm" in action, action
    assert (run_dir / "summary.md").read_text().splitlines()[2] == f"**{action}**"


def test_report_and_checklist_read_a_run_with_a_function(run, tmp_path):
    run_dir, _ = run
    report = _pipebench("report", run_dir, "--out", tmp_path / "report", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    page = (tmp_path / "report" / "report.md").read_text()
    assert "mine" in page and "user function" in page
    checklist = _pipebench("checklist", run_dir, "--format", "json", cwd=tmp_path)
    assert checklist.returncode == 0, checklist.stderr
    items = {item["id"]: item for item in json.loads(checklist.stdout)["items"]}
    assert items["cache_fits_ram"]["status"] == "PASS"  # the function's data files, read from its placeholders
    assert items["cache_fits_ram"]["evidence"]["data_bytes"] > 0


def test_capacity_refuses_a_functions_configuration_in_one_line(run, tmp_path):
    run_dir, _ = run
    mine = next(r for r in _rows(run_dir) if r.pipeline == "mine")
    done = _pipebench("capacity", run_dir, "--configuration", mine.configuration_id, cwd=tmp_path)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert f"is your function libsvm_input_fn, whose stages pipebench did not write: `pipebench diagnose " \
           f"{json.loads(mine.params_json)['pipeline']['function']['path']}:libsvm_input_fn`" in done.stderr


def test_the_exported_module_yields_what_the_function_yields(run, tmp_path):
    import tensorflow as tf

    run_dir, _ = run
    train = next(r for r in _rows(run_dir) if r.pipeline == "mine" and r.mode == "train")
    out = tmp_path / "mine_input.py"
    done = _pipebench("pipelines", "export", run_dir, "--trial", train.trial_id, "--out", out, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "wrote input_fn calling your libsvm_input_fn (ctr_input.py, pipeline mine)" in done.stdout
    assert "intra / inter-op threads default / default" in done.stdout
    spec = importlib.util.spec_from_file_location("mine_input", out)
    exported = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(exported)
    function = json.loads(train.params_json)["pipeline"]["function"]
    exported_dataset = exported.input_fn()
    user = sys.modules["ctr_input"]  # the exported module imported the user's file, as the worker did
    assert user.__file__ == function["path"]
    theirs = user.libsvm_input_fn(**function["kwargs"], batch_size=BATCH)
    for ours, expected in zip(exported_dataset.take(4), theirs.take(4)):
        tf.nest.map_structure(lambda a, b: tf.debugging.assert_equal(a, b), ours, expected)
    # keyword arguments replace the measured ones: one epoch holds every row of the data
    epoch = exported.input_fn(num_epochs=1, batch_size=1000)
    assert sum(int(tf.size(labels)) for _, labels in epoch) == ROWS


def test_a_resume_is_refused_once_the_functions_file_changed(run, tmp_path):
    run_dir, _ = run
    user_file = run_dir.parents[2] / "fns" / "ctr_input.py"
    original = user_file.read_text()
    try:
        user_file.write_text(original + "\n# edited after the run started\n")
        done = _pipebench("run", "--resume", run_dir, cwd=tmp_path)
        assert done.returncode == 1 and len(done.stderr.splitlines()) == 1, done.stderr
        assert "pipelines.functions[0].sha256: " in done.stderr and "changed since the experiment was resolved" in \
            done.stderr
    finally:
        user_file.write_text(original)


def test_a_row_names_the_code_that_ran_and_a_trial_of_an_edited_file_is_refused(tmp_path):
    """The function's file edited between a run's two trials (here by the function itself, once its first trial
    has imported it): the edited code ran in the second trial while both rows named the original's sha256. Now the
    first trial's row names the bytes that ran, and the second trial is refused, saying why."""
    (tmp_path / "fns").mkdir()
    module = tmp_path / "fns" / "edits_itself.py"
    module.write_text(CTR_INPUT.read_text() + (
        "\n\ndef edits_itself(filenames, batch_size=256):\n"
        "    import pathlib\n"
        "    marker = pathlib.Path(__file__).with_suffix('.edited')\n"
        "    if not marker.exists():\n"
        "        marker.write_text('')\n"
        "        pathlib.Path(__file__).write_text(pathlib.Path(__file__).read_text() + '\\n# edited\\n')\n"
        "    return libsvm_input_fn(filenames, batch_size, num_epochs=None)\n"))
    original = hashlib.sha256(module.read_bytes()).hexdigest()
    doc = {
        "name": "edits", "data": {"synth": {"rows": ROWS, "files": 1}, "formats": ["libsvm"], "holdout_rows": 0,
                                  "cache_dir": str(tmp_path / "cache")},
        "model": {"embedding_size": 4, "deep_layers": [8]},
        "pipelines": {"presets": [], "functions": [{"function": "fns/edits_itself.py:edits_itself", "name": "mine",
                                     "kwargs": {"filenames": "${data.libsvm}"}}]},
        "grid": {"batch_size": [BATCH]}, "modes": ["input", "train"],
        "measurement": SHORT, "budget": BUDGET,
        "results": str(tmp_path / "results"),
    }
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump(doc))
    done = _pipebench("run", "exp.yaml", cwd=tmp_path)
    assert module.read_text().endswith("# edited\n"), "the function edited its file"
    (run_dir,) = (tmp_path / "results" / "edits").iterdir()
    rows = sorted(_rows(run_dir), key=lambda r: r.status != "ok")
    assert [r.status for r in rows][0] == "ok" and rows[1].status in ("failed", "invalid"), \
        (done.stdout + done.stderr)[-3000:]
    assert json.loads(rows[0].params_json)["pipeline"]["function"]["sha256"] == original
    assert "changed since the run began" in rows[1].reason and original[:12] in rows[1].reason, rows[1].reason
