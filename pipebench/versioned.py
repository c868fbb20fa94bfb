"""Versioned JSON files (sharding.json, capacity.json, a Criteo feature map): one reader, directional errors.

As asv's `load_json` does with `api_version`: a file of an older version says what remakes it, and one
of a newer version says to update pipebench, since only a newer pipebench knows its layout.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from pipebench.errors import DataError, ResultsVersionError
from pipebench.typed import read_json


def read_versioned(path: Path, key: str, current: int, what: str, older: str) -> dict:
    """Give the JSON object at `path` whose `key` is `current`; one-line DataError naming the file otherwise.

    `what` names the kind of file ("a sharding record"); `older` says what remakes a file of an older
    version (e.g. "run `pipebench sharding RUN` again"). A version mismatch is a ResultsVersionError.
    """
    return check_version(read_json(path), str(path), key, current, what, older)


def check_version(found: Any, where: str, key: str, current: int, what: str, older: str) -> dict:
    """Give `found`, a parsed JSON document read from `where`, if it is an object whose `key` is `current`;
    otherwise the errors of read_versioned."""
    version = found.get(key) if isinstance(found, dict) else None
    if version is None:
        shape = "no " + key if isinstance(found, dict) else f"a JSON {type(found).__name__}, not an object"
        raise DataError(f"{where}: not {what} ({shape})")
    if not isinstance(version, int) or isinstance(version, bool):
        raise DataError(f"{where}: not {what} ({key} {version!r} is not a whole number)"[:280])
    if version > current:
        raise ResultsVersionError(f"{where}: {key} {version} was written by a newer pipebench (this one reads "
                                  f"{current}): update pipebench")
    if version < current:
        raise ResultsVersionError(f"{where}: {key} {version} is older than the {current} this pipebench reads: {older}")
    return found
