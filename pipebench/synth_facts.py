"""synth.json, typed: what `pipebench data synth` wrote and the planted model behind it (no numpy, no numba).

The cached synthetic data set is read through it (pipebench.datasets), so a damaged synth.json is one
DataError naming the file and the key, never a KeyError. Files written before 2026-11-26 had no version
key; they are layout 1, read as they are.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipebench.converters.manifest import Made, Shard
from pipebench.errors import DataError, ResultsVersionError
from pipebench.typed import to_json
from pipebench.versioned import load_versioned

SYNTH_FILE = "synth.json"
SYNTH_VERSION = 1


@dataclass(frozen=True)
class SynthFacts:
    """What synth.json beside the synthesized files says."""

    schema_version: int  # the layout version (pipebench.versioned)
    generator: Made
    spec: dict[str, Any]  # the `data synth` settings (SynthSpec) but `out` and `force`
    rows: int
    numeric_fields: int
    categorical_id_ranges: tuple[tuple[int, ...], ...]  # per categorical field: [first id, last id + 1)
    interaction_field_pairs: tuple[tuple[int, ...], ...]  # the field pairs the planted model multiplies
    bias: float
    positive_rate: float  # of the labels drawn
    oracle_auc: float | None  # the planted model's AUC on these rows; None when every label came out the same
    files: tuple[Shard, ...]

    def to_json(self) -> dict:
        return to_json(self)

    @classmethod
    def load(cls, path: Path, remake: str) -> SynthFacts:
        """Give synth.json at `path`; DataError naming it (and `remake`: how to make the data again) otherwise."""
        try:
            return load_versioned(cls, path, SYNTH_VERSION, "a synthetic data description", remake, absent=1)
        except ResultsVersionError:
            raise
        except DataError as err:
            raise DataError(f"{err}; {remake}") from None
