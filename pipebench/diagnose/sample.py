"""A bounded sample of the user's data, for the content check: the function's arguments with their files replaced
by small copies of a few of them, each holding rows from its start, its middle and its end.

A rewrite is kept only when it yields what the original yields. Comparing a whole epoch costs what the data costs
(200,000 rows of text: minutes per rewrite); comparing the first rows only would pass a rewrite that is right at
the start of a file and wrong after it. So the check reads the original and each rewrite over the same sample:
up to SAMPLE_FILES files spread across the list (first, middle, last), and from each, CHUNKS runs of rows taken at
its start, its middle and its end, whole lines or whole TFRecord records (a record boundary found again after a
seek by its length's checksum). How many rows depends on the batch size (enough for a few whole batches) and not
on the data: at most MAX_ROWS.

Which arguments name files is read from their values, as `pipebench diagnose` reads its inputs: a path that
exists (a file, or a folder whose files are mirrored with the large ones sampled), a pattern (`data/part-*`,
mirrored with the pattern kept), or a list of them. A compressed file is sampled from its start only (no seek
inside a gzip stream), and the scope says so. No TensorFlow here: the worker loads the user's function again
with these arguments.
"""
from __future__ import annotations

import glob
import gzip
import math
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipebench.converters.inputs import sniff_compression
from pipebench.converters.tfrecord import looks_like_tfrecord, masked_crc32c

#: At most this many files of a list, folder or pattern are sampled.
SAMPLE_FILES = 4
#: Runs of rows taken from each sampled file: at its start, its middle and its end.
CHUNKS = 3
MIN_ROWS, MAX_ROWS = 6_000, 60_000
#: A file of a folder smaller than this is copied whole (a schema, a vocabulary), not sampled.
SMALL_FILE_BYTES = 1 << 20
_WILDCARD = re.compile(r"[*?[]")
_TFRECORD_MAX_LENGTH = 1 << 30


@dataclass
class FileSample:
    """The arguments with their files replaced by samples, and what the sample holds, in words."""

    kwargs: dict[str, Any]
    rows: int
    files: int  # sampled
    of_files: int  # the data files the arguments name
    compressed: bool
    arguments: list[str] = field(default_factory=list)  # the arguments whose files were replaced
    bytes: int = 0  # the sampled rows' bytes (uncompressed)
    data_bytes: int = 0  # all the data files' bytes (an epoch's rows ≈ data_bytes / (bytes / rows))

    @property
    def scope(self) -> str:
        where = "from its start (compressed)" if self.compressed else "from the start, middle and end of each"
        return (f"a sample of {self.files} of {self.of_files} file(s) ({', '.join(self.arguments)}): "
                f"{self.rows:,} rows {where}")


def rows_target(batch_size: int | None) -> int:
    """Give how many rows the sample should hold: a few whole batches, within MIN_ROWS–MAX_ROWS."""
    return min(MAX_ROWS, max(MIN_ROWS, 4 * (batch_size or 1)))


def spread(count: int, most: int = SAMPLE_FILES) -> list[int]:
    """Give up to `most` indices spread over range(count): the first, the last and some between."""
    if count <= most:
        return list(range(count))
    return sorted({round(i * (count - 1) / (most - 1)) for i in range(most)})


def _line_start(f, position: int, floor: int) -> None:
    """Seek to the first line that starts at or after `position`, and not before `floor` (itself a line's start)."""
    if position <= floor:
        f.seek(floor)
        return
    f.seek(position - 1)
    if f.read(1) != b"\n":
        f.readline()  # the rest of a line the seek cut


def _lines(path: Path, rows: int) -> tuple[bytes, int]:
    """Give rows from the start, middle and end of a text file (whole lines), and how many."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = [line for line in (f.readline() for _ in range(rows)) if line]
        if f.tell() >= size or not head:
            return b"".join(head), len(head)
        after_head = f.tell()
        mean = max(1, sum(map(len, head)) // len(head))
        _line_start(f, size // 2, after_head)
        middle = [line for line in (f.readline() for _ in range(rows)) if line]
        after_middle = f.tell()
        _line_start(f, size - 2 * mean * (rows + 2), after_middle)
        tail = f.read().splitlines(keepends=True)[-rows:]
    taken = head + middle + tail
    return b"".join(line if line.endswith(b"\n") else line + b"\n" for line in taken), len(taken)


def _frame_length(data: memoryview | bytes, pos: int) -> int | None:
    """Give the length a TFRecord frame header at `pos` holds when its masked crc32c holds, else None."""
    if pos + 12 > len(data):
        return None
    length = int.from_bytes(data[pos:pos + 8], "little")
    if length > _TFRECORD_MAX_LENGTH or int.from_bytes(data[pos + 8:pos + 12], "little") != \
            masked_crc32c(bytes(data[pos:pos + 8])):
        return None
    return length


def _record_at(data: memoryview, pos: int) -> int | None:
    """Give the length of the whole TFRecord whose frame starts at `pos` in `data`, else None."""
    length = _frame_length(data, pos)
    return length if length is not None and pos + 16 + length <= len(data) else None


def _tail_records(path: Path, rows: int, record_bytes: int) -> tuple[bytes, int]:
    """Give the last `rows` records of a TFRecord file (found again from a seek before them)."""
    size = path.stat().st_size
    start = max(0, size - (rows + 2) * record_bytes - 64)
    with open(path, "rb") as f:
        f.seek(start)
        chunk = memoryview(f.read())
    pos = 0
    while pos < len(chunk) - 12 and _record_at(chunk, pos) is None:
        pos += 1
    found = []
    while (length := _record_at(chunk, pos)) is not None:
        found.append(bytes(chunk[pos:pos + 16 + length]))
        pos += 16 + length
    found = found[-rows:]
    return b"".join(found), len(found)


def _tfrecords(path: Path, rows: int) -> tuple[bytes, int]:
    """Give records from the start, middle and end of a TFRecord file (whole frames), and how many."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        head_data = memoryview(f.read(min(size, 64 << 20)))
    taken, pos = [], 0
    while len(taken) < rows and (length := _record_at(head_data, pos)) is not None:
        taken.append(bytes(head_data[pos:pos + 16 + length]))
        pos += 16 + length
    if pos >= size or not taken:
        return b"".join(taken), len(taken)
    record_bytes = max(16, pos // len(taken))
    middle = []
    with open(path, "rb") as f:
        f.seek(size // 2)
        chunk = memoryview(f.read((rows + 2) * record_bytes * 2 + (1 << 16)))
    at = 0
    while at < len(chunk) - 12 and _record_at(chunk, at) is None:
        at += 1
    while len(middle) < rows and (length := _record_at(chunk, at)) is not None:
        middle.append(bytes(chunk[at:at + 16 + length]))
        at += 16 + length
    tail, count = _tail_records(path, rows, record_bytes)
    return b"".join(taken + middle) + tail, len(taken) + len(middle) + count


def _compressed_head(path: Path, rows: int, tfrecord: bool) -> tuple[bytes, int]:
    """Give the first rows of a gzip file, recompressed (a gzip stream has no middle to seek to)."""
    with gzip.open(path, "rb") as f:
        if not tfrecord:
            lines = [line for line in (f.readline() for _ in range(rows * CHUNKS)) if line]
            return gzip.compress(b"".join(lines)), len(lines)
        data = memoryview(f.read(64 << 20))
    taken, pos = [], 0
    while len(taken) < rows * CHUNKS and (length := _record_at(data, pos)) is not None:
        taken.append(bytes(data[pos:pos + 16 + length]))
        pos += 16 + length
    return gzip.compress(b"".join(taken)), len(taken)


class _Sampler:
    """Writes sampled copies of files into a folder, counting what it wrote."""

    def __init__(self, folder: Path, rows_per_chunk: int) -> None:
        self.folder, self.rows_per_chunk = folder, rows_per_chunk
        self.rows, self.files, self.compressed, self.bytes = 0, 0, False, 0
        self._made: dict[str, Path] = {}

    def file(self, path: Path, into: Path | None = None) -> Path:
        """Give the sample of one data file (made once), under `into` (a mirror) or a folder of its own."""
        key = str(path.resolve())
        if key in self._made:
            return self._made[key]
        target = (into or self.folder / f"f{len(self._made)}") / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        compression = sniff_compression(path)
        if compression == "none":
            tfrecord = looks_like_tfrecord(path)
        else:
            with gzip.open(path, "rb") as f:
                tfrecord = _frame_length(f.read(12), 0) is not None
        if compression != "none":
            data, rows = _compressed_head(path, self.rows_per_chunk, tfrecord)
            self.compressed = True
        elif tfrecord:
            data, rows = _tfrecords(path, self.rows_per_chunk)
        else:
            data, rows = _lines(path, self.rows_per_chunk)
        target.write_bytes(data)
        self.rows, self.files, self.bytes = self.rows + rows, self.files + 1, self.bytes + len(data)
        self._made[key] = target
        return target

    def folder_of(self, folder: Path, names: list[str] | None = None) -> Path:
        """Give a mirror of `folder`: with `names` (a pattern's matches), at most SAMPLE_FILES of them sampled;
        without, its small files copied and at most SAMPLE_FILES of its large ones sampled (others left out)."""
        mirror = self.folder / f"d{len(self._made)}-{folder.name}"
        mirror.mkdir(parents=True, exist_ok=True)
        entries = sorted(names if names is not None else [p.name for p in folder.iterdir()])
        files = [folder / n for n in entries if (folder / n).is_file() and not n.startswith(".")]
        data = files if names is not None else [p for p in files if p.stat().st_size >= SMALL_FILE_BYTES]
        keep = {data[i] for i in spread(len(data))}
        for path in files:
            if path in keep:
                self.file(path, mirror)
            elif path not in data:
                shutil.copyfile(path, mirror / path.name)
        return mirror


def sample_arguments(kwargs: dict[str, Any], folder: Path, batch_size: int | None) -> FileSample | None:
    """Give the arguments with the data files they name replaced by samples written under `folder` (module
    docstring), or None when no argument names a file."""
    named: dict[str, list[Path]] = {}
    for name, value in kwargs.items():
        files = _files_of(value)
        if files:
            named[name] = files
    if not named:
        return None
    total = len({str(p) for files in named.values() for p in files})
    chosen_count = sum(min(len(files), SAMPLE_FILES) for files in named.values())
    per_chunk = math.ceil(rows_target(batch_size) / (CHUNKS * max(1, chosen_count)))
    sampler = _Sampler(folder, per_chunk)
    replaced = dict(kwargs)
    for name in named:
        replaced[name] = _replace(kwargs[name], sampler)
    data_bytes = sum(p.stat().st_size for p in {str(p): p for files in named.values() for p in files}.values())
    return FileSample(replaced, sampler.rows, sampler.files, total, sampler.compressed, list(named), sampler.bytes,
                  data_bytes)


def _files_of(value: Any) -> list[Path]:
    """Give the data files a value names (module docstring); [] when it names none."""
    if isinstance(value, list):
        return [p for item in value for p in _files_of(item)]
    if not isinstance(value, str) or not value or "\0" in value:
        return []
    text = os.path.expanduser(value)
    if _WILDCARD.search(text):
        return sorted(Path(p) for p in glob.glob(text) if os.path.isfile(p))
    path = Path(text)
    if path.is_file():
        return [path]
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
    return []


def _replace(value: Any, sampler: _Sampler) -> Any:
    """Give `value` naming the samples in place of the files it named."""
    if isinstance(value, list):
        files = [item for item in value if _files_of(item)]
        keep = {id(files[i]) for i in spread(len(files))}
        return [_replace(item, sampler) for item in value if not _files_of(item) or id(item) in keep]
    if not isinstance(value, str) or not _files_of(value):
        return value
    text = os.path.expanduser(value)
    if _WILDCARD.search(text):
        folder, pattern = os.path.split(text)
        if _WILDCARD.search(folder):  # a wildcard in the folder part: the matches' samples, as a list
            return [str(sampler.file(p)) for p in (_files_of(value)[i] for i in spread(len(_files_of(value))))]
        names = [os.path.basename(p) for p in glob.glob(text)]
        return str(sampler.folder_of(Path(folder or "."), names) / pattern)
    path = Path(text)
    if path.is_dir():
        return str(sampler.folder_of(path))
    return str(sampler.file(path))
