"""Bad-input corpus for an experiment's `pipelines.functions`: what is refused when the experiment is loaded.

Each case is one line naming the YAML path (and the user's file and line where their code is at fault), before
any data is made or TensorFlow imported: the case folder stays as it was (tests/badinput.py). What the user's
code raises when a trial calls it is a failed trial, not a refusal (tests/test_functions_run.py).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from badinput import EXPERIMENT_HEAD, Bad, cases

EXPERIMENT = EXPERIMENT_HEAD + """\
  formats: [libsvm, tfrecord]
pipelines:
  presets: [aws-sample]
  functions:
"""
FUNCTIONS = """\
import tensorflow as tf


def input_fn(files, batch_size=64, shuffle=False):
    return tf.data.TFRecordDataset(files).batch(batch_size)


def make_dataset(files):
    return tf.data.TFRecordDataset(files)
"""


def _case(entries: str, functions: str = FUNCTIONS, extra: str = ""):
    def make(folder: Path) -> None:
        (folder / "fns").mkdir()
        (folder / "fns" / "user.py").write_text(functions)
        (folder / "exp.yaml").write_text(EXPERIMENT + entries + extra)
    return make


def _run(*extra: str) -> tuple[str, ...]:
    return ("run", "exp.yaml", *extra)


F0 = r"^exp\.yaml: pipelines\.functions\[0\]"
CASES = [
    Bad("function-missing-file", _run(), F0 + r"\.function: fns/nope\.py: no such file \(read from {tmp}\)$",
        _case("    - {function: fns/nope.py:input_fn}\n"), out="out", code=1),
    Bad("function-not-path-colon-name", _run(), F0 + r"\.function: 'fns/user\.py' is not PATH\.py:FUNCTION",
        _case("    - {function: fns/user.py}\n"), out="out", code=1),
    Bad("function-not-defined", _run(), F0 + r"\.function: {tmp}/fns/user\.py: no top-level function input_fm "
        r"\(its functions: input_fn, make_dataset\)$", _case("    - {function: fns/user.py:input_fm}\n"),
        out="out", code=1),
    Bad("function-syntax-error", _run(), F0 + r"\.function: {tmp}/fns/user\.py:2: SyntaxError: ",
        _case("    - {function: fns/user.py:input_fn}\n", "def input_fn(files):\n    return (\n"), out="out", code=1,
        process=True),
    Bad("function-unknown-argument", _run(), F0 + r"\.kwargs: {tmp}/fns/user\.py:4: input_fn\(files, batch_size=64, "
        r"shuffle=False\) takes no argument buffer$",
        _case("    - {function: fns/user.py:input_fn, kwargs: {files: '${data.tfrecord}', buffer: 10}}\n"),
        out="out", code=1),
    Bad("function-missing-argument", _run(), F0 + r"\.kwargs: {tmp}/fns/user\.py:4: input_fn\(files, batch_size=64, "
        r"shuffle=False\) needs files: give it in kwargs$", _case("    - {function: fns/user.py:input_fn}\n"),
        out="out", code=1),
    Bad("function-unknown-placeholder", _run(), F0 + r"\.kwargs\.files: '\$\{data\.csv\}' is no placeholder "
        r"pipebench knows \(known: \$\{data\.libsvm\}, \$\{data\.tfrecord\}, \$\{data\.packed\}, each a whole "
        r"value\)$", _case("    - {function: fns/user.py:input_fn, kwargs: {files: '${data.csv}'}}\n"),
        out="out", code=1),
    Bad("function-placeholder-in-a-glob", _run(), F0 + r"\.kwargs\.files\[0\]: '\$\{data\.tfrecord\}/\*' is no "
        r"placeholder", _case("    - {function: fns/user.py:input_fn, kwargs: {files: ['${data.tfrecord}/*']}}\n"),
        out="out", code=1),
    Bad("function-format-not-made", _run(), F0 + r"\.kwargs: \$\{data\.packed\} reads packed files, and "
        r"data\.formats makes none$", _case("    - {function: fns/user.py:input_fn, kwargs: {files: "
                                           "'${data.packed}'}}\n"), out="out", code=1),
    Bad("function-kwargs-date", _run(), F0 + r"\.kwargs\.since: must be a number, text, true/false, null, or a list or "
        r"mapping of them, not date datetime\.date\(2024, 1, 2\) \(quote it\)$",
        _case("    - {function: fns/user.py:input_fn, kwargs: {files: x, since: 2024-01-02}}\n",
              FUNCTIONS.replace("shuffle=False", "since=None")), out="out", code=1),
    Bad("function-name-of-a-preset", _run(), F0 + r"\.name: aws-sample names another pipeline too; give this function "
        r"its own name$", _case("    - {function: fns/user.py:input_fn, kwargs: {files: x}, name: aws-sample}\n"),
        out="out", code=1),
    Bad("function-same-name-twice", _run(), r"^exp\.yaml: pipelines\.functions\[1\]\.name: input_fn names another "
        r"pipeline too", _case("    - {function: fns/user.py:input_fn, kwargs: {files: x}}\n"
                               "    - {function: fns/user.py:input_fn, kwargs: {files: y}}\n"), out="out", code=1),
    Bad("function-unknown-key", _run(), F0 + r"\.args: unknown key \(expected one of function, kwargs, name, sha256\)$",
        _case("    - {function: fns/user.py:input_fn, args: {files: x}}\n"), out="out", code=1),
    Bad("function-file-changed", _run(), F0 + r"\.sha256: {tmp}/fns/user\.py changed since the experiment was "
        r"resolved \(sha256 000000000000… then", _case("    - {function: fns/user.py:input_fn, kwargs: {files: x}, sha256: '"
                                                 + "0" * 64 + "'}\n"), out="out", code=1),
    Bad("function-baseline-unknown", _run(), r"^exp\.yaml: pipelines\.baseline: 'mine' names no pipeline of this "
        r"experiment \(aws-sample, input_fn\)", _case("    - {function: fns/user.py:input_fn, kwargs: {files: x}}\n",
                                                       extra="  baseline: mine\n"), out="out", code=1),
    Bad("function-set-blames-the-set", _run("--set", "pipelines.functions=[{{function: nope.py:f}}]"),
        r"^--set pipelines\.functions: pipelines\.functions\[0\]\.function: nope\.py: no such file \(read from {tmp}\)$",
        _case("    - {function: fns/user.py:input_fn, kwargs: {files: x}}\n"), out="out", code=1),
]


@pytest.mark.parametrize("case", cases(CASES))
def test_refused(case, tmp_path, run_case):
    run_case(case, tmp_path)
