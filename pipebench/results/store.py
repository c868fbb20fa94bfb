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

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipebench.atomic import atomic_write_bytes
from pipebench.errors import DataError, ResultsVersionError
from pipebench.results.schema import SCHEMA_VERSION, VERSION_KEY

#: Older versions read in memory: what they lack is a column added since, null in their rows; a column
#: dropped since is left out. v2 (pipebench 0.1.0) lacks the v3 columns of facts it did not keep; v3
#: lacks v4's intervals and kept the single-draw input fraction v4 replaced with the paired slowdown;
#: v4 to v6 lack only columns added since (v7's verdict basis: their verdicts read the waiting share,
#: pipebench.measure.figures.EARLIER_BASIS).
_READABLE_VERSIONS = (2, 3, 4, 5, 6, 7)


def _unreadable(path: Path, err: pa.ArrowException) -> DataError:
    """Give the one-line error for a file Arrow cannot read as Parquet (its reason without Arrow's preamble)."""
    reason = str(err).split("': ", 1)[-1].split(". ")[0].strip().rstrip(".")
    return DataError(f"{path}: not a readable Parquet table ({reason[:150]})")


def _version(path: Path, found: pa.Schema) -> int:
    """Give a table's schema version; refuse one this pipebench cannot read (with the direction to go)."""
    raw = (found.metadata or {}).get(VERSION_KEY)
    try:
        version = int(raw) if raw is not None else 0
    except ValueError:
        raise DataError(f"{path}: schema version {raw[:20]!r} is not a number") from None
    if version > SCHEMA_VERSION:
        raise ResultsVersionError(f"{path}: results schema v{version} is newer than this pipebench's "
                                  f"v{SCHEMA_VERSION}: update pipebench to read it")
    if version < SCHEMA_VERSION and version not in _READABLE_VERSIONS:
        raise ResultsVersionError(f"{path}: results schema v{version} is older than v{SCHEMA_VERSION}: "
                                  "upgrade the results with the pipebench version that wrote them")
    return version


def _check(path: Path, found: pa.Schema, schema: pa.Schema) -> None:
    """Refuse a current-version table whose columns are not the schema's."""
    if _version(path, found) < SCHEMA_VERSION:
        return  # an older version's columns are its own; reading fills in the ones added since
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
    if _version(path, table.schema) < SCHEMA_VERSION:
        for f in schema:
            if f.name not in table.column_names:
                table = table.append_column(f, pa.nulls(table.num_rows, f.type))
        table = table.select(schema.names).cast(schema)
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


def _footer_schema(path: Path) -> pa.Schema:
    """Give the schema in the footer of the Parquet file at `path`; DataError if it is not a readable one."""
    with pa.OSFile(str(path)) as file:
        try:
            return pq.ParquetFile(file).schema_arrow
        except pa.ArrowException as err:
            raise _unreadable(path, err) from None


def check_table(path: Path, schema: pa.Schema) -> None:
    """Check, from its footer alone, that the table at `path` is one this pipebench can read and append to."""
    path = Path(path)
    _check(path, _footer_schema(path), schema)


def table_version(path: Path) -> int:
    """Give the schema version of the table at `path`, from its footer; DataError / ResultsVersionError (saying
    which way to go) if it is not a readable table of a version this pipebench reads."""
    path = Path(path)
    return _version(path, _footer_schema(path))


def append_rows(path: Path, schema: pa.Schema, rows: list[dict]) -> None:
    """Append rows (dicts; missing columns are null) to the table at `path`, atomically.

    One writer per table: each append reads the table, writes it with the new rows to a temp file
    and renames that over it, so two processes appending at once would each drop the other's rows.
    What guarantees there is only one is the run folder's lock (`pipebench.results.run_folder.hold`),
    which every process writing into a run folder holds while it runs. A key the schema has no
    column for is a bug in its producer, not data to drop: ValueError.
    """
    path = Path(path)
    unknown = sorted({key for row in rows for key in row} - set(schema.names))
    if unknown:
        raise ValueError(f"{path}: no column for {', '.join(unknown)}")
    new = pa.Table.from_pylist([{name: row.get(name) for name in schema.names} for row in rows], schema=schema)
    write_table(path, pa.concat_tables([read_table(path, schema), new]) if path.exists() else new)


def write_table(path: Path, table: pa.Table) -> None:
    """Write `table` at `path` at this schema version, whole or not at all (temp file, then rename)."""
    buffer = pa.BufferOutputStream()
    pq.write_table(table.replace_schema_metadata({VERSION_KEY: str(SCHEMA_VERSION).encode()}), buffer)
    atomic_write_bytes(Path(path), buffer.getvalue().to_pybytes())
