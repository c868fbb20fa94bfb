"""Append rows to versioned Parquet tables atomically; read them back refusing unknown versions.

Each append rewrites the table to a temp file and renames it over the old one, so a crash at any
moment leaves the previous complete table (tables hold hundreds of trials: the rewrite is cheap),
and a reader (a report while a run goes on) sees one whole table or the next.

Files are read through Arrow's own file object, never a Python one: Arrow may release the buffers
of a read on one of its threads after `read_table` returns, and a buffer holding Python memory then
needs the GIL, which a thread cannot take once the interpreter is exiting. That thread is ended
inside a C++ destructor, and the process aborts (SIGABRT, "terminate called without an active
exception") right after an error message that was meant to be the last thing it did.
"""
from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipebench.errors import DataError, ResultsVersionError
from pipebench.results.schema import SCHEMA_VERSION, VERSION_KEY


def _with_version(schema: pa.Schema) -> pa.Schema:
    return schema.with_metadata({VERSION_KEY: str(SCHEMA_VERSION).encode()})


def _unreadable(path: Path, err: pa.ArrowException) -> DataError:
    """Give the one-line error for a file Arrow cannot read as Parquet (its reason without Arrow's preamble)."""
    reason = str(err).split("': ", 1)[-1].split(". ")[0].strip().rstrip(".")
    return DataError(f"{path}: not a readable Parquet table ({reason[:150]})")


def _check(path: Path, found: pa.Schema, schema: pa.Schema) -> None:
    """Refuse a table of another schema version (with the direction to go) or with other columns."""
    raw = (found.metadata or {}).get(VERSION_KEY)
    try:
        version = int(raw) if raw is not None else 0
    except ValueError:
        raise DataError(f"{path}: schema version {raw[:20]!r} is not a number") from None
    if version > SCHEMA_VERSION:
        raise ResultsVersionError(f"{path}: results schema v{version} is newer than this pipebench's "
                                  f"v{SCHEMA_VERSION}: update pipebench to read it")
    if version < SCHEMA_VERSION:
        raise ResultsVersionError(f"{path}: results schema v{version} is older than v{SCHEMA_VERSION}: "
                                  "upgrade the results with the pipebench version that wrote them")
    missing = [name for name in schema.names if name not in found.names]
    if missing or len(found.names) != len(schema.names):
        raise DataError(f"{path}: its columns are not those of results schema v{SCHEMA_VERSION} "
                        f"({len(missing)} missing, e.g. {(missing or ['none'])[0]}; {len(found.names)} in all)")


def _read(file: pa.NativeFile, path: Path, schema: pa.Schema) -> pa.Table:
    try:
        table = pq.read_table(file)
    except pa.ArrowException as err:
        raise _unreadable(path, err) from None
    _check(path, table.schema, schema)
    return table


def read_table(path: Path, schema: pa.Schema) -> pa.Table:
    """Give the table at `path` (empty if absent); ResultsVersionError if its version is not ours,
    DataError if it is not a readable Parquet table of our columns."""
    path = Path(path)
    if not path.exists():
        return schema.empty_table()
    # One open file: a path read opens the file again for its pages, and an append renaming a new
    # table over it in between gives a torn read (pages of one file, footer of the other).
    with pa.OSFile(str(path)) as file:
        return _read(file, path, schema)


def check_table(path: Path, schema: pa.Schema) -> None:
    """Check, from its footer alone, that the table at `path` is one this pipebench can read and append to."""
    path = Path(path)
    with pa.OSFile(str(path)) as file:
        try:
            found = pq.ParquetFile(file).schema_arrow
        except pa.ArrowException as err:
            raise _unreadable(path, err) from None
    _check(path, found, schema)


def append_rows(path: Path, schema: pa.Schema, rows: list[dict]) -> None:
    """Append rows (dicts; missing columns are null) to the table at `path`, atomically.

    One writer per table: each append reads the table, writes it with the new rows to a temp file
    and renames that over it, so two processes appending at once would each drop the other's rows.
    What guarantees there is only one is the run folder's lock (`pipebench.results.run_folder.hold`),
    which every process writing into a run folder holds while it runs.
    """
    path = Path(path)
    new = pa.Table.from_pylist([{name: row.get(name) for name in schema.names} for row in rows],
                               schema=schema)
    table = pa.concat_tables([read_table(path, schema).cast(schema), new]) if path.exists() else new
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        pq.write_table(table.replace_schema_metadata(_with_version(schema).metadata), tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
