"""The one reader of a converter's manifest.json (datasets, data-file sniffing and the pipeline builder read it).

It is the user's file as much as ours (a data folder is copied, edited, damaged): a manifest that is
not JSON, or whose keys pipebench reads have the wrong types, is one DataError naming the file.
Import-light: no numpy, no numba.
"""
from __future__ import annotations

from pathlib import Path

from pipebench.errors import DataError
from pipebench.typed import read_json

#: The keys pipebench reads, with the types they must have when present.
_KEYS = {"format": str, "compression": str, "field_size": int, "feature_size": (int, type(None)),
         "packed_layout": dict}
_SHARD_KEYS = {"name": str, "sha256": str, "rows": int}


def _wrong(found: dict, kinds: dict) -> str | None:
    return next((key for key, kind in kinds.items()
                 if key in found and (isinstance(found[key], bool) or not isinstance(found[key], kind))), None)


def read_manifest(path: Path) -> dict:
    """Give the converter manifest at `path`; DataError `FILE: reason` if it is not one pipebench can read."""
    found = read_json(path)
    shards = found.get("shards") if isinstance(found, dict) else None
    if not isinstance(shards, list) or not all(isinstance(s, dict) and isinstance(s.get("name"), str) for s in shards):
        raise DataError(f"{path}: not a converter manifest (no list of shards, each with its name)")
    key = _wrong(found, _KEYS)
    if key is not None:
        raise DataError(f"{path}: {key}: must be {getattr(_KEYS[key], '__name__', 'int or null')}")
    for i, shard in enumerate(shards):
        key = _wrong(shard, _SHARD_KEYS)
        if key is not None:
            raise DataError(f"{path}: shards[{i}].{key}: must be {_SHARD_KEYS[key].__name__}")
    return found
