"""A converter's manifest.json, typed: the converter writes a `Manifest`, and `read_manifest` is its one reader
(datasets, data-file sniffing, the pipeline builder and the CLI read it through here).

It is the user's file as much as ours (a data folder is copied, edited, damaged): a manifest that is
not JSON, lacks a key, has one it should not or a value of the wrong type is one DataError naming the
file and the key path; one of a newer version says to update pipebench. Import-light: no numpy, no numba.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipebench.typed import from_json, read_json, to_json
from pipebench.versioned import VERSION_KEY, WAS, check_version

#: manifest.json layout (its version key was spelt `manifest_version` before 2026-11-26).
MANIFEST_VERSION = 1
#: Keys a manifest of layout 1 leaves out when they do not apply; a manifest written since has them, null.
_OPTIONAL = ("packed_layout", "quarantine_file", "feature_map")


@dataclass(frozen=True)
class Made:
    """The program that wrote the file, and its version."""

    name: str
    version: str


@dataclass(frozen=True)
class Shard:
    """One part file the converter wrote."""

    name: str
    rows: int
    bytes: int
    sha256: str


@dataclass(frozen=True)
class SourceFile:
    """One input file, as the converter read it."""

    path: str
    bytes: int
    sha256: str | None  # None for an input TensorFlow read (TFRecord) before pipebench hashed those
    compression: str
    lines: int  # lines (libsvm, raw Criteo) or records (TFRecord) read


@dataclass(frozen=True)
class Rejected:
    total: int
    by_reason: dict[str, int]


@dataclass(frozen=True)
class PackedColumn:
    name: str
    dtype: str
    word_offset: int
    words: int


@dataclass(frozen=True)
class PackedLayout:
    """How the packed format lays rows out in a record (`converters.packed`)."""

    word_bytes: int
    byte_order: str
    row_words: int
    row_bytes: int
    rows_per_record: int
    last_record: str
    columns: tuple[PackedColumn, ...]
    decode: str


@dataclass(frozen=True)
class FeatureMapUsed:
    """The raw Criteo feature map the ids come from."""

    file: str  # beside the manifest
    cutoff: int
    given: str | None  # the --feature-map it was read from; None when this conversion built it


@dataclass(frozen=True)
class Manifest:
    """What manifest.json beside a converter's output says about it."""

    schema_version: int  # the layout version (pipebench.versioned)
    converter: Made
    format: str  # libsvm, tfrecord or packed
    compression: str
    tf_compression_type: str  # tf.data's compression_type for the shards
    field_size: int
    feature_size: int | None  # as given (or the feature map's); None when not given
    feature_size_seen: int  # the largest id seen, plus one
    rows: int
    positive_rate: float | None  # None with no rows
    schema: dict[str, Any] | None  # TFRecord / packed features: name → {dtype, shape}; None for libsvm
    shards: tuple[Shard, ...]
    sources: tuple[SourceFile, ...]
    input_format: str  # libsvm, tfrecord or criteo
    on_error: str
    rejected: Rejected
    seconds: float
    packed_layout: PackedLayout | None  # the packed format's only
    quarantine_file: str | None  # with --on-error quarantine only
    feature_map: FeatureMapUsed | None  # with --from criteo only

    def to_json(self) -> dict:
        return to_json(self)


def read_manifest(path: Path) -> Manifest:
    """Give the converter manifest at `path`; DataError `FILE: reason` if it is not one pipebench can read."""
    found = check_version(read_json(path), str(path), VERSION_KEY, MANIFEST_VERSION, "a converter manifest",
                          "convert the data again", WAS["manifest.json"])
    return from_json(Manifest, {**dict.fromkeys(_OPTIONAL), **found}, str(path))
