"""Given data files: globs expanded, and each file's format told from its bytes, as `pipebench convert` does.

A converter's manifest beside a file names its format; otherwise TFRecord framing tells TFRecord
from text, an Example proto as the first record tells TFRecord (Example) from packed, and a first
line of 40 tab-separated columns tells raw Criteo from libsvm. Raw Criteo is refused with the
command that converts it: its ids come from a feature map, which only `convert --from criteo` makes.
"""
from __future__ import annotations

import glob
from pathlib import Path

from pipebench.converters import MANIFEST
from pipebench.errors import ConfigError, DataError
from pipebench.values import echo

FORMATS = ("libsvm", "tfrecord", "packed")
REMOTE_PREFIX = "s3://"


def matches(patterns: list[str] | tuple[str, ...], where: str) -> tuple[list[str], list[str]]:
    """Give (data files, converter manifests) the globs match, each sorted; s3:// URIs are taken as given.

    The one expansion of user-given files: a glob that matches nothing (a manifest counts as a match)
    is a ConfigError naming it as `WHERE[i]`, and so are globs that match only manifests. Folders
    are never data.
    """
    found: set[str] = set()
    for i, pattern in enumerate(patterns):
        matched = [pattern] if pattern.startswith(REMOTE_PREFIX) else glob.glob(pattern)
        matched = [m for m in matched if m.startswith(REMOTE_PREFIX) or not Path(m).is_dir()]
        if not matched:
            raise ConfigError(f"{where}[{i}]: pattern {echo(pattern)} matches no file")
        found.update(matched)
    manifests = {f for f in found if Path(f).name == MANIFEST}
    if manifests and found == manifests:
        raise ConfigError(f"{where}: only the converter's {MANIFEST} matches; list the data files beside it")
    return sorted(found - manifests), sorted(manifests)


def expand(patterns: list[str] | tuple[str, ...], where: str) -> list[str]:
    """Give the data files the globs match (s3:// URIs as given), sorted, without converter manifests."""
    return matches(patterns, where)[0]


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """Give (value, next position) of the protobuf varint at data[pos], or (-1, pos) if it runs off the end."""
    value = shift = 0
    while pos < len(data):
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if byte < 0x80:
            return value, pos
        shift += 7
    return -1, pos


def _looks_like_example(record: bytes) -> bool:
    """Tell whether a record is one `Example` message: field 1 (features) spanning the whole record."""
    if record[:1] != b"\x0a":
        return False
    length, pos = _varint(record, 1)
    return length >= 0 and pos + length == len(record)


def format_of(path: str) -> str:
    """Give the format of a local data file: libsvm, tfrecord, packed or criteo (raw)."""
    from pipebench.converters import criteo, tfrecord
    from pipebench.converters.inputs import InputFile
    from pipebench.converters.manifest import read_manifest

    manifest = Path(path).parent / MANIFEST
    try:
        described = read_manifest(manifest) if manifest.exists() else None
    except DataError:
        described = None  # not a converter's manifest pipebench reads: the bytes decide
    if described is not None and described.format in FORMATS and Path(path).name in {s.name for s in described.shards}:
        return described.format
    if tfrecord.looks_like_tfrecord(Path(path)):
        with InputFile(Path(path), hash=False) as stream:
            first = next(tfrecord.record_batches(stream, batch=1), (1, [b""]))[1][0]
        return "tfrecord" if _looks_like_example(first) else "packed"
    return "criteo" if criteo.looks_like_raw(Path(path)) else "libsvm"


def by_format(patterns: list[str], where: str) -> dict[str, list[str]]:
    """Give a plain list of data files as {format: files}, each file's format told from its bytes."""
    grouped: dict[str, list[str]] = {}
    for name in expand(patterns, where):
        if name.startswith(REMOTE_PREFIX):
            raise ConfigError(f"{where}: {echo(name)}: an s3:// file's format cannot be told from here; write "
                              f"{where} as a mapping of format to files (keys {', '.join(FORMATS)})")
        fmt = format_of(name)
        if fmt == "criteo":
            raise ConfigError(f"{where}: {name} is raw Criteo text; convert it first: pipebench convert --from "
                              "criteo FILE... --out DIR, then list DIR/part-*")
        grouped.setdefault(fmt, []).append(name)
    return grouped
