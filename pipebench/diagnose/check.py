"""The content check's reads: the original and each rewrite, built the same way, so that what differs is the rewrite.

Every read builds its pipeline afresh: it loads the user's function again and replays its steps (the rewrite's
transforms applied), each under one global seed (`tf.random.set_seed(CONTENT_SEED)`, before the load and again
before the replay). Their shuffles then draw alike: an unseeded shuffle read twice gave two samples of the data,
and a rewrite compared with a sample it never saw differed by construction (issue 46). What still differs between
two reads of the original (a parallel map's stateful ops, `deterministic=False`) is nondeterminism, which the
comparison leaves out and names (pipebench.diagnose.content); so are the components a whole epoch read under
another seed changes (random augmentation: a parallel map hands its draws to other rows).

What is read: a sample of the data (pipebench.diagnose.sample: a few files, rows from their start, middle and end,
a whole epoch of it) when the user's function reads the sample as it reads their files (the same stages, rows
out); else the first CAP rows of their own files, and the scope says why. A reader that finds companion files
beside the one it is given, or a format the sampler does not know, fails on the sample: that error is
pipebench's substitution's, not the user's code's, and is said so, never raised as theirs. Over the first rows,
a rewrite that hands on rows in another order (deterministic=False) is compared with a margin: its rows must be
among the original's first rows and a few more, and hold all but the last few of them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import tensorflow as tf

from pipebench.diagnose import content as contents
from pipebench.diagnose.records import Content
from pipebench.errors import UserCodeError, failure_reason

#: The global seed every read is built under.
CONTENT_SEED = 46
#: Over the first rows of the user's files: the original is read this much further than a rewrite (its share of the
#: rows, at least MARGIN_ROWS), so rows a rewrite hands on a little out of order are found.
MARGIN_SHARE, MARGIN_ROWS = 0.05, 1024


@dataclass
class Scope:
    """What the content check reads, in words, and the rows of the original it compares."""

    text: str
    rows: int


class ContentCheck:
    """Reads the original and the rewrites alike (module docstring)."""

    def __init__(self, path: str, name: str, kwargs: dict[str, Any], shape: list, replayable: bool, batched: bool,
                 cap_rows: int) -> None:
        self.path, self.name, self.kwargs, self.shape = path, name, kwargs, shape
        self.replayable, self.batched, self.cap_rows = replayable, batched, cap_rows
        self.epochs: tuple[contents.Epoch, contents.Epoch] | None = None
        self.reseeded: contents.Epoch | None = None  # a whole epoch read under another seed
        self.capped, self.compared_rows = False, cap_rows

    def _walked(self, kwargs: dict[str, Any], seed: int = CONTENT_SEED):
        from pipebench.pipeline.walk import walk
        from pipebench.pipeline.user_code import load

        tf.random.set_seed(seed)
        loaded = load(self.path, self.name, kwargs)
        return walk(loaded.dataset, loaded.sites, loaded.module, loaded.library_calls)

    def build(self, transforms: list, options: dict[str, Any], seed: int = CONTENT_SEED):
        """Give one epoch of the pipeline with `transforms` and `options` applied, built afresh under `seed`; None
        when the transforms do not compose."""
        from pipebench.measure.build import options_of, replay, steps_of
        from pipebench.diagnose.rewrites import compose

        walked = self._walked(self.kwargs, seed)
        try:
            if not self.replayable:
                return walked.root.with_options(options_of(options)) if options else walked.root
            steps = compose(transforms, steps_of(walked)[0])
            tf.random.set_seed(seed)
            return None if steps is None else replay(steps, walked, options, one_epoch=True)
        finally:
            tf.random.set_seed(None)

    def setup(self, sample, own_kwargs: dict[str, Any]) -> Scope:
        """Read the original twice, over the sample when the function reads it as it reads the files (module
        docstring), else over the first rows of its own files; give the scope."""
        why = None
        if sample is not None:
            try:
                walked = self._walked(sample.kwargs)
                if [(s.kind, s.inside) for s in walked.stages] != self.shape:
                    why = "it builds other stages over the sample: " + " ".join(s.call for s in walked.stages)[:120]
                else:
                    self.kwargs = sample.kwargs
                    self.epochs = self._originals(sample.rows * 4 + 1)
                    if not self.epochs[0].examples:
                        why = "it reads no rows from the sample"
            except Exception as err:  # noqa: BLE001 — the sample's fault, not the user's: said, and not used
                why = f"{self.name} failed on it: {_short(err)}"
            finally:
                tf.random.set_seed(None)
            if why is None:
                endless = f", its first {self.compared_rows:,} rows (it does not end)" if self.capped else ""
                return Scope(sample.scope + endless,
                             self.compared_rows if self.capped else len(self.epochs[0].examples))
        self.kwargs, self.reseeded = own_kwargs, None
        self.epochs = self._originals(self.cap_rows)
        rows = len(self.epochs[0].examples)
        if not self.capped:
            text = f"one whole epoch of your files: {rows:,} rows"
        else:
            text = (f"the first {self.cap_rows:,} rows of your files, each read under one seed"
                    + (" (no argument names the files, so no sample of them could be made)" if sample is None else ""))
        if why is not None:
            text += (f"; pipebench's sample of your files ({sample.scope}) was not used: {why} (an error only "
                     "pipebench's substitution of your files causes is pipebench's, not your code's)")
        return Scope(text, self.compared_rows if self.capped else rows)

    def _originals(self, cap: int) -> tuple[contents.Epoch, contents.Epoch]:
        """Read the original twice, up to `cap` rows and a margin (an endless one is then compared over its first
        `cap` rows, module docstring); a whole epoch a third time, under another seed."""
        margin = max(MARGIN_ROWS, int(cap * MARGIN_SHARE))
        found = (contents.read_epoch(self.build([], {}), self.batched, cap + margin),
                 contents.read_epoch(self.build([], {}), self.batched, cap + margin))
        self.capped, self.compared_rows = found[0].capped, cap
        if not self.capped:  # over a whole epoch another seed changes only what random draws make
            self.reseeded = contents.read_epoch(self.build([], {}, CONTENT_SEED + 1), self.batched, cap + margin)
        return found

    def compare(self, transforms: list, options: dict[str, Any], original_spec: Any) -> Content | str:
        """Give how a rewrite compares with the original, or why it could not be read."""
        try:
            dataset = self.build(transforms, options)
        except Exception as err:  # noqa: BLE001 — a rewrite that cannot be built over the data is refused
            return f"it cannot be built: {failure_reason(err, 160)}"
        if dataset is None:
            return "the rewrites do not compose"
        try:
            tf.nest.assert_same_structure(dataset.element_spec, original_spec)
        except (ValueError, TypeError):
            return "its elements have another structure"
        if [s.dtype for s in tf.nest.flatten(dataset.element_spec)] != \
                [s.dtype for s in tf.nest.flatten(original_spec)]:
            return "its elements have other dtypes"
        original = self.epochs[0]
        cap = self.compared_rows if self.capped else len(original.examples) + 1
        try:
            epoch = contents.read_epoch(dataset, self.batched, cap)
        except Exception as err:  # noqa: BLE001 — a rewrite that fails on the data is refused, not a crash
            return f"it fails on the data: {failure_reason(err, 160)}"
        return contents.compare(*self.epochs, epoch, self.reseeded)


def _short(err: Exception) -> str:
    """Give the sample's failure in a few words: the user's file by its name (the sample's folder is pipebench's)."""
    if not isinstance(err, UserCodeError):
        return failure_reason(err, 160)
    text = re.sub(r"^(?:.*/)?([^/:]+:\d+): \S+ raised ", r"\1: ", str(err))  # "/a/u.py:10: f raised X: y" -> "u.py:10: X: y"
    return text if len(text) <= 160 else text[:159] + "…"
