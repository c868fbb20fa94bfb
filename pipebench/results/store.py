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

#: Older versions read in memory: what they lack is a column added since, null in their rows; a column
#: dropped since is left out. v2 (pipebench 0.1.0) lacks the v3 columns of facts it did not keep; v3
#: lacks v4's intervals and kept the single-draw input fraction v4 replaced with the paired slowdown.
_READABLE_VERSIONS = (2, 3)


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
    if version < SCHEMA_VERSION and version not in _READABLE_VERSIONS:
        raise ResultsVersionError(f"{path}: results schema v{version} is older than v{SCHEMA_VERSION}: "
                                  "upgrade the results with the pipebench version that wrote them")
    if version < SCHEMA_VERSION:
        missing = [f for f in schema if f.name not in table.column_names]
        for f in missing:
            table = table.append_column(f, pa.nulls(table.num_rows, f.type))
        table = table.select(schema.names).cast(schema)
    return table


def append_rows(path: Path, schema: pa.Schema, rows: list[dict]) -> None:
    """Append rows (dicts; missing columns are null) to the table at `path`, atomically.

    A key the schema has no column for is a bug in its producer, not data to drop: ValueError.
    """
    path = Path(path)
    unknown = sorted({key for row in rows for key in row} - set(schema.names))
    if unknown:
        raise ValueError(f"{path}: no column for {', '.join(unknown)}")
    new = pa.Table.from_pylist([{name: row.get(name) for name in schema.names} for row in rows], schema=schema)
    write_table(path, pa.concat_tables([read_table(path, schema), new]) if path.exists() else new)


def write_table(path: Path, table: pa.Table) -> None:
    """Write `table` at `path` with this schema version, through a temp file and an atomic rename."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    pq.write_table(table.replace_schema_metadata({VERSION_KEY: str(SCHEMA_VERSION).encode()}), tmp)
    os.replace(tmp, path)
