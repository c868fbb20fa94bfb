"""Versioned JSON files (machine.json, capacity.json, sharding.json, a converter manifest, ...): one version key,
one reader, directional errors.

Every JSON record pipebench writes carries its layout version under one key, VERSION_KEY (the results
tables carry theirs as `pipebench.schema_version` in their Parquet metadata). Older pipebench spelt it
per record (`facts_version`, `profile_version`, ...): a reader names those old spellings (`was`) and
reads such a file as the same version, and `pipebench upgrade` rewrites it with the one key.

As asv's `load_json` does with `api_version`: a file of an older version says what remakes it, and one
of a newer version says to update pipebench, since only a newer pipebench knows its layout.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pipebench.errors import DataError, ResultsVersionError
from pipebench.typed import from_json, read_json

#: The one version key of a JSON record (the first key written; the first field of its dataclass).
VERSION_KEY = "schema_version"
#: How pipebench before 2026-11-26 spelt the version key of each file it writes: a reader takes the old
#: spelling as the same version, and `pipebench upgrade` rewrites a run folder's files with VERSION_KEY.
WAS = {
    "machine.json": ("facts_version",),
    "capacity.json": ("profile_version",),
    "sharding.json": ("sharding_version",),
    "manifest.json": ("manifest_version",),
    "feature_map.json": ("feature_map_version",),
    "job.json": ("job_version",),  # until 2026-11-27, as the launch manifest's launch_version
    "pipebench-launch.json": ("launch_version",),
}
T = TypeVar("T")


def read_versioned(path: Path, key: str, current: int, what: str, older: str, was: tuple[str, ...] = (),
                   absent: int | None = None) -> dict:
    """Give the JSON object at `path` whose `key` is `current`; one-line DataError naming the file otherwise.

    `what` names the kind of file ("a sharding record"); `older` says what remakes a file of an older
    version (e.g. "run `pipebench sharding RUN` again"). A version mismatch is a ResultsVersionError.
    """
    return check_version(read_json(path), str(path), key, current, what, older, was, absent)


def spelt(found: Any, key: str, was: tuple[str, ...] = ()) -> str | None:
    """Give the key `found` (a parsed document) keeps its version under: `key`, else the first old spelling it has."""
    if not isinstance(found, dict):
        return None
    return next((k for k in (key, *was) if k in found), None)


def respelt(found: dict, key: str, was: tuple[str, ...] = ()) -> dict:
    """Give `found` with its version under `key` (moved from an old spelling, put first), other keys as they were."""
    old = spelt(found, key, was)
    if old is None or old == key:
        return found
    return {key: found[old], **{k: v for k, v in found.items() if k != old}}


def check_version(found: Any, where: str, key: str, current: int, what: str, older: str, was: tuple[str, ...] = (),
                  absent: int | None = None) -> dict:
    """Give `found`, a parsed JSON document read from `where`, if it is an object whose version is `current`
    (under `key` or an old spelling in `was`; a document without either is version `absent` when that is
    given), with the version under `key`; otherwise the errors of read_versioned, naming the key as the file spells it."""
    name = spelt(found, key, was)
    if name is None and isinstance(found, dict) and absent is not None:
        if absent < current:
            raise ResultsVersionError(f"{where}: layout {absent} (no {key}) is older than the {current} this "
                                      f"pipebench reads: {older}")
        return {key: absent, **found}
    version = found.get(name) if name is not None else None
    if version is None:
        shape = "no " + key if isinstance(found, dict) else f"a JSON {type(found).__name__}, not an object"
        raise DataError(f"{where}: not {what} ({shape})")
    if not isinstance(version, int) or isinstance(version, bool):
        raise DataError(f"{where}: not {what} ({name} {version!r} is not a whole number)"[:280])
    if version > current:
        raise ResultsVersionError(f"{where}: {name} {version} was written by a newer pipebench (this one reads "
                                  f"{current}): update pipebench")
    if version < current:
        raise ResultsVersionError(f"{where}: {name} {version} is older than the {current} this pipebench reads: {older}")
    return respelt(found, key, was)


def load_versioned(cls: type[T], path: Path, current: int, what: str, older: str, was: tuple[str, ...] = (),
                   absent: int | None = None) -> T:
    """Give `cls` (whose first field is VERSION_KEY) read from the JSON file at `path`, checked as check_version does."""
    return from_json(cls, check_version(read_json(path), str(path), VERSION_KEY, current, what, older, was, absent),
                     str(path))
