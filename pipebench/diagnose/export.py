"""What a diagnosis exports: the user's own file with the kept rewrite written into its calls, and a module that
builds from it.

The rewrite is measured on the user's pipeline; what is exported must build that pipeline, not the original. So the
export is always a patched copy of the user's file (pipebench.diagnose.patch: their calls edited where they wrote
them, pipebench's helpers appended, their functions untouched), written beside a small module whose `input_fn`
loads that copy and calls the user's function in it, with the user's arguments: whatever the function computes
from them, it computes again. A TF1 input_fn is called through `dataset_of_tf1` (copied from
pipebench.pipeline.tf1_capture), so the module returns the dataset behind its iterator; one with TF1 names
TensorFlow 2 lacks is patched in tf_upgrade_v2's conversion, which the diagnosis read. A rewrite that only sets
tf.data options is set by the module on what the user's own file builds. The module is written by
pipebench.pipeline.export's `function_module`, as `pipelines export` writes a function pipeline's: this module chooses
what it calls.

When the rewrite cannot be written into the file (a call pipebench cannot find unambiguously, a stage a library
function made), no module is written: one that builds the original under a docstring that says it is rewritten
is how the export lied before (a claimed 19.8× that exported 1.1-2.0×, issue 46). diagnosis.md then says why,
and lists the changes call by call. Without a kept rewrite, no module either: the user's own file is the pipeline.

Written from the records and the user's file alone (no TensorFlow here). The user's text enters the module only
as literals or comments (pipebench.pipeline.export), never as code.
"""
from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pipebench
from pipebench.diagnose.patch import NoPatch, patched_text
from pipebench.diagnose.records import Diagnosis, Rewrite
from pipebench.pipeline.export import UserCall, comment, function_module


@dataclass(frozen=True)
class Export:
    """The files a diagnosis writes for its rewrite, by name, and why there is no module when there is none."""

    files: dict[str, str]
    module: str | None  # the module's file name, when one builds the rewrite
    patched: str | None  # the patched copy's file name, when the rewrite changes calls
    diff: str | None  # the same change as a unified diff of the user's own file
    why_not: str | None  # why no module is written


def module_name(found: Diagnosis) -> str:
    """Give the rewritten module's file name: rewritten_<the user's module>.py."""
    return f"rewritten_{Path(found.function.rpartition(':')[0]).stem}.py"


def patched_name(found: Diagnosis) -> str:
    """Give the patched copy's file name: patched_<the user's module>.py."""
    return f"patched_{Path(found.function.rpartition(':')[0]).stem}.py"


def best(found: Diagnosis) -> Rewrite | None:
    """Give the rewrite the module builds (best_of)."""
    return best_of(found.rewrites, found.combined)


def best_of(rewrites: Sequence[Rewrite], combined: Rewrite | None) -> Rewrite | None:
    """Give the kept rewrite, or kept combination, with the largest gain over the original, else None. The
    combination is not taken on trust: on `augment` (2026-11-28) a parallel map alone gained 1.84x and with a
    prefetch after it 1.37x. Each gain was measured against the original (paired), not against each other."""
    kept = [r for r in (*rewrites, *([combined] if combined is not None else [])) if r.kept]
    return max(kept, key=lambda r: r.gain.mean) if kept else None


def export(found: Diagnosis, user_text: str, rewrite: Rewrite | None = None) -> Export:
    """Give the files that build `rewrite` (the best kept one when None) from the user's file, whose text is
    `user_text` (module docstring)."""
    chosen = best(found) if rewrite is None else rewrite
    if chosen is None:
        return Export({}, None, None, None, "no rewrite was kept: your own file builds the pipeline")
    base = found.upgraded.source if found.upgraded is not None else user_text
    structural = dataclasses.replace(chosen, options={})
    changes_calls = bool(chosen.steps) and chosen.steps != found.steps
    patched = None
    if changes_calls:
        try:
            patched = patched_text(found, structural, base, converted=found.upgraded is not None)
        except NoPatch as err:
            return Export({}, None, None, None, f"{chosen.name} cannot be written into the calls of "
                                                f"{Path(found.function.rpartition(':')[0]).name}: {err}")
    elif not chosen.options:
        return Export({}, None, None, None, f"{chosen.name} changes nothing the module could build")
    files = {}
    diff = None
    if patched is not None:
        files[patched_name(found)] = patched
        if found.upgraded is None:
            name = Path(found.function.rpartition(":")[0]).name
            diff = "".join(difflib.unified_diff(user_text.splitlines(keepends=True), patched.splitlines(keepends=True),
                                                f"a/{name}", f"b/{name}"))
    elif found.upgraded is not None:  # the options are set on what the conversion builds, written beside it
        files[patched_name(found)] = base
    files[module_name(found)] = _module(found, chosen, patched_name(found) if patched_name(found) in files else None)
    return Export(files, module_name(found), patched_name(found) if patched is not None else None, diff, None)


def _module(found: Diagnosis, chosen: Rewrite, beside: str | None) -> str:
    """Give the module that calls the user's function in the patched copy `beside` it (or, with options only, in the
    user's own file) and sets the rewrite's options on what it returns (pipebench.pipeline.export's one writer)."""
    path, _, name = found.function.rpartition(":")
    header = [f"input_fn rewritten by pipebench {pipebench.__version__} diagnose from {found.function}.", "",
              f"{chosen.name}: {chosen.verdict}."]
    if chosen.semantics:
        header.append(f"It changes what training sees: {chosen.semantics}.")
    if beside is not None:
        header.append(f"The rewrite is written into the calls of {beside}, beside this file: a copy of "
                      + (f"TensorFlow's tf_upgrade_v2 conversion of {Path(path).name} (upgrade_report.txt)"
                         if found.upgraded else Path(path).name) + "; your own file is unchanged.")
    if chosen.options:
        header.append(f"tf.data options set here: {', '.join(f'{k}={v!r}' for k, v in chosen.options.items())}.")
    if found.tf1:
        header.append(f"TF1: the original returns get_next() of {found.tf1}; this input_fn returns the dataset itself "
                      "(TF2: iterate it, or give it to model.fit).")
    header += ["", "The measurements are in diagnosis.md beside this file."]
    call = UserCall(name, beside if beside is not None else path, "*args, **kwargs", beside=beside is not None,
                    folder=str(Path(path).parent), tf1=bool(found.tf1), options=dict(chosen.options))
    return function_module(
        comment("\n".join(header)),
        f"{name} rewritten by pipebench diagnose: it yields the same elements as the original (see above).",
        f"{name}(*args, **kwargs)",
        f"Give the tf.data.Dataset {name}{found.signature} builds, rewritten; it takes what {name} takes.", call)


def write(found: Diagnosis, folder: Path, user_text: str, rewrite: Rewrite | None = None) -> Export:
    """Write the export's files into `folder`; give what was written."""
    made = export(found, user_text, rewrite)
    for name, text in made.files.items():
        (folder / name).write_text(text)
    return made
