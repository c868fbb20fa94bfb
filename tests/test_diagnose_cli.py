"""`pipebench diagnose` end to end through its worker process: the summary, the output folder written whole."""
from __future__ import annotations

import json
import os
import re

import pytest

from diagnose_fixtures import CORPUS, make_data
from pipebench.measure.awake import unavailable
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
    assert re.search(r"self-check( inconclusive \(.*\))?: a plain loop", result.stdout) \
        or "disagrees with a plain loop" in result.stdout
    assert [s["kind"] for s in found["stages"]] == ["source", "batch", "map", "prefetch"]
    assert found["train"] is not None and {t["pipeline"] for t in found["train"]["terms"]} >= {"original"}
    assert len(found["process_rows_per_sec"]) == 2 and "a second worker process" in result.stdout, \
        "the rate is over two worker processes"
    assert "whole pipeline: " in result.stdout
    # timed again with idle cores kept awake (pipebench.measure.awake), paired, or said why not
    assert (found["awake"] is not None and found["awake"]["n"] >= 2) == (unavailable() is None), found["awake_note"]
    assert re.search(r"^(idle cores kept awake: |two speeds: )", result.stdout, re.M), result.stdout[-2000:]
    assert "## Where the time goes" in (out / "diagnosis.md").read_text()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")], "no temp folder left beside it"


#: Every kind of value `--set` accepts (YAML), as given on the command line and as the user's function must get it.
VALUES = {
    "scale": (".nan", "math.isnan(scale)"),
    "high": (".inf", "high == math.inf"),
    "low": ("-.inf", "low == -math.inf"),
    "big": ("123456789012345678901234567890", "big == 123456789012345678901234567890"),
    "when": ("2024-02-29", "when == datetime.date(2024, 2, 29)"),
    "stamp": ("2024-02-29T10:11:12", "stamp == datetime.datetime(2024, 2, 29, 10, 11, 12)"),
    "blob": ("!!binary AGhp/w==", "blob == b'\\x00hi\\xff'"),
    "tags": ("!!set {a, b}", "tags == {'a', 'b'}"),
    "text": ('"tab\\t quote\\" é \\u2028 $float {}"', "text == 'tab\\t quote\" é \\u2028 $float {}'"),
    "items": ("[1, .nan, -.inf, '$map', 2024-01-01]",
              "items[0] == 1 and math.isnan(items[1]) and items[2] == -math.inf and items[3] == '$map' "
              "and items[4] == datetime.date(2024, 1, 1)"),
}


def test_every_value_set_accepts_reaches_the_function_through_both_workers_and_the_output(tmp_path):
    """--set scale=.nan once broke pipebench's own request to its second worker ("Out of range float values are not
    JSON compliant"), blamed on the user's code. Each value --set accepts reaches the user's function as given, in
    both worker processes, and diagnosis.json holds it in strict JSON."""
    names = ", ".join(VALUES)
    checks = "\n".join(f"    assert {check}, repr({name})" for name, (_, check) in VALUES.items())
    module = tmp_path / "values_fn.py"
    module.write_text("import datetime\nimport math\n\nimport tensorflow as tf\n\n\n"
                      f"def input_fn({names}):\n{checks}\n"
                      "    rows = tf.data.Dataset.from_tensor_slices(({'x': tf.range(4096.0)}, tf.zeros([4096])))\n"
                      "    return rows.repeat().batch(256)\n")
    before = module.read_text()
    sets = [a for name, (text, _) in VALUES.items() for a in ("--set", f"{name}={text}")]
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k != "PIPEBENCH_DEBUG"}
    result = run_pipebench("diagnose", f"{module}:input_fn", *sets, "--rounds", "2", "--out", out, env=env,
                           timeout_sec=900)
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads((out / "diagnosis.json").read_text())  # strict JSON: Python's reader takes NaN; check below
    text = (out / "diagnosis.json").read_text()
    assert "NaN" not in text and "Infinity" not in text
    assert found["kwargs"]["scale"] == {"$float": "nan"} and found["kwargs"]["big"] == 123456789012345678901234567890
    assert module.read_text() == before


def test_a_reader_that_finds_companion_files_beside_its_file_is_diagnosed_over_its_own_files(tmp_path):
    """A reader given `day_label.txt` that opens `day_dense.txt` beside it (NVIDIA's DLRM layout, P0 item 6) fails on
    pipebench's sample copy, whose folder holds no companion. That error is pipebench's substitution's: the diagnosis
    completes over the first rows of the user's own files and says why the sample was not used, never blaming the
    user's code."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "day_label.txt").write_text("".join(f"{i % 2}\n" for i in range(20_000)))
    (data / "day_dense.txt").write_text("".join(f"{i * 0.5} {i % 7}\n" for i in range(20_000)))
    module = tmp_path / "companion_fn.py"
    module.write_text(
        "import glob\nimport os\n\nimport tensorflow as tf\n\n\n"
        "def input_fn(label_file, batch_size=256):\n"
        "    stem = label_file[:-len('_label.txt')]\n"
        "    labels, dense = glob.glob(stem + '_label.txt'), glob.glob(stem + '_dense.txt')\n"
        "    assert len(labels) == len(dense), f'matched different number of files ({len(labels)} {len(dense)})'\n"
        "    y = tf.data.TextLineDataset(labels).map(lambda s: tf.strings.to_number(s))\n"
        "    x = tf.data.TextLineDataset(dense).map(\n"
        "        lambda s: tf.strings.to_number(tf.strings.split(s, ' ')))\n"
        "    return tf.data.Dataset.zip(({'dense': x}, y)).batch(batch_size).repeat()\n")
    before = {p.name: p.read_bytes() for p in data.iterdir()}
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k != "PIPEBENCH_DEBUG"}
    result = run_pipebench("diagnose", f"{module}:input_fn", "--set", f"label_file={data / 'day_label.txt'}",
                           "--rounds", "2", "--out", out, env=env, timeout_sec=900)
    assert result.returncode == 0, result.stderr[-3000:]
    scope = json.loads((out / "diagnosis.json").read_text())["content_scope"]
    assert "your files" in scope and "was not used: input_fn failed on it" in scope, scope
    assert "matched different number of files" in scope and "pipebench's, not your code's" in scope, scope
    assert "error" not in result.stderr.lower(), result.stderr[-2000:]
    assert {p.name: p.read_bytes() for p in data.iterdir()} == before, "the user's files are untouched"


def test_a_one_pass_pipeline_whose_start_is_much_of_its_pass_is_measured_in_whole_passes(tmp_path):
    """real_tfrs_ranking_cache's pass (shuffle → take → shuffle → batch → cache, no repeat) reads more rows to fill
    its shuffles than it hands on: its steady rate was 2.1× what a pass gives, and the self-check disagreed. Such a
    pipeline's whole-pipeline figure is of whole passes, their start included, in the second worker process; the
    steady rate past the start is said beside it."""
    module = tmp_path / "one_pass_fn.py"
    module.write_text(
        "import tensorflow as tf\n\n\n"
        "def input_fn(rows=8192):\n"
        "    data = tf.data.Dataset.range(rows).map(lambda i: ({'x': tf.cast(i, tf.float32)}, tf.cast(i % 2, tf.int64)))\n"
        "    train = data.shuffle(6000, seed=42, reshuffle_each_iteration=False).take(4096)\n"
        "    return train.shuffle(6000).batch(512).cache()\n")
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k != "PIPEBENCH_DEBUG"}
    result = run_pipebench("diagnose", f"{module}:input_fn", "--rounds", "2", "--out", out, env=env,
                           timeout_sec=900)
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads((out / "diagnosis.json").read_text())
    assert found["passes"]["main"] == "first"
    assert found["pass_elements"] == 8, "4,096 rows in batches of 512"
    assert found["rows_per_sec"] == found["process_rows_per_sec"][1], "the second worker's whole passes"
    assert "rows/s in whole passes of 8 elements, their start included; past its start: " in result.stdout
    assert "in whole passes of 8 elements, timed from each pass's start" in (out / "diagnosis.md").read_text()
