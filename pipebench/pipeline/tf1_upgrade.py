"""TF1 code under TensorFlow 2: the user's module converted with TensorFlow's own `tf_upgrade_v2`, where that helps.

A TF1 input_fn fails under TF 2 at the first TF1-only name it reaches: `tf.parse_example`, `tf.FixedLenFeature`,
`tf.gfile`, `dataset.make_one_shot_iterator()`... TensorFlow ships the converter for exactly this
(`tensorflow/tools/compatibility`, the `tf_upgrade_v2` command): it renames what moved (`tf.io.parse_example`),
sends what TF 2 dropped to `tf.compat.v1`, and reports every change. When loading the user's function fails with
such a name, pipebench converts a copy of their file (their file is never changed), loads the copy, and says so;
the output folder gets the converted module and the converter's report, and the rewritten module imports the
converted one. A failure that is not about a TF1 name, or a file the converter leaves as it was, is reported as
the user's error, as before.

This module imports TensorFlow: it runs in workers only.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

#: What TF 2 says when TF1 code reaches a name it no longer has.
_TF1_NAME = re.compile(r"module 'tensorflow[\w.]*' has no attribute '\w+'"
                       r"|object has no attribute '(?:make_one_shot_iterator|make_initializable_iterator|"
                       r"output_types|output_shapes|output_classes)'")


@dataclass(frozen=True)
class Upgraded:
    """The user's module as tf_upgrade_v2 converted it."""

    path: Path  # the converted copy
    changes: int  # the changes the converter made (renames, compat.v1 moves, rewritten calls)
    report: str  # its report, line by line


def needs_upgrade(error_text: str) -> bool:
    """Tell whether an error is TF1 code meeting TF 2 (a name TF 2 lacks)."""
    return _TF1_NAME.search(error_text) is not None


def upgrade(path: str, folder: Path) -> Upgraded | None:
    """Give `path` converted by tf_upgrade_v2 into `folder` (as upgraded_<its name>), or None when it changes
    nothing."""
    from tensorflow.tools.compatibility import ast_edits, tf_upgrade_v2

    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"upgraded_{Path(path).name}"
    upgrader = ast_edits.ASTCodeUpgrader(tf_upgrade_v2.TFAPIChangeSpec())
    count, report, errors = upgrader.process_file(str(path), str(target))
    changed = target.exists() and target.read_bytes() != Path(path).read_bytes()
    if not changed:
        return None
    lines = [line.strip() for line in report.splitlines() if re.match(r"\s*\d+:\d+: (INFO|WARNING|ERROR)", line)]
    more = [e.strip() for e in errors if not any(e.strip().endswith(line) for line in lines)]
    return Upgraded(target, max(count, len(lines)), "\n".join(lines + more))
