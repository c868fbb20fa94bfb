"""Bad-input corpus for `pipebench diagnose`: what the user's own code or arguments get wrong, in one line.

Each case is one error line naming the user's file (and line, when their code is at fault) and leaves
its folder as it was (tests/badinput.py): nothing is written at --out. Cases past argument parsing
start the diagnosis worker (TensorFlow) and fail while it loads the function.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from badinput import Bad, cases

OUT = ("--out", "{tmp}/out")


def _write(text: str, name: str = "user.py"):
    def make(folder: Path) -> None:
        (folder / name).write_text(text)
    return make


CASES = [
    Bad("diagnose-no-such-file", ("diagnose", "{tmp}/nope.py:input_fn", *OUT), r"^{tmp}/nope\.py: no such file$",
        out="out", code=2, process=True),
    Bad("diagnose-no-function-name", ("diagnose", "{tmp}/user.py", *OUT), r"is not PATH\.py:FUNCTION", out="out",
        make=_write("def input_fn():\n    pass\n"), code=2),
    Bad("diagnose-not-python", ("diagnose", "{tmp}/user.txt:input_fn", *OUT), r"^{tmp}/user\.txt: not a \.py file",
        out="out", make=_write("x", "user.txt"), code=2),
    Bad("diagnose-set-mapping", ("diagnose", "{tmp}/user.py:input_fn", "--set", "files={{a: 1}}", *OUT),
        r"^--set files: a YAML scalar or a list of scalars", out="out", make=_write("def input_fn(files):\n    pass\n"),
        code=2),
    Bad("diagnose-set-twice", ("diagnose", "{tmp}/user.py:input_fn", "--set", "a=1", "--set", "a=2", *OUT),
        r"^--set a: given twice$", out="out", make=_write("def input_fn(a):\n    pass\n"), code=2),
    Bad("diagnose-out-exists", ("diagnose", "{tmp}/user.py:input_fn", *OUT), r"^{tmp}/out: already exists",
        out="out", make=lambda f: (_write("def input_fn():\n    pass\n")(f), (f / "out").mkdir()), code=2),
    Bad("diagnose-one-round", ("diagnose", "{tmp}/user.py:input_fn", "--rounds", "1", *OUT),
        r"^diagnose: argument --rounds: must be from 2 to 100, not 1 ", out="out",
        make=_write("def input_fn():\n    pass\n"), code=2),
    # every number has a range (a --rounds of 10^20 once ran without end)
    Bad("diagnose-rounds-unbounded", ("diagnose", "{tmp}/user.py:input_fn", "--rounds", "100000000000000000000", *OUT),
        r"^diagnose: argument --rounds: must be from 2 to 100, not 100000000000000000000 ", out="out",
        make=_write("def input_fn():\n    pass\n"), code=2, process=True),
    Bad("diagnose-timeout-nan", ("diagnose", "{tmp}/user.py:input_fn", "--timeout", "nan", *OUT),
        r"^diagnose: argument --timeout: must be above 0 and at most 604,800, not nan ", out="out",
        make=_write("def input_fn():\n    pass\n"), code=2),
    Bad("diagnose-memory-cap-unbounded", ("diagnose", "{tmp}/user.py:input_fn", "--memory-cap", "1e30", *OUT),
        r"^diagnose: argument --memory-cap: not an integer: '1e30' ", out="out",
        make=_write("def input_fn():\n    pass\n"), code=2),
    # the worker's: TensorFlow imported there, never in the CLI
    Bad("diagnose-no-such-function", ("diagnose", "{tmp}/user.py:input_fn", *OUT),
        r"^{tmp}/user\.py: no function input_fn \(its functions: make_dataset\)$", out="out",
        make=_write("def make_dataset():\n    pass\n"), code=2, tf=True),
    Bad("diagnose-wrong-signature", ("diagnose", "{tmp}/user.py:input_fn", "--set", "batch_size=4", *OUT),
        r"^{tmp}/user\.py:1: input_fn\(files, batch_size\): missing a required argument: 'files' "
        r"\(give it with --set files=VALUE\)$", out="out", make=_write("def input_fn(files, batch_size):\n    pass\n"),
        code=2, tf=True),
    Bad("diagnose-unknown-argument", ("diagnose", "{tmp}/user.py:input_fn", "--set", "shuffle=true", *OUT),
        r"^{tmp}/user\.py:1: input_fn\(\): got an unexpected keyword argument 'shuffle'$", out="out",
        make=_write("def input_fn():\n    pass\n"), code=2, tf=True),
    Bad("diagnose-raises", ("diagnose", "{tmp}/user.py:input_fn", *OUT),
        r"^{tmp}/user\.py:3: input_fn raised ValueError: no files under /data$", out="out",
        make=_write("def helper():\n    folder = '/data'\n    raise ValueError(f'no files under {folder}')\n\n\n"
                    "def input_fn():\n    return helper()\n"), code=2, process=True, tf=True),
    Bad("diagnose-import-error", ("diagnose", "{tmp}/user.py:input_fn", *OUT),
        r"^{tmp}/user\.py:2: importing user\.py failed: ModuleNotFoundError: No module named 'horovod'$", out="out",
        make=_write("import tensorflow as tf\nimport horovod.tensorflow as hvd\n\n\ndef input_fn():\n    pass\n"),
        code=2, tf=True),
    Bad("diagnose-syntax-error", ("diagnose", "{tmp}/user.py:input_fn", *OUT),
        r"^{tmp}/user\.py:2: SyntaxError: ", out="out", make=_write("def input_fn():\n    return (\n"), code=2, tf=True),
    Bad("diagnose-returns-a-generator", ("diagnose", "{tmp}/user.py:input_fn", *OUT),
        r"^{tmp}/user\.py:1: input_fn returned a generator, not a tf\.data\.Dataset: return tf\.data\.Dataset\."
        r"from_generator", out="out", make=_write("def input_fn():\n    yield 1\n"), code=2, tf=True),
    Bad("diagnose-returns-tensors", ("diagnose", "{tmp}/user.py:input_fn", *OUT),
        r"^{tmp}/user\.py:4: input_fn returned tensors \(a Tensor\), as a TF1 iterator's get_next\(\) gives, not a "
        r"tf\.data\.Dataset: return the dataset itself", out="out",
        make=_write("import tensorflow as tf\n\n\ndef input_fn():\n    dataset = tf.data.Dataset.range(10).batch(2)\n"
                    "    return next(iter(dataset))\n"), code=2, tf=True),
    Bad("diagnose-tf1-state-after-get-next", ("diagnose", "{tmp}/user.py:input_fn", *OUT),
        r"^{tmp}/user\.py:8: input_fn computes on get_next\(\)'s tensors, and its computation keeps state from "
        r"element to element \(AssignAddVariableOp\): diagnose measures the dataset behind a TF1 iterator with what "
        r"is computed on each element after it; move that computation into dataset\.map$", out="out",
        make=_write("import tensorflow as tf\n\n\ndef input_fn():\n    dataset = tf.data.Dataset.range(10).batch(2)\n"
                    "    counter = tf.Variable(0, dtype=tf.int64)\n"
                    "    batch = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()\n"
                    "    return batch + counter.assign_add(1)\n"), code=2, tf=True),
    Bad("diagnose-dataset-elements", ("diagnose", "{tmp}/user.py:input_fn", *OUT),
        r"^unsupported dataset structure: element component element is a DatasetSpec; diagnose compares dense, "
        r"sparse and ragged tensors$", out="out",
        make=_write("import tensorflow as tf\n\n\ndef input_fn():\n    return tf.data.Dataset.range(8).window(2)\n"),
        code=2, tf=True),
]


@pytest.mark.parametrize("case", cases(CASES))
def test_bad_diagnose_input_is_one_line(case: Bad, tmp_path: Path, run_case) -> None:
    run_case(case, tmp_path / case.name)
