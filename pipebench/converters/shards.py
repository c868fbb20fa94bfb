"""Part files: records go to `part-NNNNN-of-MMMMM<suffix>`, rolled over by a row or byte budget."""
from __future__ import annotations

import contextlib
import hashlib
from dataclasses import replace
from pathlib import Path

import numpy as np

from pipebench.converters.manifest import Shard
from pipebench.converters.tfrecord import compressor


class ShardWriter:
    """Write records (byte ranges of a buffer) to part files in order, each holding whole records.

    `rows_per_shard` or `bytes_per_shard` (uncompressed) bounds a part; `shard_count` asks for
    exactly that many files, the tail ones possibly empty.
    """

    def __init__(self, folder: Path, suffix: str, compression: str = "none",
                 rows_per_shard: int | None = None, bytes_per_shard: int | None = None,
                 shard_count: int | None = None) -> None:
        self._folder = Path(folder)
        self._suffix = suffix
        self._compression = compression
        self._rows_budget = rows_per_shard
        self._bytes_budget = bytes_per_shard
        self._shard_count = shard_count
        self._shards: list[Shard] = []
        self._file = None
        self._compress = None
        self._hash = None
        self._rows = 0
        self._raw_bytes = 0
        self._disk_bytes = 0

    def _open(self) -> None:
        path = self._folder / f"part-{len(self._shards):05d}{self._suffix}"
        self._file = open(path, "wb")
        self._compress = compressor(self._compression)
        self._hash = hashlib.sha256()
        self._rows = self._raw_bytes = self._disk_bytes = 0

    def _emit(self, data) -> None:
        if self._compress is not None:
            data = self._compress.compress(data)
        if data:
            self._file.write(data)
            self._hash.update(data)
            self._disk_bytes += len(data)

    def _finish(self) -> None:
        if self._compress is not None:
            tail = self._compress.flush()
            self._compress = None
            self._emit(tail)
        self._file.close()
        self._shards.append(Shard(Path(self._file.name).name, self._rows, self._disk_bytes, self._hash.hexdigest()))
        self._file = None

    def _full(self) -> bool:
        return ((self._rows_budget is not None and self._rows >= self._rows_budget)
                or (self._bytes_budget is not None and self._raw_bytes >= self._bytes_budget))

    def write(self, buf: np.ndarray, ends: np.ndarray, rows: np.ndarray | None = None) -> None:
        """Append records buf[ends[i-1]:ends[i]]; record i holds rows[i] rows (default 1)."""
        n = len(ends)
        rows = np.ones(n, dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
        view = memoryview(np.ascontiguousarray(buf, dtype=np.uint8))
        start, base = 0, 0
        while start < n:
            if self._file is not None and self._full():
                self._finish()
            if self._file is None:
                self._open()
            take = n - start
            if self._rows_budget is not None:
                cum_rows = np.cumsum(rows[start:])
                take = min(take, int(np.searchsorted(cum_rows, self._rows_budget - self._rows, "right")))
            if self._bytes_budget is not None:
                cum_bytes = ends[start:] - base
                take = min(take, int(np.searchsorted(cum_bytes, self._bytes_budget - self._raw_bytes, "right")))
            if take == 0:
                if self._rows or self._raw_bytes:
                    self._finish()
                    continue
                take = 1  # a record bigger than the budget still gets a part of its own
            stop = int(ends[start + take - 1])
            self._emit(view[base:stop])
            self._rows += int(rows[start : start + take].sum())
            self._raw_bytes += stop - base
            start, base = start + take, stop

    def close(self) -> list[Shard]:
        """Finish the last part, add empty parts up to shard_count, name them `-of-N`; give them."""
        if self._file is not None:
            self._finish()
        while len(self._shards) < (self._shard_count or 1):
            self._open()
            self._finish()
        total, named = len(self._shards), []
        for shard in self._shards:
            final = shard.name.replace(self._suffix, f"-of-{total:05d}{self._suffix}", 1)
            (self._folder / shard.name).rename(self._folder / final)
            named.append(replace(shard, name=final))
        self._shards = named
        return self._shards

    def abort(self) -> None:
        """Close an open part file after a failure (the caller discards the folder)."""
        if self._file is not None:
            with contextlib.suppress(OSError):  # flushing may fail as the write did (disk full)
                self._file.close()
            self._file = None
