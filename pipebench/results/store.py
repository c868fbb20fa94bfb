"""Append rows to versioned Parquet tables atomically; read them back refusing unknown versions.

Each append rewrites the table to a temp file and renames it over the old one, so a crash at any
moment leaves the previous complete table (tables hold hundreds of trials: the rewrite is cheap),
and a reader (a report while a run goes on) sees one whole table or the next.
"""
from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipebench.errors import ResultsVersionError
from pipebench.results.schema import SCHEMA_VERSION, VERSION_KEY


def _with_version(schema: pa.Schema) -> pa.Schema:
    return schema.with_metadata({VERSION_KEY: str(SCHEMA_VERSION).encode()})


def read_table(path: Path, schema: pa.Schema) -> pa.Table:
    """Give the table at `path` (empty if absent); ResultsVersionError if its version is not ours."""
    path = Path(path)
    if not path.exists():
        return schema.empty_table()
    # One open file: a path read opens the file again for its pages, and an append renaming a new
    # table over it in between gives a torn read (pages of one file, footer of the other).
    with open(path, "rb") as file:
        table = pq.read_table(file)
    raw = (table.schema.metadata or {}).get(VERSION_KEY)
    version = int(raw) if raw is not None else 0
    if version > SCHEMA_VERSION:
        raise ResultsVersionError(f"{path}: results schema v{version} is newer than this pipebench's "
                                  f"v{SCHEMA_VERSION}: update pipebench to read it")
    if version < SCHEMA_VERSION:
        raise ResultsVersionError(f"{path}: results schema v{version} is older than v{SCHEMA_VERSION}: "
                                  "upgrade the results with the pipebench version that wrote them")
    return table


def append_rows(path: Path, schema: pa.Schema, rows: list[dict]) -> None:
    """Append rows (dicts; missing columns are null) to the table at `path`, atomically."""
    path = Path(path)
    new = pa.Table.from_pylist([{name: row.get(name) for name in schema.names} for row in rows],
                               schema=schema)
    table = pa.concat_tables([read_table(path, schema).cast(schema), new]) if path.exists() else new
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    pq.write_table(table.replace_schema_metadata(_with_version(schema).metadata), tmp)
    os.replace(tmp, path)
