"""Every legal ordering of a pipeline's stages, each labelled with its training semantics.

Hard constraints (an ordering breaking one is never listed): those of `spec.order_problem` — each
stage kind once; `batch` and `decode` present; `interleave` first, or after a `shard` of the file
list — and the experiment's pins (`enumerate.pin`, default `{prefetch: last}`), which only narrow
the search: the reference itself is always listed first, pinned or not.

Labels compare an ordering with the reference (the stages in the order the spec lists them).
`equivalent` means one epoch yields the same multiset of rows, shuffled at the same granularity,
with the same epoch boundaries, on every shard. Anything else is a named difference; those marked
`breaks_semantics` change what training sees (frozen or mixed epochs, batches shuffled instead of
rows, a cache that grows every epoch, workers' parts overlapping) and are excluded unless the
experiment allows them (`enumerate.allow: [name, ...]` or `[all]`); an allowed one stays marked.

The unit a stage sees decides granularity: `row` before batch (`record` — many rows — for the packed
format until decode unpacks it), `batch` after batch, `file` before an interleave. For packed data a
batch placed before decode groups records and decode re-batches their rows, so the batch boundary
effectively sits at decode.
"""
from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipebench.errors import ConfigError
from pipebench.pipeline.spec import PipelineSpec, expect_mapping, reject_unknown_keys, order_problem
from pipebench.values import echo, name_text
from pipebench.yamlfile import read_yaml

EQUIVALENT = "equivalent"
PIN_PLACES = ("first", "last")
ALLOW_ALL = "all"
_COARSENESS = {"row": 0, "record": 1, "batch": 2, "file": 3}

# feature, (name, breaks semantics, why) when only the ordering has it, (name, why) when only the reference has it
_FLAGS = (
    ("frozen_order",
     ("cache-after-shuffle", True, "cache keeps the first epoch's shuffled order, so every epoch replays it"),
     ("cache-before-shuffle", "shuffles afresh every epoch; the reference replays one cached order")),
    ("epochs_mixed",
     ("repeat-before-shuffle", True, "the shuffle buffer spans epoch ends: a row can come twice before another "
                                     "comes once"),
     ("shuffle-before-repeat", "keeps epochs apart; the reference's shuffle mixes them")),
    ("cache_spans_epochs",
     ("repeat-before-cache", True, "cache after repeat stores every epoch again (RAM grows each epoch) and never "
                                   "completes if repeat is endless"),
     ("cache-before-repeat", "caches one epoch; the reference's cache stores every epoch")),
    ("batches_straddle_epochs",
     ("repeat-before-batch", False, "batches straddle epoch ends, and drop_remainder acts once at the very end "
                                    "instead of every epoch"),
     ("batch-before-repeat", "batches stop at epoch ends; the reference's straddle them")),
    ("work_before_shard",
     ("shard-after-expensive-work", False, "every worker reads and decodes (or caches) all rows, then keeps "
                                           "1/num_shards of them"),
     ("shard-before-expensive-work", "each worker decodes only its own part; the reference decodes everything "
                                     "on every worker")),
    ("repeat_before_shard",
     ("repeat-before-shard", False, "shard splits the repeated stream: unless rows divide by num_shards, a "
                                    "worker's rows change from epoch to epoch"),
     ("shard-before-repeat", "a worker keeps the same rows every epoch; the reference's split shifts between "
                             "epochs")),
)
_SHARD_AFTER_SHUFFLE = {
    True: ("shard-after-shuffle", False, "every worker shuffles all rows with the same seed and then takes its "
                                         "part: a worker's rows change every epoch"),
    False: ("shard-after-unseeded-shuffle", True, "each worker shuffles with its own random seed before taking its "
                                                  "part, so parts overlap and some rows reach no worker"),
}
#: Every difference name the labeller can give (the values of `enumerate.allow`).
DIFFERENCES = tuple(sorted(
    [forward[0] for _, forward, _ in _FLAGS] + [reverse[0] for _, _, reverse in _FLAGS]
    + [name for name, _, _ in _SHARD_AFTER_SHUFFLE.values()]
    + ["shard-before-shuffle", "shuffle-after-batch", "shuffle-granularity", "batch-before-shard", "shard-by-file",
       "shard-granularity"]))


@dataclass(frozen=True)
class Difference:
    """One way an ordering's training semantics differ from the reference's."""

    name: str
    why: str
    breaks_semantics: bool = False


@dataclass(frozen=True)
class _Features:
    """What an ordering means for training, independent of speed."""

    shuffle_unit: str | None
    shard_unit: str | None
    frozen_order: bool
    epochs_mixed: bool
    cache_spans_epochs: bool
    batches_straddle_epochs: bool
    work_before_shard: bool
    repeat_before_shard: bool
    shard_after_shuffle: bool


def _features(spec: PipelineSpec) -> _Features:
    kinds = spec.kinds
    at = {kind: i for i, kind in enumerate(kinds)}
    base = "record" if spec.source.format == "packed" else "row"
    unit = "file" if "interleave" in at else base
    unit_at = {}
    for kind in kinds:
        unit_at[kind] = unit
        if kind == "interleave":
            unit = base
        elif kind == "batch":
            unit = "batch"
        elif kind == "decode" and unit == "record":
            unit = "row"
    batch_at = at["decode"] if base == "record" and at["batch"] < at["decode"] else at["batch"]

    def before(a: str, b: str) -> bool:
        return a in at and b in at and at[a] < at[b]

    shuffle = spec.stage("shuffle")
    return _Features(
        shuffle_unit=unit_at.get("shuffle"),
        shard_unit=unit_at.get("shard"),
        frozen_order=shuffle is not None and (not shuffle["reshuffle_each_iteration"]
                                              or (before("shuffle", "cache") and not before("repeat", "cache"))),
        epochs_mixed=before("repeat", "shuffle"),
        cache_spans_epochs=before("repeat", "cache"),
        batches_straddle_epochs="repeat" in at and at["repeat"] < batch_at,
        work_before_shard=before("decode", "shard") or before("cache", "shard"),
        repeat_before_shard=before("repeat", "shard"),
        shard_after_shuffle=before("shuffle", "shard"),
    )


def _units(unit: str, spec: PipelineSpec) -> str:
    if unit == "record":
        return f"packed records ({spec.source.rows_per_record} rows each)"
    return f"{unit}s"


def differences(spec: PipelineSpec, reference: PipelineSpec) -> tuple[Difference, ...]:
    """Give how `spec`'s ordering changes training relative to `reference` (empty: equivalent)."""
    mine, ref = _features(spec), _features(reference)
    found = []
    if mine.shuffle_unit != ref.shuffle_unit:
        if mine.shuffle_unit == "batch":
            found.append(Difference("shuffle-after-batch", "shuffles whole batches: each batch holds the same rows "
                                    "every epoch, only the batch order changes", True))
        else:
            coarser = _COARSENESS[mine.shuffle_unit] > _COARSENESS[ref.shuffle_unit]
            found.append(Difference("shuffle-granularity", f"shuffles {_units(mine.shuffle_unit, spec)}; the "
                                    f"reference shuffles {_units(ref.shuffle_unit, reference)}", coarser))
    if mine.shard_unit != ref.shard_unit:
        name = {"batch": "batch-before-shard", "file": "shard-by-file"}.get(mine.shard_unit, "shard-granularity")
        why = {"batch-before-shard": "workers get whole batches (runs of batch_size rows), not every n-th row; "
                                     "drop_remainder acts before the split",
               "shard-by-file": "workers get whole files, not every n-th row: parts are even only if the files "
                                "are, and num_shards must not exceed the file count"}.get(name)
        why = why or f"shards {_units(mine.shard_unit, spec)}; the reference shards {_units(ref.shard_unit, reference)}"
        found.append(Difference(name, why))
    for feature, (name, breaks, why), (reverse_name, reverse_why) in _FLAGS:
        has, ref_has = getattr(mine, feature), getattr(ref, feature)
        if has and not ref_has:
            found.append(Difference(name, why, breaks))
        elif ref_has and not has:
            found.append(Difference(reverse_name, reverse_why))
    if mine.shard_after_shuffle and not ref.shard_after_shuffle:
        name, breaks, why = _SHARD_AFTER_SHUFFLE[spec.stage("shuffle")["seed"] is not None]
        found.append(Difference(name, why, breaks))
    elif ref.shard_after_shuffle and not mine.shard_after_shuffle:
        found.append(Difference("shard-before-shuffle", "each worker shuffles only its own part; the reference "
                                                        "shuffles everything before sharding"))
    return tuple(found)


def character(spec: PipelineSpec) -> str:
    """Give what an ordering does differently for speed: decode form, what cache holds, prefetch place."""
    kinds = spec.kinds
    scalar = kinds.index("decode") < kinds.index("batch")
    parts = ["scalar decode (per row, before batch)" if scalar else "vectorized decode (per batch)"]
    if scalar and spec.source.format == "packed":
        parts[0] = "scalar decode (per packed record, then unbatched)"
    if "cache" in kinds:
        decoded = kinds.index("decode") < kinds.index("cache")
        batched = kinds.index("batch") < kinds.index("cache")
        held = "batches" if batched else "packed records" if spec.source.format == "packed" and not decoded else "rows"
        parts.append(f"cache holds {'decoded' if decoded else 'undecoded'} {held}")
    if "prefetch" in kinds and kinds[-1] != "prefetch":
        parts.append("prefetch mid-pipeline")
    return "; ".join(parts)


@dataclass(frozen=True)
class Ordering:
    """One ordering of the reference's stages and its label."""

    spec: PipelineSpec
    differences: tuple[Difference, ...] = ()
    is_reference: bool = False
    excluded: bool = False

    @property
    def label(self) -> str:
        return ", ".join(d.name for d in self.differences) or EQUIVALENT

    @property
    def breaks_semantics(self) -> bool:
        return any(d.breaks_semantics for d in self.differences)

    @property
    def why(self) -> str:
        """Give the differences' reasons, or for an equivalent ordering its speed character."""
        if self.differences:
            return "; ".join(d.why for d in self.differences)
        return ("reference: " if self.is_reference else "") + character(self.spec)


def default_pins(spec: PipelineSpec) -> tuple[tuple[str, str], ...]:
    """Give the pins used when an experiment names none: prefetch last, the one rule everyone agrees on."""
    return (("prefetch", "last"),) if "prefetch" in spec.kinds else ()


@dataclass(frozen=True)
class Enumeration:
    """A reference pipeline and the rules for reordering it: an experiment's `pipelines:` block.

    Shape (an experiment file embeds it unchanged, as `pipelines:` or `pipelines.orderings:`):

        pipelines:
          source: {...}            # as PipelineSpec
          stages: [...]            # the reference ordering
          options: {...}
          enumerate:
            pin: {prefetch: last}  # stage: first | last; `{}` pins nothing
            allow: []              # semantics-breaking differences to include, or [all]
    """

    reference: PipelineSpec
    pins: tuple[tuple[str, str], ...] = ()
    allow: tuple[str, ...] = ()

    @classmethod
    def of(cls, reference: PipelineSpec) -> Enumeration:
        """Give the default rules for a reference: prefetch pinned last, nothing semantics-breaking."""
        return cls(reference, default_pins(reference))

    @classmethod
    def from_dict(cls, obj: Any, where: str = "pipelines") -> Enumeration:
        obj = expect_mapping(obj, where)
        rules = expect_mapping(obj.get("enumerate") or {}, f"{where}.enumerate")
        reference = PipelineSpec.from_dict({k: v for k, v in obj.items() if k != "enumerate"}, where)
        reject_unknown_keys(rules, ("pin", "allow"), f"{where}.enumerate")
        pins = default_pins(reference)
        if "pin" in rules:
            pins = []
            for kind, place in expect_mapping(rules["pin"] or {}, f"{where}.enumerate.pin").items():
                path = f"{where}.enumerate.pin.{name_text(kind)}"
                if kind not in reference.kinds:
                    raise ConfigError(f"{path}: no {name_text(kind)} stage in {where}.stages")
                if place not in PIN_PLACES:
                    raise ConfigError(f"{path}: must be first or last, not {echo(place)}")
                if any(p == place for _, p in pins):
                    raise ConfigError(f"{path}: another stage is already pinned {place}")
                pins.append((kind, place))
            pins = tuple(pins)
        allow = rules.get("allow") or []
        if isinstance(allow, str):
            allow = [allow]
        if not isinstance(allow, (list, tuple)):
            raise ConfigError(f"{where}.enumerate.allow: must be a list of difference names or [all]")
        for i, name in enumerate(allow):
            if name != ALLOW_ALL and name not in DIFFERENCES:
                raise ConfigError(f"{where}.enumerate.allow[{i}]: unknown difference {echo(name)} "
                                  f"({ALLOW_ALL}, or a label `pipebench pipelines list --all` shows)")
        return cls(reference, pins, tuple(allow))

    def _pinned(self, kinds: tuple[str, ...]) -> bool:
        return all(kinds[0 if place == "first" else -1] == kind for kind, place in self.pins)

    def _allowed(self, found: tuple[Difference, ...]) -> bool:
        return ALLOW_ALL in self.allow or all(d.name in self.allow for d in found if d.breaks_semantics)

    def orderings(self, include_excluded: bool = False) -> list[Ordering]:
        """Give the reference, then every other legal ordering: equivalent first, then by difference.

        Semantics-breaking orderings not allowed are left out, or kept with `excluded` set when
        `include_excluded` (to show what was left out and why).
        """
        ref = self.reference
        found = [Ordering(ref, is_reference=True)]
        for kinds in itertools.permutations(ref.kinds):
            if kinds == ref.kinds or order_problem(kinds) or not self._pinned(kinds):
                continue
            spec = ref.reordered(kinds)
            diffs = differences(spec, ref)
            excluded = any(d.breaks_semantics for d in diffs) and not self._allowed(diffs)
            if include_excluded or not excluded:
                found.append(Ordering(spec, diffs, excluded=excluded))
        rank = {kind: i for i, kind in enumerate(ref.kinds)}
        return sorted(found, key=lambda o: (not o.is_reference, o.excluded, o.breaks_semantics, len(o.differences),
                                            [rank[k] for k in o.spec.kinds]))


def load(path: Path) -> Enumeration:
    """Read the enumeration block of a file: `pipelines:`, an experiment's `pipelines.orderings:`, or a bare spec."""
    path = Path(path)
    doc = read_yaml(path)
    if not (isinstance(doc, Mapping) and "pipelines" in doc):
        return Enumeration.from_dict(doc, f"{path}: pipeline")
    block, where = doc["pipelines"], f"{path}: pipelines"
    if isinstance(block, Mapping) and "source" not in block and "orderings" in block:
        block, where = block["orderings"], f"{where}.orderings"
        if block is None:
            raise ConfigError(f"{where}: empty; nothing to enumerate")
    return Enumeration.from_dict(block, where)
